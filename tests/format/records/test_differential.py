"""kafkalog against independent implementations of Kafka's record formats, and against Kafka's files.

Peers: kafka-python (``kafka.record``), aiokafka's Cython readers (``aiokafka.record._crecords``) and
aiokafka's pure-Python fallback classes. Expected values always come from a peer, from the inputs
handed to a peer's builder, or from Kafka's own dump of its files, never from kafkalog's output.

Known peer gaps (each one is a skip or xfail with its reason, never a silent omission):

* kafka-python decodes snappy only through python-snappy, which is not installed here.
* aiokafka refuses magic-0 lz4 (KAFKA-3160: Kafka's old, wrong frame header checksum).
* aiokafka's Cython ``MemoryRecords`` takes every batch's magic from the first batch, so it
  misreads a buffer that mixes magics (Kafka's ``mixed-magic`` file).
* Magic 0 carries no timestamp: Kafka reports -1 (``RecordBatch.NO_TIMESTAMP``), the Python peers
  ``None``; the peers' ``None`` is mapped to -1 before comparing.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiokafka.codec
import kafka.codec
import pytest
from aiokafka.record.default_records import _DefaultRecordBatchBuilderPy, _DefaultRecordBatchPy
from aiokafka.record.legacy_records import _LegacyRecordBatchBuilderPy, _LegacyRecordBatchPy
from kafka.record import MemoryRecords as KpMemoryRecords
from kafka.record.memory_records import MemoryRecordsBuilder as KpMemoryRecordsBuilder

from helpers import lossless_dump
from kafkalog import (
    Codec,
    ControlType,
    LegacyBatchBuilder,
    LogReader,
    RecordBatchBuilder,
    TimestampType,
)
from kafkalog.tools.canonical import build_log

try:  # aiokafka's compiled readers/builders (the ones aiokafka uses by default)
    from aiokafka.record import _crecords as aio_c
except ImportError:  # pragma: no cover - depends on the installed wheel
    aio_c = None

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
GOLDEN_KAFKA = SHARED / "golden-kafka"

#: A record as every reader presents it: (offset, timestamp, key, value, headers).
Rec = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
MAGIC_CODECS = [(m, c) for m in (0, 1, 2) for c in CODECS if not (c is Codec.ZSTD and m < 2)]
PEERS = ["kafka-python", "aiokafka-c", "aiokafka-py"]

T0 = 1_700_000_000_000
#: Compressible payload, so that the peers' builders (which fall back to no compression when it
#: does not pay off) really compress.
BLOB = b"kafkalog differential " * 8
ALL_BYTES = bytes(range(256))


# ------------------------------------------------------------------------------------ helpers
def _norm_ts(ts: int | None) -> int:
    return -1 if ts is None else ts


def _norm_headers(headers: Any) -> list[tuple[str, bytes | None]]:
    return [(k, None if v is None else bytes(v)) for k, v in headers]


def _peer_rec(r: Any) -> Rec:
    return (r.offset, _norm_ts(r.timestamp), r.key, r.value, _norm_headers(r.headers))


def _split_entries(data: bytes) -> list[bytes]:
    """Log entries by their 12-byte offset/size prefix (a peer-independent walk, no validation)."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        out.append(data[pos : pos + 12 + size])
        pos += 12 + size
    assert pos == len(data), "test input must consist of whole entries"
    return out


def peer_unsupported(peer: str, magic: int, codec: Codec) -> str | None:
    """Why ``peer`` cannot read (or write) ``codec`` at ``magic``, or None when it can."""
    if peer == "kafka-python":
        has = {
            Codec.GZIP: kafka.codec.has_gzip,
            Codec.SNAPPY: kafka.codec.has_snappy,
            Codec.LZ4: kafka.codec.has_lz4,
            Codec.ZSTD: kafka.codec.has_zstd,
        }
        if codec is not Codec.NONE and not has[codec]():
            lib = "python-snappy" if codec is Codec.SNAPPY else f"the {codec.label} library"
            return f"kafka-python cannot use {codec.label}: {lib} is not installed"
        return None
    if peer == "aiokafka-c" and aio_c is None:
        return "aiokafka's compiled extension (aiokafka.record._crecords) is not importable"
    if magic == 0 and codec is Codec.LZ4:
        return "aiokafka refuses magic-0 lz4 (KAFKA-3160, Kafka's old wrong lz4 header checksum)"
    has = {
        Codec.GZIP: aiokafka.codec.has_gzip,
        Codec.SNAPPY: aiokafka.codec.has_snappy,
        Codec.LZ4: aiokafka.codec.has_lz4,
        Codec.ZSTD: aiokafka.codec.has_zstd,
    }
    if codec is not Codec.NONE and not has[codec]():
        return f"aiokafka cannot use {codec.label}: cramjam is not installed"
    return None


def _need_peer(peer: str, magic: int, codec: Codec) -> None:
    reason = peer_unsupported(peer, magic, codec)
    if reason:
        pytest.skip(reason)


# ------------------------------------------------------------------------------- peer readers
class PeerBatch:
    """What a peer says about one batch: its header fields (v2) and its records."""

    def __init__(self, magic: int, fields: dict[str, Any], records: list[Rec]) -> None:
        self.magic = magic
        self.fields = fields
        self.records = records


def _v2_fields(b: Any) -> dict[str, Any]:
    return {
        "base_offset": b.base_offset,
        "last_offset_delta": b.last_offset_delta,
        "base_timestamp": b.first_timestamp,
        "max_timestamp": b.max_timestamp,
        "producer_id": b.producer_id,
        "producer_epoch": b.producer_epoch,
        "base_sequence": b.base_sequence,
        "attributes": b.attributes,
        "is_transactional": b.is_transactional,
        "is_control": b.is_control_batch,
        "compression": b.compression_type,
        "next_offset": b.next_offset,
    }


def read_kafka_python(data: bytes) -> list[PeerBatch]:
    out = []
    mr = KpMemoryRecords(data)
    while mr.has_next():
        b = mr.next_batch()
        assert b.validate_crc(), f"kafka-python: CRC check failed for batch {len(out)}"
        fields = _v2_fields(b) if b.magic == 2 else {"compression": b.compression_type}
        recs = []
        for r in b:
            if b.magic < 2:
                assert r.validate_crc(), "kafka-python: inner message CRC check failed"
            recs.append(_peer_rec(r))
        out.append(PeerBatch(b.magic, fields, recs))
    return out


def read_aiokafka_c(data: bytes) -> list[PeerBatch]:
    out = []
    mr = aio_c.MemoryRecords(data)
    while mr.has_next():
        b = mr.next_batch()
        assert b.validate_crc(), f"aiokafka (Cython): CRC check failed for batch {len(out)}"
        if isinstance(b, aio_c.DefaultRecordBatch):
            fields, magic = _v2_fields(b), 2
        else:
            fields, magic = {"next_offset": b.next_offset}, -1
        out.append(PeerBatch(magic, fields, [_peer_rec(r) for r in b]))
    return out


def read_aiokafka_py(data: bytes) -> list[PeerBatch]:
    """aiokafka's pure-Python batch classes (its MemoryRecords would hand out the Cython ones)."""
    out = []
    for entry in _split_entries(data):
        magic = entry[16]
        if magic >= 2:
            b = _DefaultRecordBatchPy(entry)
            fields = _v2_fields(b)
        else:
            b = _LegacyRecordBatchPy(entry, magic)
            fields = {"next_offset": b.next_offset}
        assert b.validate_crc(), f"aiokafka (Python): CRC check failed for batch {len(out)}"
        out.append(PeerBatch(magic, fields, [_peer_rec(r) for r in b]))
    return out


READERS: dict[str, Callable[[bytes], list[PeerBatch]]] = {
    "kafka-python": read_kafka_python,
    "aiokafka-c": read_aiokafka_c,
    "aiokafka-py": read_aiokafka_py,
}


def kafkalog_records(data: bytes) -> list[Rec]:
    reader = LogReader(data)
    out = []
    for b in reader.batches():
        assert b.is_valid, f"kafkalog: batch at {b.position} fails its CRC check"
        out.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in b.records(verify_crc=True))
    assert reader.tail is None
    return out


def kafkalog_v2_fields(data: bytes) -> list[dict[str, Any]]:
    out = []
    for b in LogReader(data).batches():
        assert b.magic == 2
        out.append(
            {
                "base_offset": b.base_offset,
                "last_offset_delta": b.last_offset_delta,
                "base_timestamp": b.base_timestamp,
                "max_timestamp": b.max_timestamp,
                "producer_id": b.producer_id,
                "producer_epoch": b.producer_epoch,
                "base_sequence": b.base_sequence,
                "attributes": b.attributes,
                "is_transactional": b.is_transactional,
                "is_control": b.is_control,
                "compression": int(b.compression),
                "next_offset": b.next_offset,
            }
        )
    return out


# ------------------------------------------------------------------------- kafkalog -> peers
def _records_in(magic: int, n: int = 7, base_ts: int = T0) -> list[tuple[int, bytes | None, bytes | None, list]]:
    """Edge-case records: null key, tombstone, empty key and value, all 256 byte values, headers
    with a non-ASCII key, an empty and a null value, a max timestamp that is not the last one."""
    recs: list[tuple[int, bytes | None, bytes | None, list]] = [
        (base_ts, b"k0", BLOB + b"0", [("h\u00e9\u4e2d", b"v"), ("empty", b""), ("null", None)]),
        (base_ts + 5, None, BLOB + b"null-key", []),
        (base_ts + 1, b"k2", None, [("only", None)]),
        (base_ts + 2, b"", b"", []),
        (base_ts + 9, b"bin", ALL_BYTES + BLOB, [("b", ALL_BYTES)]),
        (base_ts + 3, b"k5", BLOB + b"out-of-order", []),
        (base_ts + 4, b"k6" * 50, BLOB * 3, [("k", b"x")] * 3),
    ][:n]
    if magic < 2:
        recs = [(ts, k, v, []) for ts, k, v, _h in recs]
    return recs


def _scenario_v2(scenario: str, codec: Codec) -> bytes:
    recs = _records_in(2)
    if scenario == "plain":
        parts = []
        for base in (10, 17):
            b = RecordBatchBuilder(base, compression=codec, partition_leader_epoch=3)
            for ts, k, v, h in recs:
                b.append(ts, k, v, h)
            parts.append(b.build())
        return b"".join(parts)
    if scenario in ("transactional", "idempotent"):
        b = RecordBatchBuilder(
            100, compression=codec, producer_id=4242, producer_epoch=7, base_sequence=2**31 - 3,
            is_transactional=scenario == "transactional",
        )
        for ts, k, v, h in recs:
            b.append(ts, k, v, h)
        return b.build()
    if scenario == "log_append_time":
        b = RecordBatchBuilder(5, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 999)
        for ts, k, v, h in recs:
            b.append(ts, k, v, h)
        return b.build()
    if scenario == "control":
        parts = []
        for i, ctype in enumerate((ControlType.COMMIT, ControlType.ABORT)):
            b = RecordBatchBuilder(
                50 + i, compression=codec, producer_id=9, producer_epoch=1, is_transactional=True, is_control=True
            )
            b.append_end_txn_marker(ctype, 11 + i, T0 + i)
            parts.append(b.build())
        return b"".join(parts)
    if scenario == "compacted":
        b = RecordBatchBuilder(1000, compression=codec)
        for off, (ts, k, v, h) in zip((1000, 1003, 1004, 1010, 1011, 1020, 1021), recs, strict=True):
            b.append(ts, k, v, h, offset=off)
        return b.build(last_offset_delta=29, max_timestamp=T0 + 50)
    if scenario == "delete_horizon":
        b = RecordBatchBuilder(7, compression=codec, delete_horizon_ms=T0 + 86_400_000)
        for ts, k, v, h in recs:
            b.append(ts, k, v, h)
        return b.build()
    raise AssertionError(scenario)


def _scenario_legacy(magic: int, scenario: str, codec: Codec) -> bytes:
    recs = _records_in(magic)
    if scenario == "plain":
        b = LegacyBatchBuilder(magic, 10, compression=codec)
    elif scenario == "log_append_time":
        b = LegacyBatchBuilder(magic, 10, compression=codec, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 999)
    elif scenario == "log_append_time_stamped_wrapper":
        # what a broker's in-place validation does to a v1 wrapper: only the wrapper gets the
        # LogAppendTime bit and timestamp; the inner messages keep their create times
        b = LegacyBatchBuilder(magic, 10, compression=codec)
    else:
        raise AssertionError(scenario)
    for ts, k, v, _h in recs:
        b.append(ts, k, v)
    if scenario == "log_append_time_stamped_wrapper":
        data = b.build(wrapper_timestamp=T0 + 999, wrapper_attributes=int(codec) | 0x08)
    else:
        data = b.build()
    # a second message set after the first, as in a log
    b2 = LegacyBatchBuilder(magic, 30, compression=codec)
    for ts, k, v, _h in recs[:3]:
        b2.append(ts + 100, k, v)
    return data + b2.build()


V2_SCENARIOS = ["plain", "transactional", "idempotent", "log_append_time", "control", "compacted", "delete_horizon"]
LEGACY_SCENARIOS = {0: ["plain"], 1: ["plain", "log_append_time", "log_append_time_stamped_wrapper"]}


def _scenarios(magic: int, codec: Codec) -> list[str]:
    if magic == 2:
        return V2_SCENARIOS
    # a stamped wrapper exists only for compressed message sets
    return [s for s in LEGACY_SCENARIOS[magic] if codec is not Codec.NONE or s != "log_append_time_stamped_wrapper"]


KAFKALOG_TO_PEER = [
    pytest.param(peer, magic, codec, scenario, id=f"{peer}-v{magic}-{codec.label}-{scenario}")
    for peer in PEERS
    for magic, codec in MAGIC_CODECS
    for scenario in _scenarios(magic, codec)
]


@pytest.mark.rule("R-WR-04")
@pytest.mark.parametrize("peer,magic,codec,scenario", KAFKALOG_TO_PEER)
def test_peer_reads_kafkalog_batches(peer: str, magic: int, codec: Codec, scenario: str) -> None:
    """Batches built by kafkalog read the same in the peer (CRC checked) as in kafkalog."""
    _need_peer(peer, magic, codec)
    data = _scenario_v2(scenario, codec) if magic == 2 else _scenario_legacy(magic, scenario, codec)
    peer_batches = READERS[peer](data)
    expected = [r for b in peer_batches for r in b.records]
    assert expected, "the peer read no records"
    assert kafkalog_records(data) == expected
    if magic == 2:
        assert kafkalog_v2_fields(data) == [b.fields for b in peer_batches]
    else:
        ours = list(LogReader(data).batches())
        assert len(ours) == len(peer_batches)
        for mine, theirs in zip(ours, peer_batches, strict=True):
            if "compression" in theirs.fields:
                assert int(mine.compression) == theirs.fields["compression"]
            if "next_offset" in theirs.fields:
                assert mine.next_offset == theirs.fields["next_offset"]


# ------------------------------------------------------------------------- peers -> kafkalog
PRODUCER = {"producer_id": 31337, "producer_epoch": 5, "base_sequence": 40}


def _build_with_peer(peer: str, magic: int, codec: Codec, base: int, recs: list, transactional: bool) -> bytes:
    """One batch (v2) or message set (v0/v1) built by a peer's builder; offsets ``base``..``base+n-1``."""
    if peer == "kafka-python":
        if magic == 2:
            b = KpMemoryRecordsBuilder(magic, int(codec), 1 << 20, offset=base, transactional=transactional, **PRODUCER)
        else:
            b = KpMemoryRecordsBuilder(magic, int(codec), 1 << 20, offset=base)
        for ts, k, v, h in recs:
            assert b.append(ts, k, v, h if magic == 2 else None) is not None
        b.close()
        return bytes(b.buffer())
    mod_default = aio_c.DefaultRecordBatchBuilder if peer == "aiokafka-c" else _DefaultRecordBatchBuilderPy
    mod_legacy = aio_c.LegacyRecordBatchBuilder if peer == "aiokafka-c" else _LegacyRecordBatchBuilderPy
    if magic == 2:
        b = mod_default(magic, int(codec), int(transactional), PRODUCER["producer_id"], PRODUCER["producer_epoch"], PRODUCER["base_sequence"], 1 << 20)
    else:
        b = mod_legacy(magic, int(codec), 1 << 20)
    for i, (ts, k, v, h) in enumerate(recs):
        assert b.append(base + i, ts, k, v, h if magic == 2 else None) is not None
    return bytes(b.build())


PEER_TO_KAFKALOG = [
    pytest.param(peer, magic, codec, id=f"{peer}-v{magic}-{codec.label}") for peer in PEERS for magic, codec in MAGIC_CODECS
]


@pytest.mark.parametrize("peer,magic,codec", PEER_TO_KAFKALOG)
def test_kafkalog_reads_peer_batches(peer: str, magic: int, codec: Codec) -> None:
    """Batches built by a peer's builder decode in kafkalog to exactly the records handed to it."""
    _need_peer(peer, magic, codec)
    recs = _records_in(magic)
    first = _build_with_peer(peer, magic, codec, 0, recs, transactional=True)
    second = _build_with_peer(peer, magic, codec, 20, recs[:4], transactional=False)
    data = first + second

    expected: list[Rec] = []
    for base, rs in ((0, recs), (20, recs[:4])):
        for i, (ts, k, v, h) in enumerate(rs):
            expected.append((base + i, ts if magic > 0 else -1, k, v, list(h) if magic == 2 else []))

    reader = LogReader(data)
    batches = list(reader.batches())
    assert reader.tail is None
    got: list[Rec] = []
    for b in batches:
        assert b.is_valid
        b.ensure_valid()
        assert b.compression is codec, f"the peer wrote {b.compression.label}, asked for {codec.label}"
        got.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in b.records(verify_crc=True))
    assert got == expected

    if magic == 2:
        # the peers' v2 builders leave the base offset at 0 (the broker assigns it) and write the
        # offsets they are given as deltas; their producer fields are what they were given
        assert [b.base_offset for b in batches] == [0, 0]
        assert [b.last_offset for b in batches] == [len(recs) - 1, 23]
        assert [b.max_timestamp for b in batches] == [max(r[0] for r in recs), max(r[0] for r in recs[:4])]
        assert [(b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) for b in batches] == [
            (PRODUCER["producer_id"], PRODUCER["producer_epoch"], PRODUCER["base_sequence"], True),
            (PRODUCER["producer_id"], PRODUCER["producer_epoch"], PRODUCER["base_sequence"], False),
        ]
        seqs = [r.sequence for b in batches for r in b.records()]
        assert seqs == [PRODUCER["base_sequence"] + i for i in range(len(recs))] + [
            PRODUCER["base_sequence"] + 20 + i for i in range(4)
        ]


# ------------------------------------------------------------- peers -> lossless JSON -> build
def _lossless_lines(data: bytes, tmp_path: Path) -> list[dict]:
    """``kafkalog dump --json --lossless`` of ``data`` (as a .log file), through the command's code."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    lines, errors = lossless_dump(path)
    assert not errors
    return [json.loads(line) for line in lines]


def _build(lines: list[dict]) -> bytes:
    """``kafkalog build -o F.log`` of JSON lines, through the command's code."""
    return b"".join(build_log(json.dumps(o) for o in lines))


@pytest.mark.rule("R-JSON-10", "R-JSON-11")
@pytest.mark.parametrize("peer,magic,codec", PEER_TO_KAFKALOG)
def test_lossless_json_builds_peer_batches_byte_identical(peer: str, magic: int, codec: Codec, tmp_path: Path) -> None:
    """`dump --json --lossless | build` gives back a peer's bytes in every codec and magic: the payload
    as the peer compressed it (its gzip header and level, its lz4 frame, ...), not Kafka's recompression
    of the records, and a v0/v1 wrapper's offset as the peer left it."""
    _need_peer(peer, magic, codec)
    recs = _records_in(magic)
    data = _build_with_peer(peer, magic, codec, 0, recs, transactional=True) + _build_with_peer(peer, magic, codec, 20, recs[:4], transactional=False)
    assert _build(_lossless_lines(data, tmp_path)) == data


@pytest.mark.rule("R-JSON-11")
@pytest.mark.parametrize("peer,magic,codec", [p for p in PEER_TO_KAFKALOG if p.values[2] is not Codec.NONE])
def test_edited_record_of_peer_batch_is_recompressed(peer: str, magic: int, codec: Codec, tmp_path: Path) -> None:
    """A record value edited in the lossless JSON: its batch no longer matches the stored payload and is
    compressed as Kafka compresses (as from JSON without the payload), the unedited batch keeps the peer's
    bytes, and the copy reads back with the edit, CRCs valid."""
    _need_peer(peer, magic, codec)
    recs = _records_in(magic)
    first = _build_with_peer(peer, magic, codec, 0, recs, transactional=True)
    second = _build_with_peer(peer, magic, codec, 20, recs[:4], transactional=False)
    lines = _lossless_lines(first + second, tmp_path)
    (edited,) = [o for o in lines if o["type"] == "record" and o["offset"] == 1]
    edited["value"] = b"edited".hex()
    first_lines = lines[: 1 + len(recs)]
    assert "payload" in first_lines[0]
    kafkas = _build([{k: v for k, v in o.items() if k != "payload"} for o in first_lines])
    built = _build(lines)
    assert built == kafkas + second
    assert kafkas[: len(first)] != first  # the edit changed the first batch
    got = [(r.offset, r.key, r.value) for b in LogReader(built).batches() for r in b.records(verify_crc=True)]
    want = [(i, k, b"edited" if i == 1 else v) for i, (_ts, k, v, _h) in enumerate(recs)]
    assert got == want + [(20 + i, k, v) for i, (_ts, k, v, _h) in enumerate(recs[:4])]


# ------------------------------------------------------------------ byte-identical uncompressed
BYTES_CASES = [
    pytest.param(peer, magic, producer, id=f"{peer}-v{magic}-{producer}")
    for peer in PEERS
    for magic in (0, 1, 2)
    for producer in (["none", "idempotent", "transactional"] if magic == 2 else ["none"])
]

#: The v2 partitionLeaderEpoch each peer's producer-side builder writes (the broker sets it later):
#: kafka-python writes 0, aiokafka NO_PARTITION_LEADER_EPOCH (-1).
PEER_LEADER_EPOCH = {"kafka-python": 0, "aiokafka-c": -1, "aiokafka-py": -1}


@pytest.mark.rule("R-PRIM-02", "R-WR-01", "R-WR-04", "R-CONF-02")
@pytest.mark.parametrize("peer,magic,producer", BYTES_CASES)
def test_uncompressed_bytes_identical_to_peer(peer: str, magic: int, producer: str) -> None:
    """Uncompressed, kafkalog's builders write exactly the peer's bytes (and Kafka's layout)."""
    _need_peer(peer, magic, Codec.NONE)
    recs = _records_in(magic)
    base = 0 if magic == 2 else 3  # v2 peers always write base offset 0
    if magic == 2:
        pid, epoch, seq = (-1, -1, -1) if producer == "none" else (PRODUCER["producer_id"], PRODUCER["producer_epoch"], PRODUCER["base_sequence"])
        txn = producer == "transactional"
        if peer == "kafka-python":
            b = KpMemoryRecordsBuilder(2, 0, 1 << 20, offset=base, transactional=txn, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
            for ts, k, v, h in recs:
                b.append(ts, k, v, h)
            b.close()
            theirs = bytes(b.buffer())
        else:
            cls = aio_c.DefaultRecordBatchBuilder if peer == "aiokafka-c" else _DefaultRecordBatchBuilderPy
            ab = cls(2, 0, int(txn), pid, epoch, seq, 1 << 20)
            for i, (ts, k, v, h) in enumerate(recs):
                ab.append(base + i, ts, k, v, h)
            theirs = bytes(ab.build())
        ours_b = RecordBatchBuilder(
            base, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn,
            partition_leader_epoch=PEER_LEADER_EPOCH[peer],
        )
        for ts, k, v, h in recs:
            ours_b.append(ts, k, v, h)
        ours = ours_b.build()
    else:
        theirs = _build_with_peer(peer, magic, Codec.NONE, base, recs, transactional=False)
        lb = LegacyBatchBuilder(magic, base)
        for ts, k, v, _h in recs:
            lb.append(ts, k, v)
        ours = lb.build()
    if ours != theirs:
        first = next(i for i in range(min(len(ours), len(theirs))) if ours[i] != theirs[i]) if len(ours) == len(theirs) else None
        pytest.fail(f"bytes differ: lengths {len(ours)} (kafkalog) vs {len(theirs)} ({peer}); first difference at {first}")


# --------------------------------------------------------------------------- Kafka's own files
GOLDEN_FOLDERS = [
    "mixed-magic", "v0-gzip", "v0-lz4", "v0-none", "v0-snappy", "v1-gzip", "v1-lz4", "v1-none", "v1-snappy",
    "v2-gzip", "v2-lz4", "v2-none", "v2-snappy", "v2-transactional", "v2-zstd",
]
#: The codecs and magics Kafka's file in each folder uses (so a peer's gaps can be named up front).
GOLDEN_CONTENT = {
    "mixed-magic": [(0, Codec.NONE), (0, Codec.GZIP), (1, Codec.SNAPPY), (2, Codec.ZSTD)],
    "v2-transactional": [(2, Codec.NONE), (2, Codec.LZ4), (2, Codec.ZSTD)],
}


def _golden_content(folder: str) -> list[tuple[int, Codec]]:
    if folder in GOLDEN_CONTENT:
        return GOLDEN_CONTENT[folder]
    magic, codec = folder.split("-")
    return [(int(magic[1]), Codec.from_name(codec))]


def _need_golden() -> Path:
    if not (GOLDEN_KAFKA / "dump" / "records.jsonl").is_file():
        pytest.skip(f"{GOLDEN_KAFKA} is absent: Kafka's reference files live in ../shared beside the repo")
    return GOLDEN_KAFKA


_KAFKA_DUMP: dict[str, list[dict]] | None = None


def kafka_dump() -> dict[str, list[dict]]:
    """Kafka's own reading of each golden file: folder -> its batch and record lines, in order."""
    global _KAFKA_DUMP
    if _KAFKA_DUMP is None:
        out: dict[str, list[dict]] = defaultdict(list)
        with open(_need_golden() / "dump" / "records.jsonl", encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    obj = json.loads(line)
                    out[obj["file"].split("/")[0]].append(obj)
        _KAFKA_DUMP = dict(out)
    return _KAFKA_DUMP


def _unhex(v: str | None) -> bytes | None:
    return None if v is None else bytes.fromhex(v)


def kafka_records(folder: str) -> list[Rec]:
    return [
        (o["offset"], o["timestamp"], _unhex(o["key"]), _unhex(o["value"]), [(h["key"], _unhex(h["value"])) for h in o["headers"]])
        for o in kafka_dump()[folder]
        if o["type"] == "record"
    ]


def _golden_log(folder: str) -> Path:
    p = _need_golden() / "records" / folder / "00000000000000000000.log"
    if not p.is_file():
        pytest.skip(f"{p} is absent")
    return p


@pytest.mark.parametrize("folder", GOLDEN_FOLDERS)
def test_kafkalog_reads_kafka_files_as_kafka_does(folder: str) -> None:
    path = _golden_log(folder)
    lines = kafka_dump()[folder]
    expected_batches = [o for o in lines if o["type"] == "batch"]
    with LogReader(path) as reader:
        batches = list(reader.batches())
        assert reader.tail is None
        got: list[Rec] = []
        assert len(batches) == len(expected_batches)
        for b, e in zip(batches, expected_batches, strict=True):
            fields = {
                "position": b.position, "baseOffset": b.base_offset, "lastOffset": b.last_offset, "magic": b.magic,
                "sizeInBytes": b.size_in_bytes, "crc": b.crc, "isValid": b.is_valid, "compression": b.compression.label,
                "timestampType": b.timestamp_type.value, "maxTimestamp": b.max_timestamp, "attributes": b.attributes,
            }
            assert fields == {k: e[k] for k in fields}, f"batch at {b.position}"
            if b.magic == 2:
                v2 = {
                    "lastOffsetDelta": b.last_offset_delta, "baseTimestamp": b.base_timestamp,
                    "producerId": b.producer_id, "producerEpoch": b.producer_epoch, "baseSequence": b.base_sequence,
                    "lastSequence": b.last_sequence, "partitionLeaderEpoch": b.partition_leader_epoch, "count": b.count,
                    "isTransactional": b.is_transactional, "isControlBatch": b.is_control,
                    "deleteHorizonMs": b.delete_horizon_ms,
                }
                assert v2 == {k: e[k] for k in v2}, f"batch at {b.position}"
            got.extend((r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in b.records(verify_crc=True))
    assert got == kafka_records(folder)


def _golden_peer_reason(peer: str, folder: str) -> str | None:
    for magic, codec in _golden_content(folder):
        reason = peer_unsupported(peer, magic, codec)
        if reason:
            return reason
    return None


GOLDEN_PEER_CASES = []
for _peer in ("kafka-python", "aiokafka-c", "aiokafka-py"):
    for _folder in GOLDEN_FOLDERS:
        _marks = []
        if _peer == "aiokafka-c" and _folder == "mixed-magic":
            _marks.append(
                pytest.mark.xfail(
                    reason="aiokafka's Cython MemoryRecords takes every batch's magic from the first batch, so it "
                    "misreads the v1 and v2 batches that follow v0 ones",
                    strict=True,
                )
            )
        GOLDEN_PEER_CASES.append(pytest.param(_peer, _folder, marks=_marks, id=f"{_peer}-{_folder}"))


@pytest.mark.parametrize("peer,folder", GOLDEN_PEER_CASES)
def test_peer_reads_kafka_files_as_kafka_does(peer: str, folder: str) -> None:
    """The oracle check behind every other test here: each peer agrees with Kafka on Kafka's files."""
    path = _golden_log(folder)
    reason = _golden_peer_reason(peer, folder)
    if reason:
        pytest.skip(reason)
    batches = READERS[peer](path.read_bytes())
    got = [r for b in batches for r in b.records]
    assert got == kafka_records(folder)
    v2_expected = [o for o in kafka_dump()[folder] if o["type"] == "batch" and o["magic"] == 2]
    v2_got = [b.fields for b in batches if b.magic == 2]
    assert [(f["base_offset"], f["last_offset_delta"], f["max_timestamp"], f["producer_id"], f["base_sequence"]) for f in v2_got] == [
        (e["baseOffset"], e["lastOffsetDelta"], e["maxTimestamp"], e["producerId"], e["baseSequence"]) for e in v2_expected
    ]
