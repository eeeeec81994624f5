"""``kafkalog info`` against Kafka's dump of the same files: for every golden-real set (bundled and
../shared) each partition's first and last offsets, end offset and timestamps; the missing ``.log``
files of cp760's customers-0 and products-0; open transactions of golden/kafka's transactional-0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import GOLDEN, KAFKA_INTERNAL_TOPICS, SHARED, log_starts, need_shared, read_jsonl, real_set_root, real_sets
from kafkalog.tools.cli import main

SETS = [pytest.param(s, e, id=f"bundled-{n}") for n, s, e in real_sets(GOLDEN / "real")]
SHARED_SETS = [pytest.param(s, e, id=f"shared-{n}", marks=pytest.mark.shared) for n, s, e in real_sets(SHARED / "golden-real")]


def _info(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[tuple[str, int], dict]]:
    code = main(["info", "--json", *args])
    out = capsys.readouterr().out
    lines = [json.loads(line) for line in out.splitlines()]
    return code, {(o["topic"], o["partition"]): o for o in lines}


def _kafka_partitions(expected: list[dict]) -> dict[tuple[str, int], dict]:
    """Per partition, from Kafka's dump: first batch's base offset, last batch's last offset, and the
    largest batch max timestamp."""
    out: dict[tuple[str, int], dict] = {}
    for o in expected:
        if o["type"] != "batch" or not o["file"].endswith(".log"):
            continue
        topic, _, part = o["file"].rsplit("/", 2)[-2].rpartition("-")
        p = out.setdefault((topic, int(part)), {"first": o["baseOffset"], "max_ts": -1, "segment": int(o["file"].rsplit("/", 1)[-1].split(".")[0])})
        p["last"] = o["lastOffset"]
        p["max_ts"] = max(p["max_ts"], o["maxTimestamp"])
    return out


@pytest.mark.rule("R-VAL-10")
@pytest.mark.rule("R-VAL-11")
@pytest.mark.parametrize("set_dir,expected_file", SETS + SHARED_SETS)
def test_offsets_and_times_are_kafkas(set_dir: Path, expected_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expected = read_jsonl(expected_file)
    root = real_set_root(set_dir, expected)
    code, got = _info(capsys, str(root), "--include-internal")
    assert code == 0
    kafka = _kafka_partitions(expected)
    assert kafka, "the set has records"
    starts = log_starts(root)
    for tp, k in kafka.items():
        g = got[tp]
        assert (g["firstOffset"], g["lastOffset"], g["endOffset"]) == (k["first"], k["last"], k["last"] + 1), tp
        # where a consumer's "earliest" starts: the checkpoint's entry, never below the first segment
        assert g["logStartOffset"] == max(starts.get(tp, k["segment"]), k["segment"]), tp
        assert g["lastTimestamp"] == k["max_ts"], tp
        assert g["segments"] >= 1 and g["bytes"] > 0
    for tp, g in got.items():
        if tp not in kafka:
            assert g["lastOffset"] is None, tp  # a partition without batches has no offsets to report
    # without --include-internal: the same lines less those of Kafka's internal topics, as the other readers
    code, default = _info(capsys, str(root))
    assert code == 0 and default == {tp: g for tp, g in got.items() if tp[0] not in KAFKA_INTERNAL_TOPICS}


def test_cp760_flags_the_partitions_whose_log_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    code, got = _info(capsys, str(data), "--include-internal")
    assert code == 0  # info reports; it does not fail
    flagged = {tp for tp, g in got.items() if g["problems"]}
    assert flagged == {("customers", 0), ("products", 0)}
    assert any("no .log" in p and "17081" in p for p in got[("customers", 0)]["problems"])  # the snapshot's offset: what was lost
    assert got[("customers", 0)]["dataLoss"][0]["start"] == 0 and got[("customers", 0)]["dataLoss"][0]["end"] == 17081
    assert got[("products", 0)]["dataLoss"][0]["end"] == 17097
    assert len(got) == 152


def test_open_transactions_from_the_snapshot_and_the_last_batches(capsys: pytest.CaptureFixture[str]) -> None:
    """transactional-0 ends with two transactions open: Kafka's dump of its last snapshot and batches says which."""
    expected = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["file"].startswith("transactional-0/")]
    open_txn: dict[int, int] = {}
    for o in expected:
        if o["type"] == "batch" and o["isTransactional"]:
            if o["isControlBatch"]:
                open_txn.pop(o["producerId"], None)
            else:
                open_txn.setdefault(o["producerId"], o["baseOffset"])
    assert len(open_txn) == 2
    _code, got = _info(capsys, str(GOLDEN / "kafka" / "logdir" / "transactional-0"))
    g = got[("transactional", 0)]
    assert {t["producerId"]: t["firstOffset"] for t in g["openTransactions"]} == open_txn
    assert g["lastStableOffset"] == min(open_txn.values())
    assert g["problems"] == []


def test_a_table_by_default_and_exit_3_without_partitions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(GOLDEN / "kafka" / "logdir")]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines()[0].split()[:3] == ["TOPIC", "PART", "SEGS"]
    assert any(line.startswith("transactional ") for line in out.out.splitlines())
    assert "partitions" in out.err
    assert main(["info", str(tmp_path)]) == 3
    assert "no Kafka partition" in capsys.readouterr().err
    assert main(["info", str(tmp_path / "absent")]) == 3


def test_a_torn_tail_and_missing_indexes_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scratch import ORDERS, make_scratch

    scratch = make_scratch(tmp_path / "scratch")
    _code, got = _info(capsys, str(scratch / ORDERS))
    problems = got[("orders", 0)]["problems"]
    assert len(problems) == 1 and "torn tail" in problems[0], problems
    assert len(got[("orders", 0)]["openTransactions"]) == 2  # no snapshot: found from the batch headers
