"""Smoke test of bench/startup.py: a quick run prints every table (start-up, decode, verify), no timing checks."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from helpers import bench_script

# kafka-python loads its protocol schemas with importlib.resources' deprecated read_text.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*is deprecated\. Use files\(\) instead:DeprecationWarning")


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_script("startup")


def _cells(out: str, first: str) -> list[str]:
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0].startswith(first):
            return cells
    raise AssertionError(f"no row {first!r} in:\n{out}")


def test_quick_run_prints_every_row(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--quick", "--repeat", "1", "--verify-mb", "2"])  # the smallest run: one timed run of each row
    out = capsys.readouterr().out
    assert rc == 0, out
    for label in ("python -c pass", "import kafkalog", "kafkalog dump --json", "kafkalog verify"):
        cells = _cells(out, label)
        assert float(cells[1]) > 0 and float(cells[2]) > 0 and cells[-1] == "", cells  # ran, exited 0
    # the child's own peak, not the memory it inherited from this (much larger) process before exec
    import resource

    assert float(_cells(out, "python -c pass")[2]) < 40 < resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    assert "`import kafkalog` alone, in-process:" in out
    for impl in ("kafkalog columnar", "kafkalog columnar views", "kafkalog objects"):
        assert _cells(out, "none")  # the decode table's rows start with the codec
        assert impl in out, out
    assert _cells(out, "kafkalog verify (all checks)")[3].endswith("x")
