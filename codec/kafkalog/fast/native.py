"""The codec libraries' C decompressors, callable from compiled (numba) code.

The chunked columnar decoder decompresses all the lz4 and zstd batches of a chunk in one compiled
loop; Python per batch and per lz4 block costs more than the decompression of a small batch. This
module finds ``LZ4_decompress_safe`` (exported by python-lz4's extension) and
``ZSTD_decompressStream`` (from the system's libzstd: the zstandard package hides its symbols) at
import and registers them with LLVM under names of our own, so that compiled code calls them
directly (and numba can cache that code). zstd is streamed, as Kafka's zstd-jni reads it (the
one-shot ``ZSTD_decompressDCtx`` of libzstd 1.5.4 accepts payloads that streaming rejects as
corrupt), straight into the output buffer (``ZSTD_d_stableOutBuffer``). :data:`NATIVE_LZ4` and
:data:`NATIVE_ZSTD` say whether that worked. With numba off (``KAFKALOG_NO_NUMBA=1``) the same helpers are plain Python over
cramjam and zstandard, so the loop that calls them runs unchanged; with numba on and a library
missing, :data:`LZ4` / :data:`ZSTD` are False and the decoder keeps its per-batch Python path.

Batch CRCs are checked the same way: :func:`crc32c` calls the crc32c package's own C function
(its SSE 4.2 one when the package chose hardware, else its slicing-by-8), found in its extension,
so that the chunk framing checks every batch's CRC without a Python call per batch; :data:`CRC`
says whether that is available (else the caller checks each batch from Python).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable
from typing import Any

import cramjam
import crc32c as _crc32c_package
import numpy as np
import zstandard

from kafkalog.errors import DecompressionError
from kafkalog.format.compression import _zstd_check_complete, _zstd_d

__all__ = ["CRC", "LZ4", "NATIVE_CRC", "NATIVE_LZ4", "NATIVE_ZSTD", "ZSTD", "crc32c", "lz4_block", "zstd_dctx", "zstd_frames"]

#: :func:`zstd_frames` results besides a size: the payload is bad, or the output needs more room.
BAD = -1
ROOM = -2
_ZSTD_ERROR_DST_SIZE_TOO_SMALL = 70  # zstd_errors.h, ZSTD_error_dstSize_tooSmall (stable since 1.3)
_ZSTD_MIN_VERSION = 10400  # 1.4.0: ZSTD_DCtx_reset and ZSTD_DCtx_setParameter
_ZSTD_D_STABLE_OUT_BUFFER = 1001  # ZSTD_d_experimentalParam2: decode into the caller's buffer, no copy
_ZSTD_RESET_SESSION_ONLY = 1
#: A context array: the ZSTD_DCtx pointer, then a ZSTD_inBuffer (src, size, pos) and a ZSTD_outBuffer (dst, size, pos).
_CTX_WORDS = 7


def _lz4_address() -> int | None:
    """Address of python-lz4's ``LZ4_decompress_safe`` (None when its extension does not export it)."""
    try:
        import lz4.block._block as ext

        return ctypes.cast(ctypes.CDLL(ext.__file__).LZ4_decompress_safe, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):
        return None


def _crc32c_address() -> int | None:
    """Address of the crc32c package's CRC-32C function that it uses itself (``crc(crc, data, length)``,
    pre- and post-inverted by the caller), or None when its extension does not export it."""
    try:
        from crc32c import _crc32c as ext

        lib = ctypes.CDLL(ext.__file__)
        f = lib._crc32c_hw_adler if _crc32c_package.hardware_based else lib._crc32c_sw_slicing_by_8
        return ctypes.cast(f, ctypes.c_void_p).value
    except (ImportError, OSError, AttributeError):
        return None


def _zstd_library() -> ctypes.CDLL | None:
    """The system's libzstd, if it is recent enough."""
    for find in (lambda: "libzstd.so.1", lambda: ctypes.util.find_library("zstd")):  # the second runs ldconfig: only if needed
        name = find()
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
            if lib.ZSTD_versionNumber() >= _ZSTD_MIN_VERSION:
                lib.ZSTD_createDCtx.restype = ctypes.c_void_p
                lib.ZSTD_freeDCtx.argtypes = [ctypes.c_void_p]
                lib.ZSTD_DCtx_setParameter.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
                for f in ("ZSTD_decompressStream", "ZSTD_DCtx_reset", "ZSTD_isError", "ZSTD_getErrorCode"):
                    getattr(lib, f)
                return lib
        except (OSError, AttributeError):
            continue
    return None


class _DCtx:
    """One zstd decompression context and its buffer descriptors (freed with its thread's storage)."""

    def __init__(self, lib: ctypes.CDLL | None) -> None:
        self.lib = lib
        self.array = np.zeros(_CTX_WORDS, np.uint64)
        self.ptr = (lib.ZSTD_createDCtx() or 0) if lib is not None else 0
        if self.ptr:
            assert lib is not None
            lib.ZSTD_DCtx_setParameter(self.ptr, _ZSTD_D_STABLE_OUT_BUFFER, 1)  # if refused: decoded via its window, still right
            self.array[0] = self.ptr

    def __del__(self) -> None:
        if self.ptr and self.lib is not None:
            self.lib.ZSTD_freeDCtx(self.ptr)


_local = threading.local()
_zstd_lib: ctypes.CDLL | None = None


def zstd_dctx() -> np.ndarray:
    """This thread's zstd decompression context for :func:`zstd_frames` (a uint64 array; its
    first word is 0 when zstd is not native)."""
    ctx = getattr(_local, "dctx", None)
    if ctx is None:
        ctx = _local.dctx = _DCtx(_zstd_lib)
    return ctx.array


def _plain_lz4_block(src: np.ndarray, pos: int, size: int, dst: np.ndarray, at: int, cap: int) -> int:
    """Decompress the lz4 block ``src[pos:pos+size]`` into ``dst[at:at+cap]``; its size, or -1 if bad."""
    try:
        return int(cramjam.lz4.decompress_block_into(src[pos : pos + size], dst[at : at + cap]))
    except cramjam.DecompressionError:
        return BAD


def _plain_zstd_frames(ctx: np.ndarray, src: np.ndarray, pos: int, size: int, dst: np.ndarray, at: int, cap: int) -> int:
    """Decompress the zstd frames ``src[pos:pos+size]`` into ``dst[at:at+cap]``: their size,
    :data:`ROOM` when they need more than ``cap`` bytes, :data:`BAD` when they are bad (or end
    inside a frame)."""
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


def _plain_crc32c(src: np.ndarray, pos: int, size: int) -> int:
    """The CRC-32C (Castagnoli) of ``src[pos:pos+size]``, as Kafka's batch CRC."""
    return int(_crc32c_package.crc32c(src[pos : pos + size]))


lz4_block: Callable[..., Any] = _plain_lz4_block
zstd_frames: Callable[..., Any] = _plain_zstd_frames
crc32c: Callable[..., Any] = _plain_crc32c
NATIVE_LZ4 = NATIVE_ZSTD = NATIVE_CRC = False
#: Whether the chunk loop can decompress lz4 / zstd with :func:`lz4_block` / :func:`zstd_frames`
#: and check CRCs with :func:`crc32c` (compiled code calling C, or plain Python when numba is
#: off). Tests turn them off to take the per-batch path.
LZ4 = ZSTD = CRC = True

try:  # pragma: no cover - depends on the environment
    if os.environ.get("KAFKALOG_NO_NUMBA"):
        raise ImportError("disabled by KAFKALOG_NO_NUMBA")
    import llvmlite.binding as llvm
    import numba
    from numba import types

    from kafkalog.fast import jitcache

    jitcache.install()  # a read-only package dir caches per user
except ImportError:  # pragma: no cover
    pass
else:  # pragma: no cover - depends on the environment
    _LZ4_SIG = types.int32(types.intp, types.intp, types.int32, types.int32)
    _CRC_SIG = types.uint32(types.uint32, types.intp, types.uintp)
    _STREAM_SIG = types.uintp(types.uintp, types.uintp, types.uintp)
    _RESET_SIG = types.uintp(types.uintp, types.int32)
    _IS_ERR_SIG = types.uint32(types.uintp)
    _CODE_SIG = types.int32(types.uintp)

    def _register(name: str, address: int | None, sig: Any, stub: Callable[..., Any]) -> bool:
        """Bind ``kafkalog_<name>`` to ``address``, or to a stub that reports failure (compiled
        code always links, and code cached with the real function stays valid without it)."""
        ok = bool(address)
        if not ok:
            address = numba.cfunc(sig)(stub).address
        llvm.add_symbol("kafkalog_" + name, address)
        return ok

    def _bad_lz4(src: int, dst: int, size: int, cap: int) -> int:
        return -1

    def _bad_crc(crc: int, data: int, size: int) -> int:
        return 0

    def _no_stream(dctx: int, out: int, src: int) -> int:
        return 0

    def _no_reset(dctx: int, what: int) -> int:
        return 0

    def _error(r: int) -> int:
        return 1

    NATIVE_LZ4 = _register("LZ4_decompress_safe", _lz4_address(), _LZ4_SIG, _bad_lz4)
    NATIVE_CRC = _register("crc32c", _crc32c_address(), _CRC_SIG, _bad_crc)
    _zstd_lib = _zstd_library()

    def _address(f: str) -> int | None:
        return None if _zstd_lib is None else ctypes.cast(getattr(_zstd_lib, f), ctypes.c_void_p).value

    NATIVE_ZSTD = _register("ZSTD_decompressStream", _address("ZSTD_decompressStream"), _STREAM_SIG, _no_stream)
    NATIVE_ZSTD &= _register("ZSTD_DCtx_reset", _address("ZSTD_DCtx_reset"), _RESET_SIG, _no_reset)
    NATIVE_ZSTD &= _register("ZSTD_isError", _address("ZSTD_isError"), _IS_ERR_SIG, _error)
    NATIVE_ZSTD &= _register("ZSTD_getErrorCode", _address("ZSTD_getErrorCode"), _CODE_SIG, _error)
    if not NATIVE_ZSTD:
        _zstd_lib = None
    LZ4, ZSTD, CRC = NATIVE_LZ4, NATIVE_ZSTD, NATIVE_CRC

    _c_lz4 = types.ExternalFunction("kafkalog_LZ4_decompress_safe", _LZ4_SIG)
    _c_crc = types.ExternalFunction("kafkalog_crc32c", _CRC_SIG)
    _c_stream = types.ExternalFunction("kafkalog_ZSTD_decompressStream", _STREAM_SIG)
    _c_reset = types.ExternalFunction("kafkalog_ZSTD_DCtx_reset", _RESET_SIG)
    _c_is_error = types.ExternalFunction("kafkalog_ZSTD_isError", _IS_ERR_SIG)
    _c_error_code = types.ExternalFunction("kafkalog_ZSTD_getErrorCode", _CODE_SIG)

    @numba.njit(cache=True, nogil=True, inline="always")
    def _native_lz4_block(src: np.ndarray, pos: int, size: int, dst: np.ndarray, at: int, cap: int) -> int:
        """LZ4_decompress_safe of ``src[pos:pos+size]`` into ``dst[at:at+cap]`` (the caller
        keeps both spans inside the arrays); the size written, or -1 if the block is bad."""
        n = _c_lz4(src.ctypes.data + pos, dst.ctypes.data + at, np.int32(size), np.int32(cap))
        return np.int64(n) if n >= 0 else np.int64(BAD)

    @numba.njit(cache=True, nogil=True, inline="always")
    def _native_zstd_frames(ctx: np.ndarray, src: np.ndarray, pos: int, size: int, dst: np.ndarray, at: int, cap: int) -> int:
        """Stream every zstd frame of ``src[pos:pos+size]`` (with or without content size,
        skippable ones skipped) into ``dst[at:at+cap]``: the size, :data:`ROOM` (more than ``cap``
        bytes) or :data:`BAD` (corrupt, or ending inside a frame)."""
        dctx = ctx[0]
        base = np.uint64(ctx.ctypes.data)
        if _c_is_error(_c_reset(dctx, np.int32(_ZSTD_RESET_SESSION_ONLY))):
            return np.int64(BAD)
        ctx[1] = np.uint64(src.ctypes.data + pos)
        ctx[2] = np.uint64(size)
        ctx[3] = np.uint64(0)
        ctx[4] = np.uint64(dst.ctypes.data + at)
        ctx[5] = np.uint64(cap)
        ctx[6] = np.uint64(0)
        while ctx[3] < ctx[2]:
            was_in, was_out = ctx[3], ctx[6]
            r = _c_stream(dctx, base + np.uint64(32), base + np.uint64(8))
            if _c_is_error(r):
                return np.int64(ROOM) if _c_error_code(r) == _ZSTD_ERROR_DST_SIZE_TOO_SMALL else np.int64(BAD)
            if r != 0:  # inside a frame: out of room, out of input, or stuck
                if ctx[6] == ctx[5]:
                    return np.int64(ROOM)
                if ctx[3] == ctx[2] or (ctx[3] == was_in and ctx[6] == was_out):
                    return np.int64(BAD)
        return np.int64(ctx[6])

    @numba.njit(cache=True, nogil=True, inline="always")
    def _native_crc32c(src: np.ndarray, pos: int, size: int) -> int:
        """The CRC-32C of ``src[pos:pos+size]`` (the caller keeps the span inside ``src``)."""
        c = _c_crc(np.uint32(0xFFFFFFFF), src.ctypes.data + pos, np.uint64(size))
        return np.int64(c ^ np.uint32(0xFFFFFFFF))

    lz4_block = _native_lz4_block
    crc32c = _native_crc32c
    zstd_frames = _native_zstd_frames
