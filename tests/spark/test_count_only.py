"""An empty schema (``schema(StructType())``) reads row counts only: ``count()`` equals the number
of records in Kafka's dumps, with offset bounds, compacted and legacy data and read_committed."""

from __future__ import annotations

import json

from pyspark.sql.types import StructType

from helpers import GOLDEN, read_jsonl

from ._support import dump_batches, expected_rows
from .test_golden import _committed

LOGDIR = GOLDEN / "kafka" / "logdir"


def _count(spark, path: str, **options: str) -> int:  # noqa: ANN001 - fixture
    df = spark.read.format("kafkalog").schema(StructType([])).options(**options).load(path)
    assert df.columns == []
    return df.count()


def test_count_with_no_columns_equals_kafkas_dump(spark) -> None:  # noqa: ANN001 - fixture
    lines = read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")
    every = expected_rows(dump_batches(lines))
    # compacted sets have batches with fewer records than offsets; legacy-0 holds magic 0/1 messages
    assert _count(spark, str(LOGDIR), includeInternalTopics="true") == len(every)
    golden = [o for t, _, o in every if t == "golden"]
    start = sorted(golden)[len(golden) // 2] + 1  # inside a batch: the batch at the bound is decoded
    bounded = _count(spark, str(LOGDIR / "golden-0"), startingOffsets=json.dumps({"golden": {"0": start}}))
    assert bounded == sum(1 for o in golden if o >= start)


def test_count_with_no_columns_under_read_committed(spark) -> None:  # noqa: ANN001 - fixture
    expected, _ = _committed(dump_batches(read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"), "transactional-0/"))
    assert _count(spark, str(LOGDIR / "transactional-0"), isolationLevel="read_committed") == len(expected)
