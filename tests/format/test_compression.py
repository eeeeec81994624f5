"""Kafka's framings of each codec, checked against Kafka's batches and independent libraries."""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path

import crc32c
import lz4.frame
import numpy as np
import pytest

from helpers import GOLDEN
from kafkalog import (
    Codec,
    DecompressionError,
    KafkaLogError,
    LogReader,
    RecordBatchBuilder,
    UnsupportedCompressionError,
)
from kafkalog.format.compression import compress, decompress, decompress_into, lz4_header_checksum
from kafkalog.tools.validate import verify

RECORDS = GOLDEN / "kafka" / "records"
JDK = Path(__file__).parent / "jdk"


def jdk_table(inputs: str, outputs: str) -> list[tuple[bytes, str]]:
    """(input, Java's answer) pairs of a table JdkOracle.java wrote (test_jdk_compat.py says how)."""
    ins = (JDK / inputs).read_text(encoding="ascii").split("\n")[:-1]
    outs = (JDK / outputs).read_text(encoding="ascii").split("\n")[:-1]
    assert len(ins) == len(outs) > 10
    return [(bytes.fromhex(i), "error" if o.startswith("error") else o.rstrip()) for i, o in zip(ins, outs, strict=True)]


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


def _lz4_frame_blocks(frame: bytes) -> list[tuple[bool, bytes]]:
    """(stored uncompressed, bytes) of each block of a frame with a 7-byte header and no checksums."""
    out, pos = [], 7
    while True:
        (size,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if size == 0:
            assert pos == len(frame)
            return out
        out.append((bool(size & 0x80000000), frame[pos : pos + (size & 0x7FFFFFFF)]))
        pos += size & 0x7FFFFFFF


@pytest.mark.rule("R-WR-12")
def test_lz4_level_picks_kafkas_compressor() -> None:
    """Lz4BlockOutputStream: lz4-java's fast compressor at exactly the default level 9, its HC
    compressor at the given level for every other one (1-8 included). lz4-java's HC is the LZ4
    library's LZ4_compress_HC (its JNI), which python-lz4's block API calls too; its fast compressor
    is held to lz4-java's own output in test_compressors.py."""
    import lz4.block

    from kafkalog.format.compressors import lz4_block

    text = b"".join(b"record %d: the quick brown fox %d jumps over the lazy dog %d\n" % (i, i * 7 % 13, i % 5) for i in range(3000))
    pieces = [text[i : i + 65536] for i in range(0, len(text), 65536)]
    assert len(pieces) > 1
    fast = [lz4_block(p) for p in pieces]
    for level in range(1, 18):
        want = fast if level == 9 else [lz4.block.compress(p, mode="high_compression", compression=level, store_size=False) for p in pieces]
        assert want != fast or level == 9, level  # the data tells the two compressors apart
        got = _lz4_frame_blocks(compress(Codec.LZ4, text, level=level))
        assert got == [(False, w) for w in want], level
    assert _lz4_frame_blocks(compress(Codec.LZ4, text)) == [(False, w) for w in fast]  # no level: the default


@pytest.mark.rule("R-LZ4-06")
def test_lz4_content_checksum_must_be_present_but_is_not_verified(tmp_path: Path) -> None:
    """Lz4BlockInputStream.readBlock reads 4 bytes after the end mark when FLG bit 2 is set (a
    BufferUnderflowException when they are missing) and does not check them."""
    import lz4.frame

    plain = b"abc" * 1000
    frame = lz4.frame.compress(plain, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=True)
    assert frame[4] & 0x04 and frame[-8:-4] == b"\x00\x00\x00\x00"  # FLG bit 2, end mark, checksum
    wrong = frame[:-4] + bytes(b ^ 0xFF for b in frame[-4:])
    for good in (frame, wrong, frame + b"\x01"):
        assert decompress(Codec.LZ4, good) == plain
        buf, end = decompress_into(Codec.LZ4, memoryview(good), np.empty(16, np.uint8), 0)
        assert bytes(buf[:end]) == plain
    for cut in (1, 2, 3, 4):
        with pytest.raises(DecompressionError, match="content checksum"):
            decompress(Codec.LZ4, frame[:-cut])
        with pytest.raises(DecompressionError, match="content checksum"):
            decompress_into(Codec.LZ4, memoryview(frame[:-cut]), np.empty(16, np.uint8), 0)
    # the same through a batch, in reading and in verify
    b = RecordBatchBuilder(0)
    b.append(1_700_000_000_000, b"k", plain, offset=0)
    head, area = b.build()[:61], b.build()[61:]
    payload = lz4.frame.compress(area, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=True)
    for cut, fine in ((0, True), (2, False)):
        data = bytearray(head) + payload[: len(payload) - cut]
        struct.pack_into(">i", data, 8, len(data) - 12)
        struct.pack_into(">h", data, 21, int(Codec.LZ4))
        struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
        log = tmp_path / f"cut{cut}" / "00000000000000000000.log"
        log.parent.mkdir()
        log.write_bytes(bytes(data))
        assert verify(log).ok is fine
        with LogReader(bytes(data)) as r:
            batch = next(r.batches())
            if fine:
                assert [rec.value for rec in batch.records()] == [plain]
            else:
                with pytest.raises(DecompressionError, match="content checksum"):
                    batch.records()


@pytest.mark.rule("R-SNAPPY-03", "R-SNAPPY-04")
def test_snappy_payloads_read_as_snappy_java_reads_them() -> None:
    """Trailing 1-3 bytes, concatenated streams, unchecked first-header versions, bad second headers:
    what snappy-java made of each payload (tests/format/jdk/snappy.out, see test_jdk_compat.py).

    The table leaves out 12 bytes after ``82 53 4e 41`` that do not complete the magic followed
    by more chunks: snappy-java's read then returns -1 once and goes on with the next chunk on
    the next call, so what Kafka gets depends on its read pattern (R-SNAPPY-03 item 5). The
    chunked decoder's ``decompress_into`` (into a buffer too small to start with) reads each alike."""
    table = jdk_table("snappy.in", "snappy.out")
    accepted = 0
    for raw, want in table:
        try:
            got = "ok " + decompress(Codec.SNAPPY, raw).hex()
        except KafkaLogError:
            got = "error"
        assert got.rstrip() == want, raw.hex()
        try:
            buf, end = decompress_into(Codec.SNAPPY, memoryview(raw), np.full(4, 7, np.uint8), 2)
            assert bytes(buf[:2]) == b"\x07\x07"  # what was there before is kept
            got = "ok " + bytes(buf[2:end]).hex()
        except KafkaLogError:
            got = "error"
        assert got.rstrip() == want, raw.hex()
        accepted += want != "error"
    assert 10 < accepted < len(table)


@pytest.mark.rule("R-SNAPPY-04")
def test_verify_accepts_what_snappy_java_accepts(tmp_path: Path) -> None:
    b = RecordBatchBuilder(0)
    for i in range(3):
        b.append(1_700_000_000_000 + i, b"k%d" % i, b"v" * 100, offset=i)
    area = b.build()[61:]
    half = len(area) // 2
    framed = compress(Codec.SNAPPY, area[:half]) + compress(Codec.SNAPPY, area[half:]) + b"\x00\x01"  # two streams, 2 stray bytes
    plain = bytearray(b.build()[:61]) + framed
    struct.pack_into(">i", plain, 8, len(plain) - 12)
    struct.pack_into(">h", plain, 21, int(Codec.SNAPPY))
    struct.pack_into(">I", plain, 17, crc32c.crc32c(bytes(plain[21:])))
    (tmp_path / "00000000000000000000.log").write_bytes(bytes(plain))
    report = verify(tmp_path / "00000000000000000000.log")
    assert report.ok, report.findings
    with LogReader(bytes(plain)) as r:
        assert [rec.key for rec in next(r.batches()).records()] == [b"k0", b"k1", b"k2"]
