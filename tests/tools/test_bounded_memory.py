"""Peak RSS of each reader (scan, export, verify, info, cat) in a fresh process: bounded by the read chunk and the
Arrow batch, not by the size of a segment, and growing by at most a few KB per partition (issue 36's bounded memory).

The data comes from bench/scale.py's generator (kafkalog's own writer). The heavy variants (one 1 GB segment,
100,000 partitions) are ``bench/scale.py --memory``; these are the cheap ones: a 256 MB segment and 3,000 tiny
partitions against 300."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import bench_script

SEGMENT_BYTES = 256 * 1000**2
#: what a reader may hold beyond the interpreter, pyarrow and one read chunk (8 MB) with its Arrow batch: a reader
#: that held the segment (256 MB) or its records fails
SEGMENT_BOUND_MB = 200
#: per partition planned ahead (its files' names and sizes, checkpoint entries, a plan): 100,000 partitions stay under 1 GB
PER_PARTITION_KB = 8


@pytest.fixture(scope="module")
def scale() -> Iterator[ModuleType]:
    yield from bench_script("scale")


#: runs its arguments as a child and prints the child's peak RSS (KB). A child started straight from the test's
#: process would count that process's own peak: Linux keeps the larger of the old and new peak across exec,
#: and the pytest worker may have grown large before this test.
_MEASURE = "import os, subprocess, sys\np = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)\n" \
    "_, status, ru = os.wait4(p.pid, 0)\nprint(os.waitstatus_to_exitcode(status), ru.ru_maxrss)"


def peak_rss_mb(*args: str) -> float:
    """The peak RSS (MB) of ``python -m kafkalog ARGS`` (``scan``: kafkalog.scan over every batch), stdout discarded."""
    if args[0] == "scan":
        cmd = [sys.executable, "-c", "import sys, kafkalog\nfor b in kafkalog.scan(sys.argv[1]): pass", *args[1:]]
    else:
        cmd = [sys.executable, "-m", "kafkalog", *args]
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *cmd], capture_output=True, text=True, check=True)
    code, maxrss = proc.stdout.split()
    assert code == "0", proc.stderr
    return int(maxrss) / 1024


def commands(data: Path, out: Path, topic: str) -> dict[str, tuple[str, ...]]:
    return {
        "scan": ("scan", str(data)),
        "export": ("export", "-o", str(out), str(data)),
        "verify": ("verify", str(data)),
        "info": ("info", str(data)),
        "cat": ("cat", "-t", topic, "-p", "0", "-f", "%o\\n", str(data)),
    }


@pytest.fixture(scope="module")
def one_segment(scale: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("segment")
    scale.generate(root, SEGMENT_BYTES, 0, jobs=1, partitions=1, segment_bytes=2**31 - 1, value_size=16384, batch_records=16)
    data = root / "data"
    logs = list(data.glob("*/*.log"))
    assert len(logs) == 1 and logs[0].stat().st_size > 0.9 * SEGMENT_BYTES
    return data


@pytest.mark.parametrize("command", ["scan", "export", "verify", "info", "cat"])
def test_one_large_segment(one_segment: Path, tmp_path: Path, command: str) -> None:
    topic = next(one_segment.glob("*-0")).name.rpartition("-")[0]
    rss = peak_rss_mb(*commands(one_segment, tmp_path / "out", topic)[command])
    assert rss < SEGMENT_BOUND_MB, f"{command} over one {SEGMENT_BYTES / 1e6:.0f} MB segment peaked at {rss:.0f} MB"


@pytest.fixture(scope="module")
def tiny(scale: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return scale.generate_tiny(root / "few", 300), scale.generate_tiny(root / "many", 3000)


@pytest.mark.parametrize("command", ["scan", pytest.param("export", marks=pytest.mark.slow), "verify", "info", "cat"])  # export: 3,300 fsynced files
def test_many_tiny_partitions(tiny: tuple[Path, Path], tmp_path: Path, command: str) -> None:
    few, many = (peak_rss_mb(*commands(d, tmp_path / f"out{k}", "tiny")[command]) for k, d in enumerate(tiny))
    per_kb = (many - few) * 1024 / 2700
    assert per_kb < PER_PARTITION_KB, f"{command}: {few:.0f} MB over 300 tiny partitions, {many:.0f} MB over 3,000 ({per_kb:.1f} KB each)"
