"""Spark's keyFormat/valueFormat options (issue #34): keyDecoded/valueDecoded columns beside key and
value, decoded in the workers with kafkalog's decoders and the backup's own _schemas topic. Expected:
fastavro's decoding of the raw values in Kafka's dump of the bundled cp760 sample."""

from __future__ import annotations

import io
import json

import pytest

from helpers import GOLDEN, read_jsonl

fastavro = pytest.importorskip("fastavro")

DATA = GOLDEN / "real" / "cp760-flink-on-prem" / "data"


def _expected() -> dict[int, tuple[str, object]]:
    records = [r for r in read_jsonl(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz") if r["type"] == "record"]
    schemas = {(v := json.loads(bytes.fromhex(r["value"])))["id"]: fastavro.parse_schema(json.loads(v["schema"]))
               for r in records if r["file"].startswith("_schemas-0/") and r["value"]}
    out = {}
    for r in records:
        if r["file"].startswith("promotions-0/"):
            raw = bytes.fromhex(r["value"]) if r["value"] else None
            value = None if raw is None else fastavro.schemaless_reader(io.BytesIO(raw[5:]), schemas[int.from_bytes(raw[1:5], "big")], None)
            out[r["offset"]] = (bytes.fromhex(r["key"]).decode(), value)
    return out


def test_decoded_columns_beside_key_and_value(spark) -> None:  # noqa: ANN001
    df = (spark.read.format("kafkalog").option("subscribe", "promotions").option("valueFormat", "avro").option("keyFormat", "string")
          .load(str(DATA)))
    assert [f.name for f in df.schema.fields][-2:] == ["keyDecoded", "valueDecoded"]
    assert df.schema["valueDecoded"].dataType.simpleString() == "struct<promotion_name:string>"
    rows = df.select("offset", "value", "keyDecoded", "valueDecoded").collect()
    expected = _expected()
    assert len(rows) == len(expected) == 29
    for r in rows:
        key, value = expected[r.offset]
        assert r.keyDecoded == key
        assert (None if r.valueDecoded is None else r.valueDecoded.asDict()) == value
        assert (r.value is None) == (value is None)


def test_an_undecodable_value_fails_the_query(spark) -> None:  # noqa: ANN001
    df = spark.read.format("kafkalog").option("subscribe", "promotions").option("valueFormat", "long").load(str(DATA))
    with pytest.raises(Exception, match="topic promotions partition 0 offset 0: a long is 8 bytes"):
        df.collect()
    nulls = (spark.read.format("kafkalog").option("subscribe", "promotions").option("valueFormat", "long")
             .option("onUndecodable", "null").load(str(DATA)).select("valueDecoded").collect())
    assert len(nulls) == 29 and all(r.valueDecoded is None for r in nulls)


def test_value_format_needs_subscribe(spark) -> None:  # noqa: ANN001
    with pytest.raises(Exception, match="need subscribe"):
        spark.read.format("kafkalog").option("valueFormat", "avro").load(str(DATA)).schema  # noqa: B018


@pytest.mark.shared
def test_timestamps_of_cp760_orders(spark) -> None:  # noqa: ANN001
    """orders' ts is timestamp-millis: Spark's TimestampType (microseconds) holds the same instants fastavro gives."""
    from helpers import need_shared

    data = need_shared("golden-real/cp760-flink-on-prem/data")
    records = [r for r in read_jsonl(data.parents[1] / "expected" / "cp760-flink-on-prem.jsonl.gz")
               if r["type"] == "record" and r["file"].startswith(("_schemas-0/", "orders-0/"))]
    schema = next(fastavro.parse_schema(json.loads(v["schema"])) for r in records if r["file"].startswith("_schemas-0/") and r["value"]
                  and (v := json.loads(bytes.fromhex(r["value"])))["subject"] == "orders-value")
    want = {r["offset"]: fastavro.schemaless_reader(io.BytesIO(bytes.fromhex(r["value"])[5:]), schema, None)
            for r in records if r["file"].startswith("orders-0/") and r["offset"] >= 17200}
    df = (spark.read.format("kafkalog").option("subscribe", "orders").option("valueFormat", "avro").load(str(data))
          .where("offset >= 17200").select("offset", "valueDecoded"))
    got = {r.offset: r.valueDecoded.asDict() for r in df.collect()}
    assert got.keys() == want.keys()
    for off, v in want.items():
        assert got[off]["order_id"] == v["order_id"] and got[off]["ts"].timestamp() == v["ts"].timestamp()


PERSON = {"type": "object", "properties": {"id": {"type": "integer"}, "name": {"type": "string"},
                                           "tags": {"type": "array", "items": {"type": "string"}}}}
PROTO = 'syntax = "proto3";\npackage acme;\nmessage Order { int32 id = 1; enum State { NEW = 0; PAID = 1; } State state = 2; ' \
        'map<string, int64> tags = 3; uint64 big = 4; }\n'


def _schema(subject: str, sid: int, text: str, kind: str) -> tuple[bytes, bytes]:
    return (json.dumps({"keytype": "SCHEMA", "subject": subject, "version": 1, "magic": 1}).encode(),
            json.dumps({"subject": subject, "version": 1, "id": sid, "schema": text, "schemaType": kind, "deleted": False}).encode())


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, list, list]:
    """A data dir with a _schemas topic, a JSON Schema topic ``people`` and a Protobuf topic ``orders``
    (written with the protobuf runtime over classes protoc compiled here), and a topic ``lost`` whose
    value's schema id 99 is in no source. Gives (root, people's values, orders' messages)."""
    protoc = pytest.importorskip("grpc_tools.protoc")
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    from helpers import write_partition

    tmp = tmp_path_factory.mktemp("formats")
    (tmp / "orders.proto").write_text(PROTO)
    assert protoc.main(["protoc", f"-I{tmp}", f"--descriptor_set_out={tmp / 'set.pb'}", "orders.proto"]) == 0
    pool = descriptor_pool.DescriptorPool()
    for fd in descriptor_pb2.FileDescriptorSet.FromString((tmp / "set.pb").read_bytes()).file:
        pool.Add(fd)
    order = message_factory.GetMessageClass(pool.FindMessageTypeByName("acme.Order"))
    msgs = [order(id=i, state=i % 2, tags={"k": -i}, big=2**64 - 1 - i) for i in range(3)]
    people = [{"id": 2**40 + i, "name": f"p{i}", "tags": ["a"] * i} for i in range(3)]
    root = tmp / "data"
    write_partition(root, "_schemas-0", [_schema("people-value", 1, json.dumps(PERSON), "JSON"), _schema("orders-value", 2, PROTO, "PROTOBUF")])
    write_partition(root, "people-0", [(None, b"\0\0\0\0\x01" + json.dumps(v).encode()) for v in people])
    write_partition(root, "orders-0", [(None, b"\0\0\0\0\x02\0" + m.SerializeToString()) for m in msgs])
    write_partition(root, "lost-0", [(None, b"\0\0\0\0\x63" + b"{}")])
    return root, people, msgs


def test_json_schema_and_protobuf_topics(spark, written) -> None:  # noqa: ANN001
    """Typed struct columns, decoded in the workers, equal to the values the test wrote."""
    root, people, msgs = written
    df = spark.read.format("kafkalog").option("subscribe", "people").option("valueFormat", "json").load(str(root))
    assert df.schema["valueDecoded"].dataType.simpleString() == "struct<id:bigint,name:string,tags:array<string>>"
    assert [r.valueDecoded.asDict() for r in df.orderBy("offset").collect()] == people
    df = spark.read.format("kafkalog").option("subscribe", "orders").option("valueFormat", "protobuf").load(str(root))
    assert df.schema["valueDecoded"].dataType.simpleString() == "struct<id:int,state:string,tags:map<string,bigint>,big:decimal(20,0)>"
    got = [r.valueDecoded.asDict() for r in df.orderBy("offset").collect()]
    assert got == [{"id": m.id, "state": ["NEW", "PAID"][m.state], "tags": dict(m.tags), "big": m.big} for m in msgs]


def test_an_unknown_schema_id_and_an_unreachable_registry(spark, written, tmp_path) -> None:  # noqa: ANN001
    root = written[0]
    with pytest.raises(Exception, match="typed columns need the subject lost-value: it is in no schema source"):
        spark.read.format("kafkalog").option("subscribe", "lost").option("valueFormat", "auto").load(str(root))
    with pytest.raises(Exception, match="topic lost partition 0 offset 0 schema id 99: no schema with this id"):
        spark.read.format("kafkalog").option("subscribe", "lost").option("valueFormat", "json").load(str(root)).collect()
    with pytest.raises(Exception, match=r"schema registry http://127\.0\.0\.1:9/? cannot be reached"):
        (spark.read.format("kafkalog").option("subscribe", "people").option("valueFormat", "avro")
         .option("schemaRegistry", "http://127.0.0.1:9").option("schemasTopic", "none").load(str(root)).collect())


def test_validate_checks_json_values_in_the_workers(spark, tmp_path) -> None:  # noqa: ANN001
    """Option validate=true is --validate: a JSON Schema value the jsonschema library finds invalid (below
    its minimum) fails the query, or with onUndecodable=null is a null; without it the value reads."""
    jsonschema = pytest.importorskip("jsonschema")
    from helpers import write_partition

    schema = {"type": "object", "properties": {"id": {"type": "integer", "minimum": 0}}}
    values = [{"id": 1}, {"id": -1}]
    assert [jsonschema.Draft7Validator(schema).is_valid(v) for v in values] == [True, False]
    root = tmp_path / "data"
    write_partition(root, "_schemas-0", [_schema("ids-value", 1, json.dumps(schema), "JSON")])
    write_partition(root, "ids-0", [(None, b"\0\0\0\0\x01" + json.dumps(v).encode()) for v in values])

    def read(**options: str) -> list:
        reader = spark.read.format("kafkalog").option("subscribe", "ids").option("valueFormat", "json")
        for k, v in options.items():
            reader = reader.option(k, v)
        return [None if r.valueDecoded is None else r.valueDecoded.asDict() for r in reader.load(str(root)).orderBy("offset").collect()]

    assert read() == values
    with pytest.raises(Exception, match=r"topic ids partition 0 offset 1 schema id 1: the JSON value is not valid by its schema at \$\.id"):
        read(validate="true")
    assert read(validate="true", onUndecodable="null") == [values[0], None]
    with pytest.raises(Exception, match="option validate must be true or false"):
        read(validate="yes")
