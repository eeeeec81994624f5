"""`kafkalog dump --json` against Kafka's own dump of every golden file (bundled and shared)."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, SHARED, lost_partitions, need_shared, read_jsonl, real_set_root, real_sets
from kafkalog.tools.dump import DumpOptions, dump

BUNDLED_REAL = [pytest.param(n, s, e, id=f"bundled-{n}") for n, s, e in real_sets(GOLDEN / "real")]
SHARED_REAL_NAMES = sorted(p.name[: -len(".jsonl.gz")] for p in (SHARED / "golden-real" / "expected").glob("*.jsonl.gz"))


def _dump_json(path: Path) -> list[dict]:
    import json

    # a golden-real copy that lacks some .log files is dumped with allow_gaps, and exactly those
    # partitions are reported (that the dump fails without it is tests/tools/test_dump_gaps.py's)
    lost = lost_partitions(path)
    out, err = io.StringIO(), io.StringIO()
    result = dump([str(path)], DumpOptions(fmt="json", allow_gaps=bool(lost)), out, err)
    assert not result.errors, result.errors
    assert {Path(g.directory).name for g in result.gaps} == lost
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _assert_same(got: list[dict], expected: list[dict]) -> None:
    assert len(got) == len(expected), f"{len(got)} lines, Kafka's dump has {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        if g != e:
            diff = {k: (g.get(k), e.get(k)) for k in set(g) | set(e) if g.get(k) != e.get(k)}
            pytest.fail(f"line {i + 1} ({e.get('file')} {e.get('type')}): (ours, Kafka's) differ in {diff}")


@pytest.mark.rule("R-CONF-01", "R-JSON-02", "R-K4-01")
@pytest.mark.parametrize("folder,expected", [("records", "records.jsonl"), ("logdir", "logdir.jsonl")])
def test_bundled_golden_kafka(folder: str, expected: str) -> None:
    _assert_same(_dump_json(GOLDEN / "kafka" / folder), read_jsonl(GOLDEN / "kafka" / "dump" / expected))


@pytest.mark.rule("R-CONF-01", "R-NAME-13")
@pytest.mark.parametrize("name,set_dir,expected_file", BUNDLED_REAL)
def test_bundled_golden_real(name: str, set_dir: Path, expected_file: Path) -> None:
    expected = read_jsonl(expected_file)
    _assert_same(_dump_json(real_set_root(set_dir, expected)), expected)


@pytest.mark.parametrize("folder,expected", [("records", "records.jsonl"), ("logdir", "logdir.jsonl")])
def test_shared_golden_kafka(folder: str, expected: str) -> None:
    base = need_shared("golden-kafka")
    _assert_same(_dump_json(base / folder), read_jsonl(base / "dump" / expected))


@pytest.mark.parametrize("name", SHARED_REAL_NAMES or [pytest.param("<none>", marks=pytest.mark.skip(reason=f"{SHARED}/golden-real is absent"))])
def test_shared_golden_real(name: str) -> None:
    base = need_shared("golden-real")
    expected = read_jsonl(base / "expected" / f"{name}.jsonl.gz")
    _assert_same(_dump_json(real_set_root(base / name, expected)), expected)


def test_cli_dump_json_matches_kafka(tmp_path: Path) -> None:
    """The console entry point prints the same lines (checked on the Kafka-written records)."""
    proc = subprocess.run(
        [sys.executable, "-m", "kafkalog", "dump", "--json", str(GOLDEN / "kafka" / "records")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    import json

    got = [json.loads(line) for line in proc.stdout.splitlines()]
    _assert_same(got, read_jsonl(GOLDEN / "kafka" / "dump" / "records.jsonl"))
