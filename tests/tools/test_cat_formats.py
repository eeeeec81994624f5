"""``kafkalog cat -s value=avro`` and friends (issue #34): values decoded with the backup's own
``_schemas`` topic. The expected values are fastavro's decoding of the raw values in Kafka's dump of
the same files, with the schema text from Kafka's dump of ``_schemas``, printed by the JSON rules
the docs give (timestamps in ISO 8601), independently of kafkalog's decoder."""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path

import pytest

from helpers import GOLDEN, need_shared, read_jsonl
from kafkalog.tools.cli import main

fastavro = pytest.importorskip("fastavro")

BUNDLED = GOLDEN / "real" / "cp760-flink-on-prem" / "data"


@functools.cache
def _dump(expected: Path) -> list[dict]:
    return read_jsonl(expected)


def _dump_records(expected: Path, partition_dir: str) -> list[dict]:
    return [r for r in _dump(expected) if r["type"] == "record" and r["file"].startswith(partition_dir + "/")]


def _fastavro_values(expected: Path, partition_dir: str) -> list[object]:
    """Each record's value decoded by fastavro alone: schema id from bytes 1-4, schema text from the dump of _schemas."""
    schemas = {}
    for r in _dump_records(expected, "_schemas-0"):
        if r["value"] is not None:
            v = json.loads(bytes.fromhex(r["value"]))
            schemas[v["id"]] = fastavro.parse_schema(json.loads(v["schema"]))
    out = []
    for r in _dump_records(expected, partition_dir):
        if r["value"] is None:
            out.append(None)
            continue
        raw = bytes.fromhex(r["value"])
        assert raw[0] == 0
        out.append(fastavro.schemaless_reader(io.BytesIO(raw[5:]), schemas[int.from_bytes(raw[1:5], "big")], None))
    return out


def _as_printed(v: object) -> object:
    """The docs' JSON rules for the types in these schemas: a timestamp in ISO 8601."""
    return json.loads(json.dumps(v, default=lambda x: x.isoformat()))


def _cat(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["cat", *args])
    got = capsys.readouterr()
    return code, got.out.splitlines(), got.err


@pytest.mark.shared
def test_the_last_five_orders_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's acceptance command: kafkalog cat cp760 -t orders -p 0 -o -5 -e -s value=avro."""
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    expected = _fastavro_values(data.parents[1] / "expected" / "cp760-flink-on-prem.jsonl.gz", "orders-0")[-5:]
    code, lines, _ = _cat(capsys, str(data), "-t", "orders", "-p", "0", "-o", "-5", "-e", "-s", "value=avro")
    assert code == 0
    assert [json.loads(line) for line in lines] == [_as_printed(v) for v in expected]
    assert len(lines) == 5 and all("order_id" in json.loads(line) for line in lines)


def test_every_promotion_of_the_bundled_sample(capsys: pytest.CaptureFixture[str]) -> None:
    expected = _fastavro_values(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz", "promotions-0")
    code, lines, _ = _cat(capsys, str(BUNDLED), "-t", "promotions", "-s", "value=avro", "-s", "key=string", "-f", "%k\t%s\n")
    assert code == 0
    assert [json.loads(line.split("\t")[1]) for line in lines] == [_as_printed(v) for v in expected]
    keys = [bytes.fromhex(r["key"]).decode() for r in _dump_records(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz", "promotions-0")]
    assert [json.loads(line.split("\t")[0]) for line in lines] == keys


def test_the_json_envelope(capsys: pytest.CaptureFixture[str]) -> None:
    expected = _fastavro_values(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz", "promotions-0")
    code, lines, _ = _cat(capsys, str(BUNDLED), "-t", "promotions", "-o", "-2", "-J", "-s", "value=auto")
    assert code == 0
    envs = [json.loads(line) for line in lines]
    assert [e["payload"] for e in envs] == [_as_printed(v) for v in expected[-2:]]
    assert [(e["topic"], e["partition"]) for e in envs] == [("promotions", 0)] * 2


def test_an_undecodable_value_fails_naming_the_record(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = _cat(capsys, str(BUNDLED), "-t", "promotions", "-s", "value=long")
    assert code == 1 and lines == []
    assert err.startswith("kafkalog cat: topic promotions partition 0 offset 0") and "a long is 8 bytes" in err
    assert len(err.splitlines()) == 1


def test_an_unknown_schema_id_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cat(capsys, str(BUNDLED), "-t", "promotions", "-s", "value=avro", "--schemas-topic", "no-such-topic")
    assert code == 1 and "schema id 8: no schema with this id" in err and len(err.splitlines()) == 1


def test_an_unreachable_registry_fails(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cat(capsys, str(BUNDLED), "-t", "promotions", "-s", "value=avro", "--schemas-topic", "none",
                        "-r", "http://127.0.0.1:9")
    assert code == 1 and "cannot be reached" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(("mode", "printed"), [("null", ["null", "null"]), ("skip", ["null"]), ("raw", None)])
def test_on_undecodable(capsys: pytest.CaptureFixture[str], mode: str, printed: list[str] | None) -> None:
    code, lines, err = _cat(capsys, str(BUNDLED), "-t", "promotions", "-o", "-2", "-s", "value=json", "--on-undecodable", mode)
    assert code == 0
    # offset 27 is a null value (nothing to decode), offset 28 an Avro value
    assert err.count("warning: topic promotions partition 0 offset 28 schema id 8: the schema is AVRO, not JSON") == 1
    assert len(err.splitlines()) == 1
    if printed is not None:
        assert lines == printed
    else:
        assert lines[0] == "null" and lines[1].startswith("\\x00\\x00\\x00\\x00\\x08")


def test_schema_files_come_first(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A schema file under id 8 is the writer schema: here one that reads the values' union branch index as a long."""
    (tmp_path / "p.avsc").write_text(json.dumps({"type": "record", "name": "p", "fields": [{"name": "branch", "type": "long"},
                                                                                            {"name": "rest", "type": "string"}]}))
    code, lines, _ = _cat(capsys, str(BUNDLED), "-t", "promotions", "-o", "-1", "-s", "value=avro", "--schema-file", f"8={tmp_path / 'p.avsc'}",
                          "--on-undecodable", "null")
    assert code == 0
    assert json.loads(lines[0])["branch"] == 1


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert _cat(capsys, str(BUNDLED), "-s", "value=xml")[0] == 2
    assert _cat(capsys, str(BUNDLED), "-s", "value=avro", "--schema-file", "x.avsc")[0] == 2
