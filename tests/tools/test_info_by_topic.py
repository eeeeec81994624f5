"""``kafkalog info``'s ``-t``/``-p`` filters and ``--by topic`` totals against Kafka's dump of
golden/kafka/logdir, and ``info --tiered`` on encrypted segments without their key (the end offset
unknown, the missing key said once)."""

from __future__ import annotations

import json

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog.tools.cli import main

LOGDIR = GOLDEN / "kafka" / "logdir"
AIVEN = GOLDEN / "tiered" / "aiven"
KEY = f"key1={AIVEN / 'keys' / 'private.pem'}"


def _json_lines(capsys: pytest.CaptureFixture[str]) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_topic_and_partition_filters(capsys: pytest.CaptureFixture[str]) -> None:
    on_disk = {(d.name.rpartition("-")[0], int(d.name.rpartition("-")[2])) for d in LOGDIR.iterdir() if d.is_dir()}
    assert main(["info", "--json", str(LOGDIR), "-t", "compacted", "-t", "golden"]) == 0
    assert {(o["topic"], o["partition"]) for o in _json_lines(capsys)} == {tp for tp in on_disk if tp[0] in ("compacted", "golden")}
    assert main(["info", "--json", str(LOGDIR), "-p", "1"]) == 0
    assert {(o["topic"], o["partition"]) for o in _json_lines(capsys)} == {tp for tp in on_disk if tp[1] == 1}
    assert main(["info", str(LOGDIR), "-t", "no-such-topic"]) == 3
    assert "matches the -t/-p given" in capsys.readouterr().err


def test_by_topic_sums_the_partitions_as_kafkas_dump_has_them(capsys: pytest.CaptureFixture[str]) -> None:
    """Per topic: partitions and segments on disk, bytes of the .log files, the offsets from each
    partition's log start (its first segment's base offset: no checkpoint here) to its end (one past
    the last batch in Kafka's dump), and the largest batch timestamp."""
    want: dict[str, dict] = {}
    batches = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["type"] == "batch" and o["file"].endswith(".log")]
    for d in sorted(p for p in LOGDIR.iterdir() if p.is_dir()):
        topic = d.name.rpartition("-")[0]
        logs = sorted(d.glob("*.log"))
        mine = [b for b in batches if b["file"].startswith(d.name + "/")]
        t = want.setdefault(topic, {"topic": topic, "partitions": 0, "segments": 0, "bytes": 0, "offsets": 0, "lastTimestamp": -1})
        t["partitions"] += 1
        t["segments"] += len(logs)
        t["bytes"] += sum(p.stat().st_size for p in logs)
        t["offsets"] += max(b["lastOffset"] for b in mine) + 1 - int(logs[0].stem)
        t["lastTimestamp"] = max(t["lastTimestamp"], *(b["maxTimestamp"] for b in mine))
    assert main(["info", "--json", "--by", "topic", str(LOGDIR)]) == 0
    got = _json_lines(capsys)
    assert [{k: o[k] for k in want[o["topic"]]} for o in got] == [want[t] for t in sorted(want)]
    assert all(o["partitionsWithProblems"] == 0 for o in got)
    assert main(["info", "--by", "topic", str(LOGDIR)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["TOPIC", "PARTS", "SEGS", "BYTES", "OFFSETS"]
    assert [line.split()[:5] for line in lines[1:]] == [[t, *(str(want[t][k]) for k in ("partitions", "segments", "bytes", "offsets"))]
                                                        for t in sorted(want)]


def test_tiered_without_its_key_shows_the_end_as_unknown_and_says_so_once(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("Crypto", reason="the tiered extra (pycryptodome) decrypts the encrypted segments")
    prefix = str(AIVEN / "encryption")
    assert main(["info", "--json", "--tiered", prefix]) == 0
    (keyless,) = _json_lines(capsys)
    assert keyless["endOffset"] is None
    assert len(keyless["problems"]) == 1 and "key pair 'key1'" in keyless["problems"][0] and "--private-key key1=FILE" in keyless["problems"][0]
    assert main(["info", "--tiered", prefix]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert row.split()[header.split().index("END")] == "?"
    # with the key: the end Kafka's dump gives the tiered segments (those below the broker's segment 190)
    kafka_end = 1 + max(o["lastOffset"] for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")
                        if o["type"] == "batch" and o["file"].startswith("golden-0/") and int(o["file"][9:29]) < 190)
    assert main(["info", "--json", "--tiered", prefix, "--private-key", KEY]) == 0
    (keyed,) = _json_lines(capsys)
    assert (keyed["endOffset"], keyed["problems"]) == (kafka_end, [])
