"""One rule for where a read starts and which topics it includes (SPEC R-VAL-10, R-VAL-11), in
the Spark source as in ``kafkalog.scan``, ``export``, ``cat`` and ``info``: every golden-real set
gives the same (topic, partition, offset) set in each, and that set is Kafka's dump from each
partition's ``log-start-offset-checkpoint`` entry on, without Kafka's internal topics."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import pyarrow.dataset as ds
import pytest

import kafkalog
from helpers import (
    GOLDEN,
    KAFKA_INTERNAL_TOPICS,
    log_starts,
    lost_partitions,
    need_shared,
    read_jsonl,
    real_set_root,
    real_sets,
)
from kafkalog.tools.cli import main

from ._support import dump_batches, expected_rows, read_in_process

Key = tuple[str, int, int]


def _dump_keys(lines: list[dict]) -> Iterable[Key]:
    """The keys of every record of Kafka's dump outside control batches (cp760's: 2.5 CPU s, made once a test)."""
    return expected_rows(dump_batches(lines)).keys()


def _kafka(keys: Iterable[Key], root: Path, *, deleted: bool = False, internal: bool = False) -> set[Key]:
    """What a consumer of every topic reads, by Kafka's dump (its ``keys``) and Kafka's checkpoint file."""
    starts = {} if deleted else log_starts(root)
    return {(t, p, o) for t, p, o in keys if o >= starts.get((t, p), 0) and (internal or t not in KAFKA_INTERNAL_TOPICS)}


def _spark(spark, root: Path, **options: str) -> set[Key]:  # noqa: ANN001 - fixture
    rows = spark.read.format("kafkalog").options(**options).load(str(root)).select("topic", "partition", "offset").collect()
    keys = [(r.topic, r.partition, r.offset) for r in rows]
    assert len(keys) == len(set(keys)), "an offset read twice"
    return set(keys)


def _scan(root: Path, **kwargs: object) -> set[Key]:
    t = kafkalog.scan(root, columns=["topic", "partition", "offset"], **kwargs).read_all()  # type: ignore[arg-type]
    return set(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(), t.column("offset").to_pylist(), strict=True))


@pytest.mark.rule("R-VAL-10")
def test_earliest_is_the_checkpointed_log_start_offset(tmp_path: Path) -> None:
    """A data dir whose log-start-offset-checkpoint puts golden-0 at 60 (inside its second segment):
    Spark's earliest (default, named, or -2 per partition) starts there, as scan does; an explicit
    offset below it is data loss (failOnDataLoss) naming the deleted range; includeDeleted reads
    from the first segment."""
    import shutil

    from kafkalog_spark.errors import DataLossError

    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", tmp_path / "golden-0")
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\ngolden 0 60\n")
    every = sorted(k[2] for k in _scan(tmp_path, include_deleted=True))
    assert every[0] == 0 and 60 in every
    for opts in ({}, {"startingOffsets": "earliest"}, {"startingOffsets": '{"golden": {"0": -2}}'}):
        table, _, _ = read_in_process({"path": str(tmp_path), **opts})
        assert table is not None and table.column("offset").to_pylist() == [o for o in every if o >= 60], opts
    assert sorted(k[2] for k in _scan(tmp_path)) == [o for o in every if o >= 60]
    with pytest.raises(DataLossError, match="offsets 10 to 59 of golden-0 are below its log start offset 60"):
        read_in_process({"path": str(tmp_path), "startingOffsets": '{"golden": {"0": 10}}'})
    table, _, _ = read_in_process({"path": str(tmp_path), "includeDeleted": "true"})
    assert table is not None and table.column("offset").to_pylist() == every


BUNDLED = [pytest.param(name, set_dir, dump, id=name) for name, set_dir, dump in real_sets(GOLDEN / "real")]


@pytest.mark.rule("R-VAL-10")
@pytest.mark.rule("R-VAL-11")
@pytest.mark.parametrize("name,set_dir,dump", BUNDLED)
def test_spark_reads_what_scan_and_a_consumer_read(spark, name: str, set_dir: Path, dump: Path) -> None:  # noqa: ANN001 - fixture
    lines = read_jsonl(dump)
    root = real_set_root(set_dir, lines)
    lossy = bool(lost_partitions(set_dir))
    want = _kafka(_dump_keys(lines), root)
    assert _scan(root, allow_gaps=lossy) == want
    assert _spark(spark, root, **({"failOnDataLoss": "false"} if lossy else {})) == want, name


@pytest.mark.rule("R-VAL-10")
@pytest.mark.shared
def test_cp760_every_reader_starts_the_repartition_topics_at_1734(spark, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: ANN001
    """The issue's backup: DeleteRecords moved two repartition partitions' log start offset to 1734
    (the checkpoint file as Kafka wrote it); Spark (failOnDataLoss=false), scan, export, cat and
    info agree on every row and range, with neither the deleted records nor internal topics."""
    set_dir = need_shared("golden-real/cp760-flink-on-prem")
    lines = read_jsonl(set_dir.parent / "expected" / "cp760-flink-on-prem.jsonl.gz")
    root = real_set_root(set_dir, lines)
    starts = log_starts(root)
    moved = {tp for tp, o in starts.items() if "repartition" in tp[0]}
    assert len(moved) == 2 and {starts[tp] for tp in moved} == {1734}
    keys = _dump_keys(lines)
    want = _kafka(keys, root)

    spark_keys = _spark(spark, root, failOnDataLoss="false")
    scan_keys = _scan(root, allow_gaps=True)
    assert main(["export", str(root), "-o", str(tmp_path / "out"), "--allow-gaps", "--columns", "offset"]) == 0
    t = ds.dataset(tmp_path / "out", format="parquet", partitioning="hive").to_table()
    export_keys = set(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(), t.column("offset").to_pylist(), strict=True))
    assert main(["cat", str(root), "--allow-gaps", "-f", "%t %p %o\\n"]) == 0
    out = capsys.readouterr().out.splitlines()
    cat_keys = {(t, int(p), int(o)) for t, p, o in (line.rsplit(" ", 2) for line in out)}
    assert len(out) == len(cat_keys)
    assert spark_keys == scan_keys == export_keys == cat_keys == want
    assert len(spark_keys) == t.num_rows == len(want)
    for tp in moved:
        assert min(o for t_, p, o in spark_keys if (t_, p) == tp) == 1734
    assert main(["info", str(root), "--json"]) == 0
    info = {(o["topic"], o["partition"]): o for o in map(json.loads, capsys.readouterr().out.splitlines())}
    for tp, o in info.items():
        held = sorted(k[2] for k in want if k[:2] == tp)
        if held:  # the range info shows holds what the readers read
            assert o["logStartOffset"] <= held[0] and held[-1] < o["endOffset"], tp
    assert all(info[tp]["logStartOffset"] == 1734 for tp in moved)
    # asked for: the deleted records the segment still holds
    topics = ",".join(sorted(t_ for t_, _ in moved))
    deleted = {k for k in _kafka(keys, root, deleted=True) if k[:2] in moved}
    assert _spark(spark, root, subscribe=topics, includeDeleted="true") == deleted == _scan(root, topics=topics.split(","), include_deleted=True)
    assert min(k[2] for k in deleted) < 1734
