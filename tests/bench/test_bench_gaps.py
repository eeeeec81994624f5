"""Smoke test of bench/gaps.py: over a real data dir, one figure per repeat for the check and its
floor, every partition dir counted, and the garbage collector left as it was found (no timing checks)."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from types import ModuleType

import pytest

from helpers import REPO, bench_script

#: cp760's data dir holds four partition dirs (_confluent-command-0, _confluent-monitoring-0, _schemas-0, promotions-0)
DATA = REPO / "golden" / "real" / "cp760-flink-on-prem" / "data"


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_script("gaps")


def test_each_repeat_gives_a_figure_for_every_partition(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert gc.isenabled()
    bench.main([str(DATA), "--repeat", "2"])
    assert gc.isenabled()  # the bench turns the collector off while it measures, and back on
    out = json.loads(capsys.readouterr().out)
    assert out["partitions"] == 4
    assert len(out["gaps_us"]) == len(out["floor_us"]) == 2
    assert all(v > 0 for v in out["gaps_us"])
