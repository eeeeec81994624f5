"""Protobuf in the Schema Registry wire format (issue #34): nested messages chosen by message indexes,
a reference resolved as an imported file, typed Arrow columns from the message. The test writes its values with the protobuf runtime, over
message classes compiled here by protoc itself (grpcio-tools); the expected values are the messages
written, in Protobuf's JSON mapping (google.protobuf.json_format)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

protoc = pytest.importorskip("grpc_tools.protoc")
pytest.importorskip("google.protobuf")

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory  # noqa: E402

from helpers import write_partition  # noqa: E402
from kafkalog.dataset.registry import Registry, SchemasTopic  # noqa: E402
from kafkalog.dataset.values import Decoder, message_indexes  # noqa: E402
from kafkalog.errors import UndecodableValueError  # noqa: E402

COMMON = 'syntax = "proto3";\npackage acme;\nmessage Money { string currency = 1; int64 units = 2; }\n'
ORDERS = '''syntax = "proto3";
package acme;
import "acme/common.proto";
import "google/protobuf/timestamp.proto";
message Order {
  int32 id = 1;
  Money total = 2;
  message Line { string sku = 1; repeated int32 qty = 2; }
  repeated Line lines = 3;
  enum State { NEW = 0; PAID = 1; }
  State state = 4;
  map<string, int64> tags = 5;
  oneof pay { string card = 6; uint64 voucher = 7; }
  google.protobuf.Timestamp at = 8;
  optional bytes note = 9;
}
message Refund { int32 order_id = 1; Order.Line line = 2; }
'''


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        out.append(b | (0x80 if z else 0))
        if not z:
            return bytes(out)


def _wire(sid: int, indexes: list[int], msg: object) -> bytes:
    idx = b"\0" if indexes == [0] else _zigzag(len(indexes)) + b"".join(_zigzag(i) for i in indexes)
    return b"\0" + sid.to_bytes(4, "big") + idx + msg.SerializeToString()  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("proto")
    (tmp / "acme").mkdir()
    (tmp / "acme" / "common.proto").write_text(COMMON)
    (tmp / "orders.proto").write_text(ORDERS)
    out = tmp / "set.pb"
    import grpc_tools

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    assert protoc.main(["protoc", f"-I{tmp}", f"-I{well_known}", "--include_imports", f"--descriptor_set_out={out}", "orders.proto"]) == 0
    fds = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    return {n: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"acme.{n}")) for n in ("Order", "Order.Line", "Refund")}


def _registry_records() -> list[tuple[bytes, bytes, int]]:
    """A _schemas topic: acme/common.proto (id 1) and orders-value (id 2), which imports it."""
    def rec(subject: str, sid: int, text: str, refs: list | None = None) -> tuple[bytes, bytes, int]:
        return (json.dumps({"keytype": "SCHEMA", "subject": subject, "version": 1, "magic": 1}).encode(),
                json.dumps({"subject": subject, "version": 1, "id": sid, "schema": text, "schemaType": "PROTOBUF",
                            "references": refs or [], "deleted": False}).encode(), sid - 1)
    return [rec("acme/common.proto", 1, COMMON),
            rec("orders-value", 2, ORDERS, [{"name": "acme/common.proto", "subject": "acme/common.proto", "version": 1}])]


def _registry() -> Registry:
    return Registry([SchemasTopic.replay(_registry_records())])


def test_messages_chosen_by_their_indexes(classes: dict) -> None:
    order = classes["Order"](id=7, total={"currency": "EUR", "units": 2**40}, lines=[{"sku": "a", "qty": [1, 2]}])
    line = classes["Order.Line"](sku="b", qty=[3])
    refund = classes["Refund"](order_id=7, line={"sku": "c"})
    d = Decoder("protobuf", _registry(), subject="orders-value")
    for indexes, msg in (([0], order), ([0, 0], line), ([1], refund)):
        assert d.decode(_wire(2, indexes, msg)) == json_format.MessageToDict(msg, preserving_proto_field_name=True)
    assert Decoder("auto", _registry()).decode(_wire(2, [1], refund))["order_id"] == 7


def test_message_indexes() -> None:
    assert message_indexes(memoryview(b"\0rest")) == ([0], 1)
    assert message_indexes(memoryview(_zigzag(2) + _zigzag(1) + _zigzag(0))) == ([1, 0], 3)


def test_errors(classes: dict) -> None:
    d = Decoder("protobuf", _registry())
    with pytest.raises(UndecodableValueError, match=r"schema id 2: the message indexes \[5\] name no message"):
        d.decode(_wire(2, [5], classes["Refund"]()))
    with pytest.raises(UndecodableValueError, match="schema id 2: the Protobuf message does not decode"):
        d.decode(b"\0\0\0\0\x02\0\x0a\xff")
    with pytest.raises(UndecodableValueError, match="is PROTOBUF, not AVRO"):
        Decoder("avro", _registry()).decode(_wire(2, [0], classes["Refund"]()))


def test_a_typed_column_from_the_message(classes: dict, tmp_path: Path) -> None:
    """Typed: the subject's first message as an Arrow struct (docs/formats.md's rule); expected: the
    fields of the message written, read back through the protobuf runtime."""
    import datetime

    import pyarrow as pa

    d = Decoder("auto", _registry(), subject="orders-value", typed=True)
    typ = d.arrow_type()
    assert typ == pa.struct([
        ("id", pa.int32()), ("total", pa.struct([("currency", pa.string()), ("units", pa.int64())])),
        ("lines", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.list_(pa.int32()))]))), ("state", pa.string()),
        ("tags", pa.map_(pa.string(), pa.int64())), ("card", pa.string()), ("voucher", pa.uint64()),
        ("at", pa.timestamp("ns", tz="UTC")), ("note", pa.binary())])
    at = datetime.datetime(2024, 4, 19, 15, 16, 39, 860000, tzinfo=datetime.UTC)
    full = classes["Order"](id=7, total={"currency": "EUR", "units": 2**40}, lines=[{"sku": "a", "qty": [1, 2]}], state=1,
                            tags={"b": 2, "a": -1}, voucher=2**64 - 1, note=b"\xff\0")
    full.at.FromDatetime(at)
    empty = classes["Order"]()
    got = d.to_arrow([d.decode(_wire(2, [0], full)), d.decode(_wire(2, [0], empty)), None], typ).to_pylist()
    assert got[0] == {"id": full.id, "total": {"currency": "EUR", "units": full.total.units},
                      "lines": [{"sku": "a", "qty": [1, 2]}], "state": "PAID", "tags": [("a", -1), ("b", 2)],
                      "card": None, "voucher": full.voucher, "at": full.at.ToDatetime(tzinfo=datetime.UTC), "note": full.note}
    # proto3 scalars read as their defaults; fields with presence (message, oneof, optional) are null
    assert got[1] == {"id": 0, "total": None, "lines": [], "state": "NEW", "tags": [], "card": None, "voucher": None,
                      "at": None, "note": None}
    assert got[2] is None
    with pytest.raises(UndecodableValueError, match="is a acme.Refund, the typed column holds acme.Order"):
        d.decode(_wire(2, [1], classes["Refund"](order_id=9)))
    assert not os.listdir(tmp_path)


def test_cat_scan_and_export_of_a_protobuf_topic(classes: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    duckdb = pytest.importorskip("duckdb")
    import kafkalog
    from kafkalog.tools.cli import main

    root = tmp_path / "data"
    records = []
    for n, (_key, value, _off) in enumerate(_registry_records()):
        records.append((_key, value))
        assert n == _off
    write_partition(root, "_schemas-0", records)
    msgs = [classes["Order"](id=i, total={"currency": "EUR", "units": i * 100}, state=i % 2) for i in range(3)]
    write_partition(root, "orders-0", [(None, _wire(2, [0], m)) for m in msgs])
    want = [json_format.MessageToDict(m, preserving_proto_field_name=True) for m in msgs]
    assert main(["cat", str(root), "-t", "orders", "-s", "value=protobuf"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == want
    t = kafkalog.scan(root, topics="orders", value_format="auto", columns=["value"]).read_all()
    assert [(v["id"], v["total"]["units"], v["state"]) for v in t.column("value").to_pylist()] == [
        (m.id, m.total.units, classes["Order"].State.Name(m.state)) for m in msgs]
    out = tmp_path / "out"
    assert main(["export", str(root), "-t", "orders", "-o", str(out), "--value-format", "protobuf"]) == 0
    got = duckdb.sql(f"select value.id, value.total.units, value.state from read_parquet('{out}/topic=orders/*/*.parquet') "
                     "order by \"offset\"").fetchall()
    assert got == [(m.id, m.total.units, classes["Order"].State.Name(m.state)) for m in msgs]
