"""``kafkalog info --formats`` (issue #34): each topic's key and value formats and its subjects, on the
bundled cp760 sample. Expected from Kafka's dump of the same files: promotions' keys are UTF-8 text,
its values start with byte 0 and the id of a schema registered (without schemaType: Avro) under
promotions-value, version 1."""

from __future__ import annotations

import json

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog.tools.cli import main

DATA = GOLDEN / "real" / "cp760-flink-on-prem" / "data"


def _dump_facts() -> tuple[bool, set[int], dict[int, dict]]:
    records = [r for r in read_jsonl(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz") if r["type"] == "record"]
    promos = [r for r in records if r["file"].startswith("promotions-0/")]
    schemas = {json.loads(bytes.fromhex(r["value"]))["id"]: json.loads(bytes.fromhex(r["value"]))
               for r in records if r["file"].startswith("_schemas-0/") and r["value"]}
    keys_text = all(bytes.fromhex(r["key"]).decode("utf-8") is not None for r in promos)
    ids = {int.from_bytes(bytes.fromhex(r["value"])[1:5], "big") for r in promos if r["value"] and bytes.fromhex(r["value"])[0] == 0}
    return keys_text, ids, schemas


def test_formats_and_subjects(capsys: pytest.CaptureFixture[str]) -> None:
    keys_text, ids, schemas = _dump_facts()
    assert keys_text and len(ids) == 1
    (sid,) = ids
    assert "schemaType" not in schemas[sid]
    assert main(["info", str(DATA), "--formats"]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[1].splitlines()
    assert table[0].split() == ["TOPIC", "KEY", "FORMAT", "VALUE", "FORMAT", "SUBJECTS"]
    rows = {line.split()[0]: line.split(None, 3)[1:] for line in table[1:]}
    assert rows["promotions"] == ["string", "avro", f"{schemas[sid]['subject']} (v{schemas[sid]['version']})"]


def test_formats_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(DATA), "--formats", "--json"]) == 0
    lines = {(o := json.loads(line))["topic"]: o for line in capsys.readouterr().out.splitlines()}
    p = lines["promotions"]
    assert (p["keyFormat"], p["valueFormat"], p["subjects"]) == ("string", "avro", ["promotions-value (v1)"])
    assert "keyFormat" in lines["_schemas"]
