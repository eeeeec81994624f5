"""Each Kafka release from 4.0 to 4.4, against what that release's own classes wrote and its own
DumpLogSegments printed (``golden/kafka-<release>/``, made by ``golden/jvm``): ``kafkalog dump
--decode --kafka-version <release>`` prints the same text, line for line, for every internal topic,
and so do the plain ``--deep-iteration --print-data-log`` and ``--skip-record-metadata``; stderr too
(Kafka printed nothing there).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.internal import NEWEST, RELEASES, parse_release
from kafkalog.tools.dump import DumpOptions, dump

GOLDENS = sorted(GOLDEN.glob("kafka-4.*"))
TOPICS = ["consumer_offsets", "share_group_state", "transaction_state", "cluster_metadata", "remote_log_metadata"]
KINDS = {
    "decoded": DumpOptions(decode=True),
    "deep": DumpOptions(deep_iteration=True, print_data_log=True),
    "skip": DumpOptions(decode=True, skip_record_metadata=True),
}


def _expected(root: Path, topic: str, kind: str) -> tuple[str, str]:
    stderr = root / "dump" / f"{topic}-{kind}.stderr"
    return (root / "dump" / f"{topic}-{kind}.txt").read_text(encoding="utf-8"), stderr.read_text(encoding="utf-8") if stderr.exists() else ""


def test_every_release_line_has_goldens() -> None:
    assert [".".join(p.name[len("kafka-"):].split(".")[:2]) for p in GOLDENS] == list(RELEASES)
    assert parse_release(RELEASES[-1]) == NEWEST


@pytest.mark.rule("R-DEC-01", "R-DEC-02", "R-DEC-03", "R-DEC-04", "R-DEC-07")
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("topic", TOPICS)
@pytest.mark.parametrize("root", GOLDENS, ids=lambda p: p.name)
def test_dump_equals_the_releases_dump_log_segments(root: Path, topic: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    release = root.name[len("kafka-"):]
    monkeypatch.chdir(root)
    out, err = io.StringIO(), io.StringIO()
    opts = KINDS[kind]
    opts = DumpOptions(decode=opts.decode, deep_iteration=opts.deep_iteration, print_data_log=opts.print_data_log,
                       skip_record_metadata=opts.skip_record_metadata, kafka_version=release)
    result = dump([f"__{topic}-0/00000000000000000000.log"], opts, out, err)
    assert not result.errors, result.errors
    text, stderr = _expected(root, topic, kind)
    ours, kafka = out.getvalue().splitlines(), text.splitlines()
    assert len(ours) == len(kafka) > 3
    for i, (mine, theirs) in enumerate(zip(ours, kafka, strict=True)):
        assert mine == theirs, f"{release} {topic} line {i + 1}:\n ours:  {mine}\n kafka: {theirs}"
    assert err.getvalue() == stderr


def test_the_cli_defaults_to_the_newest_release() -> None:
    """Without --kafka-version the CLI prints what the newest release prints (a transaction's state
    by name, 4.4); with 4.0 what 4.0 printed for the same bytes (its text form)."""
    root = GOLDENS[-1]
    log = "__transaction_state-0/00000000000000000000.log"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kafkalog", "dump", *args, log], capture_output=True, text=True, cwd=root, check=False)

    newest = run("--decode")
    assert newest.returncode == 0, newest.stderr
    assert newest.stdout == _expected(root, "transaction_state", "decoded")[0]
    assert '"transactionStatus":"PrepareEpochFence"' in newest.stdout
    old = run("--decode", "--kafka-version", "4.0")
    assert old.returncode == 0, old.stderr
    assert "key: transaction_metadata::transactionalId=" in old.stdout and "state=PrepareCommit" in old.stdout
    bad = run("--decode", "--kafka-version", "3.9")
    assert bad.returncode == 2 and "unknown Kafka release '3.9'" in bad.stderr


def test_the_spark_source_takes_a_kafka_version() -> None:
    """``kafkaVersion`` picks the release whose decoders fill Spark's ``decoded`` column; others are refused."""
    from kafkalog_spark.options import SourceOptionError, parse_options

    assert parse_options({"path": "/data", "kafkaVersion": "4.1.2"}).kafka_version == "4.1.2"
    assert parse_options({"path": "/data"}).kafka_version is None
    with pytest.raises(SourceOptionError, match="option kafkaVersion: unknown Kafka release '3.9'"):
        parse_options({"path": "/data", "kafkaVersion": "3.9"})
