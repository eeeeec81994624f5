"""A short, seeded fuzz run over every reader (the long one is bench/fuzz.py)."""

from __future__ import annotations

import importlib.util

from helpers import REPO

_spec = importlib.util.spec_from_file_location("kafkalog_fuzz", REPO / "bench" / "fuzz.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)


def test_every_reader_has_seeds() -> None:
    for name, (_, seeds) in fuzz.TARGETS.items():
        assert seeds, f"no seed files for {name}"


def test_seeded_fuzz_run_finds_nothing() -> None:
    out = fuzz.fuzz(6000, seed=1)
    assert sum(out.tried.values()) == 6000
    assert sum(out.errors.values()) > 500  # the mutations do reach the error paths
    assert not out.crashes, out.crashes[:3]
    assert not out.hangs, [(n, s) for n, _, s in out.hangs[:3]]


def test_fuzz_detects_a_non_kafkalog_exception() -> None:
    """The harness itself can fail: a reader raising anything else is reported as a crash."""

    def broken(data: bytes) -> None:
        raise IndexError("boom")

    out = fuzz.Outcome()
    fuzz.run_one("broken", broken, b"x", out)
    assert out.crashes and "IndexError" in out.crashes[0][2]


def test_inputs_the_fuzzers_found_are_handled() -> None:
    """Every input a fuzzer once crashed a reader with (golden/fuzz/) now decodes or is rejected cleanly."""
    found = sorted((REPO / "golden" / "fuzz").glob("*.bin"))
    assert found
    for path in found:
        reader = path.name.split("-", 1)[0]
        out = fuzz.Outcome()
        fuzz.run_one(reader, fuzz.TARGETS[reader][0], path.read_bytes(), out)
        assert not out.crashes, (path.name, out.crashes[0][2])
        assert not out.hangs, path.name


def test_legacy_inner_offsets_wrap_as_java_longs() -> None:
    """Kafka adds the wrapper's base to each inner offset in long arithmetic: a corrupt wrapper
    whose sum overflows gives wrapped offsets, not an overflow (golden/fuzz/ README)."""
    from kafkalog import LogReader

    data = (REPO / "golden" / "fuzz" / "log-legacy-inner-offset-overflow.bin").read_bytes()
    offsets = [r.offset for b in LogReader(data).batches() for r in b.records()]
    assert offsets and all(-(2**63) <= o < 2**63 for o in offsets)
