# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Avro binary values (Confluent's wire format) decoded straight into Arrow buffers, in C.

:mod:`kafkalog.fast.avro` compiles a (writer schema, reader schema) pair into a tree of *ops*
(writer-shaped: they read the bytes in the writer's order) that write into a tree of *builders*
(reader-shaped: one per column of the Arrow type). :func:`decode` runs them over a binary Arrow
column; :meth:`B.finish` turns the builders into Arrow arrays (``pyarrow.Array.from_buffers``).

The kernel accepts only what fastavro's ``schemaless_reader`` reads to the same value: any byte it
doubts (a truncated value, a varint longer than 10 bytes, a negative length or count, a union or
enum index out of range, a boolean byte other than 0 and 1, text that is not strict UTF-8, an int
outside int32, a date or timestamp outside what Python's datetime holds, a decimal wider than its
precision, a map key seen twice, bytes left over, an id without an op) stops it, and it returns the
position of that value: the caller then decodes the whole column with fastavro, which gives the
value or the error, so a value is never different from fastavro's.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t, uintptr_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy, memset


cdef extern from *:
    ctypedef long long i128 "__int128"
    ctypedef unsigned long long u128 "unsigned __int128"


cdef struct Cur:
    const uint8_t* b
    Py_ssize_t pos
    Py_ssize_t end


cdef struct Buf:
    char* p
    Py_ssize_t n
    Py_ssize_t cap


class Bad(Exception):
    """A value the kernel does not take (see the module's docstring): fastavro decodes the column."""


cdef inline int buf_room(Buf* b, Py_ssize_t more) except -1:
    cdef Py_ssize_t cap
    cdef char* p
    if b.n + more <= b.cap:
        return 0
    cap = b.cap * 2 if b.cap else 256
    while cap < b.n + more:
        cap *= 2
    p = <char*>realloc(b.p, cap)
    if p == NULL:
        raise MemoryError()
    b.p = p
    b.cap = cap
    return 0


cdef inline int buf_put(Buf* b, const void* src, Py_ssize_t n) except -1:
    if b.n + n > b.cap:
        buf_room(b, n)
    memcpy(b.p + b.n, src, n)
    b.n += n
    return 0


cdef inline int buf_byte(Buf* b, uint8_t v) except -1:
    if b.n + 1 > b.cap:
        buf_room(b, 1)
    b.p[b.n] = <char>v
    b.n += 1
    return 0


cdef inline int buf_zero(Buf* b, Py_ssize_t n) except -1:
    if b.n + n > b.cap:
        buf_room(b, n)
    memset(b.p + b.n, 0, n)
    b.n += n
    return 0


cdef inline object buf_take(Buf* b):
    out = PyBytes_FromStringAndSize(b.p, b.n)
    b.n = 0
    return out


# ------------------------------------------------------------------------------------- reading
cdef inline int64_t read_long(Cur* c) except? -1:
    """Avro's zig-zag varlong: at most 10 bytes, the 10th carrying one bit."""
    cdef uint64_t result = 0
    cdef uint64_t b
    cdef int shift = 0
    cdef int k
    for k in range(10):
        if c.pos >= c.end:
            raise Bad()
        b = c.b[c.pos]
        c.pos += 1
        if k == 9 and b > 1:
            raise Bad()
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return <int64_t>(result >> 1) ^ -<int64_t>(result & 1)
        shift += 7
    raise Bad()


cdef inline Py_ssize_t read_len(Cur* c) except -1:
    """A length (bytes, string): not negative, inside the value."""
    cdef int64_t n = read_long(c)
    if n < 0 or n > c.end - c.pos:
        raise Bad()
    return <Py_ssize_t>n


cdef inline bint utf8_ok(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Strict UTF-8 as Python's decoder takes it: no overlong forms, no surrogates, nothing past U+10FFFF."""
    cdef Py_ssize_t i = 0
    cdef uint8_t a, b1, b2, b3
    while i < n:
        a = s[i]
        if a < 0x80:
            i += 1
            continue
        if a < 0xC2:
            return False
        if a < 0xE0:
            if i + 1 >= n or (s[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
            continue
        if a < 0xF0:
            if i + 2 >= n:
                return False
            b1 = s[i + 1]
            b2 = s[i + 2]
            if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80:
                return False
            if (a == 0xE0 and b1 < 0xA0) or (a == 0xED and b1 >= 0xA0):
                return False
            i += 3
            continue
        if a < 0xF5:
            if i + 3 >= n:
                return False
            b1 = s[i + 1]
            b2 = s[i + 2]
            b3 = s[i + 3]
            if (b1 & 0xC0) != 0x80 or (b2 & 0xC0) != 0x80 or (b3 & 0xC0) != 0x80:
                return False
            if (a == 0xF0 and b1 < 0x90) or (a == 0xF4 and b1 >= 0x90):
                return False
            i += 4
            continue
        return False
    return True


# ------------------------------------------------------------------------------------ builders
cdef class B:
    """A column being built: a validity byte per slot (packed into Arrow's bitmap at the end)."""
    cdef Buf valid
    cdef Py_ssize_t n, nulls
    cdef readonly object type

    def __dealloc__(self):
        free(self.valid.p)

    cdef int slot(self, bint ok) except -1:
        buf_byte(&self.valid, ok)
        self.n += 1
        if not ok:
            self.nulls += 1
        return 0

    cdef int null(self) except -1:
        """A null slot (whatever lies under it is a valid empty value, as ``pyarrow.array`` leaves it)."""
        self.slot(False)
        return self.blank()

    cdef int empty(self) except -1:
        """A valid empty or zero slot (under a null parent)."""
        self.slot(True)
        return self.blank()

    cdef int blank(self) except -1:
        return 0

    cdef object validity(self):
        import numpy as np
        if self.nulls == 0:
            self.valid.n = 0
            return None
        bits = np.packbits(np.frombuffer(buf_take(&self.valid), dtype=np.uint8), bitorder="little")
        import pyarrow as pa
        return pa.py_buffer(bits)

    cpdef object finish(self):
        """The Arrow array of the slots so far; the builder is empty again."""
        raise NotImplementedError

    cdef void reset_counts(self) noexcept:
        self.n = 0
        self.nulls = 0
        self.valid.n = 0

    cpdef void reset(self):
        """Forget the slots so far (a column the kernel gave up on)."""
        self.reset_counts()


cdef class FixedB(B):
    """Fixed-width values: ints, floats, dates, timestamps, decimal128, fixed_size_binary; booleans a byte each."""
    cdef Buf data
    cdef Py_ssize_t width
    cdef bint boolean

    def __init__(self, object typ, Py_ssize_t width, bint boolean=False):
        self.type = typ
        self.width = width
        self.boolean = boolean

    def __dealloc__(self):
        free(self.data.p)

    cdef int blank(self) except -1:
        return buf_zero(&self.data, self.width)

    cpdef void reset(self):
        self.reset_counts()
        self.data.n = 0

    cpdef object finish(self):
        import numpy as np
        import pyarrow as pa
        n, nulls = self.n, self.nulls
        valid = self.validity()
        data = buf_take(&self.data)
        if self.boolean:
            data = np.packbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")
        self.reset_counts()
        return pa.Array.from_buffers(self.type, n, [valid, pa.py_buffer(data)], null_count=nulls)


cdef class VarB(B):
    """Variable-width values (string, binary): int32 offsets and the bytes."""
    cdef Buf offsets
    cdef Buf data
    cdef int32_t last

    def __init__(self, object typ):
        self.type = typ
        buf_zero(&self.offsets, 4)

    def __dealloc__(self):
        free(self.offsets.p)
        free(self.data.p)

    cdef int blank(self) except -1:
        return buf_put(&self.offsets, &self.last, 4)

    cdef int put(self, const uint8_t* s, Py_ssize_t n) except -1:
        if self.data.n + n > 0x7FFFFFFF:
            raise Bad()  # past int32 offsets: fastavro's path builds the column
        buf_put(&self.data, s, n)
        self.last = <int32_t>self.data.n
        buf_put(&self.offsets, &self.last, 4)
        buf_byte(&self.valid, 1)
        self.n += 1
        return 0

    cpdef void reset(self):
        self.reset_counts()
        self.data.n = 0
        self.offsets.n = 0
        self.last = 0
        buf_zero(&self.offsets, 4)

    cpdef object finish(self):
        import pyarrow as pa
        n, nulls = self.n, self.nulls
        valid = self.validity()
        out = pa.Array.from_buffers(self.type, n, [valid, pa.py_buffer(buf_take(&self.offsets)), pa.py_buffer(buf_take(&self.data))],
                                    null_count=nulls)
        self.reset()
        return out


cdef class StructB(B):
    """A struct: its children's slots follow its own."""
    cdef list children

    def __init__(self, object typ, list children):
        self.type = typ
        self.children = children

    def children_list(self):
        """The field builders, in the struct's order."""
        return list(self.children)

    cdef int blank(self) except -1:
        cdef B c
        for c in self.children:
            c.empty()
        return 0

    cpdef void reset(self):
        cdef B c
        self.reset_counts()
        for c in self.children:
            c.reset()

    cpdef object finish(self):
        import pyarrow as pa
        n, nulls = self.n, self.nulls
        valid = self.validity()
        children = [(<B>c).finish() for c in self.children]
        self.reset_counts()
        return pa.Array.from_buffers(self.type, n, [valid], null_count=nulls, children=children)


cdef class ListB(B):
    """A list (and, with ``keys``, a map): int32 offsets into the item column (and the key column)."""
    cdef Buf offsets
    cdef int32_t last
    cdef readonly B items
    cdef readonly VarB keys

    def __init__(self, object typ, B items, VarB keys=None):
        self.type = typ
        self.items = items
        self.keys = keys
        buf_zero(&self.offsets, 4)

    def __dealloc__(self):
        free(self.offsets.p)

    cdef int blank(self) except -1:
        return buf_put(&self.offsets, &self.last, 4)

    cdef int close(self) except -1:
        """A valid slot holding the items added since the previous slot."""
        if self.items.n > 0x7FFFFFFF:
            raise Bad()
        self.last = <int32_t>self.items.n
        buf_put(&self.offsets, &self.last, 4)
        buf_byte(&self.valid, 1)
        self.n += 1
        return 0

    cpdef void reset(self):
        self.reset_counts()
        self.offsets.n = 0
        self.last = 0
        buf_zero(&self.offsets, 4)
        self.items.reset()
        if self.keys is not None:
            self.keys.reset()

    cpdef object finish(self):
        import pyarrow as pa
        n, nulls = self.n, self.nulls
        valid = self.validity()
        offsets = pa.py_buffer(buf_take(&self.offsets))
        items = self.items.finish()
        if self.keys is not None:
            keys = self.keys.finish()
            entries = pa.StructArray.from_arrays([keys, items], fields=[self.type.key_field, self.type.item_field])
            items = entries
        self.reset()
        return pa.Array.from_buffers(self.type, n, [valid, offsets], null_count=nulls, children=[items])


cdef class NullB(B):
    """Arrow's null type (Avro's null)."""

    def __init__(self, object typ):
        self.type = typ

    cpdef object finish(self):
        import pyarrow as pa
        n = self.n
        self.reset_counts()
        return pa.nulls(n, type=self.type)


# ----------------------------------------------------------------------------------------- ops
cdef class Op:
    """Reads one value of a writer type (into its builder, or skipped when it has none)."""

    cdef int run(self, Cur* c) except -1:
        raise NotImplementedError


#: OInt modes: what an Avro int/long becomes in its column
cdef enum:
    M_I32 = 0
    M_I64 = 1
    M_F32 = 2
    M_F64 = 3
    M_DATE = 4
    M_TS_MS = 5
    M_TS_US = 6

# the days, milliseconds and microseconds from 1970 that Python's date/datetime hold (years 1 to 9999)
cdef int64_t _DAY_MIN = -719162
cdef int64_t _DAY_MAX = 2932896
cdef int64_t _MS_MIN = -62135596800000
cdef int64_t _MS_MAX = 253402300799999
cdef int64_t _US_MIN = -62135596800000000
cdef int64_t _US_MAX = 253402300799999999


cdef class OInt(Op):
    """An Avro int or long (same encoding), into an int32/int64/float32/float64 column, or a date/timestamp."""
    cdef FixedB t
    cdef int mode

    def __init__(self, FixedB t, int mode):
        self.t = t
        self.mode = mode

    cdef int run(self, Cur* c) except -1:
        cdef int64_t v = read_long(c)
        cdef int32_t v32
        cdef float f
        cdef double d
        cdef FixedB t = self.t
        cdef int mode = self.mode
        if mode == M_I32 or mode == M_DATE:
            if v < -2147483648 or v > 2147483647 or (mode == M_DATE and (v < _DAY_MIN or v > _DAY_MAX)):
                raise Bad()
            if t is None:
                return 0
            v32 = <int32_t>v
            buf_put(&t.data, &v32, 4)
        elif (mode == M_TS_MS and (v < _MS_MIN or v > _MS_MAX)) or (mode == M_TS_US and (v < _US_MIN or v > _US_MAX)):
            raise Bad()
        elif t is None:
            return 0
        elif mode == M_F32:
            f = <float>(<double>v)
            buf_put(&t.data, &f, 4)
        elif mode == M_F64:
            d = <double>v
            buf_put(&t.data, &d, 8)
        else:
            buf_put(&t.data, &v, 8)
        return t.slot(True)


cdef class OFloat(Op):
    """An Avro float (4 bytes) or double (8 bytes), little-endian, into a float32 or float64 column."""
    cdef FixedB t
    cdef int size
    cdef bint widen

    def __init__(self, FixedB t, int size, bint widen):
        self.t = t
        self.size = size
        self.widen = widen

    cdef int run(self, Cur* c) except -1:
        cdef float f
        cdef double d
        if c.end - c.pos < self.size:
            raise Bad()
        if self.t is not None:
            if self.widen:
                memcpy(&f, c.b + c.pos, 4)
                d = f
                buf_put(&self.t.data, &d, 8)
            else:
                buf_put(&self.t.data, c.b + c.pos, self.size)
            self.t.slot(True)
        c.pos += self.size
        return 0


cdef class OBool(Op):
    cdef FixedB t

    def __init__(self, FixedB t):
        self.t = t

    cdef int run(self, Cur* c) except -1:
        if c.pos >= c.end or c.b[c.pos] > 1:
            raise Bad()
        if self.t is not None:
            buf_byte(&self.t.data, c.b[c.pos])
            self.t.slot(True)
        c.pos += 1
        return 0


cdef inline int put_decimal(FixedB t, const uint8_t* s, Py_ssize_t n, int precision) except -1:
    """Big-endian two's complement bytes as a little-endian decimal128 of at most ``precision`` digits."""
    cdef u128 u = 0
    cdef i128 v
    cdef i128 limit = 1
    cdef u128 ext = 0xFF if n and s[0] & 0x80 else 0
    cdef Py_ssize_t i
    cdef int k
    cdef uint8_t out[16]
    if n > 16:
        raise Bad()
    for i in range(16 - n):
        u = (u << 8) | ext
    for i in range(n):
        u = (u << 8) | s[i]
    v = <i128>u
    for k in range(precision):
        limit *= 10
    if v >= limit or v <= -limit:
        raise Bad()
    for k in range(16):
        out[k] = <uint8_t>(u & 0xFF)
        u >>= 8
    buf_put(&t.data, out, 16)
    return t.slot(True)


cdef class OBytes(Op):
    """Avro bytes or string: into a string/binary column (``utf8``: checked as strict UTF-8), or a decimal."""
    cdef B t
    cdef bint utf8
    cdef int precision  # > 0: a decimal of that precision

    def __init__(self, B t, bint utf8, int precision=0):
        self.t = t
        self.utf8 = utf8
        self.precision = precision

    cdef int run(self, Cur* c) except -1:
        cdef Py_ssize_t n = read_len(c)
        cdef const uint8_t* s = c.b + c.pos
        if self.utf8 and not utf8_ok(s, n):
            raise Bad()
        c.pos += n
        if self.t is None:
            return 0
        if self.precision:
            return put_decimal(<FixedB>self.t, s, n, self.precision)
        return (<VarB>self.t).put(s, n)


cdef class OFixed(Op):
    """Avro fixed: into a fixed_size_binary column, or a decimal."""
    cdef FixedB t
    cdef Py_ssize_t size
    cdef int precision

    def __init__(self, FixedB t, Py_ssize_t size, int precision=0):
        self.t = t
        self.size = size
        self.precision = precision

    cdef int run(self, Cur* c) except -1:
        cdef const uint8_t* s = c.b + c.pos
        if c.end - c.pos < self.size:
            raise Bad()
        c.pos += self.size
        if self.t is None:
            return 0
        if self.precision:
            return put_decimal(self.t, s, self.size, self.precision)
        buf_put(&self.t.data, s, self.size)
        return self.t.slot(True)


cdef class OEnum(Op):
    """An Avro enum: the symbol of the writer's index (``symbols[i]`` None: the reader has no such symbol)."""
    cdef VarB t
    cdef list symbols

    def __init__(self, VarB t, list symbols):
        self.t = t
        self.symbols = symbols

    cdef int run(self, Cur* c) except -1:
        cdef int64_t i = read_long(c)
        if i < 0 or i >= len(self.symbols):
            raise Bad()
        s = self.symbols[i]
        if s is None:
            raise Bad()
        if self.t is not None:
            self.t.put(<const uint8_t*>PyBytes_AS_STRING(s), PyBytes_GET_SIZE(s))
        return 0


cdef class ONull(Op):
    """Avro null: a null slot (no bytes)."""
    cdef B t

    def __init__(self, B t):
        self.t = t

    cdef int run(self, Cur* c) except -1:
        if self.t is not None:
            self.t.null()
        return 0


cdef class OFail(Op):
    """A writer branch the reader cannot take: fastavro's path gives its error."""

    cdef int run(self, Cur* c) except -1:
        raise Bad()


cdef class OUnion(Op):
    """An Avro union: the branch index, then that branch's op."""
    cdef list branches

    def __init__(self, list branches):
        self.branches = branches

    cdef int run(self, Cur* c) except -1:
        cdef int64_t i = read_long(c)
        if i < 0 or i >= len(self.branches):
            raise Bad()
        return (<Op>self.branches[i]).run(c)


cdef class ORecord(Op):
    """An Avro record: its fields in the writer's order, then the reader's fields the writer lacks (their defaults)."""
    cdef StructB t
    cdef list fields

    def __init__(self, StructB t, list fields):
        self.t = t
        self.fields = fields

    cdef int run(self, Cur* c) except -1:
        cdef Op f
        for f in self.fields:
            f.run(c)
        if self.t is not None:
            self.t.slot(True)
        return 0


cdef class OConst(Op):
    """A reader field's default: its value encoded once, read by ``op`` each time."""
    cdef bytes data
    cdef Op op

    def __init__(self, bytes data, Op op):
        self.data = data
        self.op = op

    cdef int run(self, Cur* c) except -1:
        cdef Cur d
        d.b = <const uint8_t*>PyBytes_AS_STRING(self.data)
        d.pos = 0
        d.end = PyBytes_GET_SIZE(self.data)
        return self.op.run(&d)


cdef class OArray(Op):
    """An Avro array or map: blocks of items (a negative count is followed by the block's size)."""
    cdef ListB t
    cdef Op item
    cdef bint is_map
    cdef Op key

    def __init__(self, ListB t, Op item, Op key=None):
        self.t = t
        self.item = item
        self.key = key
        self.is_map = key is not None

    cdef int run(self, Cur* c) except -1:
        cdef int64_t count, k
        cdef Py_ssize_t first = self.t.keys.n if self.t is not None and self.is_map else 0
        while True:
            count = read_long(c)
            if count == 0:
                break
            if count < 0:
                if count == -9223372036854775807 - 1:
                    raise Bad()
                count = -count
                read_long(c)  # the block's size in bytes
            if count > c.end - c.pos and count > 0x100000:  # more items than bytes: only zero-width ones (null) fit
                raise Bad()
            for k in range(count):
                if self.is_map:
                    self.key.run(c)
                self.item.run(c)
        if self.t is None:
            return 0
        if self.is_map and self.t.keys.n - first > 1:
            _distinct_keys(self.t.keys, first)
        return self.t.close()


cdef int _distinct_keys(VarB keys, Py_ssize_t first) except -1:
    """A map's keys (slots ``first`` on of ``keys``) are distinct: a Python dict (fastavro's value) keeps one of each."""
    cdef const int32_t* off = <const int32_t*>keys.offsets.p
    cdef const char* data = keys.data.p
    cdef Py_ssize_t i, j, n = keys.n
    cdef int32_t li
    if n - first <= 16:
        for i in range(first, n):
            li = off[i + 1] - off[i]
            for j in range(i + 1, n):
                if off[j + 1] - off[j] == li and memcmp(data + off[i], data + off[j], li) == 0:
                    raise Bad()
        return 0
    seen = set()
    for i in range(first, n):
        seen.add(PyBytes_FromStringAndSize(data + off[i], off[i + 1] - off[i]))
    if len(seen) != n - first:
        raise Bad()
    return 0


# -------------------------------------------------------------------------------------- kernel
cdef inline uintptr_t _address(object buf):
    return 0 if buf is None else <uintptr_t>buf.address


def decode(object column, dict ops, B root):
    """Decode a binary Arrow column of wire-format values into ``root``: ``ops`` maps each schema id
    to the op of its values. Returns -1 when every value decoded (``root.finish()`` gives the
    column), else the position of the first value the kernel does not take (``root`` is reset)."""
    cdef Py_ssize_t n = len(column)
    cdef Py_ssize_t base = column.offset
    bufs = column.buffers()
    cdef const uint8_t* valid = <const uint8_t*>_address(bufs[0])
    cdef const int32_t* offsets = <const int32_t*>_address(bufs[1])
    cdef const uint8_t* data = <const uint8_t*>_address(bufs[2])
    cdef Py_ssize_t i = 0, j
    cdef uint32_t sid, last_sid = 0
    cdef Op op = None
    cdef Cur c
    if bufs[2] is None:
        data = <const uint8_t*>""
    try:
        for i in range(n):
            j = base + i
            if valid != NULL and not (valid[j >> 3] >> (j & 7)) & 1:
                root.null()
                continue
            c.b = data
            c.pos = offsets[j]
            c.end = offsets[j + 1]
            if c.end - c.pos < 5 or data[c.pos] != 0:
                raise Bad()
            sid = (<uint32_t>data[c.pos + 1] << 24) | (<uint32_t>data[c.pos + 2] << 16) | (<uint32_t>data[c.pos + 3] << 8) | data[c.pos + 4]
            if op is None or sid != last_sid:
                op = ops.get(sid)
                if op is None:
                    raise Bad()
                last_sid = sid
            c.pos += 5
            op.run(&c)
            if c.pos != c.end:
                raise Bad()
    except Bad:
        root.reset()
        return i
    return -1


def schema_ids(object column):
    """The schema ids of a binary Arrow column's wire-format values (values too short or not starting with byte 0 are left out)."""
    cdef Py_ssize_t n = len(column)
    cdef Py_ssize_t base = column.offset
    bufs = column.buffers()
    cdef const uint8_t* valid = <const uint8_t*>_address(bufs[0])
    cdef const int32_t* offsets = <const int32_t*>_address(bufs[1])
    cdef const uint8_t* data = <const uint8_t*>_address(bufs[2])
    cdef Py_ssize_t i, j, p
    cdef uint32_t sid, last = 0
    cdef bint any_ = False
    out = set()
    for i in range(n):
        j = base + i
        if valid != NULL and not (valid[j >> 3] >> (j & 7)) & 1:
            continue
        p = offsets[j]
        if offsets[j + 1] - p < 5 or data[p] != 0:
            continue
        sid = (<uint32_t>data[p + 1] << 24) | (<uint32_t>data[p + 2] << 16) | (<uint32_t>data[p + 3] << 8) | data[p + 4]
        if not any_ or sid != last:
            out.add(sid)
            last = sid
            any_ = True
    return out
