"""SPEC.md 1.2's statements on how Kafka's gzip and zstd bytes are made (R-GZIP-03, R-GZIP-04, R-ZSTD-05),
checked on every Kafka-written compressed batch of the goldens.

The expected bytes are the batches Kafka's own compressors wrote (golden/kafka by 4.0.0,
golden/kafka-<release>/ by each release's jars, the writer corpus by 4.0.0's log layer); the compressors
under test are the standard libraries (Python's zlib, python-zstandard), driven as the rules say.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.errors import KafkaLogError
from kafkalog.format.records.stream import read_batches

#: golden trees of Kafka-written files: 4.0.0's, each later release's, and the writer corpus
TREES = ["kafka", "kafka-4.0.2", "kafka-4.1.2", "kafka-4.2.2", "kafka-4.3.1", "kafka-4.4.0", "corpus/writer"]
GZIP, ZSTD = 1, 4


def _payloads(tree: str, codec: int) -> Iterator[bytes]:
    """The compressed payload of every batch (magic 2) or wrapper (magic 0/1) of ``codec`` in a golden tree."""
    for path in sorted((GOLDEN / tree).rglob("*.log")):
        if "/bad/" in str(path):
            continue
        try:
            batches = list(read_batches(str(path)))
        except KafkaLogError:
            continue  # a writer case's deliberately damaged input (recovery-bad-crc)
        for b in batches:
            if b.attributes & 7 == codec:
                yield bytes(b.data[61:]) if b.magic == 2 else bytes(b.msg.value)  # type: ignore[union-attr]


def _gunzip(payload: bytes) -> bytes | None:
    try:
        return zlib.decompress(payload, 31)
    except zlib.error:
        return None  # a batch whose CRC test vectors damage the payload


@pytest.mark.rule("R-GZIP-03", "R-GZIP-04")
@pytest.mark.parametrize("tree", TREES)
def test_zlib_level_6_gives_kafkas_gzip_bytes(tree: str) -> None:
    """Header `1f 8b 08 00 00000000 00 ff`, raw deflate at level 6 (window bits -15, memory level 8,
    no intermediate flush), CRC-32 and length little-endian: byte for byte, for every batch."""
    checked = 0
    for payload in _payloads(tree, GZIP):
        raw = _gunzip(payload)
        if raw is None:
            continue
        assert payload[:10] == bytes.fromhex("1f8b0800000000000000ff")[:9] + b"\xff"
        c = zlib.compressobj(6, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
        assert payload[10:-8] == c.compress(raw) + c.flush()
        assert payload[-8:] == zlib.crc32(raw).to_bytes(4, "little") + (len(raw) & 0xFFFFFFFF).to_bytes(4, "little")
        checked += 1
    assert checked >= 49, checked  # 49 in golden/kafka, 234 in each release's tree


@pytest.mark.rule("R-GZIP-04")
def test_another_level_gives_other_bytes() -> None:
    """The check above can fail: at level 1, 22 of the 234 payloads compress to other bytes (the others are too
    small for the levels to differ)."""
    raws = [r for p in _payloads("kafka-4.4.0", GZIP) if (r := _gunzip(p))]

    def deflate(raw: bytes, level: int) -> bytes:
        c = zlib.compressobj(level, zlib.DEFLATED, -15)
        return c.compress(raw) + c.flush()

    differ = sum(deflate(raw, 6) != deflate(raw, 1) for raw in raws)
    assert differ >= 20, (differ, len(raws))


def _kafka_zstd(raw: bytes, level: int = 3) -> bytes:
    import zstandard

    c = zstandard.ZstdCompressor(level=level, write_content_size=False).compressobj()
    return c.compress(raw) + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + c.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)


@pytest.mark.rule("R-ZSTD-01", "R-ZSTD-05")
@pytest.mark.parametrize("tree", TREES)
def test_continue_flush_end_gives_kafkas_zstd_bytes(tree: str) -> None:
    """continue, flush, end: every batch; without the flush, or in one shot: none."""
    zstandard = pytest.importorskip("zstandard")
    checked = 0
    for payload in _payloads(tree, ZSTD):
        try:
            raw = zstandard.ZstdDecompressor().decompressobj().decompress(payload)
        except zstandard.ZstdError:
            continue
        assert payload == _kafka_zstd(raw)
        assert payload[4] & 0xC4 == 0  # frame header descriptor: no content size flag, no checksum
        assert payload.endswith(b"\x01\x00\x00")  # the empty last raw block that `end` adds after `flush`
        c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
        assert payload != c.compress(raw) + c.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH)
        one_shot = zstandard.ZstdCompressor(level=3).compress(raw)
        assert payload != one_shot and zstandard.get_frame_parameters(one_shot).content_size == len(raw)
        checked += 1
    assert checked >= 46, checked  # 46 in golden/kafka, 207 in each release's tree


@pytest.mark.rule("R-ZSTD-05")
def test_the_division_of_the_input_does_not_change_the_bytes(tmp_path: Path) -> None:
    """Kafka writes records one by one through a 16 KiB buffer: several `continue` calls give the bytes of one."""
    zstandard = pytest.importorskip("zstandard")
    raw = b"".join(b"key-%d:value-%d;" % (i, i * 7919 % 1000) for i in range(20000))
    c = zstandard.ZstdCompressor(level=3, write_content_size=False).compressobj()
    pieces = b"".join(c.compress(raw[i : i + 777]) for i in range(0, len(raw), 777))
    assert pieces + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK) + c.flush(
        zstandard.COMPRESSOBJ_FLUSH_FINISH
    ) == _kafka_zstd(raw)
