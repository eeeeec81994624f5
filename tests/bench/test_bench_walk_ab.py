"""Smoke test of bench/walk_ab.py: HEAD's columnar module loaded beside the working tree's, both
decoding every data set to the same rows, a table row per set and header setting (no timing checks)."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from helpers import bench_script


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    yield from bench_script("walk_ab")


def test_both_versions_decode_every_set_alike(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    rc = bench.main(["--rev", "HEAD", "--rounds", "1", "--mb", "0.3"])
    out = capsys.readouterr()
    assert rc == 0, out.err  # 1 when the two versions' rows differ
    rows = [line for line in out.out.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [r.split("|")[2].strip() for r in rows] == ["no", "yes"] * 3
    assert {r.split("|")[1].strip().split(" (")[0] for r in rows} == {"1,000-record batches", "one-record batches, 3 headers", "real"}


def test_a_revision_without_the_module_is_a_usage_error(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        bench.main(["--rev", "no-such-revision-xyz", "--rounds", "1", "--mb", "0.1"])
    assert exc.value.code == 2
    assert "no-such-revision-xyz" in capsys.readouterr().err


def test_versions_that_decode_differently_fail_the_run(bench: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """A version that loses rows (here: one that yields no chunk) is reported, and the run exits 1."""
    from types import SimpleNamespace

    monkeypatch.setattr(bench, "load_revision", lambda rev, where: SimpleNamespace(iter_chunks=lambda reader, **kw: iter(())))
    assert bench.main(["--rev", "HEAD", "--rounds", "1", "--mb", "0.1"]) == 1
    assert "MISMATCH on 1,000-record batches" in capsys.readouterr().err
