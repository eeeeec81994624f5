"""``kafkalog dump --tiered PREFIX BROKER_DIR``: golden-0 across tiers (the plug-in's objects for
segments 0-146, a broker dir holding 146 onward) prints exactly Kafka's dump of golden-0's batches
and records; a missing tiered segment is data loss, exit 1 unless --allow-gaps."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, REPO, read_jsonl

pytest.importorskip("Crypto", reason="the tiered extra (pycryptodome) decrypts the encrypted modes")

AIVEN = GOLDEN / "tiered" / "aiven"
KEY = AIVEN / "keys" / "private.pem"
PARTITION = "tiered/golden-AAAAAAAAAAAAAAAAAAAAAQ/0"


def _broker(tmp_path: Path) -> Path:
    d = tmp_path / "broker" / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    for f in d.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) <= 102:
            f.unlink()
    return d.parent


def _dump(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog", "dump", *args], capture_output=True, text=True, check=False,
                          cwd=REPO, env={"PYTHONPATH": str(REPO / "codec"), "PATH": ""})


def _without_file(objs: list[dict]) -> list[dict]:
    return [{k: v for k, v in o.items() if k != "file"} for o in objs]


@pytest.mark.rule("R-TIER-07")
def test_dump_across_tiers_prints_kafkas_dump_of_golden0(tmp_path: Path) -> None:
    run = _dump("--json", "--tiered", str(AIVEN / "compression-encryption"), "--private-key", f"key1={KEY}", str(_broker(tmp_path)))
    assert run.returncode == 0, run.stderr
    got = [json.loads(line) for line in run.stdout.splitlines()]
    kafka = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")
             if o["file"].startswith("golden-0/") and o["file"].endswith(".log")]
    assert _without_file(got) == _without_file(kafka)
    assert sum(o["type"] == "record" for o in got) == 265
    files = [o["file"] for o in got if o["type"] == "batch"]
    assert files[0] == f"{PARTITION}/00000000000000000000-QuyNXbcGOpuuPRwzU3A9Qg.log"
    assert files[-1] == "golden-0/00000000000000000234.log"
    assert "golden-0/00000000000000000146.log" not in files  # given by the remote copy of 146


def test_dump_across_tiers_fails_on_a_missing_tiered_segment_unless_gaps_are_allowed(tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    shutil.copytree(AIVEN / "plain", remote)
    for f in (remote / PARTITION).glob("00000000000000000102-*"):
        f.unlink()
    broker = _broker(tmp_path)
    run = _dump("--json", "--tiered", str(remote), str(broker))
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "offsets 102 to 145 are in no .log" in run.stderr and str(remote / PARTITION) in run.stderr
    lenient = _dump("--json", "--allow-gaps", "--tiered", str(remote), str(broker))
    assert lenient.returncode == 0, lenient.stderr
    assert "warning: data loss:" in lenient.stderr
    offsets = [json.loads(line)["offset"] for line in lenient.stdout.splitlines() if '"type":"record"' in line]
    assert offsets == [o for o in range(265) if not 102 <= o <= 145]
    # without --tiered, --allow-gaps is the partition dirs' own (R-LOSS-04): the broker dir alone has no hole, so it dumps
    assert _dump("--json", "--allow-gaps", str(broker)).returncode == 0


def _verify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog", "verify", "--json", *args], capture_output=True, text=True, check=False,
                          cwd=REPO, env={"PYTHONPATH": str(REPO / "codec"), "PATH": ""})


@pytest.mark.rule("R-TIER-04")
def test_verify_checks_the_tiered_objects_chunk_by_chunk(tmp_path: Path) -> None:
    ok = _verify("--private-key", f"key1={KEY}", str(AIVEN / "compression-encryption"))
    assert ok.returncode == 0 and ok.stdout == "", ok.stderr
    assert "verified 12 files" in ok.stderr
    remote = tmp_path / "remote"
    shutil.copytree(AIVEN / "encryption", remote)
    log = next((remote / PARTITION).glob("00000000000000000051-*.log"))
    data = bytearray(log.read_bytes())
    data[600] ^= 4  # inside chunk 1 (bytes 540-1079 of the object)
    log.write_bytes(bytes(data))
    for f in (remote / PARTITION).glob("00000000000000000102-*"):
        f.unlink()
    bad = _verify("--private-key", f"key1={KEY}", str(remote))
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    findings = [json.loads(line) for line in bad.stdout.splitlines()]
    assert {(f["code"], f["file"], f["position"]) for f in findings} >= {("CorruptChunkError", str(log), 540)}
    assert any(f["code"] == "data-loss" and f["offset"] == 102 for f in findings)
