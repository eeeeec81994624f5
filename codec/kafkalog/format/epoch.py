"""The leader epoch cache of a partition and its ``leader-epoch-checkpoint`` (Kafka's LeaderEpochFileCache).

Entries ``(epoch, start offset)`` are kept in increasing epoch order; :meth:`LeaderEpochCache.assign`
adds one when a batch carries a new epoch, first removing entries that conflict with it (a higher
or equal epoch, or a start offset at or after the new one), and rewrites the checkpoint file
atomically each time it changes, as Kafka does.
"""

from __future__ import annotations

import os

from kafkalog.format.checkpoints import EpochEntry, read_leader_epoch_checkpoint, write_leader_epoch_checkpoint

__all__ = ["LEADER_EPOCH_CHECKPOINT", "LeaderEpochCache"]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"


class LeaderEpochCache:
    """Leader epochs and the offsets they started at, backed by ``<dir>/leader-epoch-checkpoint``.

    Opening creates the file empty when it is missing (Kafka's CheckpointFile does the same).
    ``path=None`` keeps the cache in memory only; so does ``writable=False`` after reading the
    file (when it exists): changes are never written.
    """

    def __init__(self, path: str | os.PathLike[str] | None, *, sync: bool = True, writable: bool = True) -> None:
        self.path = None if path is None else os.fspath(path)
        self.sync = sync
        self.writable = writable
        self._epochs: dict[int, int] = {}
        if self.path is not None:
            if not os.path.exists(self.path):
                if not writable:
                    return
                with open(self.path, "xb"):
                    pass
            for e in read_leader_epoch_checkpoint(self.path):
                self._assign(e.epoch, e.start_offset)

    @classmethod
    def for_dir(cls, directory: str | os.PathLike[str], *, sync: bool = True, writable: bool = True) -> LeaderEpochCache:
        """The cache of the partition directory ``directory``."""
        return cls(os.path.join(os.fspath(directory), LEADER_EPOCH_CHECKPOINT), sync=sync, writable=writable)

    @property
    def entries(self) -> list[EpochEntry]:
        """The entries, in increasing epoch order."""
        return [EpochEntry(e, self._epochs[e]) for e in sorted(self._epochs)]

    def __len__(self) -> int:
        return len(self._epochs)

    @property
    def latest_entry(self) -> EpochEntry | None:
        """The entry of the highest epoch, or None."""
        if not self._epochs:
            return None
        e = max(self._epochs)
        return EpochEntry(e, self._epochs[e])

    @property
    def latest_epoch(self) -> int | None:
        """The highest epoch, or None."""
        return max(self._epochs) if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        """The entry of the lowest epoch, or None."""
        if not self._epochs:
            return None
        e = min(self._epochs)
        return EpochEntry(e, self._epochs[e])

    def _update_needed(self, epoch: int, start_offset: int) -> bool:
        latest = self.latest_entry
        return latest is None or epoch != latest.epoch or start_offset < latest.start_offset

    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid partition leader epoch entry ({epoch}, {start_offset})")
        if not self._update_needed(epoch, start_offset):
            return False
        for e in sorted(self._epochs, reverse=True):  # truncate non-monotonic entries
            if e >= epoch or self._epochs[e] >= start_offset:
                del self._epochs[e]
            else:
                break
        self._epochs[epoch] = start_offset
        return True

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; write the file if that changed anything (LeaderEpochFileCache.assign)."""
        changed = self._assign(epoch, start_offset)
        if changed:
            self.write()
        return changed

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch of the batch at ``offset``, as far as the cache knows."""
        found = None
        for e in sorted(self._epochs):
            start = self._epochs[e]
            if start == offset:
                return e
            if start > offset:
                return found
            found = e
        return found

    def truncate_from_end(self, end_offset: int) -> bool:
        """Remove the entries starting at or after ``end_offset`` (LeaderEpochFileCache.truncateFromEnd)."""
        latest = self.latest_entry
        if end_offset < 0 or latest is None or latest.start_offset < end_offset:
            return False
        for e in sorted(self._epochs, reverse=True):
            if self._epochs[e] >= end_offset:
                del self._epochs[e]
            else:
                break
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """Remove entries at or below ``start_offset``, keeping the last of them moved to it (truncateFromStart)."""
        removed = None
        for e in sorted(self._epochs):
            if self._epochs[e] <= start_offset:
                removed = e
                del self._epochs[e]
            else:
                break
        if removed is None:
            return False
        self._epochs[removed] = start_offset
        return True

    def clear_and_flush(self) -> None:
        """Remove every entry and write the (empty) file."""
        self._epochs.clear()
        self.write()

    def write(self) -> None:
        """Replace the checkpoint file atomically with the current entries (in memory only when read-only)."""
        if self.path is not None and self.writable:
            write_leader_epoch_checkpoint(self.path, self.entries, sync=self.sync)
