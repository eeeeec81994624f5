"""Filter pushdown and pruning: results equal Spark's own filtering, pushed filters disappear
from the plan, and offset/timestamp filters open only the segments that can hold matching rows."""

from __future__ import annotations

import datetime as dt
import functools
import re
from typing import ClassVar

import fsspec
import pytest
from fsspec.implementations.local import LocalFileSystem
from pyspark.sql import functions as F
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

from helpers import GOLDEN, read_jsonl
from kafkalog_spark.filters import push_filters

from ._support import assert_same_rows, dump_batches, expected_rows, read_in_process, rows_of

LOGDIR = GOLDEN / "kafka" / "logdir"
T0 = 1_700_000_000_000  # golden-0's record timestamps are T0 + 0..414 ms


def _utc(ms: int, us: int = 0) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC) + dt.timedelta(microseconds=us)


class CountingFileSystem(LocalFileSystem):
    """The local filesystem under the protocol ``klcount``, recording every file it opens."""

    protocol = "klcount"
    opened: ClassVar[list[str]] = []

    def _open(self, path, mode="rb", **kwargs):  # noqa: ANN001, ANN202 - fsspec's signature
        CountingFileSystem.opened.append(path.rsplit("/", 1)[-1])
        return super()._open(path, mode, **kwargs)


@pytest.fixture(scope="module")
def dump() -> list[dict]:
    return read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")


@pytest.fixture
def counting() -> type[CountingFileSystem]:
    fsspec.register_implementation("klcount", CountingFileSystem, clobber=True)
    CountingFileSystem.opened.clear()
    return CountingFileSystem


@pytest.mark.cluster
def test_pushed_filters_match_spark_filtering(spark, dump) -> None:  # noqa: ANN001 - fixtures
    queries = {
        "offset >= 100 AND offset < 150": lambda t, p, o, ts: 100 <= o < 150,
        "offset IN (3, 60, 200, 999) AND partition = 0": lambda t, p, o, ts: o in (3, 60, 200, 999),
        f"timestamp >= '{_utc(T0 + 300).isoformat()}'": lambda t, p, o, ts: ts >= T0 + 300,
        f"timestamp > '{_utc(T0 + 300, 500).isoformat()}' AND timestamp <= '{_utc(T0 + 350).isoformat()}'": lambda t, p, o, ts: T0 + 300 < ts <= T0 + 350,
        "topic IN ('golden', 'nope') AND offset > 260": lambda t, p, o, ts: o > 260,
        "topic = 'other'": lambda t, p, o, ts: False,
    }
    expected_all = expected_rows(dump_batches(dump, "golden-0/"))
    frames = []
    for i, cond in enumerate(queries):
        # one load per query: Spark 4.3 lets two filtered scans of the same DataFrame in one plan
        # share the pushdown of the last one planned (both then return that scan's rows)
        df = spark.read.format("kafkalog").option("includeHeaders", "true").load(str(LOGDIR))
        q = df.where("topic = 'golden'").where(cond)
        plan = q._jdf.queryExecution().executedPlan().toString()
        for line in plan.splitlines():
            if " Filter " in line:  # every predicate was pushed: only Spark's null checks remain
                assert re.sub(r"isnotnull\([^)]*\)|AND|Filter|\*\(\d+\)|[+()\s-]", "", line) == "", plan
        frames.append(q.withColumn("q", F.lit(i)))
    table = functools.reduce(lambda a, b: a.unionByName(b), frames).toArrow()
    qcol = table.column("q").to_numpy()
    for i, pred in enumerate(queries.values()):
        want = {k: v for k, v in expected_all.items() if pred(k[0], k[1], k[2], v[2])}
        assert_same_rows(rows_of(table.filter(qcol == i)), want)


def test_offset_filter_opens_only_needed_segments(counting, dump) -> None:  # noqa: ANN001 - fixtures
    table, parts, rejected = read_in_process(
        {"path": f"klcount://{LOGDIR / 'golden-0'}", "includeHeaders": "true"},
        [GreaterThanOrEqual(("offset",), 160), LessThan(("offset",), 200)],
    )
    assert rejected == []
    logs = sorted(n for n in counting.opened if n.endswith(".log"))
    assert logs == ["00000000000000000146.log", "00000000000000000190.log"]
    assert {p.log.rsplit("/", 1)[-1] for p in parts} == set(logs)
    assert parts[0].start > 0  # the .index skipped batches before offset 160
    want = {k: v for k, v in expected_rows(dump_batches(dump, "golden-0/")).items() if 160 <= k[2] < 200}
    assert_same_rows(rows_of(table), want)


def test_timestamp_filter_opens_only_needed_segments(counting, dump) -> None:  # noqa: ANN001 - fixtures
    table, parts, rejected = read_in_process(
        {"path": f"klcount://{LOGDIR / 'golden-0'}", "includeHeaders": "true"}, [GreaterThan(("timestamp",), _utc(T0 + 330, 1))],
    )
    assert rejected == []
    logs = sorted(n for n in counting.opened if n.endswith(".log"))
    assert logs == ["00000000000000000190.log", "00000000000000000234.log"]  # older segments end before T0+330
    assert parts[0].start > 0  # the .timeindex skipped the batches before it
    want = {k: v for k, v in expected_rows(dump_batches(dump, "golden-0/")).items() if v[2] > T0 + 330}
    assert_same_rows(rows_of(table), want)


def test_starting_and_ending_offsets_open_only_needed_segments(counting, dump) -> None:  # noqa: ANN001 - fixtures
    table, _, _ = read_in_process(
        {"path": f"klcount://{LOGDIR}", "includeHeaders": "true", "startingOffsets": '{"golden": {"0": 60}}', "endingOffsets": '{"golden": {"0": 100}}', "subscribe": "golden"}
    )
    assert sorted(n for n in counting.opened if n.endswith(".log")) == ["00000000000000000051.log"]
    want = {k: v for k, v in expected_rows(dump_batches(dump, "golden-0/")).items() if 60 <= k[2] < 100}
    assert_same_rows(rows_of(table), want)


def test_push_filters_keeps_only_exact_filters() -> None:
    kept = [
        EqualTo(("topic",), "golden"), In(("partition",), (0, 1)), GreaterThan(("offset",), 5),
        LessThanOrEqual(("timestamp",), _utc(T0)), In(("topic",), ("a", "b")),
    ]
    returned = [
        Not(EqualTo(("offset",), 3)), IsNotNull(("key",)), EqualTo(("value",), b"x"), EqualTo(("offset",), "5"),
        EqualTo(("headers", "key"), "h"), GreaterThan(("topic",), 3),
    ]
    rf, rejected = push_filters(kept + returned)
    assert rejected == returned
    assert rf.offset.lo == 6 and rf.partition.values == {0, 1} and rf.timestamp_ms.hi == T0
    assert rf.admits_topic("golden") is False  # 'golden' is not in ('a', 'b'): both filters hold together
    rf2, _ = push_filters([GreaterThanOrEqual(("timestamp",), _utc(T0, 1)), LessThan(("timestamp",), _utc(T0 + 5, 1))])
    assert (rf2.timestamp_ms.lo, rf2.timestamp_ms.hi) == (T0 + 1, T0 + 5)  # µs bounds rounded to the ms they admit
    rf3, _ = push_filters([EqualTo(("timestamp",), _utc(T0, 1))])
    assert rf3.timestamp_ms.empty
