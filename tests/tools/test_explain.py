"""`kafkalog explain`: field values agree with Kafka's dump, positions with the file."""

from __future__ import annotations

import re
import subprocess
import sys

from helpers import GOLDEN, read_jsonl
from kafkalog.tools.explain import explain_file

RECORDS = GOLDEN / "kafka" / "records"


def _fields(lines: list[str]) -> dict[str, tuple[int, str]]:
    out = {}
    for line in lines:
        # layout: two spaces, 8 hex digits of position, two spaces, 36 columns of bytes, the label
        if not re.match(r"  [0-9a-f]{8}  ", line) or len(line) <= 49:
            continue
        parts = line[49:].split(maxsplit=2)
        if len(parts) >= 2:
            out.setdefault(parts[0], (int(line[2:10], 16), parts[2] if len(parts) == 3 else ""))
    return out


def test_v2_batch_fields_match_kafkas_dump() -> None:
    path = RECORDS / "v2-none" / "00000000000000000000.log"
    kafka = [d for d in read_jsonl(GOLDEN / "kafka" / "dump" / "records.jsonl") if d["file"] == "v2-none/00000000000000000000.log"]
    second = next(d for d in kafka if d["type"] == "batch" and d["position"] > 0)
    f = _fields(list(explain_file(str(path), offset=second["baseOffset"])))
    assert f["baseOffset"] == (second["position"], str(second["baseOffset"]))
    assert f["crc"][1] == str(second["crc"])
    assert f["maxTimestamp"][1] == str(second["maxTimestamp"])
    assert f["recordsCount"][1] == str(second["count"])
    assert f["crc"][0] == second["position"] + 17  # the CRC field sits at byte 17 of a v2 batch
    first_record = next(d for d in kafka if d["type"] == "record" and d["offset"] == second["baseOffset"])
    assert f["records[0].key"][1] == repr(bytes.fromhex(first_record["key"]))[1:]


def test_control_record_key_and_marker_are_annotated() -> None:
    path = RECORDS / "v2-transactional" / "00000000000000000000.log"
    f = _fields(list(explain_file(str(path), offset=4)))
    assert f["records[0].key.type"][1] == "1"  # COMMIT
    assert f["records[0].value.coordinatorEpoch"][1] == "11"  # Kafka's dump: coordinatorEpoch 11


def test_cli_explain_index_and_missing_file() -> None:
    idx = GOLDEN / "kafka" / "logdir" / "golden-0" / "00000000000000000000.index"
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "explain", str(idx)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    kafka = [d for d in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if d["file"] == "golden-0/00000000000000000000.index"]
    f = _fields(proc.stdout.splitlines())
    assert f["position"][1] == str(kafka[0]["position"])
    assert f["relativeOffset"][1] == str(kafka[0]["offset"])  # base offset 0
    assert proc.stdout.count("entry ") == len(kafka)
    missing = subprocess.run([sys.executable, "-m", "kafkalog", "explain", "/nonexistent.log"], capture_output=True, text=True, check=False)
    assert missing.returncode == 3 and "Traceback" not in missing.stderr
