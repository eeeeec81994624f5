"""Kafka's five codecs with the framings Kafka uses on disk (SPEC appendix A).

* gzip: one or more gzip members; written as Java's GZIPOutputStream does (10-byte header with
  OS=255, deflate level 6): byte-identical to Kafka's output.
* snappy: snappy-java's stream framing (magic ``82 'SNAPPY' 00``, version, compatible version,
  then big-endian length-prefixed raw blocks of at most 32 KiB input); read as snappy-java 1.1.10.5
  reads it (raw snappy, concatenated streams, 1-3 stray bytes at the end ignored); written
  byte-identical to Kafka's, with libsnappy 1.1.10's compressor (:mod:`kafkalog.format.compressors`).
* lz4: an LZ4 frame with independent 64 KiB blocks, no content size and no checksums; for magic
  0 the header checksum is computed the old, wrong way (over the magic number too) and is not
  checked on read. Linked blocks are refused, as Kafka refuses them. Written byte-identical to
  Kafka's: lz4-java's fast compressor at the default level 9 (:mod:`kafkalog.format.compressors`)
  and LZ4 HC at any other level, as Kafka does.
* zstd: a zstd frame without content size (read by streaming); written byte-identical to Kafka's.

Every decompressor stops at ``max_size`` output bytes and raises :class:`DecompressionError`
past it, so a small corrupt or hostile payload cannot allocate without bound.

The codec libraries (and numpy, for :func:`decompress_into`) are imported when a codec first needs
them, not with this module: a command that meets no compressed batch never loads them.
"""

from __future__ import annotations

import struct
import threading
import zlib
from collections.abc import Callable, Iterator
from enum import IntEnum
from typing import TYPE_CHECKING, Protocol

from kafkalog.errors import DecompressionError, UnsupportedCompressionError
from kafkalog.format import compressors

if TYPE_CHECKING:
    import numpy as np
    import zstandard

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "Codec",
    "compress",
    "decompress",
    "decompress_into",
]

#: Default bound on one batch's decompressed size (Kafka's own bound is the fetch/message size).
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024


class Codec(IntEnum):
    """Compression codec ids, as stored in the low 3 bits of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """The lowercase name Kafka prints (``none``, ``gzip``, ...)."""
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> Codec:
        """Look a codec up by its Kafka name (``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``)."""
        try:
            return cls[name.upper()]
        except KeyError:
            raise UnsupportedCompressionError(f"unknown compression codec {name!r}") from None


def codec_of(codec_id: int) -> Codec:
    """Map a 3-bit codec id to :class:`Codec`, raising for the unassigned ids 5-7."""
    try:
        return Codec(codec_id)
    except ValueError:
        raise UnsupportedCompressionError(f"unknown compression codec id {codec_id}") from None


# --------------------------------------------------------------------------------------- gzip
#: What java.util.zip.GZIPOutputStream writes (JDK 16+: OS byte 255, "unknown").
_JAVA_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def _gzip_decompress(data: bytes, max_size: int) -> bytes:
    out: list[bytes] = []
    total = 0
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(wbits=31)
        try:
            chunk = d.decompress(rest, max_size - total + 1)
            total += len(chunk)
            out.append(chunk)
            if total > max_size:
                raise DecompressionError(f"gzip payload decompresses to more than {max_size} bytes")
            if not d.eof:
                if d.unconsumed_tail:
                    raise DecompressionError(f"gzip payload decompresses to more than {max_size} bytes")
                raise DecompressionError("gzip payload ends inside a member")
        except zlib.error as e:
            raise DecompressionError(f"bad gzip payload: {e}") from None
        rest = d.unused_data
        if not rest:
            return b"".join(out)


def _gzip_compress(data: bytes, level: int | None) -> bytes:
    c = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, -15)
    body = c.compress(data) + c.flush()
    return _JAVA_GZIP_HEADER + body + struct.pack("<II", zlib.crc32(data), len(data) & 0xFFFFFFFF)


# ------------------------------------------------------------------------- block compressors
class BlockCompressors(Protocol):
    """The two block compressors Kafka's bytes depend on (:mod:`kafkalog.format.compressors`)."""

    def lz4_block(self, src: bytes) -> bytes: ...

    def snappy_raw(self, src: bytes) -> bytes: ...


_block: BlockCompressors | None = None
_block_loader: Callable[[], BlockCompressors] | None = None


def set_block_compressors(loader: Callable[[], BlockCompressors] | None) -> None:
    """Plug in faster twins of :mod:`kafkalog.format.compressors` from a layer above: ``loader``
    runs on first use and returns them (the package plugs in the compiled ones this way); ``None``
    restores the plain ones. They must give the same bytes."""
    global _block, _block_loader
    _block, _block_loader = None, loader


def _block_compressors() -> BlockCompressors:
    global _block
    if _block is None:
        _block = _block_loader() if _block_loader is not None else compressors  # type: ignore[assignment]
    return _block  # type: ignore[return-value]


# ------------------------------------------------------------------------------------- snappy
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_BLOCK = 32 * 1024
_XERIAL_HEAD = struct.unpack(">i", _XERIAL_MAGIC[:4])[0]  # the magic's first 4 bytes as a chunk length
_XERIAL_MAX_CHUNK = 512 * 1024 * 1024  # snappy-java's MAX_CHUNK_SIZE


def _snappy_raw_len(block: bytes | memoryview, budget: int) -> int:
    """The size a raw snappy block declares, refused over ``budget``."""
    import cramjam

    try:
        n = cramjam.snappy.decompress_raw_len(block)
    except Exception as e:  # cramjam raises its own error type
        raise DecompressionError(f"bad snappy block: {e}") from None
    if n > budget:
        raise DecompressionError(f"snappy payload decompresses to more than the {budget} bytes allowed")
    return int(n)


def _snappy_raw(block: bytes | memoryview, budget: int) -> bytes:
    import cramjam

    _snappy_raw_len(block, budget)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except Exception as e:
        raise DecompressionError(f"bad snappy block: {e}") from None


def _snappy_blocks(data: bytes | memoryview) -> Iterator[memoryview]:
    """The raw snappy blocks of a payload, read as snappy-java 1.1.10.5's SnappyInputStream reads
    it (R-SNAPPY-03/04): the payload itself when it has no stream header, else each chunk's; a bad
    chunk length raises when reached, after the blocks before it."""
    mv = memoryview(data)
    if len(mv) < 16 or mv[:8] != _XERIAL_MAGIC:
        yield mv  # also the empty payload, which raw snappy refuses
        return
    # The first header's version fields are not checked (item 3).
    pos = 16
    while len(mv) - pos >= 4:  # 1-3 bytes left at the end are ignored (item 4)
        (n,) = struct.unpack_from(">i", mv, pos)
        if n == _XERIAL_HEAD:  # a concatenated stream's header in place of a chunk length (item 5)
            if len(mv) - pos < 16:
                raise DecompressionError(f"snappy stream header at payload byte {pos} is truncated")
            if mv[pos : pos + 8] != _XERIAL_MAGIC:
                break  # not a header after all: the stream ends here
            (version,) = struct.unpack_from(">i", mv, pos + 8)
            if version < 1:
                raise DecompressionError(f"snappy stream header at payload byte {pos} has incompatible version {version}")
            pos += 16
            continue
        pos += 4
        if n < 0 or n > _XERIAL_MAX_CHUNK or pos + n > len(mv):
            raise DecompressionError(f"snappy chunk of {n} bytes at payload byte {pos - 4} runs past the payload")
        yield mv[pos : pos + n]
        pos += n


def _snappy_decompress(data: bytes, max_size: int) -> bytes:
    """A snappy payload's bytes (:func:`_snappy_blocks`), at most ``max_size`` of them."""
    out: list[bytes] = []
    total = 0
    for block in _snappy_blocks(data):
        chunk = _snappy_raw(block, max_size - total)
        total += len(chunk)
        out.append(chunk)
    return out[0] if len(out) == 1 else b"".join(out)


def _snappy_decompress_into(data: memoryview, out: np.ndarray, at: int, max_size: int) -> tuple[np.ndarray, int]:
    """:func:`_snappy_decompress` written straight into ``out`` from ``at`` (no copy of the
    payload or of its blocks); the same errors (a block cramjam refuses is decompressed again
    by :func:`_snappy_raw`, which raises it)."""
    import cramjam

    start = at
    for block in _snappy_blocks(data):
        n = _snappy_raw_len(block, max_size - (at - start))
        if at + n > len(out):
            out = _grown(out, at, at + n)
        try:
            got = cramjam.snappy.decompress_raw_into(block, out[at : at + n])
        except Exception as e:  # cramjam's own error type
            _snappy_raw(block, max_size - (at - start))  # raises the error decompress() gives
            raise DecompressionError(f"bad snappy block: {e}") from None
        at += int(got)
    return out, at


def _snappy_compress(data: bytes, level: int | None) -> bytes:
    """snappy-java's SnappyOutputStream: the header, then each 32 KiB of input as one chunk of raw
    snappy made by libsnappy 1.1.10's compressor (R-SNAPPY-05; snappy has no levels)."""
    snappy_raw = _block_compressors().snappy_raw
    parts = [_XERIAL_MAGIC, struct.pack(">ii", 1, 1)]
    for i in range(0, len(data), _XERIAL_BLOCK):
        raw = snappy_raw(data[i : i + _XERIAL_BLOCK])
        parts.append(struct.pack(">i", len(raw)))
        parts.append(raw)
    return b"".join(parts)


# ---------------------------------------------------------------------------------------- lz4
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_DEFAULT_LEVEL = 9  # compression.lz4.level's default
_LZ4_BLOCK_SIZES = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


def lz4_header_checksum(header: bytes, magic: int) -> int:
    """The HC byte Kafka writes: over FLG..BD, or (magic 0, Kafka's old bug) over magic..BD too."""
    import xxhash

    return (xxhash.xxh32_intdigest(header if magic == 0 else header[4:]) >> 8) & 0xFF


def _lz4_header(data: bytes | memoryview, magic: int) -> tuple[int, int, int, int]:
    """Check an lz4 frame header as Kafka reads it; returns (first block position, block maximum,
    block checksum flag, content checksum flag)."""
    if magic != 0 and data[:7] == _KAFKA_LZ4_HEADER:  # the header Kafka writes: the checks below would pass
        return 7, 64 * 1024, 0, 0
    if len(data) < 7:
        raise DecompressionError("lz4 frame header is truncated")
    if data[:4] != _LZ4_MAGIC:
        raise DecompressionError("not an lz4 frame (bad magic number)")
    flg, bd = data[4], data[5]
    if flg & 0x03:
        raise DecompressionError("lz4 frame: reserved FLG bits are set")
    if (flg >> 6) != 1:
        raise DecompressionError(f"lz4 frame: version {flg >> 6} is unsupported")
    if not (flg >> 5) & 1:
        raise DecompressionError("lz4 frame: dependent (linked) blocks are unsupported, as in Kafka")
    if bd & 0x8F:
        raise DecompressionError("lz4 frame: reserved BD bits are set")
    block_max = _LZ4_BLOCK_SIZES.get((bd >> 4) & 7)
    if block_max is None:
        raise DecompressionError("lz4 frame: block size id must be 4 to 7")
    pos = 6
    if (flg >> 3) & 1:
        pos += 8
    if pos >= len(data):
        raise DecompressionError("lz4 frame header is truncated")
    if magic != 0 and data[pos] != lz4_header_checksum(bytes(data[:pos]), magic):
        raise DecompressionError("lz4 frame: header checksum mismatch")
    return pos + 1, block_max, (flg >> 4) & 1, (flg >> 2) & 1


def _lz4_blocks(data: bytes | memoryview, magic: int) -> Iterator[tuple[int, int, bool, int]]:
    """The blocks of a Kafka lz4 frame, checked: (position, size, stored uncompressed, block maximum)."""
    pos, block_max, block_checksum, content_checksum = _lz4_header(data, magic)
    while True:
        if pos + 4 > len(data):
            raise DecompressionError("lz4 frame ends before its end mark")
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if size == 0:
            # Kafka reads (and does not verify) the content checksum after the end mark, and
            # fails when its 4 bytes are missing (R-LZ4-06).
            if content_checksum and pos + 4 > len(data):
                raise DecompressionError("lz4 frame ends inside the content checksum after its end mark")
            return
        stored = bool(size & 0x80000000)
        size &= 0x7FFFFFFF
        if size > block_max:
            raise DecompressionError(f"lz4 block of {size} bytes exceeds the frame's maximum {block_max}")
        if pos + size > len(data):
            raise DecompressionError("lz4 block runs past the payload")
        if block_checksum:
            import xxhash

            if pos + size + 4 > len(data):
                raise DecompressionError("lz4 block checksum runs past the payload")
            (expected,) = struct.unpack_from("<I", data, pos + size)
            if xxhash.xxh32_intdigest(data[pos : pos + size]) != expected:
                raise DecompressionError("lz4 block checksum mismatch")
        yield pos, size, stored, block_max
        pos += size + 4 * block_checksum


#: What Kafka's producer writes for magic 1 and 2: FLG 0x60 (version 1, independent blocks), BD 0x40 (64 KiB
#: blocks), HC 0x82 (``lz4_header_checksum`` of those, which the tests recompute).
_KAFKA_LZ4_HEADER = _LZ4_MAGIC + b"\x60\x40\x82"


def _lz4_decompress(data: bytes, max_size: int, magic: int) -> bytes:
    import lz4.block

    out: list[bytes] = []
    total = 0
    mv = memoryview(data)
    for pos, size, stored, block_max in _lz4_blocks(data, magic):
        if stored:
            block = bytes(mv[pos : pos + size])
        else:
            try:
                block = lz4.block.decompress(mv[pos : pos + size], uncompressed_size=block_max)
            except lz4.block.LZ4BlockError as e:
                raise DecompressionError(f"bad lz4 block: {e}") from None
        total += len(block)
        if total > max_size:
            raise DecompressionError(f"lz4 payload decompresses to more than {max_size} bytes")
        out.append(block)
    return b"".join(out)


def _lz4_decompress_into(data: memoryview, out: np.ndarray, at: int, max_size: int, magic: int) -> tuple[np.ndarray, int]:
    import cramjam
    import numpy as np

    start = at
    for pos, size, stored, block_max in _lz4_blocks(data, magic):
        if at + block_max > len(out):
            out = _grown(out, at, at + block_max)
        if stored:
            out[at : at + size] = np.frombuffer(data, np.uint8, size, pos)
            at += size
        else:
            try:
                at += cramjam.lz4.decompress_block_into(data[pos : pos + size], out[at : at + block_max])
            except cramjam.DecompressionError as e:
                raise DecompressionError(f"bad lz4 block: {e}") from None
        if at - start > max_size:
            raise DecompressionError(f"lz4 payload decompresses to more than {max_size} bytes")
    return out, at


def _lz4_compress(data: bytes, level: int | None, magic: int) -> bytes:
    """Kafka's Lz4BlockOutputStream (R-LZ4-01, R-LZ4-07): 64 KiB blocks, each compressed by lz4-java's fast
    compressor at the default level 9 and by LZ4 HC at any other level, stored raw when that is
    not smaller."""
    header = bytearray(_LZ4_MAGIC + b"\x60\x40")
    header.append(lz4_header_checksum(bytes(header), magic))
    parts = [bytes(header)]
    block = 64 * 1024
    fast = level is None or level == _LZ4_DEFAULT_LEVEL  # Kafka: the fast compressor only at the default level (R-WR-12)
    lz4_block = _block_compressors().lz4_block
    for i in range(0, len(data), block):
        raw = data[i : i + block]
        if fast:
            c = lz4_block(raw)
        else:  # lz4-java's JNI HC is liblz4's LZ4_compress_HC, as the lz4 package's
            import lz4.block

            c = lz4.block.compress(raw, mode="high_compression", compression=level, store_size=False)
        if len(c) >= len(raw):
            parts.append(struct.pack("<I", len(raw) | 0x80000000))
            parts.append(raw)
        else:
            parts.append(struct.pack("<I", len(c)))
            parts.append(c)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


# --------------------------------------------------------------------------------------- zstd
_ZSTD_LOCAL = threading.local()


def _zstd_d() -> zstandard.ZstdDecompressor:
    """This thread's decompressor: zstandard's must not be shared by threads (decoding at once,
    they report corruption in good payloads)."""
    d = getattr(_ZSTD_LOCAL, "d", None)
    if d is None:
        import zstandard

        d = _ZSTD_LOCAL.d = zstandard.ZstdDecompressor()
    return d


_ZSTD_CHUNK = 1 << 20
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE = 0x184D2A50  # and the 15 magic numbers after it


def _zstd_check_complete(data: bytes | memoryview | np.ndarray) -> None:
    """Raise when the payload ends inside a zstd frame. zstandard's reader then returns what it
    decoded as if the data ended there; zstd-jni, which Kafka reads with, reports a truncated
    source. Walks frame and block headers only (RFC 8878, sections 3.1.1 and 3.1.2); the
    decoder has checked everything else."""
    import zstandard

    data = memoryview(data).cast("B")  # Python ints when indexed, whatever the buffer
    pos, n = 0, len(data)
    while pos < n:
        if n - pos < 4:
            raise DecompressionError("zstd payload ends inside a frame header")
        (magic,) = struct.unpack_from("<I", data, pos)
        if magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE:
            if n - pos < 8:
                raise DecompressionError("zstd payload ends inside a skippable frame")
            pos += 8 + struct.unpack_from("<I", data, pos + 4)[0]
            continue
        if magic != _ZSTD_MAGIC:
            return  # not a frame: the decoder has already judged it
        try:
            header_size = zstandard.frame_header_size(data[pos : pos + 18])
        except zstandard.ZstdError:
            raise DecompressionError("zstd payload ends inside a frame header") from None
        if pos + header_size > n:
            raise DecompressionError("zstd payload ends inside a frame header")
        checksum = 4 if data[pos + 4] & 0x04 else 0  # Content_Checksum_flag of the frame header descriptor
        pos += header_size
        last = False
        while not last:
            if n - pos < 3:
                raise DecompressionError("zstd payload ends inside a frame (truncated source)")
            header = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            last = bool(header & 1)
            pos += 3 + (1 if (header >> 1) & 3 == 1 else header >> 3)  # an RLE block stores one byte
        pos += checksum
    if pos > n:
        raise DecompressionError("zstd payload ends inside a frame (truncated source)")


def _zstd_decompress(data: bytes, max_size: int) -> bytes:
    import zstandard

    out: list[bytes] = []
    total = 0
    try:
        with _zstd_d().stream_reader(data, read_across_frames=True) as reader:
            while True:
                chunk = reader.read(min(_ZSTD_CHUNK, max_size - total + 1))
                if not chunk:
                    _zstd_check_complete(data)
                    return b"".join(out)
                total += len(chunk)
                if total > max_size:
                    raise DecompressionError(f"zstd payload decompresses to more than {max_size} bytes")
                out.append(chunk)
    except zstandard.ZstdError as e:
        raise DecompressionError(f"bad zstd payload: {e}") from None


def _zstd_decompress_into(data: memoryview, out: np.ndarray, at: int, max_size: int) -> tuple[np.ndarray, int]:
    import zstandard

    start = at
    try:
        with _zstd_d().stream_reader(data, read_across_frames=True) as reader:
            while True:
                if at == len(out):
                    out = _grown(out, at, at + _ZSTD_CHUNK)
                room = min(len(out) - at, max_size - (at - start) + 1)
                got = reader.readinto(out[at : at + room])
                if not got:
                    _zstd_check_complete(data)
                    return out, at
                at += got
                if at - start > max_size:
                    raise DecompressionError(f"zstd payload decompresses to more than {max_size} bytes")
    except zstandard.ZstdError as e:
        raise DecompressionError(f"bad zstd payload: {e}") from None


def _zstd_compress(data: bytes, level: int | None) -> bytes:
    # Streamed as zstd-jni's ZstdOutputStream does it: no content size in the frame header, the
    # data flushed as non-final block(s) at close, then an empty final block (01 00 00). This is
    # byte-identical to Kafka's zstd batches.
    import zstandard

    c = zstandard.ZstdCompressor(level=3 if level is None else level, write_content_size=False).compressobj()
    return c.compress(data) + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + c.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)


# ----------------------------------------------------------------------------------- registry
_DECOMPRESSORS: dict[Codec, Callable[[bytes, int, int], bytes]] = {
    Codec.GZIP: lambda d, m, _magic: _gzip_decompress(d, m),
    Codec.SNAPPY: lambda d, m, _magic: _snappy_decompress(d, m),
    Codec.LZ4: _lz4_decompress,
    Codec.ZSTD: lambda d, m, _magic: _zstd_decompress(d, m),
}

_COMPRESSORS: dict[Codec, Callable[[bytes, int | None, int], bytes]] = {
    Codec.GZIP: lambda d, lv, _magic: _gzip_compress(d, lv),
    Codec.SNAPPY: lambda d, lv, _magic: _snappy_compress(d, lv),
    Codec.LZ4: _lz4_compress,
    Codec.ZSTD: lambda d, lv, _magic: _zstd_compress(d, lv),
}


def decompress(codec: Codec, data: bytes, *, magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """Decompress one batch payload written with ``codec`` inside a batch of ``magic``."""
    if codec is Codec.NONE:
        return bytes(data)
    if codec is Codec.ZSTD and magic < 2:
        raise UnsupportedCompressionError(f"zstd cannot be used with magic {magic} (Kafka requires magic 2)")
    return _DECOMPRESSORS[codec](bytes(data), max_size, magic)


def _grown(out: np.ndarray, used: int, need: int) -> np.ndarray:
    """A larger buffer (at least ``need`` bytes, doubling) holding ``out[:used]``."""
    import numpy as np

    bigger = np.empty(max(need, 2 * len(out)), np.uint8)
    bigger[:used] = out[:used]
    return bigger


def decompress_into(
    codec: Codec, data: memoryview, out: np.ndarray, at: int, *, magic: int = 2, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> tuple[np.ndarray, int]:
    """Decompress one batch payload into ``out`` (uint8) from byte ``at``, so that many batches
    share one buffer; ``out`` is replaced by a larger copy when it runs short. Returns (the buffer,
    the end of what was written). lz4, zstd and snappy write in place; gzip goes through
    :func:`decompress`."""
    if codec is Codec.LZ4:
        return _lz4_decompress_into(data, out, at, max_size, magic)
    if codec is Codec.ZSTD and magic >= 2:
        return _zstd_decompress_into(data, out, at, max_size)
    if codec is Codec.SNAPPY:
        return _snappy_decompress_into(data, out, at, max_size)
    import numpy as np

    raw = decompress(codec, bytes(data), magic=magic, max_size=max_size)
    if at + len(raw) > len(out):
        out = _grown(out, at, at + len(raw))
    out[at : at + len(raw)] = np.frombuffer(raw, np.uint8)
    return out, at + len(raw)


def compress(codec: Codec, data: bytes, *, magic: int = 2, level: int | None = None) -> bytes:
    """Compress one batch payload as Kafka's producer does for ``codec`` and ``magic``."""
    if codec is Codec.NONE:
        return bytes(data)
    if codec is Codec.ZSTD and magic < 2:
        raise UnsupportedCompressionError(f"zstd cannot be used with magic {magic} (Kafka requires magic 2)")
    return _COMPRESSORS[codec](bytes(data), level, magic)
