"""Smoke tests of bench/decode.py and bench/segments.py: tiny runs print every table (no timing checks)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import bench_script

# kafka-python loads its protocol schemas with importlib.resources' deprecated read_text.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*is deprecated\. Use files\(\) instead:DeprecationWarning")




@pytest.fixture(scope="module")
def decode() -> Iterator[ModuleType]:
    yield from bench_script("decode")


@pytest.fixture(scope="module")
def segments() -> Iterator[ModuleType]:
    yield from bench_script("segments")


def _rows(out: str, first: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip().strip("|").split("|")] for line in out.splitlines() if line.startswith(f"| {first}")]


def test_decode_prints_every_table(decode: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rc = decode.main(
        ["--quick", "--records", "300", "--codecs", "none,lz4,zstd,gzip,snappy", "--budget", "2", "--repeat", "1", "--index-mb", "1", "--rss-log-mb", "2"]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    impls = {"kafkalog columnar", "kafkalog columnar views", "kafkalog objects", "aiokafka", "kafka-python"}
    for codec in ("none", "lz4", "zstd"):
        rows = [r for r in _rows(out, codec) if len(r) == 9]
        assert {r[3] for r in rows} == impls, out
        assert len(rows) == 5 * 2 * 2  # implementations x value sizes x batch sizes
        for r in rows:
            assert r[5].endswith(" M") or r[8].startswith("n/a"), r
            if r[3] != "aiokafka" and not r[8].startswith("n/a"):
                assert r[7].endswith("x"), r
    compressed = [r for c in ("lz4", "zstd", "gzip", "snappy") for r in _rows(out, c)]
    decomp = [r for r in compressed if len(r) == 10]
    assert len(decomp) == 4 * 2 * 2, out
    ways = [r for r in compressed if len(r) == 5]  # every decompress-only way of each workload
    assert {r[3] for r in ways} == set().union(*map(set, decode.DECOMPRESS_ONLY.values())), out
    assert len(ways) == sum(map(len, decode.DECOMPRESS_ONLY.values())) * 2 * 2, out
    assert _rows(out, ".index") and _rows(out, ".timeindex")
    memory = _rows(out, "objects") + _rows(out, "columnar") + _rows(out, "views")
    assert len(memory) == 3 and all(r[-1] == "" for r in memory), out


def test_segments_prints_the_table(segments: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc = segments.main(["--quick", "--size-mb", "2", "--segments", "3", "--lookups", "20", "--repeat", "1", "--dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    ops = [r[0] for r in (_rows(out, "open") + _rows(out, "offset") + _rows(out, "timestamp") + _rows(out, "header") + _rows(out, "decode"))]
    assert len(ops) == 5, out
    assert "3 segments" in out
    for r in _rows(out, "offset") + _rows(out, "timestamp"):
        assert r[-1] == "0 wrong", r
    assert list(tmp_path.iterdir()) == []  # the partition was removed
