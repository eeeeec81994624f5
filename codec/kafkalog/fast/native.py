"""The codec libraries' C decompressors and the batch CRC, callable from compiled loops.

The chunked columnar decoder decompresses all the lz4, zstd and gzip batches of a chunk in one
compiled loop; Python per batch and per lz4 block costs more than the decompression of a small batch. The
extension :mod:`kafkalog.fast._native` (Cython, built at install; its ``_native.pxd`` gives the C
functions to other extensions) calls ``LZ4_decompress_safe`` (exported by python-lz4's extension),
``ZSTD_decompressStream`` (from the system's libzstd: the zstandard package hides its symbols)
and ``libdeflate_gzip_decompress_ex`` (exported by the deflate package's extension: libdeflate
inflates Kafka's gzip batches about twice as fast as zlib, into the chunk's buffer with no copy)
by address; this module finds those addresses at import with ctypes and binds them. zstd is
streamed, as Kafka's zstd-jni reads it (the one-shot ``ZSTD_decompressDCtx`` of libzstd 1.5.4
accepts payloads that streaming rejects as corrupt), straight into the output buffer
(``ZSTD_d_stableOutBuffer``). :data:`NATIVE_LZ4`, :data:`NATIVE_ZSTD` and :data:`NATIVE_GZIP`
say whether that worked. Without the extension (not built, or ``KAFKALOG_NO_EXTENSIONS=1``) the
same helpers are plain Python over cramjam, zstandard and zlib, so the loop that calls them runs unchanged; with the extension
and a library missing, :data:`LZ4` / :data:`ZSTD` are False and the decoder keeps its per-batch path.

Batch CRCs are checked in C too: :func:`crc32c` is the extension's own CRC-32C (the CPU's
instruction, else slicing-by-8 tables), the one the chunk framing calls per batch; without the
extension it is the crc32c package's. :data:`CRC` says whether the chunk loop may check CRCs with it.
"""

from __future__ import annotations

import threading
from typing import Any

from kafkalog.fast import compiled

__all__ = [  # noqa: F822 - most given by __getattr__
    "BAD", "CRC", "GZIP", "LZ4", "NATIVE_CRC", "NATIVE_GZIP", "NATIVE_LZ4", "NATIVE_ZSTD", "ROOM", "ZSTD",
    "crc32c", "gzip_members", "lz4_block", "zstd_dctx", "zstd_frames",
]

#: :func:`zstd_frames` results besides a size: the payload is bad, or the output needs more room.
BAD = -1
ROOM = -2
_ZSTD_MIN_VERSION = 10400  # 1.4.0: ZSTD_DCtx_reset and ZSTD_DCtx_setParameter
_ZSTD_FUNCTIONS = ("ZSTD_decompressStream", "ZSTD_DCtx_reset", "ZSTD_isError", "ZSTD_getErrorCode", "ZSTD_createDCtx",
                   "ZSTD_freeDCtx", "ZSTD_DCtx_setParameter")


def _lz4_address() -> int | None:
    """Address of python-lz4's ``LZ4_decompress_safe`` (None when its extension does not export it)."""
    import ctypes

    try:
        import lz4.block._block as ext

        return ctypes.cast(ctypes.CDLL(ext.__file__).LZ4_decompress_safe, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):
        return None


def _zstd_addresses() -> dict[str, int] | None:
    """Addresses of the libzstd functions :mod:`kafkalog.fast._native` calls, from the system's
    libzstd if it is recent enough (else None)."""
    import ctypes
    import ctypes.util

    for find in (lambda: "libzstd.so.1", lambda: ctypes.util.find_library("zstd")):  # the second runs ldconfig: only if needed
        name = find()
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            if lib.ZSTD_versionNumber() >= _ZSTD_MIN_VERSION:
                return {f: ctypes.cast(getattr(lib, f), ctypes.c_void_p).value for f in _ZSTD_FUNCTIONS}
        except (OSError, AttributeError):
            continue
    return None


def _gzip_addresses() -> dict[str, int] | None:
    """Addresses of the libdeflate functions :mod:`kafkalog.fast._native` calls, exported by the
    deflate package's extension (None when it is missing or does not export them)."""
    import ctypes

    try:
        import deflate

        lib = ctypes.CDLL(deflate._deflate.__file__)
        return {f: ctypes.cast(getattr(lib, f), ctypes.c_void_p).value for f in _native.GZIP_FUNCTIONS}
    except (ImportError, OSError, AttributeError):
        return None


class _PlainDCtx:
    """The plain path's stand-in for a decompression context (zstandard keeps its own per thread)."""

    address = 0


_local = threading.local()


def zstd_dctx() -> Any:
    """This thread's decompression contexts for :func:`zstd_frames` and :func:`gzip_members` (its
    ``address`` is 0 when zstd is not native)."""
    ctx = getattr(_local, "dctx", None)
    if ctx is None:
        _bind()  # a context needs libzstd's functions
        ctx = _local.dctx = _native.DCtx() if _native is not None else _PlainDCtx()
    return ctx


def _plain_lz4_block(src: Any, pos: int, size: int, dst: Any, at: int, cap: int) -> int:
    """Decompress the lz4 block ``src[pos:pos+size]`` into ``dst[at:at+cap]``; its size, or -1 if bad."""
    import cramjam

    if not (pos >= 0 and 0 <= size <= len(src) - pos and at >= 0 and 0 <= cap <= len(dst) - at):
        return BAD
    try:
        return int(cramjam.lz4.decompress_block_into(src[pos : pos + size], dst[at : at + cap]))
    except cramjam.DecompressionError:
        return BAD


def _plain_zstd_frames(ctx: Any, src: Any, pos: int, size: int, dst: Any, at: int, cap: int) -> int:
    """Decompress the zstd frames ``src[pos:pos+size]`` into ``dst[at:at+cap]``: their size,
    :data:`ROOM` when they need more than ``cap`` bytes, :data:`BAD` when they are bad (or end
    inside a frame)."""
    import zstandard

    from kafkalog.errors import DecompressionError
    from kafkalog.format.compression import _zstd_check_complete, _zstd_d

    if not (pos >= 0 and 0 <= size <= len(src) - pos and at >= 0 and 0 <= cap <= len(dst) - at):
        return BAD
    got = 0
    try:
        with _zstd_d().stream_reader(src[pos : pos + size], read_across_frames=True) as reader:
            while got < cap:
                n = reader.readinto(dst[at + got : at + cap])
                if not n:
                    _zstd_check_complete(src[pos : pos + size])
                    return got
                got += n
            if reader.read(1):
                return ROOM
            _zstd_check_complete(src[pos : pos + size])
            return got
    except (zstandard.ZstdError, DecompressionError):
        return BAD


def _plain_gzip_members(ctx: Any, src: Any, pos: int, size: int, dst: Any, at: int, cap: int) -> int:
    """Inflate the gzip members ``src[pos:pos+size]`` into ``dst[at:at+cap]`` with zlib: their size,
    :data:`ROOM` when they need more than ``cap`` bytes, :data:`BAD` when they are bad (or a span is
    outside its buffer). The per-batch path's zlib reading, in the loop's terms."""
    import zlib

    import numpy as np

    if not (pos >= 0 and 0 <= size <= len(src) - pos and at >= 0 and 0 <= cap <= len(dst) - at):
        return BAD
    rest, got = bytes(src[pos : pos + size]), 0
    if not rest:
        return BAD
    while rest:
        d = zlib.decompressobj(wbits=31)
        try:
            chunk = d.decompress(rest, cap - got + 1)
        except zlib.error:
            return BAD
        if len(chunk) > cap - got:
            return ROOM
        if not d.eof:
            return BAD
        dst[at + got : at + got + len(chunk)] = np.frombuffer(chunk, np.uint8)
        got += len(chunk)
        rest = d.unused_data
    return got


def _plain_crc32c(src: Any, pos: int, size: int) -> int:
    """The CRC-32C (Castagnoli) of ``src[pos:pos+size]``, as Kafka's batch CRC."""
    import crc32c as package

    if not (pos >= 0 and 0 <= size <= len(src) - pos):
        raise ValueError(f"bytes {pos}..{pos + size} are outside the buffer of {len(src)} bytes")
    return int(package.crc32c(src[pos : pos + size]))


_native: Any = compiled("_native")

#: The names :func:`_bind` sets, on first use of any of them (module ``__getattr__``): finding the
#: libraries' functions imports lz4 and ctypes, which a command with no compressed batch
#: (and no large one) does without.
#:
#: ``lz4_block``, ``zstd_frames``, ``gzip_members``, ``crc32c``: the helpers (the extension's, else the plain twins).
#: ``NATIVE_LZ4``, ``NATIVE_ZSTD``, ``NATIVE_GZIP``: whether the extension found each library's C function;
#: ``NATIVE_CRC``: whether the CRC is the extension's own (it is whenever the extension is there).
#: ``LZ4``, ``ZSTD``, ``GZIP``, ``CRC``: whether the chunk loop may decompress lz4 / zstd / gzip with the helpers
#: and check CRCs with :func:`crc32c` (the extension calling C, or plain Python without it);
#: tests turn them off to take the per-batch path.
_BOUND = ("lz4_block", "zstd_frames", "gzip_members", "crc32c", "NATIVE_LZ4", "NATIVE_ZSTD", "NATIVE_GZIP", "NATIVE_CRC",
          "LZ4", "ZSTD", "GZIP", "CRC")
_bind_lock = threading.Lock()


def _bind() -> None:
    """Find the C functions, bind them in the extension and set the names of :data:`_BOUND` (once)."""
    with _bind_lock:
        if "LZ4" in globals():
            return
        found = dict(lz4_block=_plain_lz4_block, zstd_frames=_plain_zstd_frames, gzip_members=_plain_gzip_members,
                     crc32c=_plain_crc32c, NATIVE_LZ4=False, NATIVE_ZSTD=False, NATIVE_GZIP=False, NATIVE_CRC=False,
                     LZ4=True, ZSTD=True, GZIP=True, CRC=True)
        if _native is not None:  # pragma: no branch - depends on the build
            _native.bind(_lz4_address(), _zstd_addresses(), _gzip_addresses())
            lz4, zstd, gzip = _native.bound()
            found.update(lz4_block=_native.lz4_block, zstd_frames=_native.zstd_frames, gzip_members=_native.gzip_members,
                         crc32c=_native.crc32c, NATIVE_LZ4=lz4, NATIVE_ZSTD=zstd, NATIVE_GZIP=gzip, NATIVE_CRC=True,
                         LZ4=lz4, ZSTD=zstd, GZIP=gzip, CRC=True)
        globals().update(found)


def __getattr__(name: str) -> Any:
    if name in _BOUND:
        _bind()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
