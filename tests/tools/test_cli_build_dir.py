"""`kafkalog build -o DIR`: a partition directory appended through Log gives Kafka's files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, read_jsonl

LOGDIR = GOLDEN / "kafka" / "logdir"
# configs from golden-kafka's README
CASES = {
    "golden-0": ["--segment-bytes", "2048", "--index-interval-bytes", "256", "--segment-index-bytes", "4096"],
    "transactional-0": ["--segment-bytes", "1024", "--index-interval-bytes", "128", "--segment-index-bytes", "4096"],
    "logappendtime-0": ["--segment-bytes", "16384", "--index-interval-bytes", "256", "--segment-index-bytes", "4096"],
    "recompressed-0": ["--segment-bytes", "16384", "--index-interval-bytes", "256", "--segment-index-bytes", "4096"],
}


def _topic_id(d: Path) -> list[str]:
    pm = d / "partition.metadata"
    if not pm.exists():
        return []
    return ["--topic-id", pm.read_text().split("topic_id:")[1].strip()]


@pytest.mark.parametrize("name", sorted(CASES))
def test_build_dir_from_logs_is_byte_identical(name: str, tmp_path: Path) -> None:
    src = LOGDIR / name
    out = tmp_path / name
    logs = [str(p) for p in sorted(src.glob("*.log")) if p.stat().st_size]
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "build", *CASES[name], *_topic_id(src), "-o", str(out), *logs],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    expected = {p.name for p in src.iterdir()}
    assert {p.name for p in out.iterdir()} >= expected - {"leader-epoch-checkpoint"}
    for name_ in sorted(expected):
        assert (out / name_).read_bytes() == (src / name_).read_bytes(), name_


def test_build_dir_from_json(tmp_path: Path) -> None:
    src = LOGDIR / "golden-0"
    dumped = subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", "--lossless", *sorted(str(p) for p in src.glob("*.log"))],
                            capture_output=True, text=True, check=True).stdout
    out = tmp_path / "golden-0"
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "build", *CASES["golden-0"], "-o", str(out)],
                          input=dumped, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    again = subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", str(out)], capture_output=True, text=True, check=True).stdout
    kafka = [d for d in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if d["file"].startswith("golden-0/") and d["type"] == "record"]
    ours = [json.loads(line) for line in again.splitlines()]
    ours = [d for d in ours if d["type"] == "record"]
    keep = ("offset", "timestamp", "key", "value", "headers", "sequence")
    assert [{k: d[k] for k in keep} for d in ours] == [{k: d[k] for k in keep} for d in kafka]


def test_build_dir_refuses_a_dir_with_segments(tmp_path: Path) -> None:
    (tmp_path / "00000000000000000000.log").write_bytes(b"")
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "build", "-o", str(tmp_path), str(LOGDIR / "golden-0" / "00000000000000000000.log")],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "already holds segments" in proc.stderr
