"""Input partitions are planned as Spark plans its file sources: the same number of tasks as
Spark's own ``FilePartition`` planning gives the same files, small segments packed together,
large ones cut at index entries, and every row read once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from helpers import GOLDEN, dump_batches, read_jsonl
from kafkalog_spark.planning import SliceRow, pack, split_bytes
from kafkalog_spark.source import KafkaLogDataSource

LOGDIR = GOLDEN / "kafka" / "logdir"
REAL = GOLDEN / "real" / "cp760-flink-on-prem" / "data"


@pytest.fixture(scope="module")
def many_partitions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Eight copies of the bundled real data dir's partitions, each its own topic."""
    root = tmp_path_factory.mktemp("many")
    for k in range(8):
        for part in REAL.iterdir():
            if part.is_dir() and any(f.stat().st_size for f in part.glob("*.log")):
                topic, _, p = part.name.rpartition("-")
                shutil.copytree(part, root / f"{topic}_c{k}-{p}")
    return root


def _plan(path: Path, **options: str) -> list:
    ds = KafkaLogDataSource({"path": str(path), **{k.lower(): v for k, v in options.items()}})
    return ds.reader(ds.schema()).partitions()


@pytest.mark.parametrize(("max_bytes", "open_cost", "min_partitions"), [(128 << 20, 4 << 20, 2), (1 << 20, 20_000, 2), (1 << 30, 1 << 20, 16), (300_000, 0, 1)])
def test_as_many_input_partitions_as_spark_plans_for_the_same_files(
    spark, many_partitions: Path, max_bytes: int, open_cost: int, min_partitions: int  # noqa: ANN001 - fixture
) -> None:
    logs = sorted(str(f) for f in many_partitions.glob("*/*.log") if f.stat().st_size)
    conf = {"spark.sql.files.maxPartitionBytes": str(max_bytes), "spark.sql.files.openCostInBytes": str(open_cost),
            "spark.sql.files.minPartitionNum": str(min_partitions)}
    for k, v in conf.items():
        spark.conf.set(k, v)
    try:  # binaryFile: whole files, packed by Spark's FilePartition (segments here are below any cut size, or have no .index)
        spark_tasks = spark.read.format("binaryFile").load(logs).rdd.getNumPartitions()
    finally:
        for k in conf:
            spark.conf.unset(k)
    ours = _plan(many_partitions, maxBytesPerPartition=str(max_bytes), openCostInBytes=str(open_cost), minPartitions=str(min_partitions))
    sizes = [Path(f).stat().st_size for f in logs]
    if max(sizes) <= split_bytes(sum(sizes), len(sizes), max_bytes, open_cost, min_partitions):  # no segment cut: the files Spark packed
        assert sorted(s.log for p in ours for s in p.slices) == logs
        assert len(ours) == spark_tasks
    else:  # the largest segments cut at index entries (binaryFile reads files whole)
        assert len(ours) > spark_tasks
    assert len(logs) == 32


def test_the_sessions_settings_decide_the_partitions(spark, many_partitions: Path) -> None:  # noqa: ANN001 - fixture
    """Registered with the session, the source plans with its settings (here Spark's defaults and
    local[2]'s parallelism), as Spark's own file sources do."""
    logs = sorted(str(f) for f in many_partitions.glob("*/*.log") if f.stat().st_size)
    ours = spark.read.format("kafkalog").load(str(many_partitions)).rdd.getNumPartitions()
    assert ours == spark.read.format("binaryFile").load(logs).rdd.getNumPartitions() < len(logs)


def test_large_segments_are_cut_and_every_row_read_once() -> None:
    parts = _plan(LOGDIR / "golden-0", maxBytesPerPartition="700", openCostInBytes="0", minPartitions="1")
    slices = [s for p in parts for s in p.slices]
    by_log: dict[str, list] = {}
    for s in slices:
        by_log.setdefault(s.log, []).append(s)
    assert any(len(v) > 1 for v in by_log.values())  # cut at index entries
    for v in by_log.values():  # byte ranges that tile each segment
        v.sort(key=lambda s: s.start)
        assert v[0].start == 0 and v[-1].end is None
        assert all(a.end == b.start for a, b in zip(v, v[1:], strict=False))


def test_packed_units_stay_within_the_split_and_read_every_offset_once_in_order() -> None:
    """Input partitions packed by bytes from segment slices: each slice within the split size
    unless no ``.index`` entry lies inside it (one gap between entries wider than the split), each
    input partition within the split plus one slice, and every offset of Kafka's dump read once,
    each partition's rows in offset order within an input partition."""
    from dataclasses import fields

    from helpers import kafka_rows, log_starts
    from kafkalog.format.index import OffsetIndex
    from kafkalog_spark.planning import SegmentSlice, SlicePack

    split = 40_000
    ds = KafkaLogDataSource({"path": str(REAL), "maxbytesperpartition": str(split), "opencostinbytes": "1000", "minpartitions": "1",
                             "failondataloss": "false"})  # customers-0 lacks its .log
    reader = ds.reader(ds.schema())
    packs = reader.partitions()
    assert all(isinstance(p, SlicePack) for p in packs)
    # a row is made by position: one field short, the slice made from it would take a default
    assert {len(row) for p in packs for row in p.rows} == {len(fields(SegmentSlice)) - 1}
    cut = 0
    for p in packs:
        assert len(p.slices) == 1 or sum(s.size + 1000 for s in p.slices[:-1]) <= split
        for s in p.slices:
            if s.size > split:
                index = OffsetIndex.read(data=Path(s.log[: -len(".log")] + ".index").read_bytes(), base_offset=0)
                stop = s.end if s.end is not None else Path(s.log).stat().st_size
                assert not any(s.start < pos < stop for pos in index.positions.tolist()), s
            cut += s.start > 0
    assert cut > 5 and len(packs) > 5  # a segment was cut, and slices packed into several input partitions
    seen: list[tuple[str, int, int]] = []
    for p in packs:
        table = pa.Table.from_batches(list(reader.read(p)))
        rows = list(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), table.column("offset").to_pylist(), strict=True))
        for tp in {r[:2] for r in rows}:
            offsets = [r[2] for r in rows if r[:2] == tp]
            assert offsets == sorted(offsets), tp
        seen.extend(rows)
    expected = kafka_rows(read_jsonl(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz"), log_starts(REAL))
    assert sorted(seen) == sorted(r[:3] for r in expected)


def test_pack_is_next_fit_decreasing_with_an_open_cost() -> None:
    def sl(size: int) -> SliceRow:
        return ("t", 0, f"{size}.log", 0, None, 0, None, (), size, False, None, "", None)  # a SegmentSlice's fields but its filesystem

    packs = pack(None, [sl(s) for s in (10, 70, 30, 50, 5)], split=100, open_cost=10)  # type: ignore[arg-type]
    assert [[s.size for s in p.slices] for p in packs] == [[70], [50, 30], [10, 5]]
    assert split_bytes(1000, 10, 10_000, 4, 2) == 520 and split_bytes(1000, 10, 300, 4, 2) == 300 and split_bytes(10, 1, 300, 64, 2) == 64


def test_planning_imports_no_compiled_decoder() -> None:
    """Spark plans in fresh Python processes: the source's planning side must not import the
    columnar decoder, and its headers type is the decoder's."""
    import subprocess
    import sys

    from kafkalog.fast.arrow import HEADERS_TYPE
    from kafkalog_spark.schema import HEADERS_TYPE as SOURCE_HEADERS_TYPE

    assert SOURCE_HEADERS_TYPE == HEADERS_TYPE
    code = "import sys, kafkalog_spark, kafkalog_spark.source; print(sorted(m for m in ('kafkalog.fast.columnar', 'kafkalog.fast._columnar') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.strip() == "[]"


def test_small_segments_of_one_input_partition_come_in_few_arrow_batches(many_partitions: Path) -> None:
    """The rows of the many small segments one task reads are joined into Arrow batches of
    reader.MAX_ROWS rows or reader.COALESCE_BYTES bytes (Spark takes each batch at a cost of its own),
    none lost or repeated."""
    from kafkalog_spark.reader import COALESCE_BYTES, MAX_ROWS

    ds = KafkaLogDataSource({"path": str(many_partitions), "maxbytesperpartition": str(1 << 30), "minpartitions": "1"})
    reader = ds.reader(ds.schema())
    (only,) = reader.partitions()
    assert len(only.slices) == 32
    batches = list(reader.read(only))
    assert all(b.num_rows >= MAX_ROWS or b.nbytes >= COALESCE_BYTES for b in batches[:-1])
    assert len(batches) < len(only.slices)
    table = pa.Table.from_batches(batches)
    keys = set(zip(table.column("topic").to_pylist(), table.column("offset").to_pylist(), strict=True))
    dumped = dump_batches(read_jsonl(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz"))
    assert len(keys) == table.num_rows == 8 * sum(len(b["records"]) for b in dumped if not b.get("isControlBatch"))
