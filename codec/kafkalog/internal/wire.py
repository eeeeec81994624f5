"""Read a declared message (``kafkalog.internal.schemas``) from bytes and write Kafka's JSON of it.

:func:`read_message` follows the reader Kafka generates from a message spec, rule for rule: the
same version check, null checks, length checks and tagged-field handling, and errors worded as
Kafka words them (they surface in kafka-dump-log's "Error at offset ..." lines). The result is a
dict with every field of the struct (absent ones at their default), by JSON name.

:func:`message_json` writes that dict as Kafka's generated ``*JsonConverter.write`` does: fields
in declaration order, only those present in the version, tagged ones only when they differ
from their default; bytes as base64, UUIDs in Kafka's URL-safe base64 form.

:func:`kafka_json` prints such an object exactly as Jackson does (Kafka's JSON text).
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from typing import Any

from kafkalog.format.primitives import JAVA_UTF8
from kafkalog.internal.schemas import NULL, F, Message

__all__ = ["MessageReadError", "Reader", "counting_unknown_tags", "kafka_json", "message_json", "read_message"]

#: while :func:`counting_unknown_tags` runs: its one-element counter of tagged fields read as unknown
_UNKNOWN_TAGS: ContextVar[list[int] | None] = ContextVar("kafkalog_unknown_tags", default=None)


@contextmanager
def counting_unknown_tags() -> Iterator[list[int]]:
    """Count, in the yielded ``[n]``, the tagged fields the readers skip as unknown to the release they
    read as (Kafka keeps and never prints them): ``--kafka-version auto`` takes a release that knows every
    tag present (:mod:`kafkalog.internal.detect`)."""
    counter = [0]
    token = _UNKNOWN_TAGS.set(counter)
    try:
        yield counter
    finally:
        _UNKNOWN_TAGS.reset(token)


class MessageReadError(Exception):
    """A message could not be read; ``detail`` is Kafka's exception message (``None`` when Kafka's
    would be null, as for a buffer underflow)."""

    def __init__(self, detail: str | None) -> None:
        super().__init__(detail if detail is not None else "buffer underflow")
        self.detail = detail

    @property
    def kafka_message(self) -> str:
        """The message as Java prints it (``null`` for none)."""
        return "null" if self.detail is None else self.detail


_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


class Reader:
    """A position in a byte buffer, with Kafka's readers (``ByteBufferAccessor``)."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _fixed(self, s: struct.Struct) -> Any:
        p = self.pos
        if p + s.size > self.end:
            raise MessageReadError(None)
        self.pos = p + s.size
        return s.unpack_from(self.data, p)[0]

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def uint16(self) -> int:
        return self._fixed(_U16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def uint32(self) -> int:
        return self._fixed(_U32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def float64(self) -> float:
        return self._fixed(_F64)

    def bool(self) -> bool:
        return self._fixed(_I8) != 0

    def uuid(self) -> bytes:
        return self.raw(16)

    def raw(self, n: int) -> bytes:
        p = self.pos
        if p + n > self.end:
            raise MessageReadError(None)
        self.pos = p + n
        return bytes(self.data[p : p + n])

    def uvarint(self) -> int:
        """Kafka's unsigned varint (at most 5 bytes, 32 bits)."""
        value = 0
        shift = 0
        data, p, end = self.data, self.pos, self.end
        while True:
            if p >= end:
                self.pos = p
                raise MessageReadError(None)
            b = data[p]
            p += 1
            if shift == 28 and b & 0x80:
                self.pos = p
                raise MessageReadError("Varint is too long, the most significant bit in the 5th byte is set, "
                                       f"converted value: {(value | (b & 0x7F) << shift) & 0xFFFFFFFF:x}")
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
        self.pos = p
        if value >= 1 << 31:
            value -= 1 << 32  # Java int
        return value

    def string(self, n: int) -> str:
        if n > self.remaining:
            raise MessageReadError(f"Error reading string of length {n}, only {self.remaining} bytes available")
        return self.raw(n).decode("utf-8", JAVA_UTF8)  # readString: new String(bytes, UTF_8)

    def byte_array(self, n: int) -> bytes:
        if n < 0:
            raise MessageReadError(str(n))  # Java: NegativeArraySizeException
        if n > self.remaining:
            raise MessageReadError(f"Error reading byte array of {n} byte(s): only {self.remaining} byte(s) available")
        return self.raw(n)


Read = Callable[[Reader], Any]

_PRIM_READ: dict[str, Read] = {
    "bool": Reader.bool,
    "int8": Reader.int8,
    "int16": Reader.int16,
    "uint16": Reader.uint16,
    "int32": Reader.int32,
    "uint32": Reader.uint32,
    "int64": Reader.int64,
    "float64": Reader.float64,
    "uuid": Reader.uuid,
}


def _flexible_for(message: Message, f: F, version: int) -> bool:
    return version in (f.flexible if f.flexible is not None else message.flexible)


def _var_reader(kind: str, name: str, compact: bool, nullable: bool, elem: Read | None = None) -> Read:
    """string / bytes / array reader (``elem`` reads one array element)."""

    def read(r: Reader) -> Any:
        if compact:
            n = r.uvarint() - 1
        elif kind == "string":
            n = r.int16()
        else:
            n = r.int32()
        if n < 0:
            if not nullable:
                raise MessageReadError(f"non-nullable field {name} was serialized as null")
            return None
        if kind == "string":
            if n > 0x7FFF:
                raise MessageReadError(f"string field {name} had invalid length {n}")
            return r.string(n)
        if kind == "bytes":
            return r.byte_array(n)
        if n > r.remaining:
            raise MessageReadError(
                f"Tried to allocate a collection of size {n}, but there are only {r.remaining} bytes remaining."
            )
        assert elem is not None
        return [elem(r) for _ in range(n)]

    return read


def _value_reader(message: Message, f: F, version: int, tagged: bool) -> Read:
    compact = tagged or _flexible_for(message, f, version)
    nullable = version in f.nullable
    if f.is_array:
        if f.elem in _PRIM_READ:
            elem = _PRIM_READ[f.elem]
        elif f.elem in ("string", "bytes"):
            elem = _var_reader(f.elem, f.json_name + " element", compact, False)
        else:
            assert f.struct is not None
            elem = _struct_reader(message, f.struct, version)
        return _var_reader("array", f.json_name, compact, nullable, elem)
    if f.type in _PRIM_READ:
        return _PRIM_READ[f.type]
    if f.type in ("string", "bytes"):
        return _var_reader(f.type, f.json_name, compact, nullable)
    assert f.struct is not None
    body = _struct_reader(message, f.struct, version)
    if not nullable:
        return body
    if tagged:
        return lambda r: None if r.uvarint() <= 0 else body(r)
    return lambda r: None if r.int8() < 0 else body(r)


def _struct_reader(message: Message, fields: list[F], version: int) -> Read:
    steps: list[tuple[str, Read | None, Callable[[], Any]]] = []
    tags: dict[int, tuple[str, Read | None]] = {}
    for f in fields:
        if version in f.versions and version not in f.tagged:
            steps.append((f.json_name, _value_reader(message, f, version, False), f.default_value))
        else:
            steps.append((f.json_name, None, f.default_value))
        if f.tag is not None and f.tagged.lo <= f.versions.hi and f.versions.lo <= f.tagged.hi:
            ok = version in f.versions and version in f.tagged
            tags[f.tag] = (f.json_name, _value_reader(message, f, version, True) if ok else None)
    flexible = message.is_flexible(version)

    def read(r: Reader) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, rd, dflt in steps:
            out[name] = rd(r) if rd is not None else dflt()
        if flexible:
            for _ in range(r.uvarint()):
                tag = r.uvarint()
                size = r.uvarint()
                known = tags.get(tag)
                if known is None:
                    r.byte_array(size)  # an unknown tagged field: kept by Kafka, never printed
                    counter = _UNKNOWN_TAGS.get()
                    if counter is not None:
                        counter[0] += 1
                elif known[1] is None:
                    raise MessageReadError(f"Tag {tag} is not valid for version {version}")
                else:
                    out[known[0]] = known[1](r)
        return out

    return read


_READERS: dict[tuple[int, int], Read] = {}


def read_message(message: Message, version: int, r: Reader) -> dict[str, Any]:
    """Read ``message`` at ``version`` from ``r`` (advancing it); raises :class:`MessageReadError`."""
    if version not in message.valid:
        raise MessageReadError(f"Can't read version {version} of {message.name}")
    key = (id(message), version)
    rd = _READERS.get(key)
    if rd is None:
        rd = _READERS[key] = _struct_reader(message, message.fields, version)
    return rd(r)


# ------------------------------------------------------------------------------------- JSON
def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _uuid(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def _json_value(message: Message, f: F, version: int, elem: bool, v: Any) -> Any:
    if v is None:
        return None
    t = f.elem if elem else f.type
    if not elem and f.is_array:
        return [_json_value(message, f, version, True, e) for e in v]
    if t == "bytes":
        return _b64(v)
    if t == "uuid":
        return _uuid(v)
    if f.struct is not None and t == f.elem:
        return _struct_json(message, f.struct, version, v)
    return v


def _non_default(f: F, v: Any) -> bool:
    """Kafka's "differs from its default" test for a tagged field."""
    null_default = f.default is NULL
    ever_nullable = not f.nullable.empty
    if f.is_array or f.type == "bytes":
        if null_default:
            return v is not None
        if not ever_nullable:
            return len(v) != 0
        return v is None or len(v) != 0
    if f.type in ("string", "uuid") or f.struct is not None:
        if null_default:
            return v is not None
        if not ever_nullable:
            return v != f.default_value()
        return v is None or v != f.default_value()
    return v != f.default_value()


def _struct_json(message: Message, fields: list[F], version: int, value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields:
        if version not in f.versions:
            continue
        v = value[f.json_name]
        if version in f.tagged and not _non_default(f, v):
            continue
        out[f.json_name] = _json_value(message, f, version, False, v)
    return out


def message_json(message: Message, version: int, value: dict[str, Any]) -> dict[str, Any]:
    """Kafka's JSON of a message read at ``version`` (as its generated JsonConverter writes it)."""
    if version not in message.valid:
        raise MessageReadError(f"Can't write version {version} of {message.name}")
    return _struct_json(message, message.fields, version, value)


# ------------------------------------------------------------------------------- JSON text
_ESC = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _json_string(s: str) -> str:
    if s.isprintable() and '"' not in s and "\\" not in s:
        return '"' + s + '"'
    out = ['"']
    for c in s:
        e = _ESC.get(c)
        if e is not None:
            out.append(e)
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04X}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def java_double(v: float) -> str:
    """Java's ``Double.toString`` (what Jackson prints for a float64)."""
    if math.isnan(v):
        return '"NaN"'
    if math.isinf(v):
        return '"Infinity"' if v > 0 else '"-Infinity"'
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    sign = "-" if v < 0 else ""
    a = abs(v)
    digits_t = Decimal(repr(a)).as_tuple()
    digits = "".join(map(str, digits_t.digits)).rstrip("0") or "0"
    exp10 = len(digits_t.digits) + int(digits_t.exponent) - 1  # position of the first digit
    if 1e-3 <= a < 1e7:
        if exp10 >= 0:
            whole = digits[: exp10 + 1].ljust(exp10 + 1, "0")
            frac = digits[exp10 + 1 :] or "0"
        else:
            whole = "0"
            frac = "0" * (-exp10 - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exp10}"


def kafka_json(obj: Any) -> str:
    """``obj`` as Kafka prints JSON (Jackson's compact form): no spaces, non-ASCII as is,
    control characters as upper-case ``\\uXXXX``, floats as Java prints doubles."""
    if obj is None:
        return "null"
    if obj is True:
        return "true"
    if obj is False:
        return "false"
    if isinstance(obj, str):
        return _json_string(obj)
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, float):
        return java_double(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(_json_string(k) + ":" + kafka_json(v) for k, v in obj.items()) + "}"
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(kafka_json(v) for v in obj) + "]"
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")
