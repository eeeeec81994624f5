"""Decoders of keys and values (issue #34): Confluent's wire format with Avro (written here by
fastavro's own writer) and JSON Schema, and the plain formats of Kafka's serializers (Java's
big-endian numbers, written here with ``struct``). Expected values are the ones written."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import struct
import uuid

import pytest

fastavro = pytest.importorskip("fastavro")

from kafkalog.dataset.registry import Registry, SchemasTopic  # noqa: E402
from kafkalog.dataset.values import Decoder, avro_arrow_type, json_text, split_wire  # noqa: E402
from kafkalog.errors import UndecodableValueError, UnknownSchemaError  # noqa: E402

V1 = {"type": "record", "name": "Order", "namespace": "t", "fields": [
    {"name": "id", "type": "int"}, {"name": "gone", "type": "string"}]}
# v2: a field added with a default, one removed, int promoted to long
V2 = {"type": "record", "name": "Order", "namespace": "t", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}]}
LOGICAL = {"type": "record", "name": "L", "fields": [
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "at_us", "type": {"type": "long", "logicalType": "timestamp-micros"}},
    {"name": "uid", "type": {"type": "string", "logicalType": "uuid"}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "long"}},
    {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
    {"name": "either", "type": ["null", "int", "string"]},
]}
ADDRESS = {"type": "record", "name": "Address", "namespace": "com.acme", "fields": [{"name": "city", "type": "string"}]}
PERSON = {"type": "record", "name": "Person", "namespace": "com.acme", "fields": [{"name": "home", "type": "com.acme.Address"}]}


def _rec(k: dict, v: dict | None, n: int) -> tuple[bytes, bytes | None, int]:
    return json.dumps({"keytype": "SCHEMA", **k, "magic": 1}).encode(), None if v is None else json.dumps(v).encode(), n


def _registry() -> Registry:
    entries = [("orders-value", 1, 1, V1, {}), ("orders-value", 2, 2, V2, {}), ("l-value", 1, 3, LOGICAL, {}),
               ("address", 1, 4, ADDRESS, {}),
               ("p-value", 1, 5, PERSON, {"references": [{"name": "com.acme.Address", "subject": "address", "version": 1}]}),
               ("j-value", 1, 6, {"type": "object"}, {"schemaType": "JSON"}),
               ("old-value", 1, 7, V1, {"deleted": True}), ("pb-value", 1, 8, "syntax = \"proto3\";", {"schemaType": "PROTOBUF"})]
    recs = [_rec({"subject": s, "version": ver}, {"subject": s, "version": ver, "id": i, "schema": sch if isinstance(sch, str) else json.dumps(sch),
                 **kw}, n) for n, (s, ver, i, sch, kw) in enumerate(entries)]
    return Registry([SchemasTopic.replay(recs)])


def _wire(sid: int, schema: dict, value: object) -> bytes:
    out = io.BytesIO()
    out.write(b"\0" + sid.to_bytes(4, "big"))
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def test_every_version_reads_as_the_latest() -> None:
    d = Decoder("avro", _registry(), subject="orders-value")
    assert d.decode(_wire(1, V1, {"id": 7, "gone": "x"})) == {"id": 7, "note": None}
    assert d.decode(_wire(2, V2, {"id": 2**40, "note": "n"})) == {"id": 2**40, "note": "n"}
    assert d.decode(None) is None


def test_without_a_subject_each_value_reads_with_its_writer_schema() -> None:
    d = Decoder("avro", _registry(), subject="elsewhere-value")
    assert d.decode(_wire(1, V1, {"id": 7, "gone": "x"})) == {"id": 7, "gone": "x"}


def test_logical_types_and_their_arrow_types() -> None:
    import pyarrow as pa

    value = {"price": decimal.Decimal("12.34"), "day": datetime.date(2024, 4, 19),
             "at": datetime.datetime(2024, 4, 19, 15, 16, 39, 860000, tzinfo=datetime.UTC),
             "at_us": datetime.datetime(2024, 4, 19, 15, 16, 39, 860123, tzinfo=datetime.UTC),
             "uid": str(uuid.UUID(int=12345)), "tags": ["a", "b"], "attrs": {"x": 1}, "kind": "B", "either": "s"}
    d = Decoder("avro", _registry(), subject="l-value")
    got = d.decode(_wire(3, LOGICAL, value))
    assert got == value
    typ = d.arrow_type()
    assert typ == pa.struct([
        pa.field("price", pa.decimal128(10, 2), nullable=False), pa.field("day", pa.date32(), nullable=False),
        pa.field("at", pa.timestamp("ms", tz="UTC"), nullable=False), pa.field("at_us", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("uid", pa.string(), nullable=False), pa.field("tags", pa.list_(pa.string()), nullable=False),
        pa.field("attrs", pa.map_(pa.string(), pa.int64()), nullable=False), pa.field("kind", pa.string(), nullable=False),
        pa.field("either", pa.string())])
    arr = d.to_arrow([got, None], typ)
    row = arr.to_pylist()[0]
    assert row["either"] == '"s"'  # a union of two non-null types: its JSON text
    assert row["attrs"] == [("x", 1)] and row["price"] == value["price"] and row["at_us"] == value["at_us"]
    assert arr.to_pylist()[1] is None


def test_references_resolve_named_types() -> None:
    d = Decoder("auto", _registry(), subject="p-value")
    assert d.decode(_wire(5, {"type": "record", "name": "Person", "namespace": "com.acme", "fields": [
        {"name": "home", "type": ADDRESS}]}, {"home": {"city": "Oslo"}})) == {"home": {"city": "Oslo"}}


def test_a_soft_deleted_schema_decodes() -> None:
    assert Decoder("avro", _registry()).decode(_wire(7, V1, {"id": 1, "gone": "g"})) == {"id": 1, "gone": "g"}


def test_json_schema_and_plain_json() -> None:
    d = Decoder("json", _registry(), subject="j-value")
    assert d.decode(b"\0\0\0\0\x06" + b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    assert d.decode(b'{"plain": true}') == {"plain": True}
    assert Decoder("auto", _registry()).decode(b"\0\0\0\0\x06" + b'"x"') == "x"
    with pytest.raises(UndecodableValueError, match="not JSON"):
        d.decode(b"{nope")
    with pytest.raises(UndecodableValueError, match="schema is AVRO, not JSON"):
        d.decode(_wire(1, V1, {"id": 1, "gone": ""}))


@pytest.mark.parametrize(("fmt", "pack", "value"), [
    ("short", ">h", -2), ("int", ">i", -2**31), ("long", ">q", 2**62), ("float", ">f", 1.5), ("double", ">d", -0.125)])
def test_java_numbers(fmt: str, pack: str, value: float) -> None:
    d = Decoder(fmt)
    assert d.decode(struct.pack(pack, value)) == value
    with pytest.raises(UndecodableValueError, match=f"a {fmt} is"):
        d.decode(struct.pack(pack, value) + b"\0")


def test_strings() -> None:
    assert Decoder("string").decode("grüß".encode()) == "grüß"
    with pytest.raises(UndecodableValueError, match="not UTF-8"):
        Decoder("string").decode(b"\xff")


def test_errors_name_the_schema_id() -> None:
    reg = _registry()
    with pytest.raises(UnknownSchemaError, match="schema id 99"):
        Decoder("avro", reg).decode(b"\0\0\0\0\x63abc")
    with pytest.raises(UndecodableValueError, match="schema id 2: the Avro value does not decode"):
        Decoder("avro", reg).decode(b"\0\0\0\0\x02\x01")
    with pytest.raises(UndecodableValueError, match="bytes left over"):
        Decoder("avro", reg).decode(_wire(2, V2, {"id": 1, "note": None}) + b"\0")
    with pytest.raises(UndecodableValueError, match="wire format"):
        Decoder("avro", reg).decode(b"\x01\0\0\0\x02")
    with pytest.raises(UndecodableValueError, match=r"schema id 8: the message indexes \[0\] name no message"):
        Decoder("auto", reg).decode(b"\0\0\0\0\x08\0")  # a .proto without messages
    with pytest.raises(UndecodableValueError, match="needs schemas"):
        Decoder("avro").decode(b"\0\0\0\0\x02\0")
    with pytest.raises(ValueError, match="none of"):
        Decoder("xml")


def test_split_wire_and_json_text() -> None:
    sid, payload = split_wire(b"\0\0\0\1\0abc")
    assert sid == 256 and bytes(payload) == b"abc"
    assert json_text({"d": decimal.Decimal("1.50"), "b": b"\x00\xff", "t": datetime.date(2024, 1, 2)}) == \
        '{"d":"1.50","b":"\\u0000ÿ","t":"2024-01-02"}'


def test_avro_arrow_type_of_a_wide_decimal() -> None:
    import pyarrow as pa

    assert avro_arrow_type({"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 3}) == pa.decimal256(40, 3)


def test_a_batch_reads_as_each_value_alone() -> None:
    """decode_many over a batch (its fast loop, schemas looked up once per id) gives the same values as
    fastavro's schemaless_reader of each alone, and a value with bytes left over, followed by a short
    one that would realign a stream of both, is found at its own place: each value must end where
    its bytes do."""
    from kafkalog.dataset.values import decode_all

    reg = _registry()
    values = [{"id": i, "note": None if i % 3 else "x" * i} for i in range(50)]
    named: dict = {}
    fastavro.parse_schema(ADDRESS, named_schemas=named)
    person = io.BytesIO(b"\0\0\0\0\x05")
    person.seek(5)
    fastavro.schemaless_writer(person, fastavro.parse_schema(PERSON, named_schemas=named), {"home": {"city": "Oslo"}})
    wires = [_wire(2, V2, v) for v in values] + [None, _wire(1, V1, {"id": 7, "gone": "g"}), person.getvalue()]
    want = [fastavro.schemaless_reader(io.BytesIO(w[5:]), fastavro.parse_schema(V2), None) for w in wires[:50]]
    got = Decoder("avro", reg).decode_many(wires)
    assert got[:50] == want and got[50:] == [None, {"id": 7, "gone": "g"}, {"home": {"city": "Oslo"}}]
    assert Decoder("avro", reg, subject="orders-value").decode_many(wires[50:52]) == [None, {"id": 7, "note": None}]
    # the first has a byte left over, the second is short: laid end to end they read as two good values
    bad = [_wire(2, V2, {"id": 1, "note": None}) + b"\x02", b"\0\0\0\0\x02" + b"\x00", _wire(2, V2, {"id": 3, "note": None})]
    stream = io.BytesIO(b"".join(b[5:] for b in bad[:2]))
    assert [fastavro.schemaless_reader(stream, fastavro.parse_schema(V2), None) for _ in range(2)] == [{"id": 1, "note": None}] * 2
    assert stream.tell() == len(stream.getvalue())
    out, at = decode_all(Decoder("avro", reg, subject="orders-value"), bad, topic="t", partition=0, offsets=lambda i: i, on_undecodable="null")
    assert at == [0, 1] and out == [None, None, {"id": 3, "note": None}]
    with pytest.raises(UndecodableValueError, match="offset 0 schema id 2: the Avro value ends at byte 2 of 3: bytes left over"):
        decode_all(Decoder("avro", reg, subject="orders-value"), bad, topic="t", partition=0, offsets=lambda i: i)
