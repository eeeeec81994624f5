"""Kafka 4.0's newer internal topics: ``__remote_log_metadata`` (KIP-405) and ``__share_group_state``
(KIP-932), against Kafka 4.0.0's own ``DumpLogSegments`` text for partitions whose keys and values
Kafka's serializers wrote (``golden/kafka/internal``, a copy of ``../shared/golden-kafka/internal``).

The CLI's whole output must equal Kafka's, line for line, with kafka-dump-log's flags, with
``--decoder`` and with ``--decode`` (the decoder chosen by the partition directory's topic); the
JSON's ``decodedKey``/``decodedValue`` must agree with what Kafka printed. Values Kafka's decoder
refuses give Kafka's ``Error at offset ...`` text, worded as the exceptions of Kafka's source are.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import GOLDEN, SHARED, read_jsonl
from kafkalog.format.records.record import Record
from kafkalog.internal import (
    InternalRecordError,
    MalformedInternalRecordError,
    UnknownRecordTypeError,
    UnknownRecordVersionError,
    decode,
    decoder_for_path,
    record_text,
)

BUNDLED = GOLDEN / "kafka" / "internal"
SETS = {"remotelogmetadata-0": "remote-log-metadata", "sharegroupstate-0": "share-group-state"}
FLAGS = {"remote-log-metadata": "--remote-log-metadata-decoder", "share-group-state": "--share-group-state-decoder"}
TOPICS = {"remote-log-metadata": "__remote_log_metadata", "share-group-state": "__share_group_state"}
#: Kafka 4.0.0 wrote and dumped these sets: they are read as that release reads them (4.1 changed the
#: share-group-state layouts and label; the newest release is the default).
KAFKA_4_0 = ("--kafka-version", "4.0")


def _bases() -> list[Any]:
    shared = SHARED / "golden-kafka" / "internal"
    return [
        pytest.param(BUNDLED, id="golden"),
        pytest.param(shared, id="shared", marks=[
            pytest.mark.shared,
            *([] if shared.is_dir() else [pytest.mark.skip(reason=f"{shared} is absent: ../shared is not checked out beside the repo")]),
        ]),
    ]


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalog", *args], capture_output=True, text=True, check=False, cwd=cwd)


def _kafka_text(base: Path, name: str) -> list[str]:
    return (base / "dump" / f"{name}-decoded.txt").read_text(encoding="utf-8").splitlines()


def _logs(base: Path, name: str) -> list[str]:
    return [f"internal/{name}/{p.name}" for p in sorted((base / name).glob("*.log"))]


def _as_topic(tmp: Path, base: Path, name: str) -> Path:
    """The partition copied under its real topic's name (``__remote_log_metadata-0``)."""
    dest = tmp / f"{TOPICS[SETS[name]]}-0"
    shutil.copytree(base / name, dest)
    return dest


# ------------------------------------------------------------------------------ text, line for line
@pytest.mark.rule("R-DEC-01", "R-DEC-02", "R-DEC-03", "R-DEC-04")
@pytest.mark.parametrize("base", _bases())
@pytest.mark.parametrize("name", sorted(SETS))
@pytest.mark.parametrize("how", ["kafka-flag", "decoder"])
def test_text_equals_kafka_line_for_line(base: Path, name: str, how: str) -> None:
    decoder = SETS[name]
    flag = [FLAGS[decoder]] if how == "kafka-flag" else ["--decoder", decoder]
    proc = _cli("dump", *KAFKA_4_0, *flag, *_logs(base, name), cwd=base.parent)
    assert proc.returncode == 0, proc.stderr
    ours, kafka = proc.stdout.splitlines(), _kafka_text(base, name)
    assert len(ours) == len(kafka) > 10
    for i, (mine, theirs) in enumerate(zip(ours, kafka, strict=True)):
        assert mine == theirs, f"{name} line {i + 1}:\n ours:  {mine}\n kafka: {theirs}"


@pytest.mark.parametrize("base", _bases())
@pytest.mark.parametrize("name", sorted(SETS))
def test_decode_chooses_the_decoder_by_topic(base: Path, name: str, tmp_path: Path) -> None:
    part = _as_topic(tmp_path, base, name)
    assert decoder_for_path(part / "00000000000000000000.log") == SETS[name]
    proc = _cli("dump", *KAFKA_4_0, "--decode", part.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    keep = ("baseOffset: ", "| offset: ", "Log starting offset")
    ours = [line for line in proc.stdout.splitlines() if line.startswith(keep)]
    kafka = [line for line in _kafka_text(base, name) if line.startswith(keep)]
    assert ours == kafka and len(kafka) > 10


def test_share_group_state_flag_was_refused_before_and_is_accepted() -> None:
    proc = _cli("dump", "--help")
    assert "--share-group-state-decoder" in proc.stdout and "--remote-log-metadata-decoder" in proc.stdout
    assert "remote-log-metadata" in proc.stdout


# ------------------------------------------------------------------------------------------ JSON
def _kafka_payloads(base: Path, name: str) -> dict[int, tuple[str | None, str]]:
    """offset -> (key text or None, payload text) as Kafka printed them."""
    out = {}
    for line in _kafka_text(base, name):
        if line.startswith("| offset: "):
            off = int(line.split()[2])
            rest = line.split(" headerKeys: [] ", 1)[1]
            key = None
            if rest.startswith("key: "):
                key, _, rest = rest[len("key: "):].partition(" payload: ")
            else:
                rest = rest[len("payload: "):]
            out[off] = (key, rest)
    return out


_SEGMENT_ID = re.compile(r"topicIdPartition=([\w-]+):(.+)-(\d+), id=([\w-]+)\}")


def _remote_fields(text: str) -> dict[str, str]:
    """The ``name=value`` pairs of Kafka's toString, nested ids flattened (read independently of
    kafkalog's code, from Kafka's printed text)."""
    fields: dict[str, str] = {}
    m = _SEGMENT_ID.search(text)
    if m:
        fields["topicId"], fields["topic"], fields["partition"], fields["segmentId"] = m.groups()
        text = text[: m.start()] + text[m.end():]
    for k, v in re.findall(r"(\w+)=(\{[^}]*\}|Optional\[[^\]]*\]|[^,{}]+)", text):
        fields.setdefault(k, v)
    return fields


_SEGMENT_STATES = ["COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"]
_PARTITION_STATES = ["DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED"]


def _check_remote_json(value: dict[str, Any], kafka: str) -> None:
    k = _remote_fields(kafka)
    d = value["data"]
    tip = d["topicIdPartition"] if "topicIdPartition" in d else d["remoteLogSegmentId"]["topicIdPartition"]
    if kafka.startswith("RemotePartitionDeleteMetadata{"):
        assert value["type"] == "REMOTE_PARTITION_DELETE_METADATA_RECORD"
        tid, topic_part = k["topicPartition"].split(":")
        assert (tip["id"], f"{tip['name']}-{tip['partition']}") == (tid, topic_part)
        assert _PARTITION_STATES[d["remotePartitionDeleteState"]] == k["state"]
    else:
        assert (tip["id"], tip["name"], str(tip["partition"])) == (k["topicId"], k["topic"], k["partition"])
        assert d["remoteLogSegmentId"]["id"] == k["segmentId"]
        assert _SEGMENT_STATES[d["remoteLogSegmentState"]] == k["state"]
        custom = d["customMetadata"]
        assert k["customMetadata"] == ("Optional.empty" if custom is None else f"Optional[CustomMetadata{{{len(_b64(custom))} bytes}}]")
    assert (str(d["brokerId"]), str(d["eventTimestampMs"])) == (k["brokerId"], k["eventTimestampMs"])
    if kafka.startswith("RemoteLogSegmentMetadata{"):
        assert value["type"] == "REMOTE_LOG_SEGMENT_METADATA_RECORD"
        for f in ("startOffset", "endOffset", "maxTimestampMs", "segmentSizeInBytes"):
            assert str(d[f]) == k[f], f
        epochs = "{" + ", ".join(f"{e['leaderEpoch']}={e['offset']}" for e in d["segmentLeaderEpochs"]) + "}"
        assert epochs == k["segmentLeaderEpochs"]
        assert d.get("txnIndexEmpty", False) == (k["txnIdxEmpty"] == "true")
    elif kafka.startswith("RemoteLogSegmentMetadataUpdate{"):
        assert value["type"] == "REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD"


def _b64(s: str) -> bytes:
    import base64

    return base64.b64decode(s)


@pytest.mark.rule("R-DEC-06")
@pytest.mark.parametrize("base", _bases())
@pytest.mark.parametrize("name", sorted(SETS))
def test_json_decoded_fields_agree_with_kafka(base: Path, name: str, tmp_path: Path) -> None:
    part = _as_topic(tmp_path, base, name)
    proc = _cli("dump", *KAFKA_4_0, "--json", "--decode", part.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    kafka_lines = read_jsonl(base / "dump" / f"{name}.jsonl")
    assert len(got) == len(kafka_lines)
    payloads = _kafka_payloads(base, name)
    records = 0
    for g, k in zip(got, kafka_lines, strict=True):
        extra = {key: g.pop(key) for key in ("decodedKey", "decodedValue") if key in g}
        g["file"] = f"{name}/{g['file']}"
        assert g == k  # the rest is Kafka's canonical JSON, unchanged
        if k["type"] != "record":
            assert not extra
            continue
        records += 1
        key_text, payload = payloads[k["offset"]]
        if SETS[name] == "share-group-state":
            assert extra["decodedKey"] == json.loads(key_text)
            assert extra["decodedValue"] == (None if payload == "<DELETE>" else json.loads(payload))
        else:
            assert extra["decodedKey"] is None and key_text is None
            _check_remote_json(extra["decodedValue"], payload)
    assert records == len(payloads) > 5


@pytest.mark.rule("R-DEC-02")
def test_share_group_state_value_is_labelled_type() -> None:
    """Kafka 4.0.0 prints ``{"type":"<value version>",...}`` for the value, unlike --offsets-decoder."""
    path = BUNDLED / "sharegroupstate-0" / "00000000000000000000.log"
    from kafkalog.format.records.stream import LogReader

    with LogReader(path) as reader:
        first = next(r for b in reader.batches() for r in b.records())
    d = decode(None, first, decoder="share-group-state", release="4.0")
    assert list(d.value) == ["type", "data"] and d.value["type"] == "0"
    assert list(d.key) == ["type", "data"]
    # Kafka 4.1 on labels it "version" and reads another layout (an int32 SnapshotEpoch, two
    # timestamps), which these 4.0 bytes do not fit
    with pytest.raises(MalformedInternalRecordError, match="from value's buffer"):
        decode(None, first, decoder="share-group-state", release="4.1.2")


# --------------------------------------------------------------------------- refused values
def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _compact_string(s: str) -> bytes:
    b = s.encode()
    return _uvarint(len(b) + 1) + b


TOPIC_ID = bytes(range(16))
SEGMENT_ID = bytes(range(16, 32))


def _segment_id() -> bytes:
    # RemoteLogSegmentIdEntry { TopicIdPartitionEntry { name, id, partition, tags }, id, tags }
    return _compact_string("orders") + TOPIC_ID + struct.pack(">i", 3) + b"\x00" + SEGMENT_ID + b"\x00"


def _segment_value(start: int = 0, end: int = 9, epochs: list[tuple[int, int]] | None = None, state: int = 0) -> bytes:
    epochs = [(0, 0)] if epochs is None else epochs
    body = _segment_id() + struct.pack(">qqiqq", start, end, 1, 5, 6)
    body += _uvarint(len(epochs) + 1) + b"".join(struct.pack(">iq", e, o) + b"\x00" for e, o in epochs)
    body += struct.pack(">i", 512) + b"\x00" + struct.pack(">b", state) + b"\x00"  # null custom metadata, no tags
    return b"\x01\x00\x00" + body


def _update_value(state: int) -> bytes:
    return b"\x01\x01\x00" + _segment_id() + struct.pack(">iq", 1, 6) + b"\x00" + struct.pack(">b", state) + b"\x00"


def _delete_value(state: int) -> bytes:
    tip = _compact_string("orders") + TOPIC_ID + struct.pack(">i", 3) + b"\x00"
    return b"\x01\x02\x00" + tip + struct.pack(">iqb", 1, 6, state) + b"\x00"


def _text(value: bytes | None, offset: int = 7) -> str:
    return record_text(None, Record(offset, 0, None, value, ()), decoder="remote-log-metadata")


def test_remote_log_metadata_values_read_back() -> None:
    tid = "AAECAwQFBgcICQoLDA0ODw"
    sid = "EBESExQVFhcYGRobHB0eHw"
    assert _text(_segment_value(epochs=[(5, 7), (2, 1), (5, 8)])) == (
        f" payload: RemoteLogSegmentMetadata{{remoteLogSegmentId=RemoteLogSegmentId{{topicIdPartition={tid}:orders-3, "
        f"id={sid}}}, startOffset=0, endOffset=9, brokerId=1, maxTimestampMs=5, eventTimestampMs=6, "
        "segmentLeaderEpochs={2=1, 5=8}, segmentSizeInBytes=512, customMetadata=Optional.empty, "
        "state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}"
    )
    assert _text(_delete_value(2)) == (
        f" payload: RemotePartitionDeleteMetadata{{topicPartition={tid}:orders-3, state=DELETE_PARTITION_FINISHED, "
        "eventTimestampMs=6, brokerId=1}"
    )


@pytest.mark.rule("R-DEC-05")
@pytest.mark.parametrize(("value", "message", "error"), [
    # the messages of Kafka's exceptions (AbstractApiMessageSerde, the storage api's constructors)
    (b"\x00\x00\x00", "Could not deserialize metadata record with frame version 0. Note that upgrades from the "
     "preview release of KRaft in 2.8 to newer versions are not supported.", UnknownRecordVersionError),
    (b"\x01\x07\x00", "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 7", UnknownRecordTypeError),
    (b"\x01\x01\x05" + b"\x00" * 8, "Failed to deserialize record with type 1", UnknownRecordVersionError),
    (_update_value(1)[:-5], "Failed to deserialize record with type 1", MalformedInternalRecordError),
    (_update_value(1) + b"\x00", "Found 1 byte(s) of garbage after 1", MalformedInternalRecordError),
    (_update_value(9), "state can not be null", MalformedInternalRecordError),
    (_segment_value(state=4), "state can not be null", MalformedInternalRecordError),
    (_delete_value(3), "null", MalformedInternalRecordError),
    (_segment_value(start=-1), "Unexpected start offset = -1. StartOffset for a remote segment cannot be negative", None),
    (_segment_value(start=10, end=9), "Unexpected end offset = 9. EndOffset for a remote segment cannot be less "
     "than startOffset = 10", None),
    (_segment_value(epochs=[]), "segmentLeaderEpochs can not be null or empty", None),
    (None, 'Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
     '"org.apache.kafka.common.record.Record.value()" is null', None),
])
def test_remote_log_metadata_refused_like_kafka(value: bytes | None, message: str, error: type | None) -> None:
    assert _text(value) == f" payload: Error at offset 7, skipping. {message}"
    with pytest.raises(error or InternalRecordError) as e:
        decode(None, Record(7, 0, None, value, ()), decoder="remote-log-metadata", file="f.log", position=99)
    assert e.value.offset == 7 and e.value.position == 99 and e.value.file == "f.log"


def test_remote_log_metadata_mutations_never_crash() -> None:
    """Every one-byte change and every cut of real values: decoded or refused, never another exception."""
    from kafkalog.format.records.stream import LogReader

    values = []
    for log in sorted((BUNDLED / "remotelogmetadata-0").glob("*.log")):
        with LogReader(log) as reader:
            values += [r.value for b in reader.batches() for r in b.records()]
    tried = 0
    for v in values[:4]:
        for i in range(len(v)):
            for new in (v[:i], v[:i] + bytes([v[i] ^ 0xFF]) + v[i + 1:], v[:i] + b"\x80" + v[i + 1:]):
                try:
                    decode(None, Record(1, 0, None, new, ()), decoder="remote-log-metadata")
                except InternalRecordError as e:
                    assert e.kafka_text and e.kafka_text.startswith("Error at offset 1, skipping. ")
                tried += 1
    assert tried > 500


@pytest.mark.rule("R-DEC-01", "R-DEC-02")
def test_share_group_state_unreadable_records_like_kafka() -> None:
    def text(key: bytes | None, value: bytes | None) -> str:
        return record_text(None, Record(7, 0, key, value, ()), decoder="share-group-state")

    key = b"\x00\x00" + struct.pack(">h", 1) + b"g" + TOPIC_ID + struct.pack(">i", 2)
    assert text(key, None) == ' key: {"type":"0","data":{"groupId":"g","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":2}} payload: <DELETE>'
    assert text(b"\x00\x05" + key[2:], None) == " key: Unknown record type 5 at offset 7, skipping."
    assert text(b"\x00", None) == " key: Error at offset 7, skipping. Could not read version from key's buffer."
    assert text(key, b"\x00") == " key: Error at offset 7, skipping. Could not read version from value's buffer."
    with pytest.raises(MalformedInternalRecordError, match="share group state topic decoder"):
        text(None, b"\x00\x00")
