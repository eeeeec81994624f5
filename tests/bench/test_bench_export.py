"""Smoke test of bench/export.py: one copy of the bundled cp760 set, one round (no timing checks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import GOLDEN, bench_script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_script("export")


def test_one_copy(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--set", str(GOLDEN / "real" / "cp760-flink-on-prem"), "--copies", "2", "--repeat", "1", "--cache", str(tmp_path),
                     "--formats", "parquet,jsonl", "--crc-cost"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "export parquet" in out and "export jsonl" in out and "scan" in out
    assert "scan no-crc" in out and "CRC check cost, export parquet" in out
    assert "same rows" in out
    assert len({p.name.rpartition("-")[0].rsplit("_c", 1)[1] for p in (tmp_path / "data").iterdir()}) == 2  # two copies


def test_jobs_sweep(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """``--jobs 1,2`` times the export at each -j and checks that both wrote the same files."""
    from kafkalog.tools import jobs

    monkeypatch.setattr(jobs, "MIN_PARALLEL_BYTES", 0)  # two copies of the bundled set are spread over processes too
    rc = bench.main(["--set", str(GOLDEN / "real" / "cp760-flink-on-prem"), "--copies", "2", "--repeat", "1", "--cache", str(tmp_path),
                     "--jobs", "1,2", "--scan-workers", "1,2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "export parquet -j 1" in out and "export parquet -j 2" in out and "scan workers 2" in out
    assert "files at -j 1,2: identical, byte for byte" in out
