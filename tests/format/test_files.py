"""The small files of a partition dir, read as Kafka reads them (snapshots, checkpoints,
partition.metadata), and edge cases where Kafka's readers are lenient."""

from __future__ import annotations

import struct

import lz4.frame
import pytest

from helpers import GOLDEN
from kafkalog import Codec, CorruptIndexError, DecompressionError, LogReader, RecordBatchBuilder
from kafkalog.format.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint, read_partition_metadata
from kafkalog.format.compression import decompress
from kafkalog.format.snapshot import ProducerSnapshotEntry, read_producer_snapshot, write_producer_snapshot


def test_snapshot_first_sequence_wraps_like_kafka() -> None:
    # a batch whose sequences wrapped past Int32.MAX_VALUE: last 1, offsetDelta 3 -> first MAX-1
    e = ProducerSnapshotEntry(7, 0, 1, 100, 3, 0, -1, -1)
    assert e.first_sequence == 2**31 - 2
    assert ProducerSnapshotEntry(7, 0, 5, 100, 3, 0, -1, -1).first_sequence == 2


@pytest.mark.rule("R-SNAP-06")
def test_snapshot_roundtrip_is_byte_identical_to_kafkas() -> None:
    for path in sorted((GOLDEN / "kafka" / "logdir").rglob("*.snapshot")):
        data = path.read_bytes()
        assert write_producer_snapshot(read_producer_snapshot(path)) == data


def test_snapshot_changed_byte_is_reported() -> None:
    path = next((GOLDEN / "kafka" / "logdir" / "golden-0").glob("*.snapshot"))
    data = bytearray(path.read_bytes())
    data[20] ^= 1
    with pytest.raises(CorruptIndexError, match="crc") as e:
        read_producer_snapshot(data=bytes(data))
    assert e.value.position == 2


@pytest.mark.rule("R-CKPT-03")
@pytest.mark.parametrize("text", ["", "0\n", "0"])
def test_empty_checkpoints_have_no_entries(text: str) -> None:
    assert read_leader_epoch_checkpoint(data=text.encode()) == []
    assert read_offset_checkpoint(data=text.encode()) == {}


def test_checkpoint_count_mismatch_and_bad_version() -> None:
    with pytest.raises(CorruptIndexError, match="declares 2"):
        read_leader_epoch_checkpoint(data=b"0\n2\n0 0\n")
    with pytest.raises(CorruptIndexError, match="version"):
        read_offset_checkpoint(data=b"1\n0\n")


@pytest.mark.parametrize("topic", ["orders", "caf\u00e9-\u00e9v\u00e9nements"])
def test_a_bad_checkpoint_line_is_named_at_its_byte_position(topic: str) -> None:
    """The position of a bad entry is its line's byte offset in the file (UTF-8, as Kafka reads it),
    here after several lines of multi-byte characters, counted by the test from the file's bytes."""
    data = ("0\n5\n" + "".join(f"{topic} {p} {p * 10}\n" for p in range(4)) + f"{topic} 4 x\n").encode()
    with pytest.raises(CorruptIndexError) as e:
        read_offset_checkpoint(data=data)
    assert e.value.position == data.index(f"{topic} 4 x".encode())


def test_partition_metadata_rules() -> None:
    real = (GOLDEN / "kafka" / "logdir" / "golden-0" / "partition.metadata").read_bytes()
    assert read_partition_metadata(data=real).topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert read_partition_metadata(data=b"version: 3\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ").version == 3  # downgrade-friendly
    with pytest.raises(CorruptIndexError, match="all-zero"):
        read_partition_metadata(data=b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")
    with pytest.raises(CorruptIndexError, match="version"):
        read_partition_metadata(data=b"version: -1\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ")
    with pytest.raises(CorruptIndexError, match="topic id"):
        read_partition_metadata(data=b"version: 0\ntopic_id: nope")


def test_lz4_block_checksums_are_verified_when_declared() -> None:
    plain = b"checksummed block " * 100
    frame = lz4.frame.compress(plain, block_checksum=True, store_size=False)
    assert frame[4] & 0x10
    assert decompress(Codec.LZ4, frame) == plain
    # corrupt the block checksum (the 4 bytes before the end mark)
    bad = bytearray(frame)
    bad[-5] ^= 0xFF
    with pytest.raises(DecompressionError, match="checksum"):
        decompress(Codec.LZ4, bytes(bad))


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4, Codec.ZSTD, Codec.SNAPPY])
def test_empty_compressed_batch_reads_as_no_records(codec: Codec) -> None:
    """A cleaner-emptied batch keeps its codec bits but has no payload; Kafka does not decompress it."""
    data = RecordBatchBuilder(5, compression=codec).build(last_offset_delta=3)
    raw = bytearray(data[:61])
    struct.pack_into(">i", raw, 8, 49)  # header only
    from kafkalog.format.primitives import crc32c

    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    with LogReader(bytes(raw)) as r:
        (batch,) = list(r.batches())
    assert batch.is_valid and batch.count == 0 and batch.records() == [] and batch.last_offset == 8


def test_a_url_file_fetches_into_one_buffer_of_its_own() -> None:
    """Given ``fetch_into``, a UrlFile reading forward fetches every block into the same buffer
    (grown only for a larger request) and gives the object's bytes, through seeks and to its end.
    (A new bytes object per block would cost a page fault per page of it.)"""
    import os

    from kafkalog.format.files import UrlFile

    data = os.urandom(3 << 20)
    requests: list[tuple[int, int]] = []
    buffers: set[int] = set()

    def fetch_into(start: int, view: memoryview) -> int:
        requests.append((start, len(view)))
        buffers.add(id(view.obj))
        got = data[start : start + len(view)]
        view[: len(got)] = got
        return len(got)

    f = UrlFile("mem://x", lambda a, b: data[a:b], len(data), fetch_into)  # fetch: readall's one request
    out = bytearray()
    while chunk := f.read(100_000):
        out += chunk
    assert out == data and len(requests) >= 5 and len(buffers) <= 3
    f.seek(12345)
    assert f.read(10) == data[12345:12355]
    assert f.readall() == data[12355:]
