"""The writer as each Kafka release writes (SPEC.md §8.3, R-IDX-06, R-CMP-08).

golden/kafka-<release>/writer/ holds golden/corpus/writer's cases and two of golden/jvm/cases/, replayed by that
release's own log layer (golden/jvm's WriterCases: UnifiedLog, Cleaner) with the cases' frozen clock. The
releases differ where Kafka changed: from 4.0.1 (KAFKA-806) a multi-batch append is indexed batch by batch, in
4.4 (KAFKA-20452) the cleaner keeps an emptied batch only at the high watermark. ``kafkalog write-case
--kafka-version <release>`` must reproduce every case of every release byte for byte, and a wrong release must
fail exactly the cases that show the change.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, REPO
from kafkalog.tools.writer_cases import compare_dirs, load_writer_cases, run_case

RELEASES = [
    line.strip()
    for line in (GOLDEN / "jvm" / "releases.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
]
CORPUS_400 = GOLDEN / "corpus" / "writer"  # Kafka 4.0.0's log layer
#: the cases whose files show KAFKA-806: follower appends of several batches, the cleaner's chunk appends
KAFKA_806 = {"follower-legacy", "follower-multibatch", "cleaner-pass-0", "cleaner-pass-1", "cleaner-empty-batch"}
PY = sys.executable


def _writer(release: str) -> Path:
    return GOLDEN / f"kafka-{release}" / "writer"


def _failing(root: Path, version: str, tmp: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for case in load_writer_cases(root):
        d = tmp / version / case.name / case.partition_dir
        d.mkdir(parents=True)
        run_case(case.path, d, version)
        if diffs := compare_dirs(d, case.expected):
            out[case.name] = diffs
    return out


@pytest.mark.rule("R-IDX-06", "R-CMP-08")
@pytest.mark.parametrize("release", RELEASES)
def test_write_case_writes_what_each_release_wrote(release: str, tmp_path: Path) -> None:
    """Every case of every release, byte for byte, by the code behind ``write-case --kafka-version <release>``."""
    cases = load_writer_cases(_writer(release))
    assert {c.name for c in cases} == {c.name for c in load_writer_cases(CORPUS_400)} | {
        "follower-multibatch",
        "cleaner-empty-batch",
    }
    assert _failing(_writer(release), release, tmp_path) == {}


@pytest.mark.rule("R-IDX-06", "R-CMP-08")
def test_the_conformance_command_passes_the_newest_release() -> None:
    """``kafkalog conformance --writer "kafkalog write-case --kafka-version <release> {case} {dir}"`` passes every
    case, as the command line runs it (a process per case), for the newest release. Every release's cases are
    written in-process by the same code (test_write_case_writes_what_each_release_wrote), and the command line
    takes an older release's name to that release's writer (test_kafka_version_usage): a second release's 23
    processes would test neither again."""
    release = RELEASES[-1]
    cases = load_writer_cases(_writer(release))
    proc = subprocess.run(
        [
            PY,
            "-m",
            "kafkalog",
            "conformance",
            "--corpus",
            str(_writer(release)),
            "-j",
            "2",
            "--writer",
            f"{PY} -m kafkalog write-case --kafka-version {release} {{case}} {{dir}}",
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"{len(cases)} cases, {len(cases)} passed, 0 failed" in proc.stdout


def _files(root: Path) -> dict[str, bytes]:
    return {f"{c.name}/{p.name}": p.read_bytes() for c in load_writer_cases(root) for p in sorted(c.expected.iterdir())}


def test_the_releases_differ_where_kafka_changed() -> None:
    """Kafka's own output: 4.0.2 to 4.3.1 write the same files, which differ from 4.0.0's only in the indexes of the
    multi-batch appends (KAFKA-806); 4.4.0 differs from 4.3.1 only where the cleaner dropped the emptied batch
    (KAFKA-20452), so that segment's .log and .timeindex."""
    old = _files(CORPUS_400)
    by_release = {r: _files(_writer(r)) for r in RELEASES}
    first = by_release["4.0.2"]
    changed = {name for name in old if first[name] != old[name]}
    assert changed == {
        "follower-legacy/00000000000000000000.index",
        "follower-legacy/00000000000000000000.timeindex",
        "follower-legacy/00000000000000000025.index",
        "follower-legacy/00000000000000000025.timeindex",
        "cleaner-pass-0/00000000000000000072.index",
        "cleaner-pass-0/00000000000000000072.timeindex",
        "cleaner-pass-1/00000000000000000000.index",
        "cleaner-pass-1/00000000000000000000.timeindex",
    }
    assert set(first) - set(old) == {
        n for n in first if n.split("/")[0] in ("follower-multibatch", "cleaner-empty-batch")
    }
    for release in ("4.1.2", "4.2.2", "4.3.1"):
        assert by_release[release] == first, release
    newest = by_release["4.4.0"]
    assert sorted(newest) == sorted(first)
    assert {n for n in first if newest[n] != first[n]} == {
        "cleaner-empty-batch/00000000000000000000.log",
        "cleaner-empty-batch/00000000000000000000.timeindex",
    }
    assert len(newest["cleaner-empty-batch/00000000000000000000.log"]) < len(
        first["cleaner-empty-batch/00000000000000000000.log"]
    )


@pytest.mark.rule("R-IDX-06", "R-CMP-08")
def test_another_release_fails_exactly_the_cases_that_show_the_change(tmp_path: Path) -> None:
    """Over 4.4.0's cases, 4.0.0's writer fails the multi-batch cases (and the cleaner's empty batch), 4.3's only
    the empty batch, the default (the newest) none; over 4.0.0's corpus the newest fails only the multi-batch cases."""
    newest = _writer("4.4.0")
    assert set(_failing(newest, "4.0.0", tmp_path)) == KAFKA_806
    assert set(_failing(newest, "4.3", tmp_path)) == {"cleaner-empty-batch"}
    assert _failing(newest, "4.4", tmp_path) == {}
    failing = _failing(CORPUS_400, "4.0.1", tmp_path)
    assert set(failing) == {"follower-legacy", "cleaner-pass-0", "cleaner-pass-1"}
    assert all(d.split(":")[0].endswith((".index", ".timeindex")) for ds in failing.values() for d in ds), failing


def _write_case(*args: str) -> subprocess.CompletedProcess[str]:
    """``kafkalog write-case ARGS`` run as a user runs it."""
    return subprocess.run([PY, "-m", "kafkalog", "write-case", *args], capture_output=True, text=True, check=False, cwd=REPO)


def test_kafka_version_usage(tmp_path: Path) -> None:
    """An unknown release is a usage error; no --kafka-version writes as the newest; the oldest release's name
    writes the oldest release's files (its cleaner keeps the emptied batch, which 4.4 drops: KAFKA-20452)."""
    case = _writer("4.4.0") / "roll-by-size"
    bad = _write_case("--kafka-version", "3.9", str(case), str(tmp_path / "o"))
    assert bad.returncode == 2 and "unknown Kafka release '3.9'" in bad.stderr
    ok = _write_case(str(case), str(tmp_path / "o"))  # default: the newest
    assert ok.returncode == 0, ok.stderr
    assert compare_dirs(tmp_path / "o", case / "expected") == []
    oldest = _writer(RELEASES[0]) / "cleaner-empty-batch"
    assert compare_dirs(oldest / "expected", _writer(RELEASES[-1]) / "cleaner-empty-batch" / "expected") != []
    old = _write_case("--kafka-version", RELEASES[0], str(oldest), str(tmp_path / "old"))
    assert old.returncode == 0, old.stderr
    assert compare_dirs(tmp_path / "old", oldest / "expected") == []
