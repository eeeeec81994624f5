"""Writer conformance (kafkalog.tools.writer_cases, ``kafkalog conformance --writer``, SPEC.md §8.3).

Expected directories are Kafka's: golden/corpus/writer/<case>/expected/ was written by Apache Kafka's
broker log layer (copied from ../shared/golden-kafka/writer) or by its log cleaner (golden/kafka/logdir
compacted-N). kafkalog must reproduce every file byte for byte; a deliberately wrong writer
(tests/wrong_writer.py) must fail exactly the cases its bug touches.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalog.tools.writer_cases as writer_cases
from helpers import GOLDEN, REPO, need_shared
from kafkalog.log.unified import LogConfig
from kafkalog.tools.writer_cases import compare_dirs, load_writer_cases, rules_for, run_case, run_writer_conformance

CORPUS = GOLDEN / "corpus" / "writer"
CASES = load_writer_cases(CORPUS)
#: the release whose log layer wrote golden/corpus/writer (and ../shared/golden-kafka/writer)
V400 = "4.0.0"
PY = sys.executable
WRONG = f"{PY} {REPO / 'tests' / 'wrong_writer.py'}"


def _run(case_dir: Path, tmp: Path, name: str) -> list[str]:
    out = tmp / name
    out.mkdir(parents=True)
    run_case(case_dir, out, V400)
    return compare_dirs(out, case_dir / "expected")


def test_the_corpus_holds_every_case() -> None:
    names = {c.name for c in CASES}
    assert len(names) == 21, sorted(names)
    assert {"cleaner-pass-0", "cleaner-pass-1", "roll-by-size", "recovery-bad-crc", "recompress-lz4", "recompress-snappy"} <= names
    for c in CASES:
        assert (c.path / "expected").is_dir(), c.name


@pytest.mark.rule("R-ROLL-01", "R-ROLL-02", "R-ROLL-03", "R-ROLL-05", "R-ROLL-07", "R-IDX-05", "R-IDX-06", "R-IDX-09", "R-IDX-10",
                  "R-IDX-11", "R-TIDX-03", "R-TIDX-04", "R-TXN-01", "R-SNAP-05", "R-SNAP-06", "R-WR-06", "R-RET-01", "R-RET-06",
                  "R-RCV-07", "R-RCV-09", "R-CMP-12", "R-CONF-07")
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kafkalog_writes_what_kafka_wrote(case: writer_cases.WriterCase, tmp_path: Path) -> None:
    assert _run(case.path, tmp_path, case.partition_dir) == []


def test_shared_writer_cases(tmp_path: Path) -> None:
    """The copies here are Kafka's cases unchanged, and kafkalog passes the originals too."""
    shared = need_shared("golden-kafka/writer")
    originals = load_writer_cases(shared)
    assert len(originals) == 19
    for c in originals:
        mine = CORPUS / c.name
        assert (mine / "case.json").read_bytes() == (c.path / "case.json").read_bytes(), c.name
        assert (mine / "input.log").read_bytes() == (c.path / "input.log").read_bytes(), c.name
        assert compare_dirs(mine / "expected", c.path / "expected") == [], c.name
        assert _run(c.path, tmp_path, c.name) == [], c.name


def test_compare_names_the_file_the_byte_and_the_rule(tmp_path: Path) -> None:
    case = CORPUS / "roll-by-size"
    out = tmp_path / "out"
    out.mkdir()
    run_case(case, out, V400)
    idx = out / "00000000000000000028.index"
    data = bytearray(idx.read_bytes())
    data[5] ^= 0x01
    idx.write_bytes(bytes(data))
    (out / "00000000000000000147.snapshot").unlink()
    (out / "00000000000000000999.log").write_bytes(b"")
    diffs = compare_dirs(out, case / "expected")
    assert diffs == [
        f"00000000000000000028.index: byte 5 is 0x{data[5]:02x}, expected 0x{data[5] ^ 1:02x} (48 bytes, expected 48) "
        f"[{', '.join(rules_for('x.index'))}]",
        f"00000000000000000147.snapshot: missing [{', '.join(rules_for('x.snapshot', presence=True))}]",
        f"00000000000000000999.log: extra file (0 bytes) [{', '.join(rules_for('x.log', presence=True))}]",
    ]
    assert "R-IDX-06" in rules_for("00000000000000000028.index") and "R-TIDX-04" in rules_for("0.timeindex")


# ------------------------------------------------------------------------------ a wrong writer
def _eager_index_cases() -> set[str]:
    """Cases whose expected/ holds a .log without its .index (Kafka's lazy indexes: an empty segment never appended to)."""
    return {c.name for c in CASES if any(not (c.expected / (p.stem + ".index")).exists() for p in c.expected.glob("*.log"))}


def _lag_roll_cases() -> set[str]:
    """Cases that append to a compacted topic whose max.compaction.lag.ms is below segment.ms."""
    out = set()
    for c in CASES:
        spec = c.spec
        cfg = spec["topicConfig"]
        if ("compact" in cfg.get("cleanup.policy", []) and cfg.get("max.compaction.lag.ms", 2**63) < cfg.get("segment.ms", 604800000)
                and any(op["op"] == "append" for op in spec["ops"])):
            out.add(c.name)
    return out


#: index.interval.bytes forced to 0 changes every case but: the two with index.interval.bytes=1 (every append
#: of more than one byte already gets an entry there) and cleaner-pass-0 (each cleaned segment is one append,
#: which never gets an entry: there is nothing before it in the segment)
_INDEX_EVERY_APPEND_PASSES = {"roll-by-offset-index-full", "roll-by-time-index-full", "cleaner-pass-0"}


@pytest.mark.rule("R-IDX-06", "R-IDX-09", "R-ROLL-02")
@pytest.mark.parametrize("bug", ["index-every-append", "eager-indexes", "no-lag-roll"])
def test_a_wrong_writer_fails_exactly_the_cases_its_bug_touches(bug: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = {
        "index-every-append": {c.name for c in CASES} - _INDEX_EVERY_APPEND_PASSES,
        "eager-indexes": _eager_index_cases(),
        "no-lag-roll": _lag_roll_cases(),
    }[bug]
    assert expected
    if bug == "index-every-append":
        config = writer_cases.case_config
        monkeypatch.setattr(writer_cases, "case_config", lambda spec, version=None: dataclasses.replace(config(spec, version), index_interval_bytes=0))
    elif bug == "no-lag-roll":
        monkeypatch.setattr(LogConfig, "max_segment_ms", property(lambda self: self.segment_ms))
    failing = {}
    for c in CASES:
        out = tmp_path / c.name
        out.mkdir()
        run_case(c.path, out, V400)
        if bug == "eager-indexes":  # as tests/wrong_writer.py: both indexes made with each segment (trimmed: empty)
            for p in list(out.glob("*.log")):
                for suffix in (".index", ".timeindex"):
                    if not p.with_suffix(suffix).exists():
                        p.with_suffix(suffix).write_bytes(b"")
        diffs = compare_dirs(out, c.expected)
        if diffs:
            failing[c.name] = diffs
    assert set(failing) == expected
    kinds = {d.split(":")[0].rsplit(".", 1)[-1] for ds in failing.values() for d in ds}
    assert kinds <= {"index", "timeindex", "log", "snapshot"}, kinds
    if bug == "eager-indexes":
        assert all(d.endswith("[R-ROLL-05, R-IDX-09]") and "extra file" in d for ds in failing.values() for d in ds)


class _OtherCompressors:
    """The lz4 and snappy compressors of the Python packages: valid blocks, other bytes than the
    JVM's (kafkalog used them before it followed lz4-java and libsnappy)."""

    @staticmethod
    def lz4_block(src: bytes) -> bytes:
        import lz4.block

        return lz4.block.compress(src, mode="default", store_size=False)

    @staticmethod
    def snappy_raw(src: bytes) -> bytes:
        import cramjam

        return bytes(cramjam.snappy.compress_raw(src))


@pytest.mark.rule("R-WR-11", "R-WR-12", "R-LZ4-07", "R-SNAPPY-05")
def test_other_compressors_fail_exactly_the_recompression_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker's recompression into lz4 and snappy needs the JVM's compressors: with others the
    two recompress cases fail on their .log (and the indexes that point into it), the rest pass."""
    from kafkalog.format import compression

    monkeypatch.setattr(compression, "_block", _OtherCompressors())
    failing = {}
    for c in CASES:
        out = tmp_path / c.name
        out.mkdir()
        run_case(c.path, out, V400)
        if diffs := compare_dirs(out, c.expected):
            failing[c.name] = diffs
    assert set(failing) == {"recompress-lz4", "recompress-snappy"}
    assert all(any(d.startswith("00000000000000000000.log: byte ") for d in ds) for ds in failing.values()), failing


# ------------------------------------------------------------------------------------ the CLI
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "kafkalog", *args], capture_output=True, text=True, check=False, cwd=REPO)


def test_cli_conformance_writer_passes_kafkalog_and_fails_a_wrong_writer() -> None:
    ok = _cli("conformance", "--writer", f"{PY} -m kafkalog write-case --kafka-version {V400} {{case}} {{dir}}", "--case", "cleaner-pass-0", "--case", "roll-compacted-max-lag", "-j", "2")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "2 cases, 2 passed, 0 failed" in ok.stdout
    bad = _cli("conformance", "--json", "--writer", f"{WRONG} no-lag-roll {{case}} {{dir}}", "--case", "roll-compacted-max-lag", "--case", "roll-by-size")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    rows = {r["case"]: r for r in map(json.loads, bad.stdout.splitlines())}
    assert rows["roll-by-size"]["impl"] == "pass"
    lag = rows["roll-compacted-max-lag"]
    assert lag["impl"] == "fail" and lag["kind"] == "writer"
    assert lag["details"][0].startswith("00000000000000000000.index: 104 bytes, expected 16 (equal up to byte 16) [R-IDX-05")
    assert any(d.startswith("00000000000000000007.log: missing [R-ROLL-01") for d in lag["details"])


def test_cli_usage_and_errors(tmp_path: Path) -> None:
    assert _cli("conformance", "--writer", "true {case}", "--case", "roll-by-size").returncode == 2  # no {dir}
    crash = _cli("conformance", "--writer", f"{PY} -c 'import sys; sys.exit(3)' {{case}} {{dir}}", "--case", "roll-by-size")
    assert crash.returncode == 1 and "exit 3" in crash.stdout
    assert _cli("conformance", "--writer", "x {dir}", "--corpus", str(tmp_path / "none")).returncode == 3
    assert _cli("write-case", str(tmp_path), str(tmp_path / "out")).returncode == 3  # no case.json
    out = tmp_path / "out"
    r = _cli("write-case", "--kafka-version", V400, str(CORPUS / "leader-epochs"), str(out))
    assert r.returncode == 0, r.stderr
    assert compare_dirs(out, CORPUS / "leader-epochs" / "expected") == []
    assert _cli("write-case", str(CORPUS / "leader-epochs"), str(out)).returncode == 2  # not empty


def test_runner_runs_commands_in_parallel_and_in_order() -> None:
    cases = [c for c in CASES if c.name in ("leader-epochs", "follower-legacy")]
    results = run_writer_conformance(cases, f"{PY} -m kafkalog write-case --kafka-version {V400} {{case}} {{dir}}", jobs=2)
    assert [(r.case, r.impl) for r in results] == [("follower-legacy", "pass"), ("leader-epochs", "pass")]
    with pytest.raises(ValueError, match=r"\{dir\}"):
        run_writer_conformance(cases, "true {case}")
