"""``kafkalog info``, ``cat`` and ``export`` with ``--tiered PREFIX [--private-key ID=FILE] [BROKER_DIR]``
(SPEC D.6): golden-0 across tiers (the plug-in's objects for segments 0-146, a broker dir holding
146 onward) as Kafka's dump of golden-0 has it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog.tools.cli import main

pytest.importorskip("Crypto", reason="the tiered extra (pycryptodome) decrypts the encrypted modes")

AIVEN = GOLDEN / "tiered" / "aiven"
KEY = f"key1={AIVEN / 'keys' / 'private.pem'}"
PARTITION = "tiered/golden-AAAAAAAAAAAAAAAAAAAAAQ/0"


def kafka_records() -> list[dict]:
    """golden-0's records in Kafka's dump, transaction markers left out."""
    out, control = [], False
    for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"):
        if not o["file"].startswith("golden-0/") or not o["file"].endswith(".log"):
            continue
        if o["type"] == "batch":
            control = o["isControlBatch"]
        elif o["type"] == "record" and not control:
            out.append(o)
    return out


def kafka_end_offset() -> int:
    """The log end offset of golden-0: one past the last offset of its last batch (markers included)."""
    return 1 + max(o["lastOffset"] for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")
                   if o["file"].startswith("golden-0/") and o["type"] == "batch")


def broker_dir(tmp_path: Path) -> Path:
    d = tmp_path / "broker" / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    for f in d.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) <= 102:
            f.unlink()
    return d.parent


@pytest.mark.rule("R-TIER-07")
def test_info_lists_the_partition_across_tiers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--json", "--tiered", str(AIVEN / "compression-encryption"), "--private-key", KEY, str(broker_dir(tmp_path))]) == 0
    [line] = capsys.readouterr().out.splitlines()
    s = json.loads(line)
    records = kafka_records()
    assert (s["topic"], s["partition"]) == ("golden", 0)
    assert (s["logStartOffset"], s["firstOffset"], s["endOffset"]) == (0, 0, kafka_end_offset())
    assert s["lastTimestamp"] == max(o["timestamp"] for o in records)
    assert s["problems"] == [] and s["dataLoss"] == []
    # the tiered objects alone: segments 0-146, offsets 0-189
    assert main(["info", "--json", "--tiered", str(AIVEN / "plain")]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["logStartOffset"], s["endOffset"], s["segments"]) == (0, 190, 4)


@pytest.mark.rule("R-TIER-07")
def test_info_reports_a_missing_tiered_segment_as_data_loss(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    remote = tmp_path / "remote"
    shutil.copytree(AIVEN / "plain", remote)
    for obj in (remote / PARTITION).glob("00000000000000000051-*"):
        obj.unlink()
    assert main(["info", "--json", "--tiered", str(remote)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert [(g["start"], g["end"]) for g in s["dataLoss"]] == [(51, 102)]
    # cat fails on it (exit 1, naming the offsets) unless --allow-gaps
    assert main(["cat", "--tiered", str(remote), "-f", "%o\\n"]) == 1
    assert "51" in capsys.readouterr().err
    assert main(["cat", "--tiered", str(remote), "-f", "%o\\n", "--allow-gaps"]) == 0
    run = capsys.readouterr()
    assert [int(x) for x in run.out.split()] == [o["offset"] for o in kafka_records() if o["offset"] < 190 and not 51 <= o["offset"] <= 101]
    assert "warning" in run.err


@pytest.mark.rule("R-TIER-07")
def test_cat_prints_the_last_values_across_tiers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broker = str(broker_dir(tmp_path))
    assert main(["cat", "--tiered", str(AIVEN / "encryption"), "--private-key", KEY, broker, "-o", "-5", "-e", "-Z", "-f", "%o %s\\n"]) == 0
    out = capsys.readouterr().out.splitlines()
    end = kafka_end_offset()
    want = [o for o in kafka_records() if o["offset"] >= end - 5]
    assert want and all(o["value"] is None or bytes.fromhex(o["value"]).isascii() for o in want)
    assert out == [f"{o['offset']} {'NULL' if o['value'] is None else bytes.fromhex(o['value']).decode()}" for o in want]
    # the whole log through cat: every offset once, in order
    assert main(["cat", "--tiered", str(AIVEN / "encryption"), "--private-key", KEY, broker, "-f", "%o\\n"]) == 0
    assert [int(x) for x in capsys.readouterr().out.split()] == [o["offset"] for o in kafka_records()]


@pytest.mark.rule("R-TIER-07")
def test_export_writes_the_rows_across_tiers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["export", "--tiered", str(AIVEN / "compression"), str(broker_dir(tmp_path)), "-o", str(out)]) == 0
    table = ds.dataset(out, format="parquet", partitioning="hive").to_table().sort_by("offset")
    assert table.column("offset").to_pylist() == [o["offset"] for o in kafka_records()]
    assert [None if v is None else v.hex() for v in table.column("value").to_pylist()] == [o["value"] for o in kafka_records()]


def test_usage_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cat"]) == 2
    assert main(["info", "--tiered", str(AIVEN / "plain"), "--private-key", "nokey"]) == 2
    assert main(["cat", "--tiered", str(tmp_path / "nowhere")]) == 3
    # an encrypted segment without its key: bad data, exit 1, no traceback
    assert main(["cat", "--tiered", str(AIVEN / "encryption")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "key" in err
