"""What planning reads from segment files through fsspec: indexes, batch headers, log ends,
transaction state and offsets by timestamp. Nothing here decodes records except control markers.

Every function takes an open fsspec filesystem and the paths found by :mod:`.layout`; files are
opened only when a function needs them, so callers decide which segments get touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import BinaryIO

from fsspec.spec import AbstractFileSystem

from kafkalog.errors import KafkaLogError
from kafkalog.format.index import OffsetIndex, TimeIndex
from kafkalog.format.records.control import ControlType, control_type_of
from kafkalog.format.records.stream import LogReader
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.format.snapshot import read_producer_snapshot
from kafkalog.format.txnindex import read_txn_index
from kafkalog.log.plan import BatchHeader, scan_headers, usable_offset_index

from .layout import Replica, SegmentFiles

__all__ = [
    "AbortedRange",
    "BatchHeader",
    "TailState",
    "aborted_from_txn_indexes",
    "advance_tail",
    "offset_for_timestamp",
    "read_offset_index",
    "read_time_index",
    "scan_headers",
]


#: (producer id, first offset, last offset) of an aborted transaction
AbortedRange = tuple[int, int, int]


def read_offset_index(fs: AbstractFileSystem, seg: SegmentFiles) -> OffsetIndex | None:
    """The segment's ``.index`` (entries past the ``.log``'s size dropped), or None when there is
    none or its entries do not increase (Kafka would rebuild such an index; it is not used)."""
    if seg.tiered:
        idx = seg.remote(fs).offset_index()
    elif seg.index is None:
        return None
    else:
        try:
            idx = OffsetIndex.read(data=fs.cat_file(seg.index), base_offset=seg.base_offset)
        except FileNotFoundError:
            return None
    return usable_offset_index(idx, seg.size, seg.index)


def read_time_index(fs: AbstractFileSystem, seg: SegmentFiles) -> TimeIndex | None:
    """The segment's ``.timeindex``, or None when there is none."""
    if seg.tiered:
        return seg.remote(fs).time_index()
    if seg.timeindex is None:
        return None
    try:
        return TimeIndex.read(data=fs.cat_file(seg.timeindex), base_offset=seg.base_offset)
    except FileNotFoundError:
        return None


def _control_type(f: BinaryIO, name: str, h: BatchHeader) -> ControlType:
    """The type of a control batch's (first) record: ABORT, COMMIT, ..."""
    f.seek(h.position)
    batch = RecordBatch(f.read(h.size), h.position, name)
    records = batch.records()
    if not records:
        return ControlType.UNKNOWN
    try:
        return control_type_of(records[0].key)[0]
    except KafkaLogError as e:
        raise e.located(file=name, position=h.position, offset=h.base_offset) from None


def _index_position(fs: AbstractFileSystem, seg: SegmentFiles, offset: int | None) -> int:
    """A batch boundary at or before the batch holding ``offset`` (the last index entry when None)."""
    idx = read_offset_index(fs, seg)
    if idx is None or not len(idx):
        return 0
    if offset is None:
        return int(idx.positions[-1])
    return idx.lookup(offset)[1]


@dataclass
class TailState:
    """How far a replica's log has been scanned (headers only), for log end and last stable offsets.

    ``ongoing`` maps producer id to the first offset of its open transaction (None: transactions
    not tracked); ``aborted`` lists transactions whose ABORT marker the scan saw.
    """

    segment_base: int
    position: int
    next_offset: int
    ongoing: dict[int, int] | None = None
    aborted: list[AbortedRange] = field(default_factory=list)

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the oldest open transaction, else the log end offset."""
        if not self.ongoing:
            return self.next_offset
        return min(min(self.ongoing.values()), self.next_offset)


def _initial_state(fs: AbstractFileSystem, replica: Replica, track_txn: bool) -> tuple[TailState, int]:
    """Where a first scan starts, and the offset below which batches are skipped.

    Without transactions: the last segment, from its last index entry. With them: the newest
    producer snapshot at or after the first segment (its open transactions), else the first segment.
    """
    segs = replica.segments
    last = segs[-1]
    if not track_txn:
        return TailState(last.base_offset, _index_position(fs, last, None), last.base_offset), last.base_offset
    for snap_offset, path in reversed(replica.snapshots):
        if snap_offset < segs[0].base_offset:
            break
        try:
            entries = read_producer_snapshot(data=fs.cat_file(path))
        except (KafkaLogError, FileNotFoundError):
            continue  # Kafka too falls back to an older snapshot (or none) when one is unreadable
        ongoing = {e.producer_id: e.current_txn_first_offset for e in entries if e.current_txn_first_offset >= 0}
        seg = max((s for s in segs if s.base_offset <= snap_offset), key=lambda s: s.base_offset)
        state = TailState(seg.base_offset, _index_position(fs, seg, snap_offset), snap_offset, ongoing)
        return state, snap_offset
    return TailState(segs[0].base_offset, 0, segs[0].base_offset, {}), segs[0].base_offset


def advance_tail(fs: AbstractFileSystem, replica: Replica, state: TailState | None, *, track_txn: bool) -> TailState:
    """Scan ``replica`` from ``state`` (None: from a fresh start) to the end of its last whole batch.

    Streaming keeps the returned state and passes it back, so each poll reads only new headers.
    A state whose segment no longer exists (deleted by retention) starts over.
    """
    if not replica.segments:
        return state or TailState(0, 0, 0, {} if track_txn else None)
    bases = [s.base_offset for s in replica.segments]
    sizes = {s.base_offset: s.size for s in replica.segments}
    skip_below = -1
    stale = state is None or sizes.get(state.segment_base, -1) < state.position  # gone, or rewritten shorter
    if stale or (track_txn and state.ongoing is None):  # type: ignore[union-attr]
        state, skip_below = _initial_state(fs, replica, track_txn)
    i = bases.index(state.segment_base)
    for seg in replica.segments[i:]:
        if seg.base_offset != state.segment_base:
            state.segment_base, state.position = seg.base_offset, 0
            state.next_offset = max(state.next_offset, seg.base_offset)
        try:
            f = seg.open_log(fs)
        except FileNotFoundError:
            continue  # deleted since the listing: the next listing drops it
        with f:
            size = f.seek(0, 2)
            for h in scan_headers(f, seg.log, state.position, size):
                state.position = h.position + h.size
                if h.last_offset < skip_below:
                    continue
                state.next_offset = max(state.next_offset, h.last_offset + 1)
                if state.ongoing is not None and h.is_transactional:
                    if h.is_control:
                        first = state.ongoing.pop(h.producer_id, None)
                        if first is not None and _control_type(f, seg.log, h) is ControlType.ABORT:
                            state.aborted.append((h.producer_id, first, h.last_offset))
                    else:
                        state.ongoing.setdefault(h.producer_id, h.base_offset)  # type: ignore[arg-type]
    return state


def aborted_from_txn_indexes(fs: AbstractFileSystem, segments: list[SegmentFiles], start: int, end: int | None) -> list[AbortedRange]:
    """Aborted transactions overlapping ``[start, end)`` from the ``.txnindex`` files of ``segments``
    (a tiered segment's from its ``.indexes`` object)."""
    out: list[AbortedRange] = []
    for seg in segments:
        if not seg.tiered and seg.txnindex is None:
            continue
        try:
            if seg.tiered:
                entries = read_txn_index(seg.log, data=seg.remote(fs).index_part("transaction") or b"")
            else:
                entries = read_txn_index(data=fs.cat_file(seg.txnindex))
        except FileNotFoundError:
            continue
        except KafkaLogError as e:
            raise e.located(file=seg.txnindex or seg.log) from None
        for t in entries:
            if t.last_offset >= start and (end is None or t.first_offset < end):
                out.append((t.producer_id, t.first_offset, t.last_offset))
    return out


def offset_for_timestamp(fs: AbstractFileSystem, segments: list[tuple[SegmentFiles, bool]], timestamp: int) -> int | None:
    """The first offset whose record timestamp is >= ``timestamp`` (Kafka's
    ListOffsets by timestamp: the first batch whose max timestamp reaches it, then the first record
    in it that does), or None when no record does.

    ``segments`` are (segment, closed) pairs in offset order; a closed segment whose time index
    ends below ``timestamp`` is skipped without opening its ``.log``, as Kafka does.
    """
    for seg, closed in segments:
        start = 0
        tix = read_time_index(fs, seg)
        if tix is not None and len(tix):
            if closed and int(tix.timestamps[-1]) < timestamp:
                continue
            start = _index_position(fs, seg, tix.lookup(timestamp)[1])
        try:
            f = seg.open_log(fs)
        except FileNotFoundError:
            continue
        with f, LogReader(f, name=seg.log, start=start) as reader:
            for batch in reader.batches():
                if batch.max_timestamp < timestamp or (isinstance(batch, RecordBatch) and batch.is_control):
                    continue
                for r in batch.records():
                    if r.timestamp >= timestamp:
                        return r.offset
    return None
