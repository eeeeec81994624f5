"""Where Kafka's behaviour is the JDK's (or snappy-java's): expected values computed by them.

The tables in ``tests/format/jdk/`` were written by ``JdkOracle.java`` run on OpenJDK 17.0.15 (and
snappy-java 1.1.10.8, whose SnappyInputStream reads as 1.1.10.5's, the version Kafka pins: the two
differ only in an OutOfMemoryError handler); ``tests/format/jdk/README.md`` says how each was made
(the compressors' tables are tested in test_compressors.py). Each ``.in`` line is the hex of one
input, the line of the same number in the ``.out`` file what Java made of it; ``error ...`` lines
are refusals.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import crc32c
import pytest

from helpers import GOLDEN
from kafkalog import Codec, KafkaLogError, LogReader, RecordBatch, RecordBatchBuilder
from kafkalog.fast import objects
from kafkalog.fast.arrow import to_arrow
from kafkalog.format.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint, read_partition_metadata
from kafkalog.format.compression import compress
from kafkalog.format.primitives import java_utf8
from kafkalog.tools.validate import verify

JDK = Path(__file__).parent / "jdk"


def jdk_table(inputs: str, outputs: str) -> list[tuple[bytes, str]]:
    """(input bytes, Java's answer) pairs; an ``error ...`` answer becomes ``error``."""
    ins = (JDK / inputs).read_text(encoding="ascii").split("\n")[:-1]
    outs = (JDK / outputs).read_text(encoding="ascii").split("\n")[:-1]
    assert len(ins) == len(outs) > 10
    return [(bytes.fromhex(i), "error" if o.startswith("error") else o.rstrip()) for i, o in zip(ins, outs, strict=True)]


def _java_string(units: str) -> str:
    """A Java string from the table's UTF-16 code units (Java's decoder never leaves a lone surrogate)."""
    return bytes.fromhex(units).decode("utf-16-be")


UTF8 = jdk_table("utf8.in", "utf8.out")


# ----------------------------------------------------------------------------- header keys
@pytest.mark.rule("R-REC-09")
def test_header_key_decoding_is_javas() -> None:
    differs_from_python = 0
    for raw, units in UTF8:
        assert java_utf8(raw) == _java_string(units), raw.hex()
        differs_from_python += raw.decode("utf-8", "replace") != _java_string(units)
    # the table tells Java's decoder from the Unicode rule (Python's "replace"): ed a0..bf cases
    assert differs_from_python >= 10
    assert java_utf8(b"\xed\xa0\x80") == "\ufffd" and java_utf8(b"\xed\xa0A") == "\ufffdA"
    assert java_utf8(b"\xef\xbb\xbfk") == "\ufeffk"  # a byte order mark stays a character


def _zz(value: int) -> bytes:
    """Kafka's zig-zag varint."""
    u = (value << 1) ^ (value >> 63)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    return bytes(out + bytes([u]))


def _batch_with_keys(keys: list[bytes], codec: Codec) -> bytes:
    """A v2 batch of one record per key, each with one header of that key (any bytes), compressed
    with ``codec``: the header comes from the builder (same count, offsets, timestamps), the
    records are encoded here so that keys need not be UTF-8."""
    b = RecordBatchBuilder(0)
    area = bytearray()
    for i, k in enumerate(keys):
        b.append(1_700_000_000_000 + i, b"k", b"v", [("h", b"x")], offset=i)
        body = b"\x00" + _zz(i) + _zz(i) + _zz(1) + b"k" + _zz(1) + b"v" + _zz(1) + _zz(len(k)) + k + _zz(1) + b"x"
        area += _zz(len(body)) + body
    out = bytearray(b.build()[:61]) + (bytes(area) if codec is Codec.NONE else compress(codec, bytes(area)))
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">h", out, 21, int(codec))
    struct.pack_into(">I", out, 17, crc32c.crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.mark.rule("R-REC-09")
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4, Codec.ZSTD, Codec.SNAPPY])
def test_every_decoder_gives_javas_header_keys(codec: Codec) -> None:
    """The plain decoder, the compiled object and Arrow paths (chunked and per batch) and the
    canonical dump all give the keys Java gives."""
    rows = [(raw, units) for raw, units in UTF8 if raw][:80]
    keys = [raw for raw, _ in rows] + [b"plain", b"\xc3\xbc"]
    want = [_java_string(units) for _, units in rows] + ["plain", "\u00fc"]
    data = _batch_with_keys(keys, codec)
    batch = RecordBatch(data)
    assert [r.headers[0][0] for r in batch.records_plain()] == want
    assert [r.headers[0][0] for r in objects.records(batch)] == want
    with LogReader(data) as r:
        assert [r.headers[0][0] for b in r.batches() for r in b.records()] == want
    with LogReader(data) as r:
        chunked = [h[0]["key"] for t in to_arrow(r, include_headers=True) for h in t.column("headers").to_pylist()]
    assert chunked == want
    per_batch = [h[0]["key"] for t in to_arrow([RecordBatch(data)], include_headers=True) for h in t.column("headers").to_pylist()]
    assert per_batch == want


# --------------------------------------------------------------------------- checkpoints
def _units(s: str) -> str:
    return s.encode("utf-16-be").hex()


def _epochs(raw: bytes) -> str:
    try:
        return " ".join(["ok", *(f"{e.epoch},{e.start_offset}" for e in read_leader_epoch_checkpoint(data=raw))])
    except KafkaLogError:
        return "error"


def _offsets(raw: bytes) -> str:
    try:
        return " ".join(["ok", *(f"{_units(t)},{p},{o}" for (t, p), o in read_offset_checkpoint(data=raw).items())])
    except KafkaLogError:
        return "error"


def _partition_metadata(raw: bytes) -> str:
    try:
        pm = read_partition_metadata(data=raw)
    except KafkaLogError:
        return "error"
    return f"ok {pm.version} {pm.topic_id}"


@pytest.mark.rule("R-CKPT-10", "R-CKPT-02", "R-CKPT-04")
@pytest.mark.parametrize("reader,outputs", [(_epochs, "epoch.out"), (_offsets, "offset.out")], ids=["epoch", "offset"])
def test_checkpoints_parse_as_kafka_does(reader, outputs: str) -> None:  # type: ignore[no-untyped-def]
    """Java's line ends, ``\\s+`` splitting (a leading blank gives an empty first field), Integer.parseInt
    and Long.parseLong (signs, BMP Unicode digits, no blanks or underscores), Kafka's order of checks."""
    for raw, want in jdk_table("checkpoint.in", outputs):
        assert reader(raw) == want, raw


@pytest.mark.rule("R-CKPT-10", "R-CKPT-07")
def test_partition_metadata_parses_as_kafka_does() -> None:
    """``:\\s+`` splitting, Integer.parseInt, Uuid.fromString's strict URL-safe base64, the zero id refused."""
    for raw, want in jdk_table("pm.in", "pm.out"):
        assert _partition_metadata(raw) == want, raw


@pytest.mark.rule("R-CKPT-10")
def test_verify_judges_partition_metadata_as_kafka(tmp_path: Path) -> None:
    d = tmp_path / "cities-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    (d / "partition.metadata").write_bytes(b"a b: +0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ==")
    assert verify(d).ok
    (d / "partition.metadata").write_bytes(b"version 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    assert [f.code for f in verify(d).findings if f.file.endswith("partition.metadata")] == ["checkpoint"]
