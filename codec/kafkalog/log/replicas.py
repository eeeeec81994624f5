"""One topic-partition held by several copies, read as one log (SPEC §6.9).

A backup of a cluster holds each partition once per replica, under each broker's data dir; two
paths given to a reader may also name two copies of one partition. :func:`one_view` makes of them
one :class:`ReplicatedFiles`, which every reader reads as it reads a single partition dir
(:mod:`kafkalog.log.plan`, :mod:`kafkalog.dataset.scan`), and which does not depend on the order
the copies were found in:

* the log start offset is the largest of the copies' own (each its data dir's checkpoint, else its
  first segment's base offset): a replica's log start offset only moves forward and the leader's
  reaches its followers, so a record below any copy's was deleted on purpose and a consumer of the
  leader could no longer read it;
* each offset is read once, from the most complete copy that holds it (the copy whose batches hold
  the most offsets, then the one with the highest log end offset, then the first by path), staying
  on one copy while it holds the next offset; a copy's batch headers say which offsets it holds, so
  a lagging copy, a copy with a hole or a compacted copy gives only what it has;
* two copies holding the same offset with different records diverged (an unclean leader election:
  the new leader wrote other records at offsets the old one had). It is a
  :class:`~kafkalog.log.gaps.Divergence` from the first differing offset to the end of what both
  hold: readers fail on it (:class:`~kafkalog.errors.ReplicaDivergenceError`) unless gaps are
  allowed. Kafka keeps the history of the newer leader epoch (a follower truncates to the leader's
  epoch end offset: ``OffsetsForLeaderEpoch``, ``LeaderEpochFileCache.endOffsetFor``), so the copy
  whose batch at that offset carries the higher partition leader epoch is read, then the more
  complete one, then the first by path; the other copy gives nothing from that offset on;
* offsets lost in one copy (data loss by its own files, SPEC §6.8) are lost only if no other copy
  holds them.

Batches are compared by header (base offset, last offset, CRC); batches whose headers differ are
decoded and their records compared offset by offset, so that a copy the cleaner compacted (records
removed, batches rewritten) does not count as diverged. Every batch header of every copy is read.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafkalog.errors import KafkaLogError
from kafkalog.format.checkpoints import read_partition_metadata
from kafkalog.format.files import FileKind
from kafkalog.format.records.stream import LogReader
from kafkalog.log.gaps import Divergence, Gap, LogDirOffsets, segment_bases, subtract_spans
from kafkalog.log.plan import BatchHeader, scan_headers
from kafkalog.log.source import LocalStorage, PartitionFiles, SegmentFiles, UrlStorage, find_copies, gc_paused

if TYPE_CHECKING:
    from kafkalog.log.source import Candidate, Listed

__all__ = ["ReplicatedFiles", "discover", "divergences", "one_view"]


@dataclass(frozen=True, slots=True)
class ReplicatedFiles(PartitionFiles):
    """A partition read across its copies (:func:`one_view`): its segments are the copies' segments
    that give each offset, in offset order, each with the offsets it gives (``first_offset`` and
    ``until``). ``dir`` is the most complete copy's directory; ``copies`` lists every copy's
    directory, most complete first; ``lost`` the offsets no copy holds that a copy's files say
    existed, and the divergences between copies (:class:`~kafkalog.log.gaps.Divergence`, first)."""

    copies: tuple[str, ...] = field(default=(), compare=False)
    lost: tuple[Gap, ...] = field(default=(), compare=False)

    def gaps(self) -> list[Gap]:
        """The divergences between copies, then the offsets lost in every copy."""
        return list(self.lost)


@dataclass
class _Copy:
    files: PartitionFiles
    name: str
    batches: list[tuple[BatchHeader, SegmentFiles]]
    start: int  # its own log start offset
    end: int  # its log end offset
    topic_id: str | None = None  # from its partition.metadata
    cut: int | None = None  # diverged from a kept copy from this offset on: it gives nothing from here

    @property
    def usable_end(self) -> int:
        return self.end if self.cut is None else min(self.end, self.cut)

    def spans(self) -> list[tuple[int, int]]:
        """The offsets its batches hold, as half-open runs of consecutive batches (up to :attr:`cut`)."""
        out: list[tuple[int, int]] = []
        for h, _seg in self.batches:
            lo, hi = h.base_offset, min(h.last_offset + 1, self.usable_end)
            if hi <= lo:
                continue
            if out and lo <= out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], hi))
            else:
                out.append((lo, hi))
        return out


def _read_copy(pf: PartitionFiles) -> _Copy:
    """A copy's batch headers (a segment that cannot be read further counts as holding the offsets
    up to the next segment: reading it reports what is wrong), log start and log end offsets."""
    logs = pf.logs
    batches: list[tuple[BatchHeader, SegmentFiles]] = []
    end = 0
    for n, seg in enumerate(logs):
        end = max(end, seg.base_offset)
        if not seg.size:
            continue
        nxt = logs[n + 1].base_offset if n + 1 < len(logs) else None
        try:
            with pf.storage.open(seg.log, seg.size) as f:  # type: ignore[arg-type]
                for h in scan_headers(f, pf.display(seg.log), 0, seg.size):
                    batches.append((h, seg))
                    end = max(end, h.last_offset + 1)
        except (KafkaLogError, OSError):
            if nxt is not None and nxt > end:
                batches.append((BatchHeader(-1, 0, end, nxt - 1, -1, 0, -1, -1, -1, crc=-1), seg))  # unknown bytes: never compared
                end = nxt
    bases = segment_bases(name for name, _size in pf.listing) or [s.base_offset for s in logs] or [0]
    first = min(bases)
    start = first if pf.log_start_checkpoint is None else max(first, pf.log_start_checkpoint)
    return _Copy(pf, pf.display(), batches, start, end, _topic_id(pf))


def _topic_id(pf: PartitionFiles) -> str | None:
    """The topic id of a copy's ``partition.metadata`` (None when absent or unreadable: ``verify`` reports that)."""
    name = FileKind.PARTITION_METADATA.value
    if name not in dict(pf.listing):
        return None
    try:
        return read_partition_metadata(data=pf.storage.read(pf.storage.join(pf.dir, name))).topic_id
    except (KafkaLogError, OSError):
        return None


def _records(c: _Copy, h: BatchHeader, seg: SegmentFiles) -> dict[int, tuple]:
    """The records of one batch by offset: what two copies must agree on (timestamp, key, value, headers)."""
    with c.files.storage.open(seg.log, seg.size) as f, LogReader(f, name=c.files.display(seg.log), start=h.position,  # type: ignore[arg-type]
                                                       end=h.position + h.size) as reader:
        return {r.offset: (r.timestamp, r.key, r.value, r.headers) for b in reader.batches() for r in b.records()}


def _first_difference(a: _Copy, b: _Copy) -> tuple[int, BatchHeader, BatchHeader] | None:
    """The first offset both copies hold with different records, and each copy's batch holding it."""
    i = j = 0
    while i < len(a.batches) and j < len(b.batches):
        (x, xs), (y, ys) = a.batches[i], b.batches[j]
        if x.last_offset < y.base_offset:
            i += 1
            continue
        if y.last_offset < x.base_offset:
            j += 1
            continue
        same = (x.base_offset, x.last_offset, x.crc) == (y.base_offset, y.last_offset, y.crc)
        if not same and x.position >= 0 and y.position >= 0:
            rx, ry = _records(a, x, xs), _records(b, y, ys)
            differ = sorted(o for o in rx.keys() & ry.keys() if rx[o] != ry[o])
            if differ:
                return differ[0], x, y
        if x.last_offset <= y.last_offset:
            i += 1
        if y.last_offset <= x.last_offset:
            j += 1
    return None


def _storage(copies: list[PartitionFiles]) -> LocalStorage | UrlStorage:
    first = copies[0].storage
    if all(isinstance(c.storage, LocalStorage) for c in copies):
        return LocalStorage()
    if isinstance(first, UrlStorage) and all(isinstance(c.storage, UrlStorage) and c.storage.fs is first.fs for c in copies):
        return first
    raise KafkaLogError("copies of one partition on different file systems are not read as one: give them on one",
                        file=", ".join(c.display() for c in copies))


def _diverge(found: list[_Copy]) -> list[Divergence]:
    """Compare every two copies; the copy of the older history gives nothing from the first
    differing offset on (its :attr:`_Copy.cut`)."""
    diverged: list[Divergence] = []
    for n, a in enumerate(found):
        for b in found[n + 1 :]:
            hit = _first_difference(a, b)
            if hit is None:
                continue
            at, x, y = hit
            kept, other = (a, b) if (x.leader_epoch, a.end, b.name) >= (y.leader_epoch, b.end, a.name) else (b, a)
            epochs = f"partition leader epochs {x.leader_epoch} and {y.leader_epoch}" if x.leader_epoch != y.leader_epoch else "same leader epoch"
            if a.topic_id and b.topic_id and a.topic_id != b.topic_id:
                # replicas of one partition share the topic's id: these are two topics of one name (two clusters, a re-created topic)
                epochs = f"topic ids {a.topic_id} and {b.topic_id}: two topics of one name, not replicas of one partition"
            diverged.append(Divergence(a.name, at, min(a.end, b.end), epochs, other=b.name, kept=kept.name))
            other.cut = at if other.cut is None else min(other.cut, at)
    return sorted(diverged, key=lambda d: (d.start, d.directory, d.other))


def divergences(copies: list[PartitionFiles]) -> list[Divergence]:
    """Where copies of one topic-partition hold different records at the same offsets (what
    ``kafkalog verify`` reports as ``replica-divergence``), by first offset."""
    return _diverge([_read_copy(pf) for pf in sorted(copies, key=lambda p: p.display())])


def one_view(copies: list[PartitionFiles]) -> PartitionFiles:
    """The copies of one topic-partition as one log (see the module docstring); one copy is returned as it is."""
    if len(copies) == 1:
        return copies[0]
    storage = _storage(copies)
    found = [_read_copy(pf) for pf in sorted(copies, key=lambda p: p.display())]
    diverged = _diverge(found)
    spans = {c.name: c.spans() for c in found}
    ranked = sorted(found, key=lambda c: (-sum(hi - lo for lo, hi in spans[c.name]), -c.usable_end, c.name))
    starts = {name: [lo for lo, _hi in s] for name, s in spans.items()}

    def held_until(c: _Copy, at: int) -> int | None:
        """The end of ``c``'s run of batches holding ``at`` (None: it does not hold it)."""
        i = bisect.bisect_right(starts[c.name], at) - 1
        return spans[c.name][i][1] if i >= 0 and spans[c.name][i][1] > at else None

    # each offset from the most complete copy holding it, staying on a copy while it holds the next
    # offset; offsets no copy holds (compaction's holes) do not end a copy's piece
    pieces: list[tuple[_Copy, int, int]] = []
    at = min((s[0] for s in starts.values() if s), default=None)
    while at is not None:
        for c in ([pieces[-1][0]] if pieces else []) + ranked:
            hi = held_until(c, at)
            if hi is not None:
                break
        else:
            at = min((s[k] for s in starts.values() if (k := bisect.bisect_right(s, at)) < len(s)), default=None)
            continue
        if pieces and pieces[-1][0] is c:
            pieces[-1] = (c, pieces[-1][1], hi)
        else:
            pieces.append((c, at, hi))
        at = hi
    segments: list[SegmentFiles] = []
    for k, (c, lo, hi) in enumerate(pieces):
        logs = c.files.logs
        last = k == len(pieces) - 1
        for n, seg in enumerate(logs):
            seg_end = logs[n + 1].base_offset if n + 1 < len(logs) else None
            if (seg_end is not None and seg_end <= lo) or seg.base_offset >= hi:
                continue
            first = max(lo, seg.base_offset)
            until = None if last or (seg_end is not None and seg_end <= hi) else hi
            segments.append(dataclasses.replace(seg, first_offset=None if first == seg.base_offset else first, until=until))
    # data loss: offsets a copy's own files say existed, less those another copy holds
    lost: list[Gap] = []
    for c in found:
        others = [s for d in found if d is not c for s in spans[d.name]]
        for g in c.files.gaps():
            lost.extend(Gap(g.directory, lo, hi, g.evidence) for lo, hi in subtract_spans([(g.start, g.end)], others))
    best = ranked[0]
    log_start = max(c.start for c in found if c.files.logs) if any(c.files.logs for c in found) else best.start
    key = (best.files.topic, best.files.partition)
    return ReplicatedFiles(
        storage, best.files.topic, best.files.partition, best.files.dir, tuple(segments),
        pieces[-1][0].files.snapshots if pieces else best.files.snapshots,
        LogDirOffsets({key: log_start}, {}), best.files.listing,
        copies=tuple(c.name for c in ranked), lost=tuple(diverged) + tuple(sorted(lost, key=lambda g: g.start)),
    )


def discover(paths: str | Iterable[str], *, wants: Callable[[str, int], bool] | None = None,
             list_many: Callable[[Iterator[Candidate]], Iterator[Listed | None] | None] | None = None) -> list[PartitionFiles]:
    """Every topic-partition under ``paths`` (see :func:`find_partitions`, and its ``list_many``),
    sorted by topic and partition, each as one view: a partition found in several directories (its
    replicas under each broker's data dir in a backup of a cluster, or two copies given as two
    paths) is read as one log, each offset once from the copies that hold it, whatever order the
    paths come in (:func:`one_view`, SPEC §6.9)."""
    with gc_paused():
        found, copies = find_copies(paths, wants=wants, list_many=list_many)  # sorted by topic and partition: copies of one are together
        if not copies:  # each partition one copy, which one_view gives as it is
            return found
        return [one_view(list(run)) for _, run in itertools.groupby(found, key=lambda p: (p.topic, p.partition))]
