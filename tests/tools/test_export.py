"""``kafkalog export``: Parquet, JSON lines and CSV read back (pyarrow, json, csv) give the rows of
Kafka's dump; Hive layout; a failed run leaves no file under a final name."""

from __future__ import annotations

import base64
import csv
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from helpers import GOLDEN, read_jsonl, real_set_root
from kafkalog.tools.cli import main

SET = GOLDEN / "real" / "cp760-flink-on-prem"


def _kafka(expected: list[dict], root: Path) -> set[tuple]:
    from helpers import kafka_rows, log_starts

    return set(kafka_rows(expected, log_starts(root)))


@pytest.fixture(scope="module")
def real() -> tuple[Path, set[tuple]]:
    expected = read_jsonl(SET.parents[0] / "expected" / f"{SET.name}.jsonl.gz")
    root = real_set_root(SET, expected)
    return root, _kafka(expected, root)


def test_parquet_is_hive_partitioned_and_holds_kafkas_rows(real: tuple[Path, set[tuple]], tmp_path: Path) -> None:
    root, want = real
    assert main(["export", str(root), "-o", str(tmp_path / "out"), "--allow-gaps"]) == 0
    files = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert files and all(f.split("/")[0].startswith("topic=") and f.split("/")[1].startswith("partition=") and f.endswith("/part-00000.parquet")
                         for f in files)
    t = ds.dataset(tmp_path / "out", format="parquet", partitioning="hive").to_table()
    assert {"key", "value", "offset", "timestamp", "timestampType", "headers", "topic", "partition"} == set(t.schema.names)
    ts = t.column("timestamp").cast(pa.int64()).to_pylist()
    got = set(zip(t.column("topic").to_pylist(), t.column("partition").to_pylist(), t.column("offset").to_pylist(), t.column("key").to_pylist(),
                  t.column("value").to_pylist(), [v // 1000 for v in ts], strict=True))
    assert got == want and len(want) == t.num_rows


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_json_lines_and_csv_carry_base64_keys_and_values(fmt: str, real: tuple[Path, set[tuple]], tmp_path: Path) -> None:
    root, want = real
    assert main(["export", str(root), "-o", str(tmp_path), "--format", fmt, "--allow-gaps"]) == 0
    got = set()
    for f in tmp_path.rglob(f"part-00000.{fmt}"):
        topic = f.parent.parent.name.removeprefix("topic=")
        part = int(f.parent.name.removeprefix("partition="))
        with open(f, encoding="utf-8", newline="") as fh:
            rows = [json.loads(line) for line in fh] if fmt == "jsonl" else [
                {k: (None if v == "" and k in ("key",) else v) for k, v in r.items()} for r in csv.DictReader(fh)]
        for r in rows:
            key = None if r["key"] is None else base64.b64decode(r["key"])
            value = None if r["value"] is None else base64.b64decode(r["value"])
            got.add((topic, part, int(r["offset"]), key, value, int(r["timestamp"])))
    if fmt == "csv":  # CSV has no null: an empty field stands for both null and empty bytes
        want = {(t, p, o, k or b"", v or b"", ts) for t, p, o, k, v, ts in want}
        got = {(t, p, o, k or b"", v or b"", ts) for t, p, o, k, v, ts in got}
    assert got == want


def test_filters_and_isolation(tmp_path: Path) -> None:
    logdir = GOLDEN / "kafka" / "logdir"
    assert main(["export", str(logdir), "-o", str(tmp_path / "a"), "-t", "golden", "--start-offset", "10", "--end-offset", "20"]) == 0
    t = ds.dataset(tmp_path / "a", format="parquet", partitioning="hive").to_table()
    assert t.num_rows and all(10 <= o < 20 for o in t.column("offset").to_pylist())
    assert main(["export", str(logdir), "-o", str(tmp_path / "b"), "-t", "transactional", "--isolation", "read_committed"]) == 0
    assert main(["export", str(logdir), "-o", str(tmp_path / "c"), "-t", "transactional"]) == 0
    committed = ds.dataset(tmp_path / "b", format="parquet", partitioning="hive").to_table().num_rows
    every = ds.dataset(tmp_path / "c", format="parquet", partitioning="hive").to_table().num_rows
    assert 0 < committed < every


def test_a_failed_run_leaves_no_file_that_looks_complete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The second partition's read fails half-way: the first partition's file is complete, the
    second has no file under its final name and no temporary file is left."""
    from kafkalog.errors import CorruptRecordError
    from kafkalog.fast import arrow

    real_read = arrow.read_partition
    seen: list[str] = []

    def failing(readers, **kw):  # type: ignore[no-untyped-def]
        seen.append(kw["topic"])
        for i, b in enumerate(real_read(readers, **kw)):
            if len(seen) == 2 and i == 1:
                raise CorruptRecordError("injected", file="x.log", position=0)
            yield b

    monkeypatch.setattr(arrow, "read_partition", failing)  # what kafkalog.dataset.scan reads with, imported when reading
    out = tmp_path / "out"
    assert main(["export", str(GOLDEN / "kafka" / "logdir"), "-o", str(out), "-t", "golden", "-t", "legacy", "--batch-rows", "4"]) == 1
    assert "injected" in capsys.readouterr().err
    finals = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert finals == ["topic=golden/partition=0/part-00000.parquet"], finals
    assert ds.dataset(out, format="parquet", partitioning="hive").to_table().num_rows > 0  # complete and readable
    assert not [n for _d, _s, names in os.walk(out) for n in names if n.startswith(".")]


def test_a_failed_commit_fails_the_run_and_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """An fsync that fails (a full or failing disk) fails the run; the files it was committing are
    removed, none is renamed into place, and the partitions committed before stay complete."""
    from kafkalog.tools import export as export_module

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("tells the temporary files' fsyncs by /proc/self/fd (Linux)")
    real_fsync = os.fsync
    synced: list[int] = []

    def failing(fd: int) -> None:
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")).startswith(".part-") and synced:
            raise OSError(28, "No space left on device")
        real_fsync(fd)
        synced.append(fd)

    monkeypatch.setattr(export_module.os, "fsync", failing)
    out = tmp_path / "out"
    assert main(["export", str(GOLDEN / "kafka" / "logdir"), "-o", str(out), "-t", "golden", "-t", "legacy"]) != 0
    err = capsys.readouterr().err
    assert "No space left on device" in err and "part-00000.parquet" in err and "Traceback" not in err
    finals = list(out.rglob("*.parquet"))
    assert len(finals) <= 1  # the first partition's file, committed before the failure, or none
    for p in finals:
        assert pq_rows(p) > 0
    assert not [n for _d, _s, names in os.walk(out) for n in names if n.startswith(".")]  # no temporary file left


def pq_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def test_usage(tmp_path: Path) -> None:
    assert main(["export", str(GOLDEN / "kafka" / "logdir"), "-o", str(tmp_path), "--columns", "key,nope"]) == 2
    assert main(["export", str(GOLDEN / "kafka" / "logdir"), "-o", str(tmp_path), "--format", "csv", "--compression", "zstd"]) == 2
    assert main(["export", str(tmp_path / "absent"), "-o", str(tmp_path / "o")]) == 3


@pytest.mark.rule("R-VAL-09")
def test_a_corrupt_batch_fails_the_export_unless_skipped_or_unchecked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One byte flipped inside a batch of a real orders-0 (figures from Kafka's dump of the intact
    file): the export fails naming the file, position and offset and leaves no file; --skip-corrupt
    writes every other record with one warning; --no-crc writes the corrupted value."""
    from corrupt_copy import corrupt_copy

    c = corrupt_copy(tmp_path)
    where = f"{c.log}, position {c.position}, offset {c.base_offset}: record batch is corrupt"
    assert main(["export", str(c.data), "-t", "orders", "-o", str(tmp_path / "a")]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and where in err[0] and not [p for p in (tmp_path / "a").rglob("*") if p.is_file()]
    assert main(["export", str(c.data), "-t", "orders", "-o", str(tmp_path / "b"), "--skip-corrupt"]) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    got = ds.dataset(tmp_path / "b", format="parquet", partitioning="hive").to_table(columns=["offset"])
    assert got.num_rows == c.rows_when_skipped == 17212 - c.records and len(warned) == 1 and where in warned[0]
    assert main(["export", str(c.data), "-t", "orders", "-o", str(tmp_path / "c"), "--no-crc", "--start-offset", str(c.offset),
                 "--end-offset", str(c.offset + 1)]) == 0
    got = ds.dataset(tmp_path / "c", format="parquet", partitioning="hive").to_table(columns=["value"])
    assert got.column("value").to_pylist() == [c.flipped] != [c.value]
