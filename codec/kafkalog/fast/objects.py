"""Record objects made by compiled code: the record walk calls CPython's C API to build them.

Making a Python object per field (two ``bytes`` and a few ints per record) and a :class:`Record`
per record costs more than walking the records, and every pure-Python way to make them runs
interpreter machinery per record. Here the walker, compiled by numba like
:mod:`kafkalog.fast.columnar`, makes them itself with the C API functions a C extension would call
(``PyBytes_FromStringAndSize``, ``PyLong_FromLongLong``, ``PyType_GenericAlloc`` for the tuple
that is a :class:`Record`, ``PyTuple_SetItem``, ``PyList_SetItem``), holding the GIL, on objects
it refers to by address (``id``). Nothing is compiled ahead of time: numba calls the functions of
the running interpreter, whose addresses ``ctypes.pythonapi`` gives.

Records are made a group at a time (:data:`GROUP` records) as iteration reaches them, so that
records already used are freed before the next are made: memory stays bounded by a group of
objects, and CPython's collector, which counts live container objects, does not run over a whole
batch of them. Values shared by many records (``None``, ``()``, -1, a repeated timestamp) are one
object with its reference count raised.

Varints are read as Kafka's ByteUtils reads them (a varint keeps the low 32 bits of at most 5
bytes, a varlong the low 64 bits of at most 10). A record the walker is not sure of (any structural
problem, a non-ASCII header key, an offset past int64) hands the batch to the plain decoder,
whose records and errors count from there; records already made were the plain decoder's too.

The walker is plain Python: ``KAFKALOG_NO_NUMBA=1`` runs the same source with plain-Python
stand-ins for the C API calls (``ctypes.string_at`` for bytes, lists for tuples being filled);
the object path then uses ``records_plain``, and tests hold both against it.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from itertools import chain

import numpy as np

from kafkalog.fast.columnar import ACCELERATED, _jit_inline, _source_digest, _span, _varint
from kafkalog.format.records.record import Record
from kafkalog.format.records.v2 import ATTR_COMPRESSION_MASK, ATTR_TIMESTAMP_TYPE, HEADER_SIZE, RecordBatch

__all__ = ["COMPILED", "GROUP", "iter_records", "records"]

#: Whether records are made by compiled code: numba, CPython, 64-bit pointers (the walker stores
#: 8-byte addresses). Else ``records_plain`` makes them.
COMPILED = ACCELERATED and sys.implementation.name == "cpython" and ctypes.sizeof(ctypes.c_void_p) == 8

#: Records made per compiled call while iterating (enough to make the call's cost negligible,
#: few enough that a group's objects stay in cache and the collector sees few of them at once).
GROUP = 128

#: No v2 record is shorter: length varint, attributes, timestamp and offset deltas, key and value
#: lengths, header count (one byte each). A count past bytes / 7 is wrong before any record is read.
_MIN_RECORD = 7

# statuses of _build (else it returns a position)
_FALLBACK = -1  # let the plain decoder handle the batch from here (and raise its errors)
_NO_MEMORY = -2  # the C API could not allocate an object

_I32_MAX = 2**31 - 1
_I64_MAX = 2**63 - 1
_I64_MIN = -(2**63)

# slots of the ``shared`` argument: objects the walker refers to (by address when compiled)
_S_RECORD, _S_NONE, _S_EMPTY, _S_MINUS_ONE = range(4)
_SHARED_OBJECTS = (Record, None, (), -1)


# ------------------------------------------------------------------ C API or plain stand-ins
def _plain_api() -> tuple:
    """The stand-ins the walker's plain-Python run uses: objects themselves instead of addresses,
    lists for the tuples being filled (made tuples, or records, when they are put in place)."""

    def bytes_at(addr: int, n: int) -> bytes:
        return ctypes.string_at(int(addr), int(n))

    def str_at(addr: int, n: int) -> str:
        return ctypes.string_at(int(addr), int(n)).decode("ascii")

    def new_int(v: int) -> int:
        return int(v)

    def new_record(record_type: type) -> list:
        return [None] * 9

    def new_tuple(n: int) -> list:
        return [None] * n

    def set_item(t: list, i: int, value: object) -> int:
        t[i] = tuple(value) if isinstance(value, list) else value
        return 0

    def seal(t: list, i: int, value: list) -> int:
        t[i] = tuple(value)  # a list set before it was filled: copy it again, filled
        return 0

    def put(out: list, i: int, rec: list) -> int:
        out[i] = tuple.__new__(Record, rec)
        return 0

    def shared(obj: object) -> object:
        return obj

    def drop(obj: object) -> None:
        return None

    def failed(obj: object) -> bool:
        return False

    def clear_error() -> None:
        return None

    return bytes_at, str_at, new_int, new_record, new_tuple, set_item, seal, put, shared, drop, failed, clear_error


if COMPILED:  # pragma: no branch - depends on the environment
    import llvmlite.binding as _llvm
    from numba import types as _t

    def _c_api(name: str, signature: object) -> object:
        """A C API function of this interpreter, callable from compiled code (pointers as intp)."""
        _llvm.add_symbol(name, ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value)
        return _t.ExternalFunction(name, signature)

    _P = _t.intp
    _PyBytes = _c_api("PyBytes_FromStringAndSize", _P(_P, _P))
    _PyUnicode = _c_api("PyUnicode_FromStringAndSize", _P(_P, _P))
    _PyLong = _c_api("PyLong_FromLongLong", _P(_t.int64))
    _PyAlloc = _c_api("PyType_GenericAlloc", _P(_P, _P))
    _PyTupleNew = _c_api("PyTuple_New", _P(_P))
    _PyListSet = _c_api("PyList_SetItem", _t.int32(_P, _P, _P))
    _PyIncRef = _c_api("Py_IncRef", _t.void(_P))
    _PyDecRef = _c_api("Py_DecRef", _t.void(_P))
    _PyErrClear = _c_api("PyErr_Clear", _t.void())

    @_jit_inline
    def _bytes_at(addr: int, n: int) -> int:
        return _PyBytes(addr, n)

    @_jit_inline
    def _str_at(addr: int, n: int) -> int:
        return _PyUnicode(addr, n)  # the walker checked the bytes are ASCII

    @_jit_inline
    def _new_int(v: int) -> int:
        return _PyLong(v)

    @_jit_inline
    def _new_record(record_type: int) -> int:
        return _PyAlloc(record_type, 9)  # tuple's own allocator, as tuple.__new__ calls it

    @_jit_inline
    def _new_tuple(n: int) -> int:
        return _PyTupleNew(n)

    from llvmlite import ir as _ir
    from numba.extending import intrinsic as _intrinsic

    #: Where a tuple's items start (PyTupleObject's ob_item; a Record adds no fields).
    _ITEMS = tuple.__basicsize__

    @_intrinsic
    def _store(typingctx, addr, value):  # type: ignore[no-untyped-def]
        """``*(PyObject **)addr = value``: PyTuple_SET_ITEM's store."""

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            builder.store(args[1], builder.inttoptr(args[0], _ir.IntType(64).as_pointer()))

        return _t.void(_t.intp, _t.intp), codegen

    @_jit_inline
    def _set_item(t: int, i: int, value: int) -> int:
        """Fill slot ``i`` of a tuple this walker just made (so empty: nothing to release), taking
        the reference, as PyTuple_SET_ITEM does; NULL leaves the slot empty."""
        _store(t + _ITEMS + 8 * i, value)
        return 0

    @_jit_inline
    def _seal(t: int, i: int, value: int) -> int:
        """Nothing to do: slot ``i`` of ``t`` already holds ``value`` (the plain run copies lists)."""
        return 0

    @_jit_inline
    def _put(out: int, i: int, rec: int) -> int:
        return _PyListSet(out, i, rec)

    @_jit_inline
    def _shared(obj: int) -> int:
        _PyIncRef(obj)
        return obj

    @_jit_inline
    def _drop(obj: int) -> None:
        _PyDecRef(obj)

    @_jit_inline
    def _failed(obj: int) -> bool:
        return obj == 0

    @_jit_inline
    def _clear_error() -> None:
        _PyErrClear()

    import numba as _numba

    from kafkalog.fast import jitcache

    jitcache.install()  # a read-only package dir caches per user

    #: The walker holds the GIL (it calls the C API), unlike the columnar walks.
    _jit_gil = _numba.njit(cache=True, nogil=False, boundscheck=False)
else:  # pragma: no cover - depends on the environment
    _bytes_at, _str_at, _new_int, _new_record, _new_tuple, _set_item, _seal, _put, _shared, _drop, _failed, _clear_error = _plain_api()

    def _jit_gil(f):  # type: ignore[no-untyped-def]
        return f


@_jit_inline
def _int32(v: int) -> int:
    """``v`` as a Java int: its low 32 bits, signed."""
    return ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000


@_jit_inline
def _nullable_bytes(addr: int, n: int, none: int) -> int:
    """The ``n`` bytes at ``addr``, or None (shared) when ``n`` is negative: a key, value or header value."""
    return _shared(none) if n < 0 else _bytes_at(addr, n)


@_jit_inline
def _out_of_memory(rec: int) -> int:
    """Release a record being made after an allocation failed; clear the error the C API set."""
    _drop(rec)
    _clear_error()
    return _NO_MEMORY


def _compile_build(deps: str) -> object:
    """:func:`_build`, compiled with ``deps`` in its cache key: the digest of :mod:`kafkalog.fast.columnar`
    (whose varint reader it inlines), the tuple layout and the pointer size."""

    def _build(
        buf: np.ndarray,
        pos: int,
        count: int,
        base_offset: int,
        base_timestamp: int,
        has_log_append_time: bool,
        base_sequence: int,
        batch_timestamp: object,
        shared: np.ndarray,
        out: object,
    ) -> int:
        """Make the ``count`` records of the record area ``buf`` from ``pos`` on and put them in the
        list ``out`` (slots 0..count-1). ``shared`` holds the objects of the ``_S_*`` slots,
        ``batch_timestamp`` the batch's max timestamp. Returns the position after them, or
        _FALLBACK or _NO_MEMORY (then ``out`` may hold partial records: drop it)."""
        n = buf.shape[0]
        addr = buf.ctypes.data
        last_ts = np.int64(0)
        ts_obj = shared[_S_NONE]  # the object of last_ts, reused while records repeat it
        for i in range(count):
            record_start = pos
            length, pos = _varint(buf, pos, n, 5)
            if pos < 0 or length <= 0 or pos + length > n:
                return _FALLBACK
            end = pos + length
            attrs = np.int64(buf[pos])
            pos += 1
            ts_delta, pos = _varint(buf, pos, end, 10)
            if pos < 0:
                return _FALLBACK
            off_delta, pos = _varint(buf, pos, end, 5)
            if pos < 0:
                return _FALLBACK
            if (off_delta > 0 and base_offset > _I64_MAX - off_delta) or (off_delta < 0 and base_offset < _I64_MIN - off_delta):
                return _FALLBACK  # the offset leaves int64: the plain decoder's Python ints say what it is
            klen, kstart, pos = _span(buf, pos, end)
            if pos < 0:
                return _FALLBACK
            vlen, vstart, pos = _span(buf, pos, end)
            if pos < 0:
                return _FALLBACK
            nh, pos = _varint(buf, pos, end, 5)
            if pos < 0 or nh < 0 or nh > end - pos:
                return _FALLBACK
            hstart = pos
            for _h in range(nh):  # check the headers before making anything of this record
                hk, pos = _varint(buf, pos, end, 5)
                if pos < 0 or hk < 0 or pos + hk > end:
                    return _FALLBACK
                for k in range(pos, pos + hk):
                    if buf[k] >= 0x80:
                        return _FALLBACK  # non-ASCII key: the plain decoder decodes it as Java does (R-REC-09)
                pos += hk
                hv, pos = _varint(buf, pos, end, 5)
                if pos < 0:
                    return _FALLBACK
                if hv > 0:
                    pos += hv
                    if pos > end:
                        return _FALLBACK
            if pos != end:
                return _FALLBACK
            rec = _new_record(shared[_S_RECORD])
            if _failed(rec):
                _clear_error()
                return _NO_MEMORY
            ts = base_timestamp + ts_delta  # int64 arithmetic wraps, as Java's long does
            if i == 0 or ts != last_ts:
                ts_obj = _new_int(ts)
                if _failed(ts_obj):
                    return _out_of_memory(rec)
                last_ts = ts
            else:
                ts_obj = _shared(ts_obj)
            _set_item(rec, 8, ts_obj)  # create_timestamp: the record's own
            # the timestamp Kafka reports: the batch's under LogAppendTime
            _set_item(rec, 1, _shared(batch_timestamp) if has_log_append_time else _shared(ts_obj))
            # On a failed allocation: release the record (its empty slots are NULL) and stop at once.
            v = _new_int(base_offset + off_delta)
            if _failed(v):
                return _out_of_memory(rec)
            _set_item(rec, 0, v)
            v = _nullable_bytes(addr + kstart, klen, shared[_S_NONE])
            if _failed(v):
                return _out_of_memory(rec)
            _set_item(rec, 2, v)
            v = _nullable_bytes(addr + vstart, vlen, shared[_S_NONE])
            if _failed(v):
                return _out_of_memory(rec)
            _set_item(rec, 3, v)
            if nh == 0:
                _set_item(rec, 4, _shared(shared[_S_EMPTY]))
            else:
                headers = _new_tuple(nh)
                if _failed(headers):
                    return _out_of_memory(rec)
                _set_item(rec, 4, headers)  # the record owns it; filled below (the plain run needs that order too)
                hp = hstart
                for h in range(nh):
                    pair = _new_tuple(2)
                    if _failed(pair):
                        return _out_of_memory(rec)
                    _set_item(headers, h, pair)  # owned through the record from here
                    hk, ks, hp = _span(buf, hp, end)
                    if hp < 0 or hk < 0:  # checked above; read again, so checked again
                        _drop(rec)
                        return _FALLBACK
                    v = _str_at(addr + ks, hk)
                    if _failed(v):
                        return _out_of_memory(rec)
                    _set_item(pair, 0, v)
                    hv, vs, hp = _span(buf, hp, end)
                    if hp < 0:
                        _drop(rec)
                        return _FALLBACK
                    v = _nullable_bytes(addr + vs, hv, shared[_S_NONE])
                    if _failed(v):
                        return _out_of_memory(rec)
                    _set_item(pair, 1, v)
                    _seal(headers, h, pair)
                _seal(rec, 4, headers)
            # sequence, only with a producer (else -1), as DefaultRecordBatch.incrementSequence computes
            # it in Java ints: past Int32.MAX_VALUE it wraps to 0
            if base_sequence < 0:
                v = _shared(shared[_S_MINUS_ONE])
            else:
                if base_sequence > _int32(_I32_MAX - off_delta):
                    seq = _int32(off_delta - (_I32_MAX - base_sequence) - 1)
                else:
                    seq = _int32(base_sequence + off_delta)
                v = _new_int(seq)
                if _failed(v):
                    return _out_of_memory(rec)
            _set_item(rec, 5, v)
            v = _new_int(pos - record_start)
            if _failed(v):
                return _out_of_memory(rec)
            _set_item(rec, 6, v)
            v = _new_int(attrs)
            if _failed(v):
                return _out_of_memory(rec)
            _set_item(rec, 7, v)
            _put(out, i, rec)
        return pos if len(deps) else _FALLBACK  # ``deps`` only keys numba's cache

    return _jit_gil(_build)


_build = _compile_build(_source_digest("columnar") + f"/{tuple.__basicsize__}/{ctypes.sizeof(ctypes.c_void_p)}")


#: ``shared`` for :func:`_build`: addresses when compiled (the tuple above keeps the objects alive).
_SHARED = np.array([id(o) for o in _SHARED_OBJECTS], np.int64) if COMPILED else list(_SHARED_OBJECTS)


def _area(batch: RecordBatch) -> tuple[np.ndarray, int]:
    """The batch's record area as uint8 (uncompressed: in place, no copy) and where records start.
    Immutable bytes: the walker reads lengths twice and must find them unchanged."""
    if batch.attributes & ATTR_COMPRESSION_MASK == 0:
        data = batch.data
        return np.frombuffer(data if type(data) is bytes else bytes(data), np.uint8), HEADER_SIZE
    return np.frombuffer(batch.records_buffer(), np.uint8), 0


def _plausible(batch: RecordBatch, buf: np.ndarray, start: int) -> bool:
    """Whether the record count fits the bytes (else the plain decoder reports it, and no list of
    ``count`` slots is made for a count that is wrong)."""
    return 0 < batch.count <= (len(buf) - start) // _MIN_RECORD


def _make(batch: RecordBatch, buf: np.ndarray, pos: int, count: int) -> tuple[list[Record], int]:
    """(the next ``count`` records from ``pos``, the position after them). The position is
    _FALLBACK when the plain decoder must take over; the list then holds the records made before
    that, then Nones."""
    out: list = [None] * count
    ts = batch.max_timestamp  # a local reference keeps it alive while the walker uses its address
    pos = _build(buf, pos, count, batch.base_offset, batch.base_timestamp, batch.attributes & ATTR_TIMESTAMP_TYPE != 0,
                 batch.base_sequence, id(ts) if COMPILED else ts, _SHARED, id(out) if COMPILED else out)
    if pos == _NO_MEMORY:
        raise MemoryError(f"no memory for the records of the batch at offset {batch.base_offset}")
    return out, pos


def _made(out: list) -> list[Record]:
    """The records made before the walker handed over (the leading non-None slots)."""
    return out[: next((k for k, r in enumerate(out) if r is None), len(out))]


def _walked(batch: RecordBatch) -> list[Record]:
    """All of ``batch``'s records through the walker (compiled or not), else the plain decoder's."""
    buf, start = _area(batch)
    if _plausible(batch, buf, start):
        out, pos = _make(batch, buf, start, batch.count)
        if pos == len(buf):
            return out
    return batch.records_plain()


def _groups(batch: RecordBatch) -> Iterator[list[Record]]:
    """``batch``'s records, :data:`GROUP` at a time; where the walker hands over, the records it
    made, then the plain decoder's from there (or its error)."""
    buf, pos = _area(batch)
    count = batch.count
    done = 0
    if _plausible(batch, buf, pos):
        while done < count:
            k = min(GROUP, count - done)
            out, pos = _make(batch, buf, pos, k)
            if pos < 0:
                out = _made(out)
                done += len(out)
                yield out
                break
            yield out
            done += k
    if done < count or pos != len(buf):
        yield batch.records_plain()[done:]


def records(batch: RecordBatch) -> list[Record]:
    """``batch.records()`` (no CRC check) through the compiled walker; same values and errors."""
    return _walked(batch) if COMPILED else batch.records_plain()


def iter_records(batch: RecordBatch) -> Iterator[Record]:
    """Like :func:`records`, but the records are made :data:`GROUP` at a time as iteration
    reaches them. As Kafka's record iterator does, a malformed record raises when iteration
    reaches it, after the records before it (the plain decoder, without numba, raises first)."""
    if not COMPILED:
        return iter(batch.records_plain())
    if batch.count <= GROUP:
        buf, start = _area(batch)
        if _plausible(batch, buf, start):
            out, pos = _make(batch, buf, start, batch.count)
            if pos == len(buf):
                return iter(out)
    return chain.from_iterable(_groups(batch))
