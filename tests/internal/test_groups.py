"""``kafkalog.tools.groups`` against Kafka's decoded dumps of the same ``__consumer_offsets`` partitions.

Kafka's text (kafka-dump-log ``--offsets-decoder``) is replayed independently here: per group and
topic-partition the latest offset commit wins and a tombstone removes it; per group the latest
group metadata wins and a tombstone removes it. ``read_groups`` must agree, and its lag must be
the partition's end (from Kafka's own batch dump) minus the committed offset.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import GOLDEN, SHARED, need_shared, read_jsonl
from kafkalog.format.records.v2 import RecordBatchBuilder
from kafkalog.tools.groups import groups_json, log_end_offset, read_groups

_JSON = json.JSONDecoder()


def _kafka_view(text: str) -> tuple[dict[tuple[str, str, int], int], dict[str, dict[str, Any] | None], list[str]]:
    """(latest live offset per (group, topic, partition), latest classic metadata per group, files)."""
    offsets: dict[tuple[str, str, int], int] = {}
    meta: dict[str, dict[str, Any] | None] = {}
    files: list[str] = []
    for line in text.splitlines():
        if line.startswith("Dumping "):
            files.append(line[len("Dumping ") :])
            continue
        if not line.startswith("| offset: ") or " key: {" not in line or "__consumer_offsets" not in files[-1]:
            continue
        at = line.index(" key: {") + len(" key: ")
        key, end = _JSON.raw_decode(line, at)
        payload = line[end + len(" payload: ") :]
        value = None if payload == "<DELETE>" else json.loads(payload)
        data = key["data"]
        if key["type"] in ("0", "1"):
            k = (data["group"], data["topic"], data["partition"])
            if value is None:
                offsets.pop(k, None)
            else:
                offsets[k] = value["data"]["offset"]
        elif key["type"] == "2":
            meta[data["group"]] = None if value is None else value["data"]
    return offsets, meta, files


def _root(set_dir: Path, first: str) -> Path:
    return next(Path(dp) for dp, _, _ in os.walk(set_dir) if (Path(dp) / first).is_file())


def _check(set_dir: Path, expected: Path) -> int:
    with gzip.open(expected, "rt", encoding="utf-8") as f:
        text = f.read()
    want_offsets, want_meta, files = _kafka_view(text)
    root = _root(set_dir, files[0])
    data_dir = (root / files[0]).parent.parent  # the data dir the partitions are in
    result = read_groups(data_dir)
    if not any("__consumer_offsets" in f for f in files):  # a KRaft metadata-only set
        assert result.groups == [] and result.errors == []
        return 0
    assert result.errors == []
    got_offsets = {(g.group_id, o.topic, o.partition): o.offset for g in result.groups for o in g.offsets}
    assert got_offsets == want_offsets
    by_id = {g.group_id: g for g in result.groups}
    for gid, meta in want_meta.items():
        g = by_id.get(gid)
        if meta is None:
            assert g is None or g.protocol_type is None, gid  # removed (kept only while offsets live)
            continue
        assert g is not None, gid
        assert (g.protocol_type, g.protocol, g.generation, g.leader) == (
            meta["protocolType"],
            meta["protocol"],
            meta["generation"],
            meta["leader"],
        )
        assert [m.member_id for m in g.members] == [m["memberId"] for m in meta["members"]]
        assert g.state == ("Stable" if meta["members"] else "Empty")
    groups_with_something = {k[0] for k in want_offsets} | {k for k, v in want_meta.items() if v is not None}
    assert set(by_id) == groups_with_something
    json.dumps(groups_json(data_dir))  # JSON-able
    return len(got_offsets)


def _sets(base: Path) -> list[str]:
    d = base / "expected-decoded"
    return sorted(p.name[: -len(".txt.gz")] for p in d.glob("*.txt.gz")) if d.is_dir() else []


@pytest.mark.parametrize("name", _sets(GOLDEN / "real"))
def test_bundled_groups_match_kafka(name: str) -> None:
    base = GOLDEN / "real"
    _check(base / name, base / "expected-decoded" / f"{name}.txt.gz")


@pytest.mark.shared
@pytest.mark.parametrize(
    "name",
    _sets(SHARED / "golden-real")
    or [pytest.param("<none>", marks=pytest.mark.skip(reason=f"{SHARED}/golden-real is absent"))],
)
def test_shared_groups_match_kafka(name: str) -> None:
    base = need_shared("golden-real")
    _check(base / name, base / "expected-decoded" / f"{name}.txt.gz")


def test_lag_against_log_end_offsets() -> None:
    """Lag = the partition's end (after its last batch, per Kafka's own dump) - committed offset."""
    name = "zk-danielmorales9-kafkafun"
    expected = read_jsonl(GOLDEN / "real" / "expected" / f"{name}.jsonl.gz")
    ends: dict[str, int] = {}
    for e in expected:
        if e["type"] == "batch":
            part = e["file"].split("/")[0]
            ends[part] = max(ends.get(part, 0), e["lastOffset"] + 1)
    data_dir = _root(GOLDEN / "real" / name, expected[0]["file"])
    result = read_groups(data_dir)
    checked = 0
    for g in result.groups:
        for o in g.offsets:
            end = ends.get(f"{o.topic}-{o.partition}")
            assert o.log_end_offset == end
            if end is not None:
                assert o.lag == end - o.offset
                checked += 1
        assert g.total_lag == sum(o.lag for o in g.offsets if o.lag is not None)
    assert checked > 0
    assert log_end_offset(data_dir / "first-0") == ends["first-0"]


def test_transactional_commits_and_tombstones(tmp_path: Path) -> None:
    """Transactional commits apply at COMMIT, vanish at ABORT; tombstones remove offsets and groups."""
    from kafkalog.format.records.control import ControlType
    from kafkalog.internal.messages import messages_of
    from kafkalog.internal.schemas import construct_for

    commit_key, commit_value = messages_of((4, 0)).group_coordinator[1]

    def key(group: str, topic: str, p: int) -> bytes:
        return b"\x00\x01" + construct_for(commit_key, 1).build({"group": group, "topic": topic, "partition": p})

    def value(offset: int) -> bytes:
        return b"\x00\x03" + construct_for(commit_value, 3).build(
            {"offset": offset, "leaderEpoch": 0, "metadata": "", "commitTimestamp": 1}
        )

    part = tmp_path / "__consumer_offsets-0"
    part.mkdir()
    out = b""
    b = RecordBatchBuilder(0)
    b.append(1, key("g", "t", 0), value(5))
    b.append(1, key("g", "t", 1), value(6))
    b.append(1, key("h", "t", 0), value(1))
    out += b.build()
    txn = RecordBatchBuilder(3, producer_id=9, producer_epoch=0, is_transactional=True)
    txn.append(2, key("g", "t", 0), value(50))
    out += txn.build()
    aborted = RecordBatchBuilder(4, producer_id=8, producer_epoch=0, is_transactional=True)
    aborted.append(2, key("g", "t", 1), value(60))
    out += aborted.build()
    plain = RecordBatchBuilder(5)
    plain.append(3, key("h", "t", 0), None)  # tombstone: group h has nothing left
    out += plain.build()
    for pid, ctype, base in ((9, ControlType.COMMIT, 6), (8, ControlType.ABORT, 7)):
        m = RecordBatchBuilder(base, producer_id=pid, producer_epoch=0, is_transactional=True, is_control=True)
        m.append_end_txn_marker(ctype, 0, 4)
        out += m.build()
    (part / "00000000000000000000.log").write_bytes(out)
    tpart = tmp_path / "t-0"
    tpart.mkdir()
    tb = RecordBatchBuilder(0)
    for i in range(70):
        tb.append(i, None, b"x")
    (tpart / "00000000000000000000.log").write_bytes(tb.build())
    result = read_groups(tmp_path)
    assert result.errors == []
    assert [g.group_id for g in result.groups] == ["g"]
    offs = {(o.topic, o.partition): (o.offset, o.lag) for o in result.groups[0].offsets}
    assert offs == {("t", 0): (50, 20), ("t", 1): (6, None)}
    assert result.groups[0].state == "Empty" and result.groups[0].protocol_type is None


def test_unreadable_records_are_reported(tmp_path: Path) -> None:
    part = tmp_path / "__consumer_offsets-3"
    part.mkdir()
    b = RecordBatchBuilder(0)
    b.append(1, b"\x00\x63\x00\x00", b"\x00\x00")
    (part / "00000000000000000000.log").write_bytes(b.build())
    result = read_groups(tmp_path)
    assert result.groups == []
    assert (
        len(result.errors) == 1
        and "position 0, offset 0" in result.errors[0]
        and "unknown record type 99" in result.errors[0]
    )


def test_missing_dir() -> None:
    with pytest.raises(FileNotFoundError):
        read_groups(SHARED / "no-such-dir-here")


def test_describe_groups_table() -> None:
    from kafkalog.tools.groups import describe_groups

    text = describe_groups(read_groups(GOLDEN / "real" / "zk-danielmorales9-kafkafun"))
    lines = text.splitlines()
    assert (
        " ".join(lines[0].split())
        == "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID"
    )
    assert lines[1].split() == ["my-first-app", "first", "0", "7", "9", "2", "-", "-", "-"]
    assert "third: classic group, state Empty" in text


# ------------------------------------------------------- share and streams groups (Kafka 4.1+)
def _kafka_records(dump: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The live records of a Kafka DumpLogSegments ``--offsets-decoder`` / ``--share-group-state-decoder``
    output: ``(key type, key JSON) -> value data``, the last value per key, tombstones removing it."""
    live: dict[tuple[str, str], dict[str, Any]] = {}
    for line in dump.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| offset: ") or " key: {" not in line:
            continue
        key, end = _JSON.raw_decode(line, line.index(" key: {") + len(" key: "))
        payload = line[end + len(" payload: ") :]
        k = (key["type"], json.dumps(key["data"], sort_keys=True))
        if payload == "<DELETE>":
            live.pop(k, None)
        else:
            live[k] = json.loads(payload)["data"]
    return live


def _by_type(live: dict[tuple[str, str], dict[str, Any]], rtype: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(json.loads(k), v) for (t, k), v in live.items() if t == rtype]


def _tasks_of(value: dict[str, Any]) -> dict[str, Any]:
    return {
        k: [{"subtopologyId": t["subtopologyId"], "partitions": t["partitions"]} for t in value[f"{k}Tasks"]]
        for k in ("active", "standby", "warmup")
    }


def test_share_and_streams_groups_match_kafka_44() -> None:
    """kafkalog groups on the records Kafka 4.4's own coordinators wrote lists the streams and share
    groups' members, tasks, topology and share-partition start offsets, as Kafka's DumpLogSegments
    prints those records (golden/kafka-4.4.0/dump/)."""
    base = GOLDEN / "kafka-4.4.0"
    offsets = _kafka_records(base / "dump" / "consumer_offsets-decoded.txt")
    state = _kafka_records(base / "dump" / "share_group_state-decoded.txt")
    doc = groups_json(base, release="4.4")
    assert doc["errors"] == []
    groups = {g["groupId"]: g for g in doc["groups"]}

    def member(gid: str, mid: str) -> dict[str, Any]:
        return next(m for m in groups[gid]["members"] if m["memberId"] == mid)

    checked = 0
    for key, v in _by_type(offsets, "19"):  # streams member metadata
        assert groups[key["groupId"]]["type"] == "streams"
        m = member(key["groupId"], key["memberId"])
        assert (m["processId"], m["clientId"], m["clientHost"], m["topologyEpoch"]) == (
            v["processId"],
            v["clientId"],
            v["clientHost"],
            v["topologyEpoch"],
        )
        checked += 1
    for key, v in _by_type(offsets, "21"):  # streams target assignment
        assert member(key["groupId"], key["memberId"])["targetTasks"] == _tasks_of(v)
        checked += 1
    for key, v in _by_type(offsets, "22"):  # streams current assignment
        m = member(key["groupId"], key["memberId"])
        assert m["currentTasks"] == _tasks_of(v) and m["memberEpoch"] == v["memberEpoch"]
        checked += 1
    for key, v in _by_type(offsets, "23"):  # streams topology
        g = groups[key["groupId"]]
        assert g["topologyEpoch"] == v["epoch"]
        assert g["topology"] == [
            {
                "subtopologyId": s["subtopologyId"],
                "sourceTopics": s["sourceTopics"],
                "sourceTopicRegex": s["sourceTopicRegex"],
                "repartitionSinkTopics": s["repartitionSinkTopics"],
                "repartitionSourceTopics": [t["name"] for t in s["repartitionSourceTopics"]],
                "stateChangelogTopics": [t["name"] for t in s["stateChangelogTopics"]],
            }
            for s in v["subtopologies"]
        ]
        checked += 1
    for key, v in _by_type(offsets, "10"):  # share member metadata
        assert groups[key["groupId"]]["type"] == "share"
        m = member(key["groupId"], key["memberId"])
        assert (m["clientId"], m["clientHost"], m["rackId"], m["subscription"]) == (
            v["clientId"],
            v["clientHost"],
            v["rackId"],
            v["subscribedTopicNames"],
        )
        checked += 1
    for key, v in _by_type(offsets, "14"):  # share member's current assignment
        m = member(key["groupId"], key["memberId"])
        assert m["assignment"] == [
            {"topic": t["topicId"], "partition": p} for t in v["assignedPartitions"] for p in t["partitions"]
        ]
        checked += 1
    want_state = {
        (k["groupId"], k["topicId"], k["partition"]): v for k, v in _by_type(state, "0") + _by_type(state, "1")
    }
    got_state = {(g["groupId"], p["topicId"], p["partition"]): p for g in doc["groups"] for p in g["sharePartitions"]}
    assert set(got_state) == set(want_state) and want_state  # the dump's tombstone removed the other one
    for k, v in want_state.items():
        p = got_state[k]
        assert (p["startOffset"], p["leaderEpoch"], p["snapshotEpoch"], p["stateEpoch"]) == (
            v["startOffset"],
            v["leaderEpoch"],
            v["snapshotEpoch"],
            v.get("stateEpoch"),
        )
        checked += 1
    assert checked == 7, checked  # every streams and share record type above is in the golden once

    text = subprocess.run(
        [sys.executable, "-m", "kafkalog", "groups", str(base)], capture_output=True, text=True, check=True
    ).stdout
    assert "s19000: streams group" in text and "s10000: share group" in text
    assert "subtopology s300106" in text and "start offset 1700030001003" in text


@pytest.mark.parametrize("release", ["4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"])
def test_groups_of_each_release(release: str) -> None:
    """Each release's records read with that release's decoders (--kafka-version), with no error."""
    res = read_groups(GOLDEN / f"kafka-{release}", release=release)
    assert res.errors == []
    kinds = {g.group_type for g in res.groups}
    assert kinds >= ({"classic", "consumer", "share"} | ({"streams"} if release >= "4.1" else set()))


def test_kafka_version_flag() -> None:
    """--kafka-version picks the release's layouts: Kafka 4.0's share-group records do not read as
    4.4's (exit 1, reported on stderr), do as 4.0's; an unknown release is a usage error."""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kafkalog", "groups", *args], capture_output=True, text=True, check=False
        )

    data = str(GOLDEN / "kafka-4.0.2")
    as_44, as_40, unknown = run(data), run("--kafka-version", "4.0", data), run("--kafka-version", "3.9", data)
    assert as_44.returncode == 1 and "__share_group_state-0" in as_44.stderr
    assert as_40.returncode == 0 and as_40.stderr == "" and "share partition" in as_40.stdout
    assert unknown.returncode == 2 and "unknown Kafka release '3.9'" in unknown.stderr


@pytest.mark.rule("R-KVER-01")
@pytest.mark.parametrize("release", ["4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0"])
def test_groups_auto_reads_each_release_as_its_records_say(release: str) -> None:
    """--kafka-version auto: each release's groups read with no error, as the release whose coordinator
    records they hold (4.0's share groups as 4.0, which the default 4.4 cannot read; the later ones as
    their own line, each having records only it and later releases know)."""
    res = read_groups(GOLDEN / f"kafka-{release}", release="auto")
    assert res.errors == []
    assert res.kafka_version == release.rsplit(".", 1)[0]
    assert res.to_json()["kafkaVersion"] == res.kafka_version
    proc = subprocess.run(
        [sys.executable, "-m", "kafkalog", "groups", "--kafka-version", "auto", "-v", str(GOLDEN / f"kafka-{release}")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0 and proc.stderr.startswith(f"kafkalog groups: read as Kafka {res.kafka_version} ")
