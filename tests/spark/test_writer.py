"""The writer: rows appended through kafkalog's Log (several tasks into one partition) read back unchanged."""

from __future__ import annotations

import collections

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog_spark import LayoutError, SourceOptionError
from kafkalog_spark.writer import WriteOptions

from ._support import dump_batches, expected_rows, rows_of

SRC = GOLDEN / "kafka" / "logdir" / "golden-0"


def test_write_then_read_back(spark, tmp_path) -> None:  # noqa: ANN001 - fixtures
    want = expected_rows(dump_batches(read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"), "golden-0/"))
    src = spark.read.format("kafkalog").option("includeHeaders", "true").load(str(SRC))
    # six input partitions (one per segment) append concurrently to copy-0 and copy-1
    out = tmp_path / "logdir"
    (
        src.selectExpr("key", "value", "CAST(offset % 2 AS INT) AS partition", "timestamp", "headers")
        .write.format("kafkalog").option("topic", "copy").option("compression", "zstd").option("maxRecordsPerBatch", "10")
        .option("config.segment.bytes", "2048").mode("append").save(str(out))
    )
    assert len(list((out / "copy-0").glob("*.log"))) > 1  # segments rolled at 2048 bytes
    got = rows_of(spark.read.format("kafkalog").option("includeHeaders", "true").load(str(out)).toArrow())
    for p in (0, 1):
        offsets = sorted(o for _, part, o in got if part == p)
        assert offsets == list(range(len(offsets)))  # the leader assigned contiguous offsets
    assert collections.Counter(got.values()) == collections.Counter(want.values())
    with pytest.raises(Exception, match="append-only"):
        src.select("value").write.format("kafkalog").option("topic", "copy").mode("overwrite").save(str(out))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"path": "memory://x"}, "local directories only"),
        ({"path": "/tmp/x", "compression": "brotli"}, "compression must be one of"),
        ({"path": "/tmp/x", "config.segment.bytes": "10"}, "segment.bytes must be at least 14"),
        ({"path": "/tmp/x", "config.no.such": "1"}, "unknown or unsupported topic config"),
    ],
)
def test_writer_options(options: dict, message: str) -> None:
    with pytest.raises((SourceOptionError, LayoutError), match=message):
        WriteOptions.parse(options)
