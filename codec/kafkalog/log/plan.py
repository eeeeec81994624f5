"""What reading a partition needs to know before decoding any record, found as a consumer's broker
finds it: from the offset and time indexes, the producer snapshot, the ``.txnindex`` files and the
headers of the last batches, never by reading whole segments.

* :func:`describe`: a partition's inventory (``kafkalog info``): segments, bytes, log start and end
  offsets, first and last timestamps, open transactions, missing or damaged files.
* :func:`position_of`: where in a segment to start reading for an offset (the ``.index``).
* :func:`offset_for_timestamp`: the first offset whose timestamp is at or after a time (ListOffsets
  by timestamp, through the ``.timeindex``).
* :func:`aborted_transactions` and :attr:`PartitionSummary.last_stable_offset`: what a
  read_committed consumer skips.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from kafkalog.errors import CorruptRecordError, DataKeyError, KafkaLogError
from kafkalog.format.index import OffsetIndex, TimeIndex
from kafkalog.format.records.legacy import RECORD_OVERHEAD_V0
from kafkalog.format.records.v2 import (
    ATTR_CONTROL,
    ATTR_DELETE_HORIZON,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    HEADER,
    HEADER_SIZE,
)
from kafkalog.format.snapshot import read_producer_snapshot
from kafkalog.format.txnindex import AbortedTxn, read_txn_index
from kafkalog.log.gaps import Divergence, Gap
from kafkalog.log.source import PartitionFiles, SegmentFiles

__all__ = [
    "BatchHeader",
    "PartitionSummary",
    "aborted_transactions",
    "describe",
    "offset_for_timestamp",
    "offset_index",
    "position_of",
    "scan_headers",
    "time_index",
    "usable_offset_index",
]

_PREFIX = struct.Struct(">qi")
_LEGACY = struct.Struct(">qiIbbq")  # offset, size, crc, magic, attributes, timestamp (magic 1)
_UP_TO_MAGIC = 17
_READ = 64 * 1024


@dataclass(frozen=True)
class BatchHeader:
    """What a batch's header says (magic 0/1: one message, no producer, ``first_timestamp`` its timestamp or -1)."""

    position: int
    size: int  # bytes in the log, offset and length fields included
    base_offset: int
    last_offset: int
    magic: int
    attributes: int
    first_timestamp: int
    max_timestamp: int
    producer_id: int
    records: int = 1  # v2: the header's record count; a v0/v1 entry counts as one
    crc: int = 0  # the stored CRC (magic 2: of the batch; 0/1: of the message)
    leader_epoch: int = -1  # the partition leader epoch (magic 2; -1 before it)

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & ATTR_CONTROL)


def scan_headers(f: BinaryIO, name: str, start: int, end: int) -> Iterator[BatchHeader]:
    """The header of every whole batch of ``f`` in ``[start, end)``, reading headers only and
    stopping at a torn tail as Kafka's FileLogInputStream does; a declared size below the minimum
    record overhead raises :class:`~kafkalog.CorruptRecordError`."""
    pos = start
    buf = b""
    at = start
    while pos < end - _UP_TO_MAGIC:
        want = min(HEADER_SIZE, end - pos)
        if pos < at or pos + want > at + len(buf):
            f.seek(pos)
            buf = f.read(min(_READ, end - pos))
            at = pos
            if len(buf) < want:
                return
        rel = pos - at
        offset, size = _PREFIX.unpack_from(buf, rel)
        if size < RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
                                     file=name, position=pos, offset=offset)
        if pos > end - 12 - size:
            return  # a torn tail
        magic = buf[rel + 16]
        if magic >= 2:
            if 12 + size < HEADER_SIZE or len(buf) - rel < HEADER_SIZE:
                raise CorruptRecordError(f"record batch is {12 + size} bytes, smaller than the minimum overhead {HEADER_SIZE}",
                                         file=name, position=pos, offset=offset)
            (base, _len, epoch, _magic, crc, attrs, lod, first_ts, max_ts, pid, _pe, _seq, count) = HEADER.unpack_from(buf, rel)
            if attrs & ATTR_TIMESTAMP_TYPE:
                first_ts = max_ts  # LogAppendTime: every record carries the append time
            elif attrs & ATTR_DELETE_HORIZON:
                first_ts = max_ts  # the base timestamp is the delete horizon, not a record's time
            yield BatchHeader(pos, 12 + size, base, base + lod, magic, attrs, first_ts, max_ts, pid, records=count, crc=crc, leader_epoch=epoch)
        else:
            ts = _LEGACY.unpack_from(buf, rel)[5] if magic == 1 and len(buf) - rel >= _LEGACY.size else -1
            yield BatchHeader(pos, 12 + size, offset, offset, magic, buf[rel + 17], ts, ts, -1, crc=_LEGACY.unpack_from(buf, rel)[2])
        pos += 12 + size


def offset_index(pf: PartitionFiles, seg: SegmentFiles) -> OffsetIndex | None:
    """The segment's ``.index`` without entries past the ``.log``'s end, or None when it is absent
    or its entries do not increase (Kafka would rebuild such an index; it is not used)."""
    if seg.index is None:
        return None
    return usable_offset_index(OffsetIndex.read(data=pf.storage.read(seg.index), base_offset=seg.base_offset), seg.size, seg.index)


def usable_offset_index(idx: OffsetIndex, log_size: int, path: str | None = None) -> OffsetIndex | None:
    """``idx`` without the entries that point at or past the end of a ``.log`` of ``log_size``
    bytes (a copy may hold a longer index than log), or None when its entries do not increase
    (Kafka would rebuild such an index; a reader does not seek by it)."""
    if len(idx) > 1 and ((idx.offsets[1:] <= idx.offsets[:-1]).any() or (idx.positions[1:] <= idx.positions[:-1]).any()):
        return None
    keep = idx.positions < log_size
    if not keep.all():
        idx = OffsetIndex(idx.base_offset, idx.offsets[keep], idx.positions[keep], idx.slots, path)
    return idx


def time_index(pf: PartitionFiles, seg: SegmentFiles) -> TimeIndex | None:
    """The segment's ``.timeindex``, or None when there is none."""
    if seg.timeindex is None:
        return None
    return TimeIndex.read(data=pf.storage.read(seg.timeindex), base_offset=seg.base_offset)


def position_of(pf: PartitionFiles, seg: SegmentFiles, offset: int) -> int:
    """A batch boundary at or before the batch holding ``offset`` in ``seg`` (0 without a usable index)."""
    if offset <= seg.base_offset:
        return 0
    try:
        idx = offset_index(pf, seg)
    except (KafkaLogError, OSError):
        return 0
    return idx.lookup(offset)[1] if idx is not None and len(idx) else 0


def _problem(problems: list[str], e: Exception, text: str) -> None:
    """Add ``text`` (what ``e`` made unreadable) to ``problems`` once. A private key that is missing
    or does not fit makes every file of the encrypted tiered segments unreadable for the same
    reason: that is said once, as what it is, not per file."""
    if isinstance(e, DataKeyError):
        text = f"encrypted tiered segments not read: {e.message}"
    if text not in problems:
        problems.append(text)


def _last_index_position(pf: PartitionFiles, seg: SegmentFiles, problems: list[str]) -> int:
    """The position of the segment's last ``.index`` entry that starts a whole batch (0 without a
    usable index): in a ``.log`` cut short, the last entries may point at the torn batch."""
    try:
        idx = offset_index(pf, seg)
        if idx is None or not len(idx):
            return 0
        with pf.storage.open(seg.log, seg.size) as f:  # type: ignore[arg-type]
            for pos in reversed(idx.positions.tolist()):
                f.seek(pos)
                head = f.read(_PREFIX.size)
                if len(head) == _PREFIX.size and pos + _PREFIX.size + _PREFIX.unpack(head)[1] <= seg.size:
                    return int(pos)
    except (KafkaLogError, OSError) as e:
        _problem(problems, e, f"{seg.base_offset:020d}.index: {e}")
    return 0


def _segment_of(segments: list[SegmentFiles], offset: int) -> int:
    """The index of the last segment whose base offset is at or below ``offset`` (0 if none)."""
    i = 0
    for j, s in enumerate(segments):
        if s.base_offset <= offset:
            i = j
    return i


@dataclass
class PartitionSummary:
    """A partition's inventory, from its indexes, snapshot and last batches.

    Offsets: ``log_start_offset`` is where a consumer's "earliest" starts (the data dir's
    checkpoint, or the first segment); ``first_offset`` and ``last_offset`` are those of the first
    and last batch on disk (None without any); ``end_offset`` is the next offset (the log end
    offset; None when the segment holding it could not be read). ``open_transactions`` maps producer
    id to the first offset of its undecided transaction; ``problems`` lists missing or damaged files,
    ``gaps`` the offsets lost (data loss) and those two copies of the partition hold differently
    (:class:`~kafkalog.log.gaps.Divergence`)."""

    topic: str
    partition: int
    dir: str
    segments: int
    bytes: int
    log_start_offset: int | None = None
    first_offset: int | None = None
    last_offset: int | None = None
    end_offset: int | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    open_transactions: dict[int, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    gaps: list[Gap] = field(default_factory=list)
    #: the directories the partition was read from, most complete first (several: copies, SPEC §6.9)
    copies: list[str] = field(default_factory=list)

    @property
    def last_stable_offset(self) -> int | None:
        """The first offset of the oldest open transaction, else the end offset."""
        if self.end_offset is None:
            return None
        return min([self.end_offset, *self.open_transactions.values()])


def _read_snapshot(pf: PartitionFiles, problems: list[str], floor: int) -> tuple[int, dict[int, int]] | None:
    """The newest readable producer snapshot at or above ``floor``: (its offset, open transactions).
    An unreadable one is reported and the next older one used, as Kafka falls back."""
    for offset, path in reversed(pf.snapshots):
        if offset < floor:
            break
        try:
            entries = read_producer_snapshot(data=pf.storage.read(path))
        except KafkaLogError as e:
            _problem(problems, e, f"{path.rsplit('/', 1)[-1]}: damaged producer snapshot: {e.message}")
            continue
        return offset, {e.producer_id: e.current_txn_first_offset for e in entries if e.current_txn_first_offset >= 0}
    return None


def describe(pf: PartitionFiles) -> PartitionSummary:
    """Take a partition's inventory: reads every (small) index file, the newest producer snapshot,
    the first batch header and the batches after the last ``.index`` entry (or after the snapshot's
    offset, for open transactions), and judges data loss (:meth:`PartitionFiles.gaps`). Never
    raises for bad files: what cannot be read is a problem."""
    logs = pf.logs
    out = PartitionSummary(pf.topic, pf.partition, pf.display(), len(logs), sum(s.size for s in logs),
                           copies=list(getattr(pf, "copies", ())) or [pf.display()])
    problems = out.problems
    try:
        out.gaps = pf.gaps()
        problems.extend(g.message() if isinstance(g, Divergence) else f"data loss: {g.message()}" for g in out.gaps)
    except (KafkaLogError, OSError) as e:
        _problem(problems, e, f"data loss not judged: {e}")
    out.log_start_offset = pf.log_start_offset
    if not logs:
        return out
    # the first batch
    first = logs[0]
    try:
        with pf.storage.open(first.log, first.size) as f:  # type: ignore[arg-type]
            h = next(scan_headers(f, pf.display(first.log), 0, first.size), None)
        if h is not None:
            out.first_offset, out.first_timestamp = h.base_offset, (h.first_timestamp if h.first_timestamp >= 0 else None)
    except (KafkaLogError, OSError) as e:
        _problem(problems, e, f"{first.log.rsplit('/', 1)[-1]}: {e}")
    # the time indexes, whose entries count once the end of each segment is known (see below)
    tixes: list[TimeIndex | None] = []
    for s in logs:
        try:
            tixes.append(time_index(pf, s))
        except (KafkaLogError, OSError) as e:
            tixes.append(None)
            _problem(problems, e, f"{s.base_offset:020d}.timeindex: {e}")
    max_ts = -1
    # where the scan of batch headers starts: the last index entry of the last non-empty segment (for
    # the end offset and the last batch), or the snapshot's offset if earlier (for open transactions)
    k = max((n for n, s in enumerate(logs) if s.size), default=len(logs) - 1)
    i, pos = k, _last_index_position(pf, logs[k], problems)
    snap = _read_snapshot(pf, problems, logs[0].base_offset)
    if snap is not None:
        snap_offset, ongoing = snap
        si = _segment_of(logs, snap_offset)
        if (si, position_of(pf, logs[si], snap_offset)) < (i, pos):
            i, pos = si, position_of(pf, logs[si], snap_offset)
    else:
        # without a snapshot the open transactions need every header from the start, as Kafka's load does
        snap_offset, ongoing, i, pos = -1, {}, 0, 0
    next_offset = logs[i].base_offset
    last_batch: BatchHeader | None = None
    tail_problem = None
    end_known = True
    for j in range(i, len(logs)):
        s = logs[j]
        start_pos = pos if j == i else 0
        next_offset = max(next_offset, s.base_offset)
        try:
            with pf.storage.open(s.log, s.size) as f:  # type: ignore[arg-type]
                size = f.seek(0, 2)
                end = start_pos
                for h in scan_headers(f, pf.display(s.log), start_pos, size):
                    end = h.position + h.size
                    last_batch = h
                    next_offset = max(next_offset, h.last_offset + 1)
                    max_ts = max(max_ts, h.max_timestamp)
                    if h.is_transactional and h.last_offset >= snap_offset:
                        if h.is_control:
                            ongoing.pop(h.producer_id, None)
                        else:
                            ongoing.setdefault(h.producer_id, h.base_offset)
                if j == len(logs) - 1 and end < size:
                    tail_problem = f"{s.base_offset:020d}.log: {size - end} bytes at its end (from byte {end}) are not a whole batch (a torn tail)"
        except (KafkaLogError, OSError) as e:
            _problem(problems, e, f"{(s.log or '').rsplit('/', 1)[-1]}: {e}")
            end_known &= j < k  # the last segment with data gives the end offset: unread, it is not known
    if tail_problem:
        problems.append(tail_problem)
    if last_batch is None and logs[k].size and not problems:
        problems.append(f"{logs[k].base_offset:020d}.log: no whole batch read")
    out.end_offset = next_offset if end_known else None
    if last_batch is not None:
        out.last_offset = last_batch.last_offset
    # the largest timestamp: the batches read above, and the time index entries of records that are
    # there (a segment ends before the next one's base offset, the last one at the end offset); a
    # .log cut short keeps the entries of the records it lost, whose times are not the log's
    for j, tix in enumerate(tixes):
        limit = (next_offset if end_known else None) if j == len(logs) - 1 else logs[j + 1].base_offset
        if tix is not None and len(tix) and (kept := tix.offsets < (limit if limit is not None else tix.offsets.max() + 1)).any():
            max_ts = max(max_ts, int(tix.timestamps[kept].max()))
    out.last_timestamp = max_ts if max_ts >= 0 else None
    out.open_transactions = dict(sorted(ongoing.items(), key=lambda kv: kv[1]))
    return out


def aborted_transactions(pf: PartitionFiles, start: int, end: int | None) -> list[AbortedTxn]:
    """The aborted transactions overlapping offsets ``[start, end)``, from the ``.txnindex`` files
    (Kafka records every ABORT marker there as it is appended, active segment included)."""
    out: list[AbortedTxn] = []
    for seg in pf.logs:
        if seg.txnindex is None:
            continue
        try:
            entries = read_txn_index(data=pf.storage.read(seg.txnindex))
        except KafkaLogError as e:
            raise e.located(file=pf.display(seg.txnindex)) from None
        out.extend(t for t in entries if t.last_offset >= start and (end is None or t.first_offset < end))
    # a segment in both tiers of tiered storage lists its aborted transactions twice: each counts once
    return sorted(set(out), key=lambda t: (t.first_offset, t.producer_id))


def offset_for_timestamp(pf: PartitionFiles, timestamp: int) -> int | None:
    """The first offset whose record timestamp is at or after ``timestamp`` (ms), as Kafka's
    ListOffsets answers it: the first batch whose max timestamp reaches it, then the first record in
    it that does; None when no record does. A segment whose time index ends below ``timestamp`` is
    skipped without opening its ``.log`` (all but the last: the active one's index may lag)."""
    from kafkalog.format.records.stream import LogReader
    from kafkalog.format.records.v2 import RecordBatch

    logs = pf.logs
    for n, seg in enumerate(logs):
        start = 0
        try:
            tix = time_index(pf, seg)
        except (KafkaLogError, OSError):
            tix = None
        if tix is not None and len(tix):
            if n < len(logs) - 1 and int(tix.timestamps[-1]) < timestamp:
                continue
            start = position_of(pf, seg, tix.lookup(timestamp)[1])
        with pf.storage.open(seg.log, seg.size) as f, LogReader(f, name=pf.display(seg.log), start=start, end=seg.size or None) as reader:  # type: ignore[arg-type]
            for batch in reader.batches():
                if batch.max_timestamp < timestamp or (isinstance(batch, RecordBatch) and batch.is_control):
                    continue
                for r in batch.records():
                    if r.timestamp >= timestamp:
                        return r.offset
    return None
