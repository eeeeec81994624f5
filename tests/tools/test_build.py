"""`dump --json --lossless | build` gives back the stored bytes, for every .log file of golden/ and
../shared (every magic, every codec, whoever compressed it); Kafka's own canonical dump builds back to
Kafka's bytes where it is lossless. (Batches other clients built: tests/format/records/test_differential.py.)"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, SHARED, lossless_copy, read_jsonl
from kafkalog import BuildError, LogReader
from kafkalog.tools.canonical import build_log

KAFKA_LOGS = sorted(p for p in (GOLDEN / "kafka").rglob("*.log") if p.stat().st_size)


def _compressions(path: Path) -> set[str]:
    with LogReader(path) as r:
        return {b.compression.label for b in r.batches()}


def _has_v2_log_append_time(path: Path) -> bool:
    with LogReader(path) as r:
        return any(b.magic == 2 and b.timestamp_type.value == "LogAppendTime" for b in r.batches())


def _expected_lines(path: Path) -> list[dict]:
    """Kafka's own dump lines for one golden .log file."""
    rel = path.relative_to(GOLDEN / "kafka")
    if rel.parts[0] == "internal":  # internal/<partition>/F.log: Kafka's dump is internal/dump/<partition>.jsonl
        dump_file = GOLDEN / "kafka" / "internal" / "dump" / f"{rel.parts[1]}.jsonl"
    else:
        dump_file = GOLDEN / "kafka" / "dump" / f"{rel.parts[0]}.jsonl"
    name = "/".join(rel.parts[1:])
    return [d for d in read_jsonl(dump_file) if d["file"] == name]


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalog", *args], input=stdin, capture_output=True, text=True, check=False)


#: Kafka's view of a v2 LogAppendTime batch replaces each record's stored timestamp by the batch's,
#: so only the --lossless form (tested for every file) can rebuild those files' bytes.
CREATE_TIME = [p for p in KAFKA_LOGS if not _has_v2_log_append_time(p)]
assert {c for p in KAFKA_LOGS for c in _compressions(p)} == {"none", "gzip", "snappy", "lz4", "zstd"}


def _id(p: Path) -> str:
    return str(p.relative_to(GOLDEN / "kafka"))


@pytest.mark.rule("R-CONF-02", "R-JSON-11", "R-WR-11")
@pytest.mark.parametrize("path", CREATE_TIME, ids=_id)
def test_rebuild_from_kafkas_dump_is_byte_identical(path: Path) -> None:
    """Kafka's canonical lines (its own dump) build back to Kafka's exact bytes, compressed
    batches included."""
    import json

    lines = [json.dumps(d) for d in _expected_lines(path)]
    assert b"".join(build_log(lines)) == path.read_bytes()


@pytest.mark.rule("R-JSON-10", "R-JSON-11", "R-WR-11", "R-LZ4-07", "R-SNAPPY-05")
@pytest.mark.parametrize("path", KAFKA_LOGS, ids=_id)
def test_cli_dump_lossless_build_is_byte_identical(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compressed batches too: the rebuilt payloads are Kafka's (gzip, snappy, lz4 and zstd alike).
    The commands' entry point runs in this process (two interpreters per file cost more than the
    commands); the pipe between two processes is the next test's."""
    from kafkalog.tools.cli import main

    assert main(["dump", "--json", "--lossless", str(path)]) == 0
    dumped, err = capsys.readouterr()
    assert err == ""
    out = tmp_path / "rebuilt.log"
    monkeypatch.setattr("sys.stdin", io.StringIO(dumped))
    assert main(["build", "-o", str(out)]) == 0, capsys.readouterr().err
    assert out.read_bytes() == path.read_bytes()


def test_cli_dump_lossless_piped_to_build_between_processes(tmp_path: Path) -> None:
    """``kafkalog dump --json --lossless FILE | kafkalog build -o OUT`` as a shell runs it: the
    copy of Kafka's zstd batches is their bytes."""
    path = GOLDEN / "kafka" / "records" / "v2-zstd" / "00000000000000000000.log"
    dumped = _cli("dump", "--json", "--lossless", str(path))
    assert dumped.returncode == 0, dumped.stderr
    out = tmp_path / "rebuilt.log"
    built = _cli("build", "-o", str(out), stdin=dumped.stdout)
    assert built.returncode == 0, built.stderr
    assert out.read_bytes() == path.read_bytes()


#: Objects Aiven's tiered-storage plug-in wrote (``<base>-<segment id>.log``): dump reads the segment
#: through the manifest beside them, so their copy is that segment, not the object.
_TIERED_OBJECT = re.compile(r"\d{20}-[A-Za-z0-9_-]{22}\.log")


def _damaged(path: Path) -> bool:
    """Files damaged on purpose: the bad corpus cases, and the segment a writer case flipped a byte of
    before recovery. A reader refuses them or finds a bad CRC, which build does not copy (R-JSON-11)."""
    return "bad" in path.parts or path.parts[-3:-1] == ("recovery-bad-crc", "before-open")


def _every_log(root: Path, marks: tuple[pytest.MarkDecorator, ...] = ()) -> list:
    if not root.is_dir():
        return []
    return [pytest.param(p, id=str(p.relative_to(root.parent)), marks=marks) for p in sorted(root.rglob("*.log"))
            if p.is_file() and p.stat().st_size and not _TIERED_OBJECT.fullmatch(p.name) and not _damaged(p)]


@pytest.mark.rule("R-JSON-10", "R-JSON-11")
@pytest.mark.parametrize("path", _every_log(GOLDEN) + _every_log(SHARED, (pytest.mark.shared,)))
def test_every_log_file_copies_byte_identical(path: Path) -> None:
    """Every .log of golden/ and ../shared (real brokers' data, whatever client compressed it), through
    the dump and build commands' code: the copy is the file's bytes, up to a torn tail (not copied)."""
    copy, errors = lossless_copy(path)
    assert not errors
    with LogReader(path) as reader:
        for _ in reader.batches():
            pass
        end = path.stat().st_size if reader.tail is None else reader.tail.position
    assert copy == path.read_bytes()[:end]


@pytest.mark.parametrize(
    "text,needle",
    [
        ("not json\n", "line 1: not JSON"),
        ('{"type":"record","offset":0}\n', "before any batch"),
        ('{"type":"batch","magic":2}\n', "missing field"),
        ('{"type":"batch","baseOffset":0,"lastOffset":0,"magic":7,"compression":"none","timestampType":"CreateTime","maxTimestamp":0,"attributes":0}\n', "unsupported magic"),
        ('{"type":"batch","baseOffset":0,"lastOffset":0,"magic":1,"compression":"gzip","timestampType":"CreateTime","maxTimestamp":0,"attributes":1,"payload":"!!"}\n', "payload: not base64"),
    ],
)
def test_build_rejects_bad_json_with_line_numbers(text: str, needle: str, tmp_path: Path) -> None:
    with pytest.raises(BuildError, match=needle):
        list(build_log(text.splitlines()))
    proc = _cli("build", "-o", str(tmp_path / "x.log"), stdin=text)
    assert proc.returncode == 2
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.log").exists()
