"""Smoke test of bench/records.py: a tiny run prints a row per implementation x codec (no timing checks)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType

import pytest

from helpers import bench_script

IMPLEMENTATIONS = ("kafkalog", "kafka-python", "aiokafka")
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

# kafka-python loads its protocol schemas with importlib.resources' deprecated read_text.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*is deprecated\. Use files\(\) instead:DeprecationWarning")


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_script("records")


def table_rows(out: str) -> dict[tuple[str, str, str], list[str]]:
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[0].startswith("k16/"):
            rows[(cells[0], cells[1], cells[2].split()[0])] = cells
    return rows


def test_table_has_every_implementation_and_codec(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--records", "2000", "--repeat", "1", "--budget", "5"])
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = table_rows(out)
    for workload in ("k16/v100", "k16/v1024"):
        for codec in CODECS:
            for impl in IMPLEMENTATIONS:
                cells = rows.get((workload, codec, impl))
                assert cells is not None, f"no row for {workload} {codec} {impl}:\n{out}"
                if not cells[8].startswith("n/a"):  # available: both operations measured
                    assert cells[4].endswith("M") and cells[5].endswith("M"), cells
                    assert cells[3] in ("yes", "no"), cells
    assert len(rows) == 2 * len(CODECS) * len(IMPLEMENTATIONS)


def test_json_output(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--records", "1500", "--value-size", "64", "--codecs", "none,zstd", "--repeat", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert doc["config"]["records"] == 1500
    got = {(r["codec"], r["implementation"]) for r in doc["results"]}
    assert got == {(c, i) for c in ("none", "zstd") for i in IMPLEMENTATIONS}
    for r in doc["results"]:
        assert not r["errors"], r
        if r["decode"] is not None:
            assert r["decode"]["timed_records"] == 1500
