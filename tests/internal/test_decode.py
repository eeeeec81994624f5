"""Internal-topic decoding against Kafka's own decoded dumps (kafka-dump-log with its decoders).

For every record of every dumped internal-topic file the whole record line must equal Kafka's,
and the decoded key and value must equal the JSON Kafka printed (compared as JSON objects).
Unknown or corrupt keys and values (made by editing real records' bytes) must be reported with
file, position and offset, never crash.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest

from helpers import GOLDEN, SHARED, need_shared
from kafkalog.format.records.control import ControlType, encode_control_key
from kafkalog.format.records.record import Record
from kafkalog.format.records.stream import LogReader
from kafkalog.format.records.v2 import RecordBatch, RecordBatchBuilder
from kafkalog.internal import (
    InternalRecordError,
    MalformedInternalRecordError,
    UnknownRecordTypeError,
    UnknownRecordVersionError,
    control_text,
    decode,
    decode_log,
    decode_record,
    decoded_fields,
    decoder_for_path,
    kafka_json,
    record_text,
)
from kafkalog.internal.messages import messages_of
from kafkalog.internal.releases import RELEASES, parse_release
from kafkalog.internal.schemas import F, Message, construct_for
from kafkalog.internal.txnlog import java_hash_set_order
from kafkalog.internal.wire import Reader, java_double, message_json, read_message

_JSON = json.JSONDecoder()
#: The Kafka release whose kafka-dump-log wrote the dumps of golden/real, golden/kafka and ../shared:
#: they are compared with that release's decoders and text, not the newest's (the default).
KAFKA_4_0 = "4.0"
#: Kafka 4.0's messages (from its data file), which the dumps above were written with.
MESSAGES_4_0 = messages_of(parse_release(KAFKA_4_0))


# ------------------------------------------------------------------------ Kafka's text, parsed
def _expected_files(text: str) -> list[tuple[str, list[str]]]:
    """(path after "Dumping ", the record lines) for each file in a kafka-dump-log output."""
    files: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            files.append((line[len("Dumping "):], []))
        elif line.startswith("| offset: "):
            files[-1][1].append(line)
    return files


def _metadata(batch: Any, r: Record) -> str:
    return (
        f"| offset: {r.offset} {batch.timestamp_type.value}: {r.timestamp} keySize: {r.key_size} "
        f"valueSize: {r.value_size} sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]"
    )


def _parse_data(rest: str) -> tuple[Any, Any, str | None, str | None]:
    """Kafka's `` key: X payload: Y`` -> (X, Y) with JSON parsed (``None`` for a missing part),
    and the raw texts of X and Y."""
    key = payload = key_raw = payload_raw = None
    if rest.startswith(" key: "):
        pos = len(" key: ")
        if rest[pos] == "{":
            key, end = _JSON.raw_decode(rest, pos)
        else:  # an error text: runs to the payload, if any
            end = rest.find(" payload: ", pos)
            end = len(rest) if end < 0 else end
            key = rest[pos:end]
        key_raw = rest[pos:end]
        rest = rest[end:]
    if rest.startswith(" payload: "):
        payload_raw = rest[len(" payload: "):]
        payload = json.loads(payload_raw) if payload_raw.startswith("{") else payload_raw
        rest = ""
    assert rest == "", f"unparsed text: {rest!r}"
    return key, payload, key_raw, payload_raw


class _Tally:
    def __init__(self) -> None:
        self.records = 0
        self.json_compared = 0


def _check_file(path: Path, lines: list[str], tally: _Tally) -> None:
    decoder = decoder_for_path(path)
    assert decoder is not None, path
    ours = []
    with LogReader(path) as reader:
        for batch in reader.batches():
            control = isinstance(batch, RecordBatch) and batch.is_control
            ours.extend((batch, r, control) for r in batch.records())
    assert len(ours) == len(lines), f"{path}: {len(ours)} records, Kafka printed {len(lines)}"
    for (batch, r, control), line in zip(ours, lines, strict=True):
        head = _metadata(batch, r)
        if control:
            tail = control_text(r, file=str(path), position=batch.position, release=KAFKA_4_0)
        else:
            tail = record_text(None, r, decoder=decoder, file=str(path), position=batch.position, release=KAFKA_4_0)
        assert head + tail == line, f"{path} offset {r.offset}:\n ours:  {head + tail}\n Kafka: {line}"
        tally.records += 1
        rest = line[len(head):]
        if control:
            label, _, body = rest.strip().partition(" ")
            d = decode(None, r, control=True, release=KAFKA_4_0)
            if label in ("SnapshotHeader", "SnapshotFooter", "KRaftVersion", "KRaftVoters"):
                assert d.value == json.loads(body)
                tally.json_compared += 1
            continue
        key, value = decode_record(None, r, decoder=decoder, release=KAFKA_4_0)
        k_exp, v_exp, k_raw, v_raw = _parse_data(rest)
        # as JSON objects
        assert key == k_exp, f"{path} offset {r.offset}: key"
        assert (value if value is not None else "<DELETE>") == v_exp, f"{path} offset {r.offset}: value"
        # and as text: json.dumps of the objects is Kafka's text
        if key is not None:
            assert json.dumps(key, separators=(",", ":"), ensure_ascii=False) == k_raw
        if value is not None:
            assert json.dumps(value, separators=(",", ":"), ensure_ascii=False) == v_raw
        tally.json_compared += 1


def _check_set(set_dir: Path, expected: Path) -> _Tally:
    with gzip.open(expected, "rt", encoding="utf-8") as f:
        text = f.read()
    files = _expected_files(text)
    assert files, f"{expected} dumps no file"
    first = files[0][0]
    root = next(Path(dp) for dp, _, _ in os.walk(set_dir) if (Path(dp) / first).is_file())
    tally = _Tally()
    for rel, lines in files:
        _check_file(root / rel, lines, tally)
    return tally


def _sets(base: Path) -> list[str]:
    d = base / "expected-decoded"
    return sorted(p.name[: -len(".txt.gz")] for p in d.glob("*.txt.gz")) if d.is_dir() else []


BUNDLED = _sets(GOLDEN / "real")
SHARED_SETS = _sets(SHARED / "golden-real")


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_real_sets_match_kafka(name: str) -> None:
    base = GOLDEN / "real"
    tally = _check_set(base / name, base / "expected-decoded" / f"{name}.txt.gz")
    assert tally.records > 0


@pytest.mark.shared
@pytest.mark.parametrize(
    "name", SHARED_SETS or [pytest.param("<none>", marks=pytest.mark.skip(reason=f"{SHARED}/golden-real is absent"))]
)
def test_shared_real_sets_match_kafka(name: str) -> None:
    base = need_shared("golden-real")
    tally = _check_set(base / name, base / "expected-decoded" / f"{name}.txt.gz")
    assert tally.records > 0 and tally.json_compared > 0


# ------------------------------------------------------------------------ __transaction_state
def _check_txnstate(base: Path) -> int:
    text = (base / "dump" / "txnstate-decoded.txt").read_text(encoding="utf-8")
    n = 0
    for rel, lines in _expected_files(text):
        path = base / rel
        assert decoder_for_path(path) is None  # "txnstate-0" is not the real topic name
        with LogReader(path) as reader:
            ours = [(b, r) for b in reader.batches() for r in b.records()]
        assert len(ours) == len(lines)
        for (batch, r), line in zip(ours, lines, strict=True):
            assert _metadata(batch, r) + record_text("__transaction_state", r, release=KAFKA_4_0) == line
            key, value = decode_record(None, r, decoder="transaction-log", release=KAFKA_4_0)
            assert line.split(" key: transaction_metadata::transactionalId=")[1].split(" ")[0] == key["data"]["transactionalId"]
            if value is None:
                assert line.endswith(" payload: <DELETE>")
            else:
                data = value["data"]
                assert f"producerId:{data['producerId']},producerEpoch:{data['producerEpoch']}," in line
                assert f"txnTimeoutMs={data['transactionTimeoutMs']}" in line
            n += 1
    return n


def test_bundled_txnstate_matches_kafka() -> None:
    assert _check_txnstate(GOLDEN / "kafka") == 17


@pytest.mark.shared
def test_shared_txnstate_matches_kafka() -> None:
    assert _check_txnstate(need_shared("golden-kafka")) == 17


def test_transaction_partitions_in_kafka_set_order() -> None:
    # the order kafka-dump-log printed for these sets (see txnstate-decoded.txt)
    assert java_hash_set_order([("orders", 0), ("orders", 1), ("payments", 2)]) == [("payments", 2), ("orders", 0), ("orders", 1)]
    assert java_hash_set_order([("events", 0), ("events", 3)]) == [("events", 3), ("events", 0)]


# ------------------------------------------------------------------- declarations vs construct
def _sample(message: Message, fields: list[F], version: int, depth: int = 0) -> tuple[dict, dict]:
    """A non-default value of every field present in ``version``: (construct input, expected read)."""
    con: dict[str, Any] = {}
    tagged: dict[str, Any] = {}
    exp: dict[str, Any] = {}
    for i, f in enumerate(fields):
        if version not in f.versions:
            exp[f.json_name] = f.default_value()
            continue
        c, e = _sample_value(message, f, version, i, depth)
        (tagged if version in f.tagged else con)[f.name] = c
        exp[f.json_name] = e
    if message.is_flexible(version):
        con["_tagged"] = tagged
    return con, exp


def _sample_value(message: Message, f: F, version: int, i: int, depth: int) -> tuple[Any, Any]:
    def one(t: str) -> tuple[Any, Any]:
        if t in ("int8", "int16", "int32", "int64"):
            return -(i + 3), -(i + 3)
        if t in ("uint16", "uint32"):
            return 40000 + i, 40000 + i
        if t == "bool":
            return True, True
        if t == "float64":
            return 0.25 + i, 0.25 + i
        if t == "uuid":
            return bytes(range(i, i + 16)), bytes(range(i, i + 16))
        if t == "string":
            return f"s{i}é", f"s{i}é"
        if t == "bytes":
            return b"\x00\x01" + bytes([i]), b"\x00\x01" + bytes([i])
        assert f.struct is not None
        return _sample(message, f.struct, version, depth + 1)

    if f.is_array:
        pairs = [one(f.elem) for _ in range(2)]
        return [p[0] for p in pairs], [p[1] for p in pairs]
    return one(f.type)


def _all_versions() -> list[tuple[str, str, int]]:
    out = []
    for release in RELEASES:
        for name, m in sorted(messages_of(parse_release(release)).messages.items()):
            out.extend((release, name, v) for v in range(m.valid.lo, m.valid.hi + 1))
    return out


@pytest.mark.parametrize("release,name,version", _all_versions())
def test_construct_layout_and_reader_agree(release: str, name: str, version: int) -> None:
    """construct builds every field of every version of every release's messages; Kafka's rules
    (our reader) read it back."""
    message = messages_of(parse_release(release)).messages[name]
    con, exp = _sample(message, message.fields, version)
    data = construct_for(message, version).build(con)
    r = Reader(data)
    assert read_message(message, version, r) == exp
    assert r.remaining == 0
    parsed = construct_for(message, version).parse(data)
    assert construct_for(message, version).build(parsed) == data
    message_json(message, version, exp)  # every field converts


def test_construct_parses_real_records_like_the_reader() -> None:
    """On real metadata and offsets records the construct layouts read what the reader reads."""
    seen = 0
    for path in sorted((GOLDEN / "real").glob("*/**/__c*-*/*.log")):
        decoder = decoder_for_path(path)
        with LogReader(path) as reader:
            for batch in reader.batches():
                if batch.is_control:
                    continue
                for r in batch.records():
                    if decoder == "cluster-metadata":
                        rd = Reader(r.value)
                        rd.uvarint()
                        api_key, version = rd.uvarint(), rd.uvarint()
                        message = MESSAGES_4_0.metadata[api_key][1]
                        data = r.value[rd.pos:]
                    else:
                        version = struct.unpack_from(">h", r.value or b"\xff\xff")[0]
                        if r.value is None:
                            continue
                        message = MESSAGES_4_0.group_coordinator[struct.unpack_from(">h", r.key)[0]][1]
                        data = r.value[2:]
                    layout = construct_for(message, version)
                    assert layout.build(layout.parse(data)) == data
                    ours = read_message(message, version, Reader(data))
                    c = layout.parse(data)
                    for f in message.fields:
                        if version in f.versions and version not in f.tagged and f.struct is None and not f.is_array:
                            assert c[f.name] == ours[f.json_name]
                    seen += 1
                    if seen > 3000:
                        return
    assert seen > 0


# ------------------------------------------------------------------------ JSON text details
def test_kafka_json_text_rules() -> None:
    assert kafka_json({"a": "x\u0001\n\"é", "b": [1, None, True], "c": 1.0e-4, "d": 1e7, "e": 0.5}) == (
        '{"a":"x\\u0001\\n\\"é","b":[1,null,true],"c":1.0E-4,"d":1.0E7,"e":0.5}'
    )
    assert [java_double(v) for v in (1.0, 100.0, 1234567.0, 12345678.0, 0.001, 0.0001234, -2.5, 0.0)] == [
        "1.0", "100.0", "1234567.0", "1.2345678E7", "0.001", "1.234E-4", "-2.5", "0.0",
    ]


# --------------------------------------------------------------- unknown and corrupt records
def _real_records(rel: str) -> list[tuple[Any, Record]]:
    with LogReader(GOLDEN / "real" / rel) as reader:
        return [(b, r) for b in reader.batches() for r in b.records()]


OFFSETS_LOG = "zk-danielmorales9-kafkafun/data/kafka/__consumer_offsets-13/00000000000000000000.log"
METADATA_LOG = "kraft-metadata-christseng89/kafka-logs/__cluster_metadata-0/00000000000000000000.log"


def _offsets_samples() -> tuple[Record, Record]:
    recs = [r for _, r in _real_records(OFFSETS_LOG)]
    commit = next(r for r in recs if r.key[:2] == b"\x00\x01" and r.value is not None)
    group = next(r for r in recs if r.key[:2] == b"\x00\x02" and r.value is not None)
    return commit, group


def _edit(r: Record, key: bytes | None = ..., value: bytes | None = ...) -> Record:  # type: ignore[assignment]
    return Record(r.offset, r.timestamp, r.key if key is ... else key, r.value if value is ... else value, [])


def test_offsets_unknown_record_type() -> None:
    commit, _ = _offsets_samples()
    bad = _edit(commit, key=b"\x00\x63" + commit.key[2:])
    with pytest.raises(UnknownRecordTypeError) as ei:
        decode("__consumer_offsets", bad, file="x.log", position=128)
    assert "x.log" in str(ei.value) and "position 128" in str(ei.value) and f"offset {bad.offset}" in str(ei.value)
    assert record_text("__consumer_offsets", bad) == f" key: Unknown record type 99 at offset {bad.offset}, skipping."


def test_offsets_unknown_value_version() -> None:
    commit, _ = _offsets_samples()
    bad = _edit(commit, value=b"\x00\x09" + commit.value[2:])
    with pytest.raises(UnknownRecordVersionError):
        decode_record("__consumer_offsets", bad)
    assert record_text("__consumer_offsets", bad) == (
        f" key: Error at offset {bad.offset}, skipping. Could not read record with version 9 from value's buffer "
        "due to: Can't read version 9 of OffsetCommitValue."
    )


def test_offsets_truncated_value_and_key() -> None:
    commit, group = _offsets_samples()
    bad = _edit(commit, value=commit.value[:9])
    with pytest.raises(MalformedInternalRecordError):
        decode("__consumer_offsets", bad)
    assert "due to: null." in record_text("__consumer_offsets", bad)
    bad_key = _edit(group, key=group.key[:5])
    assert "from key's buffer" in record_text("__consumer_offsets", bad_key)
    with pytest.raises(MalformedInternalRecordError, match="missing key"):
        record_text("__consumer_offsets", _edit(group, key=None))


def test_offsets_tombstone_and_consumer_protocol_fallback() -> None:
    commit, group = _offsets_samples()
    key, value = decode_record("__consumer_offsets", _edit(commit, value=None))
    assert value is None and key["type"] == "1"
    assert record_text("__consumer_offsets", _edit(commit, value=None)).endswith(" payload: <DELETE>")
    # a member's subscription with an unknown consumer-protocol version keeps its bytes (base64)
    rec = _real_records("kafka271-donaldy/kafka-logs/__consumer_offsets-17/00000000000000000000.log")[0][1]
    d = decode("__consumer_offsets", rec)
    assert d.value["data"]["members"][0]["subscription"] == {"topics": ["myTopic"], "userData": None, "ownedPartitions": []}
    raw = read_message(MESSAGES_4_0.group_coordinator[2][1], 3, Reader(rec.value, 2))["members"][0]["subscription"]
    at = rec.value.index(raw)
    edited = rec.value[:at] + b"\x7f\x7f" + rec.value[at + 2 :]
    d2 = decode("__consumer_offsets", _edit(rec, value=edited))
    assert d2.value["data"]["members"][0]["subscription"] == base64.b64encode(b"\x7f\x7f" + raw[2:]).decode()
    assert d2.value["data"]["members"][0]["assignment"] == d.value["data"]["members"][0]["assignment"]


def test_metadata_unknown_and_corrupt() -> None:
    recs = [r for b, r in _real_records(METADATA_LOG) if not b.is_control]
    feature = next(r for r in recs if r.value[1] == 12)  # FeatureLevelRecord
    cases = {
        "type": (UnknownRecordTypeError, b"\x01\x63\x00" + feature.value[3:], "Unknown metadata id 99"),
        "version": (UnknownRecordVersionError, b"\x01\x0c\x07" + feature.value[3:], "Failed to deserialize record with type 12"),
        "frame": (UnknownRecordVersionError, b"\x02" + feature.value[1:], "unknown frame version 2"),
        "garbage": (MalformedInternalRecordError, feature.value + b"\x00\x00", "Found 2 byte(s) of garbage after 12"),
        "short": (MalformedInternalRecordError, feature.value[:6], "Failed to deserialize record with type 12"),
    }
    for name, (cls, value, text) in cases.items():
        bad = _edit(feature, value=value)
        with pytest.raises(cls) as ei:
            decode("__cluster_metadata", bad, file="m.log", position=7)
        assert "m.log, position 7, offset" in str(ei.value), name
        out = record_text("__cluster_metadata", bad)
        assert out.startswith(f" payload: Error at {bad.offset}, skipping. ") and text in out, (name, out)


def test_txn_unknown_versions() -> None:
    with LogReader(GOLDEN / "kafka" / "logdir" / "txnstate-0" / "00000000000000000000.log") as reader:
        r = next(r for b in reader.batches() for r in b.records())
    bad_key = _edit(r, key=b"\x00\x05" + r.key[2:])
    assert record_text("__transaction_state", bad_key, release=KAFKA_4_0) == " key: unknown::version=5"
    with pytest.raises(UnknownRecordVersionError):
        decode("__transaction_state", bad_key, release=KAFKA_4_0)
    bad_value = _edit(r, value=b"\x00\x09" + r.value[2:])
    with pytest.raises(UnknownRecordVersionError, match="Unknown version 9"):
        record_text("__transaction_state", bad_value, file="t.log", position=0, release=KAFKA_4_0)
    bad_state = bytearray(r.value)
    bad_state[2 + 8 + 2 + 4] = 42  # TransactionStatus of a v0 value
    with pytest.raises(MalformedInternalRecordError, match="Unknown transaction state id 42"):
        decode("__transaction_state", _edit(r, value=bytes(bad_state)), release=KAFKA_4_0)


def test_transaction_log_value_flexible_version() -> None:
    """Version 1 (flexible): tagged fields print only when not at their default."""
    layout = construct_for(MESSAGES_4_0.transaction_coordinator[0][1], 1)
    body = layout.build({
        "ProducerId": 5, "ProducerEpoch": 1, "TransactionTimeoutMs": 60000, "TransactionStatus": 1,
        "TransactionPartitions": [{"Topic": "t", "PartitionIds": [2, 0], "_tagged": {}}],
        "TransactionLastUpdateTimestampMs": 9, "TransactionStartTimestampMs": 8,
        "_tagged": {"PreviousProducerId": 4, "ClientTransactionVersion": 2},
    })
    key = b"\x00\x00\x00\x01a"
    d = decode("__transaction_state", Record(3, 0, key, b"\x00\x01" + body, []), release=KAFKA_4_0)
    assert d.value == {"version": 1, "data": {
        "producerId": 5, "previousProducerId": 4, "producerEpoch": 1, "transactionTimeoutMs": 60000,
        "transactionStatus": 1, "transactionPartitions": [{"topic": "t", "partitionIds": [2, 0]}],
        "transactionLastUpdateTimestampMs": 9, "transactionStartTimestampMs": 8, "clientTransactionVersion": 2,
    }}
    assert d.value_text == "producerId:5,producerEpoch:1,state=Ongoing,partitions=[t-2,t-0],txnLastUpdateTimestamp=9,txnTimeoutMs=60000"


def test_control_records() -> None:
    header = MESSAGES_4_0.control[3]
    value = construct_for(header, 0).build({"Version": 0, "LastContainedLogTimestamp": 77, "_tagged": {}})
    rec = Record(0, 0, encode_control_key(ControlType.SNAPSHOT_HEADER), value, [])
    assert control_text(rec) == ' SnapshotHeader {"version":0,"lastContainedLogTimestamp":77}'
    newer = construct_for(header, 0).build({"Version": 3, "LastContainedLogTimestamp": 77, "_tagged": {}})
    with pytest.raises(UnknownRecordVersionError) as ei:
        control_text(Record(4, 0, rec.key, newer, []), file="s.checkpoint", position=0)
    assert "s.checkpoint, position 0, offset 4" in str(ei.value)
    unknown = Record(5, 0, b"\x00\x00\x00\x63", b"", [])
    assert control_text(unknown) == " controlType: UNKNOWN(99)"
    with pytest.raises(UnknownRecordTypeError):
        decode(None, unknown, control=True)
    commit = Record(6, 0, encode_control_key(ControlType.COMMIT), b"\x00\x00\x00\x00\x00\x07", [])
    assert control_text(commit) == " endTxnMarker: COMMIT coordinatorEpoch: 7"
    assert decode_record(None, commit, control=True)[1] == {"version": 0, "coordinatorEpoch": 7}
    voters = MESSAGES_4_0.control[6]
    vbytes = construct_for(voters, 0).build({"Version": 0, "_tagged": {}, "Voters": [{
        "VoterId": 1, "VoterDirectoryId": bytes(16), "_tagged": {},
        "Endpoints": [{"Name": "CONTROLLER", "Host": "h", "Port": 9093, "_tagged": {}}],
        "KRaftVersionFeature": {"MinSupportedVersion": 0, "MaxSupportedVersion": 1, "_tagged": {}},
    }]})
    assert control_text(Record(7, 0, encode_control_key(ControlType.KRAFT_VOTERS), vbytes, [])) == (
        ' KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA",'
        '"endpoints":[{"name":"CONTROLLER","host":"h","port":9093}],'
        '"kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}'
    )


def test_corrupt_log_reports_and_continues(tmp_path: Path) -> None:
    """A partition holding edited records: each is reported with file, position and offset."""
    commit, group = _offsets_samples()
    part = tmp_path / "__consumer_offsets-0"
    part.mkdir()
    b = RecordBatchBuilder(0)
    b.append(1, commit.key, commit.value)
    b.append(2, b"\x00\x63" + commit.key[2:], commit.value)  # unknown record type
    b.append(3, commit.key, b"\x00\x09" + commit.value[2:])  # unknown value version
    b.append(4, group.key, group.value[:20])  # truncated
    first = b.build()
    b2 = RecordBatchBuilder(4)
    b2.append(5, group.key, group.value)
    log = part / "00000000000000000000.log"
    log.write_bytes(first + b2.build())
    items = list(decode_log(log))
    assert [i.record.offset for i in items] == [0, 1, 2, 3, 4]
    assert [type(i.error) for i in items] == [
        type(None), UnknownRecordTypeError, UnknownRecordVersionError, MalformedInternalRecordError, type(None)
    ]
    for i in items[1:4]:
        assert isinstance(i.error, InternalRecordError)
        assert str(i.error).startswith(f"{log}, position 0, offset {i.record.offset}: ")
    assert items[4].decoded is not None and items[4].batch.position == len(first)
    fields = decoded_fields("__consumer_offsets", items[1].record, file=str(log), position=0)
    assert fields["decodedKey"] is None and "position 0, offset 1" in fields["decodeError"]
    assert decoded_fields("orders", items[0].record) == {}
    assert decoded_fields("__consumer_offsets", items[0].record)["decodedValue"]["version"] == "3"


def test_mutated_records_never_crash() -> None:
    """Random bit flips, truncations and odd bytes in real keys and values: only KafkaLogError."""
    import random

    from kafkalog.errors import KafkaLogError

    rng = random.Random(20240611)
    recs: list[tuple[str, bool, Record]] = []
    paths = sorted((GOLDEN / "real").glob("*/**/__c*-*/*.log"))
    paths.append(GOLDEN / "kafka" / "logdir" / "txnstate-0" / "00000000000000000000.log")
    for path in paths:
        decoder = decoder_for_path(path) or "transaction-log"
        with LogReader(path) as reader:
            for batch in reader.batches():
                recs.extend((decoder, batch.is_control, r) for r in batch.records())

    def mutate(b: bytes | None) -> bytes | None:
        if b is None:
            return None
        out = bytearray(b)
        op = rng.randrange(4)
        if op == 0 and out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
        elif op == 1:
            out = out[: rng.randrange(len(out) + 1)]
        elif op == 2 and out:
            out[rng.randrange(len(out))] = rng.choice([0x00, 0xFF, 0x7F, 0x80])
        else:
            out += bytes(rng.randrange(256) for _ in range(rng.randrange(4)))
        return bytes(out)

    reported = 0
    for _ in range(4000):
        decoder, control, r = rng.choice(recs)
        m = Record(r.offset, r.timestamp, mutate(r.key) if rng.random() < 0.5 else r.key, mutate(r.value), [])
        try:
            decode(None, m, decoder=decoder, control=control, file="f.log", position=0)
            (control_text(m) if control else record_text(None, m, decoder=decoder))
        except KafkaLogError as e:
            assert f"f.log, position 0, offset {m.offset}" in str(e) or e.file is None
            reported += 1
    assert reported > 0


def test_a_partition_dirs_topic_is_read_as_discovery_reads_it() -> None:
    """The internal topics' decoders read a partition dir's name with discovery's rule (SPEC
    R-NAME-01, R-NAME-02): a partition number of ASCII digits only (another script's digits made
    ``__consumer_offsets-٣`` a partition dir of its own looser copy), and any topic part, a newline too."""
    from kafkalog.internal import decoder_for_path, topic_of_path

    assert topic_of_path("/data/__consumer_offsets-\u0663/00000000000000000000.log") is None
    assert decoder_for_path("/data/__consumer_offsets-\u0663/00000000000000000000.log") is None
    assert topic_of_path("/data/odd\ntopic-7/00000000000000000000.log") == "odd\ntopic"
    assert decoder_for_path("/data/__transaction_state-49/00000000000000000000.log") == "transaction-log"
