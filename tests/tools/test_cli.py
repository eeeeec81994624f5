"""The command line: kafka-dump-log's text layout, exit codes, messages on stderr."""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, need_shared
from kafkalog.tools.dump import DumpOptions, dump


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalog", *args], input=stdin, capture_output=True, text=True, check=False)


def _kafka_text_blocks(path: Path) -> dict[str, list[str]]:
    """kafka-dump-log's output split per dumped file, keyed by the path after the set's root."""
    blocks: dict[str, list[str]] = {}
    current: list[str] = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("Dumping "):
                rel = line[len("Dumping ./") :]
                current = blocks.setdefault(rel.split("/", 1)[1] if "/" in rel else rel, [])
            else:
                current.append(line)
    return blocks


def _find_root(set_dir: Path, rel: str) -> Path:
    for p in set_dir.rglob(Path(rel).name):
        if p.as_posix().endswith("/" + rel):
            return Path(p.as_posix()[: -len(rel) - 1])
    raise AssertionError(f"{rel} not found under {set_dir}")


def _check_text_against_kafka(set_dir: Path, decoded: Path) -> int:
    """Our text dump with --decode against kafka-dump-log's with its decoders: every line equal.

    Kafka's files were made with --offsets-decoder/--cluster-metadata-decoder over the internal
    topics' .log files and KRaft snapshots (.checkpoint) of each set, as Kafka 4.0 prints them (so
    with --kafka-version 4.0: 4.1 on prints a LEADER_CHANGE's content).
    """
    checked = 0
    for rel, kafka_lines in _kafka_text_blocks(decoded).items():
        path = _find_root(set_dir, rel) / rel
        out = io.StringIO()
        result = dump([str(path)], DumpOptions(decode=True, kafka_version="4.0"), out, io.StringIO())
        assert not result.errors, result.errors
        ours = out.getvalue().splitlines()[1:]  # drop our "Dumping <path>" line
        assert len(ours) == len(kafka_lines), f"{rel}: {len(ours)} lines, kafka-dump-log printed {len(kafka_lines)}"
        for i, (mine, theirs) in enumerate(zip(ours, kafka_lines, strict=True)):
            assert mine == theirs, f"{rel} line {i + 2}:\n ours:  {mine[:300]}\n kafka: {theirs[:300]}"
            checked += 1
    return checked


BUNDLED_DECODED = sorted((GOLDEN / "real" / "expected-decoded").glob("*.txt.gz"))


@pytest.mark.parametrize("decoded", BUNDLED_DECODED, ids=lambda p: p.name.split(".")[0])
def test_text_layout_matches_kafka_dump_log_bundled(decoded: Path) -> None:
    name = decoded.name.split(".")[0]
    assert _check_text_against_kafka(GOLDEN / "real" / name, decoded) > 0


def test_text_layout_matches_kafka_dump_log_shared() -> None:
    base = need_shared("golden-real")
    total = 0
    for decoded in sorted((base / "expected-decoded").glob("*.txt.gz")):
        total += _check_text_against_kafka(base / decoded.name.split(".")[0], decoded)
    assert total > 100_000


def test_torn_tail_reported_like_kafka_dump_log(tmp_path: Path) -> None:
    src = (GOLDEN / "kafka" / "records" / "v2-none" / "00000000000000000000.log").read_bytes()
    torn = tmp_path / "00000000000000000000.log"
    torn.write_bytes(src + src[:40])
    text = _cli("dump", str(torn))
    assert text.returncode == 0
    assert text.stdout.rstrip().endswith("Found 40 invalid bytes at the end of 00000000000000000000.log")
    assert text.stdout.count("baseOffset:") == 2
    js = _cli("dump", "--json", str(torn))
    assert js.returncode == 0
    assert js.stdout.count('"type":"batch"') == 2
    assert "Found 40 invalid bytes at the end of 00000000000000000000.log" in js.stderr


def test_corrupt_file_exit_1_with_position_and_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "00000000000000000000.log"
    bad.write_bytes(b"\x00" * 8 + b"\x00\x00\x00\x05" + b"\x00" * 20)  # declared size 5 < 14
    proc = _cli("dump", str(bad))
    assert proc.returncode == 1
    assert "position 0" in proc.stderr and str(bad) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_path_exit_3() -> None:
    proc = _cli("dump", "/nonexistent/kafkalog/path")
    assert proc.returncode == 3
    assert "no such file or directory" in proc.stderr


def test_unknown_file_ignored_with_message(tmp_path: Path) -> None:
    """kafka-dump-log's message for a file of unknown suffix; nothing at all to dump is exit 3."""
    f = tmp_path / "notes.txt"
    f.write_text("hello")
    proc = _cli("dump", str(f))
    assert proc.returncode == 3
    assert f"Ignoring unknown file {f}" in proc.stderr
    assert f"no Kafka files in {f}" in proc.stderr
    good = GOLDEN / "kafka" / "records" / "v2-none" / "00000000000000000000.log"
    proc = _cli("dump", str(f), str(good))
    assert proc.returncode == 0 and f"Ignoring unknown file {f}" in proc.stderr


def test_usage_error_exit_2() -> None:
    assert _cli().returncode == 2
    assert _cli("dump").returncode == 2




def test_dump_json_decode_adds_decoded_fields_only(tmp_path: Path) -> None:
    import json

    from helpers import read_jsonl

    part = GOLDEN / "real" / "kafka310-bheem" / "kafka-logs" / "__consumer_offsets-0"
    proc = _cli("dump", "--json", "--decode", str(part))
    assert proc.returncode == 0, proc.stderr
    got = [json.loads(line) for line in proc.stdout.splitlines()]
    kafka = [d for d in read_jsonl(GOLDEN / "real" / "expected" / "kafka310-bheem.jsonl.gz") if d["file"].startswith("__consumer_offsets-0/")]
    assert len(got) == len(kafka)
    for g, k in zip(got, kafka, strict=True):
        extra = {key: g.pop(key) for key in ("decodedKey", "decodedValue") if key in g}
        g["file"] = "__consumer_offsets-0/" + g["file"]
        assert g == k
        if k["type"] == "record":
            assert extra["decodedKey"]["data"]["group"].startswith("console-consumer-")


def test_groups_command() -> None:
    import json

    proc = _cli("groups", "--json", str(GOLDEN / "real" / "zk-danielmorales9-kafkafun" / "data" / "kafka"))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["groups"], doc
    missing = _cli("groups", "/nonexistent/dir")
    assert missing.returncode == 3 and "Traceback" not in missing.stderr
