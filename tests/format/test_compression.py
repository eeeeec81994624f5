"""Kafka's framings of each codec, checked against Kafka's batches and independent libraries."""

from __future__ import annotations

import gzip
import os
import struct
import zlib

import lz4.frame
import pytest

from helpers import GOLDEN
from kafkalog import Codec, DecompressionError, LogReader, UnsupportedCompressionError
from kafkalog.format.compression import compress, decompress, lz4_header_checksum

RECORDS = GOLDEN / "kafka" / "records"


def _payloads(folder: str) -> list[tuple[int, Codec, bytes]]:
    out = []
    with LogReader(RECORDS / folder / "00000000000000000000.log") as r:
        for b in r.batches():
            raw = b.data[61:] if b.magic == 2 else b.msg.value
            if b.compression is not Codec.NONE:
                out.append((b.magic, b.compression, raw))
    return out


@pytest.mark.rule("R-WR-11")
@pytest.mark.parametrize("magic", [0, 1, 2])
def test_gzip_output_is_byte_identical_to_kafkas(magic: int) -> None:
    for m, codec, raw in _payloads(f"v{magic}-gzip"):
        assert compress(codec, decompress(codec, raw, magic=m), magic=m) == raw


def test_gzip_reads_concatenated_members() -> None:
    data = gzip.compress(b"abc") + gzip.compress(b"def")
    assert decompress(Codec.GZIP, data) == b"abcdef"


def test_lz4_magic0_header_checksum_is_kafkas_old_one() -> None:
    """Kafka's magic-0 frames hash magic..BD; lz4.frame (the reference) rejects them as they are."""
    ((m, codec, raw),) = _payloads("v0-lz4")
    assert raw[6] == lz4_header_checksum(raw[:6], 0) != lz4_header_checksum(raw[:6], 1)
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(raw)
    fixed = raw[:6] + bytes([lz4_header_checksum(raw[:6], 1)]) + raw[7:]
    assert decompress(codec, raw, magic=0) == lz4.frame.decompress(fixed)


@pytest.mark.parametrize("magic", [1, 2])
def test_lz4_frames_are_standard_for_magic_1_and_2(magic: int) -> None:
    for m, codec, raw in _payloads(f"v{magic}-lz4"):
        plain = lz4.frame.decompress(raw)
        assert decompress(codec, raw, magic=m) == plain
        ours = compress(codec, plain, magic=m)
        assert ours[:7] == raw[:7]  # FLG 0x60, BD 0x40 and the header checksum, as Kafka writes
        assert lz4.frame.decompress(ours) == plain


def test_lz4_multi_block_and_incompressible_blocks() -> None:
    plain = os.urandom(100_000) + b"z" * 200_000
    ours = compress(Codec.LZ4, plain)
    assert lz4.frame.decompress(ours) == plain
    assert decompress(Codec.LZ4, ours) == plain


def test_lz4_linked_blocks_are_refused_as_kafka_refuses_them() -> None:
    frame = lz4.frame.compress(b"x" * 1000, store_size=False)
    header = bytes([frame[0], frame[1], frame[2], frame[3], frame[4] & ~0x20, frame[5]])  # clear B.Indep
    linked = header + bytes([lz4_header_checksum(header, 1)]) + frame[7:]
    with pytest.raises(DecompressionError, match="dependent"):
        decompress(Codec.LZ4, linked)


@pytest.mark.rule("R-SNAPPY-02")
def test_snappy_xerial_framing_and_raw() -> None:
    import cramjam

    for m, codec, raw in _payloads("v2-snappy"):
        assert raw.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")
        assert decompress(codec, raw, magic=m)
    plain = os.urandom(50_000) + b"y" * 70_000  # several 32 KiB chunks
    framed = compress(Codec.SNAPPY, plain)
    assert framed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    assert decompress(Codec.SNAPPY, framed) == plain
    chunks, pos = [], 16
    while pos < len(framed):
        (n,) = struct.unpack_from(">i", framed, pos)
        chunks.append(bytes(cramjam.snappy.decompress_raw(framed[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    assert len(chunks) == 4 and b"".join(chunks) == plain
    assert decompress(Codec.SNAPPY, bytes(cramjam.snappy.compress_raw(plain))) == plain


@pytest.mark.rule("R-WR-11")
def test_zstd_output_is_byte_identical_to_kafkas() -> None:
    for m, codec, raw in _payloads("v2-zstd") + _payloads("v2-transactional"):
        if codec is Codec.ZSTD:
            assert compress(codec, decompress(codec, raw, magic=m), magic=m) == raw


@pytest.mark.rule("R-ZSTD-02")
def test_zstd_frames_without_content_size() -> None:
    import zstandard

    for m, codec, raw in _payloads("v2-zstd"):
        assert zstandard.get_frame_parameters(raw).content_size == zstandard.CONTENTSIZE_UNKNOWN
        assert decompress(codec, raw, magic=m) == zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    ours = compress(Codec.ZSTD, b"q" * 10_000)
    assert zstandard.get_frame_parameters(ours).content_size == zstandard.CONTENTSIZE_UNKNOWN


@pytest.mark.rule("R-ZSTD-03")
def test_zstd_payload_ending_inside_a_frame_is_rejected() -> None:
    """zstd-jni (Kafka's reader) raises "Truncated source" when the payload ends inside a frame;
    python-zstandard's stream reader alone returns the part before."""
    import zstandard

    (m, _codec, raw), *_ = [p for p in _payloads("v2-zstd") if p[1] is Codec.ZSTD]
    whole = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    checked = zstandard.ZstdCompressor(write_checksum=True, write_content_size=True).compress(whole)
    skippable = struct.pack("<II", 0x184D2A5E, 3) + b"abc"
    for good, want in ((raw, whole), (raw + checked, whole * 2), (skippable + checked + skippable, whole)):
        assert decompress(Codec.ZSTD, good, magic=m) == want
    cut = [raw[:-1], raw[:-3], raw + raw[:10], raw + raw[:5], checked[:-2], checked + skippable[:6], raw[:5]]
    for bad in cut:
        with pytest.raises(DecompressionError):
            decompress(Codec.ZSTD, bad, magic=m)
    assert zstandard.ZstdDecompressor().stream_reader(raw[:-3]).read() == whole  # what the library alone says


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_decompression_is_bounded(codec: Codec) -> None:
    bomb = compress(codec, bytes(4 << 20))
    with pytest.raises(DecompressionError, match="more than"):
        decompress(codec, bomb, max_size=1 << 20)


@pytest.mark.rule("R-WR-03")
def test_zstd_needs_magic_2() -> None:
    with pytest.raises(UnsupportedCompressionError):
        decompress(Codec.ZSTD, b"", magic=1)
    with pytest.raises(UnsupportedCompressionError):
        compress(Codec.ZSTD, b"", magic=0)


def test_garbage_is_a_decompression_error() -> None:
    for codec in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD):
        with pytest.raises(DecompressionError):
            decompress(codec, b"\x01\x02garbage" * 3)
    with pytest.raises(DecompressionError):
        decompress(Codec.GZIP, zlib.compress(b"not gzip framing"))
