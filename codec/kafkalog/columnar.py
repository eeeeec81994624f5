"""Columnar decoding of v2 record batches: record areas straight to arrays, no object per record.

One function walks a batch's (decompressed) record area and writes each record's offset delta,
timestamp delta and the byte spans of its key, value and headers into numpy arrays; another
gathers spans into contiguous Arrow-style (offsets, data) buffers. Both are plain Python that
numba compiles (cached) when it is installed; ``KAFKALOG_NO_NUMBA=1`` forces the plain path. The
record layout is ``schemas.RECORD_V2``; tests hold both paths to the object decoder.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidRecordError
from .records.legacy import LegacyBatch
from .records.stream import Batch
from .records.v2 import ATTR_COMPRESSION_MASK, ATTR_TIMESTAMP_TYPE, HEADER_SIZE, RecordBatch

__all__ = ["ACCELERATED", "BatchColumns", "decode_columns", "gather", "iter_columns"]


def _identity(f: Callable[..., Any]) -> Callable[..., Any]:
    return f


try:  # pragma: no cover - depends on the environment
    if os.environ.get("KAFKALOG_NO_NUMBA"):
        raise ImportError("disabled by KAFKALOG_NO_NUMBA")
    import numba

    _jit = numba.njit(cache=True, nogil=True, boundscheck=False)
    #: For small helpers such as varint readers: numba-level inlining speeds the walks up by a quarter.
    _jit_inline = numba.njit(cache=True, nogil=True, boundscheck=False, inline="always")
    ACCELERATED = True
except ImportError:  # pragma: no cover
    _jit = _jit_inline = _identity
    ACCELERATED = False

# Error codes returned by the walker (negative): mapped to messages in _raise.
_E_TRUNCATED = -1
_E_VARINT = -2
_E_LENGTH = -3
_E_FIELD = -4
_E_HEADERS = -5
_E_LEFTOVER = -6
_E_SIZE_MISMATCH = -7


@_jit_inline
def _varint(buf: np.ndarray, pos: int, end: int, max_bytes: int) -> tuple[int, int]:
    """Zig-zag varint at ``pos``; returns (value, next position), next position < 0 on error.

    Accumulates in uint64 so that 10-byte varlongs keep all 64 bits, as Java's do."""
    result = np.uint64(0)
    shift = np.uint64(0)
    for _ in range(max_bytes):
        if pos >= end:
            return np.int64(0), _E_TRUNCATED
        b = np.uint64(buf[pos])
        pos += 1
        result |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            return np.int64(result >> np.uint64(1)) ^ -np.int64(result & np.uint64(1)), pos
        shift += np.uint64(7)
    return np.int64(0), _E_VARINT


@_jit
def _walk(buf: np.ndarray, count: int, cols: np.ndarray, hdr: np.ndarray, fill_headers: bool) -> tuple[int, int, int]:
    """Walk ``count`` records, writing their fields to the rows of ``cols`` (offset delta,
    timestamp delta, key start, key length, value start, value length, header count, record
    start, attributes: one argument rather than nine, as numba's dispatch costs per argument).
    Returns (status, position, headers seen); status 0 is success."""
    off_delta, ts_delta, key_start, key_len, val_start, val_len, hdr_count, rec_start, attrs = (
        cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8]
    )
    n = buf.shape[0]
    pos = 0
    nh_total = 0
    for i in range(count):
        start = pos
        rec_start[i] = start
        length, pos = _varint(buf, pos, n, 5)
        if pos < 0:
            return pos, start, nh_total
        end = pos + length
        if length < 0 or end > n:
            return _E_LENGTH, start, nh_total
        if pos >= end:
            return _E_FIELD, start, nh_total
        attrs[i] = buf[pos]
        pos += 1
        v, pos = _varint(buf, pos, end, 10)
        if pos < 0:
            return pos, start, nh_total
        ts_delta[i] = v
        v, pos = _varint(buf, pos, end, 5)
        if pos < 0:
            return pos, start, nh_total
        off_delta[i] = v
        v, pos = _varint(buf, pos, end, 5)
        if pos < 0:
            return pos, start, nh_total
        key_start[i] = pos
        key_len[i] = v
        if v > 0:
            pos += v
        if pos > end:
            return _E_FIELD, start, nh_total
        v, pos = _varint(buf, pos, end, 5)
        if pos < 0:
            return pos, start, nh_total
        val_start[i] = pos
        val_len[i] = v
        if v > 0:
            pos += v
        if pos > end:
            return _E_FIELD, start, nh_total
        nh, pos = _varint(buf, pos, end, 5)
        if pos < 0:
            return pos, start, nh_total
        if nh < 0 or nh > end - pos:
            return _E_HEADERS, start, nh_total
        hdr_count[i] = nh
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
            if fill_headers:
                hdr[nh_total, 0] = ks
                hdr[nh_total, 1] = hk
                hdr[nh_total, 2] = vs
                hdr[nh_total, 3] = hv
            nh_total += 1
        if pos != end:
            return _E_SIZE_MISMATCH, start, nh_total
    if pos != n:
        return _E_LEFTOVER, pos, nh_total
    return 0, pos, nh_total


@_jit
def gather(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, offsets: np.ndarray, data: np.ndarray, base: int) -> int:
    """Copy spans ``buf[starts[i]:starts[i]+lens[i]]`` (null when len < 0) into ``data`` at
    ``base``, writing Arrow offsets (``offsets[i+1]``); returns the new end of ``data``."""
    pos = base
    k = offsets.shape[0] - starts.shape[0] - 1
    for i in range(starts.shape[0]):
        ln = lens[i]
        if ln > 0:
            # unsigned indices: numba then compiles a tight copy loop (slicing here was ~20x slower)
            d = np.uint64(pos)
            s = np.uint64(starts[i])
            for j in range(np.uint64(ln)):
                data[d + j] = buf[s + j]
            pos += ln
        offsets[k + i + 1] = pos
    return pos


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
class BatchColumns:
    """The records of one batch as arrays over its record buffer ``buf`` (uint8)."""

    buf: np.ndarray
    offsets: np.ndarray  # int64, absolute
    timestamps: np.ndarray  # int64, ms, as Kafka reports them
    key_start: np.ndarray
    key_len: np.ndarray  # -1: null
    val_start: np.ndarray
    val_len: np.ndarray
    hdr_count: np.ndarray
    headers: np.ndarray  # (n, 4): key start, key len, value start, value len (-1: null)
    batch: Batch  # the batch these columns came from (its header fields apply to every row)
    raw: bytes = b""  # ``buf`` as bytes (slicing it gives keys and values without a copy through numpy)
    rec_start: np.ndarray | None = None  # each record's first byte in ``buf``
    attrs: np.ndarray | None = None  # each record's attributes byte
    create_timestamps: np.ndarray | None = None  # each record's stored timestamp (base + delta)

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def timestamp_type_id(self) -> int:
        """Spark's timestampType: 0 CreateTime, 1 LogAppendTime, -1 none (magic 0)."""
        t = self.batch.timestamp_type.value
        return 1 if t == "LogAppendTime" else 0 if t == "CreateTime" else -1


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
    status, where, nh = _walk(buf, count, i64, hdr, False)
    if status == 0 and nh:
        hdr = np.empty((nh, 4), dtype=np.int64)
        status, where, nh = _walk(buf, count, i64, hdr, True)
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
