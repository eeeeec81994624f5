"""The compiled Avro-to-Arrow decoder (:mod:`kafkalog.fast.avro`, issue #34) against fastavro.

Expected columns come from fastavro's ``schemaless_reader`` (the independent implementation: each
value alone, given to ``pyarrow.array``), over values written by fastavro's ``schemaless_writer``
(hypothesis draws the schemas and values) and over the real cp760 backup's topics. Every test runs
twice (the ``avro_path`` fixture): with the compiled kernel, and with it switched off as
``KAFKALOG_NO_EXTENSIONS=1`` switches it off (fastavro's path alone), which must give the same."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import logging
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import lost_partitions, need_shared, write_partition

fastavro = pytest.importorskip("fastavro")
pa = pytest.importorskip("pyarrow")

import kafkalog  # noqa: E402
from kafkalog.dataset.registry import Registry, SchemasTopic  # noqa: E402
from kafkalog.dataset.scan import topic_records  # noqa: E402
from kafkalog.dataset.values import Decoder  # noqa: E402
from kafkalog.errors import UndecodableValueError  # noqa: E402
from kafkalog.fast import avro  # noqa: E402


@pytest.fixture(params=["compiled", "fastavro"])
def avro_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test with the compiled kernel, then with fastavro's path alone (as ``KAFKALOG_NO_EXTENSIONS=1``)."""
    if request.param == "compiled":
        if not avro.AVAILABLE:
            pytest.skip("the compiled core is disabled (KAFKALOG_NO_EXTENSIONS)")
    else:
        monkeypatch.setattr(avro, "AVAILABLE", False)
    return request.param


def _registry(*schemas: tuple[str, int, int, Any]) -> Registry:
    """A registry of ``(subject, version, id, Avro schema)``."""
    recs = []
    for n, (subject, version, sid, schema) in enumerate(schemas):
        key = json.dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}).encode()
        recs.append((key, json.dumps({"subject": subject, "version": version, "id": sid, "schema": json.dumps(schema)}).encode(), n))
    return Registry([SchemasTopic.replay(recs)])


def _wire(sid: int, schema: Any, value: Any) -> bytes:
    out = io.BytesIO(b"\0" + sid.to_bytes(4, "big"))
    out.seek(5)
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), value)
    return out.getvalue()


def _fastavro_column(reg: Registry, wires: list[bytes | None], reader: Any, typ: pa.DataType) -> pa.Array:
    """What fastavro reads from each value alone (its writer schema by id, ``reader`` as reader schema), as ``typ``."""
    rows = []
    reader = None if reader is None else fastavro.parse_schema(reader)
    writers: dict[int, Any] = {}  # each schema id's parsed schema: cp760's topics have a few for 100,000 values
    for w in wires:
        if w is None:
            rows.append(None)
            continue
        sid = int.from_bytes(w[1:5], "big")
        if sid not in writers:
            writers[sid] = fastavro.parse_schema(json.loads(reg.by_id(sid).text))
        rows.append(fastavro.schemaless_reader(io.BytesIO(w[5:]), writers[sid], reader))
    return pa.array(_uuid_text(rows), type=typ)


def _uuid_text(v: Any) -> Any:
    """fastavro's ``uuid.UUID`` values as their text, the string column kafkalog gives them (values.avro_arrow_type)."""
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, list):
        return [_uuid_text(x) for x in v]
    if isinstance(v, dict):
        return {k: _uuid_text(x) for k, x in v.items()}
    return v


def _decode(reg: Registry, wires: list[bytes | None], subject: str = "t-value") -> tuple[pa.Array, bool]:
    """The typed column as scans build it (:class:`Decoding`'s path), and whether the kernel gave it."""
    from kafkalog.dataset.values import Decoding

    decoding = Decoding({"value": "avro"}, reg)
    topic = subject.removesuffix("-value")
    schema = decoding.schema(pa.schema([pa.field("value", pa.binary()), pa.field("offset", pa.int64())]), [topic])
    batch = pa.RecordBatch.from_arrays([pa.array(wires, pa.binary()), pa.array(range(len(wires)), pa.int64())], names=["value", "offset"])
    compiled = decoding.decoders(topic, typed=True)["value"].decode_column(batch.column(0), schema.field("value").type) is not None
    out = next(decoding.batches([batch], topic, 0, schema)).column(0)
    out.validate(full=True)
    return out, compiled


# ------------------------------------------------------------------- hypothesis: schemas and values
_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
_MS = (-62135596800000, 253402300799999)


def _exact(unscaled: int, scale: int) -> decimal.Decimal:
    """unscaled * 10**-scale, exactly (no context rounding)."""
    return decimal.Decimal((int(unscaled < 0), tuple(int(c) for c in str(abs(unscaled))), -scale))


def _primitive() -> st.SearchStrategy[tuple[Any, st.SearchStrategy[Any]]]:
    dec = st.integers(1, 38).flatmap(lambda p: st.tuples(st.just(p), st.integers(0, p)))
    return st.one_of(
        st.just(("null", st.none())),
        st.just(("boolean", st.booleans())),
        st.just(("int", st.integers(-(2**31), 2**31 - 1))),
        st.just(("long", st.integers(-(2**63), 2**63 - 1))),
        st.just(("float", st.floats(width=32, allow_nan=False))),
        st.just(("double", st.floats(allow_nan=False))),
        st.just(("bytes", st.binary(max_size=20))),
        st.just(("string", st.text(max_size=12))),
        st.just(({"type": "int", "logicalType": "date"},
                 st.dates(datetime.date(1, 1, 1), datetime.date(9999, 12, 31)))),
        st.just(({"type": "long", "logicalType": "timestamp-millis"}, st.integers(*_MS))),
        st.just(({"type": "long", "logicalType": "timestamp-micros"}, st.integers(_MS[0] * 1000, _MS[1] * 1000 + 999))),
        st.just(({"type": "string", "logicalType": "uuid"}, st.uuids().map(str))),
        dec.map(lambda ps: ({"type": "bytes", "logicalType": "decimal", "precision": ps[0], "scale": ps[1]},
                            st.integers(-(10 ** ps[0]) + 1, 10 ** ps[0] - 1).map(lambda u, s=ps[1]: _exact(u, s)))),
        st.integers(1, 20).map(lambda n: ({"type": "fixed", "name": "", "size": n}, st.binary(min_size=n, max_size=n))),
        st.lists(_NAMES, min_size=1, max_size=4, unique=True).map(
            lambda syms: ({"type": "enum", "name": "", "symbols": [s.upper() for s in syms]}, st.sampled_from([s.upper() for s in syms]))),
    )


def _nested(children: st.SearchStrategy[tuple[Any, st.SearchStrategy[Any]]]) -> st.SearchStrategy[tuple[Any, st.SearchStrategy[Any]]]:
    def record(fields: list[tuple[str, tuple[Any, Any]]]) -> tuple[Any, Any]:
        schema = {"type": "record", "name": "", "fields": [{"name": n, "type": s} for n, (s, _) in fields]}
        return schema, st.fixed_dictionaries({n: v for n, (_, v) in fields})

    return st.one_of(
        children.map(lambda c: ({"type": "array", "items": c[0]}, st.lists(c[1], max_size=4))),
        children.map(lambda c: ({"type": "map", "values": c[0]}, st.dictionaries(st.text(max_size=4), c[1], max_size=4))),
        children.filter(lambda c: c[0] != "null" and not isinstance(c[0], list)).flatmap(
            lambda c: st.sampled_from([["null", c[0]], [c[0], "null"]]).map(lambda u, v=c[1]: (u, st.one_of(st.none(), v)))),
        st.lists(st.tuples(_NAMES, children), min_size=1, max_size=5, unique_by=lambda f: f[0]).map(record),
    )


def _named(schema: Any, counter: list[int]) -> Any:
    """``schema`` with a distinct name for each named type."""
    if isinstance(schema, list):
        return [_named(s, counter) for s in schema]
    if isinstance(schema, dict):
        out = {k: _named(v, counter) if k in ("items", "values") else v for k, v in schema.items()}
        if "fields" in out:
            out["fields"] = [{**f, "type": _named(f["type"], counter)} for f in out["fields"]]
        if out.get("name") == "":
            counter[0] += 1
            out["name"] = f"N{counter[0]}"
        return out
    return schema


_SCHEMAS = st.recursive(_primitive(), _nested, max_leaves=12).map(
    lambda sv: ({"type": "record", "name": "Top", "fields": [{"name": "v", "type": sv[0]}]}, sv[1]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), drawn=_SCHEMAS)
def test_drawn_schemas_decode_as_fastavro_reads_them(avro_path: str, data: st.DataObject, drawn: tuple[Any, Any]) -> None:
    schema, values = _named(drawn[0], [0]), drawn[1]
    rows = data.draw(st.lists(values.map(lambda v: {"v": v}), max_size=6))
    reg = _registry(("t-value", 1, 1, schema))
    wires = [_wire(1, schema, r) for r in rows] + [None]
    got, compiled = _decode(reg, wires)
    assert got.equals(_fastavro_column(reg, wires, None, got.type))
    assert compiled == (avro_path == "compiled")


# ----------------------------------------------------------------------------- schema resolution
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), kept=_SCHEMAS, gone=_SCHEMAS)
def test_drawn_fields_skipped_and_added_as_fastavro_resolves_them(avro_path: str, data: st.DataObject, kept: tuple[Any, Any],
                                                                   gone: tuple[Any, Any]) -> None:
    """A writer field the reader lacks (of any drawn type: the kernel skips it as fastavro does) and a
    reader field the writer lacks (its default)."""
    counter = [0]
    v, g = _named(kept[0], counter)["fields"][0], _named(gone[0], counter)["fields"][0]
    writer = {"type": "record", "name": "Top", "fields": [{**g, "name": "gone"}, v]}
    reader = {"type": "record", "name": "Top", "fields": [v, {"name": "added", "type": ["null", "long"], "default": None}]}
    rows = data.draw(st.lists(st.tuples(kept[1], gone[1]).map(lambda t: {"v": t[0], "gone": t[1]}), max_size=5))
    reg = _registry(("t-value", 1, 1, writer), ("t-value", 2, 2, reader))
    wires = [_wire(1, writer, r) for r in rows]
    got, compiled = _decode(reg, wires)
    assert compiled == (avro_path == "compiled")
    assert got.equals(_fastavro_column(reg, wires, reader, got.type))


V1 = {"type": "record", "name": "E", "fields": [
    {"name": "n", "type": "int"}, {"name": "f", "type": "float"}, {"name": "l", "type": "long"}, {"name": "s", "type": "string"},
    {"name": "b", "type": "bytes"}, {"name": "gone", "type": {"type": "array", "items": ["null", "string"]}},
    {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["A", "B", "C"]}},
    {"name": "opt", "type": "int"}, {"name": "u", "type": ["null", "long"]}]}
V2 = {"type": "record", "name": "E", "fields": [
    {"name": "u", "type": ["null", "double"]}, {"name": "n", "type": "long"}, {"name": "f", "type": "double"}, {"name": "l", "type": "float"},
    {"name": "s", "type": "bytes"}, {"name": "b", "type": "string"},
    {"name": "k", "type": {"type": "enum", "name": "K", "symbols": ["B", "A", "Z"], "default": "Z"}},
    {"name": "opt", "type": ["null", "int"], "default": None},
    {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}, "default": "\u0000\u0001"},
    {"name": "tags", "type": {"type": "map", "values": "int"}, "default": {"a": 1}},
    {"name": "at", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": None}]}


def test_schema_resolution_is_fastavros(avro_path: str) -> None:
    """Every version read with the latest as reader schema: added fields (their defaults), a removed
    field, int/long/float promotions, string and bytes, an enum's reader default, unions."""
    reg = _registry(("t-value", 1, 1, V1), ("t-value", 2, 2, V2))
    v1 = [{"n": -(2**31), "f": 1.5, "l": 2**62 + 1, "s": "grüß", "b": b"ok", "gone": ["x", None], "k": k, "opt": 3, "u": u}
          for k, u in (("A", None), ("B", 2**53 + 1), ("C", -7))]
    wires = [_wire(1, V1, v) for v in v1] + [_wire(2, V2, {"u": 0.5, "n": 2**40, "f": 0.25, "l": 1.0, "s": b"\xff", "b": "b", "k": "Z",
                                                          "opt": None, "price": decimal.Decimal("12.34"), "tags": {}, "at": 5})]
    got, compiled = _decode(reg, wires)
    assert compiled == (avro_path == "compiled")
    reader = Decoder("avro", reg, subject="t-value", typed=True)._avro_schemas(1)[1]
    assert got.equals(_fastavro_column(reg, wires, reader, got.type))
    first = got.to_pylist()[0]
    assert first["k"] == "A" and first["price"] == decimal.Decimal("0.01") and first["tags"] == [("a", 1)] and first["s"] == "grüß".encode()
    assert got.to_pylist()[2]["k"] == "Z"  # C is not a reader symbol: the reader's default


def test_what_the_kernel_does_not_compile_reads_through_fastavro(avro_path: str) -> None:
    """A union of two non-null types (a JSON text column) and time-millis are fastavro's path alone."""
    for schema, value in ((["null", "int", "string"], "s"), ({"type": "int", "logicalType": "time-millis"}, datetime.time(1, 2, 3))):
        top = {"type": "record", "name": "R", "fields": [{"name": "x", "type": schema}]}
        reg = _registry(("t-value", 1, 1, top))
        wires = [_wire(1, top, {"x": value})]
        got, compiled = _decode(reg, wires)
        assert not compiled
        want = json.dumps(value) if isinstance(schema, list) else value
        assert got.to_pylist() == [{"x": want}]


# --------------------------------------------------------------------------- bytes that do not decode
REC = {"type": "record", "name": "R", "fields": [
    {"name": "s", "type": "string"}, {"name": "u", "type": ["null", "long"]}, {"name": "d", "type": {"type": "int", "logicalType": "date"}}]}


@pytest.mark.parametrize(("payload", "message"), [
    (b"\x02a\x02", "does not decode"),  # truncated (the union's long and the date missing)
    (b"\x02a\x02\xff\xff", "does not decode"),  # the bytes end inside a varint
    (b"\x02a\x06\x00", "does not decode"),  # union index 3 of 2 branches
    (b"\x02a\x00\x00\x00", "bytes left over"),
    (b"\x02\xff\x00\x00", "does not decode"),  # not UTF-8
    (b"\x02a\x00\xfe\xff\xff\xff\x0f", "does not decode"),  # a date past year 9999
])
def test_undecodable_bytes_give_fastavros_error(avro_path: str, tmp_path: Path, payload: bytes, message: str) -> None:
    """The error names topic, partition, offset and schema id, as fastavro's path gives it; with
    on_undecodable=null/skip, the record's value is null or the record is left out, with a warning."""
    root = tmp_path / "data"
    key = json.dumps({"keytype": "SCHEMA", "subject": "t-value", "version": 1, "magic": 1}).encode()
    write_partition(root, "_schemas-0", [(key, json.dumps({"subject": "t-value", "version": 1, "id": 1, "schema": json.dumps(REC)}).encode())])
    good = _wire(1, REC, {"s": "ok", "u": 1, "d": 3})
    write_partition(root, "t-0", [(None, good), (None, b"\0\0\0\0\x01" + payload), (None, good)])
    with pytest.raises(UndecodableValueError, match=f"topic t partition 0 offset 1 schema id 1: .*{message}"):
        kafkalog.scan(root, topics="t", value_format="avro").read_all()
    nulls = kafkalog.scan(root, topics="t", value_format="avro", on_undecodable="null").read_all().column("value").to_pylist()
    assert nulls == [{"s": "ok", "u": 1, "d": datetime.date(1970, 1, 4)}, None, nulls[0]]
    assert kafkalog.scan(root, topics="t", columns=["offset", "value"], value_format="avro", on_undecodable="skip").read_all().column(0).to_pylist() == [0, 2]


def test_bytes_fastavro_reads_though_the_kernel_refuses_them(avro_path: str) -> None:
    """An 11-byte varint, a boolean byte 2, an enum index -1: fastavro reads a value from each (its
    own), so the kernel hands the column over to it rather than giving an error or another value."""
    schema = {"type": "record", "name": "R", "fields": [{"name": "u", "type": "long"}, {"name": "b", "type": "boolean"},
                                                        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}}]}
    reg = _registry(("t-value", 1, 1, schema))
    wires = [b"\0\0\0\0\x01" + p for p in (b"\xff" * 10 + b"\x01\x00\x00", b"\x00\x02\x00", b"\x00\x00\x01")]
    got, compiled = _decode(reg, wires)
    assert not compiled
    assert got.equals(_fastavro_column(reg, wires, None, got.type))


@pytest.mark.parametrize(("schema", "values"), [
    ("string", ["", "grüß"]),
    ("long", [0, -(2**63)]),
    (["null", {"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": "int"}}]}], [None, {"a": [1, 2]}]),
    ({"type": "map", "values": ["null", "double"]}, [{}, {"x": None, "y": 1.5}]),
])
def test_values_that_are_not_records(avro_path: str, schema: Any, values: list[Any]) -> None:
    reg = _registry(("t-value", 1, 1, schema))
    wires = [_wire(1, schema, v) for v in values] + [None]
    got, compiled = _decode(reg, wires)
    assert compiled == (avro_path == "compiled")
    assert got.equals(_fastavro_column(reg, wires, None, got.type))


def test_blocks_with_sizes_repeated_map_keys_and_a_sliced_column(avro_path: str) -> None:
    """Arrays in blocks whose count is negative (then the block's size: Java's blocking encoder), a map
    whose key comes twice (fastavro's dict keeps the last value, so the kernel refuses it), and a
    column that is a slice of a larger one (an Arrow offset)."""
    schema = {"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "array", "items": "long"}},
                                                        {"name": "m", "type": {"type": "map", "values": "int"}}]}
    reg = _registry(("t-value", 1, 1, schema))
    blocks = b"\x03\x04\x02\x04\x02\x06\x00" + b"\x00"  # a: a block of -2 items (size 4: no use), a block of 1; m: {}
    wires = [b"\0\0\0\0\x01" + blocks, _wire(1, schema, {"a": [], "m": {"k": 1}})]
    got, compiled = _decode(reg, wires)
    assert compiled == (avro_path == "compiled") and got.to_pylist()[0] == {"a": [1, 2, 3], "m": []}
    assert got.equals(_fastavro_column(reg, wires, None, got.type))
    twice = b"\0\0\0\0\x01\x00\x04\x02k\x02\x02k\x04\x00"  # m: k=1, k=2
    got, compiled = _decode(reg, [twice])
    assert not compiled and got.to_pylist() == [{"a": [], "m": [("k", 2)]}]
    column = pa.array([None, *wires, None], pa.binary()).slice(1, 2)
    d = Decoder("avro", reg, subject="t-value", typed=True)
    fast = d.decode_column(column, d.arrow_type())
    assert (fast is not None) == (avro_path == "compiled")
    if fast is not None:
        assert fast.equals(_fastavro_column(reg, wires, None, fast.type))


def test_edges_of_dates_timestamps_and_decimals(avro_path: str) -> None:
    """The last values Python's datetime holds decode; one past them is fastavro's error, not a value."""
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "d", "type": {"type": "int", "logicalType": "date"}},
        {"name": "ms", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "us", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {"name": "p", "type": {"type": "fixed", "name": "F", "size": 16, "logicalType": "decimal", "precision": 38, "scale": 0}}]}
    plain = {"type": "record", "name": "R", "fields": [{"name": "d", "type": "int"}, {"name": "ms", "type": "long"}, {"name": "us", "type": "long"},
                                                        {"name": "p", "type": {"type": "fixed", "name": "F", "size": 16}}]}
    reg = _registry(("t-value", 1, 1, schema))
    top = 10**38 - 1
    edges = [(-719162, _MS[0], _MS[0] * 1000, -top), (2932896, _MS[1], _MS[1] * 1000 + 999, top)]
    wires = [_wire(1, plain, {"d": d, "ms": ms, "us": us, "p": p.to_bytes(16, "big", signed=True)}) for d, ms, us, p in edges]
    got, compiled = _decode(reg, wires)
    assert compiled == (avro_path == "compiled")
    assert got.equals(_fastavro_column(reg, wires, None, got.type))
    for past in ({"d": 2932897, "ms": 0, "us": 0, "p": bytes(16)}, {"d": 0, "ms": _MS[1] + 1, "us": 0, "p": bytes(16)},
                 {"d": 0, "ms": 0, "us": _MS[0] * 1000 - 1, "p": bytes(16)}):
        with pytest.raises(UndecodableValueError, match="does not decode"):
            _decode(reg, [_wire(1, plain, past)])
    with pytest.raises(pa.ArrowInvalid):  # 10**38 does not fit decimal(38): pyarrow refuses fastavro's Decimal
        _decode(reg, [_wire(1, plain, {"d": 0, "ms": 0, "us": 0, "p": (10**38).to_bytes(16, "big", signed=True)})])


# --------------------------------------------------------------------------------- the real backup
def test_every_cp760_topic_decodes_as_fastavro_reads_it(avro_path: str, caplog: pytest.LogCaptureFixture) -> None:
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    reg = Registry.open(topic_records([data], "_schemas"))
    lost = {p.rpartition("-")[0] for p in lost_partitions(data.parent)}
    topics = sorted({s.removesuffix("-value") for s in reg.subjects() if s.endswith("-value")} - lost)
    assert len(topics) >= 6
    for topic in topics:
        t = kafkalog.scan(data, topics=topic, columns=["value"], value_format="avro", schemas=reg).read_all()
        raw = kafkalog.scan(data, topics=topic, columns=["value"]).read_all().column("value").combine_chunks()
        got = t.column("value").combine_chunks()
        assert got.equals(_fastavro_column(reg, raw.to_pylist(), json.loads(reg.by_version(f"{topic}-value").text), got.type)), topic
        compiled = Decoder("avro", reg, subject=f"{topic}-value", typed=True).decode_column(raw, got.type)
        assert (compiled is not None) == (avro_path == "compiled") and (compiled is None or compiled.equals(got))
    with caplog.at_level(logging.WARNING):
        assert not caplog.records


_TEXT = st.one_of(st.binary(max_size=8), st.text(max_size=4).map(str.encode),
                  st.lists(st.sampled_from([b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe0\x9f\xbf", b"\xf0\x8f\xbf\xbf",
                                            b"\xef\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xc2", b"a", b"\xe2\x82\xac"]), max_size=4).map(b"".join))


@settings(max_examples=150, deadline=None)
@given(raw=_TEXT)
def test_the_kernel_takes_text_exactly_when_python_decodes_it(raw: bytes) -> None:
    """Avro strings must be strict UTF-8 (fastavro decodes them with Python's codec): the kernel takes a
    value exactly when Python decodes its text, and hands the others to fastavro, which raises."""
    if not avro.AVAILABLE:
        pytest.skip("the compiled core is disabled (KAFKALOG_NO_EXTENSIONS)")
    reg = _registry(("t-value", 1, 1, "string"))
    wire = b"\0\0\0\0\x01" + bytes([len(raw) * 2]) + raw  # zig-zag length (under 64)
    d = Decoder("avro", reg, subject="t-value", typed=True)
    try:
        want = raw.decode("utf-8")
    except UnicodeDecodeError:
        want = None
    got = d.decode_column(pa.array([wire], pa.binary()), pa.string())
    assert (got is None) == (want is None)
    if got is not None:
        assert got.to_pylist() == [want]
