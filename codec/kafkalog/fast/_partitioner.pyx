# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Kafka's murmur2 in C (SPEC R-WR-08): ``Utils.murmur2`` @1eb7644 computed in unsigned 32-bit
arithmetic, which wraps as Java's int does; Java's ``>>>`` is the unsigned shift here.

:mod:`kafkalog.fast.partitioner` holds the plain-Python twin the tests hold this to.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int32_t, int64_t, uint32_t


cdef inline uint32_t _murmur2(const unsigned char* data, Py_ssize_t length) noexcept nogil:
    cdef uint32_t m = 0x5BD1E995U
    cdef uint32_t h = 0x9747B28CU ^ <uint32_t>length
    cdef uint32_t k
    cdef Py_ssize_t i, p
    cdef Py_ssize_t tail = length & ~(<Py_ssize_t>3)
    for i in range(length // 4):
        p = 4 * i
        k = data[p] | (<uint32_t>data[p + 1] << 8) | (<uint32_t>data[p + 2] << 16) | (<uint32_t>data[p + 3] << 24)
        k *= m
        k ^= k >> 24
        k *= m
        h *= m
        h ^= k
    i = length % 4
    if i == 3:
        h ^= <uint32_t>data[tail + 2] << 16
    if i >= 2:
        h ^= <uint32_t>data[tail + 1] << 8
    if i >= 1:
        h ^= data[tail]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return h


def murmur2(data) -> int:
    """Kafka's murmur2 of the bytes of ``data`` (any buffer), as the signed 32-bit int ``Utils.murmur2`` returns."""
    cdef Py_buffer view
    cdef uint32_t h
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
    try:
        h = _murmur2(<const unsigned char*>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return <int32_t>h


def positive_hashes(data, offsets, valid, out) -> None:
    """``out[i] = toPositive(murmur2(data[offsets[i]:offsets[i + 1]]))`` for each valid key, -1 for
    the others: ``data`` bytes, ``offsets`` int64 (one more than ``out``), ``valid`` one byte per key,
    ``out`` int64. Every span is checked against ``data`` (ValueError if one is outside it)."""
    cdef Py_buffer d, o, v, r
    cdef const unsigned char* bytes_
    cdef const int64_t* offs
    cdef const unsigned char* ok
    cdef int64_t* res
    cdef Py_ssize_t n, i
    cdef int64_t a, z
    PyObject_GetBuffer(data, &d, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(offsets, &o, PyBUF_SIMPLE)
        try:
            PyObject_GetBuffer(valid, &v, PyBUF_SIMPLE)
            try:
                PyObject_GetBuffer(out, &r, PyBUF_SIMPLE | 0x0001)  # PyBUF_WRITABLE
                try:
                    n = r.len // 8
                    if o.len != 8 * (n + 1) or v.len != n:
                        raise ValueError("offsets, valid and out do not describe the same number of keys")
                    bytes_ = <const unsigned char*>d.buf
                    offs = <const int64_t*>o.buf
                    ok = <const unsigned char*>v.buf
                    res = <int64_t*>r.buf
                    for i in range(n):
                        if ok[i]:
                            a = offs[i]
                            z = offs[i + 1]
                            if a < 0 or z < a or z > d.len:
                                raise ValueError(f"key {i} spans bytes {a}..{z}, outside the {d.len} bytes of data")
                            res[i] = _murmur2(bytes_ + a, <Py_ssize_t>(z - a)) & 0x7FFFFFFF
                        else:
                            res[i] = -1
                finally:
                    PyBuffer_Release(&r)
            finally:
                PyBuffer_Release(&v)
        finally:
            PyBuffer_Release(&o)
    finally:
        PyBuffer_Release(&d)
