"""From discovered replicas to input partitions, planned as Spark plans its file sources.

Per topic-partition, :class:`PartitionLog` merges the replicas found (the same partition under
several broker dirs, or a tiered copy beside a local one) into one sequence of segments, each
answering for an offset range, so that every offset is read once. It resolves starting and ending
offsets (earliest, latest, explicit, by timestamp), reports gaps as data loss, and cuts each segment
into :class:`SegmentSlice` byte ranges at ``.index`` entries (made as rows: :data:`SliceRow`). Only
the files a request needs are opened: a segment entirely outside the offset range is never touched.
:func:`pack` then packs the slices of every partition into input partitions (:class:`SlicePack`) as Spark's
``FilePartition`` packs files: a split size from ``maxPartitionBytes``, ``openCostInBytes`` and
the wanted parallelism, large segments cut to it, small ones packed together.
"""

from __future__ import annotations

import bisect
import functools
import logging
import math
import posixpath
from collections.abc import Container, Iterable
from dataclasses import dataclass, fields
from operator import itemgetter

from fsspec.spec import AbstractFileSystem
from pyspark.sql.datasource import InputPartition

from kafkalog.log.gaps import Gap, LogDirOffsets, claimed_end, find_gaps, subtract_spans
from kafkalog.log.reads import log_start_offset

from .errors import DataLossError, SourceOptionError
from .filters import RowFilter
from .layout import FileSystemRef, Replica, SegmentFiles
from .options import EARLIEST, LATEST, OffsetSpec, SourceOptions
from .segments import (
    AbortedRange,
    TailState,
    aborted_from_txn_indexes,
    advance_tail,
    offset_for_timestamp,
    read_offset_index,
    read_time_index,
)

__all__ = [
    "PartitionLog", "Piece", "SegmentSlice", "SliceRow", "SlicePack", "batch_request", "group_replicas", "index_kinds", "pack", "report_data_loss",
    "split_bytes",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SegmentSlice:
    """Batches of one ``.log`` starting at byte ``start``, offsets in ``[lo, hi)``.

    ``end`` bounds the bytes read (None: to the end of the file as it is when read); ``size`` is
    the bytes planning counts for it; ``aborted`` holds the aborted transactions (producer id,
    first, last offset) to drop under read_committed. Only paths and numbers: it pickles.
    """

    fs: FileSystemRef
    topic: str
    partition: int
    log: str
    start: int
    end: int | None
    lo: int
    hi: int | None
    aborted: tuple[AbortedRange, ...] = ()
    size: int = 0
    tiered: bool = False  # ``log`` is an Aiven plug-in object, read through its manifest (keys in ReadSettings)
    #: for the slice that reads the log's last segment to its end: the furthest log end the files
    #: claim and what claims it (SPEC R-LOSS-03), checked against what the read finds
    claimed_end: int | None = None
    claim: str = ""
    #: for that slice too: the segment's base offset and which of its indexes the listing named
    #: (:func:`index_kinds` of the number), whose own claims (:func:`kafkalog.log.gaps.segment_claim`)
    #: the read weighs as well
    claim_indexes: tuple[int, int] | None = None


#: a :class:`SegmentSlice` as planning makes it and an input partition carries it: its fields but its
#: filesystem, as a tuple (it pickles several times faster than the slice, and costs less to make)
SliceRow = tuple
_ROW_FIELDS = [f.name for f in fields(SegmentSlice)[1:]]
_SIZE = _ROW_FIELDS.index("size")
_LOG = _ROW_FIELDS.index("log")


@dataclass(frozen=True)
class SlicePack(InputPartition):
    """One input partition: slices of one or more segments (of any partitions), read in turn, as
    rows (:data:`SliceRow`) of one filesystem; the executor that reads it makes the slices (:attr:`slices`)."""

    fs: FileSystemRef
    rows: tuple[SliceRow, ...]

    @property
    def slices(self) -> tuple[SegmentSlice, ...]:
        """The slices, in the order they are read."""
        fs = self.fs
        return tuple(SegmentSlice(fs, *r) for r in self.rows)


#: the indexes :attr:`SegmentSlice.claim_indexes` may name, by their bit in its number (a number: the
#: same in every input partition's pickle whichever process planned the slice, where a tuple of
#: names would be one object shared between the slices a process made, and pickled once for them)
_INDEX_BITS = (("index", 1), ("timeindex", 2), ("txnindex", 4))


def index_kinds(bits: int) -> tuple[str, ...]:
    """The names of the indexes a :attr:`SegmentSlice.claim_indexes` number names."""
    return tuple(k for k, bit in _INDEX_BITS if bits & bit)


def split_bytes(total: int, files: int, max_bytes: int, open_cost: int, min_partitions: int) -> int:
    """The most bytes of log one input partition takes, as Spark's ``FilePartition.maxSplitBytes``:
    ``total`` bytes in ``files`` files, each also counted ``open_cost`` bytes, spread over
    ``min_partitions``, within ``open_cost`` and ``max_bytes``."""
    per_core = (total + files * open_cost) // max(min_partitions, 1)
    return min(max_bytes, max(open_cost, per_core))


#: where a slice comes in a Kafka partition's offsets: topic, partition, first offset, then the byte
#: where it starts (the cuts of one segment share their offsets)
_read_order = itemgetter(*(_ROW_FIELDS.index(f) for f in ("topic", "partition", "lo", "start")))


def pack(fs: FileSystemRef, rows: list[SliceRow], split: int, open_cost: int) -> list[SlicePack]:
    """Input partitions as Spark's ``FilePartition.getFilePartitions`` makes them: slices (``rows``
    of ``fs``) by size, largest first, added to the current partition while it stays within ``split``
    bytes, each slice counted with ``open_cost`` more. Each input partition reads its slices in
    offset order (:data:`_read_order`), so the rows of one Kafka partition that it holds come as a
    consumer receives them."""
    out: list[SlicePack] = []
    current: list[SliceRow] = []
    size = 0
    for r in sorted(rows, key=lambda r: -r[_SIZE]):
        if current and size + r[_SIZE] > split:
            out.append(SlicePack(fs, tuple(sorted(current, key=_read_order))))
            current, size = [], 0
        current.append(r)
        size += r[_SIZE] + open_cost
    if current:
        out.append(SlicePack(fs, tuple(sorted(current, key=_read_order))))
    return out


@dataclass(frozen=True, slots=True)
class Piece:
    """A segment of the merged log and the offsets it answers for (``hi`` None: open-ended)."""

    seg: SegmentFiles
    lo: int
    hi: int | None
    closed: bool  # not its replica's last segment: its time index is complete


def report_data_loss(message: str, file: str | None, fail: bool) -> None:
    """Raise :class:`DataLossError` (``failOnDataLoss=true``) or log ``message`` as a warning."""
    if fail:
        raise DataLossError(message + ' (set failOnDataLoss to "false" to skip such gaps with a warning)', file=file)
    log.warning("kafkalog source: %s%s; continuing (failOnDataLoss=false)", f"{file}: " if file else "", message)


def group_replicas(replicas: Iterable[Replica], opts: SourceOptions, row_filter: RowFilter | None = None,
                   admitted: Container[tuple[str, int]] = ()) -> dict[tuple[str, int], list[Replica]]:
    """The wanted replicas by (topic, partition), after subscription and pushed topic/partition
    filters; ``admitted``: partitions both took already (a planning worker asked them of each
    directory's name), not asked again."""
    out: dict[tuple[str, int], list[Replica]] = {}
    for r in replicas:
        key = r.key
        if key not in admitted and (not opts.wants_partition(*key) or (row_filter is not None and not row_filter.admits_partition(*key))):
            continue
        out.setdefault(key, []).append(r)
    return out


class PartitionLog:
    """One topic-partition's log, merged over its replicas, as planning sees it (driver side only).

    ``tails`` carries scan states between streaming polls (keyed by replica dir); batch reads
    start with an empty dict.
    """

    def __init__(
        self, fs: AbstractFileSystem, replicas: list[Replica], opts: SourceOptions, tails: dict[str, TailState] | None = None,
        log_dirs: dict[str, LogDirOffsets] | None = None,
    ) -> None:
        self.fs = fs
        self.topic, self.partition = replicas[0].key
        self.replicas = [r for r in replicas if r.segments]
        self.opts = opts
        self.tails = {} if tails is None else tails
        self._advanced: set[str] = set()
        self.gaps: list[tuple[int, int]] = []
        log_dirs = {} if log_dirs is None else log_dirs
        self._main: Replica | None = None  # the copy read last, when copies are read as one
        if len(self.replicas) > 1 and not any(s.tiered or s.segment_id for r in self.replicas for s in r.segments):
            # copies of a partition in broker data dirs: the codec's one rule (kafkalog.log.replicas.one_view)
            self.pieces, self.lost = self._one_view(log_dirs)
            self.claim: tuple[int, str] | None = None
            return
        self._orphans = {r.dir: self._orphan_gaps(r, log_dirs) for r in replicas}
        self.pieces = self._merge()
        # the highest log-start-offset-checkpoint entry of the replicas' log dirs: the log start offset only rises
        marks = [log_dirs[_parent(r.dir)].log_start.get((self.topic, self.partition)) for r in replicas]
        self._log_start_checkpoint = max((m for m in marks if m is not None), default=None)
        #: offsets the replicas' own files say existed but no ``.log`` holds (SPEC §6.8), less those
        #: another replica holds; ``log_dirs`` caches each log dir's checkpoints across partitions
        self.lost = self._lost(replicas, log_dirs)

    def _one_view(self, log_dirs: dict[str, LogDirOffsets]) -> tuple[list[Piece], list[Gap]]:
        """Pieces and lost offsets (replica divergence first) of copies in broker data dirs, as every
        kafkalog reader reads them: :func:`kafkalog.log.replicas.one_view` on the same files."""
        from fsspec.implementations.local import LocalFileSystem

        from kafkalog.log import source
        from kafkalog.log.replicas import one_view

        storage = source.LocalStorage() if isinstance(self.fs, LocalFileSystem) else source.UrlStorage(self.fs)
        copies = []
        by_log: dict[str, tuple[Replica, SegmentFiles]] = {}
        for r in self.replicas:
            parent = posixpath.dirname(r.dir.rstrip("/"))
            if parent not in log_dirs:
                log_dirs[parent] = LogDirOffsets.read(parent, self.fs)
            segs = tuple(source.SegmentFiles(s.base_offset, s.log, s.size, s.index, s.timeindex, s.txnindex) for s in r.segments)
            by_log.update((s.log, (r, s)) for s in r.segments)
            copies.append(source.PartitionFiles(storage, r.topic, r.partition, r.dir, segs, r.snapshots, log_dirs[parent],
                                                tuple((n, None) for n in r.names)))  # sizes unknown: not "listed empty"
        merged = one_view(copies)
        pieces = []
        for n, seg in enumerate(merged.logs):
            r, s = by_log[seg.log]  # type: ignore[index]
            hi = seg.until if seg.until is not None else merged.logs[n + 1].first if n + 1 < len(merged.logs) else None
            pieces.append(Piece(s, seg.first, hi, s is not r.segments[-1]))
            self._main = r
        self._log_start_checkpoint = merged.log_start_checkpoint  # the largest of the copies' (SPEC §6.9)
        return pieces, merged.gaps()

    def _orphan_gaps(self, r: Replica, log_dirs: dict[str, LogDirOffsets]) -> list[Gap]:
        parent = _parent(r.dir)
        if parent not in log_dirs:
            log_dirs[parent] = LogDirOffsets.read(parent, self.fs)
        if r.whole:
            return []  # every segment's .log is there: nothing orphaned (as find_gaps would answer)
        return find_gaps(r.dir, fs=self.fs, files=r.names, checkpoints=log_dirs[parent], tail=False)

    @property
    def name(self) -> str:
        """``<topic>-<partition>``, for messages."""
        return f"{self.topic}-{self.partition}"

    @property
    def dir(self) -> str | None:
        """The first replica's directory (None when no replica holds a segment), for messages."""
        return self.replicas[0].dir if self.replicas else None

    def tail(self, replica: Replica, *, track_txn: bool = False) -> TailState:
        """The scan state of ``replica``'s log end (computed once per planning, headers only)."""
        state = self.tails.get(replica.dir)
        if state is None or replica.dir not in self._advanced or (track_txn and state.ongoing is None):
            state = advance_tail(self.fs, replica, state, track_txn=track_txn)
            self.tails[replica.dir] = state
            self._advanced.add(replica.dir)
        return state

    def _merge(self) -> list[Piece]:
        items = []
        several = len(self.replicas) > 1
        for r in self.replicas:
            segs = r.segments
            # a segment answers for offsets up to the next segment's base, also one whose .log is
            # missing (its offsets are lost, or held by another replica: SPEC §6.8); a tiered
            # segment's manifest says where it ends
            orphans = self._orphans[r.dir]
            bases = sorted({g.start for g in orphans}.union(s.base_offset for s in segs)) if orphans or len(segs) > 1 else [segs[0].base_offset]
            for s in segs:
                j = bisect.bisect_right(bases, s.base_offset)
                if s.next_offset is not None:
                    end: int | None = s.next_offset
                elif j < len(bases):
                    end = bases[j]
                else:
                    end = self.tail(r).next_offset if several else None
                items.append((s.base_offset, end, s, j < len(bases) or s.next_offset is not None))
        if len(items) > 1:
            items.sort(key=lambda it: (it[0], -math.inf if it[1] is None else -it[1]))
        pieces: list[Piece] = []
        covered: int | None = None
        for base, end, seg, closed in items:
            if covered is None:
                lo = base
            elif covered == math.inf or (end is not None and end <= covered):
                continue
            elif base > covered:
                self.gaps.append((covered, base))
                lo = base
            else:
                lo = int(covered)
            if end is not None and lo >= end:
                continue
            pieces.append(Piece(seg, lo, end, closed))
            covered = math.inf if end is None else end
        return pieces

    def _lost(self, replicas: list[Replica], log_dirs: dict[str, LogDirOffsets]) -> list[Gap]:
        """Offsets lost by R-LOSS-01 (no ``.log`` is opened for it). A lost tail of the last ``.log``
        (R-LOSS-03) is found where that ``.log`` is read to its end anyway: by the executor for one
        replica (:attr:`claim`), here from the tails the merge of several replicas scanned."""
        found: list[tuple[Replica, Gap]] = []
        claims: list[tuple[int, str]] = []
        for r in replicas:
            parent = _parent(r.dir)
            found.extend((r, g) for g in self._orphans[r.dir])
            # a name read as a broker's (no topic id in it) is read as find_gaps reads it: its parse is passed on
            tp = r.key if r.topic_id is None else None
            if r.segments and (c := claimed_end(r.dir, r.names, log_dirs[parent], partition=tp)) is not None:
                claims.append(c)
        #: the furthest claimed log end, for the read of the last segment (single replica)
        self.claim = max(claims, default=None)
        if len(self.replicas) >= 2 and self.claim is not None:
            end = max(self.tail(r).next_offset for r in self.replicas)
            if self.claim[0] > end:
                found.append((self.replicas[0], Gap(self.replicas[0].dir, end, self.claim[0], f"the log ends at offset {end}, and {self.claim[1]}")))
            self.claim = None
        if len(replicas) < 2:
            return [g for _, g in found]
        held = {  # what each replica holds: from its first segment to its log end, less its own gaps
            r.dir: subtract_spans([(r.segments[0].base_offset, self.tail(r).next_offset)], [(g.start, g.end) for o, g in found if o is r])
            for r in self.replicas
        }
        out = []
        for r, g in found:
            rest = [(g.start, g.end)]
            for d, spans in held.items():
                if d != r.dir:
                    rest = subtract_spans(rest, spans)
            out.extend(Gap(g.directory, a, b, g.evidence) for a, b in rest)
        return out

    # -- offsets ---------------------------------------------------------------------------------
    @property
    def first_on_disk(self) -> int | None:
        """The first offset the segments hold (the first segment's base offset); None without segments."""
        return self.pieces[0].lo if self.pieces else None

    @property
    def earliest(self) -> int:
        """Where ``earliest`` starts, as Kafka's ListOffsets(earliest) answers: the log start offset
        (:func:`kafkalog.log.reads.log_start_offset`, the codec's readers' too; SPEC R-VAL-10), or with
        ``includeDeleted`` the first offset on disk; 0 for a log without either."""
        if self.opts.include_deleted:
            return self.first_on_disk or 0
        return log_start_offset(self._log_start_checkpoint, self.first_on_disk) or 0

    def _main_replica(self) -> Replica:
        if self._main is not None:
            return self._main
        if len(self.replicas) == 1:
            return self.replicas[0]
        return max(self.replicas, key=lambda r: self.tail(r).next_offset)

    def _lost_end(self) -> int:
        """Where the lost offsets end (0: none lost): the log reached at least that far."""
        return max((g.end for g in self.lost), default=0)

    def log_end_offset(self) -> int:
        """The offset after the last whole batch (over all replicas), or after the last lost offset
        when the files say the log reached further (a lost tail is read as lost, not as absent)."""
        if not self.replicas:
            return self._lost_end()
        return max(self.tail(self._main_replica(), track_txn=self.opts.read_committed).next_offset, self._lost_end())

    def latest(self) -> int:
        """What Kafka's ListOffsets(latest) returns: the log end offset (:meth:`log_end_offset`), or
        under read_committed the last stable offset (the first offset of the oldest open transaction)."""
        if not self.replicas:
            return self._lost_end()
        state = self.tail(self._main_replica(), track_txn=self.opts.read_committed)
        return state.last_stable_offset if self.opts.read_committed else max(state.next_offset, self._lost_end())

    def offset_for_timestamp(self, timestamp: int, *, is_start: bool) -> int | None:
        """Resolve a starting/ending timestamp to an offset (None: open end)."""
        off = offset_for_timestamp(self.fs, [(p.seg, p.closed) for p in self.pieces], timestamp)
        if off is not None:
            return off
        if not is_start:
            return None
        if self.opts.start_by_timestamp_no_match == "latest":
            return self.latest()
        raise SourceOptionError(
            f"no record of {self.name} has a timestamp at or after {timestamp} "
            "(set startingOffsetsByTimestampStrategy to latest to start at the end instead)",
            file=self.dir,
        )

    def resolve(self, spec: OffsetSpec, *, is_start: bool) -> int | None:
        """The offset ``spec`` designates for this partition (None: no end), checked for data loss."""
        kind = spec.kind
        if kind == "earliest":
            return self.earliest
        if kind == "latest":
            return self.latest() if is_start else None
        if kind == "timestamp":
            return self.offset_for_timestamp(spec.timestamp, is_start=is_start)  # type: ignore[arg-type]
        value = spec.partitions().get((self.topic, self.partition))
        if value is None:
            return self.earliest if is_start else None
        if kind == "timestamps":
            return self.offset_for_timestamp(value, is_start=is_start)
        if value == EARLIEST:
            return self.earliest
        if value == LATEST:
            return self.latest() if is_start else None
        fail = self.opts.fail_on_data_loss
        if value < self.earliest:
            first = self.first_on_disk
            why = (f"are below its log start offset {self.earliest} (deleted records; includeDeleted=true reads what the files still hold)"
                   if first is not None and value >= first else f"are not on disk: the log starts at {self.earliest}")
            report_data_loss(f"offsets {value} to {self.earliest - 1} of {self.name} {why}", self.dir, fail)
            return self.earliest
        if not self.pieces or value > self.pieces[-1].lo:
            end = self.log_end_offset()
            if value > end:
                what = "starting" if is_start else "ending"
                report_data_loss(f"{what} offset {value} of {self.name} is beyond the log end offset {end}", self.dir, fail)
                return end
        return value

    # -- slicing ---------------------------------------------------------------------------------
    def aborted(self, start: int, end: int | None) -> list[AbortedRange]:
        """Aborted transactions overlapping ``[start, end)``: ``.txnindex`` entries plus ABORT markers seen by the tail scan."""
        segs = [p.seg for p in self.pieces if p.hi is None or p.hi > start]
        found = set(aborted_from_txn_indexes(self.fs, segs, start, end))
        for r in self.replicas:
            state = self.tails.get(r.dir)
            if state is not None:
                # later requests start at or after ``start``: forget what ended before it
                state.aborted = [a for a in state.aborted if a[2] >= start]
                found.update(a for a in state.aborted if end is None or a[1] < end)
        return sorted(found, key=lambda a: (a[1], a[0]))

    def planned_bytes(self, start: int, end: int | None) -> tuple[int, int]:
        """(bytes, files) of the segments that hold offsets ``[start, end)``, as Spark counts a scan's files."""
        sizes = [p.seg.size for p in self.pieces if (end is None or p.lo < end) and (p.hi is None or p.hi > start) and p.seg.size]
        return sum(sizes), len(sizes)

    def slices(self, start: int, end: int | None, *, split: int, ts_lo: int | None = None) -> list[SliceRow]:
        """Slices (as rows) covering offsets ``[start, end)``, segments larger than ``split`` bytes cut
        at ``.index`` entries; ``ts_lo`` (ms) prunes by time index."""
        for g in self.lost:
            if g.end > start and (end is None or g.start < end):
                report_data_loss(g.message(), g.directory, self.opts.fail_on_data_loss)
        if end is not None and start >= end:
            return []
        for g_lo, g_hi in self.gaps:
            if g_hi > start and (end is None or g_lo < end):
                report_data_loss(f"offsets {g_lo} to {g_hi - 1} of {self.name} are in none of its replicas", self.dir, self.opts.fail_on_data_loss)
        aborted = self.aborted(start, end) if self.opts.read_committed else []
        out: list[SliceRow] = []
        for p in self.pieces:
            lo = max(p.lo, start)
            hi = p.hi if end is None else end if p.hi is None else min(p.hi, end)
            if (hi is not None and lo >= hi) or p.seg.size == 0:
                continue
            mine = tuple(a for a in aborted if a[2] >= lo and (hi is None or a[1] < hi)) if aborted else ()
            out.extend(self._cut(p, lo, hi, ts_lo, mine, split))
        return out

    def fixed_slices(self, start: int, end: int | None, *, least_split: int, ts_lo: int | None = None) -> list[SliceRow] | None:
        """:meth:`slices` as they are whatever split size planning chooses at or above ``least_split``
        (known before the split is: planning in worker processes), or None when they depend on it.
        They do not when every segment is at most ``least_split`` bytes (its offset index is then
        read for the start position alone) and none is cut at ``least_split``: no index entry then
        lies more than ``least_split`` bytes past a slice's start, so none is cut at a larger split."""
        if any(p.seg.size > least_split for p in self.pieces):
            return None
        out = self.slices(start, end, split=least_split, ts_lo=ts_lo)
        return out if len({r[_LOG] for r in out}) == len(out) else None  # a segment's .log is one piece's: two slices of one are a cut

    def _cut(self, p: Piece, lo: int, hi: int | None, ts_lo: int | None, aborted: tuple[AbortedRange, ...], max_bytes: int) -> list[SliceRow]:
        seg = p.seg
        idx = read_offset_index(self.fs, seg) if lo > seg.base_offset or seg.size > max_bytes else None
        start_pos = idx.lookup(lo)[1] if idx is not None and lo > seg.base_offset else 0
        if ts_lo is not None:
            tix = read_time_index(self.fs, seg)
            if tix is not None and len(tix):
                if p.closed and int(tix.timestamps[-1]) < ts_lo:
                    return []  # every record of a closed segment is at or below its time index's last entry
                t_off = tix.lookup(ts_lo)[1]
                if t_off > seg.base_offset:
                    idx = idx if idx is not None else read_offset_index(self.fs, seg)
                    if idx is not None:
                        start_pos = max(start_pos, idx.lookup(t_off)[1])
        end_pos: int | None = None
        cuts: list[int] = []
        if idx is not None and len(idx):
            positions = idx.positions.tolist()
            if hi is not None:
                k = bisect.bisect_left(idx.offsets.tolist(), hi)
                if k + 1 < len(positions):
                    end_pos = positions[k + 1]
            stop = seg.size if end_pos is None else end_pos
            # chunks of at most ``max_bytes``, cut at the last index entry that keeps them so (as
            # Spark splits a file at ``maxSplitBytes``); only a gap between two entries wider than
            # that is a chunk of its own, larger
            chunk_start = prev = start_pos
            for pos in [*(p for p in positions if start_pos < p < stop), stop]:
                if pos - chunk_start > max_bytes and prev > chunk_start:
                    cuts.append(prev)
                    chunk_start = prev
                if pos - chunk_start > max_bytes and pos < stop:
                    cuts.append(pos)  # the gap from the previous entry alone is wider than ``max_bytes``
                    chunk_start = pos
                prev = pos
        to_end = hi is None and p.hi is None and not p.closed  # the last segment, read to its end
        claim = self.claim if to_end else None
        # one copy's last segment: its read weighs its indexes' claims too (copies in broker dirs: one_view weighs them)
        kinds = _index_bits(seg) if to_end and len(self.replicas) < 2 and not seg.tiered else 0
        indexes = (seg.base_offset, kinds) if kinds else None
        out = []
        a = start_pos
        for b in [*cuts, end_pos]:
            claimed, what = claim if claim is not None and b is None else (None, "")
            # the fields of a SegmentSlice but its filesystem, in their order
            out.append((self.topic, self.partition, seg.log, a, b, lo, hi, aborted, max(0, (seg.size if b is None else b) - a),
                        seg.tiered, claimed, what, indexes if b is None else None))
            a = b
        return out


def batch_request(plog: PartitionLog, opts: SourceOptions, row_filter: RowFilter) -> tuple[PartitionLog, int, int | None, int | None]:
    """What a batch read asks of one partition: (log, start, end, lowest timestamp), its offsets
    resolved (``startingOffsets``, ``endingOffsets``, read_committed's last stable offset) and
    narrowed by the pushed offset and timestamp filters."""
    off_lo, off_hi = row_filter.offset.range()
    start = plog.resolve(opts.starting, is_start=True)
    end = plog.resolve(opts.ending, is_start=False)
    if opts.read_committed:
        lso = plog.latest()
        end = lso if end is None else min(end, lso)
    if off_lo is not None:
        start = max(start, off_lo)  # type: ignore[type-var]
    if off_hi is not None:
        end = off_hi + 1 if end is None else min(end, off_hi + 1)
    return plog, start, end, row_filter.timestamp_ms.range()[0]  # type: ignore[return-value]


def _index_bits(seg: SegmentFiles) -> int:
    """Which of a segment's indexes its listing named, as :func:`index_kinds` reads them."""
    return (seg.index is not None) | (seg.timeindex is not None) << 1 | (seg.txnindex is not None) << 2


@functools.lru_cache(maxsize=64)  # asked three times for each replica in turn
def _parent(directory: str) -> str:
    """The log dir holding a partition dir (whose checkpoints name the partition)."""
    return posixpath.dirname(directory.rstrip("/"))
