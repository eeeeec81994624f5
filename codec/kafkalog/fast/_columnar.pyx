# cython: language_level=3
"""The compiled kernels of :mod:`kafkalog.fast.columnar` (and of ``kafkalog verify``'s record walk).

Each function here has a pure-Python twin of the same name in :mod:`kafkalog.fast.columnar` (or
:mod:`kafkalog.tools.validate`) and returns exactly what it returns: the same status codes at the
same positions, which the Python side turns into the same exceptions. Arrays come in as buffers
(``Py_buffer`` over numpy arrays, C-contiguous, checked for rank and item size) and are read
through raw pointers; every byte read is checked against the record, record area or buffer it
belongs to. The walks run without the GIL, so that threads reading different files (a Spark
executor's Python workers, a thread pool) decode at the same time.
"""

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from kafkalog.fast._native cimport DCtx, crc32c_c, gzip_bound, gzip_members_c, lz4_block_c, lz4_bound, zstd_bound, zstd_frames_c
from kafkalog.fast._varint cimport VARINT_TOO_LONG, VARINT_TRUNCATED, read_varint as _varint
from libc.stdint cimport INT64_MIN, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

# statuses: the same values as kafkalog.fast.columnar's _E_* and kafkalog.tools.validate's
cdef enum:
    E_TRUNCATED = VARINT_TRUNCATED  # -1
    E_VARINT = VARINT_TOO_LONG  # -2
    E_LENGTH = -3
    E_FIELD = -4
    E_HEADERS = -5
    E_LEFTOVER = -6
    E_SIZE_MISMATCH = -7
    # kafkalog.tools.validate's own
    E_OFFSET_ORDER = -20
    E_OFFSET_DELTA = -21
    E_COUNT = -22
    # arguments that break the kernel's assumptions (a bug of the caller, raised as ValueError)
    E_ARGUMENTS = -100

# chunk framing (columnar's _F_*), the walk's resumable state (_STATE_*) and metadata columns (_M_*)
cdef enum:
    F_END = 0
    F_TAIL = 1
    F_SMALL = 2
    F_OTHER = 3
    F_FULL = 4
    F_SWITCH = 5
    F_CRC = 6
    CRC_START = 21  # the CRC covers the batch from its attributes on
    NEED_ROOM = 1
    ST_BATCH = 0
    ST_ROW = 1
    ST_KEY_END = 2
    ST_VALUE_END = 3
    ST_HEADERS = 4
    M_POS = 0
    M_SIZE = 1
    M_ATTRS = 2
    M_COUNT = 3
    M_BASE_OFFSET = 4
    M_BASE_TS = 5
    M_MAX_TS = 6
    M_LAST_DELTA = 7
    M_LEADER_EPOCH = 8
    M_PRODUCER_ID = 9
    M_PRODUCER_EPOCH = 10
    M_BASE_SEQUENCE = 11
    META_COLUMNS = 12
    HEADER_SIZE = 61  # the v2 batch header (R-V2-01)
    HEADER_UP_TO_MAGIC = 17
    MIN_ENTRY_SIZE = 14  # LegacyRecord.RECORD_OVERHEAD_V0 (R-LOG-04)
    ATTR_COMPRESSION_MASK = 0x07
    ATTR_TIMESTAMP_TYPE = 0x08
    ATTR_CONTROL = 0x20


# ------------------------------------------------------------------------------ buffers
cdef class _Held:
    """The buffers one kernel call reads and writes, released when the call returns."""

    cdef Py_buffer views[12]
    cdef int n

    cdef char* take(self, object obj, int ndim, Py_ssize_t itemsize, bint writable, Py_ssize_t* shape) except NULL:
        """A C-contiguous buffer over ``obj`` of rank ``ndim`` and item size ``itemsize``; its
        shape goes to ``shape[0..ndim-1]``."""
        cdef Py_buffer* view = &self.views[self.n]
        cdef int d
        PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | (PyBUF_WRITABLE if writable else 0))
        self.n += 1
        if view.ndim != ndim or view.itemsize != itemsize:
            raise ValueError(f"expected a {ndim}-dimensional array of {itemsize}-byte items, got {view.ndim} dimensions of {view.itemsize}")
        for d in range(ndim):
            shape[d] = view.shape[d]
        if view.buf == NULL:  # an empty buffer may have no address: give one that is never read
            return <char*>&self.n
        return <char*>view.buf

    cdef char* take_offsets(self, object obj, Py_ssize_t* n, bint* wide) except NULL:
        """A writable 1-dimensional buffer of int32 or int64 (Arrow offsets); ``wide`` says which."""
        cdef Py_buffer* view = &self.views[self.n]
        PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)
        self.n += 1
        if view.ndim != 1 or (view.itemsize != 4 and view.itemsize != 8):
            raise ValueError("offsets must be a 1-dimensional array of int32 or int64")
        n[0] = view.shape[0]
        wide[0] = view.itemsize == 8
        return <char*>view.buf if view.buf != NULL else <char*>&self.n

    def __dealloc__(self):
        cdef int i
        for i in range(self.n):
            PyBuffer_Release(&self.views[i])


cdef inline const uint8_t* _bytes(_Held held, object obj, Py_ssize_t* n) except NULL:
    return <const uint8_t*>held.take(obj, 1, 1, False, n)


# ------------------------------------------------------------------------------ field readers
cdef inline Py_ssize_t _short_varint(const uint8_t* buf, Py_ssize_t pos, Py_ssize_t limit, int64_t* value) noexcept nogil:
    """A zig-zag varint of one or two bytes at ``pos`` (``pos < limit``, the second byte read only
    before ``limit``): the next position, or -1 when it is longer or would pass ``limit``."""
    cdef int64_t b0 = buf[pos]
    cdef int64_t b1, v
    if b0 < 0x80:
        value[0] = (b0 >> 1) ^ -(b0 & 1)
        return pos + 1
    if pos + 1 >= limit:
        return -1
    b1 = buf[pos + 1]
    if b1 < 0x80:
        v = (b0 & 0x7F) | (b1 << 7)
        value[0] = (v >> 1) ^ -(v & 1)
        return pos + 2
    return -1


cdef inline Py_ssize_t _span(const uint8_t* buf, Py_ssize_t pos, Py_ssize_t end, int64_t* n, Py_ssize_t* start) noexcept nogil:
    """A length-prefixed field at ``pos`` (key, value, header value): its length (-1 null) to
    ``n``, its first byte to ``start``; the position after it, or the varint's error, or
    ``E_FIELD`` when it runs past ``end`` (R-REC-03)."""
    pos = _varint(buf, pos, end, 5, n)
    start[0] = pos
    if pos >= 0 and n[0] > 0:
        if n[0] > end - pos:
            return E_FIELD
        pos += n[0]
    return pos


cdef inline int64_t _wrap_add(int64_t a, int64_t b) noexcept nogil:
    """``a + b`` wrapping as Java's long (R-REC-01: base plus delta)."""
    return <int64_t>(<uint64_t>a + <uint64_t>b)


# ------------------------------------------------------------------------------ records
cdef struct _Walk:
    # the record area and the arrays a walk writes
    const uint8_t* buf
    Py_ssize_t buf_len
    int64_t* cols  # (9, cap): offset, timestamp, key start, key length, value start, value length, header count, record start, attributes
    Py_ssize_t cap
    int64_t* hdr  # (room, 4)
    Py_ssize_t room
    uint64_t* views  # (2, vcap) or NULL
    Py_ssize_t vcap
    int64_t base


cdef inline void _inline_view(const uint8_t* buf, Py_ssize_t start, int64_t n, uint64_t* lo, uint64_t* hi) noexcept nogil:
    """The two little-endian words of the Arrow binary view of a span of up to 12 bytes: its
    length, then its bytes inline, zero-padded (all zeros when null)."""
    cdef uint64_t a = <uint64_t>(n if n > 0 else 0)
    cdef uint64_t b = 0
    cdef int64_t j
    for j in range(n):
        if j < 4:
            a |= (<uint64_t>buf[start + j]) << (32 + 8 * j)
        else:
            b |= (<uint64_t>buf[start + j]) << (8 * (j - 4))
    lo[0] = a
    hi[0] = b


cdef inline void _view(_Walk* w, int f, Py_ssize_t i, Py_ssize_t start, int64_t n) noexcept nogil:
    """Row ``i``'s Arrow binary view of the span ``buf[start:start+n]`` into ``views`` row ``f``:
    inline up to 12 bytes, else length, first 4 bytes, buffer 0 and the offset from ``base``."""
    cdef uint64_t* out = w.views + f * w.vcap + 2 * i
    if n > 12:
        out[0] = (<uint64_t>n | (<uint64_t>w.buf[start] << 32) | (<uint64_t>w.buf[start + 1] << 40)
                  | (<uint64_t>w.buf[start + 2] << 48) | (<uint64_t>w.buf[start + 3] << 56))
        out[1] = (<uint64_t>(start - w.base)) << 32
    else:
        _inline_view(w.buf, start, n, &out[0], &out[1])


cdef Py_ssize_t _record(_Walk* w, Py_ssize_t* at, Py_ssize_t n, Py_ssize_t i, Py_ssize_t* nh_total) noexcept nogil:
    """Read record ``i`` at ``at[0]`` (record area ending at ``n``) field by field, as
    DefaultRecord.readFrom does (R-REC-02, R-REC-03, R-REC-06, R-PRIM-03, R-PRIM-04), into column
    ``i``: 0 (``at[0]`` moved past the record) or an error status (columnar's ``_record``)."""
    cdef Py_ssize_t pos = at[0]
    cdef const uint8_t* buf = w.buf
    cdef int64_t* cols = w.cols
    cdef Py_ssize_t cap = w.cap
    cdef int64_t length, v, nh, hk, hv
    cdef Py_ssize_t end, start, ks, vs
    cdef int64_t h
    cols[7 * cap + i] = pos
    pos = _varint(buf, pos, n, 5, &length)
    if pos < 0:
        return pos
    if length < 0 or length > n - pos:
        return E_LENGTH
    end = pos + length
    if pos >= end:
        return E_FIELD
    cols[8 * cap + i] = buf[pos]
    pos = _varint(buf, pos + 1, end, 10, &v)
    if pos < 0:
        return pos
    cols[cap + i] = v
    pos = _varint(buf, pos, end, 5, &v)
    if pos < 0:
        return pos
    cols[i] = v
    pos = _span(buf, pos, end, &v, &start)
    cols[2 * cap + i] = start
    if pos < 0:
        return pos
    cols[3 * cap + i] = v
    pos = _span(buf, pos, end, &v, &start)
    cols[4 * cap + i] = start
    if pos < 0:
        return pos
    cols[5 * cap + i] = v
    pos = _varint(buf, pos, end, 5, &nh)
    if pos < 0:
        return pos
    if nh < 0 or nh > end - pos:
        return E_HEADERS
    cols[6 * cap + i] = nh
    for h in range(nh):
        pos = _varint(buf, pos, end, 5, &hk)
        if pos < 0 or hk < 0 or hk > end - pos:
            return E_HEADERS
        ks = pos
        pos += hk
        pos = _varint(buf, pos, end, 5, &hv)
        if pos < 0:
            return E_HEADERS
        vs = pos
        if hv > 0:
            if hv > end - pos:
                return E_HEADERS
            pos += hv
        if nh_total[0] < w.room:
            w.hdr[4 * nh_total[0]] = ks
            w.hdr[4 * nh_total[0] + 1] = hk
            w.hdr[4 * nh_total[0] + 2] = vs
            w.hdr[4 * nh_total[0] + 3] = hv
        nh_total[0] += 1
    if pos != end:
        return E_SIZE_MISMATCH
    at[0] = pos
    return 0


cdef Py_ssize_t _short_headers(_Walk* w, Py_ssize_t p, Py_ssize_t end, int64_t* nh_out, Py_ssize_t* seen) noexcept nogil:
    """The headers of a straight-line record from ``p`` (its header count) to ``end``, every
    varint of one or two bytes (R-REC-05's key and value spans): the position after them (their
    count to ``nh_out``, spans to ``hdr`` while it has room, ``seen`` counted on), or -1 when
    they take another shape (:func:`_record` reads those and names what is wrong)."""
    cdef const uint8_t* buf = w.buf
    cdef int64_t nh, hk, hv
    cdef Py_ssize_t hks, hvs
    cdef int64_t h
    cdef Py_ssize_t s = seen[0]
    if p >= end:
        return -1
    p = _short_varint(buf, p, end, &nh)
    if p < 0 or nh < 0 or nh > end - p:
        return -1
    for h in range(nh):
        if p >= end:
            return -1
        p = _short_varint(buf, p, end, &hk)
        if p < 0 or hk < 0 or hk >= end - p:
            return -1
        hks = p
        p = _short_varint(buf, p + hk, end, &hv)
        if p < 0:
            return -1
        hvs = p
        if hv > 0:
            if hv > end - p:
                return -1
            p += hv
        if s < w.room:
            w.hdr[4 * s] = hks
            w.hdr[4 * s + 1] = hk
            w.hdr[4 * s + 2] = hvs
            w.hdr[4 * s + 3] = hv
        s += 1
    nh_out[0] = nh
    seen[0] = s
    return p


cdef Py_ssize_t _walk_records(
    _Walk* w, Py_ssize_t pos, Py_ssize_t end_area, Py_ssize_t count, Py_ssize_t row, Py_ssize_t* nh_total,
    int64_t base_offset, int64_t base_ts, int64_t max_ts, bint log_append, Py_ssize_t* where,
) noexcept nogil:
    """Walk ``count`` records of the record area ``buf[pos:end_area]`` into columns
    ``row..row+count-1`` (columnar's ``_walk_records``): offsets ``base_offset`` plus each delta,
    timestamps ``base_ts`` plus each delta, or ``max_ts`` when ``log_append`` (R-REC-01, R-V2-12),
    headers to ``hdr`` while it has room, views when ``w.views`` is set. Records whose varints
    are all one or two bytes take a straight loop; any other record, valid or not, is read by
    :func:`_record`. The records must fill the area (R-REC-06). Returns 0 or an error status,
    with the position reached (or the bad record's start) in ``where``."""
    cdef const uint8_t* buf = w.buf
    cdef int64_t* cols = w.cols
    cdef Py_ssize_t cap = w.cap
    cdef Py_ssize_t stop = row + count
    cdef Py_ssize_t i = row
    cdef Py_ssize_t p, end, ks, vs, status
    cdef int64_t length, a, t, o, k, v, nh
    cdef bint with_views = w.views != NULL
    cdef Py_ssize_t last = end_area  # every read of the straight loop is checked to stay before it
    while True:
        while i < stop and pos + 1 < last:
            p = _short_varint(buf, pos, last, &length)
            if p < 0 or length < 6 or length > last - p:
                break
            end = p + length
            # a body of 6+ bytes holds the attributes and the next three varints' bytes
            a = buf[p]
            p = _short_varint(buf, p + 1, end, &t)
            if p < 0:
                break
            p = _short_varint(buf, p, end, &o)
            if p < 0:
                break
            p = _short_varint(buf, p, end, &k)
            if p < 0:
                break
            ks = p
            if k > 0:
                if k >= end - p:
                    break
                p += k
            if p >= end:
                break
            p = _short_varint(buf, p, end, &v)
            if p < 0:
                break
            vs = p
            if v > 0:
                if v >= end - p:
                    break
                p += v
            if p + 1 == end and buf[p] == 0:  # no headers, as most records
                nh = 0
            else:
                p = _short_headers(w, p, end, &nh, nh_total)
                if p != end:  # a long varint, a bad header, or fields that do not fill the record: _record says which
                    break
            cols[i] = _wrap_add(o, base_offset)
            cols[cap + i] = max_ts if log_append else _wrap_add(t, base_ts)
            cols[2 * cap + i] = ks
            cols[3 * cap + i] = k
            cols[4 * cap + i] = vs
            cols[5 * cap + i] = v
            cols[6 * cap + i] = nh
            cols[7 * cap + i] = pos
            cols[8 * cap + i] = a
            if with_views:
                _view(w, 0, i, ks, k)
                _view(w, 1, i, vs, v)
            pos = end
            i += 1
        if i == stop:
            break
        status = _record(w, &pos, end_area, i, nh_total)
        if status != 0:
            where[0] = pos
            return status
        cols[i] = _wrap_add(cols[i], base_offset)
        cols[cap + i] = max_ts if log_append else _wrap_add(cols[cap + i], base_ts)
        if with_views:
            _view(w, 0, i, cols[2 * cap + i], cols[3 * cap + i])
            _view(w, 1, i, cols[4 * cap + i], cols[5 * cap + i])
        i += 1
    where[0] = pos
    if pos != end_area:
        return E_LEFTOVER
    return 0


cdef int _setup(_Walk* w, _Held held, object buf, object cols, object hdr, object views, int64_t base) except -1:
    cdef Py_ssize_t shape[2]
    w.buf = _bytes(held, buf, &w.buf_len)
    w.cols = <int64_t*>held.take(cols, 2, 8, True, shape)
    if shape[0] != 9:
        raise ValueError("cols must have 9 rows")
    w.cap = shape[1]
    w.hdr = <int64_t*>held.take(hdr, 2, 8, True, shape)
    if shape[1] != 4 and shape[0] != 0:
        raise ValueError("hdr must have 4 columns")
    w.room = shape[0]
    w.views = <uint64_t*>held.take(views, 2, 8, True, shape)
    if shape[0] != 2:
        raise ValueError("views must have 2 rows")
    w.vcap = shape[1]
    if w.vcap == 0:
        w.views = NULL
    w.base = base
    return 0


def _walk(buf, Py_ssize_t count, cols, hdr, views):
    """Walk the ``count`` records of one record area (all of ``buf``) into ``cols`` (9 rows),
    header spans into ``hdr`` and, unless ``views`` is empty, Arrow binary views into its two rows
    (R-REC-01 to R-REC-06, R-PRIM-03, R-PRIM-04): (status, position, headers seen), status 0 on
    success; columnar's ``_walk``."""
    cdef _Held held = _Held()
    cdef _Walk w
    cdef Py_ssize_t nh = 0, where = 0, status
    _setup(&w, held, buf, cols, hdr, views, 0)
    if count < 0 or count > w.cap or (w.views != NULL and 2 * count > w.vcap):
        raise ValueError("count exceeds the columns")
    with nogil:
        status = _walk_records(&w, 0, w.buf_len, count, 0, &nh, 0, 0, 0, False, &where)
    return status, where, nh


# ------------------------------------------------------------------------------ spans to Arrow buffers
def gather(buf, starts, lens, offsets, data, Py_ssize_t base):
    """Copy the spans ``buf[starts[i]:starts[i]+lens[i]]`` (null when the length is negative)
    into ``data`` from ``base``, writing Arrow offsets (int32 or int64) to ``offsets[k+i+1]``
    (``k`` = len(offsets) - len(starts) - 1); returns the new end of ``data``. Every span is
    checked against ``buf`` and ``data``."""
    cdef _Held held = _Held()
    cdef Py_ssize_t nbuf, n, nl, no, nd
    cdef const uint8_t* b = _bytes(held, buf, &nbuf)
    cdef const int64_t* s = <const int64_t*>held.take(starts, 1, 8, False, &n)
    cdef const int64_t* ln = <const int64_t*>held.take(lens, 1, 8, False, &nl)
    cdef char* o
    cdef uint8_t* d = <uint8_t*>held.take(data, 1, 1, True, &nd)
    cdef Py_ssize_t i, k, pos = base
    cdef int64_t m
    cdef bint wide
    o = held.take_offsets(offsets, &no, &wide)
    if nl != n or no < n + 1:
        raise ValueError("starts, lens and offsets disagree")
    k = no - n - 1
    if pos < 0 or pos > nd:
        raise IndexError("base outside data")
    with nogil:
        for i in range(n):
            m = ln[i]
            if m > 0:
                if s[i] < 0 or m > nbuf - s[i] or m > nd - pos:
                    with gil:
                        raise IndexError(f"span {i} outside the buffers")
                memcpy(d + pos, b + s[i], m)
                pos += m
            if wide:
                (<int64_t*>o)[k + i + 1] = pos
            else:
                (<int32_t*>o)[k + i + 1] = <int32_t>pos
    return pos


# ------------------------------------------------------------------------------ chunks of batches
cdef inline int64_t _be32(const uint8_t* b, Py_ssize_t p) noexcept nogil:
    """Signed big-endian int32 at ``p``."""
    return <int32_t>((<uint32_t>b[p] << 24) | (<uint32_t>b[p + 1] << 16) | (<uint32_t>b[p + 2] << 8) | <uint32_t>b[p + 3])


cdef inline int64_t _be64(const uint8_t* b, Py_ssize_t p) noexcept nogil:
    """Signed big-endian int64 at ``p``."""
    return <int64_t>((<uint64_t>(<uint32_t>_be32(b, p)) << 32) | <uint64_t>(<uint32_t>_be32(b, p + 4)))


def _frame_chunk(buf, Py_ssize_t pos, Py_ssize_t end, bint compressed, Py_ssize_t max_bytes, Py_ssize_t max_rows, meta, bint verify_crc):
    """Frame the entries of ``buf[pos:end]`` as Kafka's FileLogInputStream does (R-LOG-03 to
    R-LOG-05, R-LOG-07), taking v2 batches that are all uncompressed (or all compressed, per
    ``compressed``, with the uncompressed control batches between them) into ``meta`` (their
    header fields, R-V2-01) until a budget is spent; with
    ``verify_crc``, stop before a batch whose CRC-32C does not match (R-PRIM-07), as Kafka's consumer
    checks each batch before reading it. Returns (stop status, stop position, batches taken, records
    they declare); columnar's ``_frame_chunk``."""
    cdef _Held held = _Held()
    cdef Py_ssize_t nbuf, shape[2]
    cdef const uint8_t* b = _bytes(held, buf, &nbuf)
    cdef int64_t* m = <int64_t*>held.take(meta, 2, 8, True, shape)
    cdef Py_ssize_t cap = shape[0], first = pos, n = 0
    cdef int64_t rows = 0, size, attrs, codec, count, epoch
    cdef int status
    if shape[1] != META_COLUMNS:
        raise ValueError("meta must have 12 columns")
    if end > nbuf or pos < 0:
        raise ValueError("the frame runs outside the buffer")
    with nogil:
        while True:
            if end - pos < HEADER_UP_TO_MAGIC:
                status = F_END if pos >= end else F_TAIL
                break
            size = _be32(b, pos + 8)
            if size < MIN_ENTRY_SIZE:
                status = F_SMALL
                break
            if size > end - pos - 12:
                status = F_TAIL
                break
            if b[pos + 16] != 2 or size < HEADER_SIZE - 12:
                status = F_OTHER
                break
            attrs = (<int64_t>b[pos + 21] << 8) | b[pos + 22]
            codec = attrs & ATTR_COMPRESSION_MASK
            count = _be32(b, pos + 57)
            if codec > 4 or count < 0 or (codec == 0 and count > size + 12 - HEADER_SIZE):
                status = F_OTHER
                break
            if (codec != 0) != compressed and not (compressed and attrs & ATTR_CONTROL):
                status = F_SWITCH
                break
            if n > 0 and (n == cap or pos + 12 + size - first > max_bytes or rows + count > max_rows):
                status = F_FULL
                break
            if n == cap:  # no room even for one batch: a caller's bug
                status = E_ARGUMENTS
                break
            if verify_crc and crc32c_c(b + pos + CRC_START, 12 + size - CRC_START) != <uint32_t>_be32(b, pos + 17):
                status = F_CRC
                break
            m[n * META_COLUMNS + M_POS] = pos
            m[n * META_COLUMNS + M_SIZE] = 12 + size
            m[n * META_COLUMNS + M_ATTRS] = attrs
            m[n * META_COLUMNS + M_COUNT] = count
            m[n * META_COLUMNS + M_BASE_OFFSET] = _be64(b, pos)
            m[n * META_COLUMNS + M_BASE_TS] = _be64(b, pos + 27)
            m[n * META_COLUMNS + M_MAX_TS] = _be64(b, pos + 35)
            m[n * META_COLUMNS + M_LAST_DELTA] = _be32(b, pos + 23)
            m[n * META_COLUMNS + M_LEADER_EPOCH] = _be32(b, pos + 12)
            m[n * META_COLUMNS + M_PRODUCER_ID] = _be64(b, pos + 43)
            epoch = (<int64_t>b[pos + 51] << 8) | b[pos + 52]
            m[n * META_COLUMNS + M_PRODUCER_EPOCH] = epoch - 65536 if epoch >= 32768 else epoch
            m[n * META_COLUMNS + M_BASE_SEQUENCE] = _be32(b, pos + 53)
            n += 1
            rows += count
            pos += 12 + size
    if status == E_ARGUMENTS:
        raise ValueError("meta has no row")
    return status, pos, n, rows


def _walk_chunk(buf, meta, areas, Py_ssize_t n, cols, hdr, kv_offsets, key_data, value_data, state, views, int64_t base):
    """Walk the records of batches ``state[0]..n-1`` (batch i's record area is
    ``buf[areas[i, 0]:areas[i, 1]]``) into consecutive columns of ``cols`` from row ``state[1]``
    (R-REC-01 to R-REC-06; a batch of no records is not read, R-REC-07), copying each batch's keys
    and values to ``key_data`` / ``value_data`` with Arrow offsets in ``kv_offsets`` rows 0 and 1,
    or, unless ``views`` is empty, writing their Arrow binary views instead. ``state`` (next batch,
    next row, key bytes, value bytes, headers seen) lets a call that ran out of room (status 1)
    resume. Returns (status, batch, position); columnar's ``_walk_chunk``."""
    cdef _Held held = _Held()
    cdef _Walk w
    cdef Py_ssize_t shape[2]
    cdef Py_ssize_t nmeta, nareas, kvcap, nkey, nval, nstate
    _setup(&w, held, buf, cols, hdr, views, base)
    cdef const int64_t* m = <const int64_t*>held.take(meta, 2, 8, False, shape)
    nmeta = shape[0]
    if shape[1] != META_COLUMNS:
        raise ValueError("meta must have 12 columns")
    cdef const int64_t* ar = <const int64_t*>held.take(areas, 2, 8, False, shape)
    nareas = shape[0]
    if shape[1] != 2 and nareas:
        raise ValueError("areas must have 2 columns")
    cdef int64_t* kv = <int64_t*>held.take(kv_offsets, 2, 8, True, shape)
    kvcap = shape[1]
    if shape[0] != 2:
        raise ValueError("kv_offsets must have 2 rows")
    cdef uint8_t* kd = <uint8_t*>held.take(key_data, 1, 1, True, &nkey)
    cdef uint8_t* vd = <uint8_t*>held.take(value_data, 1, 1, True, &nval)
    cdef int64_t* st = <int64_t*>held.take(state, 1, 8, True, &nstate)
    if nstate < 5 or n > nmeta or n > nareas:
        raise ValueError("state, meta and areas must cover the batches")
    cdef Py_ssize_t row = st[ST_ROW], kpos = st[ST_KEY_END], vpos = st[ST_VALUE_END], nh = st[ST_HEADERS]
    cdef Py_ssize_t i, r, lo, hi, room, status = 0, where = 0, ln
    cdef int64_t count, attrs
    cdef bint copy = w.views == NULL
    with nogil:
        i = st[ST_BATCH]
        while i < n:
            count = m[i * META_COLUMNS + M_COUNT]
            if count == 0:
                i += 1
                continue
            lo = ar[2 * i]
            hi = ar[2 * i + 1]
            room = hi - lo
            if lo < 0 or hi > w.buf_len or room < 0 or count < 0 or count > w.cap - row or (copy and row + count >= kvcap) or (
                    not copy and 2 * (row + count) > w.vcap) or kpos < 0 or vpos < 0:
                status = E_ARGUMENTS
                break
            if copy and (room > nkey - kpos or room > nval - vpos):
                st[ST_BATCH] = i
                st[ST_ROW] = row
                st[ST_KEY_END] = kpos
                st[ST_VALUE_END] = vpos
                st[ST_HEADERS] = nh
                status = NEED_ROOM
                where = 0
                break
            attrs = m[i * META_COLUMNS + M_ATTRS]
            status = _walk_records(&w, lo, hi, count, row, &nh, m[i * META_COLUMNS + M_BASE_OFFSET], m[i * META_COLUMNS + M_BASE_TS],
                                   m[i * META_COLUMNS + M_MAX_TS], (attrs & ATTR_TIMESTAMP_TYPE) != 0, &where)
            if status != 0:
                break
            if copy:  # each span lies inside this batch's record area (the walk checked it): ``room`` bytes at most
                for r in range(row, row + count):
                    ln = w.cols[3 * w.cap + r]
                    if ln > 0:
                        memcpy(kd + kpos, w.buf + w.cols[2 * w.cap + r], ln)
                        kpos += ln
                    kv[r + 1] = kpos
                for r in range(row, row + count):
                    ln = w.cols[5 * w.cap + r]
                    if ln > 0:
                        memcpy(vd + vpos, w.buf + w.cols[4 * w.cap + r], ln)
                        vpos += ln
                    kv[kvcap + r + 1] = vpos
            row += count
            i += 1
        if status == 0:
            st[ST_BATCH] = n
            st[ST_ROW] = row
            st[ST_KEY_END] = kpos
            st[ST_VALUE_END] = vpos
            st[ST_HEADERS] = nh
            where = 0
            i = n
    if status == E_ARGUMENTS:
        raise ValueError(f"batch {i}: its record area or records do not fit the arrays given")
    return status, i, where


# ------------------------------------------------------------------------------ kafkalog verify
def _frame(buf, Py_ssize_t end, positions, bint fill):
    """Frame the log entries of ``buf[:end]`` from byte 0 as Kafka's FileLogInputStream does
    (R-LOG-03 to R-LOG-05): (entries, stop position, stop status: 0 clean end, 1 torn tail, 2 size
    below the minimum); with ``fill`` the entry positions go to ``positions``. validate's ``_frame``."""
    cdef _Held held = _Held()
    cdef Py_ssize_t nbuf, npos
    cdef const uint8_t* b = _bytes(held, buf, &nbuf)
    cdef int64_t* out = <int64_t*>held.take(positions, 1, 8, True, &npos)
    cdef Py_ssize_t pos = 0, n = 0
    cdef int64_t size
    cdef int status
    if end > nbuf or end < 0:
        raise ValueError("end is outside the buffer")
    with nogil:
        while True:
            if end - pos < HEADER_UP_TO_MAGIC:
                status = 0 if pos >= end else 1
                break
            size = _be32(b, pos + 8)
            if size < MIN_ENTRY_SIZE:
                status = 2
                break
            if size > end - pos - 12:
                status = 1
                break
            if fill:
                if n >= npos:
                    status = E_ARGUMENTS
                    break
                out[n] = pos
            n += 1
            pos += 12 + size
    if status == E_ARGUMENTS:
        raise ValueError("positions has too few rows")
    return n, pos, status


def _verify_records(buf, starts, ends, counts, last_delta, status, where, max_delta):
    """Walk the records of uncompressed v2 batches (record area ``buf[starts[i]:ends[i]]``) as
    DefaultRecord.readFrom reads them (R-REC-02, R-REC-03, R-REC-06, R-REC-08, R-PRIM-03,
    R-PRIM-04, R-VFY-02); per batch: status (0 ok), error position, largest timestamp delta.
    validate's ``_walk_records``."""
    cdef _Held held = _Held()
    cdef Py_ssize_t nbuf, nb, k
    cdef const uint8_t* b = _bytes(held, buf, &nbuf)
    cdef const int64_t* st = <const int64_t*>held.take(starts, 1, 8, False, &nb)
    cdef const int64_t* en = <const int64_t*>held.take(ends, 1, 8, False, &k)
    if k != nb:
        raise ValueError("ends and starts differ in length")
    cdef const int64_t* cn = <const int64_t*>held.take(counts, 1, 8, False, &k)
    if k != nb:
        raise ValueError("counts and starts differ in length")
    cdef const int64_t* ld = <const int64_t*>held.take(last_delta, 1, 8, False, &k)
    if k != nb:
        raise ValueError("last_delta and starts differ in length")
    cdef int64_t* out = <int64_t*>held.take(status, 1, 8, True, &k)
    if k != nb:
        raise ValueError("status and starts differ in length")
    cdef int64_t* wh = <int64_t*>held.take(where, 1, 8, True, &k)
    if k != nb:
        raise ValueError("where and starts differ in length")
    cdef int64_t* md = <int64_t*>held.take(max_delta, 1, 8, True, &k)
    if k != nb:
        raise ValueError("max_delta and starts differ in length")
    cdef Py_ssize_t i, pos, end_b, end, start, s
    cdef int64_t count, prev, length, tsd, od, n, nh, hk, h, j
    cdef bint bad = False
    for i in range(nb):
        if st[i] < 0 or en[i] > nbuf or st[i] > en[i]:
            raise ValueError(f"batch {i}: its record area is outside the buffer")
    with nogil:
        for i in range(nb):
            pos = st[i]
            end_b = en[i]
            count = cn[i]
            out[i] = 0
            md[i] = INT64_MIN
            if count < 0 or count > end_b - pos:
                out[i] = E_COUNT
                wh[i] = pos
                continue
            prev = -1
            start = pos
            for j in range(count):
                start = pos
                pos = _varint(b, pos, end_b, 5, &length)
                if pos < 0:
                    break
                if length < 0 or length > end_b - pos:
                    pos = E_LENGTH
                    break
                end = pos + length
                if pos >= end:
                    pos = E_FIELD
                    break
                pos = _varint(b, pos + 1, end, 10, &tsd)
                if pos < 0:
                    break
                pos = _varint(b, pos, end, 5, &od)
                if pos < 0:
                    break
                if od <= prev:
                    pos = E_OFFSET_ORDER
                    break
                if od > ld[i]:
                    pos = E_OFFSET_DELTA
                    break
                prev = od
                if tsd > md[i]:
                    md[i] = tsd
                pos = _span(b, pos, end, &n, &s)  # key
                if pos < 0:
                    break
                pos = _span(b, pos, end, &n, &s)  # value
                if pos < 0:
                    break
                pos = _varint(b, pos, end, 5, &nh)
                if pos < 0:
                    break
                if nh < 0 or nh > end - pos:
                    pos = E_HEADERS
                    break
                for h in range(nh):
                    pos = _varint(b, pos, end, 5, &hk)
                    if pos < 0 or hk < 0 or hk > end - pos:
                        pos = E_HEADERS
                        break
                    pos = _span(b, pos + hk, end, &n, &s)
                    if pos < 0:
                        pos = E_HEADERS
                        break
                if pos < 0:
                    break
                if pos != end:
                    pos = E_SIZE_MISMATCH
                    break
            if pos < 0:
                out[i] = pos
                wh[i] = start
                continue
            if pos != end_b:
                out[i] = E_LEFTOVER
                wh[i] = pos


# ------------------------------------------------------------------------------ compressed chunks
cdef enum:
    I_ROOM = 1
    I_PYTHON = 2
    CODEC_NONE = 0
    CODEC_GZIP = 1
    CODEC_LZ4 = 3
    LZ4_BLOCK = 64 * 1024  # the block maximum of Kafka's lz4 header (BD 0x40)
    # kafkalog.fast.native's results besides a size
    NATIVE_BAD = -1
    NATIVE_ROOM = -2


cdef Py_ssize_t _lz4_frame(const uint8_t* data, Py_ssize_t pos, Py_ssize_t end, object data_obj, uint8_t* dbuf, Py_ssize_t ndbuf,
                           object dbuf_obj, Py_ssize_t at, int64_t max_size, const uint8_t* header, object lz4_block) except? -100:
    """Decompress the lz4 frame ``data[pos:end]`` into ``dbuf`` from ``at`` if it is exactly as
    Kafka writes it (its 7-byte header, 64 KiB blocks without checksums; R-LZ4-01 ff.): the end of
    what was written, ``NATIVE_ROOM`` when ``dbuf`` lacks room, or ``NATIVE_BAD`` for anything
    else (which the codec module then reads and reports). Blocks are decompressed by ``lz4_block``
    (:func:`kafkalog.fast.native.lz4_block`), through its C function ``lz4_block_c`` when that is
    bound; the frame walk and stored blocks are done here."""
    cdef Py_ssize_t start = at, j
    cdef int64_t size, got
    cdef bint stored
    if end - pos < 7:
        return NATIVE_BAD
    for j in range(7):
        if data[pos + j] != header[j]:
            return NATIVE_BAD
    pos += 7
    while True:
        if end - pos < 4:
            return NATIVE_BAD
        size = <int64_t>(<uint32_t>data[pos] | (<uint32_t>data[pos + 1] << 8) | (<uint32_t>data[pos + 2] << 16) | (<uint32_t>data[pos + 3] << 24))
        pos += 4
        if size == 0:
            return at  # the end mark (bytes after it are not read, as in Kafka)
        stored = (size & 0x80000000) != 0
        size &= 0x7FFFFFFF
        if size > LZ4_BLOCK or size > end - pos:
            return NATIVE_BAD
        if at + LZ4_BLOCK > ndbuf:
            return NATIVE_ROOM
        if stored:
            memcpy(dbuf + at, data + pos, size)
            at += size
        else:
            if lz4_bound():  # the C function itself, the span checked above: no Python call per block
                got = lz4_block_c(data + pos, size, dbuf + at, LZ4_BLOCK)
            else:
                got = lz4_block(data_obj, pos, size, dbuf_obj, at, LZ4_BLOCK)
            if got < 0 or got > LZ4_BLOCK:
                return NATIVE_BAD
            at += got
        if at - start > max_size:
            return NATIVE_BAD
        pos += size


def _inflate_chunk(data, meta, Py_ssize_t n, dbuf, areas, state, int64_t max_bytes, int64_t max_size, int64_t codecs, zstd,
                   bytes lz4_header, lz4_block, zstd_frames, gzip_members):
    """Decompress the payloads of batches ``state[0]..n-1`` into ``dbuf`` from ``state[1]``, writing
    each one's record area to ``areas``, and stop after the batch that passes ``max_bytes``: one
    call for a chunk. lz4 frames are walked here (their blocks decompressed by ``lz4_block``), zstd
    payloads by ``zstd_frames`` and gzip ones by ``gzip_members`` (:mod:`kafkalog.fast.native`, with
    the thread's contexts ``zstd``); ``codecs`` has bit c set for each codec
    id c this may decompress. Returns (status, batch): 0 and the batches done, or 1 / 2 and the batch
    to grow ``dbuf`` for / to hand to the codec module (any irregular batch, so that it raises its
    precise errors); ``state`` says where to resume. columnar's ``_inflate_chunk``."""
    cdef _Held held = _Held()
    cdef Py_ssize_t shape[2]
    cdef Py_ssize_t ndata, ndbuf, nareas, nstate, nmeta
    cdef const uint8_t* d = _bytes(held, data, &ndata)
    cdef const int64_t* m = <const int64_t*>held.take(meta, 2, 8, False, shape)
    nmeta = shape[0]
    if shape[1] != META_COLUMNS:
        raise ValueError("meta must have 12 columns")
    cdef uint8_t* out = <uint8_t*>held.take(dbuf, 1, 1, True, &ndbuf)
    cdef int64_t* ar = <int64_t*>held.take(areas, 2, 8, True, shape)
    nareas = shape[0]
    if shape[1] != 2 and nareas:
        raise ValueError("areas must have 2 columns")
    cdef int64_t* st = <int64_t*>held.take(state, 1, 8, True, &nstate)
    if nstate < 2 or n > nmeta or n > nareas or len(lz4_header) != 7:
        raise ValueError("state, meta and areas must cover the batches")
    cdef const uint8_t* header = lz4_header
    cdef void* ctx = (<DCtx>zstd).ptr if isinstance(zstd, DCtx) and zstd_bound() else NULL
    cdef void* gz = (<DCtx>zstd).gz if isinstance(zstd, DCtx) and gzip_bound() else NULL
    cdef int64_t at = st[1], start, count, codec, room, got, pos, end
    cdef Py_ssize_t i
    if at < 0 or at > ndbuf:
        raise ValueError("the resume position is outside dbuf")
    for i in range(st[0], n):
        st[0] = i
        st[1] = at
        count = m[i * META_COLUMNS + M_COUNT]
        start = at
        if count:
            codec = m[i * META_COLUMNS + M_ATTRS] & ATTR_COMPRESSION_MASK
            if not (codecs >> codec) & 1:
                return I_PYTHON, i
            pos = m[i * META_COLUMNS + M_POS] + HEADER_SIZE
            end = m[i * META_COLUMNS + M_POS] + m[i * META_COLUMNS + M_SIZE]
            if pos < 0 or end > ndata or pos > end:
                raise ValueError(f"batch {i} lies outside data")
            if codec == CODEC_NONE:  # a transaction marker among compressed batches: copied as it is
                if end - pos > max_size:
                    return I_PYTHON, i
                if end - pos > ndbuf - at:
                    return I_ROOM, i
                memcpy(out + at, d + pos, end - pos)
                at += end - pos
            elif codec == CODEC_LZ4:
                at = _lz4_frame(d, pos, end, data, out, ndbuf, dbuf, at, max_size, header, lz4_block)
            else:  # zstd or gzip, the only other codecs ``codecs`` may hold
                room = ndbuf - at
                if codec == CODEC_GZIP:
                    if gz != NULL:  # the C function itself, the spans checked above
                        with nogil:
                            got = gzip_members_c(gz, d + pos, end - pos, out + at, min(room, max_size + 1))
                    else:
                        got = gzip_members(zstd, data, pos, end - pos, dbuf, at, min(room, max_size + 1))
                elif ctx != NULL:  # the C function itself, the spans checked above
                    got = zstd_frames_c(ctx, d + pos, end - pos, out + at, min(room, max_size + 1))
                else:
                    got = zstd_frames(zstd, data, pos, end - pos, dbuf, at, min(room, max_size + 1))
                if got == NATIVE_ROOM and room > max_size:
                    got = NATIVE_BAD  # more than max_size bytes: the codec module says so
                if got > room:
                    got = NATIVE_BAD
                at = got if got < 0 else at + got
                if got > max_size:
                    at = NATIVE_BAD
            if at == NATIVE_ROOM:
                return I_ROOM, i
            if at < 0 or count > at - start:
                return I_PYTHON, i
        ar[2 * i] = start
        ar[2 * i + 1] = at
        if at > max_bytes:
            st[0] = i + 1
            st[1] = at
            return 0, i + 1
    st[0] = n
    st[1] = at
    return 0, n
