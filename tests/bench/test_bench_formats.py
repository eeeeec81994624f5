"""Smoke test of bench/formats.py on the bundled cp760 sample: a row per Avro topic, the decoded scan
equal to the fastavro loop (no timing checks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType

import pytest

from helpers import GOLDEN, bench_script

pytest.importorskip("fastavro")


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_script("formats")


def test_one_row_per_avro_topic(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--data", str(GOLDEN / "real" / "cp760-flink-on-prem" / "data"), "--repeat", "1", "--json"])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = [json.loads(line) for line in out.splitlines()]
    assert [(r["topic"], r["rows"]) for r in rows] == [("promotions", 29)]
    assert all(r["scan_s"] > 0 and r["loop_s"] > 0 for r in rows)
