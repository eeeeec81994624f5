"""The model of the keys and values Kafka writes to its internal topics: messages, fields, versions.

Kafka describes these records with "message specs" (JSON files in its source tree, turned into
Java classes at build time and bundled in its jars). A :class:`Message` holds one spec in a compact
form of our own: valid versions, flexible versions and a list of :class:`F` fields, each with its
Kafka name, type, versions, nullable versions, tag/tagged versions and default. One message covers
every version Kafka has written; the reader in :mod:`kafkalog.internal.wire` interprets it, and
:func:`construct_for` turns one (message, version) into a ``construct`` layout (for SPEC.md,
``explain`` and the tests, which check both agree).

The messages themselves are data: each release's are read from the file its own jars wrote
(:mod:`kafkalog.internal.messages`). A record type or version a release's file does not have is
reported as unknown, never guessed.

Wire rules (Kafka's protocol types): int8/16/32/64 big-endian two's complement; uint16/uint32
big-endian unsigned; float64 IEEE-754 big-endian; bool one byte (non-zero is true); uuid 16
bytes; in a *non-flexible* version a string is an int16 length (-1 null) then UTF-8, bytes and
arrays an int32 length (-1 null); in a *flexible* version all three use an unsigned varint of
length+1 (0 null), and every struct ends with tagged fields: an unsigned varint count, then per
field an unsigned varint tag, an unsigned varint size and the value. A nullable struct that is
not tagged starts with an int8 (-1 null, 1 present); a tagged one with an unsigned varint (0 null).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from construct import (
    Bytes,
    Construct,
    ConstructError,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int32ub,
    Int64sb,
    Struct,
    VarInt,
    stream_read,
    stream_write,
)
from construct import (
    Container as _Container,
)

from kafkalog.format.primitives import JAVA_UTF8

__all__ = [
    "F",
    "KafkaArray",
    "KafkaNullableStruct",
    "KafkaTaggedFields",
    "KafkaValueError",
    "KafkaVarData",
    "Message",
    "NULL",
    "Versions",
    "construct_for",
    "uuid_text",
]

MAX_VERSION = 0x7FFF


class _Null:
    """The default "null" (distinct from "no default given")."""

    def __repr__(self) -> str:
        return "NULL"


#: A field whose default is null.
NULL: Any = _Null()


class Versions:
    """An inclusive version range: ``"3"``, ``"0-2"``, ``"1+"`` or ``"none"``."""

    __slots__ = ("lo", "hi")

    def __init__(self, spec: str | None) -> None:
        if spec is None or spec == "none":
            self.lo, self.hi = 1, 0
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), MAX_VERSION
        elif "-" in spec:
            lo, hi = spec.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(spec)

    def __contains__(self, v: int) -> bool:
        return self.lo <= v <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"

    __repr__ = __str__


PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes"}
)
_INTS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})
ZERO_UUID = bytes(16)


class F:
    """One field: Kafka's name and type, the versions it exists in, and how it is encoded.

    ``type`` is a primitive (:data:`PRIMITIVES`), a struct name, or ``[]`` + either for an array.
    ``nullable`` are the versions where it may be null; ``tag``/``tagged`` make it a tagged field
    in those versions; ``default`` is the value when absent (Kafka's rule when not given: 0,
    false, "", empty bytes/array, the zero UUID or a struct of defaults); ``flexible`` overrides the
    message's flexible versions for a string or bytes field. ``fields`` declares an inline struct.
    """

    __slots__ = (
        "name", "type", "versions", "nullable", "tag", "tagged", "default", "flexible", "fields",
        "json_name", "is_array", "elem", "struct",
    )

    def __init__(
        self,
        name: str,
        type: str,
        versions: str,
        *,
        nullable: str | None = None,
        tag: int | None = None,
        tagged: str | None = None,
        default: Any = None,
        flexible: str | None = None,
        fields: list[F] | None = None,
    ) -> None:
        self.name = name
        self.type = type
        self.versions = Versions(versions)
        self.nullable = Versions(nullable)
        self.tag = tag
        self.tagged = Versions(tagged)
        self.default = default
        self.flexible = Versions(flexible) if flexible is not None else None
        self.fields = fields
        #: the JSON key Kafka's converters use: the name with its first letter lowercased
        self.json_name = name[:1].lower() + name[1:]
        self.is_array = type.startswith("[]")
        self.elem = type[2:] if self.is_array else type
        self.struct: list[F] | None = None  # resolved by Message

    def present(self, version: int) -> bool:
        return version in self.versions

    def is_tagged(self, version: int) -> bool:
        return version in self.tagged and version in self.versions

    def default_value(self) -> Any:
        """The value Kafka gives this field when it is absent (a fresh object for mutable ones)."""
        d = self.default
        if d is NULL:
            return None
        if self.is_array:
            return []
        if self.struct is not None:
            return {f.json_name: f.default_value() for f in self.struct}
        if d is not None:
            return d
        t = self.type
        if t in _INTS:
            return 0
        if t == "bool":
            return False
        if t == "float64":
            return 0.0
        if t == "string":
            return ""
        if t == "bytes":
            return b""
        if t == "uuid":
            return ZERO_UUID
        raise ValueError(f"no default for type {t}")

    def __repr__(self) -> str:
        return f"F({self.name!r}, {self.type!r}, {str(self.versions)!r})"


class Message:
    """A message spec: name, valid versions, flexible versions, fields and named common structs."""

    __slots__ = ("name", "valid", "flexible", "fields", "structs")

    def __init__(
        self,
        name: str,
        valid: str,
        *,
        flexible: str,
        fields: list[F],
        structs: Mapping[str, list[F]] | None = None,
    ) -> None:
        self.name = name
        self.valid = Versions(valid)
        self.flexible = Versions(flexible)
        self.fields = fields
        self.structs = dict(structs or {})
        for fs in self.structs.values():
            self._resolve(fs)
        self._resolve(fields)

    def _resolve(self, fields: list[F]) -> None:
        for f in fields:
            if f.elem not in PRIMITIVES:
                f.struct = f.fields if f.fields is not None else self.structs[f.elem]
                if f.fields is not None:
                    self._resolve(f.fields)
            elif f.fields is not None:
                raise ValueError(f"{self.name}.{f.name}: a {f.type} field cannot have fields")

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def __repr__(self) -> str:
        return f"Message({self.name!r}, {str(self.valid)!r})"


# ============================================================================ construct layouts
class KafkaValueError(ConstructError):
    """A declared layout met bytes Kafka rejects (a null where the field is not nullable)."""


def _uvarint_parse(stream: Any, path: str) -> int:
    return VarInt._parsereport(stream, None, path)


class KafkaVarData(Construct):
    """A string or bytes field: int16 (string) / int32 (bytes) length, or unsigned varint
    length+1 when ``compact``; a negative length is null (an error unless ``nullable``)."""

    def __init__(self, kind: str, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.kind, self.compact, self.nullable = kind, compact, nullable

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        if self.compact:
            n = _uvarint_parse(stream, path) - 1
        elif self.kind == "string":
            n = Int16sb._parsereport(stream, context, path)
        else:
            n = Int32sb._parsereport(stream, context, path)
        if n < 0:
            if not self.nullable:
                raise KafkaValueError(f"non-nullable {self.kind} was serialized as null")
            return None
        data = stream_read(stream, n, path)
        return data.decode("utf-8", JAVA_UTF8) if self.kind == "string" else data  # as Java decodes it

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        data = None if obj is None else (obj.encode("utf-8") if self.kind == "string" else bytes(obj))
        n = -1 if data is None else len(data)
        if self.compact:
            VarInt._build(n + 1, stream, context, path)
        elif self.kind == "string":
            Int16sb._build(n, stream, context, path)
        else:
            Int32sb._build(n, stream, context, path)
        if data:
            stream_write(stream, data, len(data), path)
        return obj


class KafkaArray(Construct):
    """An array: int32 count, or unsigned varint count+1 when ``compact``; negative is null."""

    def __init__(self, subcon: Construct, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.subcon, self.compact, self.nullable = subcon, compact, nullable

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        n = _uvarint_parse(stream, path) - 1 if self.compact else Int32sb._parsereport(stream, context, path)
        if n < 0:
            if not self.nullable:
                raise KafkaValueError("non-nullable array was serialized as null")
            return None
        return [self.subcon._parsereport(stream, context, path) for _ in range(n)]

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        n = -1 if obj is None else len(obj)
        if self.compact:
            VarInt._build(n + 1, stream, context, path)
        else:
            Int32sb._build(n, stream, context, path)
        for e in obj or ():
            self.subcon._build(e, stream, context, path)
        return obj


class KafkaNullableStruct(Construct):
    """A nullable struct: int8 marker (negative: null), or unsigned varint (0: null) when tagged."""

    def __init__(self, subcon: Construct, tagged: bool) -> None:
        super().__init__()
        self.subcon, self.tagged = subcon, tagged

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        marker = _uvarint_parse(stream, path) if self.tagged else Int8sb._parsereport(stream, context, path)
        if marker <= 0 if self.tagged else marker < 0:
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if self.tagged:
            VarInt._build(0 if obj is None else 1, stream, context, path)
        else:
            Int8sb._build(-1 if obj is None else 1, stream, context, path)
        if obj is not None:
            self.subcon._build(obj, stream, context, path)
        return obj


class KafkaTaggedFields(Construct):
    """The tagged-field section of a flexible struct: unsigned varint count, then (tag, size,
    value) triples. Parses to a dict of the known fields present (by Kafka name) plus
    ``_unknown`` [(tag, raw bytes)]; builds from the same."""

    def __init__(self, known: Mapping[int, tuple[str, Construct]]) -> None:
        super().__init__()
        self.known = dict(known)
        self.by_name = {name: (tag, c) for tag, (name, c) in self.known.items()}

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        out = _Container()
        unknown = []
        for _ in range(_uvarint_parse(stream, path)):
            tag = _uvarint_parse(stream, path)
            size = _uvarint_parse(stream, path)
            if tag in self.known:
                name, c = self.known[tag]
                out[name] = c._parsereport(stream, context, path)
            else:
                unknown.append((tag, stream_read(stream, size, path)))
        if unknown:
            out["_unknown"] = unknown
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        obj = obj or {}
        items = []
        for name, value in obj.items():
            if name == "_unknown":
                items.extend(value)
            elif name in self.by_name:
                tag, c = self.by_name[name]
                items.append((tag, c.build(value)))
        items.sort(key=lambda t: t[0])
        VarInt._build(len(items), stream, context, path)
        for tag, data in items:
            VarInt._build(tag, stream, context, path)
            VarInt._build(len(data), stream, context, path)
            stream_write(stream, data, len(data), path)
        return obj


_FIXED: dict[str, Construct] = {
    "bool": Flag,
    "int8": Int8sb,
    "int16": Int16sb,
    "uint16": Int16ub,
    "int32": Int32sb,
    "uint32": Int32ub,
    "int64": Int64sb,
    "float64": Float64b,
    "uuid": Bytes(16),
}


def _field_flexible(message: Message, f: F, version: int) -> bool:
    return version in (f.flexible if f.flexible is not None else message.flexible)


def _value_construct(message: Message, f: F, version: int, elem: bool, tagged: bool) -> Construct:
    compact = tagged or _field_flexible(message, f, version)
    t = f.elem if elem else f.type
    if not elem and f.is_array:
        return KafkaArray(_value_construct(message, f, version, True, tagged), compact, version in f.nullable)
    if t in _FIXED:
        return _FIXED[t]
    if t in ("string", "bytes"):
        return KafkaVarData(t, compact, (version in f.nullable) and not elem)
    assert f.struct is not None
    body = _struct_construct(message, f.struct, version)
    if not elem and version in f.nullable:
        return KafkaNullableStruct(body, tagged)
    return body


def _struct_construct(message: Message, fields: list[F], version: int) -> Construct:
    members = []
    tagged: dict[int, tuple[str, Construct]] = {}
    for f in fields:
        if version not in f.versions:
            continue
        if version in f.tagged:
            assert f.tag is not None
            tagged[f.tag] = (f.name, _value_construct(message, f, version, False, True))
        else:
            members.append(f.name / _value_construct(message, f, version, False, False))
    if message.is_flexible(version):
        members.append("_tagged" / KafkaTaggedFields(tagged))
    return Struct(*members)


def construct_for(message: Message, version: int) -> Construct:
    """The ``construct`` layout of ``message`` at ``version`` (without the int16 version prefix).

    Fields absent from that version are left out; tagged fields are parsed into ``_tagged``.
    """
    if version not in message.valid:
        raise ValueError(f"{message.name} has no version {version} (valid: {message.valid})")
    return _struct_construct(message, message.fields, version)


def uuid_text(raw: bytes) -> str:
    """Kafka's text form of a UUID: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
