"""Avro values decoded straight into Arrow columns by a compiled kernel, with no Python object per value.

A typed Avro column (``kafkalog.scan(value_format="avro")``, ``export``, Spark's ``valueFormat``)
is, by definition, what fastavro's ``schemaless_reader`` reads from each value (the writer schema
of its id, the subject's latest schema as reader schema) given to ``pyarrow.array`` with the
column's type; that plain path is :meth:`kafkalog.dataset.values.Decoder.decode_many` and
:meth:`~kafkalog.dataset.values.Decoder.to_arrow`. :class:`AvroColumns` gets the same column
faster: :func:`compile_op` turns a (writer, reader) pair of parsed schemas into the kernel's ops
(:mod:`kafkalog.fast._avro`, Cython), which read a whole binary column into Arrow buffers.

It is used only where it gives the plain path's answer, and says so by returning None otherwise
(the caller then takes the plain path, which gives the value or the error):

- **schemas it does not compile** (:class:`Unsupported`): a reader union of two or more non-null
  types (a JSON text column), the logical types ``time-millis``, ``time-micros``,
  ``timestamp-nanos``, ``duration`` and unknown ones, decimals above 38 digits or over 16 bytes,
  a writer and reader logical type that differ, records, enums or fixed whose names differ, reader
  fields with aliases, a reader field the writer lacks without a default (or whose default does
  not survive fastavro's own write and read), recursive types;
- **values it does not take**: see :mod:`kafkalog.fast._avro` (truncated, bad varints and indexes,
  bytes left over, text not strict UTF-8, out-of-range ints, dates and timestamps, repeated map
  keys, an unknown id): the whole column goes to the plain path, so errors (class, message,
  topic, partition, offset, schema id) and ``on_undecodable`` are the plain path's by construction.

Without the compiled module (not built, or ``KAFKALOG_NO_EXTENSIONS=1``) :data:`AVAILABLE` is
False and every column takes the plain path. Schema resolution (added fields with defaults,
removed fields, int/long/float promotions, string and bytes, enum symbols, a nullable reader
union) is compiled as fastavro resolves it.
"""

from __future__ import annotations

import io
import threading
from typing import TYPE_CHECKING, Any

from kafkalog.fast import compiled

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["AVAILABLE", "AvroColumns", "Unsupported", "compile_op"]

_avro: Any = compiled("_avro")
#: The compiled kernel is there (else every Avro column takes fastavro's path).
AVAILABLE = _avro is not None

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_INTS = ("int", "long")
#: writer type -> reader types it is promoted to (Avro's schema resolution, as fastavro applies it)
_PROMOTIONS = {"int": {"int", "long", "float", "double"}, "long": {"long", "float", "double"}, "float": {"float", "double"},
               "double": {"double"}, "string": {"string", "bytes"}, "bytes": {"bytes", "string"}}
_LOGICAL_MODES = {(None, "int"): 0, (None, "long"): 1, (None, "float"): 2, (None, "double"): 3, ("date", "int"): 4,
                  ("timestamp-millis", "long"): 5, ("local-timestamp-millis", "long"): 5,
                  ("timestamp-micros", "long"): 6, ("local-timestamp-micros", "long"): 6}
_MAX_DEPTH = 64


class Unsupported(Exception):
    """A schema the kernel does not compile (see the module's docstring): fastavro's path reads it."""


def _builder(typ: pa.DataType) -> Any:
    """The kernel's builder of an Arrow type."""
    import pyarrow as pa

    t = pa.types
    if t.is_boolean(typ):
        return _avro.FixedB(typ, 1, True)
    if t.is_int32(typ) or t.is_date32(typ) or t.is_float32(typ):
        return _avro.FixedB(typ, 4)
    if t.is_int64(typ) or t.is_timestamp(typ) or t.is_float64(typ):
        return _avro.FixedB(typ, 8)
    if t.is_decimal128(typ):
        return _avro.FixedB(typ, 16)
    if t.is_fixed_size_binary(typ):
        return _avro.FixedB(typ, typ.byte_width)
    if t.is_string(typ) or t.is_binary(typ):
        return _avro.VarB(typ)
    if t.is_struct(typ):
        return _avro.StructB(typ, [_builder(f.type) for f in typ])
    if t.is_map(typ):
        return _avro.ListB(typ, _builder(typ.item_type), _builder(typ.key_type))
    if t.is_list(typ):
        return _avro.ListB(typ, _builder(typ.value_type))
    if t.is_null(typ):
        return _avro.NullB(typ)
    raise Unsupported(f"Arrow type {typ}")


class _Compiler:
    """Ops of one (writer, reader) pair; ``named_w``/``named_r``: their named types by full name (fastavro's)."""

    def __init__(self, named_w: dict[str, Any], named_r: dict[str, Any]) -> None:
        self.named_w, self.named_r = named_w, named_r

    @staticmethod
    def _resolve(s: Any, named: dict[str, Any]) -> Any:
        if isinstance(s, str) and s not in _PRIMITIVES:
            if s not in named:
                raise Unsupported(f"named type {s} not found")
            return named[s]
        return s

    @staticmethod
    def _kind(s: Any) -> tuple[str, str | None]:
        """(Avro type name, logical type) of a resolved, non-union schema."""
        if isinstance(s, str):
            return s, None
        if isinstance(s, list):
            raise Unsupported("a union in a union")
        t = s["type"]
        if isinstance(t, (dict, list)):
            raise Unsupported("a nested type object")
        return t, s.get("logicalType")

    def op(self, w: Any, r: Any, b: Any, depth: int = 0) -> Any:
        """The op reading a value written as ``w`` into builder ``b`` as reader type ``r`` (``b`` None: skipped)."""
        if depth > _MAX_DEPTH:
            raise Unsupported("recursive types")
        w = self._resolve(w, self.named_w)
        if b is None:  # skipped: read as written
            return _avro.OUnion([self.op(x, x, None, depth + 1) for x in w]) if isinstance(w, list) else self._plain(w, w, None, depth)
        r = self._resolve(r, self.named_r)
        if isinstance(r, list):
            branches = [x for x in r if x != "null"]
            if len(branches) != 1:
                raise Unsupported("a union of two or more non-null types")
            if isinstance(w, list):
                return _avro.OUnion([(_avro.ONull(b) if "null" in r else _avro.OFail()) if x == "null" else self._branch(x, branches[0], b, depth)
                                     for x in w])
            if w == "null":
                return _avro.ONull(b)
            return self.op(w, branches[0], b, depth + 1)
        if isinstance(w, list):
            return _avro.OUnion([_avro.OFail() if x == "null" else self._branch(x, r, b, depth) for x in w])
        return self._plain(w, r, b, depth)

    def _branch(self, w: Any, r: Any, b: Any, depth: int) -> Any:
        """A writer union branch read as reader type ``r``: its op, or a failing op when fastavro's resolution rejects it."""
        wk, rk = self._kind(self._resolve(w, self.named_w)), self._kind(self._resolve(r, self.named_r))
        if rk[0] not in _PROMOTIONS.get(wk[0], {wk[0]}):
            return _avro.OFail()
        return self.op(w, r, b, depth + 1)

    def _plain(self, w: Any, r: Any, b: Any, depth: int) -> Any:
        wt, wl = self._kind(w)
        rt, rl = self._kind(r)
        if wl != rl:
            raise Unsupported(f"logical types {wl} and {rl}")
        if wl is not None and wl != "decimal" and (wl, wt) not in _LOGICAL_MODES:
            raise Unsupported(f"logical type {wl}")
        if rt not in _PROMOTIONS.get(wt, {wt}):
            raise Unsupported(f"{wt} read as {rt}")
        if wt == "null":
            return _avro.ONull(b)
        if wt == "boolean":
            return _avro.OBool(b)
        if wt in _INTS:
            return _avro.OInt(b, _LOGICAL_MODES[(rl, rt)])
        if wt == "float":
            return _avro.OFloat(b, 4, rt == "double")
        if wt == "double":
            return _avro.OFloat(b, 8, False)
        if wt in ("bytes", "string"):
            return _avro.OBytes(b, "string" in (wt, rt), self._decimal(w, r))
        if wt in ("record", "error", "enum", "fixed") and (w.get("name") != r.get("name")):
            raise Unsupported("named types whose names differ")
        if wt == "fixed":
            if w["size"] != r["size"]:
                raise Unsupported("fixed sizes differ")
            return _avro.OFixed(b, w["size"], self._decimal(w, r))
        if wt == "enum":
            default = r.get("default")
            symbols = [(s if s in r["symbols"] else default or None) for s in w["symbols"]]
            return _avro.OEnum(b, [None if s is None else s.encode() for s in symbols])
        if wt == "array":
            return _avro.OArray(b, self.op(w["items"], r["items"], None if b is None else b.items, depth + 1))
        if wt == "map":
            items = self.op(w["values"], r["values"], None if b is None else b.items, depth + 1)
            return _avro.OArray(b, items, _avro.OBytes(None if b is None else b.keys, True))
        if wt in ("record", "error"):
            return self._record(w, r, b, depth)
        raise Unsupported(f"type {wt}")

    @staticmethod
    def _decimal(w: Any, r: Any) -> int:
        """The precision of a decimal (0: not a decimal), which the kernel reads as decimal128."""
        if not isinstance(w, dict) or w.get("logicalType") != "decimal":
            return 0
        p, s = int(w["precision"]), int(w.get("scale", 0))
        if (p, s) != (int(r["precision"]), int(r.get("scale", 0))) or not 0 < p <= 38 or (w["type"] == "fixed" and w["size"] > 16):
            raise Unsupported("a decimal the kernel does not read")
        return p

    def _record(self, w: Any, r: Any, b: Any, depth: int) -> Any:
        children = {} if b is None else {f["name"]: c for f, c in zip(r["fields"], b.children_list(), strict=True)}
        readers = {f["name"]: f for f in r["fields"]}
        if any(f.get("aliases") for f in r["fields"]):
            raise Unsupported("reader fields with aliases")
        ops = []
        for f in w["fields"]:
            rf = readers.get(f["name"]) if b is not None else None
            ops.append(self.op(f["type"], f["type"] if rf is None else rf["type"], None if rf is None else children[f["name"]], depth + 1))
        if b is not None:
            written = {f["name"] for f in w["fields"]}
            for f in r["fields"]:
                if f["name"] not in written:
                    ops.append(self._default(f, children[f["name"]], depth))
        return _avro.ORecord(b, ops)

    def _default(self, f: dict[str, Any], b: Any, depth: int) -> Any:
        """A reader field the writer lacks: its default, encoded once by fastavro's writer (and checked to read back as itself)."""
        import fastavro

        if "default" not in f:
            raise Unsupported(f"field {f['name']} has no default")
        try:
            schema = fastavro.parse_schema(f["type"], named_schemas=dict(self.named_r))
            out = io.BytesIO()
            fastavro.schemaless_writer(out, schema, f["default"])
            data = out.getvalue()
            same = fastavro.schemaless_reader(io.BytesIO(data), schema, None) == f["default"]
        except Exception as e:  # noqa: BLE001 - any failure to encode the default: fastavro's path decides
            raise Unsupported(f"default of {f['name']}: {e}") from None
        if not same:
            raise Unsupported(f"default of {f['name']} does not read back as itself")
        w = f["type"]
        return _avro.OConst(data, _Compiler(self.named_r, self.named_r).op(w, w, b, depth + 1))


def compile_op(writer: Any, reader: Any, builder: Any, named_w: dict[str, Any], named_r: dict[str, Any]) -> Any:
    """The kernel's op for values written with ``writer`` read as ``reader`` (None: as written) into
    ``builder``; :class:`Unsupported` when the kernel does not compile them."""
    return _Compiler(named_w, named_r if reader is not None else named_w).op(writer, writer if reader is None else reader, builder)


class AvroColumns:
    """The compiled decoding of one typed Avro column (one Arrow type, one reader schema): a builder,
    and the op of each schema id added with :meth:`add`. Thread-safe (one decode at a time)."""

    def __init__(self, typ: pa.DataType) -> None:
        self.type = typ
        self.root = _builder(typ)
        self.ops: dict[int, Any] = {}
        self.refused: set[int] = set()
        self._lock = threading.Lock()

    def add(self, schema_id: int, writer: Any, reader: Any, named_w: dict[str, Any], named_r: dict[str, Any]) -> bool:
        """Compile the values of ``schema_id``; False when the kernel does not read them (:class:`Unsupported`)."""
        if schema_id in self.ops:
            return True
        if schema_id in self.refused:
            return False
        try:
            self.ops[schema_id] = compile_op(writer, reader, self.root, named_w, named_r)
        except Unsupported:
            self.refused.add(schema_id)
            return False
        return True

    def decode(self, column: pa.Array) -> pa.Array | None:
        """The typed column of a binary column of wire-format values, or None when a value is not
        one the kernel takes (fastavro's path then decodes the column)."""
        with self._lock:
            if _avro.decode(column, self.ops, self.root) >= 0:
                return None
            return self.root.finish()


def schema_ids(column: pa.Array) -> set[int]:
    """The schema ids in a binary column of wire-format values (those too short or without byte 0 left out)."""
    return _avro.schema_ids(column)
