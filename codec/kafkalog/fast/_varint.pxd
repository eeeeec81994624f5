# Kafka's varint and varlong reader for the compiled modules (``cimport kafkalog.fast._varint``): one
# definition, inlined where it is used (the columnar walk, verify's walk and the record-object walker).
# Nothing here exists at run time: the module is this declaration file alone.
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cdef enum:
    VARINT_TRUNCATED = -1  # the bytes end inside the varint
    VARINT_TOO_LONG = -2  # more bytes than a varint (5) or a varlong (10) may take


cdef inline Py_ssize_t read_varint(const uint8_t* buf, Py_ssize_t pos, Py_ssize_t end, int max_bytes, int64_t* value) noexcept nogil:
    """The zig-zag varint at ``pos`` (bytes before ``end``) into ``value``: the next position, or
    ``VARINT_TRUNCATED`` / ``VARINT_TOO_LONG``. A 5-byte varint keeps the low 32 bits of what it carries and a
    10-byte varlong the low 64, as Java's ByteUtils (R-PRIM-03, R-PRIM-04)."""
    cdef uint64_t result = 0
    cdef uint64_t b
    cdef int64_t b0, b1, v
    cdef int shift = 0
    cdef int k
    if pos < end:
        b0 = buf[pos]
        if b0 < 0x80:
            value[0] = (b0 >> 1) ^ -(b0 & 1)
            return pos + 1
        if pos + 1 < end:
            b1 = buf[pos + 1]
            if b1 < 0x80:
                v = (b0 & 0x7F) | (b1 << 7)
                value[0] = (v >> 1) ^ -(v & 1)
                return pos + 2
    for k in range(max_bytes):
        if pos >= end:
            value[0] = 0
            return VARINT_TRUNCATED
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            if max_bytes == 5:
                result = <uint32_t>result  # the low 32 bits, as a Java int
            value[0] = <int64_t>(result >> 1) ^ -<int64_t>(result & 1)
            return pos
        shift += 7
    value[0] = 0
    return VARINT_TOO_LONG
