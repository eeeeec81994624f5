"""Throughput of the ``kafkalog`` Spark source: rows/s in-process (one core) and through Spark.

    .venv/bin/python bench/spark_source.py [--records N]

Data sets: the largest golden-real set (``../shared/golden-real/cp760-flink-on-prem`` when present,
else the bundled part of it: small batches of about 2.3 records, lz4 and uncompressed) and a
synthetic partition of N records (16-byte keys, 100-byte values, 1,000 records per uncompressed
batch, the workload measured in ``../shared/notes/measurements.md``). Through Spark the scan is timed with the
``noop`` sink (every column produced, nothing collected); each figure is the best of three runs
after a warm-up run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KAFKALOG_SHARED", REPO.parent / "shared"))


def synthetic(root: Path, records: int) -> Path:
    """One partition dir of ``records`` records in 1,000-record uncompressed batches, in 128 MiB segments."""
    from kafkalog import RecordBatchBuilder

    part = root / "synthetic-0"
    part.mkdir(parents=True)
    value = bytes(range(100))
    offset, base, size = 0, 0, 0
    out = open(part / f"{base:020d}.log", "wb")  # noqa: SIM115 - rolled below
    while offset < records:
        b = RecordBatchBuilder(offset)
        for i in range(min(1000, records - offset)):
            b.append(1_700_000_000_000 + offset + i, (offset + i).to_bytes(16, "big"), value)
        data = b.build()
        if size + len(data) > 128 * 1024 * 1024:
            out.close()
            base, size = offset, 0
            out = open(part / f"{base:020d}.log", "wb")  # noqa: SIM115
        out.write(data)
        size += len(data)
        offset += len(b)
    out.close()
    return part


def best(fn, runs: int = 3) -> float:  # noqa: ANN001 - a callable
    fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, str(REPO / "tests"))
    from pyspark.sql import SparkSession

    import kafkalog_spark
    from spark._support import read_in_process

    cp760 = SHARED / "golden-real" / "cp760-flink-on-prem" / "data"
    if not cp760.exists():
        cp760 = REPO / "golden" / "real" / "cp760-flink-on-prem" / "data"
    with tempfile.TemporaryDirectory() as tmp:
        sets = {"cp760-flink-on-prem": cp760, f"synthetic {args.records:,}": synthetic(Path(tmp), args.records)}
        spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        kafkalog_spark.register(spark)
        print("| data set | rows | in-process, 1 core (rows/s) | Spark local[2], noop sink (rows/s) |")
        print("|---|---|---|---|")
        for name, path in sets.items():
            opts = {"path": str(path), "includeInternalTopics": "true", "includeHeaders": "true"}
            table, _, _ = read_in_process(opts)
            rows = table.num_rows
            local = best(lambda opts=opts: read_in_process(opts))
            df = spark.read.format("kafkalog").options(**opts).load()
            through = best(lambda df=df: df.write.format("noop").mode("overwrite").save())
            print(f"| {name} | {rows:,} | {rows / local:,.0f} | {rows / through:,.0f} |")
        spark.stop()


if __name__ == "__main__":
    main()
