"""Crash safety: a writer SIGKILLed at random points loses no flushed record (bench/crash.py, a short fixed-seed run).

The harness forks writers that append through :class:`kafkalog.log.unified.Log` and report each offset
range whose ``flush()`` returned, kills them, tears the unflushed tail of the active segment,
reopens the directory as after an unclean shutdown and checks every flushed record and
``kafkalog verify``. The long run is ``python bench/crash.py``.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import bench_script
from kafkalog.log.unified import Log

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the harness forks its writers")


@pytest.fixture(scope="module")
def crash() -> Iterator[ModuleType]:
    yield from bench_script("crash")


def test_kill_points_lose_no_flushed_record(crash: ModuleType) -> None:
    stats = crash.run(20, seed=7, max_run_s=0.3)
    total = stats.total()
    assert total.kill_points == 20
    assert total.acked > 0 and total.checked >= total.acked, crash.table(stats)
    assert stats.ok, "\n".join([crash.table(stats), *stats.problems])
    assert total.lost == 0 and total.verify_failures == 0


def test_tear_reaches_only_past_the_flushed_point(crash: ModuleType, tmp_path: Path) -> None:
    """The harness's own damage never touches flushed bytes, so a loss it reports is kafkalog's."""
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    log = Log.open(pdir, crash.DirConfig(65536, 0, 4096, 1, False).log_config(), writable=True)
    for _ in range(3):
        b = crash.RecordBatchBuilder(0)
        b.append(crash.T0, b"k", b"v" * 100)
        log.append(b.build())
    log.flush()
    flushed_size = log.active_segment.size
    for _ in range(2):
        b = crash.RecordBatchBuilder(0)
        b.append(crash.T0, b"k", b"w" * 100)
        log.append(b.build())
    log.close()
    path = pdir / f"{0:020d}.log"
    original = path.read_bytes()
    rng = random.Random(5)
    for kind in ("truncate", "zero", "garbage"):
        for _ in range(20):
            path.write_bytes(original)
            crash.tear(str(pdir), crash.Flushed(0, flushed_size, 0, 0), kind, rng)
            assert path.read_bytes()[:flushed_size] == original[:flushed_size]
    changed = 0
    for _ in range(20):
        path.write_bytes(original)
        crash.tear(str(pdir), crash.Flushed(0, flushed_size, 0, 0), "garbage", rng)
        changed += path.read_bytes() != original
    assert changed > 0  # the tear does damage the unflushed tail


def test_a_lost_flushed_record_is_reported(crash: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a tear that also cuts flushed bytes is seen as lost records."""
    real_tear = crash.tear

    def overreaching(pdir: str, flushed: object, kind: str, rng: random.Random) -> None:
        real_tear(pdir, crash.Flushed(flushed.base, 0, 0, 0), "truncate", rng)  # type: ignore[attr-defined]
        bases = crash._seg_files(pdir)
        with open(os.path.join(pdir, f"{bases[-1]:020d}.log"), "r+b") as f:
            f.truncate(0)

    monkeypatch.setattr(crash, "tear", overreaching)
    stats = crash.run(4, seed=11, max_run_s=0.3)
    assert stats.total().lost > 0, crash.table(stats)
    assert not stats.ok
