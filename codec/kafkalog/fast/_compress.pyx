# cython: language_level=3
"""The compiled twins of :mod:`kafkalog.format.compressors`: lz4-java's fast LZ4 block compressor
(liblz4's, in its 64 KiB mode) and libsnappy 1.1.10's raw compressor (SPEC.md R-LZ4-07, R-SNAPPY-05).

Each function takes any contiguous buffer and returns exactly the bytes of its pure-Python twin of
the same name (tests/format/test_compressors.py holds both to lz4-java's and snappy-java's own
output). The input is read through a ``Py_buffer`` and raw pointers, every read inside it; the
output is written into a buffer of the format's worst-case size; the work runs without the GIL.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint16_t, uint32_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

cdef enum:
    LZ4_64K_LIMIT = 65536 + 11
    LZ4_LAST_LITERALS = 5
    LZ4_MF_LIMIT = 12
    LZ4_HASH_SHIFT = 19  # 32 - 13: 8192 entries
    SNAPPY_FRAGMENT = 65536
    SNAPPY_INPUT_MARGIN = 15
    SNAPPY_MAX_TABLE = 16384
    SNAPPY_MIN_TABLE = 256
    SNAPPY_HASH_SHIFT = 18

cdef uint32_t LZ4_PRIME = 2654435761u
cdef uint32_t SNAPPY_MAGIC = 0x1E35A7BDu


cdef inline uint32_t _word(const uint8_t* p) noexcept nogil:
    """The 4 bytes at p as a little-endian uint32, on any machine."""
    return <uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


# ---------------------------------------------------------------------------------------- lz4
cdef inline Py_ssize_t _lz4_len(uint8_t* out, Py_ssize_t op, Py_ssize_t n) noexcept nogil:
    while n >= 255:
        out[op] = 255
        op += 1
        n -= 255
    out[op] = <uint8_t>n
    return op + 1


cdef inline uint32_t _lz4_hash(const uint8_t* p) noexcept nogil:
    return (_word(p) * LZ4_PRIME) >> LZ4_HASH_SHIFT


cdef Py_ssize_t _lz4_block(const uint8_t* src, Py_ssize_t n, uint8_t* out) noexcept nogil:
    """R-LZ4-07 items 1-6 (the same steps as kafkalog.format.compressors.lz4_block)."""
    cdef uint16_t table[8192]
    cdef Py_ssize_t op = 0, anchor = 0, s, fwd, ref, run, token, length, src_limit, mf_limit
    cdef Py_ssize_t step, attempts, offset
    cdef uint32_t h
    cdef bint found
    if n >= LZ4_MF_LIMIT + 1:
        memset(table, 0, sizeof(table))
        src_limit = n - LZ4_LAST_LITERALS
        mf_limit = n - LZ4_MF_LIMIT
        s = 1
        while True:
            fwd = s
            step = 1
            attempts = 64
            found = False
            while True:
                s = fwd
                fwd += step
                step = attempts >> 6
                attempts += 1
                if fwd > mf_limit + 1:
                    break
                h = _lz4_hash(src + s)
                ref = table[h]
                table[h] = <uint16_t>s
                if _word(src + ref) == _word(src + s):
                    found = True
                    break
            if not found:
                break
            while ref > 0 and s > anchor and src[ref - 1] == src[s - 1]:
                ref -= 1
                s -= 1
            run = s - anchor
            token = op
            op += 1
            if run >= 15:
                out[token] = 0xF0
                op = _lz4_len(out, op, run - 15)
            else:
                out[token] = <uint8_t>(run << 4)
            memcpy(out + op, src + anchor, run)
            op += run
            while True:
                offset = s - ref
                out[op] = <uint8_t>(offset & 0xFF)
                out[op + 1] = <uint8_t>(offset >> 8)
                op += 2
                s += 4
                ref += 4
                length = 0
                while s + length < src_limit and src[ref + length] == src[s + length]:
                    length += 1
                s += length
                if length >= 15:
                    out[token] |= 15
                    op = _lz4_len(out, op, length - 15)
                else:
                    out[token] |= <uint8_t>length
                if s > mf_limit:
                    anchor = s
                    break
                table[_lz4_hash(src + s - 2)] = <uint16_t>(s - 2)
                h = _lz4_hash(src + s)
                ref = table[h]
                table[h] = <uint16_t>s
                if _word(src + s) != _word(src + ref):
                    break
                token = op
                out[op] = 0
                op += 1
            if s > mf_limit:
                break
            anchor = s
            s += 1
    run = n - anchor
    if run >= 15:
        out[op] = 0xF0
        op = _lz4_len(out, op + 1, run - 15)
    else:
        out[op] = <uint8_t>(run << 4)
        op += 1
    memcpy(out + op, src + anchor, run)
    return op + run


def lz4_block(src) -> bytes:
    """One raw LZ4 block of ``src`` exactly as lz4-java 1.8.0's fast compressor writes it (R-LZ4-07);
    inputs shorter than 65,547 bytes only."""
    cdef Py_buffer view
    cdef uint8_t* out
    cdef Py_ssize_t n, size
    PyObject_GetBuffer(src, &view, PyBUF_SIMPLE)
    try:
        n = view.len
        if n >= LZ4_64K_LIMIT:
            raise ValueError(f"lz4 block input of {n} bytes is not below {LZ4_64K_LIMIT}")
        out = <uint8_t*>malloc(n + n // 255 + 16)
        if out == NULL:
            raise MemoryError()
        try:
            with nogil:
                size = _lz4_block(<const uint8_t*>view.buf, n, out)
            return PyBytes_FromStringAndSize(<char*>out, size)
        finally:
            free(out)
    finally:
        PyBuffer_Release(&view)


# ------------------------------------------------------------------------------------- snappy
cdef inline Py_ssize_t _snappy_literal(uint8_t* out, Py_ssize_t op, const uint8_t* lit, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t n = k - 1, count = 0, v
    if n < 60:
        out[op] = <uint8_t>(n << 2)
        op += 1
    else:
        v = n
        while v:
            count += 1
            v >>= 8
        out[op] = <uint8_t>((59 + count) << 2)
        op += 1
        v = n
        while count:
            out[op] = <uint8_t>(v & 0xFF)
            op += 1
            v >>= 8
            count -= 1
    memcpy(out + op, lit, k)
    return op + k


cdef inline Py_ssize_t _snappy_copy_upto64(uint8_t* out, Py_ssize_t op, Py_ssize_t offset, Py_ssize_t length) noexcept nogil:
    if length < 12 and offset < 2048:
        out[op] = <uint8_t>(1 | ((length - 4) << 2) | ((offset >> 8) << 5))
        out[op + 1] = <uint8_t>(offset & 0xFF)
        return op + 2
    out[op] = <uint8_t>(2 | ((length - 1) << 2))
    out[op + 1] = <uint8_t>(offset & 0xFF)
    out[op + 2] = <uint8_t>(offset >> 8)
    return op + 3


cdef inline Py_ssize_t _snappy_copy(uint8_t* out, Py_ssize_t op, Py_ssize_t offset, Py_ssize_t length) noexcept nogil:
    while length >= 68:
        op = _snappy_copy_upto64(out, op, offset, 64)
        length -= 64
    if length > 64:
        op = _snappy_copy_upto64(out, op, offset, 60)
        length -= 60
    return _snappy_copy_upto64(out, op, offset, length)


cdef inline uint32_t _snappy_hash(const uint8_t* p, uint32_t mask) noexcept nogil:
    return ((_word(p) * SNAPPY_MAGIC) >> SNAPPY_HASH_SHIFT) & mask


cdef Py_ssize_t _snappy_fragment(const uint8_t* frag, Py_ssize_t n, uint8_t* out, Py_ssize_t op, uint16_t* table) noexcept nogil:
    """R-SNAPPY-05 items 2-6 for one fragment (kafkalog.format.compressors._snappy_fragment)."""
    cdef Py_ssize_t ip = 0, next_emit, ip_limit, candidate = 0, base, length, step, next_ip, i
    cdef Py_ssize_t skip
    cdef uint32_t size, mask, h
    cdef bint found
    if n >= SNAPPY_INPUT_MARGIN:
        if n > SNAPPY_MAX_TABLE:
            size = SNAPPY_MAX_TABLE
        elif n < SNAPPY_MIN_TABLE:
            size = SNAPPY_MIN_TABLE
        else:
            size = 1
            while size < <uint32_t>n:
                size <<= 1
        mask = size - 1
        memset(table, 0, size * sizeof(uint16_t))
        ip_limit = n - SNAPPY_INPUT_MARGIN
        while True:
            next_emit = ip
            ip += 1
            skip = 32
            found = False
            if ip_limit - ip >= 16:
                for i in range(16):
                    h = _snappy_hash(frag + ip + i, mask)
                    candidate = table[h]
                    table[h] = <uint16_t>(ip + i)
                    if _word(frag + candidate) == _word(frag + ip + i):
                        ip += i
                        found = True
                        break
                if not found:
                    ip += 16
                    skip += 16
            if not found:
                while True:
                    h = _snappy_hash(frag + ip, mask)
                    step = skip >> 5
                    skip += step
                    next_ip = ip + step
                    if next_ip > ip_limit:
                        ip = next_emit
                        break
                    candidate = table[h]
                    table[h] = <uint16_t>ip
                    if _word(frag + candidate) == _word(frag + ip):
                        found = True
                        break
                    ip = next_ip
                if not found:
                    break
            op = _snappy_literal(out, op, frag + next_emit, ip - next_emit)
            while True:
                base = ip
                length = 4
                while ip + length < n and frag[candidate + length] == frag[ip + length]:
                    length += 1
                ip += length
                op = _snappy_copy(out, op, base - candidate, length)
                if ip >= ip_limit:
                    break
                table[_snappy_hash(frag + ip - 1, mask)] = <uint16_t>(ip - 1)
                h = _snappy_hash(frag + ip, mask)
                candidate = table[h]
                table[h] = <uint16_t>ip
                if _word(frag + candidate) != _word(frag + ip):
                    break
            if ip >= ip_limit:
                break
    if ip < n:
        op = _snappy_literal(out, op, frag + ip, n - ip)
    return op


def snappy_raw(src) -> bytes:
    """Raw snappy of ``src`` exactly as libsnappy 1.1.10 compresses it (R-SNAPPY-05): the length as
    a varint, then each 64 KiB fragment."""
    cdef Py_buffer view
    cdef uint8_t* out
    cdef uint16_t* table
    cdef Py_ssize_t n, op = 0, start, frag
    cdef size_t v
    PyObject_GetBuffer(src, &view, PyBUF_SIMPLE)
    try:
        n = view.len
        out = <uint8_t*>malloc(32 + n + n // 6 + 10)  # libsnappy's MaxCompressedLength, and the varint
        table = <uint16_t*>malloc(SNAPPY_MAX_TABLE * sizeof(uint16_t))
        if out == NULL or table == NULL:
            free(out)
            free(table)
            raise MemoryError()
        try:
            with nogil:
                v = <size_t>n
                while v >= 0x80:
                    out[op] = <uint8_t>((v & 0x7F) | 0x80)
                    op += 1
                    v >>= 7
                out[op] = <uint8_t>v
                op += 1
                start = 0
                while start < n:
                    frag = n - start if n - start < SNAPPY_FRAGMENT else SNAPPY_FRAGMENT
                    op = _snappy_fragment(<const uint8_t*>view.buf + start, frag, out, op, table)
                    start += frag
            return PyBytes_FromStringAndSize(<char*>out, op)
        finally:
            free(out)
            free(table)
    finally:
        PyBuffer_Release(&view)
