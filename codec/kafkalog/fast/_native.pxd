# The codec libraries' C functions for compiled loops (cimport kafkalog.fast._native): each takes raw
# pointers the caller has checked and runs without the GIL. See _native.pyx.
from libc.stdint cimport int64_t, uint32_t

cdef int64_t lz4_block_c(const unsigned char* src, Py_ssize_t size, unsigned char* dst, Py_ssize_t cap) noexcept nogil
cdef int64_t zstd_frames_c(void* dctx, const unsigned char* src, size_t size, unsigned char* dst, size_t cap) noexcept nogil
cdef int64_t gzip_members_c(void* dec, const unsigned char* src, size_t size, unsigned char* dst, size_t cap) noexcept nogil
cdef uint32_t crc32c_c(const unsigned char* src, size_t size) noexcept nogil
cdef bint lz4_bound() noexcept nogil
cdef bint zstd_bound() noexcept nogil
cdef bint gzip_bound() noexcept nogil

cdef class DCtx:
    cdef void* ptr  # zstd's ZSTD_DCtx
    cdef void* gz  # libdeflate's decompressor
