"""Columnar decoding of v2 record batches: record areas straight to arrays, no object per record.

One function walks a batch's (decompressed) record area and writes each record's offset delta,
timestamp delta and the byte spans of its key, value and headers into numpy arrays; another
gathers spans into contiguous Arrow-style (offsets, data) buffers. :func:`iter_chunks` runs them
over many batches at once: one kernel call frames a chunk of batches (a few MB), another walks
all their records and copies keys and values out, so that Python runs once per chunk. Compressed
batches are first decompressed into one reused buffer: lz4, zstd and gzip ones by one loop that calls
the codec libraries (:mod:`kafkalog.fast.native`), any other batch, or one not framed as Kafka
frames it, by :func:`kafkalog.format.compression.decompress_into`, which also reports what is wrong.

The kernels (the walks, the framing, the span copy, and ``kafkalog verify``'s record walk) are
written here in plain Python, and again in Cython in :mod:`kafkalog.fast._columnar`, compiled when
the package is installed; :data:`kernels` is the compiled set unless it was not built or
``KAFKALOG_NO_EXTENSIONS`` is set (:mod:`kafkalog.fast`). Both return the same statuses at the same
positions, which this module turns into the same exceptions; tests run both over the same corpus.
The record layout is ``schemas.RECORD_V2``; tests hold both paths to the object decoder, the plain
reference decoder and Kafka's dumps.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from kafkalog import fast
from kafkalog.errors import CrcMismatchError, InvalidRecordError, KafkaLogError
from kafkalog.fast import native
from kafkalog.format.compression import _KAFKA_LZ4_HEADER, Codec, decompress_into
from kafkalog.format.primitives import crc32c
from kafkalog.format.records.legacy import LegacyBatch
from kafkalog.format.records.stream import Batch, LogReader, OnCorrupt, corrupt_handler, crc_error
from kafkalog.format.records.v2 import (
    ATTR_COMPRESSION_MASK,
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    HEADER_SIZE,
    RecordBatch,
)

__all__ = ["CHUNK_BYTES", "PURE", "COMPILED", "Kernels", "BatchColumns", "ChunkBatches", "ChunkColumns", "decode_columns", "gather", "iter_chunks", "iter_columns", "kernels"]


# Error codes returned by the walker (negative): mapped to messages in _raise.
_E_TRUNCATED = -1
_E_VARINT = -2
_E_LENGTH = -3
_E_FIELD = -4
_E_HEADERS = -5
_E_LEFTOVER = -6
_E_SIZE_MISMATCH = -7


def _varint(buf: np.ndarray, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Zig-zag varint at ``pos``; returns (value, next position), next position < 0 on error.

    Accumulates in uint64 so that 10-byte varlongs keep their low 64 bits and 5-byte varints their
    low 32, as Java's do. One- and
    two-byte varints (the usual lengths and deltas) take a short path."""
    if pos < end:
        b0 = np.int64(buf[pos])
        if b0 < 0x80:
            return (b0 >> 1) ^ -(b0 & 1), pos + 1
        if pos + 1 < end:
            b1 = np.int64(buf[pos + 1])
            if b1 < 0x80:
                v = (b0 & 0x7F) | (b1 << 7)
                return (v >> 1) ^ -(v & 1), pos + 2
    result = np.uint64(0)
    shift = np.uint64(0)
    for _ in range(max_bytes):
        if pos >= end:
            return np.int64(0), _E_TRUNCATED
        b = np.uint64(buf[pos])
        pos += 1
        result |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            if max_bytes == 5:  # ByteUtils.readVarint: a Java int keeps the low 32 bits (R-PRIM-04)
                result &= np.uint64(0xFFFFFFFF)
            return np.int64(result >> np.uint64(1)) ^ -np.int64(result & np.uint64(1)), pos
        shift += np.uint64(7)
    return np.int64(0), _E_VARINT


def _span(buf: np.ndarray, pos: int, end: int) -> tuple[int, int, int]:
    """A length-prefixed field at ``pos`` (key, value, header value): (its length, -1 for null;
    its first byte; the position after it, or an error code: the varint's, or ``_E_FIELD`` when
    the field runs past ``end``). The one span reader of the compiled record walks."""
    n, pos = _varint(buf, pos, end, 5)
    start = pos
    if pos >= 0 and n > 0:
        pos += n
        if pos > end:
            pos = _E_FIELD
    return n, start, pos


def _short_varint(buf: np.ndarray, pos: int) -> tuple[int, int]:
    """A zig-zag varint of one or two bytes at ``pos`` (the caller keeps both in the buffer):
    (value, next position), or next position -1 when it is longer."""
    b0 = np.int64(buf[pos])
    if b0 < 0x80:
        return (b0 >> 1) ^ -(b0 & 1), pos + 1
    b1 = np.int64(buf[pos + 1])
    if b1 < 0x80:
        v = (b0 & 0x7F) | (b1 << 7)
        return (v >> 1) ^ -(v & 1), pos + 2
    return np.int64(0), np.int64(-1)


# ---- the v2 record's fields, read as DefaultRecord.readFrom reads them, for compiled walks where
# they cost nothing measurable (kafkalog.tools.validate's). _record below and kafkalog.fast.objects'
# walk write the same reads out: through these they measured slower (see their docstrings). Each
# returns the position after what it read, or a negative error code in its place (see _MESSAGES).


def _record_prefix(buf: np.ndarray, pos: int, limit: int) -> tuple[int, int, int, int, int]:
    """The record at ``pos`` (its record area ends at ``limit``) up to its offset delta: (the
    position after it or an error code, the record's end, attributes, timestamp delta, offset delta)."""
    length, pos = _varint(buf, pos, limit, 5)
    if pos < 0:
        return pos, 0, 0, 0, 0
    end = pos + length
    if length < 0 or end > limit:
        return _E_LENGTH, 0, 0, 0, 0
    if pos >= end:
        return _E_FIELD, 0, 0, 0, 0
    attrs = np.int64(buf[pos])
    ts_delta, pos = _varint(buf, pos + 1, end, 10)
    if pos < 0:
        return pos, 0, 0, 0, 0
    off_delta, pos = _varint(buf, pos, end, 5)
    return pos, end, attrs, ts_delta, off_delta


def _key_value(buf: np.ndarray, pos: int, end: int) -> tuple[int, int, int, int, int]:
    """The key and value at ``pos`` of a record ending at ``end``: (key length, key start, value
    length, value start, the position after them or an error code); a length of -1 is null."""
    klen, kstart, pos = _span(buf, pos, end)
    if pos < 0:
        return 0, 0, 0, 0, pos
    vlen, vstart, pos = _span(buf, pos, end)
    return klen, kstart, vlen, vstart, pos


def _header_count(buf: np.ndarray, pos: int, end: int) -> tuple[int, int]:
    """The header count at ``pos``: (count, the position after it, or an error code: the varint's,
    or ``_E_HEADERS`` for a count below 0 or past the bytes left)."""
    nh, pos = _varint(buf, pos, end, 5)
    if pos >= 0 and (nh < 0 or nh > end - pos):
        return nh, _E_HEADERS
    return nh, pos


def _header(buf: np.ndarray, pos: int, end: int) -> tuple[int, int, int, int, int]:
    """One header at ``pos``: (key length, key start, value length (-1 null), value start, the
    position after it, or ``_E_HEADERS`` when anything of it is wrong: a header key is never null)."""
    hk, pos = _varint(buf, pos, end, 5)
    if pos < 0 or hk < 0 or pos + hk > end:
        return 0, 0, 0, 0, _E_HEADERS
    ks = pos
    hv, vs, pos = _span(buf, pos + hk, end)
    if pos < 0:
        return 0, 0, 0, 0, _E_HEADERS
    return hk, ks, hv, vs, pos


def _inline_view(buf: np.ndarray, start: int, n: int) -> tuple[int, int]:
    """The two little-endian words of the Arrow binary view of a span of 0-12 bytes
    ``buf[start:start+n]``: its length, then its bytes inline, zero-padded (all zeros when null)."""
    lo = np.uint64(max(n, 0))
    hi = np.uint64(0)
    for j in range(n):
        b = np.uint64(buf[start + j])
        if j < 4:
            lo |= b << np.uint64(32 + 8 * j)
        else:
            hi |= b << np.uint64(8 * (j - 4))
    return lo, hi


def _record(buf: np.ndarray, pos: int, n: int, cols: np.ndarray, i: int, hdr: np.ndarray, nh_total: int) -> tuple[int, int, int]:
    """Read record ``i`` at ``pos`` (record area ending at ``n``) field by field, as
    DefaultRecord.readFrom does, into column ``i`` of ``cols`` (see :func:`_walk_records`).
    Returns (status, next position or the record's start on error, headers seen)."""
    start = pos
    cols[7, i] = start
    length, pos = _varint(buf, pos, n, 5)
    if pos < 0:
        return pos, start, nh_total
    end = pos + length
    if length < 0 or end > n:
        return _E_LENGTH, start, nh_total
    if pos >= end:
        return _E_FIELD, start, nh_total
    cols[8, i] = buf[pos]
    pos += 1
    v, pos = _varint(buf, pos, end, 10)
    if pos < 0:
        return pos, start, nh_total
    cols[1, i] = v
    v, pos = _varint(buf, pos, end, 5)
    if pos < 0:
        return pos, start, nh_total
    cols[0, i] = v
    for f in (2, 4):  # key, value: start and length
        v, cols[f, i], pos = _span(buf, pos, end)
        if pos < 0:
            return pos, start, nh_total
        cols[f + 1, i] = v
    nh, pos = _varint(buf, pos, end, 5)
    if pos < 0:
        return pos, start, nh_total
    if nh < 0 or nh > end - pos:
        return _E_HEADERS, start, nh_total
    cols[6, i] = nh
    room = hdr.shape[0]
    for _h in range(nh):
        hk, pos = _varint(buf, pos, end, 5)
        if pos < 0 or hk < 0 or pos + hk > end:
            return _E_HEADERS, start, nh_total
        ks = pos
        pos += hk
        hv, pos = _varint(buf, pos, end, 5)
        if pos < 0:
            return _E_HEADERS, start, nh_total
        vs = pos
        if hv > 0:
            pos += hv
        if pos > end:
            return _E_HEADERS, start, nh_total
        if nh_total < room:
            hdr[nh_total, 0] = ks
            hdr[nh_total, 1] = hk
            hdr[nh_total, 2] = vs
            hdr[nh_total, 3] = hv
        nh_total += 1
    if pos != end:
        return _E_SIZE_MISMATCH, start, nh_total
    return 0, pos, nh_total


def _short_headers(buf: np.ndarray, p: int, end: int, hdr: np.ndarray, seen: int) -> tuple[int, int, int]:
    """The headers of a straight-line record from ``p`` (its header count) to ``end``, every varint
    of one or two bytes (Kafka Connect's and Streams' few short headers), their spans written to
    ``hdr`` rows from ``seen`` while it has room: (header count, the position after them, headers
    seen), or a position other than ``end`` when they take another shape (:func:`_record` reads
    those, and names what is wrong). Its reads are written out with :func:`_short_varint`: through
    the shared :func:`_header_count` and :func:`_header` one-record batches with three headers
    decoded 28% slower (bench/walk_ab.py)."""
    if p >= end:
        return 0, -1, seen
    nh, p = _short_varint(buf, p)
    if p < 0 or nh < 0 or nh > end - p:
        return 0, -1, seen
    for _h in range(nh):  # each header: a key (never null) and a value, as _record reads them
        if p >= end:
            return 0, -1, seen
        hk, p = _short_varint(buf, p)
        if p < 0 or hk < 0 or p + hk >= end:
            return 0, -1, seen
        hks = p
        hv, p = _short_varint(buf, p + hk)
        if p < 0:
            return 0, -1, seen
        hvs = p
        if hv > 0:
            p += hv
        if p > end:
            return 0, -1, seen
        if seen < hdr.shape[0]:
            hdr[seen, 0] = hks
            hdr[seen, 1] = hk
            hdr[seen, 2] = hvs
            hdr[seen, 3] = hv
        seen += 1
    return nh, p, seen


def _straight_records(
    buf: np.ndarray, pos: int, end_area: int, i: int, stop: int, cols: np.ndarray, hdr: np.ndarray, nh_total: int, views: np.ndarray,
    base: int, base_offset: int, base_ts: int, max_ts: int, log_append: bool,
) -> tuple[int, int, int]:
    """Read records ``i..stop-1`` from ``pos`` as :func:`_walk_records` does while they take the
    straight line: every varint of one or two bytes (what producers write for records under
    8 KiB; Kafka Connect's and Streams' records carry a few short headers). Returns (the first
    record not read, its position, headers seen); the caller reads that one with
    :func:`_record`. Headers go to :func:`_short_headers`. The compiled twin
    (``_columnar.pyx``) keeps this shape: a straight loop for the usual records, measured faster
    than one loop that also calls the general reader."""
    last = min(end_area, buf.shape[0] - 1)  # straight-line records end before this, so their reads stay in buf
    with_views = views.shape[1] > 0
    while i < stop and pos + 1 < last:
        length, p = _short_varint(buf, pos)
        end = p + length
        if p < 0 or length < 6 or end > last:
            break
        # a body of 6+ bytes holds the attributes and the next three varints' bytes
        a = np.int64(buf[p])
        t, p = _short_varint(buf, p + 1)
        if p < 0:
            break
        o, p = _short_varint(buf, p)
        if p < 0:
            break
        k, p = _short_varint(buf, p)
        if p < 0:
            break
        ks = p
        if k > 0:
            p += k
        if p >= end:
            break
        v, p = _short_varint(buf, p)
        if p < 0:
            break
        vs = p
        if v > 0:
            p += v
        if p + 1 == end and buf[p] == 0:  # no headers, as most records
            nh = 0
        else:
            nh, p, seen = _short_headers(buf, p, end, hdr, nh_total)
            if p != end:  # a long varint, a bad header, or fields that do not fill the record: _record says which
                break
            nh_total = seen
        cols[0, i] = o + base_offset
        cols[1, i] = max_ts if log_append else t + base_ts  # int64 wraps, as Java's long
        cols[2, i] = ks
        cols[3, i] = k
        cols[4, i] = vs
        cols[5, i] = v
        cols[6, i] = nh
        cols[7, i] = pos
        cols[8, i] = a
        if with_views:
            # written out here: through a function (even an inlined one) this loop measured 3x slower
            if k > 12:
                views[0, 2 * i] = np.uint64(k) | (np.uint64(buf[ks]) << np.uint64(32)) | (np.uint64(buf[ks + 1]) << np.uint64(40)) | (
                    np.uint64(buf[ks + 2]) << np.uint64(48)) | (np.uint64(buf[ks + 3]) << np.uint64(56))
                views[0, 2 * i + 1] = np.uint64(ks - base) << np.uint64(32)
            else:
                views[0, 2 * i], views[0, 2 * i + 1] = _inline_view(buf, ks, k)
            if v > 12:
                views[1, 2 * i] = np.uint64(v) | (np.uint64(buf[vs]) << np.uint64(32)) | (np.uint64(buf[vs + 1]) << np.uint64(40)) | (
                    np.uint64(buf[vs + 2]) << np.uint64(48)) | (np.uint64(buf[vs + 3]) << np.uint64(56))
                views[1, 2 * i + 1] = np.uint64(vs - base) << np.uint64(32)
            else:
                views[1, 2 * i], views[1, 2 * i + 1] = _inline_view(buf, vs, v)
        pos = end
        i += 1
    return i, pos, nh_total


def _span_views(buf: np.ndarray, cols: np.ndarray, views: np.ndarray, i: int, base: int) -> None:
    """Write row ``i``'s key and value Arrow binary views (rows 0 and 1 of ``views``) from its spans
    in ``cols``: for records :func:`_record` reads, where speed matters less than one definition."""
    for f in range(2):
        start, n, out = cols[2 + 2 * f, i], cols[3 + 2 * f, i], views[f]
        if n > 12:
            out[2 * i] = np.uint64(n) | (np.uint64(buf[start]) << np.uint64(32)) | (np.uint64(buf[start + 1]) << np.uint64(40)) | (
                np.uint64(buf[start + 2]) << np.uint64(48)) | (np.uint64(buf[start + 3]) << np.uint64(56))
            out[2 * i + 1] = np.uint64(start - base) << np.uint64(32)
        else:
            out[2 * i], out[2 * i + 1] = _inline_view(buf, start, n)


def _walk_records(
    buf: np.ndarray, pos: int, end_area: int, count: int, cols: np.ndarray, row: int, hdr: np.ndarray, nh_total: int,
    views: np.ndarray, base: int, base_offset: int, base_ts: int, max_ts: int, log_append: bool,
) -> tuple[int, int, int]:
    """Walk ``count`` records of the record area ``buf[pos:end_area]``, writing their fields to
    columns ``row..row+count-1`` of ``cols`` (offset, timestamp, key start, key length,
    value start, value length, header count, record start, attributes) and header spans to ``hdr`` rows from
    ``nh_total`` while it has room. Unless ``views`` is empty, each record's key and value Arrow
    binary views (offsets from ``base``) also go to its rows 0 and 1: 16 bytes each, the
    layout of :func:`_inline_view` for up to 12 bytes, else length, first 4 bytes, buffer 0, offset.
    Offsets are ``base_offset`` plus each delta and timestamps ``base_ts`` plus each delta, or
    ``max_ts`` for every record when ``log_append`` (LogAppendTime, as Kafka reports it); zeros
    and False keep the deltas. Returns (status, position, headers seen); status 0 is success.

    Runs of straight-line records go to :func:`_straight_records`; any other record, valid or
    not, is read by :func:`_record`, which also names what is wrong."""
    stop = row + count
    i = row
    while True:
        i, pos, nh_total = _straight_records(
            buf, pos, end_area, i, stop, cols, hdr, nh_total, views, base, base_offset, base_ts, max_ts, log_append
        )
        if i == stop:
            break
        status, pos, nh_total = _record(buf, pos, end_area, cols, i, hdr, nh_total)
        if status != 0:
            return status, pos, nh_total
        cols[0, i] += base_offset
        cols[1, i] = max_ts if log_append else cols[1, i] + base_ts
        if views.shape[1] > 0:
            _span_views(buf, cols, views, i, base)
        i += 1
    if pos != end_area:
        return _E_LEFTOVER, pos, nh_total
    return 0, pos, nh_total


_NO_VIEWS = np.empty((2, 0), np.uint64)
_NO_BYTES = np.empty(0, np.uint8)
#: Views hold 32-bit offsets: a chunk whose bytes span more than this copies keys and values instead.
_VIEW_LIMIT = 2**31 - 1


def _walk(buf: np.ndarray, count: int, cols: np.ndarray, hdr: np.ndarray, views: np.ndarray) -> tuple[int, int, int]:
    """Walk the ``count`` records of one record area (all of ``buf``); see :func:`_walk_records`."""
    return _walk_records(buf, 0, buf.shape[0], count, cols, 0, hdr, 0, views, 0, 0, 0, 0, False)


def _copy_span(buf: np.ndarray, start: int, n: int, data: np.ndarray, at: int) -> None:
    """Copy ``buf[start:start+n]`` to ``data[at:at+n]`` (numpy raises if either runs past its array)."""
    if start + n > len(buf) or at + n > len(data):
        raise IndexError(f"span of {n} bytes outside the buffers")
    data[at : at + n] = buf[start : start + n]


def _gather(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, offsets: np.ndarray, data: np.ndarray, base: int) -> int:
    """Copy spans ``buf[starts[i]:starts[i]+lens[i]]`` (null when len < 0) into ``data`` at
    ``base``, writing Arrow offsets (``offsets[i+1]``); returns the new end of ``data``."""
    pos = base
    k = offsets.shape[0] - starts.shape[0] - 1
    for i in range(starts.shape[0]):
        ln = lens[i]
        if ln > 0:
            _copy_span(buf, starts[i], ln, data, pos)
            pos += ln
        offsets[k + i + 1] = pos
    return pos


def gather(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, offsets: np.ndarray, data: np.ndarray, base: int) -> int:
    """Copy spans ``buf[starts[i]:starts[i]+lens[i]]`` (null when len < 0) into ``data`` at
    ``base``, writing Arrow offsets (``offsets[i+1]``, int32 or int64); returns the new end of
    ``data``. Starts and lengths are taken as contiguous int64 (copied only if they are not)."""
    starts = np.ascontiguousarray(starts, np.int64)
    lens = np.ascontiguousarray(lens, np.int64)
    return int(kernels.gather(buf, starts, lens, offsets, data, base))


_MESSAGES = {
    _E_TRUNCATED: "record runs past the end of its batch",
    _E_VARINT: "varint is longer than allowed",
    _E_LENGTH: "invalid record size",
    _E_FIELD: "record field runs past the end of its record",
    _E_HEADERS: "invalid record headers",
    _E_LEFTOVER: "incorrect declared batch size: bytes remain after the last record",
    _E_SIZE_MISMATCH: "invalid record size: record body length does not match its fields",
}


@dataclass
class _RecordColumns:
    """Each record's fields as arrays over one buffer ``buf`` (uint8): what both column forms hold."""

    buf: np.ndarray
    offsets: np.ndarray  # int64, absolute
    timestamps: np.ndarray  # int64, ms, as Kafka reports them
    key_start: np.ndarray
    key_len: np.ndarray  # -1: null
    val_start: np.ndarray
    val_len: np.ndarray
    hdr_count: np.ndarray
    headers: np.ndarray  # (n, 4): key start, key len, value start, value len (-1: null); a chunk's is empty unless asked for

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass
class BatchColumns(_RecordColumns):
    """The records of one batch as arrays over its record buffer ``buf`` (uint8)."""

    batch: Batch  # the batch these columns came from (its header fields apply to every row)
    raw: bytes = b""  # ``buf`` as bytes (slicing it gives keys and values without a copy through numpy)
    rec_start: np.ndarray | None = None  # each record's first byte in ``buf``
    attrs: np.ndarray | None = None  # each record's attributes byte
    create_timestamps: np.ndarray | None = None  # each record's stored timestamp (base + delta)

    @property
    def timestamp_type_id(self) -> int:
        """Spark's timestampType: 0 CreateTime, 1 LogAppendTime, -1 none (magic 0)."""
        t = self.batch.timestamp_type.value
        return 1 if t == "LogAppendTime" else 0 if t == "CreateTime" else -1

    @property
    def timestamp_types(self) -> np.ndarray:
        """:attr:`timestamp_type_id` for each record (int32)."""
        return np.full(len(self), self.timestamp_type_id, np.int32)


_NO_HEADER_ROWS = np.empty((0, 4), dtype=np.int64)


def decode_columns(batch: RecordBatch) -> BatchColumns:
    """Decode a v2 batch's records to arrays (same values as ``batch.records()``)."""
    count = batch.count
    raw = batch.records_buffer() if count != 0 else b""
    buf = np.frombuffer(raw, dtype=np.uint8)
    if count < 0 or count > len(raw):
        raise InvalidRecordError(f"invalid record count {count}", file=batch.file, position=batch.position, offset=batch.base_offset)
    i64 = np.empty((9, count), dtype=np.int64)
    off_delta, ts_delta, ks, kl, vs, vl, hc, rs, at = i64
    hdr = _NO_HEADER_ROWS
    status, where, nh = kernels.walk(buf, count, i64, hdr, _NO_VIEWS)
    if status == 0 and nh:
        hdr = np.empty((nh, 4), dtype=np.int64)
        status, where, nh = kernels.walk(buf, count, i64, hdr, _NO_VIEWS)
    if status != 0:
        uncompressed = batch.attributes & ATTR_COMPRESSION_MASK == 0
        msg = _MESSAGES.get(status, "invalid record")
        if uncompressed:
            raise InvalidRecordError(msg, file=batch.file, position=batch.position + HEADER_SIZE + where, offset=batch.base_offset)
        raise InvalidRecordError(f"{msg} (at byte {where} of the decompressed records)", file=batch.file, position=batch.position, offset=batch.base_offset)
    offsets = off_delta + batch.base_offset
    stored = ts_delta + np.int64(batch.base_timestamp)  # int64 arithmetic wraps, as Java's long does
    if batch.attributes & ATTR_TIMESTAMP_TYPE:
        timestamps = np.full(count, batch.max_timestamp, dtype=np.int64)
    else:
        timestamps = stored
    return BatchColumns(buf, offsets, timestamps, ks, kl, vs, vl, hc, hdr, batch, raw, rs, at, stored)


def iter_columns(batches: Iterable[Batch]) -> Iterator[BatchColumns]:
    """Columns of every batch; legacy (v0/v1) batches go through the object decoder."""
    for batch in batches:
        if isinstance(batch, RecordBatch):
            yield decode_columns(batch)
        else:
            yield _legacy_columns(batch)


def _legacy_columns(batch: LegacyBatch) -> BatchColumns:
    recs = batch.records()
    parts: list[bytes] = []
    pos = 0
    n = len(recs)
    ks = np.zeros(n, np.int64)
    kl = np.full(n, -1, np.int64)
    vs = np.zeros(n, np.int64)
    vl = np.full(n, -1, np.int64)
    for i, r in enumerate(recs):
        if r.key is not None:
            ks[i], kl[i] = pos, len(r.key)
            parts.append(r.key)
            pos += len(r.key)
        if r.value is not None:
            vs[i], vl[i] = pos, len(r.value)
            parts.append(r.value)
            pos += len(r.value)
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
    return BatchColumns(
        buf,
        np.array([r.offset for r in recs], np.int64),
        np.array([r.timestamp for r in recs], np.int64),
        ks, kl, vs, vl, np.zeros(n, np.int64), np.empty((0, 4), np.int64), batch,
    )


# ------------------------------------------------------------------------- chunks of batches
# One compiled pass frames many batches and another walks all their records, so that Python runs
# once per chunk (a few MB, up to ``max_rows`` records) instead of once per batch.

#: Why :func:`_frame_chunk` stopped.
_F_END = 0  # the input ends at the stop position
_F_TAIL = 1  # the entry there runs past the input (a torn tail, or the end of a read window)
_F_SMALL = 2  # the entry there declares a size under the minimum entry overhead (corruption)
_F_OTHER = 3  # the entry there needs the per-batch path (magic 0/1 or unknown, short header, bad count, unknown codec)
_F_FULL = 4  # the chunk's byte, row or batch budget is spent
_F_SWITCH = 5  # the entry there is compressed and the chunk's are not, or the other way round (but for a control batch)
_F_CRC = 6  # the batch there fails its CRC check

#: Columns of the per-batch metadata :func:`_frame_chunk` fills: the batch header's fields.
(_M_POS, _M_SIZE, _M_ATTRS, _M_COUNT, _M_BASE_OFFSET, _M_BASE_TS, _M_MAX_TS, _M_LAST_DELTA, _M_LEADER_EPOCH,
 _M_PRODUCER_ID, _M_PRODUCER_EPOCH, _M_BASE_SEQUENCE) = range(12)
_META_COLUMNS = 12
_CRC_START = 21  # the CRC covers the batch from its attributes on
_HEADER_UP_TO_MAGIC = 17  # offset, size, partitionLeaderEpoch, magic: what Kafka reads first
_MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0: a smaller declared size is corruption


def _be32(buf: np.ndarray, p: int) -> int:
    """Signed big-endian int32 at ``p``."""
    v = (np.int64(buf[p]) << 24) | (np.int64(buf[p + 1]) << 16) | (np.int64(buf[p + 2]) << 8) | np.int64(buf[p + 3])
    return v - 4294967296 if v >= 2147483648 else v


def _be64(buf: np.ndarray, p: int) -> int:
    """Signed big-endian int64 at ``p`` (high word signed, so nothing overflows in either path)."""
    lo = _be32(buf, p + 4)
    if lo < 0:
        lo += 4294967296
    return _be32(buf, p) * 4294967296 + lo


def _frame_chunk(
    buf: np.ndarray, pos: int, end: int, compressed: bool, max_bytes: int, max_rows: int, meta: np.ndarray, verify_crc: bool
) -> tuple[int, int, int, int]:
    """Frame the entries of ``buf[pos:end]`` as Kafka's FileLogInputStream does (R-LOG-03 to
    R-LOG-05, R-LOG-07), taking v2 batches that are all uncompressed (or all compressed, per
    ``compressed``, with the uncompressed control batches between them: a transaction marker
    after every few compressed batches would otherwise end each chunk, and Python runs once a
    chunk; the codec module copies their records) into ``meta`` (their header fields, :data:`_M_POS` ...) until a budget is
    spent; with ``verify_crc``, stop before a batch whose CRC-32C does not match (``_F_CRC``,
    R-PRIM-07), as Kafka's consumer checks each batch before reading it. Returns (stop status
    ``_F_*``, stop position, batches taken, records they declare)."""
    first = pos
    n = 0
    rows = 0
    while True:
        if end - pos < _HEADER_UP_TO_MAGIC:
            return (_F_END if pos >= end else _F_TAIL), pos, n, rows
        size = _be32(buf, pos + 8)
        if size < _MIN_ENTRY_SIZE:
            return _F_SMALL, pos, n, rows
        if pos + 12 + size > end:
            return _F_TAIL, pos, n, rows
        if buf[pos + 16] != 2 or size < HEADER_SIZE - 12:
            return _F_OTHER, pos, n, rows
        attrs = (np.int64(buf[pos + 21]) << 8) | np.int64(buf[pos + 22])
        codec = attrs & ATTR_COMPRESSION_MASK
        count = _be32(buf, pos + 57)
        if codec > 4 or count < 0 or (codec == 0 and count > size + 12 - HEADER_SIZE):
            return _F_OTHER, pos, n, rows
        if (codec != 0) != compressed and not (compressed and attrs & ATTR_CONTROL):
            return _F_SWITCH, pos, n, rows
        if n > 0 and (n == meta.shape[0] or pos + 12 + size - first > max_bytes or rows + count > max_rows):
            return _F_FULL, pos, n, rows
        if verify_crc and crc32c(memoryview(buf)[pos + _CRC_START : pos + 12 + size]) != _be32(buf, pos + 17) & 0xFFFFFFFF:
            return _F_CRC, pos, n, rows
        meta[n, _M_POS] = pos
        meta[n, _M_SIZE] = 12 + size
        meta[n, _M_ATTRS] = attrs
        meta[n, _M_COUNT] = count
        meta[n, _M_BASE_OFFSET] = _be64(buf, pos)
        meta[n, _M_BASE_TS] = _be64(buf, pos + 27)
        meta[n, _M_MAX_TS] = _be64(buf, pos + 35)
        meta[n, _M_LAST_DELTA] = _be32(buf, pos + 23)
        meta[n, _M_LEADER_EPOCH] = _be32(buf, pos + 12)
        meta[n, _M_PRODUCER_ID] = _be64(buf, pos + 43)
        meta[n, _M_PRODUCER_EPOCH] = (np.int64(buf[pos + 51]) << 8) | np.int64(buf[pos + 52])
        if meta[n, _M_PRODUCER_EPOCH] >= 32768:
            meta[n, _M_PRODUCER_EPOCH] -= 65536
        meta[n, _M_BASE_SEQUENCE] = _be32(buf, pos + 53)
        n += 1
        rows += count
        pos += 12 + size


#: :func:`_walk_chunk` status: the key or value buffer lacks room for the next batch (grow and resume).
_NEED_ROOM = 1
_STATE_BATCH, _STATE_ROW, _STATE_KEY_END, _STATE_VALUE_END, _STATE_HEADERS = range(5)


def _gather_rows(
    buf: np.ndarray, cols: np.ndarray, f: int, row: int, count: int, kv_offsets: np.ndarray, k: int, data: np.ndarray, pos: int,
) -> int:
    """:func:`gather` for rows ``row..row+count-1`` of the spans in ``cols`` rows ``f`` (start) and
    ``f + 1`` (length), offsets to ``kv_offsets`` row ``k``: indexed in place, as slicing the
    columns for each batch cost more than the copy on batches of a few records."""
    for r in range(row, row + count):
        ln = cols[f + 1, r]
        if ln > 0:
            _copy_span(buf, cols[f, r], ln, data, pos)
            pos += ln
        kv_offsets[k, r + 1] = pos
    return pos


def _walk_chunk(
    buf: np.ndarray, meta: np.ndarray, areas: np.ndarray, n: int, cols: np.ndarray, hdr: np.ndarray,
    kv_offsets: np.ndarray, key_data: np.ndarray, value_data: np.ndarray, state: np.ndarray, views: np.ndarray, base: int,
) -> tuple[int, int, int]:
    """Walk the records of batches ``state[0]..n-1`` (batch i's record area is ``buf[areas[i, 0]:areas[i, 1]]``)
    into consecutive columns of ``cols`` from row ``state[1]``, making offsets absolute and
    timestamps as Kafka reports them (LogAppendTime: the batch's max timestamp), and copy each
    batch's keys and values, while they are in cache, to ``key_data`` / ``value_data`` with Arrow
    offsets in ``kv_offsets`` rows 0 and 1; or, unless ``views`` is empty, write their Arrow
    binary views there instead (offsets from ``base``: no copy). ``state`` (next batch, next row,
    key bytes, value bytes, headers seen) is kept so that a call that ran out of room
    (``_NEED_ROOM``) can resume. Returns (status, batch, position); status 0 is success."""
    row = state[_STATE_ROW]
    kpos = state[_STATE_KEY_END]
    vpos = state[_STATE_VALUE_END]
    nh = state[_STATE_HEADERS]
    copy = views.shape[1] == 0
    for i in range(state[_STATE_BATCH], n):
        count = meta[i, _M_COUNT]
        if count == 0:
            continue  # a batch the cleaner emptied: its record area is not read, as in Kafka
        room = areas[i, 1] - areas[i, 0]
        if copy and (kpos + room > key_data.shape[0] or vpos + room > value_data.shape[0]):
            state[_STATE_BATCH] = i
            state[_STATE_ROW] = row
            state[_STATE_KEY_END] = kpos
            state[_STATE_VALUE_END] = vpos
            state[_STATE_HEADERS] = nh
            return _NEED_ROOM, i, 0
        status, where, nh = _walk_records(
            buf, areas[i, 0], areas[i, 1], count, cols, row, hdr, nh, views, base,
            meta[i, _M_BASE_OFFSET], meta[i, _M_BASE_TS], meta[i, _M_MAX_TS], (meta[i, _M_ATTRS] & ATTR_TIMESTAMP_TYPE) != 0,
        )
        if status != 0:
            return status, i, where
        if copy:
            kpos = _gather_rows(buf, cols, 2, row, count, kv_offsets, 0, key_data, kpos)
            vpos = _gather_rows(buf, cols, 4, row, count, kv_offsets, 1, value_data, vpos)
        row += count
    state[_STATE_BATCH] = n
    state[_STATE_ROW] = row
    state[_STATE_KEY_END] = kpos
    state[_STATE_VALUE_END] = vpos
    state[_STATE_HEADERS] = nh
    return 0, n, 0




@dataclass
class ChunkBatches:
    """The header fields of a chunk's batches, one row each (a view of the chunk walk's own
    arrays: valid until the next chunk). ``data`` holds the log bytes the batches were framed in
    (from file position ``origin``) when the chunk was read without records (None otherwise)."""

    meta: np.ndarray  # (batches, _META_COLUMNS) int64, positions relative to ``origin``
    origin: int
    data: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.meta)

    @property
    def positions(self) -> np.ndarray:
        """Each batch's file position."""
        return self.meta[:, _M_POS] + self.origin

    @property
    def sizes(self) -> np.ndarray:
        """Each batch's size in the log, offset and length fields included."""
        return self.meta[:, _M_SIZE]

    @property
    def attributes(self) -> np.ndarray:
        """Each batch's attributes (compression, timestamp type, transactional, control bits)."""
        return self.meta[:, _M_ATTRS]

    @property
    def counts(self) -> np.ndarray:
        """Each batch's ``recordsCount``."""
        return self.meta[:, _M_COUNT]

    @property
    def base_offsets(self) -> np.ndarray:
        """Each batch's ``baseOffset``."""
        return self.meta[:, _M_BASE_OFFSET]

    @property
    def last_offsets(self) -> np.ndarray:
        """Base offset plus ``lastOffsetDelta``."""
        return self.meta[:, _M_BASE_OFFSET] + self.meta[:, _M_LAST_DELTA]

    @property
    def max_timestamps(self) -> np.ndarray:
        """Each batch's ``maxTimestamp``."""
        return self.meta[:, _M_MAX_TS]

    @property
    def leader_epochs(self) -> np.ndarray:
        """Each batch's ``partitionLeaderEpoch``."""
        return self.meta[:, _M_LEADER_EPOCH]

    @property
    def producer_ids(self) -> np.ndarray:
        """Each batch's ``producerId``."""
        return self.meta[:, _M_PRODUCER_ID]

    @property
    def producer_epochs(self) -> np.ndarray:
        """Each batch's ``producerEpoch``."""
        return self.meta[:, _M_PRODUCER_EPOCH]

    @property
    def base_sequences(self) -> np.ndarray:
        """Each batch's ``baseSequence``."""
        return self.meta[:, _M_BASE_SEQUENCE]

    def batch(self, i: int, reader: LogReader) -> RecordBatch:
        """Batch ``i`` as an object (a copy of its bytes; needs ``data``)."""
        assert self.data is not None
        p = int(self.meta[i, _M_POS])
        raw = self.data[p : p + int(self.meta[i, _M_SIZE])].tobytes()
        return RecordBatch(raw, self.origin + p, reader.name, max_decompressed_size=reader.max_decompressed_size)


@dataclass
class ChunkColumns(_RecordColumns):
    """The records of consecutive v2 batches as arrays over one buffer ``buf`` (uint8): the log
    bytes for uncompressed batches, their decompressed record areas otherwise. Only ``key_data``
    and ``value_data`` (or, with views, ``key_views``, ``value_views`` and ``view_data``) are the
    chunk's own: ``buf`` and the other arrays are reused by the next chunk, so copy out what must
    outlive it (:func:`kafkalog.fast.arrow.columns_to_arrow` does)."""

    timestamp_types: np.ndarray  # int32 per record: 0 CreateTime, 1 LogAppendTime
    positions: np.ndarray  # int64 file position of each batch
    counts: np.ndarray  # int64 records of each batch
    key_offsets: np.ndarray  # int64 Arrow offsets (n + 1) into key_data: the keys, copied out of ``buf`` (empty with views)
    key_data: np.ndarray
    value_offsets: np.ndarray  # the same for values
    value_data: np.ndarray
    key_views: np.ndarray | None = None  # with views: each key's 16-byte Arrow binary view (uint64 pairs) into view_data
    value_views: np.ndarray | None = None  # the same for values
    view_data: np.ndarray | None = None  # the bytes the views point into: the chunk's own, not reused
    batches: ChunkBatches | None = None  # the header fields of the chunk's batches (valid until the next chunk)


#: Defaults for chunked decoding: bytes of log (or of decompressed records) per chunk, batches per chunk.
CHUNK_BYTES = 8 << 20
_CHUNK_BATCHES = 4096
_CODECS = tuple(Codec)  # by id (the framing takes ids 1-4 only)


def iter_chunks(
    reader: LogReader, *, max_rows: int = 32768, max_bytes: int = CHUNK_BYTES, headers: bool = True,
    alloc: Callable[[int], np.ndarray] | None = None, views: bool = False, verify_crc: bool = True, records: bool = True,
    on_corrupt: OnCorrupt = "fail",
) -> Iterator[ChunkColumns | ChunkBatches | BatchColumns]:
    """Decode every batch of ``reader`` (from ``reader.start``), chunk by chunk: runs of v2 batches
    become one :class:`ChunkColumns` of at most ``max_rows`` records (unless one batch holds more)
    and about ``max_bytes`` bytes; any other batch (magic 0/1, or one the fast path refuses, which
    the per-batch path then reports) becomes a :class:`BatchColumns`. Memory stays bounded by a
    chunk; ``reader.tail`` and ``reader.valid_bytes`` are set as :meth:`LogReader.batches` sets them.
    ``headers=False`` skips the header spans (their counts are still read and checked). ``alloc(n)``
    makes the uint8 arrays keys and values are copied to (default: buffers taken back once nothing
    refers to them, so that reading on reuses memory the system would otherwise take back). The work
    arrays are kept per thread for the next call: a chunk's other arrays are valid until the next
    chunk (or call). ``views=True`` gives each chunk Arrow binary views of its keys and values
    (``key_views``, ``value_views``) into bytes it owns (``view_data``: its decompressed record
    areas, or the log bytes read for it) instead of copying them out: no copy of any key or value.

    Each chunk carries its batches' header fields (:attr:`ChunkColumns.batches`). Every batch's CRC
    is checked before it is decoded, as Kafka's consumer does (R-VAL-09; in the compiled framing
    pass, over the bytes already read): the batches before a bad one are yielded, then its
    :class:`~kafkalog.errors.CrcMismatchError` (:func:`~kafkalog.format.records.stream.crc_error`)
    is raised, or with ``on_corrupt="skip"`` (or a callable) reported and the batch left out;
    ``verify_crc=False`` does not check. ``records=False`` reads batch
    headers only: runs of v2 batches become :class:`ChunkBatches` (nothing decompressed or
    decoded), any other batch still a :class:`BatchColumns`."""
    scratch = _Scratch.take(alloc)
    try:
        yield from _chunks(reader, max_rows, max_bytes, headers, scratch, views, verify_crc, records, corrupt_handler(on_corrupt))
    finally:
        scratch.give_back()


def _chunks(
    reader: LogReader, max_rows: int, max_bytes: int, headers: bool, scratch: _Scratch, views: bool, verify_crc: bool, records: bool,
    on_corrupt: Callable[[CrcMismatchError], None] | None,
) -> Iterator[ChunkColumns | ChunkBatches | BatchColumns]:
    src = _Source(reader, max_bytes, scratch.own)
    meta = scratch.meta  # batches of the current chunk
    pos = reader.start
    reader.tail = None
    compressed = False
    dbuf = scratch.dbuf
    while True:
        data, origin, stop_end = src.window(pos)
        status, stop, n, _rows = kernels.frame_chunk(data, pos - origin, stop_end, compressed, max_bytes, max_rows, meta, verify_crc)
        if n and not records:
            yield ChunkBatches(meta[:n], origin, data)
        elif n:
            if compressed:
                if views:  # the chunk keeps its buffer: a new one each time
                    dbuf = scratch.own(scratch.view_dbuf)
                chunk, used, dbuf = _compressed_chunk(data, origin, meta, n, reader, max_bytes, dbuf, headers, scratch, views)
                if views:
                    scratch.view_dbuf = min(len(dbuf), 2 * max_bytes + (1 << 20))  # one huge batch sets no precedent
                else:
                    scratch.dbuf = dbuf
                if used < n:
                    status, stop = _F_FULL, int(meta[used - 1, _M_POS] + meta[used - 1, _M_SIZE])
            else:
                chunk = _decode_chunk(data, origin, meta, n, _areas(meta, n), reader, headers, scratch, views)
                if chunk.view_data is not None:
                    src.lend()
            yield chunk
        pos = origin + stop
        reader.valid_bytes = pos - reader.start
        if status == _F_FULL:
            continue
        if status == _F_SWITCH:
            compressed = not compressed
            continue
        if status in (_F_END, _F_TAIL) and not src.final:
            src.advance(pos, data, stop)
            continue
        if status == _F_END:
            return
        # a torn tail, a corrupt size or CRC, or a batch for the per-batch path: LogReader's own
        # framing and the batch object decide and report, from this position
        single = LogReader(reader._buf if reader._buf is not None else reader._fh, name=reader.name, start=pos,  # type: ignore[arg-type]
                           end=reader.end, max_decompressed_size=reader.max_decompressed_size)
        batch = next(single.batches(), None)
        if batch is None:
            reader.tail = single.tail
            return
        err = crc_error(batch) if verify_crc else None
        if err is None:
            yield from iter_columns([batch])
        elif on_corrupt is None:
            raise err
        else:
            on_corrupt(err)  # and read on after the batch, as with a seek past it
        pos += batch.size_in_bytes
        reader.valid_bytes = pos - reader.start


class _Source:
    """The reader's bytes as uint8 windows: all of an in-memory buffer, or a file read a few MB at
    a time into one reused buffer (grown only for a batch larger than it)."""

    def __init__(self, reader: LogReader, size: int, fresh: Callable[[int], np.ndarray]) -> None:
        self.reader = reader
        self.end = reader.end
        self.fresh = fresh  # a buffer to read on into when a chunk points into the current one
        self.lent = False
        if reader._buf is not None:
            self.data = np.frombuffer(reader._buf, np.uint8)
            self.origin = 0
            self.filled = reader.end
            self.final = True
        else:
            self.data = np.empty(max(size, HEADER_SIZE), np.uint8)
            self.origin = self.filled = 0
            self.final = False
            self._load(reader.start)

    def lend(self) -> None:
        """A chunk points into the current window: read on into a new buffer, not over it."""
        self.lent = True

    def _load(self, pos: int) -> None:
        fh = self.reader._fh
        assert fh is not None
        if self.lent:
            self.data = self.fresh(len(self.data))
            self.lent = False
        fh.seek(pos)
        want = min(len(self.data), self.end - pos)
        if want <= 0:
            got = 0
        elif hasattr(fh, "readinto"):
            got = fh.readinto(memoryview(self.data)[:want])
        else:  # a file-like object with read() only
            raw = fh.read(want)
            got = len(raw)
            self.data[:got] = np.frombuffer(raw, np.uint8)
        self.origin, self.filled = pos, got or 0
        self.final = pos + self.filled >= self.end or self.filled < want

    def window(self, pos: int) -> tuple[np.ndarray, int, int]:
        """(buffer, file position of its byte 0, end of valid bytes in it) covering ``pos``."""
        return self.data, self.origin, self.filled

    def advance(self, pos: int, data: np.ndarray, stop: int) -> None:
        """Read on from ``pos``: the window ended inside (or right at the end of) an entry."""
        need = 0
        if self.filled - stop >= 12:
            need = 12 + int(_be32(data, stop + 8))
        if need > len(self.data) and pos + need <= self.end:
            self.data = np.empty(need, np.uint8)
            self.lent = False
        self._load(pos)


def _areas(meta: np.ndarray, n: int) -> np.ndarray:
    """Record areas of uncompressed batches: from after the 61-byte header to the entry's end."""
    areas = np.empty((n, 2), np.int64)
    areas[:, 0] = meta[:n, _M_POS] + HEADER_SIZE
    areas[:, 1] = meta[:n, _M_POS] + meta[:n, _M_SIZE]
    return areas



class _Recycled:
    """Byte buffers that chunks own (views point into them), taken back for a later chunk once
    nothing refers to them any more: no Arrow batch, array or slice. Memory freed to the allocator
    is otherwise returned to the system within milliseconds (mimalloc, Arrow's default pool,
    purges it), and faulting it in again costs more than the walk. Only where CPython's reference
    counts say so reliably (with the GIL); elsewhere each buffer is new. What "only the list refers
    to it" reads as is measured once, on an array held the same way, rather than assumed (how a
    call counts its argument differs between CPython versions)."""

    KEEP = 5  # buffers held: two for the chunk being read, two for the one the caller still uses, a spare
    IDLE = 2  # buffers held between calls

    def __init__(self) -> None:
        self.held: list[np.ndarray] = []
        self.counted = hasattr(sys, "getrefcount") and getattr(sys, "_is_gil_enabled", lambda: True)()
        probe = [np.empty(1, np.uint8)]
        self.alone = sys.getrefcount(probe[0]) if self.counted else -1  # the count of a buffer only held

    def __call__(self, n: int) -> np.ndarray:
        """``n`` bytes (uninitialised) that no one else refers to."""
        if not self.counted:
            return np.empty(n, np.uint8)
        held = self.held
        for i in range(len(held)):
            if len(held[i]) >= n and sys.getrefcount(held[i]) == self.alone:
                return held[i][:n]
        a = np.empty(max(n, 1 << 16), np.uint8)
        for i in range(len(held)):
            if sys.getrefcount(held[i]) == self.alone:  # a free one too small: replace it
                held[i] = a
                return a[:n]
        if len(held) < self.KEEP:
            held.append(a)
        return a[:n]

    def trim(self) -> None:
        """Hold fewer buffers while no call reads (a call holds more again as it needs them)."""
        del self.held[self.IDLE :]


class _Scratch:
    """Work arrays reused from chunk to chunk and from call to call in a thread (fresh pages
    cost more than the walk itself), and the allocator of each chunk's own key and value bytes
    (by default :class:`_Recycled` buffers, which views also point into)."""

    _spare = threading.local()

    def __init__(self, alloc: Callable[[int], np.ndarray] | None) -> None:
        self.own = _Recycled()  # the buffers chunks own
        self.alloc = alloc or self.own
        self.meta = np.empty((_CHUNK_BATCHES, _META_COLUMNS), np.int64)
        self.dbuf = np.empty(0, np.uint8)  # decompressed record areas
        self.view_dbuf = 0  # with views, each chunk decompresses into its own buffer: the last one's size
        self.cols = np.empty((9, 0), np.int64)
        self.kv = np.empty((2, 1), np.int64)
        self.hdr = np.empty((0, 4), np.int64)
        self.state = np.zeros(5, np.int64)

    @classmethod
    def take(cls, alloc: Callable[[int], np.ndarray] | None) -> _Scratch:
        """This thread's spare arrays (a generator running beside another gets its own)."""
        sc = getattr(cls._spare, "scratch", None)
        if sc is None:
            return cls(alloc)
        cls._spare.scratch = None
        sc.alloc = alloc or sc.own
        return sc

    def give_back(self) -> None:
        """Keep the arrays for the thread's next call, unless one batch blew them up."""
        if self.dbuf.nbytes > 2 * CHUNK_BYTES + (1 << 20) or self.cols.nbytes > 4 * CHUNK_BYTES or self.hdr.nbytes > 4 * CHUNK_BYTES:
            return
        self.alloc = self.own
        self.own.trim()
        type(self)._spare.scratch = self

    def ensure(self, rows: int, headers: int) -> None:
        """Room for ``rows`` records and ``headers`` headers, keeping what the arrays hold."""
        have = self.cols.shape[1]
        if have < rows:
            cap = max(rows, 2 * have)
            cols = np.empty((9, cap), np.int64)
            cols[:, :have] = self.cols
            kv = np.empty((2, cap + 1), np.int64)
            kv[:, : have + 1] = self.kv
            self.cols, self.kv = cols, kv
        if len(self.hdr) < headers:
            hdr = np.empty((max(headers, 2 * len(self.hdr)), 4), np.int64)
            hdr[: len(self.hdr)] = self.hdr
            self.hdr = hdr


class _ChunkWalk:
    """The compiled walk of one chunk's batches (resumable: it grows its arrays when records
    outgrow them and carries on); raises the per-batch path's errors."""

    def __init__(
        self, buf: np.ndarray, origin: int, meta: np.ndarray, reader: LogReader, headers: bool, scratch: _Scratch, area: int,
        views: tuple[int, int] | None = None,
    ) -> None:
        """``views``: (first, end) of the bytes of ``buf`` to point views into, instead of copying
        keys and values out; ignored past :data:`_VIEW_LIMIT` bytes (views hold 32-bit offsets)."""
        self.buf, self.origin, self.meta, self.reader, self.headers, self.scratch = buf, origin, meta, reader, headers, scratch
        scratch.state[:] = 0
        scratch.kv[:, 0] = 0
        self.view_span = views if views is not None and views[1] - views[0] <= _VIEW_LIMIT else None
        self.views = _NO_VIEWS
        if self.view_span is None:
            self.value_data = scratch.alloc(area)  # values cannot outgrow the record areas
            self.key_data = scratch.alloc(min(area, 1 << 12))  # sized after the first batch (see walk)
        else:
            self.value_data = self.key_data = _NO_BYTES
        self.area = area
        self.rows = 0

    def walk(self, areas: np.ndarray, upto: int, rows: int, compressed: bool) -> None:
        """Walk batches up to ``upto`` (``rows`` records in all, their counts already checked)."""
        sc = self.scratch
        sc.ensure(rows, rows if self.headers else 0)
        self.rows = rows
        state = sc.state
        base = 0
        if self.view_span is not None:
            base = self.view_span[0]
            self.views = sc.own(32 * rows).view(np.uint64).reshape(2, 2 * rows)
        # walk one batch, then size the keys' array from it
        first = state[_STATE_BATCH] == 0 and upto > 1 and self.view_span is None
        with np.errstate(over="ignore"):  # the plain path's int64 scalars wrap as the compiled path's and Java's do
            while True:
                hdr = sc.hdr if self.headers else sc.hdr[:0]
                stop = 1 if first else upto
                status, i, where = kernels.walk_chunk(
                    self.buf, self.meta, areas, stop, sc.cols, hdr, sc.kv, self.key_data, self.value_data, state, self.views, base
                )
                if first and status == 0:
                    first = False
                    done, keys = int(state[_STATE_ROW]), int(state[_STATE_KEY_END])
                    guess = min(self.area, (keys * rows // done if done else 0) * 5 // 4 + (1 << 12))
                    self.key_data = self._grown(self.key_data, keys, guess - keys)
                    continue
                if status == _NEED_ROOM:
                    room = int(areas[i, 1] - areas[i, 0])
                    self.key_data = self._grown(self.key_data, int(state[_STATE_KEY_END]), room)
                    self.value_data = self._grown(self.value_data, int(state[_STATE_VALUE_END]), room)
                    continue
                if status == 0 and self.headers and state[_STATE_HEADERS] > len(hdr):
                    sc.ensure(rows, int(state[_STATE_HEADERS]))
                    state[:] = 0  # walk again from the first batch, now with room for every header
                    sc.kv[:, 0] = 0
                    continue
                break
        if status != 0:
            msg = _MESSAGES.get(status, "invalid record")
            pos = self.origin + int(self.meta[i, _M_POS])
            offset = int(self.meta[i, _M_BASE_OFFSET])
            name = self.reader.name
            if compressed:
                raise InvalidRecordError(f"{msg} (at byte {where - int(areas[i, 0])} of the decompressed records)", file=name, position=pos, offset=offset)
            raise InvalidRecordError(msg, file=name, position=self.origin + where, offset=offset)

    def _grown(self, data: np.ndarray, used: int, room: int) -> np.ndarray:
        if used + room <= len(data):
            return data
        bigger = self.scratch.alloc(max(2 * len(data), used + room))
        bigger[:used] = data[:used]
        return bigger

    def columns(self, n: int) -> ChunkColumns:
        """The chunk's records (batches ``0..n-1``, all walked)."""
        meta, sc, rows = self.meta, self.scratch, self.rows
        counts = meta[:n, _M_COUNT]
        types = np.repeat(((meta[:n, _M_ATTRS] & ATTR_TIMESTAMP_TYPE) != 0).astype(np.int32), counts)
        nh = int(sc.state[_STATE_HEADERS]) if self.headers else 0
        c = sc.cols[:, :rows]
        views = {}
        if self.view_span is not None:
            first, end = self.view_span
            views = {"key_views": self.views[0], "value_views": self.views[1], "view_data": self.buf[first:end]}
        return ChunkColumns(
            self.buf, c[0], c[1], c[2], c[3], c[4], c[5], c[6], sc.hdr[:nh], types,
            meta[:n, _M_POS] + self.origin, counts.copy(),
            sc.kv[0, : rows + 1], self.key_data[: int(sc.state[_STATE_KEY_END])],
            sc.kv[1, : rows + 1], self.value_data[: int(sc.state[_STATE_VALUE_END])],
            **views, batches=ChunkBatches(meta[:n], self.origin),
        )


def _decode_chunk(
    buf: np.ndarray, origin: int, meta: np.ndarray, n: int, areas: np.ndarray, reader: LogReader, headers: bool, scratch: _Scratch,
    views: bool,
) -> ChunkColumns:
    """Walk uncompressed batches ``0..n-1`` in one compiled call (with ``views``, views into ``buf``)."""
    span = (int(meta[0, _M_POS]), int(areas[n - 1, 1])) if views else None
    walk = _ChunkWalk(buf, origin, meta, reader, headers, scratch, int((areas[:, 1] - areas[:, 0]).sum()), span)
    walk.walk(areas, n, int(meta[:n, _M_COUNT].sum()), compressed=False)
    return walk.columns(n)


#: :func:`_inflate_chunk` status besides 0 (done): ``dbuf`` needs room (grow it and call again),
#: or the batch needs the codec module (:func:`_inflate_batch`), which decompresses or reports it.
_I_ROOM = 1
_I_PYTHON = 2
_STATE_AT = 1  # the inflate state: (next batch, its first byte in dbuf)
_KAFKA_LZ4 = np.frombuffer(_KAFKA_LZ4_HEADER, np.uint8)
_LZ4_BLOCK = 64 * 1024  # the block maximum of Kafka's header (BD 0x40)


def _lz4_frame(data: np.ndarray, pos: int, end: int, dbuf: np.ndarray, at: int, max_size: int) -> int:
    """Decompress the lz4 frame ``data[pos:end]`` into ``dbuf`` from ``at`` if it is exactly as
    Kafka writes it (its 7-byte header, 64 KiB blocks without checksums): the end of what was
    written, ``native.ROOM`` when ``dbuf`` lacks room, or ``native.BAD`` for anything else (a
    different header, a bad block, more than ``max_size`` bytes), which the codec module then reads."""
    if end - pos < 7:
        return native.BAD
    for j in range(7):
        if data[pos + j] != _KAFKA_LZ4[j]:
            return native.BAD
    pos += 7
    start = at
    while True:
        if pos + 4 > end:
            return native.BAD
        size = np.int64(data[pos]) | (np.int64(data[pos + 1]) << 8) | (np.int64(data[pos + 2]) << 16) | (np.int64(data[pos + 3]) << 24)
        pos += 4
        if size == 0:
            return at  # the end mark (bytes after it are not read, as in Kafka)
        stored = size & 0x80000000
        size &= 0x7FFFFFFF
        if size > _LZ4_BLOCK or pos + size > end:
            return native.BAD
        if at + _LZ4_BLOCK > dbuf.shape[0]:
            return native.ROOM
        if stored:
            dbuf[at : at + size] = data[pos : pos + size]
            at += size
        else:
            got = native.lz4_block(data, pos, size, dbuf, at, _LZ4_BLOCK)
            if got < 0:
                return native.BAD
            at += got
        if at - start > max_size:
            return native.BAD
        pos += size


def _inflate_chunk(
    data: np.ndarray, meta: np.ndarray, n: int, dbuf: np.ndarray, areas: np.ndarray, state: np.ndarray,
    max_bytes: int, max_size: int, codecs: int, zstd: np.ndarray,
) -> tuple[int, int]:
    """Decompress the payloads of batches ``state[0]..n-1`` into ``dbuf`` from ``state[1]``,
    writing each one's record area to ``areas``, and stop after the batch that passes ``max_bytes``:
    one call for a chunk, the codecs' C functions called from compiled code (:mod:`kafkalog.fast.native`).
    ``codecs`` has bit c set for each codec id c (lz4, zstd, gzip) this may decompress; ``zstd`` is the
    thread's decompression contexts. Returns (status, batch): 0 and the batches done, or ``_I_ROOM`` /
    ``_I_PYTHON`` and the batch to grow for or to hand over (any irregular batch, so that the codec
    module raises its precise errors); ``state`` says where to resume."""
    at = state[_STATE_AT]
    for i in range(state[_STATE_BATCH], n):
        state[_STATE_BATCH] = i
        state[_STATE_AT] = at
        count = meta[i, _M_COUNT]
        start = at
        if count:
            codec = meta[i, _M_ATTRS] & ATTR_COMPRESSION_MASK
            if not (codecs >> codec) & 1:
                return _I_PYTHON, i
            pos = meta[i, _M_POS] + HEADER_SIZE
            end = meta[i, _M_POS] + meta[i, _M_SIZE]
            if codec == Codec.NONE:  # a transaction marker among compressed batches: copied as it is
                if end - pos > max_size:
                    return _I_PYTHON, i
                if end - pos > dbuf.shape[0] - at:
                    return _I_ROOM, i
                dbuf[at : at + end - pos] = data[pos:end]
                at += end - pos
            elif codec == Codec.LZ4:  # else zstd or gzip, the only other codecs ``codecs`` may hold
                at = _lz4_frame(data, pos, end, dbuf, at, max_size)
            else:
                room = dbuf.shape[0] - at
                payload = native.gzip_members if codec == Codec.GZIP else native.zstd_frames
                got = payload(zstd, data, pos, end - pos, dbuf, at, min(room, max_size + 1))
                if got == native.ROOM and room > max_size:
                    got = native.BAD  # more than max_size bytes: the codec module says so
                at = got if got < 0 else at + got
                if got > max_size:
                    at = native.BAD
            if at == native.ROOM:
                return _I_ROOM, i
            if at < 0 or count > at - start:
                return _I_PYTHON, i
        areas[i, 0] = start
        areas[i, 1] = at
        if at > max_bytes:
            state[_STATE_BATCH] = i + 1
            state[_STATE_AT] = at
            return 0, i + 1
    state[_STATE_BATCH] = n
    state[_STATE_AT] = at
    return 0, n


def _inflate_batch(data: np.ndarray, origin: int, meta: np.ndarray, i: int, reader: LogReader, dbuf: np.ndarray, at: int) -> tuple[np.ndarray, int]:
    """Decompress batch ``i`` into ``dbuf`` from ``at`` with the codec module, raising its errors
    (located at the batch) or a bad record count. Returns (the buffer, possibly grown; the end)."""
    p, size, attrs, count, base_offset = (int(x) for x in meta[i, :5])
    try:
        dbuf, end = decompress_into(_CODECS[attrs & ATTR_COMPRESSION_MASK], memoryview(data)[p + HEADER_SIZE : p + size], dbuf, at,
                                    magic=2, max_size=reader.max_decompressed_size)
    except KafkaLogError as e:
        raise e.located(file=reader.name, position=origin + p, offset=base_offset) from None
    if count > end - at:
        raise InvalidRecordError(f"invalid record count {count}", file=reader.name, position=origin + p, offset=base_offset)
    return dbuf, end


def _native_codecs() -> int:
    """Bit c set for each codec id c that :func:`_inflate_chunk` decompresses itself (it copies
    uncompressed batches, the transaction markers between compressed ones, itself too)."""
    return 1 << Codec.NONE | (int(native.LZ4) << Codec.LZ4) | (int(native.ZSTD) << Codec.ZSTD) | (int(native.GZIP) << Codec.GZIP)


def _compressed_chunk(
    data: np.ndarray, origin: int, meta: np.ndarray, n: int, reader: LogReader, max_bytes: int, dbuf: np.ndarray, headers: bool,
    scratch: _Scratch, views: bool,
) -> tuple[ChunkColumns, int, np.ndarray]:
    """Decompress batches ``0..n-1`` one after another into ``dbuf`` (grown as needed, reused by
    later chunks), stopping after the batch that passes ``max_bytes``, then walk them in one
    compiled call (walking each group as it was decompressed measured slower). lz4, zstd and gzip
    batches are decompressed by one compiled call (:func:`_inflate_chunk`); other batches, and
    any it finds irregular, by the codec module. With ``views``, keys and values are views into
    ``dbuf``, which the chunk then owns. Returns (columns, batches used, the buffer)."""
    areas = np.zeros((n, 2), np.int64)  # record area of each batch in dbuf
    state = np.zeros(2, np.int64)
    codecs = _native_codecs()
    zstd = native.zstd_dctx()
    max_size = reader.max_decompressed_size
    while True:
        status, i = kernels.inflate_chunk(data, meta, n, dbuf, areas, state, max_bytes, max_size, codecs, zstd)
        if status == 0:
            used = i
            break
        at = int(state[_STATE_AT])
        if status == _I_ROOM:
            # double (at least 1 MiB), within what one batch may need: max_size and an lz4 block
            want = min(max(2 * len(dbuf), at + (1 << 20)), at + max_size + 2 * _LZ4_BLOCK)
            dbuf = _grown_bytes(dbuf, at, want)
            continue
        dbuf, end = _inflate_batch(data, origin, meta, i, reader, dbuf, at)
        areas[i] = at, end
        state[_STATE_BATCH], state[_STATE_AT] = i + 1, end
        if end > max_bytes:
            used = i + 1
            break
    d = int(areas[used - 1, 1])
    walk = _ChunkWalk(dbuf, origin, meta, reader, headers, scratch, max(d, 1 << 16), (0, d) if views else None)
    walk.walk(areas[:used], used, int(meta[:used, _M_COUNT].sum()), compressed=True)
    return walk.columns(used), used, dbuf


def _grown_bytes(buf: np.ndarray, used: int, size: int) -> np.ndarray:
    """A buffer of ``size`` bytes holding ``buf[:used]``."""
    bigger = np.empty(size, np.uint8)
    bigger[:used] = buf[:used]
    return bigger


# ------------------------------------------------------------------------------ kafkalog verify's kernels
# kafkalog.tools.validate frames whole files and walks the records of uncompressed batches with these
# (through :data:`kernels`); its status codes besides the walker's:
_E_OFFSET_ORDER = -20
_E_OFFSET_DELTA = -21
_E_COUNT = -22
_I64_MIN = -(2**63)


def _frame(buf: np.ndarray, end: int, positions: np.ndarray, fill: bool) -> tuple[int, int, int]:
    """Frame the log entries of ``buf[:end]`` from byte 0 as Kafka's FileLogInputStream does
    (R-LOG-03 to R-LOG-05). Returns (entries, stop position, stop status): 0 clean end, 1 torn
    tail, 2 size below the minimum. With ``fill`` the entry positions are written to ``positions``."""
    pos = 0
    n = 0
    while True:
        if end - pos < _HEADER_UP_TO_MAGIC:
            return n, pos, 0 if pos >= end else 1
        size = _be32(buf, pos + 8)
        if size < _MIN_ENTRY_SIZE:
            return n, pos, 2
        if pos + 12 + size > end:
            return n, pos, 1
        if fill:
            positions[n] = pos
        n += 1
        pos += 12 + size


def _verify_records(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray, last_delta: np.ndarray, status: np.ndarray,
    where: np.ndarray, max_delta: np.ndarray,
) -> None:
    """Walk the records of uncompressed v2 batches (record area ``buf[starts[i]:ends[i]]``) as
    DefaultRecord.readFrom reads them (R-REC-02, R-REC-03, R-REC-06, R-REC-08, R-PRIM-03,
    R-PRIM-04); per batch: status (0 ok), error position, largest timestamp delta."""
    for i in range(starts.shape[0]):
        pos = starts[i]
        end_b = ends[i]
        count = counts[i]
        status[i] = 0
        max_delta[i] = _I64_MIN
        if count < 0 or count > end_b - pos:
            status[i] = _E_COUNT
            where[i] = pos
            continue
        prev = np.int64(-1)
        start = pos
        for _ in range(count):
            start = pos
            pos, end, _attrs, tsd, od = _record_prefix(buf, pos, end_b)
            if pos < 0:
                break
            if od <= prev:
                pos = _E_OFFSET_ORDER
                break
            if od > last_delta[i]:
                pos = _E_OFFSET_DELTA
                break
            prev = od
            if tsd > max_delta[i]:
                max_delta[i] = tsd
            _kl, _ks, _vl, _vs, pos = _key_value(buf, pos, end)
            if pos < 0:
                break
            nh, pos = _header_count(buf, pos, end)
            for _h in range(nh if pos >= 0 else 0):
                _hk, _hks, _hv, _hvs, pos = _header(buf, pos, end)
                if pos < 0:
                    break
            if pos >= 0 and pos != end:
                pos = _E_SIZE_MISMATCH
            if pos < 0:
                break
        if pos < 0:
            status[i] = pos
            where[i] = start
            continue
        if pos != end_b:
            status[i] = _E_LEFTOVER
            where[i] = pos


# ------------------------------------------------------------------------------ the two implementations
@dataclass(frozen=True)
class Kernels:
    """One implementation of the kernels: compiled (:mod:`kafkalog.fast._columnar`) or the plain
    Python of this module. Both take the same arguments and return the same values."""

    name: str
    walk: Callable[..., tuple[int, int, int]]  # one record area (decode_columns)
    gather: Callable[..., int]  # spans to Arrow (offsets, data)
    frame_chunk: Callable[..., tuple[int, int, int, int]]  # a chunk's v2 batches
    walk_chunk: Callable[..., tuple[int, int, int]]  # a chunk's records, keys and values
    inflate_chunk: Callable[..., tuple[int, int]]  # a chunk's lz4, zstd and gzip payloads
    frame: Callable[..., tuple[int, int, int]]  # kafkalog verify: a whole file's entries
    verify_records: Callable[..., None]  # kafkalog verify: the records of uncompressed batches


#: The plain-Python kernels (the reference: what the compiled ones are held to).
PURE = Kernels("pure-python", _walk, _gather, _frame_chunk, _walk_chunk, _inflate_chunk, _frame, _verify_records)


def _compiled_kernels() -> Kernels | None:
    c = fast.compiled("_columnar")
    if c is None:
        return None

    def inflate_chunk(
        data: np.ndarray, meta: np.ndarray, n: int, dbuf: np.ndarray, areas: np.ndarray, state: np.ndarray,
        max_bytes: int, max_size: int, codecs: int, zstd: np.ndarray,
    ) -> tuple[int, int]:
        # the codec calls are kafkalog.fast.native's, looked up on each call as the plain twin does
        return c._inflate_chunk(data, meta, n, dbuf, areas, state, max_bytes, max_size, codecs, zstd, _KAFKA_LZ4_HEADER,
                                native.lz4_block, native.zstd_frames, native.gzip_members)  # type: ignore[no-any-return]

    return Kernels("c-extension", c._walk, c.gather, c._frame_chunk, c._walk_chunk, inflate_chunk, c._frame, c._verify_records)


#: The compiled kernels, or None when they were not built or ``KAFKALOG_NO_EXTENSIONS`` is set.
COMPILED = _compiled_kernels()
#: The kernels in use: :data:`COMPILED` when there, else :data:`PURE`.
kernels = COMPILED or PURE
