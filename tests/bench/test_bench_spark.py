"""Smoke test of bench/spark.py: a tiny log and its Parquet copy, a table row per query x source
with the same answers from every source (no timing checks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import bench_script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_script("spark")


def test_generated_log_and_parquet_hold_the_same_records(bench: ModuleType, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from kafkalog.tools.validate import verify

    part, records = bench.generate_log(tmp_path, 0.0003)  # 300 kB: three batches of 1,000 records
    assert records == 3000
    assert verify(str(part)).findings == []
    assert bench.generate_log(tmp_path, 0.0003) == (part, records)  # reused, not regenerated
    table = pq.read_table(bench.generate_parquet(tmp_path, part))
    assert table.num_rows == records
    assert table.column("offset").to_pylist() == list(range(records))
    assert table.column("key").to_pylist()[:2] == [(0).to_bytes(16, "big"), (1).to_bytes(16, "big")]
    assert {len(v) for v in table.column("value").to_pylist()} == {100}


def test_table_has_a_row_per_query_and_source(bench: ModuleType, spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    """Every source's answer to each query is checked in the warm-up round alone (``--repeat 0``: no
    timed round, its seconds are printed as inf): the 12 queries' timed loop is the real table's
    test's, and a timed round here was half of this test's time (the suite's longest Spark test)."""
    rc = bench.main(["--gigabytes", "0.0003", "--cache", str(tmp_path), "--repeat", "0", "--tables", "synthetic"])
    out = capsys.readouterr().out
    assert rc == 0, out  # 1 when a source's answer differs from Parquet's
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    assert {(r[0], r[1]) for r in rows[1:]} == {
        (q, s) for q in ("count()", "sum(length(value))") for s in (
            "kafkalog", "kafkalog, schema narrowed", "floor (Python data source, no decoding)", "floor, schema narrowed", "parquet",
            "parquet as df.write.parquet lays it out",
        )
    }
    by_source = {(r[0], r[1]): r for r in rows[1:]}
    assert by_source[("count()", "kafkalog")][6] and not by_source[("count()", "parquet")][6]  # time / floor's: kafkalog rows only



def test_real_table_copies_a_set_and_agrees_with_parquet(bench: ModuleType, spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    """The real-data table over two copies of the bundled cp760 set: every source gives Parquet's
    answer, and the rows are the records of Kafka's own dump of the set (non-control batches of
    the topics a default read returns), twice."""
    from helpers import GOLDEN, dump_batches, read_jsonl

    batches = dump_batches(read_jsonl(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz"))
    want = sum(len(b["records"]) for b in batches if not b.get("isControlBatch") and not b["file"].startswith("__"))
    rc = bench.main(["--cache", str(tmp_path), "--repeat", "1", "--tables", "real", "--real-set", str(GOLDEN / "real" / "cp760-flink-on-prem"), "--copies", "2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"{2 * want:,} rows (the default read)" in out
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    assert [r[1] for r in rows[1:]] == [
        "kafkalog", "kafkalog, schema narrowed", "floor (the same Arrow batches, no decoding)", "floor, schema narrowed", "parquet",
        "parquet as df.write.parquet lays it out",
    ]
    assert (tmp_path / "real" / "parquet-spark" / "_SUCCESS").exists()  # written by Spark itself


def test_cluster_and_master_are_exclusive(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--cluster`` starts its own master: asking for another one too is a usage error, before any JVM starts."""
    with pytest.raises(SystemExit) as exc:
        bench.main(["--cache", str(tmp_path), "--tables", "synthetic", "--cluster", "--master", "spark://127.0.0.1:1"])
    assert exc.value.code == 2
    assert "--master or --cluster" in capsys.readouterr().err


def test_planning_table_plans_every_generated_partition_dir(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--planning 300`` over hard-linked copies of the bundled cp760 set's smallest partition: a
    row per planner, and what they plan is the copied partition's rows, 300 times, each copy read
    whole by one Spark slice."""
    import kafkalog
    from helpers import GOLDEN
    from kafkalog_spark.source import KafkaLogReader, source_schema

    rc = bench.main(["--cache", str(tmp_path), "--planning", "300", "--real-set", str(GOLDEN / "real" / "cp760-flink-on-prem")])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    assert [r[:3] for r in rows[1:]] == [["300", "local", "kafkalog.scan"], ["300", "local", "Spark source partitions()"]]
    log = tmp_path / "planning-300" / "log"
    one = kafkalog.scan(tmp_path / "planning-300" / "template-0").read_all()
    assert one.num_rows > 0
    every = kafkalog.scan(log).read_all()
    assert every.num_rows == 300 * one.num_rows
    assert set(every.column("offset").to_pylist()) == set(one.column("offset").to_pylist())
    slices = [s for p in KafkaLogReader({"path": str(log)}, source_schema()).partitions() for s in p.slices]
    assert sorted(s.log for s in slices) == sorted(str(f) for f in log.glob("*/*.log")) and all(s.start == 0 and s.end is None for s in slices)
