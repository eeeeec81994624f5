"""Spark's ``kafkalog`` source against Spark's own Parquet reader on the same records, in one run.

    .venv/bin/python bench/spark.py [--gigabytes 2] [--cache DIR] [--repeat 2]

A partition dir of at least ``--gigabytes`` of uncompressed v2 batches (1,000 records each,
16-byte keys, 100-byte random values: the workload of ``../shared/notes/measurements.md``) is
generated once under ``--cache`` (default ``$TMPDIR/kafkalog-bench-spark``) through kafkalog's
``Log``, and the same records are written once to Parquet (snappy, as Spark writes it by default)
beside it; later runs reuse both. Then, in one ``local[N]`` session, ``count()`` and
``sum(length(value))`` run through ``format("kafkalog")`` (the full Kafka schema, and with the
schema narrowed to the columns the query uses, which is how a Python source is pruned: none for
``count()``, ``value`` for the sum) and
through ``format("parquet")``. A third source, ``floor``, is a Python data source that decodes
nothing: it returns prebuilt Arrow columns of the same shape, one input partition per kafkalog
partition and the same number of rows, so its time is what Spark's Python Data Source API costs
before any decoding (the ratio kafkalog can reach at best). Each figure is the best of ``--repeat`` runs after a warm-up run.
Records/s per core divides by Spark's default parallelism; the ratio is kafkalog's time over
Parquet's for the same query (1.0 = as fast, 3.0 = three times slower).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDS_PER_BATCH = 1000
KEY_BYTES = 16
VALUE_BYTES = 100
TOPIC = "bench"
#: Segment size of the generated log (Kafka's default is 1 GiB; smaller segments give Spark more input partitions).
SEGMENT_BYTES = 256 * 1024 * 1024


def generate_log(root: Path, gigabytes: float) -> tuple[Path, int]:
    """Write ``<root>/bench-0`` through kafkalog's Log (as a leader appends) until it holds at
    least ``gigabytes`` GB; returns (partition dir, records). Reused when ``done.json`` says so."""
    from kafkalog import RecordBatchBuilder
    from kafkalog.log.unified import Log, LogConfig

    part = root / "log" / f"{TOPIC}-0"
    marker = root / "log" / "done.json"
    want = int(gigabytes * 1e9)
    if marker.exists():
        info = json.loads(marker.read_text())
        if info["bytes"] >= want:
            return part, info["records"]
    shutil.rmtree(root / "log", ignore_errors=True)
    part.parent.mkdir(parents=True)
    config = LogConfig.from_properties({"segment.bytes": str(SEGMENT_BYTES)})
    written = records = 0
    with Log.open(str(part), config, sync=False, writable=True) as lg:
        while written < want:
            values = os.urandom(VALUE_BYTES * RECORDS_PER_BATCH)
            b = RecordBatchBuilder(0)
            for i in range(RECORDS_PER_BATCH):
                n = records + i
                b.append(1_700_000_000_000 + n, n.to_bytes(KEY_BYTES, "big"), values[i * VALUE_BYTES : (i + 1) * VALUE_BYTES])
            batch = b.build()
            lg.append(batch)  # one batch per append, as a leader takes a produce request
            records += RECORDS_PER_BATCH
            written += len(batch)
            if records % 1_000_000 == 0:
                print(f"\rgenerating: {written / 1e9:.2f} / {want / 1e9:.2f} GB", end="", file=sys.stderr)
        lg.flush()
    print(file=sys.stderr)
    marker.write_text(json.dumps({"bytes": written, "records": records}))
    return part, records


def generate_parquet(root: Path, part: Path) -> Path:
    """The log's records (the Kafka schema's columns) as Parquet, one file per segment. Reused when present."""
    import pyarrow.parquet as pq

    from kafkalog import LogReader
    from kafkalog.fast.arrow import to_arrow

    out = root / "parquet"
    marker = root / "parquet.done"
    if marker.exists() and marker.read_text() == (root / "log" / "done.json").read_text():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    for log_file in sorted(part.glob("*.log")):
        with open(log_file, "rb") as f, LogReader(f, name=str(log_file)) as reader:
            writer = None
            for rb in to_arrow(reader.batches(), topic=TOPIC, partition=0, columns=columns, max_rows=1 << 20):
                if writer is None:
                    writer = pq.ParquetWriter(out / f"{log_file.stem}.parquet", rb.schema, compression="snappy")
                writer.write_batch(rb, row_group_size=1 << 20)
            if writer is not None:
                writer.close()
        print(f"\rparquet: {log_file.name}", end="", file=sys.stderr)
    print(file=sys.stderr)
    marker.write_text((root / "log" / "done.json").read_text())
    return out


#: kafkalog's source -> the no-decoding source with the same columns
FLOOR_OF = {"kafkalog": "floor (Python data source, no decoding)", "kafkalog, schema narrowed": "floor, schema narrowed"}


def floor_source(rows_per_partition: list[int]) -> type:
    """A Python data source that decodes nothing: each input partition yields its share of the
    rows as prebuilt Arrow batches of the requested kafkalog columns (32,768 rows at most)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from kafkalog_spark.arrow import arrow_schema

    class FloorReader(DataSourceReader):
        def __init__(self, schema: object) -> None:
            self.columns = [f.name for f in schema.fields]  # type: ignore[attr-defined]

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(n) for n in rows_per_partition]

        def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
            import numpy as np
            import pyarrow as pa

            step = 32_768
            full = {
                "key": pa.array([bytes(KEY_BYTES)] * step, pa.binary()),
                "value": pa.array([bytes(VALUE_BYTES)] * step, pa.binary()),
                "topic": pa.array([TOPIC] * step, pa.string()),
                "partition": pa.array(np.zeros(step, np.int32)),
                "offset": pa.array(np.arange(step, dtype=np.int64)),
                "timestamp": pa.array(np.arange(step, dtype=np.int64)).cast(pa.timestamp("us", tz="UTC")),
                "timestampType": pa.array(np.zeros(step, np.int32)),
            }
            template = pa.RecordBatch.from_arrays(
                [full[c] for c in self.columns] or [pa.nulls(step)], schema=arrow_schema(self.columns) if self.columns else None,
                names=None if self.columns else ["rows"],
            )
            if not self.columns:
                template = template.select([])
            left = partition.value
            while left > 0:
                n = min(step, left)
                left -= n
                yield template.slice(0, n)

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kafkalog_floor"

        def schema(self) -> str:
            return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in source_schema().fields)

        def reader(self, schema: object) -> DataSourceReader:
            return FloorReader(schema)

    from kafkalog_spark.source import source_schema

    return FloorSource


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """(best seconds of ``repeat`` runs after a warm-up run, the last result)."""
    result = fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gigabytes", type=float, default=2.0, help="size of the generated log (default 2)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kafkalog-bench-spark")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2, help="local[N] (default 2)")
    args = ap.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    args.cache.mkdir(parents=True, exist_ok=True)
    part, records = generate_log(args.cache, args.gigabytes)
    parquet = generate_parquet(args.cache, part)
    log_bytes = sum(f.stat().st_size for f in part.glob("*.log"))

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    import kafkalog_spark
    from kafkalog_spark.source import KafkaLogReader

    owned = SparkSession.getActiveSession() is None  # a caller's session (the smoke test's) is left running
    spark = (
        SparkSession.builder.master(f"local[{args.cores}]").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafkalog_spark.register(spark)
    reader = KafkaLogReader({"path": str(part)}, StructType([]))
    spark.dataSource.register(floor_source([sum(b.num_rows for b in reader.read(p)) for p in reader.partitions()]))
    cores = spark.sparkContext.defaultParallelism
    sources: dict[str, Callable[[str | StructType], DataFrame]] = {
        "kafkalog": lambda _narrow: spark.read.format("kafkalog").load(str(part)),
        "kafkalog, schema narrowed": lambda narrow: spark.read.format("kafkalog").schema(narrow).load(str(part)),
        "floor (Python data source, no decoding)": lambda _narrow: spark.read.format("kafkalog_floor").load(),
        "floor, schema narrowed": lambda narrow: spark.read.format("kafkalog_floor").schema(narrow).load(),
        "parquet": lambda _narrow: spark.read.parquet(str(parquet)),
    }
    #: query -> (the columns it needs, as a schema; the query)
    queries: dict[str, tuple[str | StructType, Callable[[DataFrame], object]]] = {
        "count()": (StructType([]), lambda df: df.count()),
        "sum(length(value))": ("value binary", lambda df: df.selectExpr("sum(length(value))").first()[0]),
    }
    print(f"{records:,} records, {log_bytes / 1e9:.2f} GB of .log, local[{cores}]; best of {args.repeat} after a warm-up\n")
    print("| query | source | seconds | records/s | records/s per core | time / Parquet's | time / floor's |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for qname, (narrow, q) in queries.items():
        results: dict[str, tuple[float, object]] = {}
        for sname, make in sources.items():
            df = make(narrow)
            results[sname] = best(lambda df=df, q=q: q(df), args.repeat)
        expected = results["parquet"][1]
        parquet_s = results["parquet"][0]
        for sname, (secs, value) in results.items():
            if value != expected:
                print(f"MISMATCH: {sname} {qname} = {value}, parquet = {expected}", file=sys.stderr)
                ok = False
            floor = FLOOR_OF.get(sname)
            vs_floor = f"{secs / results[floor][0]:.2f}" if floor else ""
            print(f"| {qname} | {sname} | {secs:.2f} | {records / secs:,.0f} | {records / secs / cores:,.0f} | {secs / parquet_s:.2f} | {vs_floor} |")
    if owned:
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
