"""Acceptance: the DataFrame equals Kafka's own dump of every golden data set.

The expected rows come from the JSON dumps Kafka's classes wrote (never from kafkalog's reader):
every record of every non-control batch, with offset, key, value, timestamp, timestampType and
headers (null when a record has none, as Spark's Kafka source returns them).
"""

from __future__ import annotations

import collections
import functools
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from helpers import GOLDEN, lost_partitions, need_shared, read_jsonl, real_set_root, real_sets

from ._support import assert_same_rows, dump_batches, expected_rows, rows_of

#: everything Kafka's dump shows: internal topics, and records below the log start offset the files still hold
ALL = {"includeHeaders": "true", "includeInternalTopics": "true", "includeDeleted": "true"}


def _read_sets(spark, sets: list[tuple[str, Path]]) -> dict[str, dict]:  # noqa: ANN001 - fixture
    """Read every (name, log dir) in one Spark job (a union of scans) and split the rows by set."""
    # a set whose copy lacks some .log files is read with failOnDataLoss=false: the rest must be Kafka's
    # (that the default fails on them is tests/spark/test_data_loss.py's)
    lossy = {name: {"failOnDataLoss": "false"} if lost_partitions(root) else {} for name, root in sets}
    frames = [
        spark.read.format("kafkalog").options(**ALL, **lossy[name]).load(str(root)).withColumn("set", F.lit(name)) for name, root in sets
    ]
    table = functools.reduce(lambda a, b: a.unionByName(b), frames).toArrow()
    out = {}
    for name, _ in sets:
        mask = table.column("set").to_numpy(zero_copy_only=False) == name
        out[name] = rows_of(table.filter(mask))
    return out


def _check_real_sets(spark, base: Path) -> None:  # noqa: ANN001 - fixture
    sets, expected = [], {}
    for name, set_dir, dump in real_sets(base):
        lines = read_jsonl(dump)
        sets.append((name, real_set_root(set_dir, lines)))
        expected[name] = expected_rows(dump_batches(lines))
    assert sets, f"no sets with an expected dump under {base}"
    actual = _read_sets(spark, sets)
    for name, _ in sets:
        assert expected[name], name
        assert_same_rows(actual[name], expected[name])


def test_kafka_logdir_equals_kafkas_dump(spark) -> None:  # noqa: ANN001 - fixture
    lines = read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")
    table = spark.read.format("kafkalog").options(**ALL).load(str(GOLDEN / "kafka" / "logdir")).toArrow()
    expected = expected_rows(dump_batches(lines))
    assert len(expected) == 734
    assert_same_rows(rows_of(table), expected)
    assert table.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


@pytest.mark.cluster
def test_bundled_real_sets_equal_kafkas_dumps(spark) -> None:  # noqa: ANN001 - fixture
    _check_real_sets(spark, GOLDEN / "real")


@pytest.mark.shared
def test_shared_real_sets_equal_kafkas_dumps(spark) -> None:  # noqa: ANN001 - fixture
    _check_real_sets(spark, need_shared("golden-real"))


def _committed(batches: list[dict]) -> tuple[dict, int]:
    """Kafka's read_committed view of dumped batches, worked out from the dump's own markers:
    a transactional batch is aborted when its producer's next marker is ABORT, open when there is
    none; the last stable offset is the first offset of the oldest open transaction."""
    pending: dict[int, list[int]] = collections.defaultdict(list)
    outcome: dict[int, str] = {}
    for i, b in enumerate(batches):
        if not b["isTransactional"]:
            continue
        if b["isControlBatch"]:
            for j in pending.pop(b["producerId"], []):
                outcome[j] = b["records"][0]["controlType"]
        else:
            pending[b["producerId"]].append(i)
    open_firsts = [batches[js[0]]["baseOffset"] for js in pending.values() if js]
    lso = min(open_firsts) if open_firsts else batches[-1]["lastOffset"] + 1
    aborted = {id(batches[i]) for i, o in outcome.items() if o == "ABORT"}
    return expected_rows(batches, keep=lambda b, r: id(b) not in aborted and r["offset"] < lso), lso


@pytest.mark.cluster
def test_read_committed_returns_exactly_the_committed_records(spark) -> None:  # noqa: ANN001 - fixture
    lines = read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")
    batches = dump_batches(lines, "transactional-0/")
    expected, lso = _committed(batches)
    aborts = sum(1 for b in batches if b["isControlBatch"] and b["records"][0]["controlType"] == "ABORT")
    assert aborts and lso < batches[-1]["lastOffset"]  # the data set has aborted and open transactions
    table = (
        spark.read.format("kafkalog").option("isolationLevel", "read_committed").option("includeHeaders", "true")
        .load(str(GOLDEN / "kafka" / "logdir" / "transactional-0")).toArrow()
    )
    actual = rows_of(table)
    assert_same_rows(actual, expected)
    assert max(o for _, _, o in actual) < lso
    assert len(expected_rows(batches)) > len(expected)  # read_uncommitted would return more
