# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The codec libraries' C functions, called from C: lz4 blocks (SPEC R-LZ4-01..R-LZ4-06), zstd
frames (R-ZSTD-01..R-ZSTD-03), gzip members (R-GZIP-01) and the batch CRC-32C (R-PRIM-07).

No codec library ships headers here, and each is already loaded by its Python package, so the
functions are bound at import by address (:mod:`kafkalog.fast.native` finds them
with ctypes): ``LZ4_decompress_safe`` exported by python-lz4's extension,
``ZSTD_decompressStream`` with its helpers from the system's libzstd (the zstandard package hides
its symbols), and ``libdeflate_gzip_decompress_ex`` exported by the deflate package's extension
(libdeflate inflates a whole gzip member into a buffer about twice as fast as zlib). An unbound function reports failure, and callers check :func:`bound` first.

The CRC-32C is this module's own (the CPU's instruction, else slicing-by-8 tables), the only one in
the compiled core: the chunk framing of ``_columnar`` calls it through ``_native.pxd``, and the
format layer's small-batch checks through :func:`crc32c_of`, with no import of the crc32c package.

zstd is streamed, as Kafka's zstd-jni reads it (the one-shot ``ZSTD_decompressDCtx`` of libzstd
1.5.4 accepts payloads that streaming rejects as corrupt), straight into the caller's buffer
(``ZSTD_d_stableOutBuffer``). The ``def`` wrappers take buffers and positions and check every span
against its buffer; the ``cdef`` functions of ``_native.pxd`` take pointers their caller checked.
"""

from cpython.buffer cimport PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.stdint cimport int64_t, uint32_t, uintptr_t

cdef enum:
    _BAD = -1
    _ROOM = -2

#: zstd_frames_c results besides a size: the payload is bad, or the output needs more room.
BAD = _BAD
ROOM = _ROOM

cdef int _ZSTD_ERROR_DST_SIZE_TOO_SMALL = 70  # zstd_errors.h, ZSTD_error_dstSize_tooSmall (stable since 1.3)
cdef int _ZSTD_D_STABLE_OUT_BUFFER = 1001  # ZSTD_d_experimentalParam2: decode into the caller's buffer, no copy
cdef int _ZSTD_RESET_SESSION_ONLY = 1

ctypedef struct ZSTD_inBuffer:
    const void* src
    size_t size
    size_t pos

ctypedef struct ZSTD_outBuffer:
    void* dst
    size_t size
    size_t pos

ctypedef int (*lz4_fn)(const char*, char*, int, int) noexcept nogil
ctypedef size_t (*stream_fn)(void*, ZSTD_outBuffer*, ZSTD_inBuffer*) noexcept nogil
ctypedef size_t (*reset_fn)(void*, int) noexcept nogil
ctypedef unsigned (*is_error_fn)(size_t) noexcept nogil
ctypedef int (*error_code_fn)(size_t) noexcept nogil
ctypedef void* (*create_fn)() noexcept nogil
ctypedef size_t (*free_fn)(void*) noexcept nogil
ctypedef size_t (*set_parameter_fn)(void*, int, int) noexcept nogil
ctypedef int (*gzip_fn)(void*, const void*, size_t, void*, size_t, size_t*, size_t*) noexcept nogil
ctypedef void* (*gzip_alloc_fn)() noexcept nogil
ctypedef void (*gzip_free_fn)(void*) noexcept nogil

cdef int _LIBDEFLATE_INSUFFICIENT_SPACE = 3  # libdeflate.h, enum libdeflate_result

cdef lz4_fn _lz4 = NULL
cdef stream_fn _stream = NULL
cdef reset_fn _reset = NULL
cdef is_error_fn _is_error = NULL
cdef error_code_fn _error_code = NULL
cdef create_fn _create = NULL
cdef free_fn _free = NULL
cdef set_parameter_fn _set_parameter = NULL
cdef gzip_fn _gzip = NULL
cdef gzip_alloc_fn _gzip_alloc = NULL
cdef gzip_free_fn _gzip_free = NULL


def bind(lz4, zstd, gzip=None) -> None:
    """Bind the C functions to their addresses (ints, or None when not found): ``lz4`` is
    LZ4_decompress_safe, ``zstd`` a dict of libzstd's ZSTD_decompressStream, ZSTD_DCtx_reset,
    ZSTD_isError, ZSTD_getErrorCode, ZSTD_createDCtx, ZSTD_freeDCtx and ZSTD_DCtx_setParameter (all
    or none), ``gzip`` a dict of libdeflate's libdeflate_gzip_decompress_ex,
    libdeflate_alloc_decompressor and libdeflate_free_decompressor (all or none)."""
    global _lz4, _stream, _reset, _is_error, _error_code, _create, _free, _set_parameter, _gzip, _gzip_alloc, _gzip_free
    _lz4 = <lz4_fn><uintptr_t>(lz4 or 0)
    z = zstd or {}
    names = ("ZSTD_decompressStream", "ZSTD_DCtx_reset", "ZSTD_isError", "ZSTD_getErrorCode", "ZSTD_createDCtx",
             "ZSTD_freeDCtx", "ZSTD_DCtx_setParameter")
    if not all(z.get(name) for name in names):
        z = {}
    _stream = <stream_fn><uintptr_t>z.get("ZSTD_decompressStream", 0)
    _reset = <reset_fn><uintptr_t>z.get("ZSTD_DCtx_reset", 0)
    _is_error = <is_error_fn><uintptr_t>z.get("ZSTD_isError", 0)
    _error_code = <error_code_fn><uintptr_t>z.get("ZSTD_getErrorCode", 0)
    _create = <create_fn><uintptr_t>z.get("ZSTD_createDCtx", 0)
    _free = <free_fn><uintptr_t>z.get("ZSTD_freeDCtx", 0)
    _set_parameter = <set_parameter_fn><uintptr_t>z.get("ZSTD_DCtx_setParameter", 0)
    g = gzip or {}
    if not all(g.get(name) for name in GZIP_FUNCTIONS):
        g = {}
    _gzip = <gzip_fn><uintptr_t>g.get("libdeflate_gzip_decompress_ex", 0)
    _gzip_alloc = <gzip_alloc_fn><uintptr_t>g.get("libdeflate_alloc_decompressor", 0)
    _gzip_free = <gzip_free_fn><uintptr_t>g.get("libdeflate_free_decompressor", 0)


#: The libdeflate functions :func:`bind` takes for gzip.
GZIP_FUNCTIONS = ("libdeflate_gzip_decompress_ex", "libdeflate_alloc_decompressor", "libdeflate_free_decompressor")


def bound() -> tuple:
    """(lz4, zstd, gzip): which functions are bound."""
    return lz4_bound(), zstd_bound(), gzip_bound()


cdef bint lz4_bound() noexcept nogil:
    return _lz4 != NULL


cdef bint zstd_bound() noexcept nogil:
    return _stream != NULL


cdef bint gzip_bound() noexcept nogil:
    return _gzip != NULL


cdef class DCtx:
    """One thread's decompression contexts, zstd's and libdeflate's (a context decodes one payload
    at a time)."""

    def __cinit__(self):
        self.ptr = NULL
        self.gz = NULL
        if _create != NULL:
            self.ptr = _create()
            if self.ptr != NULL:
                _set_parameter(self.ptr, _ZSTD_D_STABLE_OUT_BUFFER, 1)  # if refused: decoded via its window, still right
        if _gzip_alloc != NULL:
            self.gz = _gzip_alloc()

    def __dealloc__(self):
        if self.ptr != NULL and _free != NULL:
            _free(self.ptr)
        if self.gz != NULL and _gzip_free != NULL:
            _gzip_free(self.gz)

    @property
    def address(self) -> int:
        """The ZSTD_DCtx's address (0 when zstd is not bound)."""
        return <uintptr_t>self.ptr


cdef int64_t lz4_block_c(const unsigned char* src, Py_ssize_t size, unsigned char* dst, Py_ssize_t cap) noexcept nogil:
    """LZ4_decompress_safe of ``src[:size]`` into ``dst[:cap]``: the size written, or BAD."""
    cdef int n
    if _lz4 == NULL or size < 0 or cap < 0 or size > 0x7FFFFFFF or cap > 0x7FFFFFFF:
        return _BAD
    n = _lz4(<const char*>src, <char*>dst, <int>size, <int>cap)
    return n if n >= 0 else _BAD


cdef int64_t zstd_frames_c(void* dctx, const unsigned char* src, size_t size, unsigned char* dst, size_t cap) noexcept nogil:
    """Stream every zstd frame of ``src[:size]`` (with or without content size, skippable ones
    skipped) into ``dst[:cap]``: the size, ROOM (more than ``cap`` bytes) or BAD (corrupt, or
    ending inside a frame)."""
    cdef ZSTD_inBuffer inb
    cdef ZSTD_outBuffer outb
    cdef size_t r, was_in, was_out
    if dctx == NULL or _stream == NULL:
        return _BAD
    if _is_error(_reset(dctx, _ZSTD_RESET_SESSION_ONLY)):
        return _BAD
    inb.src = src
    inb.size = size
    inb.pos = 0
    outb.dst = dst
    outb.size = cap
    outb.pos = 0
    while inb.pos < inb.size:
        was_in, was_out = inb.pos, outb.pos
        r = _stream(dctx, &outb, &inb)
        if _is_error(r):
            return _ROOM if _error_code(r) == _ZSTD_ERROR_DST_SIZE_TOO_SMALL else _BAD
        if r != 0:  # inside a frame: out of room, out of input, or stuck
            if outb.pos == outb.size:
                return _ROOM
            if inb.pos == inb.size or (inb.pos == was_in and outb.pos == was_out):
                return _BAD
    return <int64_t>outb.pos


cdef int64_t gzip_members_c(void* dec, const unsigned char* src, size_t size, unsigned char* dst, size_t cap) noexcept nogil:
    """Inflate every gzip member of ``src[:size]`` into ``dst[:cap]`` with libdeflate's decompressor
    ``dec``: the size, ROOM (more than ``cap`` bytes) or BAD. Each member's CRC-32 and ISIZE are
    checked by libdeflate; a member whose header has FHCRC set is BAD here, because libdeflate
    skips the header CRC that zlib (and Java's GZIPInputStream, with which Kafka reads) checks:
    the codec module then reads it."""
    cdef size_t pos = 0, at = 0, used, made, isize
    cdef int r
    if dec == NULL or _gzip == NULL or size == 0:
        return _BAD
    while pos < size:
        if size - pos < 4 or src[pos + 3] & 0x02:  # FLG.FHCRC
            return _BAD
        r = _gzip(dec, src + pos, size - pos, dst + at, cap - at, &used, &made)
        if r == _LIBDEFLATE_INSUFFICIENT_SPACE:
            # libdeflate also fills any room given to a cut or damaged stream: ROOM only while the
            # room is below the size the payload's last ISIZE declares (the whole output of Kafka's
            # one member), so that a bad payload costs no buffer larger than that claim
            isize = <size_t>src[size - 4] | (<size_t>src[size - 3] << 8) | (<size_t>src[size - 2] << 16) | (<size_t>src[size - 1] << 24)
            return _ROOM if cap - at < isize else _BAD
        if r != 0 or used == 0:
            return _BAD
        pos += used
        at += made
    return <int64_t>at


cdef extern from *:
    """
    /* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as Kafka's Crc32C (R-PRIM-07): the CPU's
       instruction where there is one (SSE 4.2 on x86-64, checked at run time; ARMv8 CRC when the
       compiler targets it), else slicing-by-8 tables. The one CRC of the compiled core: the chunk
       framing (cimported through _native.pxd) and the format layer's per-batch checks use it, so
       that a small command need not import the crc32c package (whose import reads package
       metadata and costs more than the command's work). */
    #include <stdint.h>
    #include <stddef.h>
    #include <string.h>
    static uint32_t kafkalog_crc_table[8][256];
    static int kafkalog_crc_hw = 0;
    #if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER))
      #include <nmmintrin.h>
      #if defined(_MSC_VER) && !defined(__clang__)
        #include <intrin.h>
        #define KAFKALOG_SSE42
        static int kafkalog_has_hw(void) { int r[4]; __cpuid(r, 1); return (r[2] >> 20) & 1; }
      #else
        #define KAFKALOG_SSE42 __attribute__((target("sse4.2")))
        static int kafkalog_has_hw(void) { __builtin_cpu_init(); return __builtin_cpu_supports("sse4.2"); }
      #endif
      KAFKALOG_SSE42 static uint32_t kafkalog_crc_hw_run(uint32_t c, const uint8_t* p, size_t n) {
          uint64_t c64 = c;
          while (n >= 8) { uint64_t w; memcpy(&w, p, 8); c64 = _mm_crc32_u64(c64, w); p += 8; n -= 8; }
          c = (uint32_t)c64;
          while (n--) c = _mm_crc32_u8(c, *p++);
          return c;
      }
    #elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
      #include <arm_acle.h>
      static int kafkalog_has_hw(void) { return 1; }
      static uint32_t kafkalog_crc_hw_run(uint32_t c, const uint8_t* p, size_t n) {
          while (n >= 8) { uint64_t w; memcpy(&w, p, 8); c = __crc32cd(c, w); p += 8; n -= 8; }
          while (n--) c = __crc32cb(c, *p++);
          return c;
      }
    #else
      static int kafkalog_has_hw(void) { return 0; }
      static uint32_t kafkalog_crc_hw_run(uint32_t c, const uint8_t* p, size_t n) { (void)p; (void)n; return c; }
    #endif

    static void kafkalog_crc32c_init(void) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
            kafkalog_crc_table[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++)
            for (int t = 1; t < 8; t++)
                kafkalog_crc_table[t][i] = (kafkalog_crc_table[t - 1][i] >> 8) ^ kafkalog_crc_table[0][kafkalog_crc_table[t - 1][i] & 0xFF];
        kafkalog_crc_hw = kafkalog_has_hw();
    }

    static uint32_t kafkalog_crc32c(const unsigned char *p, size_t n) {
        uint32_t crc = 0xFFFFFFFFu;
        if (kafkalog_crc_hw) return kafkalog_crc_hw_run(crc, p, n) ^ 0xFFFFFFFFu;
        while (n >= 8) {
            uint32_t lo = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
            lo ^= crc;
            crc = kafkalog_crc_table[7][lo & 0xFF] ^ kafkalog_crc_table[6][(lo >> 8) & 0xFF]
                ^ kafkalog_crc_table[5][(lo >> 16) & 0xFF] ^ kafkalog_crc_table[4][lo >> 24]
                ^ kafkalog_crc_table[3][p[4]] ^ kafkalog_crc_table[2][p[5]]
                ^ kafkalog_crc_table[1][p[6]] ^ kafkalog_crc_table[0][p[7]];
            p += 8; n -= 8;
        }
        while (n--) crc = (crc >> 8) ^ kafkalog_crc_table[0][(crc ^ *p++) & 0xFF];
        return crc ^ 0xFFFFFFFFu;
    }
    """
    void kafkalog_crc32c_init() noexcept nogil
    uint32_t kafkalog_crc32c(const unsigned char* p, size_t n) noexcept nogil
    int kafkalog_crc_hw


kafkalog_crc32c_init()


def _hardware_crc(bint on) -> bool:
    """Use the CPU's CRC instruction (when it has one: the default) or the tables; returns whether
    the instruction was in use. For tests, which hold both ways to the crc32c package."""
    global kafkalog_crc_hw
    cdef bint was = kafkalog_crc_hw
    kafkalog_crc32c_init()
    if not on:
        kafkalog_crc_hw = 0
    return was


cdef uint32_t crc32c_c(const unsigned char* src, size_t size) noexcept nogil:
    """The CRC-32C (Castagnoli) of ``src[:size]``, as Kafka's batch CRC (R-PRIM-07)."""
    return kafkalog_crc32c(src, size)


def crc32c_of(data) -> int:
    """The CRC-32C of the bytes of ``data`` (any buffer) by this module's own code (SSE 4.2 where
    the CPU has it, else tables): what :func:`kafkalog.format.primitives.crc32c` uses when the
    extension is built, so that checking a batch needs no import of the crc32c package. The GIL
    is released for buffers of 64 KiB and more."""
    cdef Py_buffer s
    cdef uint32_t c
    PyObject_GetBuffer(data, &s, PyBUF_SIMPLE)
    try:
        if s.len >= 65536:
            with nogil:
                c = kafkalog_crc32c(<const unsigned char*>s.buf, s.len)
        else:
            c = kafkalog_crc32c(<const unsigned char*>s.buf, s.len)
    finally:
        PyBuffer_Release(&s)
    return c


def crc32c_hardware() -> bool:
    """Whether :func:`crc32c_of` uses the CPU's CRC-32C instruction."""
    return kafkalog_crc_hw != 0


cdef inline bint _span(Py_buffer* view, Py_ssize_t pos, Py_ssize_t size) noexcept nogil:
    return 0 <= pos and 0 <= size and size <= view.len - pos


def lz4_block(src, Py_ssize_t pos, Py_ssize_t size, dst, Py_ssize_t at, Py_ssize_t cap) -> int:
    """Decompress the lz4 block ``src[pos:pos+size]`` into ``dst[at:at+cap]``: its size, or BAD
    (a bad block, too little room, or a span outside its buffer)."""
    cdef Py_buffer s, d
    cdef int64_t n = _BAD
    PyObject_GetBuffer(src, &s, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(dst, &d, PyBUF_SIMPLE | PyBUF_WRITABLE)
        try:
            if _span(&s, pos, size) and _span(&d, at, cap):  # a block of at most 64 KiB: the GIL is kept (releasing it costs more)
                n = lz4_block_c(<const unsigned char*>s.buf + pos, size, <unsigned char*>d.buf + at, cap)
        finally:
            PyBuffer_Release(&d)
    finally:
        PyBuffer_Release(&s)
    return n


ctypedef int64_t (*_inflate_fn)(void*, const unsigned char*, size_t, unsigned char*, size_t) noexcept nogil


cdef object _inflate(_inflate_fn fn, void* ctx, src, Py_ssize_t pos, Py_ssize_t size, dst, Py_ssize_t at, Py_ssize_t cap):
    """``fn`` (a codec's loop over its frames or members) from ``src[pos:pos+size]`` into
    ``dst[at:at+cap]`` with ``ctx``: its result, or BAD when a span is outside its buffer."""
    cdef Py_buffer s, d
    cdef int64_t n = _BAD
    PyObject_GetBuffer(src, &s, PyBUF_SIMPLE)
    try:
        PyObject_GetBuffer(dst, &d, PyBUF_SIMPLE | PyBUF_WRITABLE)
        try:
            if _span(&s, pos, size) and _span(&d, at, cap):
                if size >= 65536:
                    with nogil:
                        n = fn(ctx, <const unsigned char*>s.buf + pos, size, <unsigned char*>d.buf + at, cap)
                else:  # a small payload: releasing the GIL would cost more than it gives
                    n = fn(ctx, <const unsigned char*>s.buf + pos, size, <unsigned char*>d.buf + at, cap)
        finally:
            PyBuffer_Release(&d)
    finally:
        PyBuffer_Release(&s)
    return n


def zstd_frames(DCtx ctx, src, Py_ssize_t pos, Py_ssize_t size, dst, Py_ssize_t at, Py_ssize_t cap) -> int:
    """Decompress the zstd frames ``src[pos:pos+size]`` into ``dst[at:at+cap]`` with ``ctx``: their
    size, ROOM when they need more than ``cap`` bytes, BAD when they are bad (or end inside a frame,
    or a span is outside its buffer)."""
    return _inflate(zstd_frames_c, ctx.ptr, src, pos, size, dst, at, cap)


def gzip_members(DCtx ctx, src, Py_ssize_t pos, Py_ssize_t size, dst, Py_ssize_t at, Py_ssize_t cap) -> int:
    """Inflate the gzip members ``src[pos:pos+size]`` into ``dst[at:at+cap]`` with ``ctx``: their
    size, ROOM when they need more than ``cap`` bytes, BAD when they are bad (or a span is outside
    its buffer, or a header has FHCRC set)."""
    return _inflate(gzip_members_c, ctx.gz, src, pos, size, dst, at, cap)


def crc32c(src, Py_ssize_t pos, Py_ssize_t size) -> int:
    """The CRC-32C of ``src[pos:pos+size]`` (ValueError for a span outside ``src``); the GIL is
    released for spans of 64 KiB and more."""
    cdef Py_buffer s
    cdef uint32_t c
    PyObject_GetBuffer(src, &s, PyBUF_SIMPLE)
    try:
        if not _span(&s, pos, size):
            raise ValueError(f"bytes {pos}..{pos + size} are outside the buffer of {s.len} bytes")
        if size >= 65536:
            with nogil:
                c = crc32c_c(<const unsigned char*>s.buf + pos, size)
        else:
            c = crc32c_c(<const unsigned char*>s.buf + pos, size)
    finally:
        PyBuffer_Release(&s)
    return c
