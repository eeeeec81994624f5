"""``kafkalog.scan(value_format=...)`` and ``export --value-format`` (issue #34): typed Arrow and
Parquet columns. Expected values: fastavro's decoding of the raw values in Kafka's dump of the real
cp760 backup, and the values the tests write themselves with fastavro's writer (evolving schemas,
JSON Schema, a soft-deleted schema, an id missing from the registry)."""

from __future__ import annotations

import datetime
import decimal
import functools
import io
import json
from pathlib import Path

import pytest

from helpers import need_shared, read_jsonl, write_partition
from kafkalog.tools.cli import main

fastavro = pytest.importorskip("fastavro")
pa = pytest.importorskip("pyarrow")

import kafkalog  # noqa: E402
from kafkalog.errors import UndecodableValueError, UnknownSchemaError  # noqa: E402

V1 = {"type": "record", "name": "Event", "fields": [{"name": "n", "type": "int"}, {"name": "old", "type": "string"}]}
V2 = {"type": "record", "name": "Event", "fields": [
    {"name": "n", "type": "long"},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}, "default": "\u0000"},
    {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None}]}
AT = datetime.datetime(2024, 4, 19, 15, 16, 39, 860000, tzinfo=datetime.UTC)


def _avro(sid: int, schema: dict, value: dict) -> bytes:
    out = io.BytesIO(b"\0" + sid.to_bytes(4, "big"))
    out.seek(5)
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def _schema_record(subject: str, version: int, sid: int, schema: object, **kw: object) -> tuple[bytes, bytes]:
    key = json.dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}).encode()
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return key, json.dumps({"subject": subject, "version": version, "id": sid, "schema": text, "deleted": False, **kw}).encode()


@pytest.fixture
def backup(tmp_path: Path) -> Path:
    """A data dir holding a registry (_schemas) and topics written with it."""
    root = tmp_path / "data"
    gone = _schema_record("gone-value", 1, 4, {"type": "string"})
    write_partition(root, "_schemas-0", [
        (json.dumps({"keytype": "NOOP", "magic": 0}).encode(), None),
        _schema_record("events-value", 1, 1, V1), _schema_record("events-value", 2, 2, V2),
        _schema_record("docs-value", 1, 3, {"type": "object"}, schemaType="JSON"),
        gone, (gone[0], None), _schema_record("broken-value", 1, 2, V2),
        _schema_record("events-value", 3, 5, {"type": "record", "name": "Event", "fields": [{"name": "n", "type": "int"}]}, deleted=True),
    ])
    write_partition(root, "events-0", [
        (b"k1", _avro(1, V1, {"n": 1, "old": "x"})),
        (b"k2", _avro(2, V2, {"n": 2**40, "price": decimal.Decimal("12.34"), "at": AT})),
        (b"k3", _avro(5, {"type": "record", "name": "Event", "fields": [{"name": "n", "type": "int"}]}, {"n": 3})),
        (b"k4", None),
    ])
    write_partition(root, "docs-0", [(None, b"\0\0\0\0\x03" + json.dumps({"a": [1, {"b": None}]}).encode()), (None, b'{"plain": 1}')])
    write_partition(root, "broken-0", [(None, _avro(2, V2, {"n": 1, "price": decimal.Decimal("1"), "at": None})),
                                  (None, _avro(4, {"type": "string"}, "tombstoned")), (None, _avro(99, V1, {"n": 1, "old": ""}))])
    return root


def test_every_version_reads_as_the_latest(backup: Path) -> None:
    t = kafkalog.scan(backup, topics="events", value_format="auto", key_format="string").read_all()
    assert t.schema.field("value").type == pa.struct([
        pa.field("n", pa.int64(), nullable=False), pa.field("price", pa.decimal128(9, 2), nullable=False),
        pa.field("at", pa.timestamp("ms", tz="UTC"))])
    assert t.column("key").to_pylist() == ["k1", "k2", "k3", "k4"]
    assert t.column("value").to_pylist() == [
        {"n": 1, "price": decimal.Decimal("0.00"), "at": None}, {"n": 2**40, "price": decimal.Decimal("12.34"), "at": AT},
        {"n": 3, "price": decimal.Decimal("0.00"), "at": None}, None]


def test_json_schema_values_as_json_text(backup: Path) -> None:
    t = kafkalog.scan(backup, topics="docs", value_format="json", columns=["value"]).read_all()
    assert t.schema.field("value").type == pa.string()
    assert [json.loads(v) for v in t.column("value").to_pylist()] == [{"a": [1, {"b": None}]}, {"plain": 1}]


def test_an_unknown_or_tombstoned_schema_id_fails_naming_the_record(backup: Path) -> None:
    with pytest.raises(UnknownSchemaError, match=r"topic broken partition 0 offset 1 schema id 4: no schema with this id"):
        kafkalog.scan(backup, topics="broken", value_format="avro", columns=["value"]).read_all()


@pytest.mark.parametrize(("mode", "rows"), [("null", [1, None, None]), ("skip", [1])])
def test_on_undecodable(backup: Path, mode: str, rows: list, caplog: pytest.LogCaptureFixture) -> None:
    t = kafkalog.scan(backup, topics="broken", value_format="auto", columns=["value"], on_undecodable=mode).read_all()
    assert [None if v is None else v["n"] for v in t.column("value").to_pylist()] == rows
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "topic broken partition 0 offset 1 schema id 4", "topic broken partition 0 offset 2 schema id 99"]
    with pytest.raises(ValueError, match="raw"):
        kafkalog.scan(backup, topics="broken", value_format="auto", on_undecodable="raw").read_all()


def test_topics_of_different_types_are_read_one_at_a_time(backup: Path) -> None:
    with pytest.raises(ValueError, match="different types"):
        kafkalog.scan(backup, topics=["events", "docs"], value_format="auto")


def test_export_typed_parquet_that_duckdb_reads_by_name(backup: Path, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    out = tmp_path / "out"
    assert main(["export", str(backup), "-t", "events", "-o", str(out), "--value-format", "auto"]) == 0
    got = duckdb.sql(f"select sum(value.n), sum(value.price), max(value.at) from read_parquet('{out}/topic=events/*/*.parquet')").fetchall()[0]
    assert got[0] == 1 + 2**40 + 3 and got[1] == decimal.Decimal("12.34") and got[2] == AT


def test_export_refuses_typed_columns_outside_parquet(backup: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", str(backup), "-o", str(tmp_path / "o"), "--format", "jsonl", "--value-format", "avro"]) == 2
    assert main(["export", str(backup), "-t", "broken", "-o", str(tmp_path / "o"), "--value-format", "avro"]) == 1
    assert "schema id 4" in capsys.readouterr().err


# ---------------------------------------------------------------------------- the real backup
@functools.cache
def _fastavro_by_topic(expected: Path) -> dict[str, list[object]]:
    """Every Avro value of every topic in Kafka's dump, decoded by fastavro with the schema from the dump of _schemas."""
    records = [r for r in read_jsonl(expected) if r["type"] == "record"]
    schemas, subjects = {}, set()
    for r in records:
        if r["file"].startswith("_schemas-0/") and r["value"] is not None:
            v = json.loads(bytes.fromhex(r["value"]))
            schemas[v["id"]] = fastavro.parse_schema(json.loads(v["schema"]))
            subjects.add(v["subject"])
    out: dict[str, list[object]] = {}
    for r in records:
        topic = r["file"].split("/")[0].rsplit("-", 1)[0]
        if f"{topic}-value" in subjects and r["value"] is not None:
            raw = bytes.fromhex(r["value"])
            assert raw[0] == 0
            out.setdefault(topic, []).append(fastavro.schemaless_reader(io.BytesIO(raw[5:]), schemas[int.from_bytes(raw[1:5], "big")], None))
    return out


@pytest.mark.shared
def test_every_cp760_topic_decodes_as_fastavro_decodes_kafkas_dump() -> None:
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    expected = _fastavro_by_topic(data.parents[1] / "expected" / "cp760-flink-on-prem.jsonl.gz")
    assert {"orders", "customers_keyed", "products_keyed", "order_customer_product", "loyalty_levels", "promotions"} <= set(expected)
    for topic, values in expected.items():
        t = kafkalog.scan(data, topics=topic, value_format="avro", columns=["value"]).read_all()
        got = [v for v in t.column("value").to_pylist() if v is not None]
        assert got == values, topic


@pytest.mark.shared
def test_export_of_cp760_orders_is_typed_parquet(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    expected = _fastavro_by_topic(data.parents[1] / "expected" / "cp760-flink-on-prem.jsonl.gz")["orders"]
    assert main(["export", str(data), "-t", "orders", "-o", str(tmp_path), "--value-format", "auto"]) == 0
    avg, n = duckdb.sql(f"select avg(value.order_id), count(*) from read_parquet('{tmp_path}/topic=orders/*/*.parquet')").fetchall()[0]
    assert n == len(expected) and avg == pytest.approx(sum(v["order_id"] for v in expected) / len(expected))  # type: ignore[index]


def test_a_json_schema_topic_through_cat_and_export(backup: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    duckdb = pytest.importorskip("duckdb")
    want = [{"a": [1, {"b": None}]}, {"plain": 1}]
    assert main(["cat", str(backup), "-t", "docs", "-s", "value=json"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == want
    out = tmp_path / "out"
    assert main(["export", str(backup), "-t", "docs", "-o", str(out), "--value-format", "json"]) == 0
    got = duckdb.sql(f"select value from read_parquet('{out}/topic=docs/*/*.parquet') order by \"offset\"").fetchall()
    assert [json.loads(v) for (v,) in got] == want


ADDRESS = {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}}}
PERSON = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "definitions": {"tag": {"type": "string"}},
    "properties": {
        "id": {"type": "integer"}, "score": {"type": "number"}, "ok": {"type": "boolean"},
        "tags": {"type": "array", "items": {"$ref": "#/definitions/tag"}},
        "home": {"$ref": "address.json"},
        "extra": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "kind": {"enum": ["a", "b"]},
    },
}


def test_json_schema_values_as_typed_columns(tmp_path: Path) -> None:
    """A JSON Schema with properties, a local $ref and a reference to another subject: a struct of typed
    fields (docs/formats.md's rule); a property without one definite type is JSON text. The values are
    checked against the schema with the jsonschema library before they are written."""
    jsonschema = pytest.importorskip("jsonschema")
    duckdb = pytest.importorskip("duckdb")
    root = tmp_path / "data"
    write_partition(root, "_schemas-0", [
        _schema_record("address.json", 1, 1, ADDRESS, schemaType="JSON"),
        _schema_record("people-value", 1, 2, PERSON, schemaType="JSON",
                       references=[{"name": "address.json", "subject": "address.json", "version": 1}]),
    ])
    values = [
        {"id": 1, "score": 2.5, "ok": True, "tags": ["x", "y"], "home": {"city": "Oslo", "zip": None}, "extra": 3, "kind": "a", "more": 1},
        {"id": 2**40, "score": 1, "tags": []},
    ]
    from referencing import Registry
    from referencing.jsonschema import DRAFT7

    validator = jsonschema.Draft7Validator(PERSON, registry=Registry().with_resource("address.json", DRAFT7.create_resource(ADDRESS)))
    for v in values:
        validator.validate(v)
    write_partition(root, "people-0", [(None, b"\0\0\0\0\x02" + json.dumps(v).encode()) for v in values] + [(None, None)])
    t = kafkalog.scan(root, topics="people", value_format="json", columns=["value"]).read_all()
    assert t.schema.field("value").type == pa.struct([
        ("id", pa.int64()), ("score", pa.float64()), ("ok", pa.bool_()), ("tags", pa.list_(pa.string())),
        ("home", pa.struct([("city", pa.string()), ("zip", pa.string())])), ("extra", pa.string()), ("kind", pa.string())])
    assert t.column("value").to_pylist() == [
        {"id": 1, "score": 2.5, "ok": True, "tags": ["x", "y"], "home": {"city": "Oslo", "zip": None}, "extra": "3", "kind": "a"},
        {"id": 2**40, "score": 1.0, "ok": None, "tags": [], "home": None, "extra": None, "kind": None}, None]
    out = tmp_path / "out"
    assert main(["export", str(root), "-t", "people", "-o", str(out), "--value-format", "auto"]) == 0
    got = duckdb.sql(f"select sum(value.id), max(value.home.city) from read_parquet('{out}/topic=people/*/*.parquet')").fetchall()
    assert got == [(1 + 2**40, "Oslo")]
    # a value whose type is not the schema's does not decode (a typed column holds no guessed value)
    bad = tmp_path / "bad"
    write_partition(bad, "_schemas-0", [_schema_record("people-value", 1, 2, PERSON, schemaType="JSON")])
    write_partition(bad, "people-0", [(None, b"\0\0\0\0\x02" + json.dumps({"id": "seven"}).encode())])
    with pytest.raises(UndecodableValueError, match=r"offset 0 schema id 2: the value at \$\.id is str"):
        kafkalog.scan(bad, topics="people", value_format="json", columns=["value"]).read_all()


def test_json_values_validated_against_their_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--validate: a JSON Schema value the jsonschema library finds invalid is undecodable (exit 1, or
    --on-undecodable); without it, cat prints the value as it is."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    values = [{"id": 1}, {"id": "seven"}]
    assert [jsonschema.Draft7Validator(schema).is_valid(v) for v in values] == [True, False]
    root = tmp_path / "data"
    write_partition(root, "_schemas-0", [_schema_record("ids-value", 1, 1, schema, schemaType="JSON")])
    write_partition(root, "ids-0", [(None, b"\0\0\0\0\x01" + json.dumps(v).encode()) for v in values])
    assert main(["cat", str(root), "-t", "ids", "-s", "value=json"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == values
    assert main(["cat", str(root), "-t", "ids", "-s", "value=json", "--validate"]) == 1
    err = capsys.readouterr().err
    assert "topic ids partition 0 offset 1 schema id 1: the JSON value is not valid by its schema at $.id: 'seven' is not of type 'integer'" in err
    assert main(["cat", str(root), "-t", "ids", "-s", "value=json", "--validate", "--on-undecodable", "skip"]) == 0
    out = capsys.readouterr()
    assert [json.loads(line) for line in out.out.splitlines()] == values[:1] and "warning" in out.err


def test_scan_validates_json_values_when_asked(tmp_path: Path) -> None:
    """kafkalog.scan(validate=True) is --validate: a value valid JSON for its typed column but not by its
    schema (a minimum) is undecodable, located at its record; without it the value reads as it is."""
    jsonschema = pytest.importorskip("jsonschema")
    schema = {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0}}}
    values = [{"id": 1}, {"id": -1}]
    assert [jsonschema.Draft7Validator(schema).is_valid(v) for v in values] == [True, False]
    root = tmp_path / "data"
    write_partition(root, "_schemas-0", [_schema_record("ids-value", 1, 1, schema, schemaType="JSON")])
    write_partition(root, "ids-0", [(None, b"\0\0\0\0\x01" + json.dumps(v).encode()) for v in values])
    assert kafkalog.scan(root, topics="ids", value_format="json", columns=["value"]).read_all().column(0).to_pylist() == values
    with pytest.raises(UndecodableValueError, match=r"topic ids partition 0 offset 1 schema id 1: the JSON value is not valid by its schema at \$\.id"):
        kafkalog.scan(root, topics="ids", value_format="json", validate=True).read_all()
    t = kafkalog.scan(root, topics="ids", value_format="json", columns=["offset", "value"], validate=True, on_undecodable="null").read_all()
    assert t.column("value").to_pylist() == [values[0], None]
