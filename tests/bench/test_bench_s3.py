"""Smoke test of bench/s3.py: one copy of the bundled cp760 set and a small generated partition, one
round each, over its own moto server (no timing checks)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import GOLDEN, bench_script

pytestmark = pytest.mark.s3


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    pytest.importorskip("moto.server", reason="moto[server] is not installed (extra [dev])")
    pytest.importorskip("s3fs", reason="s3fs is not installed (extra [s3])")
    yield from bench_script("s3")


def test_one_copy_and_a_small_partition(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--set", str(GOLDEN / "real" / "cp760-flink-on-prem"), "--copies", "1", "--gigabytes", "0.01", "--segment-mb", "4",
                     "--repeat", "1", "--cache", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.count("rows: same") == 2, out
    assert "s3/local rows/s" in out and "1 list, 0 head" in out and "s3 scan/fetch only" in out
    assert len([line for line in out.splitlines() if line.startswith(("fetch ", "s3fs "))]) == 4, out  # the server's ceiling, each set
    ratios = [float(m) for m in re.findall(r"fetched [\d,]+ / needed [\d,]+ = ([\d.]+)x", out)]
    assert len(ratios) == 2 and all(1.0 <= r <= 1.1 for r in ratios), out
