"""Primitive encodings of Kafka's formats: zig-zag varints (protobuf style) and the two CRCs.

Kafka's ByteUtils reads a varint of at most 5 bytes and a varlong of at most 10; longer encodings
are rejected. CRC-32C (Castagnoli) covers v2 batches, CRC-32 (IEEE) covers v0/v1 messages.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Callable

from kafkalog.errors import CorruptRecordError, TruncatedError

__all__ = [
    "JAVA_UTF8",
    "crc32",
    "crc32c",
    "java_utf8",
    "read_varint",
    "read_varlong",
    "set_small_crc32c",
    "write_varint",
    "varint_size",
    "zigzag_decode",
    "zigzag_encode",
]


#: CRC-32C of small buffers, plugged in from above (``set_small_crc32c``): the compiled core's own
#: code, so that checking a small file's batches imports no CRC package.
_small_crc32c: Callable[[bytes | bytearray | memoryview], int] | None = None
_crc32c: Callable[[bytes | bytearray | memoryview], int] | None = None
#: Buffers from this size on go to the crc32c package (faster on large buffers than the small-buffer code).
_SMALL_CRC = 1 << 16


def set_small_crc32c(f: Callable[[bytes | bytearray | memoryview], int] | None) -> None:
    """Plug in a CRC-32C for buffers under 64 KiB (the package plugs in the compiled core's); None
    leaves every buffer to the crc32c package. The format layer imports nothing from above."""
    global _small_crc32c
    _small_crc32c = f


def crc32c(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C of ``data``: the crc32c package's hardware-accelerated C implementation, imported on
    first use (reading its package metadata costs more than a small command's work), or for buffers
    under 64 KiB the plugged-in compiled code (:func:`set_small_crc32c`)."""
    global _crc32c
    if _small_crc32c is not None and len(data) < _SMALL_CRC:
        return _small_crc32c(data)
    if _crc32c is None:
        from crc32c import crc32c as f

        _crc32c = f
    return _crc32c(data)


def crc32(data: bytes | bytearray | memoryview) -> int:
    """CRC-32 (IEEE 802.3, as java.util.zip.CRC32) of ``data``."""
    return zlib.crc32(data)


def zigzag_encode(value: int) -> int:
    """Map a signed integer to an unsigned one (0, -1, 1, -2 -> 0, 1, 2, 3)."""
    return (value << 1) ^ (value >> 63)


def zigzag_decode(value: int) -> int:
    """Inverse of :func:`zigzag_encode`."""
    return (value >> 1) ^ -(value & 1)


def read_unsigned_varint(buf: bytes | memoryview, pos: int, max_bytes: int = 10, what: str = "varint") -> tuple[int, int]:
    """Read an unsigned base-128 varint of at most ``max_bytes`` bytes (no zig-zag: the encoding
    under Kafka's varints, and Thrift compact's lengths); return (value, next position)."""
    result = 0
    shift = 0
    end = len(buf)
    for _i in range(max_bytes):
        if pos >= end:
            raise TruncatedError(f"{what} runs past the end of its buffer", position=pos)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
    raise CorruptRecordError(f"{what} is longer than {max_bytes} bytes", position=pos - max_bytes)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a zig-zag varint (at most 5 bytes); return (value, next position). As Kafka's
    ByteUtils.readVarint, only the low 32 bits of a 5-byte encoding count (R-PRIM-04)."""
    raw, pos = read_unsigned_varint(buf, pos, 5, "varint")
    return zigzag_decode(raw & 0xFFFFFFFF), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Read a zig-zag varlong (at most 10 bytes); return (value, next position). As Kafka's
    ByteUtils.readVarlong, only the low 64 bits of a 10-byte encoding count (R-PRIM-04)."""
    raw, pos = read_unsigned_varint(buf, pos, 10, "varlong")
    return zigzag_decode(raw & 0xFFFFFFFFFFFFFFFF), pos


def write_unsigned_varint(value: int, out: bytearray) -> None:
    """Append the unsigned base-128 varint encoding of ``value`` (>= 0) to ``out``."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(value: int, out: bytearray) -> None:
    """Append the zig-zag varint (or varlong) encoding of ``value`` to ``out``."""
    write_unsigned_varint(zigzag_encode(value) & 0xFFFFFFFFFFFFFFFF, out)


def varint_size(value: int) -> int:
    """Number of bytes :func:`write_varint` uses for ``value``."""
    v = zigzag_encode(value) & 0xFFFFFFFFFFFFFFFF
    n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


# ------------------------------------------------------------------------- Java's UTF-8 decoding
def _java_utf8_errors(e: UnicodeError) -> tuple[str, int]:
    """Replace one ill-formed part as JDK 17's ``new String(bytes, UTF_8)`` does (R-REC-09).

    Python's decoder reports each maximal subpart (Unicode §3.9), as Java replaces them, except
    after a lead byte ``ed`` followed by ``a0``-``bf`` (a UTF-16 surrogate's encoding): Java takes
    those two bytes, and a continuation byte after them, as one unit, where Python stops at ``ed``."""
    assert isinstance(e, UnicodeDecodeError)
    data, at = e.object, e.start
    if data[at] == 0xED and at + 1 < len(data) and 0xA0 <= data[at + 1] <= 0xBF:
        return "\ufffd", at + (3 if at + 2 < len(data) and 0x80 <= data[at + 2] <= 0xBF else 2)
    return "\ufffd", e.end


#: The ``errors`` argument of ``bytes.decode("utf-8", JAVA_UTF8)``: Java's replacement of ill-formed
#: input. Valid UTF-8 decodes at the codec's full speed; the handler runs only on ill-formed parts.
JAVA_UTF8 = "kafkalog.java-utf8"
codecs.register_error(JAVA_UTF8, _java_utf8_errors)


def java_utf8(data: bytes | bytearray | memoryview) -> str:
    """``data`` decoded as Java's ``new String(data, UTF_8)`` decodes it: a leading byte order mark
    kept as U+FEFF, each ill-formed part replaced by one U+FFFD as Java replaces it (R-REC-09)."""
    return bytes(data).decode("utf-8", JAVA_UTF8)
