"""Keys and values as data: Confluent's Schema Registry wire format (Avro, JSON Schema, Protobuf) and the
plain formats of Kafka's own serializers, decoded with the schemas of :mod:`kafkalog.dataset.registry`.

Formats (``-s value=FORMAT`` in ``kafkalog cat``, ``value_format=`` in :func:`kafkalog.scan`):

=============  ==================================================================================
``bytes``      the bytes as stored (no decoding)
``string``     UTF-8 text (Kafka's ``StringSerializer``)
``short``,     big-endian two's complement of 2, 4 or 8 bytes, IEEE-754 big-endian of 4 or 8 bytes
``int``,       (Kafka's ``ShortSerializer``, ``IntegerSerializer``, ``LongSerializer``,
``long``,      ``FloatSerializer``, ``DoubleSerializer``)
``float``,
``double``
``avro``       the wire format with an Avro schema, read with fastavro's ``schemaless_reader``
``json``       the wire format with a JSON Schema (JSON text after the 5-byte prefix); a value
               whose first byte is not 0 is plain JSON text (no JSON text starts with byte 0, so
               the two never mix up)
``protobuf``   the wire format with a Protobuf schema: the message indexes, then the message, given
               as Protobuf's JSON mapping (the ``.proto`` compiled by protoc from grpcio-tools'
               wheel, its references as the files it imports)
``auto``       the wire format, decoded as its schema's type says (``AVRO``, ``JSON``, ``PROTOBUF``)
=============  ==================================================================================

The wire format is byte 0 (the "magic byte"), the schema id as a 4-byte big-endian int, then the
payload (Confluent's ``AbstractKafkaSchemaSerDe``); for Protobuf, the payload starts with the
message indexes (:func:`message_indexes`).

Avro values of a topic are read with the latest version of its subject (``<topic>-value`` or
``<topic>-key``, Confluent's ``TopicNameStrategy``) as the reader schema, each with its own writer
schema by id, by Avro's schema resolution rules: every version of the subject gives the latest
version's shape, so a topic has one Arrow type (:meth:`Decoder.arrow_type`). Without such a
subject, each value is read with its writer schema.

A value that cannot be decoded raises :class:`~kafkalog.errors.UndecodableValueError`, one whose
id no source knows :class:`~kafkalog.errors.UnknownSchemaError`; :func:`on_undecodable` modes turn
them into a warning and the raw bytes, a null, or the record left out, never a guessed value.
:meth:`Decoder.arrow_type` gives the typed columns of scans and exports their Arrow types: Avro's
(:func:`avro_arrow_type`), JSON Schema's (:class:`_JsonSchemaTypes`) and Protobuf's (:func:`_proto_plan`),
from the subject's latest schema; ``cat`` prints the values as JSON (:attr:`Decoder.typed` off).
``validate`` (:class:`Decoding`, ``--validate``) checks JSON Schema values with the jsonschema library.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from kafkalog.errors import SchemaError, UndecodableValueError

if TYPE_CHECKING:
    import pyarrow as pa

    from kafkalog.dataset.registry import Registry, Schema

__all__ = ["FORMATS", "ON_UNDECODABLE", "WIRE_FORMATS", "Decoder", "Decoding", "avro_arrow_type", "decode_all", "guess_format", "json_text", "message_indexes", "split_wire"]

FORMATS = ("bytes", "string", "short", "int", "long", "float", "double", "avro", "json", "protobuf", "auto")
#: What a record whose key or value does not decode does: fail (default), or warn and give the raw
#: bytes, a null, or leave the record out
ON_UNDECODABLE = ("error", "raw", "null", "skip")
_NUMBERS = {"short": struct.Struct(">h"), "int": struct.Struct(">i"), "long": struct.Struct(">q"),
            "float": struct.Struct(">f"), "double": struct.Struct(">d")}
_WIRE_TYPES = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}
#: The formats that read the wire format, so need schema sources
WIRE_FORMATS = frozenset({"avro", "json", "protobuf", "auto"})


def split_wire(data: bytes) -> tuple[int, memoryview]:
    """The schema id and the payload of a value in the wire format (magic byte 0, 4-byte big-endian id)."""
    if len(data) < 5 or data[0] != 0:
        what = "is empty" if not data else f"starts with byte {data[0]}" if data[0] else f"is {len(data)} bytes"
        raise UndecodableValueError(f"not in the Schema Registry wire format (byte 0, a 4-byte schema id, the payload): the value {what}")
    return int.from_bytes(data[1:5], "big"), memoryview(data)[5:]


# ------------------------------------------------------------------------------------------ Avro
def _strip_uuid(s: Any) -> Any:
    """An Avro schema (parsed JSON) whose ``uuid`` strings are plain strings: fastavro then gives the
    text, not a :class:`uuid.UUID`, which is the same value and what Arrow's string column takes."""
    if isinstance(s, dict):
        out = {k: _strip_uuid(v) for k, v in s.items()}
        if out.get("logicalType") == "uuid" and out.get("type") == "string":
            del out["logicalType"]
        return out
    if isinstance(s, list):
        return [_strip_uuid(v) for v in s]
    return s


def _parse_avro(registry: Registry | None, schema: Schema, named: dict[str, Any], seen: set[tuple[str, int]]) -> Any:
    """``schema`` parsed by fastavro, its references first (their named types go into ``named``)."""
    import fastavro

    for ref in schema.references:
        if (ref.subject, ref.version) in seen:
            continue
        seen.add((ref.subject, ref.version))
        dep = registry.by_version(ref.subject, ref.version) if registry is not None else None
        if dep is None:
            raise UndecodableValueError(f"reference {ref.name!r} to {ref.subject} version {ref.version} is in no schema source",
                                        schema_id=schema.id)
        _parse_avro(registry, dep, named, seen)
    try:
        return fastavro.parse_schema(_strip_uuid(json.loads(schema.text)), named_schemas=named)
    except (ValueError, fastavro.schema.SchemaParseException, fastavro.schema.UnknownType) as e:
        raise UndecodableValueError(f"the Avro schema does not parse: {e}", schema_id=schema.id) from None


def _default(s: Any, v: Any, named: dict[str, Any]) -> Any:
    """A field default (JSON, as the schema gives it) as fastavro gives a read value of type ``s``:
    fastavro's schema resolution hands defaults over unconverted (``"\\u0000"`` for a decimal), so
    they are converted here once, by the spec's rules (bytes and fixed as code points 0-255; a
    union's default is of its first branch)."""
    import datetime
    import decimal

    if v is None:
        return None
    if isinstance(s, list):
        return _default(s[0], v, named)
    if isinstance(s, str):
        s = named.get(s, s)
        if isinstance(s, str):
            return v.encode("latin-1") if s == "bytes" and isinstance(v, str) else v
    t, logical = s.get("type"), s.get("logicalType")
    if t in ("bytes", "fixed") and isinstance(v, str):
        raw = v.encode("latin-1")
        if logical == "decimal":
            return decimal.Decimal(int.from_bytes(raw, "big", signed=True)).scaleb(-int(s.get("scale", 0)))
        return raw
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    if isinstance(v, int) and not isinstance(v, bool):
        if logical == "date":
            return epoch.date() + datetime.timedelta(days=v)
        units = {"timestamp-millis": 1000, "timestamp-micros": 1, "local-timestamp-millis": 1000, "local-timestamp-micros": 1}
        if logical in units:
            at = epoch + datetime.timedelta(microseconds=v * units[logical])
            return at if logical.startswith("timestamp") else at.replace(tzinfo=None)
        if logical in ("time-millis", "time-micros"):
            us = v * (1000 if logical == "time-millis" else 1)
            return (datetime.datetime.min + datetime.timedelta(microseconds=us)).time()
    if t in ("record", "error") and isinstance(v, dict):
        return {f["name"]: _default(f["type"], v.get(f["name"], f.get("default")), named) for f in s["fields"]}
    if t == "array":
        return [_default(s["items"], x, named) for x in v]
    if t == "map":
        return {k: _default(s["values"], x, named) for k, x in v.items()}
    if isinstance(t, (dict, list)):
        return _default(t, v, named)
    return v


def _convert_defaults(s: Any, named: dict[str, Any]) -> None:
    """Every record field default of a parsed schema, converted in place (:func:`_default`)."""
    if isinstance(s, list):
        for b in s:
            _convert_defaults(b, named)
    elif isinstance(s, dict):
        t = s.get("type")
        if t in ("record", "error"):
            named[s["name"]] = s
            for f in s["fields"]:
                _convert_defaults(f["type"], named)
                if "default" in f:
                    f["default"] = _default(f["type"], f["default"], named)
        elif t == "array":
            _convert_defaults(s["items"], named)
        elif t == "map":
            _convert_defaults(s["values"], named)
        elif isinstance(t, (dict, list)):
            _convert_defaults(t, named)
        elif t in ("enum", "fixed"):
            named[s["name"]] = s


def _unions(s: Any) -> bool:
    """Whether a parsed Avro schema has a union of two or more non-null branches (see :func:`avro_arrow_type`)."""
    if isinstance(s, list):
        return sum(b != "null" for b in s) > 1 or any(_unions(b) for b in s)
    if isinstance(s, dict):
        t = s.get("type")
        if t == "record" or t == "error":
            return any(_unions(f["type"]) for f in s["fields"])
        if t == "array":
            return _unions(s["items"])
        if t == "map":
            return _unions(s["values"])
        return isinstance(t, (dict, list)) and _unions(t)
    return False


def avro_arrow_type(s: Any) -> pa.DataType:
    """The Arrow type of a parsed (fastavro) Avro schema.

    record: struct; enum: string; array: list; map: map<string, T>; fixed: fixed_size_binary;
    bytes: binary; string: string; int/long: int32/int64; float/double: float32/float64; boolean:
    bool; null: null. Logical types: decimal (bytes or fixed) decimal128 (decimal256 above 38
    digits), date date32, time-millis time32[ms], time-micros time64[us], timestamp-millis/micros
    timestamp[ms/us, UTC], local-timestamp-millis/micros timestamp[ms/us] (no zone), uuid string.

    Unions: a union of ``null`` and one type is that type, nullable. A union of two or more
    non-null types (no Arrow type that Parquet, DuckDB and Spark all read holds it) is a string
    column holding the value as JSON (:func:`json_text`)."""
    import pyarrow as pa

    if isinstance(s, list):
        branches = [b for b in s if b != "null"]
        return avro_arrow_type(branches[0]) if len(branches) == 1 else pa.string()
    if isinstance(s, str):
        prim = {"null": pa.null(), "boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
                "double": pa.float64(), "bytes": pa.binary(), "string": pa.string()}
        if s not in prim:
            raise ValueError(f"Avro type {s!r} is unknown here (named types are resolved by fastavro's parse_schema)")
        return prim[s]
    t = s["type"]
    logical = s.get("logicalType")
    if logical == "decimal" and t in ("bytes", "fixed"):
        p, sc = int(s["precision"]), int(s.get("scale", 0))
        return pa.decimal128(p, sc) if p <= 38 else pa.decimal256(p, sc)
    lt = {("int", "date"): pa.date32(), ("int", "time-millis"): pa.time32("ms"), ("long", "time-micros"): pa.time64("us"),
          ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"), ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
          ("long", "local-timestamp-millis"): pa.timestamp("ms"), ("long", "local-timestamp-micros"): pa.timestamp("us")}
    if isinstance(t, str) and (t, logical) in lt:
        return lt[(t, logical)]
    if t in ("record", "error"):
        return pa.struct([pa.field(f["name"], avro_arrow_type(f["type"]), nullable=_nullable(f["type"])) for f in s["fields"]])
    if t == "enum":
        return pa.string()
    if t == "array":
        return pa.list_(avro_arrow_type(s["items"]))
    if t == "map":
        return pa.map_(pa.string(), avro_arrow_type(s["values"]))
    if t == "fixed":
        return pa.binary(int(s["size"]))
    return avro_arrow_type(t)


def _nullable(s: Any) -> bool:
    return s == "null" or (isinstance(s, list) and "null" in s)


def _jsonable(v: Any) -> Any:
    """A decoded value's JSON form (see :func:`json_text`)."""
    import datetime
    import decimal
    import uuid

    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("latin-1")
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, tuple):
        return list(v)
    raise TypeError(f"{type(v).__name__} has no JSON form")


def json_text(v: Any) -> str:
    """A decoded value as one line of JSON. Avro's JSON encoding where JSON has no type: bytes and
    fixed as a string of the code points 0-255 (one per byte), decimals as their exact decimal
    text, dates, times and timestamps in ISO 8601 (timestamps with their UTC offset)."""
    return json.dumps(v, default=_jsonable, ensure_ascii=False, separators=(",", ":"))


def _to_arrow_rows(s: Any) -> Callable[[Any], Any] | None:
    """A function that turns fastavro's value into what :func:`pyarrow.array` takes for
    :func:`avro_arrow_type` of ``s``, or None when the value is taken as it is (the common case:
    no union of two or more non-null types)."""
    if not _unions(s):
        return None

    def walk(s: Any, v: Any) -> Any:
        if v is None:
            return None
        if isinstance(s, list):
            branches = [b for b in s if b != "null"]
            return walk(branches[0], v) if len(branches) == 1 else json_text(v)
        if isinstance(s, dict):
            t = s["type"]
            if t in ("record", "error"):
                return {f["name"]: walk(f["type"], v.get(f["name"])) for f in s["fields"]}
            if t == "array":
                return [walk(s["items"], x) for x in v]
            if t == "map":
                return {k: walk(s["values"], x) for k, x in v.items()}
            if isinstance(t, (dict, list)):
                return walk(t, v)
        return v

    return lambda v: walk(s, v)


# -------------------------------------------------------------------------------------- Protobuf
def _zigzag_varint(data: memoryview, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Confluent's ``ByteUtils.readVarint``) at ``pos``: its value and the next position."""
    shift = result = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise UndecodableValueError("the Protobuf message indexes end inside a varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7


def message_indexes(payload: memoryview) -> tuple[list[int], int]:
    """The Protobuf wire format's message indexes after the schema id (a count, then that many
    indexes, all zig-zag varints; a count of 0 stands for ``[0]``, the file's first message), and
    where the message's bytes start."""
    count, pos = _zigzag_varint(payload, 0)
    if count == 0:
        return [0], pos
    if count < 0 or count > len(payload):
        raise UndecodableValueError(f"the Protobuf message indexes give a count of {count}")
    out = []
    for _ in range(count):
        i, pos = _zigzag_varint(payload, pos)
        out.append(i)
    return out, pos


def _compile_proto(registry: Registry | None, schema: Schema) -> Any:
    """The top-level message descriptors of a Protobuf schema, in declaration order, compiled by
    protoc (grpcio-tools' wheel) with its references as the files they import, in a descriptor pool of its own."""
    import os
    import tempfile

    import grpc_tools
    from google.protobuf import descriptor_pb2, descriptor_pool
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory(prefix="kafkalog-proto-") as tmp:
        files: dict[str, str] = {}

        def add(s: Schema, name: str) -> None:
            files[name] = s.text
            for ref in s.references:
                if ref.name in files:
                    continue
                dep = registry.by_version(ref.subject, ref.version) if registry is not None else None
                if dep is None:
                    raise UndecodableValueError(f"reference {ref.name!r} to {ref.subject} version {ref.version} is in no schema source",
                                                schema_id=schema.id)
                add(dep, ref.name)

        main = f"kafkalog_schema_{schema.id}.proto"
        add(schema, main)
        for name, text in files.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        out = os.path.join(tmp, "set.pb")
        well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        rc = protoc.main(["protoc", f"-I{tmp}", f"-I{well_known}", "--include_imports", f"--descriptor_set_out={out}", main])
        if rc != 0 or not os.path.exists(out):
            raise UndecodableValueError("protoc does not compile the Protobuf schema (its messages are on stderr)", schema_id=schema.id)
        fds = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as f:
            fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:  # --include_imports lists each file after the files it imports
        pool.Add(fd)
    package = next(fd.package for fd in fds.file if fd.name == main)
    order = [f"{package}.{m.name}" if package else m.name for fd in fds.file if fd.name == main for m in fd.message_type]
    return [pool.FindMessageTypeByName(n) for n in order]


def _proto_reader(messages: list[Any], schema_id: int, typed: tuple[Any, Plan] | None = None) -> Callable[[int, memoryview], Any]:
    """Decodes the Protobuf wire format's values of one schema: the message the indexes name, as
    Protobuf's JSON mapping gives it (``json_format.MessageToDict``, field names as declared).
    ``typed`` (the reader schema's message and its plan, :func:`_proto_plan`): the bytes are parsed
    with that message, as Protobuf reads old bytes with a newer schema (by field number), and given
    as the plan converts them; a value of another message does not decode."""
    from google.protobuf import json_format, message_factory
    from google.protobuf.message import DecodeError

    classes: dict[tuple[int, ...], Any] = {}
    reader_cls = None if typed is None else message_factory.GetMessageClass(typed[0])

    def read(sid: int, payload: memoryview) -> Any:
        indexes, pos = message_indexes(payload)
        cls = classes.get(tuple(indexes))
        if cls is None:
            try:
                if indexes[0] < 0:
                    raise IndexError(indexes[0])
                desc = messages[indexes[0]]
                for i in indexes[1:]:
                    desc = desc.nested_types[i]
            except (IndexError, KeyError):
                raise UndecodableValueError(f"the message indexes {indexes} name no message of the schema", schema_id=sid) from None
            if typed is not None and desc.full_name != typed[0].full_name:
                raise UndecodableValueError(f"the value is a {desc.full_name}, the typed column holds {typed[0].full_name} (the first "
                                            "message of the subject's latest schema): read it as JSON text with cat", schema_id=sid)
            cls = classes[tuple(indexes)] = message_factory.GetMessageClass(desc) if reader_cls is None else reader_cls
        msg = cls()
        try:
            msg.ParseFromString(bytes(payload[pos:]))
        except DecodeError as e:
            raise UndecodableValueError(f"the Protobuf message does not decode: {e}", schema_id=sid) from None
        if typed is not None:
            return typed[1][1](msg, "$")
        return json_format.MessageToDict(msg, preserving_proto_field_name=True)

    return read


# ------------------------------------------------------------------------------- typed columns
#: A typed column's plan: its Arrow type and what turns a decoded value into what :func:`pyarrow.array` takes for it
Plan = tuple["pa.DataType", Callable[[Any, str], Any]]


def _mismatch(path: str, v: Any, want: str) -> UndecodableValueError:
    return UndecodableValueError(f"the value at {path} is {type(v).__name__} {json_text(v)[:40]}, the schema's type there is {want}")


def _json_text_plan() -> Plan:
    import pyarrow as pa

    return pa.string(), lambda v, path: None if v is None else json_text(v)


def _scalar_plan(typ: pa.DataType, want: str, ok: Callable[[Any], Any]) -> Plan:
    def conv(v: Any, path: str) -> Any:
        if v is None:
            return None
        out = ok(v)
        if out is None:
            raise _mismatch(path, v, want)
        return out

    return typ, conv


def _json_integer(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return v if isinstance(v, int) and -(2**63) <= v < 2**63 else None


class _JsonSchemaTypes:
    """The Arrow type of a JSON Schema and the conversion of its values (:meth:`Decoder.arrow_type`'s
    rule for JSON Schema, docs/formats.md): ``object`` with ``properties`` a struct of them (each
    nullable; properties the schema does not declare are not in it), ``array`` with one ``items``
    schema a list, ``string`` string, ``integer`` int64, ``number`` float64, ``boolean`` bool, a
    ``type`` list of one type and ``null`` that type; ``enum`` of strings a string. ``$ref`` is
    followed within the document (``#/...``) and into the schema's ``references`` (by their name).
    Anything else (no definite type: ``anyOf``, ``oneOf``, ``allOf``, several types, an object without
    ``properties``, a recursive ``$ref``, a ``$ref`` that leads nowhere) is a string of JSON text."""

    def __init__(self, registry: Registry | None, schema: Schema) -> None:
        self.registry = registry
        self.schema = schema
        self.docs: dict[str, Any] = {}

    def _doc(self, name: str) -> Any:
        if name not in self.docs:
            ref = next((r for r in self.schema.references if r.name == name), None)
            dep = self.registry.by_version(ref.subject, ref.version) if ref is not None and self.registry is not None else None
            self.docs[name] = None if dep is None else json.loads(dep.text)
        return self.docs[name]

    def plan(self) -> Plan:
        try:
            root = json.loads(self.schema.text)
        except ValueError as e:
            raise UndecodableValueError(f"the JSON Schema is not JSON: {e}", schema_id=self.schema.id) from None
        self.docs[""] = root
        return self._plan(root, "", ())

    def _resolve(self, ref: str, doc: str) -> tuple[Any, str] | None:
        name, _, pointer = ref.partition("#")
        where = name or doc
        node = self._doc(where) if name else self.docs.get(doc)
        for part in [p for p in pointer.split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return (node, where) if node is not None else None

    def _plan(self, s: Any, doc: str, seen: tuple[tuple[str, str], ...]) -> Plan:
        import pyarrow as pa

        if not isinstance(s, dict):
            return _json_text_plan()
        if isinstance(s.get("$ref"), str):
            key = (doc, s["$ref"]) if s["$ref"].startswith("#") else (s["$ref"].partition("#")[0], s["$ref"])
            target = None if key in seen else self._resolve(s["$ref"], doc)
            return _json_text_plan() if target is None else self._plan(target[0], target[1], (*seen, key))
        t = s.get("type")
        if isinstance(t, list):
            kinds = [k for k in t if k != "null"]
            t = kinds[0] if len(kinds) == 1 else None
        elif t is None:
            t = "object" if "properties" in s else "array" if "items" in s else None
            if t is None and isinstance(s.get("enum"), list) and s["enum"] and all(isinstance(x, str) for x in s["enum"]):
                t = "string"
        if t == "object" and isinstance(s.get("properties"), dict) and s["properties"]:
            fields = {name: self._plan(sub, doc, seen) for name, sub in s["properties"].items()}

            def obj(v: Any, path: str) -> Any:
                if v is None:
                    return None
                if not isinstance(v, dict):
                    raise _mismatch(path, v, "object")
                return {n: conv(v.get(n), f"{path}.{n}") for n, (_, conv) in fields.items()}

            return pa.struct([pa.field(n, typ) for n, (typ, _) in fields.items()]), obj
        if t == "array" and isinstance(s.get("items"), dict):
            typ, item = self._plan(s["items"], doc, seen)

            def arr(v: Any, path: str) -> Any:
                if v is None:
                    return None
                if not isinstance(v, list):
                    raise _mismatch(path, v, "array")
                return [item(x, f"{path}[{i}]") for i, x in enumerate(v)]

            return pa.list_(typ), arr
        scalars = {
            "string": (pa.string(), lambda v: v if isinstance(v, str) else None),
            "integer": (pa.int64(), _json_integer),
            "number": (pa.float64(), lambda v: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None),
            "boolean": (pa.bool_(), lambda v: v if isinstance(v, bool) else None),
        }
        if t in scalars:
            return _scalar_plan(scalars[t][0], t, scalars[t][1])
        return _json_text_plan()


#: Protobuf field types (``FieldDescriptor.TYPE_*``) and their Arrow types
_PROTO_SCALARS = {1: "float64", 2: "float32", 3: "int64", 4: "uint64", 5: "int32", 6: "uint64", 7: "uint32", 8: "bool_",
                  9: "string", 12: "binary", 13: "uint32", 15: "int32", 16: "int64", 17: "int32", 18: "int64"}
_PROTO_ENUM, _PROTO_MESSAGE, _PROTO_GROUP = 14, 11, 10


def _proto_plan(desc: Any, seen: tuple[str, ...] = ()) -> Plan:
    """The Arrow type of a Protobuf message and the conversion of its parsed messages (the rule of
    docs/formats.md): a struct of its fields by their declared names; scalars as their width and
    sign (uint32/uint64 unsigned), bytes binary, enums the value's name (its number as text when the
    enum does not declare it), ``repeated`` a list, ``map<K, V>`` a map, a nested message a struct,
    ``google.protobuf.Timestamp`` timestamp[ns, UTC]. A field is null when it has presence (a
    message, a ``oneof`` member, ``optional``) and is not set; a proto3 scalar without presence
    reads as its value (0, "", false when not written), as Protobuf reads it. A message that
    contains itself is a string of JSON text (Protobuf's JSON mapping) where it recurs."""
    import pyarrow as pa

    if desc.full_name == "google.protobuf.Timestamp":
        return pa.timestamp("ns", tz="UTC"), lambda m, path: m.seconds * 1_000_000_000 + m.nanos
    if desc.full_name in seen:
        from google.protobuf import json_format

        return pa.string(), lambda m, path: json_text(json_format.MessageToDict(m, preserving_proto_field_name=True))
    seen = (*seen, desc.full_name)
    fields: list[tuple[str, pa.DataType, Callable[[Any], Any]]] = []
    for f in desc.fields:
        fields.append((f.name, *_proto_field(f, seen)))

    def conv(m: Any, path: str) -> Any:
        return {name: get(m) for name, _, get in fields}

    return pa.struct([pa.field(n, t) for n, t, _ in fields]), conv


def _proto_value(f: Any, seen: tuple[str, ...]) -> tuple[pa.DataType, Callable[[Any], Any]]:
    """The Arrow type of one value of field ``f`` and the conversion of one such value."""
    import pyarrow as pa

    if f.type in (_PROTO_MESSAGE, _PROTO_GROUP):
        typ, conv = _proto_plan(f.message_type, seen)
        return typ, lambda m: conv(m, "")
    if f.type == _PROTO_ENUM:
        names = {v.number: v.name for v in f.enum_type.values}
        return pa.string(), lambda n: names.get(n, str(n))
    return getattr(pa, _PROTO_SCALARS[f.type])(), lambda v: v


def _proto_field(f: Any, seen: tuple[str, ...]) -> tuple[pa.DataType, Callable[[Any], Any]]:
    """The Arrow type of field ``f`` and the getter of its converted value from a parsed message."""
    import pyarrow as pa

    name = f.name
    if f.type == _PROTO_MESSAGE and f.message_type.GetOptions().map_entry:
        ktyp, kconv = _proto_value(f.message_type.fields_by_name["key"], seen)
        vtyp, vconv = _proto_value(f.message_type.fields_by_name["value"], seen)
        return pa.map_(ktyp, vtyp), lambda m: [(kconv(k), vconv(v)) for k, v in sorted(getattr(m, name).items())]
    typ, conv = _proto_value(f, seen)
    if f.is_repeated:
        return pa.list_(typ), lambda m: [conv(v) for v in getattr(m, name)]
    if f.has_presence:
        return typ, lambda m: conv(getattr(m, name)) if m.HasField(name) else None
    return typ, lambda m: conv(getattr(m, name))


def _best_error(validator: Any, v: Any) -> Any:
    """The jsonschema library's most relevant error of ``v`` (None: valid)."""
    from jsonschema.exceptions import best_match

    return best_match(validator.iter_errors(v))


# --------------------------------------------------------------------------------------- decoder
class Decoder:
    """Decodes the keys or the values of one topic in one format (:data:`FORMATS`).

    ``subject`` (``<topic>-value``) names the subject whose latest version is the Avro reader
    schema; ``registry`` gives the schemas of the wire format's ids."""

    def __init__(self, fmt: str, registry: Registry | None = None, *, subject: str | None = None, typed: bool = False,
                 validate: bool = False) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"format {fmt!r} is none of {', '.join(FORMATS)}")
        self.format = fmt
        self.registry = registry
        self.subject = subject
        #: JSON Schema and Protobuf values as the subject's typed column takes them (:meth:`arrow_type`), not as JSON
        self.typed = typed
        #: JSON Schema values in the wire format validated against their schema (the jsonschema library)
        self.validate = validate
        self._validators: dict[int, Any] = {}
        self._plan: tuple[Any, Plan] | None | bool = False  # the typed column's (reader message or None, plan), once found
        self._avro: dict[int, tuple[Any, Any]] = {}  # id -> (writer schema, reader schema or None), parsed
        self._reader: Schema | None | bool = False  # the subject's latest schema, once looked up
        self._reader_avro: Any = False  # ... parsed, when it is Avro
        self._handlers: dict[int, Callable[[int, memoryview], Any]] = {}  # schema id -> its values' decoder
        self._named: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # id -> named types of its (writer, reader) schemas
        self._columns: dict[pa.DataType, Any] = {}  # Arrow type -> its compiled decoding (kafkalog.fast.avro.AvroColumns)

    def _need_registry(self) -> Registry:
        if self.registry is None:
            raise UndecodableValueError(f"format {self.format} needs schemas: none was given (a backup's _schemas topic, schema files or a registry URL)")
        return self.registry

    def reader_schema(self) -> Schema | None:
        """The latest live version of the subject, the reader schema of every Avro value (None: none registered)."""
        if self._reader is False:
            self._reader = self._need_registry().by_version(self.subject) if self.subject else None
        return self._reader  # type: ignore[return-value]

    def _avro_schemas(self, schema_id: int) -> tuple[Any, Any]:
        got = self._avro.get(schema_id)
        if got is None:
            reg = self._need_registry()
            writer = reg.by_id(schema_id)
            reader = self.reader_schema()
            named_w: dict[str, Any] = {}
            parsed_w = _parse_avro(reg, writer, named_w, set())
            parsed_r = None
            named: dict[str, Any] = {}
            if reader is not None and reader.type == "AVRO" and reader.id != schema_id:
                parsed_r = _parse_avro(reg, reader, named, set())
                _convert_defaults(parsed_r, dict(named))
            got = self._avro[schema_id] = (parsed_w, parsed_r)
            self._named[schema_id] = (named_w, named)
        return got

    def decode_column(self, column: pa.Array, typ: pa.DataType) -> pa.Array | None:
        """The typed column (:meth:`arrow_type` ``typ``) of a binary column of Avro values in the wire
        format, decoded by the compiled kernel (:mod:`kafkalog.fast.avro`) into Arrow buffers; None
        when the kernel is not there or not for these schemas or bytes: :meth:`decode_many` and
        :meth:`to_arrow` then give the column (or the error), and are what it equals."""
        from kafkalog.fast import avro

        if not avro.AVAILABLE or self.format not in ("avro", "auto") or not self.typed or _unions(self._parsed_reader()):
            return None
        cols = self._columns.get(typ, False)
        if cols is False:
            try:
                cols = avro.AvroColumns(typ)
            except avro.Unsupported:
                cols = None
            self._columns[typ] = cols
        if cols is None:
            return None
        for sid in avro.schema_ids(column):
            if sid in cols.ops:
                continue
            try:
                self._handler_of(sid)
            except SchemaError:
                return None  # the plain path raises it, located at its record
            if sid not in self._avro or not cols.add(sid, *self._avro[sid], *self._named[sid]):
                return None
        return cols.decode(column)

    def decode(self, data: bytes | None) -> Any:
        """The value of ``data`` (None stays None); :class:`~kafkalog.errors.SchemaError` when it does not decode."""
        if data is None:
            return None
        fmt = self.format
        if fmt == "bytes":
            return data
        if fmt == "string":
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise UndecodableValueError(f"not UTF-8 text: {e.reason} at byte {e.start}") from None
        if fmt in _NUMBERS:
            st = _NUMBERS[fmt]
            if len(data) != st.size:
                raise UndecodableValueError(f"a {fmt} is {st.size} bytes, the value is {len(data)}")
            return st.unpack(data)[0]
        if fmt == "json" and data[:1] != b"\0":
            return self._typed_json(None, data)
        schema_id, payload = split_wire(data)
        return self._handler_of(schema_id)(schema_id, payload)

    def decode_many(self, values: list[bytes | None]) -> list[Any]:
        """:meth:`decode` of each value; the Avro wire format's loop is written out, the schemas looked up
        once per id prefix (a scan spends its time here). Raises on the first value that does not decode."""
        if self.format not in ("avro", "auto"):
            return [self.decode(v) for v in values]
        import fastavro

        read = fastavro.schemaless_reader
        bytes_io = io.BytesIO
        avro: dict[bytes, tuple[Any, Any]] = {}
        out: list[Any] = []
        append = out.append
        for v in values:
            if v is None:
                append(None)
                continue
            prefix = v[:5]
            schemas = avro.get(prefix)
            if schemas is None:
                sid, _ = split_wire(v)
                self._handler_of(sid)
                if sid not in self._avro:
                    append(self.decode(v))  # not Avro (JSON Schema under auto): the general path
                    continue
                schemas = avro[prefix] = self._avro[sid]
            fo = bytes_io(v)
            fo.seek(5)
            try:
                x = read(fo, schemas[0], schemas[1])
                ok = fo.tell() == len(v)
            except Exception:  # noqa: BLE001 - the general path below names the error
                ok = False
            append(x if ok else self.decode(v))
        return out

    def _handler_of(self, schema_id: int) -> Callable[[int, memoryview], Any]:
        handler = self._handlers.get(schema_id)
        if handler is None:
            handler = self._handlers[schema_id] = self._handler(schema_id)
        return handler

    def _handler(self, schema_id: int) -> Callable[[int, memoryview], Any]:
        """How the values of one schema id decode, found once per id."""
        try:
            kind = self._need_registry().by_id(schema_id).type
            if self.format != "auto" and kind != _WIRE_TYPES[self.format]:
                raise UndecodableValueError(f"the schema is {kind}, not {_WIRE_TYPES[self.format]} (-s {self.format}); "
                                            "auto decodes by the schema's type")
            if kind == "AVRO":
                import fastavro

                writer, reader = self._avro_schemas(schema_id)
                read = fastavro.schemaless_reader
                return lambda sid, payload: self._avro_value(read, writer, reader, sid, payload)
            if kind == "JSON":
                return self._typed_json
            plan = self.typed_plan()
            return _proto_reader(_compile_proto(self.registry, self._need_registry().by_id(schema_id)), schema_id,
                                 plan if plan is not None and plan[0] is not None else None)
        except SchemaError as e:
            if e.schema_id is None:
                e.schema_id = schema_id
                e.args = (e._render(),)
            raise

    @staticmethod
    def _avro_value(read: Callable[..., Any], writer: Any, reader: Any, schema_id: int, payload: memoryview) -> Any:
        fo = io.BytesIO(payload)
        try:
            v = read(fo, writer, reader)
        except Exception as e:  # noqa: BLE001 - fastavro raises many types (EOFError, ValueError, IndexError, SchemaResolutionError...) for bad bytes
            raise UndecodableValueError(f"the Avro value does not decode: {type(e).__name__}: {e}", schema_id=schema_id) from None
        if fo.tell() != len(payload):
            raise UndecodableValueError(f"the Avro value ends at byte {fo.tell()} of {len(payload)}: bytes left over", schema_id=schema_id)
        return v

    @staticmethod
    def _json(schema_id: int | None, payload: bytes | memoryview) -> Any:
        try:
            return json.loads(bytes(payload))
        except ValueError as e:
            raise UndecodableValueError(f"not JSON text: {e}", schema_id=schema_id) from None

    def _typed_json(self, schema_id: int | None, payload: bytes | memoryview) -> Any:
        v = self._json(schema_id, payload)
        if self.validate and schema_id is not None:
            self._validate(schema_id, v)
        plan = self.typed_plan()
        if plan is None or plan[0] is not None:
            return v
        try:
            return plan[1][1](v, "$")
        except UndecodableValueError as e:
            e.schema_id = schema_id
            e.args = (e._render(),)
            raise

    def _validate(self, schema_id: int, v: Any) -> None:
        """Raise :class:`~kafkalog.errors.UndecodableValueError` when ``v`` is not valid by its JSON Schema
        (the draft its ``$schema`` names, else draft 7; its references registered by their names)."""
        validator = self._validators.get(schema_id)
        if validator is None:
            try:
                import jsonschema
                from referencing import Registry as Resources
                from referencing import Resource
                from referencing.jsonschema import DRAFT7
            except ImportError:
                raise UndecodableValueError("validating JSON values needs the jsonschema library (pip install 'kafkalog[jsonschema]')",
                                            schema_id=schema_id) from None
            reg = self._need_registry()
            schema = reg.by_id(schema_id)
            found: dict[str, Any] = {}

            def add(s: Schema) -> None:
                for ref in s.references:
                    dep = reg.by_version(ref.subject, ref.version)
                    if dep is not None and ref.name not in found:
                        found[ref.name] = Resource.from_contents(json.loads(dep.text), default_specification=DRAFT7)
                        add(dep)

            add(schema)
            root = json.loads(schema.text)
            cls = jsonschema.validators.validator_for(root, default=jsonschema.Draft7Validator)
            validator = self._validators[schema_id] = cls(root, registry=Resources().with_resources(found.items()))
        err = _best_error(validator, v)
        if err is not None:
            raise UndecodableValueError(f"the JSON value is not valid by its schema at {err.json_path}: {err.message}", schema_id=schema_id)

    def typed_plan(self) -> tuple[Any, Plan] | None:
        """The typed column of JSON Schema or Protobuf values (with :attr:`typed`): the subject's latest
        schema's type and conversion (for Protobuf, with its first message, which the column holds);
        None when the values are JSON text (not typed, no such subject, or a format of another type)."""
        if self._plan is False:
            self._plan = None
            reader = self.reader_schema() if self.typed and self.registry is not None and self.subject else None
            if reader is not None and reader.type == "JSON" and self.format in ("json", "auto"):
                self._plan = (None, _JsonSchemaTypes(self.registry, reader).plan())
            elif reader is not None and reader.type == "PROTOBUF" and self.format in ("protobuf", "auto"):
                messages = _compile_proto(self.registry, reader)
                if not messages:
                    raise UndecodableValueError("the Protobuf schema declares no message", schema_id=reader.id)
                self._plan = (messages[0], _proto_plan(messages[0]))
        return self._plan  # type: ignore[return-value]

    # ------------------------------------------------------------------- as Arrow
    def arrow_type(self) -> pa.DataType:
        """The Arrow type of the decoded column: from the subject's latest schema for ``avro``,
        ``json`` and ``protobuf`` (and ``auto``, by that schema's type: :func:`avro_arrow_type`,
        :class:`_JsonSchemaTypes`, :func:`_proto_plan`), the number or string types of the plain
        formats. ``json`` and ``protobuf`` values without such a subject are a string of JSON text."""
        import pyarrow as pa

        fmt = self.format
        plain = {"bytes": pa.binary(), "string": pa.string(), "short": pa.int16(), "int": pa.int32(), "long": pa.int64(),
                 "float": pa.float32(), "double": pa.float64()}
        if fmt in plain:
            return plain[fmt]
        plan = self.typed_plan() if fmt != "avro" else None
        if plan is not None:
            return plan[1][0]
        if fmt in ("json", "protobuf"):
            return pa.string()
        reader = self.reader_schema()
        if reader is None:
            raise UndecodableValueError(f"typed columns need the subject {self.subject}: it is in no schema source "
                                        "(cat decodes each value with its own schema)")
        if reader.type != "AVRO":
            return pa.string()
        return avro_arrow_type(self._parsed_reader())

    def _parsed_reader(self) -> Any:
        if self._reader_avro is False:
            reader = self.reader_schema()
            self._reader_avro = _parse_avro(self.registry, reader, {}, set()) if reader is not None and reader.type == "AVRO" else None
        return self._reader_avro

    def to_arrow(self, values: list[Any], typ: pa.DataType) -> pa.Array:
        """Decoded values (:meth:`decode`) as an Arrow array of :meth:`arrow_type`."""
        import pyarrow as pa

        if self.format in ("json", "protobuf") or (self.format == "auto" and self._parsed_reader() is None):
            if self.typed_plan() is not None:
                return pa.array(values, type=typ)
            return pa.array([None if v is None else json_text(v) for v in values], type=typ)
        if self.format in ("avro", "auto"):
            conv = _to_arrow_rows(self._parsed_reader())
            if conv is not None:
                values = [conv(v) for v in values]
        return pa.array(values, type=typ)


def decode_all(
    decoder: Decoder,
    values: list[bytes | None],
    *,
    topic: str,
    partition: int,
    offsets: Callable[[int], int],
    on_undecodable: str = "error",
    warn: Callable[[str], None] | None = None,
) -> tuple[list[Any], list[int]]:
    """``values`` decoded, and the positions of those that did not decode (:data:`ON_UNDECODABLE`;
    ``offsets(i)`` is the offset of ``values[i]``, asked only for those):
    with ``error`` the first raises, located at its record; otherwise each is passed to ``warn``
    and stands as its raw bytes (``raw``) or None (``null``, ``skip``: the caller leaves the
    record out)."""
    try:
        return decoder.decode_many(values), []
    except SchemaError:
        pass  # value by value, to locate it and apply on_undecodable
    decode = decoder.decode
    out: list[Any] = []
    bad: list[int] = []
    for i, v in enumerate(values):
        try:
            out.append(decode(v))
        except SchemaError as e:
            e.at(topic, partition, offsets(i))
            if on_undecodable == "error":
                raise
            if warn is not None:
                warn(f"{e} (on undecodable: {on_undecodable})")
            out.append(v if on_undecodable == "raw" else None)
            bad.append(i)
    return out, bad


class Decoding:
    """Typed key and value columns for a read of Arrow batches (:func:`kafkalog.scan`, ``export``):
    ``formats`` maps ``key``/``value`` to a format, one :class:`Decoder` per topic and role.

    ``validate``: JSON Schema values are validated against their schema (:attr:`Decoder.validate`).
    A column's Arrow type is :meth:`Decoder.arrow_type` of its topic; a read over topics whose
    types differ fails (read them one topic at a time). ``on_undecodable`` (:data:`ON_UNDECODABLE`;
    a typed column cannot hold ``raw`` bytes) warns through ``warn``."""

    def __init__(self, formats: dict[str, str], registry: Registry | None, *, on_undecodable: str = "error",
                 warn: Callable[[str], None] | None = None, validate: bool = False) -> None:
        if on_undecodable not in ON_UNDECODABLE:
            raise ValueError(f"on_undecodable={on_undecodable!r} is none of {', '.join(ON_UNDECODABLE)}")
        for role, fmt in formats.items():
            if role not in ("key", "value") or fmt not in FORMATS:
                raise ValueError(f"{role}_format={fmt!r}: formats are {', '.join(FORMATS)} for key and value")
        self.formats = dict(formats)
        self.registry = registry
        self.on_undecodable = on_undecodable
        self.warn = warn
        self.validate = validate
        self._decoders: dict[tuple[str, bool], dict[str, Decoder]] = {}

    def decoders(self, topic: str, *, typed: bool = False) -> dict[str, Decoder]:
        """The decoders of one topic's keys and values (the reader schema: the ``<topic>-key``/``<topic>-value``
        subject's); ``typed``: for typed columns (:attr:`Decoder.typed`), else values as ``cat`` prints them."""
        got = self._decoders.get((topic, typed))
        if got is None:
            got = self._decoders[(topic, typed)] = {r: Decoder(f, self.registry, subject=f"{topic}-{r}", typed=typed, validate=self.validate)
                                                    for r, f in self.formats.items()}
        return got

    def columns(self, names: list[str]) -> list[str]:
        """The columns to read for ``names``: the decoded ones need their offsets, to name a record that does not decode."""
        return names if "offset" in names or not any(r in names for r in self.formats) else [*names, "offset"]

    def schema(self, schema: pa.Schema, topics: list[str]) -> pa.Schema:
        """``schema`` with the key and value columns typed for ``topics``."""
        import pyarrow as pa

        fields = []
        for f in schema:
            if f.name in self.formats:
                types = {t: self.decoders(t, typed=True)[f.name].arrow_type() for t in sorted(set(topics))}
                if len(set(types.values())) > 1:
                    raise ValueError(f"the {f.name}s of these topics have different types: "
                                     + "; ".join(f"{t}: {ty}" for t, ty in types.items()) + " (read one topic at a time)")
                f = pa.field(f.name, next(iter(types.values())) if types else pa.null())
            fields.append(f)
        return pa.schema(fields)

    def batches(self, batches: Iterable[pa.RecordBatch], topic: str, partition: int, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """One partition's batches (read with :meth:`columns`) with decoded columns, as ``schema`` (:meth:`schema`)."""
        import pyarrow as pa

        if self.on_undecodable == "raw":
            raise ValueError("on_undecodable='raw' keeps bytes, which a typed column cannot hold: give error, null or skip")
        decoders = self.decoders(topic, typed=True)
        roles = [r for r in self.formats if r in schema.names]
        for b in batches:
            cols = {n: b.column(n) for n in b.schema.names}
            drop: set[int] = set()
            for role in roles:
                d = decoders[role]
                typ = schema.field(role).type
                fast = d.decode_column(cols[role], typ)
                if fast is not None:
                    cols[role] = fast
                    continue
                values, bad = decode_all(d, cols[role].to_pylist(), topic=topic, partition=partition,
                                         offsets=lambda i, o=cols["offset"]: o[i].as_py(), on_undecodable=self.on_undecodable, warn=self.warn)
                cols[role] = d.to_arrow(values, typ)
                if self.on_undecodable == "skip":
                    drop.update(bad)
            out = pa.RecordBatch.from_arrays([cols[n] for n in schema.names], schema=schema)
            if drop:
                out = out.filter(pa.array([i not in drop for i in range(out.num_rows)]))
            yield out


def guess_format(values: Iterable[bytes | None], registry: Registry | None) -> str:
    """What a sample of a topic's keys or values holds, for ``kafkalog info --formats``: the
    registry's schema type (``avro``, ``json``, ``protobuf``) when every non-null one is in the wire
    format with an id the registry knows, else ``string`` when all are UTF-8, else ``bytes``;
    ``-`` when all are null. A description of the sample, not a decoding: readers are told the format."""
    sample = [v for v in values if v is not None]
    if not sample:
        return "-"
    if registry is not None and all(len(v) >= 5 and v[0] == 0 for v in sample):
        kinds = set()
        for sid in {int.from_bytes(v[1:5], "big") for v in sample}:
            try:
                kinds.add(registry.by_id(sid).type.lower())
            except SchemaError:
                kinds.add("unknown id")
        return "/".join(sorted(kinds))
    try:
        for v in sample:
            v.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes"
    return "string"
