"""Record objects from the compiled record walk, built in bulk by the C unpickler.

Creating a Python object per field (two ``bytes`` and a few ints per record) costs more than
walking the records. Here the walker, compiled by numba like :mod:`kafkalog.columnar`, writes
every field of every record as a protocol-4 pickle stream that builds one flat list: keys and
values as length-prefixed byte copies, numbers as ints, repeated values (a timestamp shared by
the records of one millisecond, equal record sizes, ``()`` and ``-1``) as memo references.
``pickle.loads`` turns it into objects at C speed and ``map(Record, ...)`` makes the records,
lazily when iterating, so that records already used can be freed before the next are made.

The stream is written only by :func:`_emit` and holds only these opcodes: PROTO, EMPTY_LIST,
MARK, APPENDS, STOP, BININT1, BININT, LONG1, SHORT_BINBYTES, BINBYTES, NONE, EMPTY_TUPLE, TUPLE,
TUPLE2, SHORT_BINUNICODE, BINPUT, BINGET, POP: no GLOBAL, REDUCE or BUILD, so it can neither
import nor call anything, whatever the input. Input bytes only ever appear inside a length
prefix the walker has checked. Records the walker is not sure of (any structural problem,
non-ASCII header keys, offsets past int64) go to the plain decoder, so errors and edge cases
are the plain decoder's. ``KAFKALOG_NO_NUMBA=1`` runs the same source as plain Python (slow;
the object path then uses ``records_plain``); tests hold both against ``records_plain``.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator

import numpy as np

from .columnar import ACCELERATED, _jit, _jit_inline
from .records.record import Record
from .records.v2 import ATTR_TIMESTAMP_TYPE, RecordBatch

__all__ = ["iter_records", "records"]

#: Fields per record in the flat list, in the order of ``Record.__init__``'s parameters.
FIELDS = 9

# pickle opcodes (see the stdlib's pickletools for their definitions)
_PROTO = 0x80
_EMPTY_LIST = ord("]")
_MARK = ord("(")
_APPENDS = ord("e")
_STOP = ord(".")
_BININT1 = ord("K")
_BININT = ord("J")
_LONG1 = 0x8A
_SHORT_BINBYTES = ord("C")
_BINBYTES = ord("B")
_NONE = ord("N")
_EMPTY_TUPLE = ord(")")
_TUPLE = ord("t")
_TUPLE2 = 0x86
_SHORT_BINUNICODE = 0x8C
_BINUNICODE = ord("X")
_BINPUT = ord("q")
_BINGET = ord("h")
_POP = ord("0")

# memo slots
_M_EMPTY = 0  # ()
_M_MINUS1 = 1  # -1 (no sequence)
_M_TS = 2  # the last timestamp written
_M_SIZE = 3  # the last record size written
_M_LAT = 4  # the batch's LogAppendTime

# statuses of _emit
_OK = 0
_FALLBACK = -1  # let the plain decoder handle this batch (and raise its errors)
_NO_ROOM = -2  # the output buffer is too small: retry with a bigger one

#: Upper bound on the stream bytes one record adds besides its key, value and header bytes.
_PER_RECORD = 80
#: Upper bound on the stream bytes per byte of a header (each header takes at least 2 bytes).
_PER_HEADER_BYTE = 6

_I32_MAX = 2**31 - 1
_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)


@_jit_inline
def _uvarint(buf: np.ndarray, pos: int, end: int, max_bytes: int) -> tuple[int, int, bool]:
    """Unsigned varint at ``pos`` (bytes before ``end``); returns (zig-zag decoded value, next
    position, ok). Not ok: truncated, too long, or more than 64 bits (Python rejects those)."""
    result = np.uint64(0)
    shift = np.uint64(0)
    for i in range(max_bytes):
        if pos >= end:
            return 0, pos, False
        b = np.uint64(buf[pos])
        pos += 1
        if i == 9 and b > np.uint64(1):
            return 0, pos, False
        result |= (b & np.uint64(0x7F)) << shift
        if b < np.uint64(0x80):
            return np.int64(result >> np.uint64(1)) ^ -np.int64(result & np.uint64(1)), pos, True
        shift += np.uint64(7)
    return 0, pos, False


@_jit_inline
def _varint32(buf: np.ndarray, pos: int, end: int) -> tuple[int, int, bool]:
    """A varint (at most 5 bytes) holding an int32, as Kafka's readVarint accepts it."""
    v, pos, ok = _uvarint(buf, pos, end, 5)
    if ok and (v < -2147483648 or v > 2147483647):
        ok = False
    return v, pos, ok


@_jit
def _put_int(out: np.ndarray, o: int, v: int) -> int:
    """Write ``v`` as BININT1, BININT or LONG1 (8 bytes, two's complement); return the new end."""
    if 0 <= v < 256:
        out[o] = _BININT1
        out[o + 1] = v
        return o + 2
    # v >> s & 0xFF: the two's complement bytes of v, little-endian (>> is arithmetic)
    if -2147483648 <= v <= 2147483647:
        out[o] = _BININT
        for k in range(4):
            out[o + 1 + k] = (v >> (8 * k)) & 0xFF
        return o + 5
    out[o] = _LONG1
    out[o + 1] = 8
    for k in range(8):
        out[o + 2 + k] = (v >> (8 * k)) & 0xFF
    return o + 10


@_jit
def _put_len(out: np.ndarray, o: int, short_op: int, long_op: int, n: int) -> int:
    """An opcode with a 1-byte length when ``n`` < 256, else its 4-byte form."""
    if n < 256:
        out[o] = short_op
        out[o + 1] = n
        return o + 2
    out[o] = long_op
    out[o + 1] = n & 0xFF
    out[o + 2] = (n >> 8) & 0xFF
    out[o + 3] = (n >> 16) & 0xFF
    out[o + 4] = (n >> 24) & 0xFF
    return o + 5


@_jit
def _copy(out: np.ndarray, o: int, buf: np.ndarray, s: int, n: int) -> int:
    """Copy ``buf[s:s+n]`` to ``out[o:]`` (unsigned indices: numba then emits a tight loop)."""
    uo = np.uint64(o)
    us = np.uint64(s)
    for k in range(np.uint64(n)):
        out[uo + k] = buf[us + k]
    return o + n


@_jit
def _put_memo(out: np.ndarray, o: int, op: int, slot: int) -> int:
    out[o] = op
    out[o + 1] = slot
    return o + 2


@_jit
def _emit(
    buf: np.ndarray,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int,
    has_log_append_time: bool,
    base_sequence: int,
    out: np.ndarray,
) -> tuple[int, int]:
    """Write the pickle stream of ``count`` records of the record area ``buf`` into ``out``.

    Returns (status, stream length); status is _OK, _FALLBACK or _NO_ROOM."""
    n = buf.shape[0]
    cap = out.shape[0]
    o = 0
    out[0] = _PROTO
    out[1] = 4
    out[2] = _EMPTY_TUPLE
    o = _put_memo(out, 3, _BINPUT, _M_EMPTY)
    out[o] = _POP
    o = _put_int(out, o + 1, -1)
    o = _put_memo(out, o, _BINPUT, _M_MINUS1)
    out[o] = _POP
    o += 1
    if has_log_append_time:
        o = _put_int(out, o, log_append_time)
        o = _put_memo(out, o, _BINPUT, _M_LAT)
        out[o] = _POP
        o += 1
    out[o] = _EMPTY_LIST
    out[o + 1] = _MARK
    o += 2
    last_ts = np.int64(0)
    have_ts = False
    last_size = -1
    pos = 0
    for _i in range(count):
        if o + _PER_RECORD > cap:
            return _NO_ROOM, o
        start = pos
        length, pos, ok = _varint32(buf, pos, n)
        if not ok or length < 0 or pos + length > n or length == 0:
            return _FALLBACK, o
        end = pos + length
        attrs = buf[pos]
        pos += 1
        ts_delta, pos, ok = _uvarint(buf, pos, end, 10)
        if not ok:
            return _FALLBACK, o
        off_delta, pos, ok = _varint32(buf, pos, end)
        if not ok:
            return _FALLBACK, o
        if (off_delta > 0 and base_offset > _I64_MAX - off_delta) or (off_delta < 0 and base_offset < _I64_MIN - off_delta):
            return _FALLBACK, o  # the offset leaves int64: the plain decoder's Python ints say what it is
        klen, pos, ok = _varint32(buf, pos, end)
        if not ok:
            return _FALLBACK, o
        kstart = pos
        if klen > 0:
            pos += klen
            if pos > end:
                return _FALLBACK, o
        vlen, pos, ok = _varint32(buf, pos, end)
        if not ok:
            return _FALLBACK, o
        vstart = pos
        if vlen > 0:
            pos += vlen
            if pos > end:
                return _FALLBACK, o
        nh, pos, ok = _varint32(buf, pos, end)
        if not ok or nh < 0 or nh > end - pos:
            return _FALLBACK, o
        hstart = pos
        for _h in range(nh):  # validate the headers before writing anything of this record
            hk, pos, ok = _varint32(buf, pos, end)
            if not ok or hk < 0 or pos + hk > end:
                return _FALLBACK, o
            for k in range(pos, pos + hk):
                if buf[k] >= 0x80:
                    return _FALLBACK, o  # non-ASCII key: the plain decoder's "replace" decoding
            pos += hk
            hv, pos, ok = _varint32(buf, pos, end)
            if not ok:
                return _FALLBACK, o
            if hv > 0:
                pos += hv
                if pos > end:
                    return _FALLBACK, o
        if pos != end:
            return _FALLBACK, o
        if o + _PER_RECORD + (klen if klen > 0 else 0) + (vlen if vlen > 0 else 0) + _PER_HEADER_BYTE * (end - hstart) > cap:
            return _NO_ROOM, o
        # offset
        o = _put_int(out, o, base_offset + off_delta)
        # timestamp (the batch's under LogAppendTime); the record's own one is also create_timestamp
        ts = base_timestamp + ts_delta  # int64 arithmetic wraps, as Java's long does
        if has_log_append_time:
            o = _put_memo(out, o, _BINGET, _M_LAT)
        elif have_ts and ts == last_ts:
            o = _put_memo(out, o, _BINGET, _M_TS)
        else:
            o = _put_int(out, o, ts)
            o = _put_memo(out, o, _BINPUT, _M_TS)
            last_ts = ts
            have_ts = True
        # key, value
        if klen < 0:
            out[o] = _NONE
            o += 1
        else:
            o = _put_len(out, o, _SHORT_BINBYTES, _BINBYTES, klen)
            o = _copy(out, o, buf, kstart, klen)
        if vlen < 0:
            out[o] = _NONE
            o += 1
        else:
            o = _put_len(out, o, _SHORT_BINBYTES, _BINBYTES, vlen)
            o = _copy(out, o, buf, vstart, vlen)
        # headers: () or a tuple of (str, bytes | None)
        if nh == 0:
            o = _put_memo(out, o, _BINGET, _M_EMPTY)
        else:
            out[o] = _MARK
            o += 1
            hp = hstart
            for _h in range(nh):
                hk, hp, ok = _varint32(buf, hp, end)
                o = _put_len(out, o, _SHORT_BINUNICODE, _BINUNICODE, hk)
                o = _copy(out, o, buf, hp, hk)
                hp += hk
                hv, hp, ok = _varint32(buf, hp, end)
                if hv < 0:
                    out[o] = _NONE
                    o += 1
                else:
                    o = _put_len(out, o, _SHORT_BINBYTES, _BINBYTES, hv)
                    o = _copy(out, o, buf, hp, hv)
                    hp += hv
                out[o] = _TUPLE2
                o += 1
            out[o] = _TUPLE
            o += 1
        # sequence (Kafka wraps it past Int32.MAX_VALUE to 0)
        if base_sequence < 0:
            o = _put_memo(out, o, _BINGET, _M_MINUS1)
        elif base_sequence > _I32_MAX - off_delta:
            o = _put_int(out, o, off_delta - (_I32_MAX - base_sequence) - 1)
        else:
            o = _put_int(out, o, base_sequence + off_delta)
        # size in bytes, attributes, create timestamp
        size = pos - start
        if size == last_size:
            o = _put_memo(out, o, _BINGET, _M_SIZE)
        else:
            o = _put_int(out, o, size)
            o = _put_memo(out, o, _BINPUT, _M_SIZE)
            last_size = size
        o = _put_int(out, o, attrs)
        if has_log_append_time:
            if have_ts and ts == last_ts:
                o = _put_memo(out, o, _BINGET, _M_TS)
            else:
                o = _put_int(out, o, ts)
                o = _put_memo(out, o, _BINPUT, _M_TS)
                last_ts = ts
                have_ts = True
        else:
            o = _put_memo(out, o, _BINGET, _M_TS)
    if pos != n:
        return _FALLBACK, o
    if o + 2 > cap:
        return _NO_ROOM, o
    out[o] = _APPENDS
    out[o + 1] = _STOP
    return _OK, o + 2


def _fields(batch: RecordBatch) -> list | None:
    """Every record's fields in one flat list (FIELDS per record), or None when the plain
    decoder must read this batch."""
    count = batch.count
    if count <= 0:
        return None
    raw = batch.records_buffer()
    if count > len(raw):
        return None
    buf = np.frombuffer(raw, dtype=np.uint8)
    lat = batch.attributes & ATTR_TIMESTAMP_TYPE != 0
    size = len(raw) + _PER_RECORD * count + 64
    for _attempt in range(2):
        out = np.empty(size, dtype=np.uint8)
        status, end = _emit(
            buf, count, batch.base_offset, batch.base_timestamp, batch.max_timestamp, lat, batch.base_sequence, out
        )
        if status == _OK:
            return pickle.loads(out[:end])
        if status != _NO_ROOM:
            return None
        size = (_PER_HEADER_BYTE + 1) * len(raw) + _PER_RECORD * count + 64  # big enough for any headers
    return None


def records(batch: RecordBatch) -> list[Record]:
    """``batch.records()`` (no CRC check) through the compiled walker; same values and errors."""
    flat = _fields(batch) if ACCELERATED else None
    if flat is None:
        return batch.records_plain()
    it = iter(flat)
    return list(map(Record, it, it, it, it, it, it, it, it, it))


def iter_records(batch: RecordBatch) -> Iterator[Record]:
    """Like :func:`records`, but each :class:`Record` is made as iteration reaches it."""
    flat = _fields(batch) if ACCELERATED else None
    if flat is None:
        return iter(batch.records_plain())
    it = iter(flat)
    return map(Record, it, it, it, it, it, it, it, it, it)

