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
