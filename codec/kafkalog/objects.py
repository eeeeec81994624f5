"""Record objects from the compiled record walk, built in bulk by the C unpickler.

Creating a Python object per field (two ``bytes`` and a few ints per record) costs more than
walking the records. Here the walker, compiled by numba like :mod:`kafkalog.columnar`, writes
the fields that vary from record to record as a protocol-4 pickle stream that builds one flat
list: keys and values as length-prefixed byte copies, numbers as ints, repeated values (a
timestamp shared by the records of one millisecond, equal record sizes, ``()``) as memo
references. Fields that a batch's header fixes, or that the walker found constant (consecutive
offsets, no headers, zero attributes: the *layout*), stay out of the stream and come from
``range`` and ``itertools.repeat``. ``pickle.loads`` turns the stream into objects at C speed and
tuple's constructor over ``zip`` makes each record (a :class:`Record` is a tuple), lazily
when iterating, so that records already used can be freed before the next are made: no Python
code runs per record.

The stream is written only by :func:`_emit` and holds only these opcodes: PROTO, EMPTY_LIST,
MARK, APPENDS, STOP, BININT1, BININT, LONG1, SHORT_BINBYTES, BINBYTES, NONE, EMPTY_TUPLE, TUPLE,
TUPLE2, SHORT_BINUNICODE, BINUNICODE, BINPUT, BINGET, POP: no GLOBAL, REDUCE or BUILD, so it can
neither import nor call anything, whatever the input. Input bytes only ever appear inside a length
prefix the walker has checked. Varints are read as Kafka's ByteUtils reads them (a varint keeps
the low 32 bits of at most 5 bytes, a varlong the low 64 bits of at most 10), where the plain
decoder rejects the bits past those. Records the walker is not sure of (any structural problem,
non-ASCII header keys, offsets past int64) go to the plain decoder, so the errors are its own. ``KAFKALOG_NO_NUMBA=1`` runs the same
source as plain Python (slow; the object path then uses ``records_plain``); tests hold both
against ``records_plain``.
"""

from __future__ import annotations

import pickle
import threading
from collections.abc import Iterator
from itertools import repeat

import numpy as np

from .columnar import ACCELERATED, _jit, _jit_inline, _varint
from .records.record import Record
from .records.v2 import ATTR_COMPRESSION_MASK, ATTR_TIMESTAMP_TYPE, HEADER_SIZE, RecordBatch

__all__ = ["iter_records", "records"]

# layout bits: fields written to the stream although often constant (else range / repeat)
_L_OFFSET = 1  # offsets (else base_offset + i: consecutive)
_L_HEADERS = 2  # headers (else ())
_L_ATTRIBUTES = 4  # record attributes (else 0)
_L_ALL = _L_OFFSET | _L_HEADERS | _L_ATTRIBUTES

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
_M_TS = 2  # the last timestamp written
_M_SIZE = 3  # the last record size written

# statuses of _emit
_OK = 0
_FALLBACK = -1  # let the plain decoder handle this batch (and raise its errors)
_NO_ROOM = -2  # the output buffer is too small: retry with a bigger one
_RELAYOUT = -3  # a record needs a field the layout leaves out: retry with _L_ALL

#: Upper bound on the stream bytes one record adds besides its key, value and header bytes.
_PER_RECORD = 80
#: Upper bound on the stream bytes per byte of a header (each header takes at least 2 bytes).
_PER_HEADER_BYTE = 6

_I32_MAX = 2**31 - 1
_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)


@_jit_inline
def _varlong(buf: np.ndarray, pos: int, end: int) -> tuple[int, int, bool]:
    """A zig-zag varlong (at most 10 bytes), read by the columnar reader (ByteUtils' rules): (value, next position, ok)."""
    v, p = _varint(buf, pos, end, 10)
    return v, p, p >= 0


@_jit_inline
def _varint32(buf: np.ndarray, pos: int, end: int) -> tuple[int, int, bool]:
    """A zig-zag varint (at most 5 bytes; the low 32 bits, as ByteUtils keeps them), read by the columnar reader."""
    v, p = _varint(buf, pos, end, 5)
    return v, p, p >= 0


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
    buf: bytes,
    start: int,
    count: int,
    base_offset: int,
    base_timestamp: int,
    has_log_append_time: bool,
    base_sequence: int,
    layout: int,
    out: np.ndarray,
) -> tuple[int, int]:
    """Write the pickle stream of ``count`` records of the record area ``buf[start:]`` into ``out``:
    per record, in Record's field order, the fields that :func:`_columns` does not supply itself.

    Returns (status, stream length); status is _OK, _FALLBACK, _NO_ROOM or _RELAYOUT."""
    n = len(buf)
    cap = out.shape[0]
    o = 0
    out[0] = _PROTO
    out[1] = 4
    out[2] = _EMPTY_TUPLE
    o = _put_memo(out, 3, _BINPUT, _M_EMPTY)
    out[o] = _POP
    o += 1
    out[o] = _EMPTY_LIST
    out[o + 1] = _MARK
    o += 2
    with_offsets = layout & _L_OFFSET != 0
    with_headers = layout & _L_HEADERS != 0
    with_attributes = layout & _L_ATTRIBUTES != 0
    last_ts = np.int64(0)
    have_ts = False
    last_size = -1
    pos = start
    for i in range(count):
        if o + _PER_RECORD > cap:
            return _NO_ROOM, o
        record_start = pos
        length, pos, ok = _varint32(buf, pos, n)
        if not ok or length <= 0 or pos + length > n:
            return _FALLBACK, o
        end = pos + length
        attrs = buf[pos]
        pos += 1
        ts_delta, pos, ok = _varlong(buf, pos, end)
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
        if (not with_offsets and off_delta != i) or (not with_headers and nh != 0) or (not with_attributes and attrs != 0):
            return _RELAYOUT, o
        if o + _PER_RECORD + (klen if klen > 0 else 0) + (vlen if vlen > 0 else 0) + _PER_HEADER_BYTE * (end - hstart) > cap:
            return _NO_ROOM, o
        if with_offsets:
            o = _put_int(out, o, base_offset + off_delta)
        # the record's own timestamp: Record's timestamp (CreateTime) and create_timestamp
        ts = base_timestamp + ts_delta  # int64 arithmetic wraps, as Java's long does
        if have_ts and ts == last_ts:
            ts_op = _BINGET
        else:
            o = _put_int(out, o, ts)
            ts_op = _BINPUT
            last_ts = ts
            have_ts = True
        if not has_log_append_time:  # else Record's timestamp is the batch's (a repeat)
            o = _put_memo(out, o, ts_op, _M_TS)
        elif ts_op == _BINPUT:
            o = _put_memo(out, o, _BINPUT, _M_TS)
            out[o] = _POP
            o += 1
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
        if with_headers:
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
        # sequence, only with a producer (else -1); Kafka wraps it past Int32.MAX_VALUE to 0
        if base_sequence >= 0:
            if base_sequence > _I32_MAX - off_delta:
                o = _put_int(out, o, off_delta - (_I32_MAX - base_sequence) - 1)
            else:
                o = _put_int(out, o, base_sequence + off_delta)
        # size in bytes, attributes, create timestamp
        size = pos - record_start
        if size == last_size:
            o = _put_memo(out, o, _BINGET, _M_SIZE)
        else:
            o = _put_int(out, o, size)
            o = _put_memo(out, o, _BINPUT, _M_SIZE)
            last_size = size
        if with_attributes:
            o = _put_int(out, o, attrs)
        o = _put_memo(out, o, _BINGET, _M_TS)
    if pos != n:
        return _FALLBACK, o
    if o + 2 > cap:
        return _NO_ROOM, o
    out[o] = _APPENDS
    out[o + 1] = _STOP
    return _OK, o + 2


#: Largest output buffer kept for reuse by a thread (bigger ones are made per batch).
_KEEP_BYTES = 8 << 20
_local = threading.local()
#: ``Record(fields)`` as type.__call__ does it: tuple's C constructor, no Python code (Record's
#: metaclass, which takes the constructor's parameters, is bypassed).
_make_record = type.__call__.__get__(Record)


def _out_buffer(size: int) -> tuple[np.ndarray, memoryview]:
    """An output buffer of at least ``size`` bytes and a memoryview of it: this thread's reusable
    one when small enough (the unpickler copies what it needs, so the next batch may overwrite it)."""
    got = getattr(_local, "out", None)
    if got is not None and got[0].shape[0] >= size:
        return got
    out = np.empty(max(size, 1 << 18), dtype=np.uint8)
    got = out, memoryview(out)
    if size <= _KEEP_BYTES:
        _local.out = got
    return got


def _columns(batch: RecordBatch) -> tuple | None:
    """The nine iterators of every record's fields, in Record's order (for ``zip``), or None when
    the plain decoder must read this batch."""
    count = batch.count
    if count <= 0:
        return None
    if batch.attributes & ATTR_COMPRESSION_MASK == 0:
        buf, start = batch.data, HEADER_SIZE  # the record area in place, no copy
    else:
        buf, start = batch.records_buffer(), 0
    n = len(buf) - start
    if count > n:
        return None
    lat = batch.attributes & ATTR_TIMESTAMP_TYPE != 0
    base_sequence = batch.base_sequence
    size = n + _PER_RECORD * count + 64
    layout = 0
    for _attempt in range(3):
        out, view = _out_buffer(size)
        status, end = _emit(buf, start, count, batch.base_offset, batch.base_timestamp, lat, base_sequence, layout, out)
        if status == _OK:
            it = iter(pickle.loads(view[:end]))
            return (
                it if layout & _L_OFFSET else range(batch.base_offset, batch.base_offset + count),
                repeat(batch.max_timestamp) if lat else it,
                it,
                it,
                it if layout & _L_HEADERS else repeat(()),
                it if base_sequence >= 0 else repeat(-1),
                it,
                it if layout & _L_ATTRIBUTES else repeat(0),
                it,
            )
        if status == _RELAYOUT:
            layout = _L_ALL
        elif status == _NO_ROOM:
            size = (_PER_HEADER_BYTE + 1) * n + _PER_RECORD * count + 64  # big enough for any headers
        else:
            return None
    return None


def records(batch: RecordBatch) -> list[Record]:
    """``batch.records()`` (no CRC check) through the compiled walker; same values and errors."""
    cols = _columns(batch) if ACCELERATED else None
    if cols is None:
        return batch.records_plain()
    return list(map(_make_record, zip(*cols, strict=False)))


def iter_records(batch: RecordBatch) -> Iterator[Record]:
    """Like :func:`records`, but each :class:`Record` is made as iteration reaches it."""
    cols = _columns(batch) if ACCELERATED else None
    if cols is None:
        return iter(batch.records_plain())
    return map(_make_record, zip(*cols, strict=False))
