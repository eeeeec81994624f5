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
through ``format("parquet")``. Each figure is the best of ``--repeat`` runs after a warm-up run.
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
    from kafkalog.log import Log, LogConfig

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
    with Log.open(str(part), config, sync=False) as lg:
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
    from kafkalog.arrow import to_arrow

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

    owned = SparkSession.getActiveSession() is None  # a caller's session (the smoke test's) is left running
    spark = (
        SparkSession.builder.master(f"local[{args.cores}]").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafkalog_spark.register(spark)
    cores = spark.sparkContext.defaultParallelism
    sources: dict[str, Callable[[str | StructType], DataFrame]] = {
        "kafkalog": lambda _narrow: spark.read.format("kafkalog").load(str(part)),
        "kafkalog, schema narrowed": lambda narrow: spark.read.format("kafkalog").schema(narrow).load(str(part)),
        "parquet": lambda _narrow: spark.read.parquet(str(parquet)),
    }
    #: query -> (the columns it needs, as a schema; the query)
    queries: dict[str, tuple[str | StructType, Callable[[DataFrame], object]]] = {
        "count()": (StructType([]), lambda df: df.count()),
        "sum(length(value))": ("value binary", lambda df: df.selectExpr("sum(length(value))").first()[0]),
    }
    print(f"{records:,} records, {log_bytes / 1e9:.2f} GB of .log, local[{cores}]; best of {args.repeat} after a warm-up\n")
    print("| query | source | seconds | records/s | records/s per core | time / Parquet's |")
    print("|---|---|---|---|---|---|")
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
            print(f"| {qname} | {sname} | {secs:.2f} | {records / secs:,.0f} | {records / secs / cores:,.0f} | {secs / parquet_s:.2f} |")
    if owned:
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
