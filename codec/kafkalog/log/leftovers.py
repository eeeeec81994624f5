"""What loading a partition directory makes of the leftovers of interrupted operations (SPEC R-RCV-04).

The cleaner and the split of an overflowed segment swap new segments in through renames
(``.cleaned`` -> ``.swap`` -> final names, the old files renamed ``.deleted``: :mod:`kafkalog.log.swap`),
and retention renames the files it deletes ``.deleted``. A crash in between leaves such files, and
the broker decides what survives when it next loads the directory (LogLoader.load, its first pass
``removeTempFilesAndCollectSwapFiles`` from KAFKA-6264, then its swap passes):

1. every ``.deleted`` file is deleted (not ``*.checkpoint.deleted``: the KRaft snapshots' own);
2. every ``.swap`` file whose base offset is at or above the smallest base offset of a ``.cleaned``
   file is deleted: the renames to ``.swap`` go highest base offset first, so such a swap is incomplete;
3. every ``.cleaned`` file is deleted;
4. the other ``.swap`` files complete their swap: every other file named by an offset in
   [smallest base offset of a ``.log.swap``, largest next offset of one) is deleted (the segments
   and producer snapshots the swap replaces), then each ``.swap`` file loses its suffix.

:func:`load_plan` applies this rule to a listing, reading nothing but the ``.log.swap`` files'
last batches and changing nothing: the readers present a directory as the broker serves it after
loading it (:class:`kafkalog.log.source.PartitionFiles`, a read-only
:meth:`kafkalog.log.unified.Log.open`), ``verify`` notes each leftover, and a writable load
(``recover``) carries the plan out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import BinaryIO, TypeVar

from kafkalog.log.gaps import last_next_offset

__all__ = ["COMPLETE", "DELETE", "LEFTOVER_SUFFIXES", "LoadPlan", "Leftover", "as_loaded", "has_leftovers", "load_plan", "local_load_plan", "renamed_name",
           "swap_next_offset"]

DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
#: KRaft snapshots marked for deletion: KafkaMetadataLog removes them, not LogLoader
_SNAPSHOT_DELETED = ".checkpoint.deleted"
LEFTOVER_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)

_F = TypeVar("_F")

#: what the load does with a file: remove it, or rename a ``.swap`` file to its final name
DELETE = "delete"
COMPLETE = "complete"


@dataclass(frozen=True)
class Leftover:
    """One file the load changes: ``action`` (:data:`DELETE` or :data:`COMPLETE`), the final name
    of a completed swap (``target``), and why."""

    name: str
    action: str
    reason: str
    target: str | None = None

    def message(self) -> str:
        """What Kafka does with the file when it loads the directory, and why (one sentence)."""
        if self.action == COMPLETE:
            return f"Kafka completes the interrupted swap when it loads the directory: renames it to {self.target} ({self.reason})"
        return f"Kafka deletes it when it loads the directory ({self.reason})"


@dataclass(frozen=True)
class LoadPlan:
    """What loading a directory does to its leftovers (in the order the load does it) and the
    directory as the broker then has it: ``served`` maps each name after the load to the file that
    holds it now (a completed swap's ``.swap`` file). ``swap_range``: the offsets [lo, hi) the
    completed swap replaces, None without one."""

    actions: tuple[Leftover, ...] = ()
    served: dict[str, str] = field(default_factory=dict)
    swap_range: tuple[int, int] | None = None

    @property
    def deleted(self) -> list[str]:
        """The names the load deletes."""
        return [a.name for a in self.actions if a.action == DELETE]


def has_leftovers(names: Iterable[str]) -> bool:
    """Whether a listing holds any ``.deleted``, ``.cleaned`` or ``.swap`` file (the load changes nothing otherwise)."""
    return any(n.endswith(LEFTOVER_SUFFIXES) and not n.endswith(_SNAPSHOT_DELETED) for n in names)


def _offset(name: str) -> int | None:
    """LogFileUtils.offsetFromFile: the number before the first dot (None when there is none)."""
    stem = name.split(".", 1)[0]
    return int(stem) if stem.isdigit() else None


def load_plan(names: Iterable[str], next_offset: Callable[[str], int]) -> LoadPlan:
    """Apply LogLoader's rule (module docstring) to the file names of one partition directory.

    ``next_offset(name)`` is the offset after the last batch of the ``.log.swap`` file ``name``
    (LogSegment.readNextOffset: its base offset when it holds none); it is called only for swaps
    the load completes."""
    names = sorted(names)
    actions: list[Leftover] = []
    cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX)]
    min_cleaned = min((o for n in cleaned if (o := _offset(n)) is not None), default=None)
    gone: set[str] = set()
    swaps: list[str] = []
    for n in names:
        if n.endswith(DELETED_SUFFIX) and not n.endswith(_SNAPSHOT_DELETED):
            actions.append(Leftover(n, DELETE, "a file renamed for deletion by retention, the cleaner or a split, not removed yet"))
            gone.add(n)
        elif n.endswith(SWAP_SUFFIX):
            base = _offset(n)
            if min_cleaned is not None and base is not None and base >= min_cleaned:
                actions.append(Leftover(n, DELETE, f"an incomplete swap: its base offset {base} is at or above {min_cleaned}, the smallest "
                                                   "base offset of a .cleaned file, so the segments it would replace stay"))
                gone.add(n)
            else:
                swaps.append(n)
    for n in cleaned:
        actions.append(Leftover(n, DELETE, "output of a cleaner or split that was never swapped in"))
        gone.add(n)
    logs = [n for n in swaps if n.endswith(".log" + SWAP_SUFFIX) and _offset(n) is not None]
    swap_range = None
    if logs:
        lo = min(_offset(n) for n in logs)  # type: ignore[type-var]
        hi = max(next_offset(n) for n in logs)
        swap_range = (lo, hi)
        covered = f"offsets {lo} to {hi - 1}" if hi > lo else f"offset {lo} on"
        for n in names:
            o = _offset(n)
            if n not in gone and not n.endswith(SWAP_SUFFIX) and o is not None and lo <= o < hi:
                actions.append(Leftover(n, DELETE, f"replaced by the interrupted swap of {covered}"))
                gone.add(n)
    served = {n: n for n in names if n not in gone and not n.endswith(SWAP_SUFFIX)}
    for n in swaps:
        final = n[: -len(SWAP_SUFFIX)]
        actions.append(Leftover(n, COMPLETE, "every new segment of the swap was written: it replaces the files it covers", final))
        served[final] = n
    return LoadPlan(tuple(actions), dict(sorted(served.items())), swap_range)


def swap_next_offset(fh: BinaryIO, name: str) -> int:
    """The next offset of the ``.log.swap`` file ``name`` open as ``fh``: after its last whole batch,
    its base offset when it holds none (LogSegment.readNextOffset), for :func:`load_plan`."""
    end = last_next_offset(fh, 0)
    return (_offset(name) or 0) if end is None else end


def renamed_name(path: str) -> str:
    """The name a listed segment file may have by the time a reader opens it, when the broker renamed
    it since the listing: a ``.swap`` the cleaner or a split has since given its final name, any
    other file renamed ``.deleted`` by retention or the cleaner (kept for file.delete.delay.ms so that
    reads in flight can finish, R-LIVE-03)."""
    return path[: -len(SWAP_SUFFIX)] if path.endswith(SWAP_SUFFIX) else path + DELETED_SUFFIX


def as_loaded(files: Mapping[str, _F], open_file: Callable[[_F], BinaryIO]) -> list[tuple[str, _F]]:
    """A directory's files (``files``: name -> a storage's entry for it) as the broker has them after
    loading the directory: (name, the entry of the file holding it now), by name. ``open_file``
    opens an entry for reading (only a completed swap's ``.log.swap`` is read); nothing is written."""
    if not has_leftovers(files):
        return sorted(files.items())

    def next_offset(name: str) -> int:
        with open_file(files[name]) as fh:
            return swap_next_offset(fh, name)

    return [(name, files[held]) for name, held in load_plan(files, next_offset).served.items()]


def local_load_plan(directory: str) -> LoadPlan | None:
    """:func:`load_plan` of a local partition directory's files, None when it holds no leftover."""
    names = sorted(n for n in os.listdir(directory) if os.path.isfile(os.path.join(directory, n)))
    if not has_leftovers(names):
        return None

    def next_offset(name: str) -> int:
        with open(os.path.join(directory, name), "rb") as fh:
            return swap_next_offset(fh, name)

    return load_plan(names, next_offset)
