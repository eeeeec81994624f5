"""``info``, ``cat``, ``export`` and ``kafkalog.scan`` read by one rule (SPEC R-VAL-10, R-VAL-11): on
every golden-real set (bundled, and ../shared when it is there) they give the same (topic,
partition, offset) rows, and ``info``'s ranges hold them. The expected rows come from Kafka's dump
of the set and the ``log-start-offset-checkpoint`` file as Kafka wrote it (the Spark source's side
is tests/spark/test_reader_rules.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest

import kafkalog
from helpers import (
    GOLDEN,
    KAFKA_INTERNAL_TOPICS,
    SHARED,
    kafka_rows,
    log_starts,
    lost_partitions,
    read_jsonl,
    real_set_root,
    real_sets,
)
from kafkalog.tools.cli import main

SETS = [pytest.param(s, e, id=f"bundled-{n}") for n, s, e in real_sets(GOLDEN / "real")]
SHARED_SETS = [pytest.param(s, e, id=f"shared-{n}", marks=pytest.mark.shared) for n, s, e in real_sets(SHARED / "golden-real")]

Key = tuple[str, int, int]


def _kafka(expected: list[dict], root: Path, *, internal: bool) -> set[Key]:
    """A consumer's rows by Kafka's dump (test_scan's ``kafka_rows``: records of non-control batches
    from each partition's checkpointed log start offset on; internal topics only with ``internal``)."""
    return {(t, p, o) for t, p, o, *_ in kafka_rows(expected, log_starts(root), internal=internal)}


def _cat(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> set[Key]:
    assert main(["cat", str(root), "-f", "%t %p %o\\n", *args]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    if "--include-internal" not in args and all(d.name.rpartition("-")[0] in KAFKA_INTERNAL_TOPICS for d in root.iterdir() if d.is_dir()):
        # a KRaft controller's dir: only internal topics, none read, and the line says why
        assert not lines and "holds only Kafka's internal topics" in err and "--include-internal" in err
    keys = {(t, int(p), int(o)) for t, p, o in (line.rsplit(" ", 2) for line in lines)}
    assert len(keys) == len(lines)
    return keys


def _export(root: Path, out: Path, *args: str) -> set[Key]:
    assert main(["export", str(root), "-o", str(out), "--columns", "offset", *args]) == 0
    if not any(out.rglob("*.parquet")):
        return set()
    t = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    keys = set(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(), t.column("offset").to_pylist(), strict=True))
    assert len(keys) == t.num_rows
    return keys


def _scan(root: Path, **kwargs: object) -> set[Key]:
    t = kafkalog.scan(root, columns=["topic", "partition", "offset"], **kwargs).read_all()  # type: ignore[arg-type]
    return set(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(), t.column("offset").to_pylist(), strict=True))


@pytest.mark.rule("R-VAL-10")
@pytest.mark.rule("R-VAL-11")
@pytest.mark.parametrize("set_dir,expected_file", SETS + SHARED_SETS)
def test_every_reader_gives_the_same_rows_and_ranges(set_dir: Path, expected_file: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    expected = read_jsonl(expected_file)
    root = real_set_root(set_dir, expected)
    gaps = ["--allow-gaps"] if lost_partitions(set_dir) else []
    for internal in (False, True):
        flag = ["--include-internal"] if internal else []
        want = _kafka(expected, root, internal=internal)
        assert _scan(root, allow_gaps=bool(gaps), include_internal=internal) == want
        assert _cat(capsys, root, *gaps, *flag) == want
        assert _export(root, tmp_path / f"out-{internal}", *gaps, *flag) == want
        assert main(["info", str(root), "--json", *flag]) == 0
        info = {(o["topic"], o["partition"]): o for o in map(json.loads, capsys.readouterr().out.splitlines())}
        assert {k[:2] for k in want} <= set(info)
        assert internal or not any(tp[0] in KAFKA_INTERNAL_TOPICS for tp in info)
        for k in want:
            o = info[k[:2]]
            assert o["logStartOffset"] <= k[2] < o["endOffset"], k
