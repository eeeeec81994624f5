"""SPEC.md rules that no broader test exercised: one small test per rule, inputs built byte by byte.

Expected values follow from the rule's text (and Kafka's classes it cites), never from kafkalog's
output. The byte builders are those of tests/format/records/test_malformed.py.
"""

from __future__ import annotations

import gzip
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest
import zstandard

from helpers import GOLDEN, REPO
from kafkalog import Codec, KafkaLogError, LegacyBatchBuilder, LogReader, RecordBatchBuilder
from kafkalog.format.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint
from kafkalog.format.compression import compress, decompress, lz4_header_checksum
from kafkalog.format.files import FileKind, kind_of
from kafkalog.format.records.control import ControlType, control_type_of, parse_end_txn_marker
from kafkalog.format.snapshot import ProducerSnapshotEntry, read_producer_snapshot, write_producer_snapshot
from kafkalog.format.txnindex import read_txn_index
from kafkalog.log.unified import FetchIsolation, Log, LogConfig, parse_topic_partition, topic_name_problem
from kafkalog.tools.validate import verify

sys.path.insert(0, str(REPO / "tests" / "format" / "records"))
from test_malformed import GOOD, field_bytes, fix_crc, legacy_message, record, record_body, v2_batch, zz  # noqa: E402

LOGDIR = GOLDEN / "kafka" / "logdir"


def _records(data: bytes) -> list[tuple]:
    return [(r.offset, r.key, r.value, tuple(r.headers)) for b in LogReader(data).batches() for r in b.records()]


# ------------------------------------------------------------------------------ primitives
@pytest.mark.rule("R-PRIM-09")
def test_any_negative_length_is_null() -> None:
    body = record_body(key=zz(-2), value=zz(-7), headers=zz(1) + field_bytes(b"h") + zz(-9))
    assert _records(v2_batch(record(body), count=1)) == [(0, None, None, (("h", None),))]
    assert _records(legacy_message(5, 1, key=None, key_len=-2, value=None, value_len=-(2**31))) == [(5, None, None, ())]
    # and a writer writes exactly -1 (zig-zag 0x01) for null
    b = RecordBatchBuilder(0)
    b.append(0, None, None, [("h", None)])
    rec = b.build()[61:]  # length, attributes, timestampDelta, offsetDelta, then the key and value lengths
    assert rec[4:6] == b"\x01\x01" and rec.endswith(b"\x02\x02h\x01")


# ------------------------------------------------------------------------------------ names
@pytest.mark.rule("R-NAME-02", "R-NAME-04", "R-NAME-05")
def test_partition_directory_names() -> None:
    assert parse_topic_partition("my-topic-3") == ("my-topic", 3)
    assert parse_topic_partition("a.b-1") == ("a.b", 1) and parse_topic_partition("a_b-1") == ("a_b", 1)  # distinct topics
    assert parse_topic_partition("t-2147483647") == ("t", 2147483647)
    for bad in ("t-2147483648", "t-", "-3", "t3", "t-+3", "t-\u0663", "t-3x"):
        assert parse_topic_partition(bad) is None, bad
    uid = "0123456789abcdef0123456789abcdef"
    for suffix in ("delete", "future", "stray"):
        assert parse_topic_partition(f"my-topic-3.{uid}-{suffix}") == ("my-topic", 3)


@pytest.mark.rule("R-NAME-03")
def test_topic_name_rule() -> None:
    """Topic.java's rule: 1..249 characters of [a-zA-Z0-9._-], neither '.' nor '..'."""
    for good in ("t", "a" * 249, "...", ".a", "__consumer_offsets", "A-Z_0.9"):
        assert topic_name_problem(good) is None, good
    for bad in ("", ".", "..", "a" * 250, "bad topic!", "t\u00e9", "t/x", "t\u0663"):
        assert topic_name_problem(bad) is not None, bad


@pytest.mark.rule("R-NAME-03")
def test_topic_names_breaking_the_rules_are_read_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The reader warns (verify: a warning finding; Log.open: a logged warning) and still reads everything."""
    d = tmp_path / "bad topic!-0"
    shutil.copytree(LOGDIR / "legacy-0", d)
    assert parse_topic_partition(d) == ("bad topic!", 0)
    report = verify(d)
    assert report.ok
    [w] = [f for f in report.warnings if f.code == "topic-name"]
    assert w.file == str(d) and "bad topic!" in w.message
    good = tmp_path / "legacy-0"
    shutil.copytree(LOGDIR / "legacy-0", good)
    assert not [f for f in verify(good).warnings if f.code == "topic-name"]
    with caplog.at_level("WARNING", logger="kafkalog.log.unified"), Log.open(d, writable=True) as lg:
        assert lg.topic_partition == ("bad topic!", 0)
        assert lg.read(0, 10**6).records == (LOGDIR / "legacy-0" / "00000000000000000000.log").read_bytes()
    assert any("bad topic!" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)
    caplog.clear()
    with caplog.at_level("WARNING", logger="kafkalog.log.unified"), Log.open(good, writable=True):
        pass
    assert not caplog.records


@pytest.mark.rule("R-NAME-09", "R-NAME-10", "R-NAME-11")
def test_file_kinds_by_name() -> None:
    assert kind_of("00000000000000000012.log") is FileKind.LOG
    assert kind_of("09223372036854775807.timeindex") is FileKind.TIME_INDEX
    for skipped in ("00000000000000000012.log.deleted", "00000000000000000012.log.swap", "00000000000000000012.index.cleaned",
                    "00000000000000000012.snapshot.deleted", "leader-epoch-checkpoint.tmp", "partition.metadata.tmp", "notes.txt"):
        assert kind_of(skipped) is None, skipped


@pytest.mark.rule("R-NAME-10", "R-NAME-11", "R-NAME-13")
def test_dump_skips_suffixed_and_tmp_files(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    shutil.copytree(LOGDIR / "legacy-0", d)
    (d / "00000000000000000000.log.deleted").write_bytes(b"\xff" * 40)
    (d / "00000000000000000099.log.swap").write_bytes(b"\xff" * 40)  # an incomplete swap: a .cleaned file at its base (R-RCV-03)
    (d / "00000000000000000099.index.cleaned").write_bytes(b"\xff" * 40)
    (d / "leader-epoch-checkpoint.tmp").write_bytes(b"garbage")
    (d / "00000000000000000000.index").unlink()  # a .log without its .index
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", str(d)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    files = {json.loads(line)["file"] for line in proc.stdout.splitlines()}
    assert "00000000000000000000.log" in {f.rsplit("/", 1)[-1] for f in files}
    assert not any(f.endswith((".deleted", ".swap", ".cleaned", ".tmp")) for f in files), files


# ------------------------------------------------------------------------------ magic 0 and 1
@pytest.mark.rule("R-V01-02")
def test_bytes_left_inside_a_legacy_message_are_reported() -> None:
    m = bytearray(legacy_message(5, 1))
    m += b"xx"
    struct.pack_into(">i", m, 8, len(m) - 12)
    with pytest.raises(KafkaLogError):
        _records(fix_crc(m))


@pytest.mark.rule("R-V01-09")
def test_v1_wrapper_with_offset_zero_keeps_relative_inner_offsets() -> None:
    inner = legacy_message(0, 1, key=b"a") + legacy_message(1, 1, key=b"b")
    assert [(o, k) for o, k, _v, _h in _records(legacy_message(0, 1, attributes=1, key=None, value=gzip.compress(inner)))] == [(0, b"a"), (1, b"b")]
    assert [o for o, *_ in _records(legacy_message(7, 1, attributes=1, key=None, value=gzip.compress(inner)))] == [6, 7]


@pytest.mark.rule("R-V01-13")
def test_inner_message_of_another_magic_is_rejected() -> None:
    with pytest.raises(KafkaLogError, match="magic"):
        _records(legacy_message(7, 1, attributes=1, key=None, value=gzip.compress(legacy_message(0, 0))))


# ------------------------------------------------------------------------------------ magic 2
@pytest.mark.rule("R-V2-04")
def test_attribute_bits_7_to_15_are_ignored() -> None:
    plain = v2_batch(GOOD, count=1)
    high = v2_batch(GOOD, count=1, attributes=0x7F80)
    (a,), (b,) = LogReader(plain).batches(), LogReader(high).batches()
    assert b.is_valid and (b.compression, b.timestamp_type, b.is_transactional, b.is_control, b.delete_horizon_ms) == (
        a.compression, a.timestamp_type, a.is_transactional, a.is_control, a.delete_horizon_ms)
    assert _records(high) == _records(plain)
    assert struct.unpack_from(">h", RecordBatchBuilder(0, compression=Codec.GZIP, is_transactional=True).build(last_offset_delta=0), 21)[0] == 0x11


@pytest.mark.rule("R-REC-04")
def test_record_attributes_are_ignored_and_written_as_zero() -> None:
    assert _records(v2_batch(record(b"\x55" + record_body()[1:]), count=1)) == _records(v2_batch(GOOD, count=1))
    b = RecordBatchBuilder(0)
    b.append(0, b"k", b"v")
    data = b.build()
    assert data[61 + 1] == 0  # the byte after the record's length varint


@pytest.mark.rule("R-CTRL-02", "R-CTRL-04")
def test_control_key_and_marker_value_lengths_and_versions() -> None:
    for key in (None, b"", b"\x00", b"\x00\x00\x00", b"\xff\xff\x00\x01"):
        with pytest.raises(KafkaLogError):
            control_type_of(key)
    assert control_type_of(b"\x00\x05\x00\x01extra") == (ControlType.COMMIT, 1)  # a higher version is read as 0
    for value in (None, b"\x00\x00\x00\x00\x00", b"\xff\xff\x00\x00\x00\x01"):
        with pytest.raises(KafkaLogError):
            parse_end_txn_marker(ControlType.ABORT, value)
    assert parse_end_txn_marker(ControlType.COMMIT, b"\x00\x03\x00\x00\x00\x07zz").coordinator_epoch == 7


# ------------------------------------------------------------------------------------ writers
@pytest.mark.rule("R-WR-02")
def test_no_batch_when_nothing_was_appended() -> None:
    assert RecordBatchBuilder(0).build() == b""
    assert LegacyBatchBuilder(1, 0).build() == b""
    emptied = RecordBatchBuilder(0, producer_id=5, producer_epoch=0, base_sequence=0).build(last_offset_delta=3)
    assert len(emptied) == 61 and struct.unpack_from(">i", emptied, 57)[0] == 0  # the cleaner's empty batch


@pytest.mark.rule("R-WR-03")
def test_legacy_builders_refuse_magic_2_only_features() -> None:
    with pytest.raises(ValueError):
        LegacyBatchBuilder(1, 0, compression=Codec.ZSTD)
    for codec in (Codec.NONE, Codec.GZIP):
        b = LegacyBatchBuilder(1, 0, compression=codec)
        b.append(0, b"k", b"v")
        assert b.build()[17] == int(codec)  # attributes: the codec bits only (no transactional/control bits)
    with pytest.raises(ValueError, match="headers"):
        LegacyBatchBuilder(1, 0).append(0, b"k", b"v", [("h", b"x")])


@pytest.mark.rule("R-WR-05")
def test_magic_0_lz4_frames_carry_kafkas_legacy_header_checksum() -> None:
    frame = compress(Codec.LZ4, b"abc" * 100, magic=0)
    assert frame[6] == lz4_header_checksum(frame[:6], 0) != lz4_header_checksum(frame[:6], 1)
    kafka = (GOLDEN / "kafka" / "records" / "v0-lz4" / "00000000000000000000.log").read_bytes()
    b = LegacyBatchBuilder(0, 0, compression=Codec.LZ4)
    b.append(-1, b"k", b"v")
    ours = b.build()
    # the frame header (magic, FLG, BD, HC) starts after the 12-byte entry header, crc, magic, attributes and both lengths
    assert ours[34:41] == kafka[34:41]


# ------------------------------------------------------------------------------ index files
@pytest.mark.rule("R-TXN-03")
@pytest.mark.parametrize("version", [b"\x01\x00", b"\x7f\x00", b"\x00\x01"])
def test_txnindex_entry_version_other_than_zero_is_rejected(version: bytes) -> None:
    entry = struct.pack(">hqqqq", 0, 5, 1, 2, 3)
    assert read_txn_index(data=entry)[0].producer_id == 5
    with pytest.raises(KafkaLogError):
        read_txn_index(data=version + entry[2:])


@pytest.mark.rule("R-SNAP-02")
def test_snapshot_bytes_after_the_entries_are_rejected_even_under_a_matching_crc() -> None:
    good = write_producer_snapshot([ProducerSnapshotEntry(7, 0, 1, 100, 3, 0, -1, -1)])
    assert len(read_producer_snapshot(data=good)) == 1
    longer = bytearray(good + b"\x00\x01")
    struct.pack_into(">I", longer, 2, crc32c.crc32c(bytes(longer[6:])))
    with pytest.raises(KafkaLogError):
        read_producer_snapshot(data=bytes(longer))


# ------------------------------------------------------------------------------ checkpoints
@pytest.mark.rule("R-CKPT-04", "R-CKPT-06")
def test_checkpoint_line_ends_and_number_ranges() -> None:
    assert [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(data=b"0\r\n2\r\n0 0\r\n1 88\r\n")] == [(0, 0), (1, 88)]
    assert read_offset_checkpoint(data=b"0\r\n1\r\na-b 3 9\r\n") == {("a-b", 3): 9}
    assert read_offset_checkpoint(data=b"0\n1\nt 2147483647 9223372036854775807\n") == {("t", 2**31 - 1): 2**63 - 1}
    for bad in (b"0\n1\nt 2147483648 5\n", b"0\n1\nt 1 9223372036854775808\n", b"0\n1\nt x 5\n"):
        with pytest.raises(KafkaLogError):
            read_offset_checkpoint(data=bad)


@pytest.mark.rule("R-CKPT-05")
def test_leader_epoch_checkpoint_disagreeing_with_the_batches_is_not_an_error(tmp_path: Path) -> None:
    d = tmp_path / "golden-0"
    shutil.copytree(LOGDIR / "golden-0", d)
    epochs = {b.partition_leader_epoch for f in sorted(d.glob("*.log")) for b in LogReader(f).batches()}
    assert {1, 4} <= epochs  # the batches carry epochs the checkpoint below leaves out
    (d / "leader-epoch-checkpoint").write_bytes(b"0\n1\n0 0\n")
    assert verify(d).ok


# ------------------------------------------------------------------------------ isolation
@pytest.mark.rule("R-ISO-06")
def test_read_committed_over_a_compacted_partition(tmp_path: Path) -> None:
    """compacted-0: the cleaner removed aborted data (its .txnindex entries stay) and kept an empty batch."""
    d = tmp_path / "compacted-0"
    shutil.copytree(LOGDIR / "compacted-0", d)
    assert read_txn_index(d / "00000000000000000000.txnindex")
    with Log.open(d, LogConfig(index_interval_bytes=256, segment_index_bytes=4096), sync=False, writable=True) as log:
        offsets = []
        pos = log.log_start_offset
        while pos < log.last_stable_offset:
            f = log.read(pos, 1 << 20, isolation=FetchIsolation.TXN_COMMITTED)
            got = list(f.batches())
            if not got:
                break
            offsets += [b.last_offset for b in got]
            pos = got[-1].last_offset + 1
        assert offsets == sorted(offsets) and pos == log.last_stable_offset
    assert verify(d).ok


# ------------------------------------------------------------------------------ codecs
@pytest.mark.rule("R-ZSTD-02")
def test_zstd_frames_with_content_size_and_checksum_and_concatenated() -> None:
    plain = b"hello zstd " * 100
    framed = zstandard.ZstdCompressor(write_checksum=True, write_content_size=True).compress(plain)
    assert zstandard.get_frame_parameters(framed).content_size == len(plain) and zstandard.get_frame_parameters(framed).has_checksum
    assert decompress(Codec.ZSTD, framed) == plain
    assert decompress(Codec.ZSTD, framed + framed) == plain + plain
