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
            files.append(line[len("Dumping "):])
            continue
        if not line.startswith("| offset: ") or " key: {" not in line or "__consumer_offsets" not in files[-1]:
            continue
        at = line.index(" key: {") + len(" key: ")
        key, end = _JSON.raw_decode(line, at)
        payload = line[end + len(" payload: "):]
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
            meta["protocolType"], meta["protocol"], meta["generation"], meta["leader"]
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
    _sets(SHARED / "golden-real") or [pytest.param("<none>", marks=pytest.mark.skip(reason=f"{SHARED}/golden-real is absent"))],
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
    from kafkalog.internal.schemas import OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE, construct_for

    def key(group: str, topic: str, p: int) -> bytes:
        return b"\x00\x01" + construct_for(OFFSET_COMMIT_KEY, 1).build({"group": group, "topic": topic, "partition": p})

    def value(offset: int) -> bytes:
        return b"\x00\x03" + construct_for(OFFSET_COMMIT_VALUE, 3).build(
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
    assert len(result.errors) == 1 and "position 0, offset 0" in result.errors[0] and "unknown record type 99" in result.errors[0]


def test_missing_dir() -> None:
    with pytest.raises(FileNotFoundError):
        read_groups(SHARED / "no-such-dir-here")


def test_describe_groups_table() -> None:
    from kafkalog.tools.groups import describe_groups

    text = describe_groups(read_groups(GOLDEN / "real" / "zk-danielmorales9-kafkafun"))
    lines = text.splitlines()
    assert lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert lines[1].split() == ["my-first-app", "first", "0", "7", "9", "2", "-", "-", "-"]
    assert "third: classic group, state Empty" in text
