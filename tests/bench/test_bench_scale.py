"""Smoke test of bench/scale.py: a tiny generated backup read back, and one run of each command (no timing checks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import bench_script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_script("scale")


def test_generated_backup_is_a_broker_log_dir(bench: ModuleType, tmp_path: Path) -> None:
    from kafkalog.format.checkpoints import read_meta_properties, read_offset_checkpoint
    from kafkalog.tools.validate import verify

    manifest = bench.generate(tmp_path / "set", 4_000_000, 7, jobs=1)
    data = tmp_path / "set" / "data"
    dirs = sorted(p.name for p in data.iterdir() if p.is_dir())
    assert manifest["partitions"] == len(dirs) == 24
    topics = {d.rpartition("-")[0] for d in dirs}
    assert {t.rpartition("-")[2] for t in topics} == {"none", "gzip", "snappy", "lz4", "zstd"}  # every codec
    assert any(t.startswith("users-state-") for t in topics) and any(t.startswith("payments-txn-") for t in topics)
    assert list(data.glob("payments-txn-*/*.txnindex")), "the transactional topic has aborted transactions"
    assert read_meta_properties(data / "meta.properties").version == 1
    recovery = read_offset_checkpoint(data / "recovery-point-offset-checkpoint")
    assert len(recovery) == 24 and len(read_offset_checkpoint(data / "replication-offset-checkpoint")) == 24
    assert read_offset_checkpoint(data / "cleaner-offset-checkpoint")  # the compacted topic was cleaned
    assert max(len(list((data / d).glob("*.log"))) for d in dirs) > 1  # several segments
    report = verify(str(data))
    assert not report.errors and not report.warnings, report.findings[:3]
    # the same size and seed give the same bytes; a second call reuses the set
    assert bench.generate(tmp_path / "set", 4_000_000, 7, jobs=1) == manifest
    again = bench.generate(tmp_path / "other", 4_000_000, 7, jobs=1)
    assert again["bytes"] == manifest["bytes"]
    for d in dirs[:3]:
        for f in sorted((data / d).iterdir()):
            assert f.read_bytes() == (tmp_path / "other" / "data" / d / f.name).read_bytes(), f


def test_main_reports_every_command(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--size", "3MB", "--out", str(tmp_path), "--gen-jobs", "1", "--jobs", "1,2", "--json"])
    out = capsys.readouterr().out
    result = json.loads(out)
    assert rc == 0, out
    runs = result["runs"]
    assert {r["command"] for r in runs} == {"export", "verify", "info", "scan", "cat"}
    rows = next(r["rows"] for r in runs if r["command"] == "scan")
    assert rows > 1000
    for r in runs:
        assert r["exit_code"] == 0 and r["peak_rss_mb"] > 10 and r["cpu_s"] > 0, r
        assert r["same_as_j1"] is not False, r
        if r["command"] == "export":
            assert r["rows"] == rows
    assert not (tmp_path / "3MB-s0" / "work" / "export-j1").exists()  # outputs are removed after the hash check


def test_skewed_set_is_one_partition_of_several_segments_measured_in_rounds(bench: ModuleType, tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--skewed", "--size", "3MB", "--out", str(tmp_path), "--gen-jobs", "1", "--commands", "export,verify",
                     "--jobs", "1,2", "--repeat", "2", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert result["manifest"]["partitions"] == 1 and result["manifest"]["segments"] >= 4
    runs = result["runs"]
    assert [(r["command"], r["jobs"]) for r in runs] == [("export", 1), ("export", 2), ("verify", 1), ("verify", 2)] * 2
    for r in runs:
        assert r["exit_code"] == 0 and r["busiest_cpu_s"] > 0 and r["busiest_cpu_s"] <= r["cpu_s"] + 0.05, r
        assert r["same_as_j1"] is not False, r
