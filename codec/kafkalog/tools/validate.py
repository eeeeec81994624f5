"""``kafkalog verify``: check every batch, index entry and state file of a log dir, reporting all findings.

What is checked (SPEC §4.7, R-VFY-01..06): batch framing and CRCs (CRC-32C of v2 batches, CRC-32 of v0/v1
messages and of a wrapper's inner messages), record structure, offsets increasing within and
across segments; every ``.index`` entry against the log as DumpLogSegments' ``--verify-index-only``
does, every ``.timeindex`` entry against its batch's largest timestamp as that tool's time-index
check does (DumpLogSegments.scala @1eb7644); ``.txnindex`` entries against the ABORT markers of their
segment; producer ``.snapshot`` structure and CRC-32C; checkpoint files.

The fast path: a ``.log`` is read in chunks, a compiled walk (:data:`kafkalog.fast.columnar.kernels`:
Cython, or its plain-Python twin) frames every batch and walks the records of uncompressed v2 batches, batch headers are read with one numpy gather, CRCs are
computed in C over whole batches, and index files are read with numpy. Only compressed, control
and v0/v1 batches are decoded into objects.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafkalog.errors import CorruptIndexError, KafkaLogError
from kafkalog.fast import columnar
from kafkalog.fast.columnar import _E_COUNT, _E_OFFSET_DELTA, _E_OFFSET_ORDER, _MESSAGES, _be32, decode_columns
from kafkalog.format.checkpoints import (
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
)
from kafkalog.format.files import FileKind, kind_of, walk
from kafkalog.format.index import OFFSET_INDEX_DTYPE, TIME_INDEX_DTYPE, OffsetIndex, TimeIndex, base_offset_of
from kafkalog.format.primitives import crc32, crc32c
from kafkalog.format.records.control import ControlType, control_type_of
from kafkalog.format.records.legacy import LegacyBatch
from kafkalog.format.records.v2 import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    RecordBatch,
    batch_crc_error,
)
from kafkalog.format.snapshot import read_producer_snapshot
from kafkalog.format.txnindex import ABORTED_TXN, CURRENT_VERSION
from kafkalog.log.unified import parse_topic_partition, topic_name_problem
from kafkalog.tools import jobs as _jobs
from kafkalog.tools.jobs import ordered_map, runs, share, span

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "Finding", "VerifyReport", "verify"]

ERROR = "error"
WARNING = "warning"
#: a known behaviour of some broker versions, not a fault: listed on request, never counted as a warning
NOTE = "note"

#: Kafka's default max.message.bytes (1 MiB plus the 12-byte log overhead): no broker writes a larger batch
DEFAULT_MAX_MESSAGE_BYTES = 1048588
#: the file a broker writes in its log dir on a clean shutdown (CleanShutdownFileHandler.java @1eb7644)
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"

_INT32_MAX = 2**31 - 1
_NO_TIMESTAMP = -1
_MIN_ENTRY_SIZE = 14  # Kafka's LegacyRecord.RECORD_OVERHEAD_V0
_V2_HEADER = 61
#: the least ``size`` of an entry of each magic: message overhead of v0 and v1, the v2 batch header
_MIN_SIZE_BY_MAGIC = {0: 14, 1: 22, 2: _V2_HEADER - 12}
#: compression codec ids Kafka knows (CompressionType.java @1eb7644: none, gzip, snappy, lz4, zstd)
_MAX_CODEC = 4
#: numpy view of the v2 batch header (schemas.RECORD_BATCH_V2_HEADER)
_V2_DTYPE = np.dtype(
    [
        ("baseOffset", ">i8"), ("batchLength", ">i4"), ("partitionLeaderEpoch", ">i4"), ("magic", "i1"),
        ("crc", ">u4"), ("attributes", ">i2"), ("lastOffsetDelta", ">i4"), ("baseTimestamp", ">i8"),
        ("maxTimestamp", ">i8"), ("producerId", ">i8"), ("producerEpoch", ">i2"), ("baseSequence", ">i4"),
        ("recordsCount", ">i4"),
    ]
)
_OFFSET_CHECKPOINTS = frozenset(
    {"recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint", "cleaner-offset-checkpoint"}
)

#: what the record walk's statuses mean (columnar's, and verify's own)
_WALK_MESSAGES = {
    **_MESSAGES,
    _E_OFFSET_ORDER: "record offset deltas are not strictly increasing",
    _E_OFFSET_DELTA: "a record's offset delta is greater than the batch's lastOffsetDelta",
    _E_COUNT: "invalid record count",
}


@dataclass(frozen=True)
class Finding:
    """One problem: ``code`` is a short stable id, ``position`` the byte position in ``file``."""

    severity: str
    code: str
    file: str
    position: int | None
    offset: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON object (one line of ``kafkalog verify --json``)."""
        return {
            "severity": self.severity, "code": self.code, "file": self.file,
            "position": self.position, "offset": self.offset, "message": self.message,
        }

    def __str__(self) -> str:
        where = self.file if self.position is None else f"{self.file}:{self.position}"
        off = "" if self.offset is None else f" offset {self.offset}:"
        return f"{where}:{off} {self.severity}: {self.message} [{self.code}]"


@dataclass
class VerifyReport:
    """Every finding of a :func:`verify` run, with the number of files and bytes checked."""

    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    bytes: int = 0

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == WARNING]

    @property
    def notes(self) -> list[Finding]:
        """Known behaviours of some broker versions (not faults, not warnings)."""
        return [f for f in self.findings if f.severity == NOTE]

    def sort(self) -> None:
        """Order the findings by file, then byte position (findings without one first)."""
        self.findings.sort(key=lambda f: (f.file, -1 if f.position is None else f.position))

    @property
    def ok(self) -> bool:
        """True when there is no error (warnings allowed)."""
        return not self.errors

    def add(self, severity: str, code: str, file: str, position: int | None, offset: int | None, message: str) -> None:
        self.findings.append(Finding(severity, code, file, None if position is None else int(position), None if offset is None else int(offset), message))


# ------------------------------------------------------------------------------------ segments
@dataclass(frozen=True)
class _Before:
    """The first offset of producer ``producer_id``'s open transaction as the segments before a
    range left it, or ``default`` when they left none: known once those are checked (see :class:`_OpenTxns`)."""

    producer_id: int
    default: int | None


class _OpenTxns:
    """The open transactions (producer id -> first offset) of a range of segments checked without
    the segments before it (``verify -j``: a large directory's segments are checked by several
    processes). Where the range's first event of a producer needs what came before (an ABORT
    marker's transaction, a transaction continued), the value is a :class:`_Before`; the process
    that checks the segments in order puts what came before in (:meth:`resolve`, :meth:`apply`).
    Offers what :func:`_scan_buffer` uses of a dict."""

    def __init__(self) -> None:
        self.now: dict[int, int | _Before] = {}
        self.touched: set[int] = set()  # producers the range decides for

    def get(self, pid: int) -> int | _Before | None:
        return self.now.get(pid) if pid in self.touched else _Before(pid, None)

    def setdefault(self, pid: int, offset: int) -> None:
        if pid not in self.touched:
            self.touched.add(pid)
            self.now[pid] = _Before(pid, offset)  # a transaction open before the range goes on
        else:
            self.now.setdefault(pid, offset)

    def pop(self, pid: int, default: None = None) -> None:
        self.touched.add(pid)
        self.now.pop(pid, default)

    @staticmethod
    def resolve(value: int | _Before | None, before: dict[int, int]) -> int | None:
        """``value`` given the open transactions ``before`` the range."""
        return before.get(value.producer_id, value.default) if isinstance(value, _Before) else value

    def apply(self, before: dict[int, int]) -> None:
        """Turn the open transactions before the range into those after it."""
        for pid in self.touched:
            if pid in self.now:
                before[pid] = self.resolve(self.now[pid], before)  # type: ignore[assignment]
            else:
                before.pop(pid, None)


@dataclass
class _Abort:
    producer_id: int
    offset: int
    position: int
    first_offset: int | _Before | None  # first offset of the aborted transaction when seen in this run


@dataclass
class _Scan:
    """What the index checks need from a scanned ``.log``: batch positions and offsets."""

    path: str
    size: int
    positions: np.ndarray
    base_offsets: np.ndarray
    last_offsets: np.ndarray
    max_ts: np.ndarray  # largest record timestamp per batch (DumpLogSegments' "log timestamp")
    aborts: list[_Abort]

    def shifted(self, origin: int) -> _Scan:
        """This scan of a chunk with positions counted from the file's start (chunk at ``origin``)."""
        aborts = [_Abort(a.producer_id, a.offset, a.position + origin, a.first_offset) for a in self.aborts]
        return _Scan(self.path, self.size, self.positions + origin, self.base_offsets, self.last_offsets, self.max_ts, aborts)

    @classmethod
    def joined(cls, path: str, size: int, scans: list[_Scan]) -> _Scan:
        """One scan of the file from the scans of its chunks, in file order."""
        if len(scans) == 1:
            one = scans[0]
            return cls(path, size, one.positions, one.base_offsets, one.last_offsets, one.max_ts, one.aborts)
        return cls(
            path, size, *(np.concatenate([getattr(sc, f) for sc in scans]) for f in ("positions", "base_offsets", "last_offsets", "max_ts")),
            [a for sc in scans for a in sc.aborts],
        )

    @property
    def last_offset(self) -> int | None:
        return int(self.last_offsets[-1]) if len(self.last_offsets) else None


class _Sink:
    """Where a check's findings go: the report, or nowhere when a log is scanned only as context."""

    def __init__(self, report: VerifyReport | None) -> None:
        self.report = report

    def __call__(self, severity: str, code: str, file: str, position: int | None, offset: int | None, message: str) -> None:
        if self.report is not None:
            self.report.add(severity, code, file, position, offset, message)


#: bytes of whole batches read and checked at a time (a larger batch is read alone)
SCAN_CHUNK = 32 << 20


def _scan_log(
    path: str, sink: _Sink, open_txns: dict[int, int] | _OpenTxns, *, closed: str | None, segment_base: int | None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> _Scan:
    """Check every batch of a ``.log`` (or KRaft snapshot) and collect what the index checks need.

    ``open_txns`` maps producer id -> first offset of its open transaction; it is carried from
    segment to segment and updated here. ``segment_base`` is None for files without a base offset.
    The file is read in chunks of whole batches, never memory-mapped: a broker may truncate a
    segment while it is read (a follower's truncation, recovery), and a mapped page past the new
    end would kill the process with SIGBUS (SPEC R-LIVE-06); memory stays bounded by a chunk."""
    scans: list[_Scan] = []
    with open(path, "rb") as f:
        fd = f.fileno()
        size = os.fstat(fd).st_size
        origin = 0
        while True:
            chunk = os.pread(fd, min(SCAN_CHUNK, size - origin), origin)
            final = origin + len(chunk) >= size or len(chunk) < min(SCAN_CHUNK, size - origin)  # the end, or the file shrank
            cut = len(chunk)
            if not final:
                buf = np.frombuffer(chunk, np.uint8)
                n, cut, status = columnar.kernels.frame(buf, len(chunk), np.zeros(0, np.int64), False)
                if status == 2:
                    final = True  # unframeable from here on: the rest is one finding
                    cut = len(chunk)
                elif n == 0:  # one batch longer than a chunk: read it alone
                    chunk = os.pread(fd, 12 + _be32(buf, 8), origin)
                    final = origin + len(chunk) >= size
                    cut = len(chunk)
            prev = next((sc for sc in reversed(scans) if len(sc.last_offsets)), None)
            piece = _scan_buffer(
                path, chunk[:cut] if cut < len(chunk) else chunk, cut, _Shifted(sink, origin), open_txns,
                closed=closed, segment_base=segment_base, first=origin == 0, remaining=size - origin,
                prev_last=None if prev is None else prev.last_offset, max_message_bytes=max_message_bytes, origin=origin,
            )
            _check_boundary(scans, piece, origin, sink, path)
            scans.append(piece.shifted(origin))
            origin += cut
            if final or cut == 0:
                break
    return _Scan.joined(path, size, scans)


class _Shifted(_Sink):
    """A sink for a chunk starting at byte ``origin`` of its file: positions made file-absolute."""

    def __init__(self, sink: _Sink, origin: int) -> None:
        super().__init__(sink.report)
        self.origin = origin

    def __call__(self, severity: str, code: str, file: str, position: int | None, offset: int | None, message: str) -> None:
        super().__call__(severity, code, file, None if position is None else int(position) + self.origin, offset, message)


def _check_boundary(scans: list[_Scan], piece: _Scan, origin: int, sink: _Sink, path: str) -> None:
    """Offsets must increase across the cut between two chunks too."""
    prev = next((s for s in reversed(scans) if len(s.last_offsets)), None)
    if prev is not None and len(piece.base_offsets) and piece.base_offsets[0] <= prev.last_offsets[-1]:
        sink(ERROR, "offsets-not-increasing", path, origin + int(piece.positions[0]), int(piece.base_offsets[0]),
             f"batch base offset {piece.base_offsets[0]} is not greater than the previous batch's last offset {prev.last_offsets[-1]}")


def _scan_buffer(
    path: str, mm: bytes, size: int, sink: _Sink, open_txns: dict[int, int] | _OpenTxns, *, closed: str | None, segment_base: int | None,
    first: bool = True, remaining: int | None = None, prev_last: int | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, origin: int = 0,
) -> _Scan:
    """Check the batches of one chunk (``first``: it starts the file; ``remaining``: file bytes
    from the chunk's start, for messages about an unframeable tail; ``prev_last``: the last offset
    of the chunks before; ``closed``: why the segment cannot end in a torn tail, None when it may;
    ``origin``: the chunk's position in the file, for positions quoted in messages); positions are
    chunk-relative."""
    remaining = size if remaining is None else remaining
    buf = np.frombuffer(mm, dtype=np.uint8) if size else np.zeros(0, np.uint8)
    n, stop, status = columnar.kernels.frame(buf, size, np.zeros(0, np.int64), False)
    positions = np.empty(n, np.int64)
    columnar.kernels.frame(buf, size, positions, True)
    if status == 2:
        sink(ERROR, "batch-size", path, stop, None,
             f"batch size {_be32(buf, stop + 8)} is smaller than the minimum {_MIN_ENTRY_SIZE}; the {remaining - stop} bytes from here on cannot be framed")
    ends = np.empty(n, np.int64)
    if n:
        ends[:-1] = positions[1:]
        ends[-1] = stop
    magic = buf[positions + 16].astype(np.int64) if n else np.zeros(0, np.int64)
    base = np.zeros(n, np.int64)
    last = np.zeros(n, np.int64)
    max_ts = np.full(n, _NO_TIMESTAMP, np.int64)
    valid = np.ones(n, bool)  # framing and header fine (offsets usable)

    v2 = np.flatnonzero(magic == 2)
    short = v2[ends[v2] - positions[v2] < _V2_HEADER]
    for i in short.tolist():
        sink(ERROR, "batch-size", path, positions[i], None, f"magic 2 batch of {ends[i] - positions[i]} bytes is shorter than its {_V2_HEADER}-byte header")
        valid[i] = False
    v2 = v2[ends[v2] - positions[v2] >= _V2_HEADER]
    hdr = _gather_headers(buf, positions[v2])
    base[v2] = hdr["baseOffset"]
    lod = hdr["lastOffsetDelta"].astype(np.int64)
    last[v2] = base[v2] + lod
    attrs = hdr["attributes"].astype(np.int64)
    counts = hdr["recordsCount"].astype(np.int64)
    batch_len = hdr["batchLength"].astype(np.int64)

    mv = memoryview(mm)
    try:
        # CRC-32C over each whole v2 batch, in C: the check every reader makes (batch_crc_error)
        for k, (p, e) in enumerate(zip(positions[v2].tolist(), ends[v2].tolist(), strict=True)):
            if (crc_err := batch_crc_error(mv[p:e], file=path, position=p)) is not None:
                sink(ERROR, "batch-crc", path, p, base[v2[k]], crc_err.message)
        bad_len = np.flatnonzero(batch_len != ends[v2] - positions[v2] - 12)
        for k in bad_len.tolist():  # impossible after framing; kept as a guard against a wrong header view
            sink(ERROR, "batch-size", path, positions[v2[k]], base[v2[k]], "batch length disagrees with framing")
        for k in np.flatnonzero(lod < 0).tolist():
            sink(ERROR, "offsets-not-increasing", path, positions[v2[k]], base[v2[k]], f"negative lastOffsetDelta {lod[k]}")

        # records of uncompressed v2 batches: compiled walk
        plain = (attrs & ATTR_COMPRESSION_MASK) == 0
        sel = np.flatnonzero(plain)
        if len(sel):
            idx = v2[sel]
            st = np.empty(len(sel), np.int64)
            wh = np.zeros(len(sel), np.int64)
            md = np.empty(len(sel), np.int64)
            columnar.kernels.verify_records(buf, positions[idx] + _V2_HEADER, ends[idx], counts[sel], lod[sel], st, wh, md)
            base_ts = hdr["baseTimestamp"][sel].astype(np.int64)
            hdr_max = hdr["maxTimestamp"][sel].astype(np.int64)
            lat = (attrs[sel] & ATTR_TIMESTAMP_TYPE) != 0
            has = (counts[sel] > 0) & (st == 0)
            with np.errstate(over="ignore"):
                rec_max = np.where(lat, hdr_max, base_ts + md)  # int64 wrap as Java's long
            max_ts[idx] = np.where(has, rec_max, hdr_max)
            for k in np.flatnonzero(st != 0).tolist():
                i = idx[k]
                sink(ERROR, "record-invalid", path, wh[k], base[i], _WALK_MESSAGES.get(int(st[k]), "invalid record"))
        # compressed v2 batches: decompress and walk
        for k in np.flatnonzero(~plain).tolist():
            i = int(v2[k])
            p, e = int(positions[i]), int(ends[i])
            batch = RecordBatch(bytes(mv[p:e]), p, path)
            if batch.count == 0:
                max_ts[i] = batch.max_timestamp
                continue
            try:
                cols = decode_columns(batch)
                if len(cols.offsets) and (np.any(np.diff(cols.offsets) <= 0) or cols.offsets[-1] > batch.last_offset or cols.offsets[0] < batch.base_offset):
                    sink(ERROR, "record-invalid", path, p, batch.base_offset, "record offsets are not strictly increasing within the batch's offset range")
                max_ts[i] = int(cols.timestamps.max()) if len(cols.offsets) else batch.max_timestamp
            except KafkaLogError as err:
                sink(ERROR, "record-invalid", path, err.position if err.position is not None else p, batch.base_offset, err.message)
        # control batches: transaction markers; transactional data: open transactions
        txn = np.flatnonzero((attrs & (ATTR_TRANSACTIONAL | ATTR_CONTROL)) != 0)
        aborts: list[_Abort] = []
        pids = hdr["producerId"]
        for k in txn.tolist():
            i = int(v2[k])
            pid = int(pids[k])
            if attrs[k] & ATTR_CONTROL:
                if not attrs[k] & ATTR_TRANSACTIONAL:
                    continue  # KRaft control records (leader change, snapshot header/footer, ...)
                p, e = int(positions[i]), int(ends[i])
                try:
                    recs = RecordBatch(bytes(mv[p:e]), p, path).records()
                    for r in recs:
                        ctype, _tid = control_type_of(r.key)
                        if ctype is ControlType.ABORT:
                            aborts.append(_Abort(pid, r.offset, p, open_txns.get(pid)))
                except KafkaLogError as err:
                    sink(ERROR, "control-invalid", path, p, int(base[i]), err.message)
                open_txns.pop(pid, None)
            else:
                open_txns.setdefault(pid, int(base[i]))

        # magic 0/1 entries and unknown magics
        for i in np.flatnonzero(magic != 2).tolist():
            p, e = int(positions[i]), int(ends[i])
            if magic[i] > 2 or magic[i] < 0:
                sink(ERROR, "batch-magic", path, p, None, f"unknown magic {magic[i]}")
                valid[i] = False
                continue
            _check_legacy(path, bytes(mv[p:e]), p, sink, base, last, max_ts, valid, i)
    finally:
        mv.release()

    # offsets: strictly increasing across batches; the first batch not below the segment's base
    ok = np.flatnonzero(valid)
    if len(ok) > 1:
        bo, lo = base[ok], last[ok]
        for j in np.flatnonzero(bo[1:] <= lo[:-1]).tolist():
            i = ok[j + 1]
            sink(ERROR, "offsets-not-increasing", path, positions[i], base[i],
                 f"batch base offset {base[i]} is not greater than the previous batch's last offset {lo[j]}")
    if segment_base is not None and len(ok):
        head = ok[0]
        if first and base[head] < segment_base:
            sink(ERROR, "segment-base-offset", path, positions[head], base[head],
                 f"first batch's base offset {base[head]} is below the segment's base offset {segment_base}")
        over = ok[last[ok] - segment_base > _INT32_MAX]
        for i in over[:1].tolist():
            sink(ERROR, "offset-overflow", path, positions[i], last[i], f"offset {last[i]} cannot be stored relative to the base offset {segment_base}")
    if status == 1:
        known_last = int(last[ok[-1]]) if len(ok) else prev_last
        _check_tail_entry(path, buf, stop, size, remaining - stop, sink, closed, segment_base, known_last, max_message_bytes, origin)
    del buf
    return _Scan(path, size, positions[ok], base[ok], last[ok], max_ts[ok], aborts)


def _check_tail_entry(
    path: str, buf: np.ndarray, stop: int, end: int, length: int, sink: _Sink, closed: str | None,
    segment_base: int | None, prev_last: int | None, max_message_bytes: int, origin: int = 0,
) -> None:
    """Report the bytes from ``stop`` that do not frame a whole entry (R-LOG-05, R-VFY-02): a
    torn tail (a warning) only in a segment that may be being written (``closed`` None) and when
    they can be the start of a batch a broker was writing; otherwise an error."""
    problem = _torn_tail_problem(buf, stop, end, segment_base, prev_last, max_message_bytes, origin)
    if problem is not None:
        code, why = problem
        sink(ERROR, code, path, stop, None, f"the {length} bytes at the end cannot be a batch being written (a torn tail): {why}")
    elif closed is not None:
        sink(ERROR, "truncated-batch", path, stop, None, f"{length} bytes at the end do not form a whole batch ({closed})")
    else:
        sink(WARNING, "truncated-batch", path, stop, None,
             f"{length} bytes at the end do not form a whole batch (a torn tail: normal at the end of the active segment "
             "after an unclean shutdown; recovery truncates it)")


def _torn_tail_problem(
    buf: np.ndarray, p: int, end: int, segment_base: int | None, prev_last: int | None, max_message_bytes: int,
    origin: int = 0,
) -> tuple[str, str] | None:
    """Why the entry starting at ``p`` and running past ``end`` cannot be a batch cut while being
    written, as (code, reason), or None when it can. A broker writes a whole batch header (offset,
    size, then the rest) before its records, so each field present must hold what it would write:
    an offset after the previous batch's and within the segment's range, a size Kafka would accept
    (max.message.bytes), a known magic and codec; and no whole, CRC-valid entry may start inside
    the claimed length (then the length field itself is corrupt)."""
    n = end - p
    if n >= 8:
        offset = int(buf[p : p + 8].view(">i8")[0])
        if segment_base is not None and not 0 <= offset - segment_base <= _INT32_MAX:
            return "segment-base-offset", f"offset {offset} is outside segment {segment_base}'s range"
        if prev_last is not None and offset <= prev_last:
            return "offsets-not-increasing", f"offset {offset} is not greater than the previous batch's last offset {prev_last}"
    if n >= 12:
        size = _be32(buf, p + 8)
        if size + 12 > max_message_bytes:
            return "batch-size", f"size {size} is larger than max.message.bytes ({max_message_bytes}) allows"
    if n >= 17:
        magic = int(buf[p + 16])
        if magic > 2:
            return "batch-magic", f"unknown magic {magic}"
        if size < _MIN_SIZE_BY_MAGIC[magic]:
            return "batch-size", f"size {size} is smaller than the least magic {magic} entry ({_MIN_SIZE_BY_MAGIC[magic]})"
        codec_at = p + 22 if magic == 2 else p + 17  # the low byte of the attributes
        if n > codec_at - p and int(buf[codec_at]) & 7 > _MAX_CODEC:
            return "batch-attributes", f"unknown compression codec {int(buf[codec_at]) & 7}"
        if magic == 2 and n >= 27 and _be32(buf, p + 23) < 0:
            return "batch-attributes", f"negative lastOffsetDelta {_be32(buf, p + 23)}"
    inner = _whole_entry_inside(buf, p, end)
    if inner is not None:
        return "batch-length-past-end", f"its size runs past the end of the file, yet a whole entry with a valid CRC starts at position {origin + inner} inside it (the size field is corrupt)"
    return None


def _whole_entry_inside(buf: np.ndarray, p: int, end: int) -> int | None:
    """The position of the first whole entry with a valid CRC inside ``buf[p:end]`` after the
    least entry at ``p``, or None (the bytes are at most max.message.bytes: checked before)."""
    t = buf[p:end].astype(np.int64)
    q = np.arange(12 + _MIN_ENTRY_SIZE, len(t) - 12 - _MIN_ENTRY_SIZE + 1, dtype=np.int64)
    q = q[t[q + 16] <= 2]
    sizes = (t[q + 8] << 24) | (t[q + 9] << 16) | (t[q + 10] << 8) | t[q + 11]  # unsigned: negatives become huge
    fits = (sizes >= _MIN_ENTRY_SIZE) & (q + 12 + sizes <= len(t))
    raw = buf[p:end]
    for at, sz in zip(q[fits].tolist(), sizes[fits].tolist(), strict=True):
        if t[at + 16] == 2:
            ok = sz >= _MIN_SIZE_BY_MAGIC[2] and crc32c(raw[at + 21 : at + 12 + sz].tobytes()) == int(raw[at + 17 : at + 21].view(">u4")[0])
        else:
            ok = crc32(raw[at + 16 : at + 12 + sz].tobytes()) == int(raw[at + 12 : at + 16].view(">u4")[0])
        if ok:
            return p + at
    return None


def _gather_headers(buf: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The 61-byte v2 headers at ``starts``, as a structured array (one numpy gather per chunk)."""
    out = np.empty(len(starts), _V2_DTYPE)
    raw = out.view(np.uint8).reshape(len(starts), _V2_HEADER)
    step = 1 << 18
    cols = np.arange(_V2_HEADER)
    for s in range(0, len(starts), step):
        raw[s : s + step] = buf[starts[s : s + step, None] + cols]
    return out


def _check_legacy(path: str, data: bytes, p: int, sink: _Sink, base: np.ndarray, last: np.ndarray, max_ts: np.ndarray, valid: np.ndarray, i: int) -> None:
    """A magic 0/1 entry: its CRC-32, and for a wrapper its inner messages' CRCs and offsets."""
    try:
        batch = LegacyBatch(data, p, path)
    except KafkaLogError as err:
        sink(ERROR, "record-invalid", path, err.position if err.position is not None else p, None, err.message)
        valid[i] = False
        return
    if (crc_err := batch.crc_error()) is not None:
        sink(ERROR, "batch-crc", path, p, batch.last_offset, crc_err.message)
    last[i] = batch.last_offset
    try:
        recs = batch.records()
    except KafkaLogError as err:
        sink(ERROR, "record-invalid", path, p, batch.last_offset, err.message)
        base[i] = batch.last_offset
        return
    base[i] = recs[0].offset
    ts = [r.timestamp for r in recs]
    max_ts[i] = max(ts)
    if batch.compression.value != 0:
        for inner in batch.inner_crc_errors():
            sink(ERROR, "inner-crc", path, p, inner.offset, inner.message)
        offs = [r.offset for r in recs]
        if any(b <= a for a, b in zip(offs, offs[1:], strict=False)) or offs[-1] != batch.last_offset:
            sink(ERROR, "offsets-not-increasing", path, p, batch.last_offset,
                 f"inner offsets {offs[0]}..{offs[-1]} are not strictly increasing up to the wrapper offset {batch.last_offset}")


# ----------------------------------------------------------------------------------- indexes
def _read_raw(path: str) -> np.ndarray:
    return np.fromfile(path, dtype=np.uint8)


def _check_tail(raw: np.ndarray, used_bytes: int, whole: int, path: str, code: str, sink: _Sink, is_last: bool) -> None:
    """Slots after the used entries must be zero (a preallocated tail, R-IDX-12)."""
    tail = raw[used_bytes:whole]
    if not len(tail):
        return
    nz = np.flatnonzero(tail)
    if len(nz):
        sink(ERROR, code, path, used_bytes + int(nz[0]), None, "non-zero bytes after the first empty slot (entries must be contiguous from slot 0)")
    elif not is_last:
        sink(WARNING, "index-untrimmed", path, used_bytes, None,
             f"{len(tail)} zero-filled bytes after the entries of a segment that is not the active one (not trimmed at roll)")


def _read_index(
    path: str, raw: np.ndarray | None, kind: type[OffsetIndex | TimeIndex], code: str, what: str, sink: _Sink, is_last: bool
) -> tuple[Any, np.ndarray]:
    """Read an ``.index`` or ``.timeindex`` (findings ``{code}-size``, ``-tail``, ``-range``: a partial
    last entry, bytes after the entries, a negative relative offset); (the index, each entry's byte position)."""
    raw = _read_raw(path) if raw is None else raw
    base = base_offset_of(path)
    entry = (OFFSET_INDEX_DTYPE if kind is OffsetIndex else TIME_INDEX_DTYPE).itemsize
    whole = len(raw) - len(raw) % entry
    if len(raw) % entry:
        sink(ERROR, f"{code}-size", path, whole, None, f"{what} is corrupt: {len(raw)} bytes is not a multiple of {entry}")
    idx = kind.read(path, data=raw[:whole].tobytes(), base_offset=base)
    n = len(idx)
    _check_tail(raw, n * entry, whole, path, f"{code}-tail", sink, is_last)
    at = np.arange(n, dtype=np.int64) * entry
    offs = idx.offsets
    for k in np.flatnonzero(offs - base < 0).tolist():
        sink(ERROR, f"{code}-range", path, at[k], offs[k], f"relative offset {offs[k] - base} is negative")
    return idx, at


def _check_offset_index(path: str, scan: _Scan | None, sink: _Sink, is_last: bool, raw: np.ndarray | None = None) -> None:
    idx, at = _read_index(path, raw, OffsetIndex, "index", "index", sink, is_last)
    n = len(idx)
    if not n:
        return
    offs, poss = idx.offsets, idx.positions
    for k in np.flatnonzero(np.diff(offs) <= 0).tolist():
        sink(ERROR, "index-order", path, at[k + 1], offs[k + 1], f"offset {offs[k + 1]} is not greater than the previous entry's {offs[k]}")
    for k in np.flatnonzero(np.diff(poss) <= 0).tolist():
        sink(ERROR, "index-order", path, at[k + 1], offs[k + 1], f"position {poss[k + 1]} is not greater than the previous entry's {poss[k]}")
    if scan is None:
        return
    bpos, blast, bbase = scan.positions, scan.last_offsets, scan.base_offsets
    k_at = np.searchsorted(bpos, poss)
    is_start = (k_at < len(bpos)) & (bpos[np.minimum(k_at, len(bpos) - 1)] == poss) if len(bpos) else np.zeros(n, bool)
    log_name = os.path.basename(scan.path)
    sorted_last = len(blast) < 2 or bool(np.all(np.diff(blast) > 0))
    exact = is_start & (blast[np.minimum(k_at, max(len(blast) - 1, 0))] == offs) if len(blast) else is_start
    # past the whole batches: at or after the end of the file, or naming offsets the log no longer holds
    past = (poss >= scan.size) | (offs > scan.last_offset) if scan.last_offset is not None else poss >= scan.size
    _past_end(path, sink, at, offs, past, f"point past the end of {log_name} ({scan.size} bytes, whole batches up to offset "
              f"{scan.last_offset})", f"position {int(poss[np.argmax(past)])}")
    for j in np.flatnonzero(~exact & ~past).tolist():  # the usual entry is checked above, in bulk
        off, pos = int(offs[j]), int(poss[j])
        if not is_start[j]:
            sink(ERROR, "index-position", path, at[j], off, f"position {pos} does not start a batch in {log_name}")
            continue
        k = int(k_at[j])
        lo = int(blast[k])
        if k > 0 and int(blast[k - 1]) >= off:
            sink(ERROR, "index-offset", path, at[j], off,
                 f"the batch before position {pos} already ends at offset {int(blast[k - 1])}: lookups of offset {off} would miss it")
            continue
        if off > int(blast[-1]):
            sink(ERROR, "index-offset", path, at[j], off, f"offset {off} is past the last offset {int(blast[-1])} of {log_name}")
            continue
        found = int(np.searchsorted(blast, off)) if sorted_last else -1
        # the offset lies in the batch at the position or in a later one, and no earlier batch
        # reaches it: a lookup scans forward from the position and finds it. Kafka writes such
        # entries for appends of several batches (followers, v0/v1 producers) and for cleaned
        # batches, whose entry names the largest record kept, not the batch's preserved last offset.
        lookups_work = found >= k and found < len(blast) and int(bbase[found]) <= off
        sev = WARNING if lookups_work else ERROR
        sink(sev, "index-offset-mismatch", path, at[j], off,
             f"the batch at position {pos} ends at offset {lo}, not {off}" + (" (an append of several batches or a cleaned batch; lookups stay correct)" if lookups_work else ""))


def _past_end(path: str, sink: _Sink, at: np.ndarray, offs: np.ndarray, past: np.ndarray, what: str, first: str) -> None:
    """One finding for all the entries of an index file that lie past the end of its ``.log``
    (``past``): a log cut short or truncated after they were written (each one would only repeat
    the data loss), with their count and the first one's slot position, offset and ``first``."""
    n = int(np.count_nonzero(past))
    if not n:
        return
    j = int(np.argmax(past))
    sink(ERROR, "index-past-end", path, at[j], offs[j],
         f"{n} entr{'y' if n == 1 else 'ies'} from offset {int(offs[j])} ({first}) on {what}: the log ends before "
         "what they index (cut short, or truncated after they were written); recovery rebuilds the index")


def _check_time_index(path: str, scan: _Scan | None, sink: _Sink, is_last: bool, raw: np.ndarray | None = None) -> None:
    idx, at = _read_index(path, raw, TimeIndex, "timeindex", "time index", sink, is_last)
    n = len(idx)
    if not n:
        return
    tss, offs = idx.timestamps, idx.offsets
    for k in np.flatnonzero(np.diff(tss) <= 0).tolist():
        sink(ERROR, "timeindex-order", path, at[k + 1], offs[k + 1],
             f"timestamp {tss[k + 1]} is not greater than the previous entry's {tss[k]}")
    for k in np.flatnonzero(np.diff(offs) < 0).tolist():
        sink(ERROR, "timeindex-order", path, at[k + 1], offs[k + 1], f"offset {offs[k + 1]} is less than the previous entry's {offs[k]}")
    if scan is None:
        return
    blast, bbase = scan.last_offsets, scan.base_offsets
    if len(blast) >= 2 and not np.all(np.diff(blast) > 0):
        lookup = {int(v): i for i, v in enumerate(blast.tolist())}
        ks = np.array([lookup.get(int(o), -1) for o in offs.tolist()], np.int64)
    else:
        ks = np.searchsorted(blast, offs)  # the first batch ending at or after the offset
        kc = np.minimum(ks, max(len(blast) - 1, 0))
        hit = (ks < len(blast)) & (bbase[kc] <= offs) if len(blast) else np.zeros(n, bool)
        ks = np.where(hit, ks, -1)
    log_name = os.path.basename(scan.path)
    kc = np.maximum(ks, 0)
    fine = (ks >= 0) & (blast[kc] == offs) & (scan.max_ts[kc] == tss) if len(blast) else np.zeros(n, bool)
    end = scan.last_offset if scan.last_offset is not None else base_offset_of(path) - 1
    past = offs > end
    _past_end(path, sink, at, offs, past, f"name offsets past the last offset {end} of {log_name}",
              f"timestamp {int(tss[np.argmax(past)])}")
    for j in np.flatnonzero(~fine & ~past).tolist():  # the usual entry is checked above, in bulk
        off, ts, k = int(offs[j]), int(tss[j]), int(ks[j])
        if k < 0:
            sink(ERROR, "timeindex-offset", path, at[j], off, f"the indexed offset {off} is in no batch of {log_name}")
            continue
        if int(blast[k]) != off:
            sink(NOTE, "timeindex-offset-mismatch", path, at[j], off,
                 f"the indexed offset {off} is inside the batch ending at {int(blast[k])}, not its last offset "
                 "(brokers before 3.8 indexed the record holding the largest timestamp)")
        got = int(scan.max_ts[k])
        if got != ts:
            sink(ERROR, "timeindex-not-max", path, at[j], off,
                 f"indexed timestamp {ts} is not the largest timestamp {got} of the batch holding offset {off}")


def _check_txn_index(path: str | None, log_path: str, seg_base: int, scan: _Scan | None, sink: _Sink, raw: np.ndarray | None = None) -> None:
    """``.txnindex`` entries against the segment's ABORT markers (``path`` None: the file is absent)."""
    entries: list[tuple[int, int, int, int, int, int]] = []  # (position, version, pid, first, last, lso)
    if path is not None:
        data = (_read_raw(path) if raw is None else raw).tobytes()
        size = ABORTED_TXN.size
        if len(data) % size:
            sink(ERROR, "txnindex-size", path, len(data) - len(data) % size, None,
                 f"transaction index has a partial entry: {len(data)} bytes is not a multiple of {size}")
        prev = None
        for pos in range(0, len(data) - len(data) % size, size):
            e = (pos, *ABORTED_TXN.unpack_from(data, pos))
            _pos, version, pid, first, last, _lso = e
            if version != CURRENT_VERSION:
                sink(ERROR, "txnindex-version", path, pos, last, f"unexpected aborted transaction version {version}")
            if last < seg_base:
                sink(ERROR, "txnindex-range", path, pos, last, f"last offset {last} is below the segment's base offset {seg_base}")
            if first > last:
                sink(ERROR, "txnindex-range", path, pos, last, f"first offset {first} is after the last offset {last}")
            if prev is not None and last <= prev:
                sink(ERROR, "txnindex-order", path, pos, last, f"last offset {last} is not greater than the previous entry's {prev}")
            prev = last
            entries.append(e)
    if scan is None:
        return
    by_key = {(e[2], e[4]): e for e in entries}
    matched = set()
    name = os.path.basename(path) if path else f"{os.path.basename(log_path).rsplit('.', 1)[0]}.txnindex (absent)"
    for a in scan.aborts:
        e = by_key.get((a.producer_id, a.offset))
        if e is None:
            sink(ERROR, "txnindex-missing-abort", log_path, a.position, a.offset,
                 f"ABORT marker of producer {a.producer_id} has no entry in {name}")
            continue
        matched.add((a.producer_id, a.offset))
        if a.first_offset is not None and e[3] != a.first_offset:
            sink(ERROR, "txnindex-first-offset", path or log_path, e[0], a.offset,
                 f"entry's first offset {e[3]} differs from the transaction's first offset {a.first_offset}")
    for e in entries:
        if (e[2], e[4]) not in matched:
            sink(WARNING, "txnindex-extra", path or log_path, e[0], e[4],
                 f"no ABORT marker of producer {e[2]} at offset {e[4]} in {os.path.basename(log_path)} (kept after compaction, or stale)")


def _check_snapshot(path: str, sink: _Sink) -> None:
    try:
        read_producer_snapshot(path)
    except CorruptIndexError as err:
        code = "snapshot-crc" if err.position == 2 else "snapshot-structure"
        sink(ERROR, code, path, err.position, None, err.message)


def _check_text(path: str, name: str, sink: _Sink) -> None:
    try:
        if name == "leader-epoch-checkpoint":
            read_leader_epoch_checkpoint(path)
        elif name == "partition.metadata":
            read_partition_metadata(path)
        elif name == "meta.properties":
            read_meta_properties(path)
        else:
            read_offset_checkpoint(path)
    except KafkaLogError as err:
        sink(ERROR, "checkpoint", path, err.position, err.offset, err.message)


# ------------------------------------------------------------------------------------ driver
def _is_text_state(name: str) -> bool:
    return name in ("leader-epoch-checkpoint", "partition.metadata", "meta.properties") or name in _OFFSET_CHECKPOINTS


@dataclass
class _Segments:
    """A range of a directory's segments checked by a worker process (``verify -j``): the findings
    of their logs, the files ticked, their scans, the index files read before them, and the open
    transactions as the range leaves them."""

    report: VerifyReport
    ticked: list[str]
    scans: dict[int, _Scan | None]
    prefetched: dict[str, np.ndarray]
    txns: _OpenTxns


class _Dir:
    """One directory: its segments (all of them, for context) and the files asked for; ``scanned``:
    its segments checked by worker processes, in order (then every ``.log`` of the directory)."""

    def __init__(
        self, directory: str, targets: set[str], report: VerifyReport, progress: Callable[[str], None] | None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, scanned: list[_Segments] | None = None,
    ) -> None:
        self.dir = directory
        self.max_message_bytes = max_message_bytes
        #: the broker shut down cleanly after its last write to this log dir: no segment may end torn
        self.clean_shutdown = os.path.exists(os.path.join(os.path.dirname(os.path.abspath(directory)), CLEAN_SHUTDOWN_FILE))
        self.targets = targets
        self.report = report
        self.progress = progress
        try:
            names = sorted(os.listdir(directory))
        except OSError:
            names = [os.path.basename(t) for t in targets]
        self.logs: dict[int, str] = {}
        for n in names:
            if kind_of(n) is FileKind.LOG:
                self.logs[base_offset_of(n)] = os.path.join(directory, n)
        self.last_base = max(self.logs) if self.logs else None
        self.scans: dict[int, _Scan | None] = {}
        self.open_txns: dict[int, int] = {}
        #: index files read just before their segment's log (see _prefetch)
        self.prefetched: dict[str, np.ndarray] = {}
        self.scanned = scanned or []

    def _closed(self, base: int) -> str | None:
        """Why segment ``base`` cannot end in a torn tail, or None when it may (the active segment)."""
        if base != self.last_base:
            return "in a segment that is not the last: a broker only writes to the active segment"
        if self.clean_shutdown:
            return f"the log dir holds {CLEAN_SHUTDOWN_FILE}: the broker closed every segment cleanly"
        return None

    def _prefetch(self, base: int) -> None:
        """Read the segment's index files before its log: a writer appends to the log before it
        indexes, so entries read first always point at data the log read after holds (a live
        broker's active segment verifies clean)."""
        stem = os.path.join(self.dir, f"{base:020d}")
        for suffix in (".index", ".timeindex", ".txnindex"):
            path = stem + suffix
            if path in self.targets:
                with contextlib.suppress(OSError):
                    self.prefetched[path] = _read_raw(path)

    def _guard(self, path: str, fn: Callable[[], object]) -> object:
        try:
            return fn()
        except KafkaLogError as err:
            self.report.add(ERROR, "unreadable-data", err.file or path, err.position, err.offset, err.message)
        except FileNotFoundError as err:
            if os.path.exists(path):
                self.report.add(ERROR, "unreadable", path, None, None, err.strerror or str(err))
            else:  # R-LIVE-03: listed, then renamed away by a writer (retention, a cleaner swap, an empty segment replaced)
                self.report.add(WARNING, "gone", path, None, None, "listed, then renamed or deleted by a writer while it was verified")
        except OSError as err:
            self.report.add(ERROR, "unreadable", path, None, None, err.strerror or str(err))
        except Exception as err:  # noqa: BLE001 - a validator reports, it never crashes on its input
            self.report.add(ERROR, "verify-failed", path, None, None, f"could not be checked: {type(err).__name__}: {err}")
        return None

    def _scan(self, base: int) -> _Scan | None:
        """The scan of segment ``base``'s log (segments are scanned in order, once, so that
        transaction state flows across them; logs that are not targets report nothing)."""
        if base in self.scans:
            return self.scans[base]
        for b in sorted(self.logs):
            if b > base:
                break
            if b not in self.scans:
                self._scan_one(b, self.open_txns)
        return self.scans.get(base)

    def _scan_one(self, b: int, open_txns: dict[int, int] | _OpenTxns) -> None:
        """Scan segment ``b``'s log, its index files read first; findings only for a target."""
        path = self.logs[b]
        sink = _Sink(self.report if path in self.targets else None)
        if path in self.targets:
            self._tick(path)
        self._prefetch(b)
        self.scans[b] = self._guard(path, lambda: _scan_log(  # type: ignore[assignment]
            path, sink, open_txns, closed=self._closed(b), segment_base=b, max_message_bytes=self.max_message_bytes))

    def _take(self, ranges: list[_Segments]) -> None:
        """What worker processes found in the directory's segments, taken in segment order as one
        process checks them: each range's transactions continue those the ranges before it left open."""
        for r in ranges:
            for path in r.ticked if self.progress is not None else ():
                self.progress(path)
            _merge(self.report, r.report)
            for scan in r.scans.values():
                for a in scan.aborts if scan is not None else ():
                    a.first_offset = r.txns.resolve(a.first_offset, self.open_txns)
            r.txns.apply(self.open_txns)
            self.scans.update(r.scans)
            self.prefetched.update(r.prefetched)

    def _tick(self, path: str) -> None:
        self.report.files += 1
        with contextlib.suppress(OSError):
            self.report.bytes += os.path.getsize(path)
        if self.progress is not None:
            self.progress(path)

    def run(self) -> None:
        sink = _Sink(self.report)
        tp = parse_topic_partition(self.dir) if self.logs else None
        if tp is not None and (problem := topic_name_problem(tp[0])) is not None:
            self.report.add(WARNING, "topic-name", self.dir, None, None, problem)  # R-NAME-03
        self._take(self.scanned)
        for base in sorted(self.logs):
            if self.logs[base] in self.targets:
                self._scan(base)
        self._cross_segment()
        for path in sorted(self.targets):
            name = os.path.basename(path)
            kind = kind_of(name)
            if kind is FileKind.LOG:
                continue
            if kind in (FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX):
                self._tick(path)
                base = base_offset_of(name)
                log_path = self.logs.get(base)
                scan = self._scan(base) if log_path else None
                is_last = base == self.last_base or self.last_base is None
                raw = self.prefetched.get(path)
                if kind is FileKind.INDEX:
                    self._guard(path, lambda p=path, s=scan, il=is_last, r=raw: _check_offset_index(p, s, sink, il, r))  # type: ignore[misc]
                elif kind is FileKind.TIME_INDEX:
                    self._guard(path, lambda p=path, s=scan, il=is_last, r=raw: _check_time_index(p, s, sink, il, r))  # type: ignore[misc]
                else:
                    self._guard(path, lambda p=path, s=scan, lp=log_path or path, b=base, r=raw: _check_txn_index(p, lp, b, s, sink, r))  # type: ignore[misc]
                if log_path is None:
                    self.report.add(WARNING, "log-missing", path, None, None, f"no {name.split('.', 1)[0]}.log beside this file: entries not checked against a log")
            elif kind is FileKind.PRODUCER_SNAPSHOT:
                self._tick(path)
                self._guard(path, lambda p=path: _check_snapshot(p, sink))  # type: ignore[misc]
            elif kind is FileKind.KRAFT_SNAPSHOT or name == "bootstrap.checkpoint":
                self._tick(path)
                self._guard(path, lambda p=path: _scan_log(p, sink, {}, closed="a snapshot is written whole", segment_base=None,  # type: ignore[misc]
                                                           max_message_bytes=self.max_message_bytes))
            elif _is_text_state(name):
                self._tick(path)
                self._guard(path, lambda p=path, nm=name: _check_text(p, nm, sink))  # type: ignore[misc]
        # ABORT markers of target logs whose segment has no .txnindex at all (a broker's segment has
        # an .index and a .timeindex, if empty; a lone .log written by other means is not checked)
        for base, path in sorted(self.logs.items()):
            stem = os.path.join(self.dir, f"{base:020d}")
            broker_segment = os.path.exists(stem + ".index") or os.path.exists(stem + ".timeindex")
            if path in self.targets and broker_segment and not os.path.exists(stem + ".txnindex"):
                scan = self.scans.get(base)
                if scan is not None and scan.aborts:
                    _check_txn_index(None, path, base, scan, sink)

    def _cross_segment(self) -> None:
        """Offsets keep increasing from one segment to the next (both logs verified)."""
        prev: tuple[int, _Scan] | None = None
        for base in sorted(self.logs):
            scan = self.scans.get(base)
            if scan is None or self.logs[base] not in self.targets:
                prev = None
                continue
            if prev is not None:
                pbase, pscan = prev
                plast = pscan.last_offset
                if plast is not None and base <= plast:
                    self.report.add(ERROR, "offsets-not-increasing", scan.path, 0, base,
                                    f"segment base offset {base} is not greater than the last offset {plast} of {os.path.basename(pscan.path)}")
                elif plast is not None and len(scan.base_offsets) and scan.base_offsets[0] <= plast:
                    self.report.add(ERROR, "offsets-not-increasing", scan.path, int(scan.positions[0]), int(scan.base_offsets[0]),
                                    f"first batch's base offset is not greater than the last offset {plast} of {os.path.basename(pscan.path)}")
            if scan.last_offset is not None:
                prev = (base, scan)


def verify(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    progress: Callable[[str], None] | None = None,
    total: Callable[[int], None] | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    jobs: int = 1,
) -> VerifyReport:
    """Check data dirs, partition dirs or single files and report every finding (never raises for bad data).

    A single index, time index or transaction index is checked against the ``.log`` beside it;
    ``total`` is called once with the number of files to check, then ``progress`` with each file's
    path as it is checked. A trailing entry larger than ``max.message.bytes`` (``max_message_bytes``,
    Kafka's default unless given) is corruption, not a torn tail. Findings come sorted by file and
    position.

    ``jobs`` above 1 checks directories in that many worker processes (when there are
    :data:`~kafkalog.tools.jobs.MIN_PARALLEL_BYTES` to read): the same report, the same findings in
    the same order. A directory larger than a task's share (:func:`~kafkalog.tools.jobs.share`) and
    of several segments has its logs checked by several processes, a range of segments each, and
    the rest in this one, which carries the open transactions from each range to the next
    (:class:`_OpenTxns`) and checks the indexes against the logs' scans."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    report = VerifyReport()
    groups: dict[str, set[str]] = {}
    walked: set[str] = set()
    for p in paths:
        p = os.fspath(p)
        if os.path.isdir(p):
            for path, _rel in walk(p):
                groups.setdefault(os.path.dirname(path), set()).add(path)
                walked.add(os.path.dirname(path))
        elif os.path.isfile(p):
            groups.setdefault(os.path.dirname(p) or ".", set()).add(p if os.path.dirname(p) else os.path.join(".", p))
        else:
            report.add(ERROR, "unreadable", p, None, None, "no such file or directory")
    if total is not None:
        total(sum(1 for targets in groups.values() for t in targets if _checked(os.path.basename(t))))
    dirs = sorted(groups)
    sizes = [_target_bytes(groups[d]) for d in dirs] if jobs > 1 and dirs else None
    if sizes is not None and sum(sizes) >= _jobs.MIN_PARALLEL_BYTES:  # read when called, as export does, so that it can be set
        _verify_parallel(dirs, sizes, groups, walked, report, progress, max_message_bytes, jobs)
    else:
        for d in dirs:
            _verify_dir(d, groups[d], d in walked, report, progress, max_message_bytes)
    _replica_divergence([os.fspath(p) for p in paths if os.path.isdir(p)], report)
    report.sort()
    return report


def _target_bytes(targets: set[str]) -> int:
    """The bytes of the files a directory's check reads."""
    size = 0
    for t in targets:
        with contextlib.suppress(OSError):
            size += os.path.getsize(t)
    return size


def _verify_parallel(dirs: list[str], sizes: list[int], groups: dict[str, set[str]], walked: set[str], report: VerifyReport,
                     progress: Callable[[str], None] | None, max_message_bytes: int, jobs: int) -> None:
    """:func:`verify`'s directories checked by ``jobs`` worker processes, in runs of small ones and,
    for a large one, ranges of its segments (see :func:`verify`); results taken in order."""
    target = share(sizes, jobs)
    tasks: list[tuple[Any, ...]] = []
    first: dict[str, tuple[list[tuple[str, int, int, int]], VerifyReport, set[str]]] = {}
    for run in runs(dirs, sizes, jobs, target):
        d = run[0]
        logs = _segment_sizes(d) if len(run) == 1 and d in walked and _target_bytes(groups[d]) > target else []
        if len(logs) > 1:
            first[d] = _first_look(d, True)  # what the indexes and checkpoints claim, read before the workers read the logs
            for bases in runs(list(logs), list(logs.values()), jobs, target):
                tasks.append(("segments", d, groups[d], bases, max_message_bytes))
        else:
            tasks.append(("dirs", [(x, groups[x], x in walked, max_message_bytes) for x in run]))

    def name(i: int) -> str:
        t = tasks[i]
        return span([x[0] for x in t[1]]) if t[0] == "dirs" else f"{t[1]} (segments {t[3][0]} to {t[3][-1]})"

    results = ordered_map(_verify_task, tasks, jobs, names=name, preload=["kafkalog.tools.validate"])
    k = 0
    while k < len(tasks):
        t = tasks[k]
        if t[0] == "dirs":
            part, ticked = next(results)
            for path in ticked if progress is not None else ():
                progress(path)
            _merge(report, part)
            k += 1
            continue
        d = t[1]
        n = sum(1 for u in tasks[k:] if u[0] == "segments" and u[1] == d)
        _verify_dir(d, groups[d], True, report, progress, max_message_bytes, first=first[d], scanned=[next(results) for _ in range(n)])
        k += n


def _segment_sizes(d: str) -> dict[int, int]:
    """The directory's ``.log`` files: base offset -> size, in offset order."""
    out = {}
    for name, _inode, size, _mtime in _listing(d):
        if kind_of(name) is FileKind.LOG:
            out[base_offset_of(name)] = size
    return dict(sorted(out.items()))


def _verify_task(task: tuple[Any, ...]) -> tuple[VerifyReport, list[str]] | _Segments:
    """One task of :func:`_verify_parallel` in a worker process: ``("dirs", [(dir, targets, walked,
    max_message_bytes), ...])``, their report and the files ticked (for the parent's progress
    line); or ``("segments", dir, targets, bases, max_message_bytes)``, what :class:`_Segments` holds."""
    report = VerifyReport()
    ticked: list[str] = []
    if task[0] == "dirs":
        for d, targets, walked, max_message_bytes in task[1]:
            _verify_dir(d, targets, walked, report, ticked.append, max_message_bytes)
        return report, ticked
    _, d, targets, bases, max_message_bytes = task
    one = _Dir(d, targets, report, ticked.append, max_message_bytes)
    txns = _OpenTxns()
    for b in bases:
        if b in one.logs:  # else renamed away since it was listed: the directory is found changed and checked again
            one._scan_one(b, txns)
    return _Segments(report, ticked, one.scans, one.prefetched, txns)


def _merge(report: VerifyReport, part: VerifyReport) -> None:
    """Add a directory's report to the run's."""
    report.findings.extend(part.findings)
    report.files += part.files
    report.bytes += part.bytes


def _replica_divergence(dirs: list[str], report: VerifyReport) -> None:
    """Report copies of one topic-partition (replicas under several brokers' data dirs, found at
    any depth under ``dirs``) that hold different records at the same offsets (SPEC §6.9): an error,
    since a reader would have to choose one history."""
    from kafkalog.log.replicas import divergences
    from kafkalog.log.source import PartitionFiles, find_partitions

    copies: dict[tuple[str, int], dict[str, PartitionFiles]] = {}
    for d in dirs:
        try:
            found = find_partitions(d)
        except (KafkaLogError, OSError):
            continue  # no partition (LogNotFoundError), or one the file checks already report
        for pf in found:
            copies.setdefault((pf.topic, pf.partition), {}).setdefault(os.path.abspath(pf.dir), pf)
    for group in copies.values():
        if len(group) < 2:
            continue
        try:
            found_divergences = divergences(list(group.values()))
        except (KafkaLogError, OSError) as err:
            report.add(ERROR, "unreadable", next(iter(group)), None, None, f"copies not compared: {err}")
            continue
        for g in found_divergences:
            report.add(ERROR, "replica-divergence", g.directory, None, g.start, g.message())


def _checked(name: str) -> bool:
    """Whether verify checks (and counts) a file of this name."""
    kind = kind_of(name)
    return kind in (FileKind.LOG, FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX, FileKind.PRODUCER_SNAPSHOT,
                    FileKind.KRAFT_SNAPSHOT) or name == "bootstrap.checkpoint" or _is_text_state(name)


#: How often a directory that changed while it was verified is verified again.
CHANGED_DIR_ATTEMPTS = 5


def _listing(d: str) -> list[tuple[str, int, int, int]]:
    """The directory's files with inode, size and modification time: a renamed-over file gets a
    new inode, a file written in place a new size or time."""
    out = []
    with contextlib.suppress(OSError), os.scandir(d) as it:
        for e in it:
            with contextlib.suppress(OSError):
                if e.is_file():
                    st = e.stat()
                    out.append((e.name, e.inode(), st.st_size, st.st_mtime_ns))
    return sorted(out)


def _data_loss(d: str, report: VerifyReport) -> None:
    """Report the offsets the partition directory's files say existed but no ``.log`` holds
    (R-LOSS-04): an error, since a reader of the directory would silently miss them."""
    from kafkalog.log.gaps import find_gaps

    try:
        gaps = find_gaps(d)
    except OSError as err:
        report.add(ERROR, "unreadable", d, None, None, err.strerror or str(err))
        return
    for g in gaps:
        report.add(ERROR, "data-loss", d, None, g.start, g.message())


def _leftovers(d: str, report: VerifyReport) -> set[str]:
    """Note each leftover of an interrupted cleaner, split or retention and what the broker's load
    will do with it (R-RCV-04, :func:`kafkalog.log.leftovers.load_plan`): known states, not faults.
    Returns the paths the load deletes."""
    from kafkalog.log.leftovers import DELETE, local_load_plan

    try:
        plan = local_load_plan(d)
    except OSError as err:
        report.add(ERROR, "unreadable", d, None, None, err.strerror or str(err))
        return set()
    for a in plan.actions if plan is not None else ():
        stem = a.name.split(".", 1)[0]
        report.add(NOTE, "leftover", os.path.join(d, a.name), None, int(stem) if stem.isdigit() else None, a.message())
    return {os.path.join(d, a.name) for a in plan.actions if a.action == DELETE} if plan is not None else set()


def _first_look(d: str, walked: bool) -> tuple[list[tuple[str, int, int, int]], VerifyReport, set[str]]:
    """What a directory's check reads before its segments: its listing (to see whether it changes),
    and for a directory named (``walked``) its data loss and leftovers, in a report, with the paths
    the broker's load deletes."""
    before = _listing(d)
    part = VerifyReport()
    gone: set[str] = set()
    if walked:  # before the segments: what the indexes claim is read before the logs (R-LIVE-02)
        _data_loss(d, part)
        gone = _leftovers(d, part)
    return before, part, gone


def _verify_dir(
    d: str, targets: set[str], walked: bool, report: VerifyReport, progress: Callable[[str], None] | None, max_message_bytes: int,
    first: tuple[list[tuple[str, int, int, int]], VerifyReport, set[str]] | None = None, scanned: list[_Segments] | None = None,
) -> None:
    """Verify one directory; if a writer changed its files meanwhile (append, roll, retention,
    cleaner swap) and there were errors, verify it again, so that findings describe one state of it.
    ``first``: its :func:`_first_look`, and ``scanned`` its segments, taken by worker processes
    (``verify -j``; a second look is taken here)."""
    for attempt in range(CHANGED_DIR_ATTEMPTS):
        before, part, gone = first if first is not None and attempt == 0 else _first_look(d, walked)
        _Dir(d, targets, part, progress, max_message_bytes, scanned if attempt == 0 else None).run()
        # an index whose .log an interrupted swap renamed away is noted as the load deletes it
        part.findings = [f for f in part.findings if not (f.code == "log-missing" and f.file in gone)]
        if part.ok or _listing(d) == before or attempt == CHANGED_DIR_ATTEMPTS - 1:
            break
        if walked:  # the directory was named: verify the files it holds now
            targets = {os.path.join(d, entry[0]) for entry in _listing(d)}
    _merge(report, part)
