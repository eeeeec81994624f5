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


#: the dumps of the state files beside the logs (golden/jvm StateFiles): the producer snapshot, the KRaft
#: bootstrap (bootstrap.checkpoint up to 4.3, the zero checkpoint in 4.4) and a KRaft metadata snapshot
STATE_KINDS = {
    "producer_snapshot": DumpOptions(),
    "decoded": DumpOptions(decoder="cluster-metadata"),
    "deep": DumpOptions(deep_iteration=True, print_data_log=True),
}
STATE_DUMPS = [
    (root, txt.name[: -len(".txt")])
    for root in GOLDENS
    for txt in sorted((root / "dump").glob("*.txt"))
    if txt.name.startswith(("producer_snapshot", "bootstrap_checkpoint", "zero_checkpoint", "metadata_snapshot"))
]


def _dumped_path(root: Path, name: str) -> str:
    """The file a golden dump is of: its first line is DumpLogSegments' ``Dumping <path>``."""
    first = (root / "dump" / f"{name}.txt").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("Dumping ")
    return first[len("Dumping "):]


def test_every_release_has_state_file_goldens() -> None:
    """Each release dumped its producer snapshot, its KRaft bootstrap (4.4: the zero checkpoint) and a
    metadata snapshot, decoded and not."""
    for root in GOLDENS:
        names = {name for r, name in STATE_DUMPS if r == root}
        boot = "zero_checkpoint" if root.name == "kafka-4.4.0" else "bootstrap_checkpoint"
        assert names == {"producer_snapshot", *(f"{b}-{k}" for b in (boot, "metadata_snapshot") for k in ("decoded", "deep"))}
    assert _dumped_path(GOLDENS[-1], "zero_checkpoint-decoded") == "__cluster_metadata-0/00000000000000000000-0000000000.checkpoint"
    assert _dumped_path(GOLDENS[0], "bootstrap_checkpoint-decoded") == "bootstrap.checkpoint"


@pytest.mark.rule("R-DEC-07", "R-KVER-02")
@pytest.mark.parametrize(("root", "name"), STATE_DUMPS, ids=lambda v: v.name if isinstance(v, Path) else v)
def test_state_files_dump_as_the_releases_dump_log_segments(root: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Producer snapshots (4.3's Java tool no longer ends a line without batch metadata with a space),
    bootstrap checkpoints and KRaft snapshots print, line for line, as each release printed them."""
    release = root.name[len("kafka-"):]
    monkeypatch.chdir(root)
    base = STATE_KINDS[name.rsplit("-", 1)[-1] if "-" in name else name]
    opts = DumpOptions(decoder=base.decoder, deep_iteration=base.deep_iteration, print_data_log=base.print_data_log,
                       kafka_version=release)
    out, err = io.StringIO(), io.StringIO()
    result = dump([_dumped_path(root, name)], opts, out, err)
    assert not result.errors, result.errors
    text = (root / "dump" / f"{name}.txt").read_text(encoding="utf-8")
    stderr = root / "dump" / f"{name}.stderr"
    ours, kafka = out.getvalue().splitlines(), text.splitlines()
    assert len(ours) == len(kafka) > 1
    for i, (mine, theirs) in enumerate(zip(ours, kafka, strict=True)):
        assert mine == theirs, f"{release} {name} line {i + 1}:\n ours:  {mine!r}\n kafka: {theirs!r}"
    assert err.getvalue() == (stderr.read_text(encoding="utf-8") if stderr.exists() else "")


def _auto_dump(root: Path, path: str, opts: DumpOptions) -> tuple[str, str]:
    """``dump`` with --kafka-version auto --verbose: its text and the release line it chose."""
    out, err = io.StringIO(), io.StringIO()
    opts = DumpOptions(decode=opts.decode, decoder=opts.decoder, deep_iteration=opts.deep_iteration,
                       print_data_log=opts.print_data_log, kafka_version="auto", verbose=True)
    result = dump([str(root / path)], opts, out, err)
    assert not result.errors, result.errors
    chosen = err.getvalue().split("read as Kafka ", 1)[1].split(" ", 1)[0]
    return out.getvalue().replace(f"Dumping {root}/", "Dumping "), chosen


def _golden_of(line: str) -> Path:
    return next(g for g in GOLDENS if g.name.startswith(f"kafka-{line}."))


@pytest.mark.rule("R-KVER-01")
@pytest.mark.parametrize("topic", TOPICS)
@pytest.mark.parametrize("root", GOLDENS, ids=lambda p: p.name)
def test_auto_picks_a_release_whose_dump_it_prints(root: Path, topic: str) -> None:
    """``--kafka-version auto`` reads each release's log as a release that wrote those bytes and prints
    that release's DumpLogSegments text: the log's own release, or an older one whose golden holds the
    very same bytes (4.1 to 4.4 write __transaction_state alike; auto takes the oldest)."""
    log = f"__{topic}-0/00000000000000000000.log"
    text, chosen = _auto_dump(root, log, DumpOptions(decode=True))
    own = root.name.startswith(f"kafka-{chosen}.")
    other = _golden_of(chosen)
    assert own or (other / log).read_bytes() == (root / log).read_bytes(), (root.name, topic, chosen)
    assert text == _expected(root if own else other, topic, "decoded")[0]


@pytest.mark.rule("R-KVER-01")
@pytest.mark.parametrize("root", GOLDENS, ids=lambda p: p.name)
def test_auto_takes_the_release_of_metadata_version(root: Path) -> None:
    """A controller's bootstrap records name the release's metadata.version (MetadataVersion.latestProduction):
    auto reads the bootstrap checkpoint as exactly that release, and prints its dump."""
    line = ".".join(root.name[len("kafka-"):].split(".")[:2])
    name = "zero_checkpoint-decoded" if line == "4.4" else "bootstrap_checkpoint-decoded"
    text, chosen = _auto_dump(root, _dumped_path(root, name), STATE_KINDS["decoded"])
    assert chosen == line
    assert text == (root / "dump" / f"{name}.txt").read_text(encoding="utf-8")


def test_auto_without_records_that_say_is_the_newest(tmp_path: Path) -> None:
    """A user topic's log says nothing of the release: auto prints it as the newest does; the writers
    refuse auto (no record shows their log layer's behaviour)."""
    root = GOLDENS[-1]
    part = tmp_path / "payments-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes((root / "__transaction_state-0" / "00000000000000000000.log").read_bytes())
    _, chosen = _auto_dump(tmp_path, "payments-0/00000000000000000000.log", DumpOptions())
    assert chosen == ".".join(map(str, NEWEST))
    for command in (["write-case", "--kafka-version", "auto", "case", "out"], ["compact", "--kafka-version", "auto", str(part)]):
        proc = subprocess.run([sys.executable, "-m", "kafkalog", *command], capture_output=True, text=True, check=False)
        assert proc.returncode == 2 and "auto reads the release from the records" in proc.stderr, proc.stderr


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
