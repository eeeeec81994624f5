"""The writer: rows appended through kafkalog's Log (several tasks into one partition) read back unchanged."""

from __future__ import annotations

import collections

import pytest

from helpers import GOLDEN, read_jsonl, real_set_root
from kafka_partitioner_ref import kafka_python_partition
from kafkalog.format.files import kind_of
from kafkalog.tools.validate import verify
from kafkalog_spark import LayoutError, SourceOptionError
from kafkalog_spark.writer import WriteOptions

from ._support import assert_same_rows, dump_batches, expected_rows, rows_of

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
        ({"path": "/tmp/x", "numPartitions": "0"}, "numPartitions must be positive"),
        ({"path": "/tmp/x", "kafka.batch.size": "big"}, "kafka.batch.size expects an integer"),
        ({"path": "/tmp/x", "topic": ".."}, r"cannot write topic '\.\.': '\.\.' is not a valid topic name \(Topic\.java\)"),
        ({"path": "/tmp/x", "topic": "."}, r"'\.' is not a valid topic name"),
        ({"path": "/tmp/x", "topic": "a b"}, "characters other than ASCII letters, digits"),
        ({"path": "/tmp/x", "topic": "t" * 250}, "longer than 249 characters"),
    ],
)
def test_writer_options(options: dict, message: str) -> None:
    with pytest.raises((SourceOptionError, LayoutError), match=message):
        WriteOptions.parse(options)


@pytest.mark.rule("R-NAME-03")
def test_a_topic_column_kafka_refuses_is_not_written(spark, tmp_path) -> None:  # noqa: ANN001 - fixtures
    """A row whose topic is '..' would make '<log dir>/..-0', outside any topic: refused with Kafka's reason."""
    out = tmp_path / "logs"
    df = spark.createDataFrame([("..", b"v"), ("ok", b"w")], "topic string, value binary").coalesce(1)
    with pytest.raises(Exception, match=r"cannot write topic '\.\.': '\.\.' is not a valid topic name"):
        df.write.format("kafkalog").mode("append").save(str(out))
    assert not (tmp_path / "..-0").exists() and not (out / "..-0").exists()


@pytest.mark.rule("R-WR-08")
def test_default_partitioner_then_verify_and_read_back(spark, tmp_path) -> None:  # noqa: ANN001 - fixtures
    """Rows without a partition column: keyed ones go where kafka-python's (Kafka's) partitioner
    sends them, keyless ones spread; every partition dir written passes verify; read-back is equal."""
    keyed = [(f"user-{i}".encode(), b"v%05d" % i, None) for i in range(3000)]
    keyless = [(None, b"n%05d" % i, [("h", b"x")]) for i in range(2000)]
    df = spark.createDataFrame(keyed + keyless, "key binary, value binary, headers array<struct<key:string,value:binary>>").repartition(3)
    out = tmp_path / "logdir"
    (
        df.write.format("kafkalog").option("topic", "t").option("numPartitions", "4").option("compression", "lz4")
        .option("kafka.batch.size", "200").option("maxRecordsPerBatch", "100").option("config.segment.bytes", "2048")
        .mode("append").save(str(out))
    )
    dirs = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert dirs == ["t-0", "t-1", "t-2", "t-3"]
    for d in dirs:
        report = verify(str(out / d))
        assert report.findings == [], [str(f) for f in report.findings]
        assert len(list((out / d).glob("*.log"))) > 1
    got = spark.read.format("kafkalog").option("includeHeaders", "true").load(str(out)).toArrow().to_pylist()
    assert collections.Counter((r["key"], r["value"]) for r in got) == collections.Counter((k, v) for k, v, _ in keyed + keyless)
    for r in got:
        if r["key"] is not None:
            assert r["partition"] == kafka_python_partition(r["key"], 4), r
        else:
            assert r["headers"] == [{"key": "h", "value": b"x"}]
    assert len({r["partition"] for r in got if r["key"] is None}) > 1  # keyless rows are sticky, then switch

    # a second job without numPartitions counts the topic's dirs (4), so keys keep their partitions
    spark.createDataFrame([("user-7", "again")], "key string, value string").write.format("kafkalog").option("topic", "t").mode("append").save(str(out))
    again = spark.read.format("kafkalog").load(str(out)).where("value = CAST('again' AS BINARY)").collect()
    assert [r.partition for r in again] == [kafka_python_partition(b"user-7", 4)]


@pytest.mark.cluster
def test_a_dataframe_read_from_real_data_writes_back_unchanged(spark, tmp_path) -> None:  # noqa: ANN001 - fixtures
    """Two real broker data dirs read with format("kafkalog") and saved with the default save mode
    (the reader's offset and timestampType columns ignored, as Spark's Kafka sink ignores unknown
    columns): the copy verifies, holds only Kafka's files, and reads back as Kafka's own dump of
    the originals (offsets, keys, values, headers, timestamps per partition)."""
    want, roots = {}, []
    for name in ("cp760-flink-on-prem", "cp-latest-weebee"):
        lines = read_jsonl(GOLDEN / "real" / "expected" / f"{name}.jsonl.gz")
        roots.append(str(real_set_root(GOLDEN / "real" / name, lines)))
        want.update({k: v for k, v in expected_rows(dump_batches(lines)).items() if not k[0].startswith("__")})
    for topic, part in {k[:2] for k in want}:  # offsets from 0 without gaps: a copy can keep them
        offsets = sorted(o for t, p, o in want if (t, p) == (topic, part))
        assert offsets == list(range(len(offsets))), (topic, part)
    assert len(want) > 2000 and any(v[4] for v in want.values()) and any(v[3] == 1 for v in want.values())

    out = tmp_path / "copy"
    spark.read.format("kafkalog").option("includeHeaders", "true").load(roots).write.format("kafkalog").save(str(out))

    report = verify(str(out))
    assert report.findings == [], [str(f) for f in report.findings]
    assert {p.name for p in out.iterdir()} == {f"{t}-{p}" for t, p, _ in want}
    strays = [str(f) for f in out.rglob("*") if f.is_file() and kind_of(f) is None]
    assert strays == []  # no lock or temporary files beside Kafka's
    got = rows_of(spark.read.format("kafkalog").option("includeHeaders", "true").load(str(out)).toArrow())
    # the copy's batches are CreateTime: each record keeps the timestamp it was read with
    assert_same_rows({k: v[:3] + v[4:] for k, v in got.items()}, {k: v[:3] + v[4:] for k, v in want.items()})


class _ConnectWrite:
    """The state Spark Connect's writer sends to the server (pyspark.sql.connect.plan.WriteOperation)."""

    def __init__(self) -> None:
        self.source: str | None = None
        self.mode: str | None = None
        self.path: str | None = None


class _ConnectWriter:
    """Spark Connect's DataFrameWriter as far as the wrapper uses it (pyspark.sql.connect.readwriter):
    ``format`` and ``mode`` set ``_write.source`` / ``_write.mode`` (a None mode is not sent, and the
    server then uses errorifexists), and ``save`` sends the write."""

    sent: list[tuple[str | None, str | None, str | None]] = []

    def __init__(self) -> None:
        self._write = _ConnectWrite()

    def format(self, source: str) -> _ConnectWriter:
        self._write.source = source
        return self

    def mode(self, save_mode: str | None) -> _ConnectWriter:
        if save_mode is not None:
            self._write.mode = save_mode
        return self

    def save(self, path: str | None = None, format: str | None = None, mode: str | None = None, partitionBy=None, **options) -> None:  # noqa: A002, ANN001, N803
        self.mode(mode)
        if format is not None:
            self.format(format)
        self._write.path = path
        self.sent.append((self._write.source, self._write.mode, path))


def test_spark_connect_gets_the_same_default_save_mode() -> None:
    from kafkalog_spark.writer import append_by_default_on_connect

    append_by_default_on_connect(_ConnectWriter)
    append_by_default_on_connect(_ConnectWriter)  # idempotent
    _ConnectWriter.sent.clear()
    _ConnectWriter().format("kafkalog").save("out")
    _ConnectWriter().save("out", format="kafkalog", mode="errorifexists")
    _ConnectWriter().format("kafkalog").mode("overwrite").save("out")
    _ConnectWriter().format("parquet").save("out")
    assert _ConnectWriter.sent == [("kafkalog", "append", "out"), ("kafkalog", "append", "out"), ("kafkalog", "overwrite", "out"),
                                   ("parquet", None, "out")]
