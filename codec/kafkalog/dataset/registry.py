"""Schemas for values in Confluent's Schema Registry wire format, found offline: in the backup's own
``_schemas`` topic, in schema files, or (optionally) from a live registry's REST API.

The Schema Registry keeps every schema it registers as a record of its compacted ``_schemas``
topic, so a backup of the broker's data dirs already holds the registry. :meth:`SchemasTopic.replay`
replays that topic as the Registry's own store reader does (Confluent's
``KafkaStoreReaderThread`` and ``KafkaStoreMessageHandler``; SPEC.md appendix "Schema Registry
wire format"):

- a key is JSON with a ``keytype``: ``SCHEMA`` (with ``subject`` and ``version``), ``CONFIG``,
  ``MODE``, ``NOOP``, ``DELETE_SUBJECT`` or ``CLEAR_SUBJECT``. A key that is not JSON or has
  another key type is skipped, as the Registry skips a key it cannot deserialize (counted in
  :attr:`SchemasTopic.skipped`);
- ``NOOP`` records only mark the reader's position; ``CONFIG`` and ``MODE`` set compatibility and
  modes, which do not change how a value decodes: all three are passed over;
- a ``SCHEMA`` value holds ``id``, ``schema``, ``schemaType`` (``AVRO`` when absent, ``JSON``,
  ``PROTOBUF``), ``references`` and ``deleted``. The last value of a key wins; a tombstone (null
  value) removes that subject-version; a value that reuses a registered id for another schema
  text is ignored (the Registry's ``validateUpdate`` refuses it);
- ``DELETE_SUBJECT`` (``subject``, ``version``) soft-deletes versions 1 to ``version``; a
  soft-deleted schema is still found by its id, as the Registry still serves it to consumers of
  old data; ``CLEAR_SUBJECT`` (``subject``) removes the soft-deleted versions of a subject.

Subjects in a named context (``:.ctx:subject``) are kept under their full name; their ids are
looked up as the default context's are (a backup using several contexts with clashing ids is not
told apart).
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from kafkalog.errors import RegistryUnreachableError, UnknownSchemaError

__all__ = [
    "SCHEMAS_TOPIC",
    "Reference",
    "Registry",
    "RegistryClient",
    "Schema",
    "SchemaFiles",
    "SchemaSource",
    "SchemasTopic",
]

#: The Registry's default ``kafkastore.topic``.
SCHEMAS_TOPIC = "_schemas"
SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


@dataclass(frozen=True)
class Reference:
    """A schema's import of another: the ``name`` it is imported by (an Avro full name, a ``.proto``
    file name, a JSON Schema ``$ref`` URL) and the subject-version that holds it."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class Schema:
    """One registered schema: its id, type (``AVRO``, ``JSON`` or ``PROTOBUF``), text and references,
    and where known the subject-version it was registered under and whether that was soft-deleted."""

    id: int
    type: str
    text: str
    references: tuple[Reference, ...] = ()
    subject: str | None = None
    version: int | None = None
    deleted: bool = False


def _schema_of(v: Mapping[str, Any], *, schema_id: int | None = None) -> Schema:
    """A :class:`Schema` from the JSON of a ``_schemas`` value or a REST API answer (same field names)."""
    refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"])) for r in v.get("references") or ())
    kind = v.get("schemaType") or "AVRO"
    if kind not in SCHEMA_TYPES:
        raise ValueError(f"schemaType {kind!r} is none of {', '.join(SCHEMA_TYPES)}")
    sid = v.get("id", schema_id)
    if not isinstance(sid, int) or not isinstance(v.get("schema"), str):
        raise ValueError("a schema needs an integer id and a schema text")
    version = v.get("version")
    return Schema(sid, kind, v["schema"], refs, v.get("subject"), version if isinstance(version, int) else None,
                  bool(v.get("deleted", False)))


class SchemaSource(Protocol):
    """Where schemas come from: by id (the wire format's), and by subject-version (references,
    and the latest version of a subject as Avro's reader schema)."""

    def by_id(self, schema_id: int) -> Schema | None: ...

    def by_version(self, subject: str, version: int | None) -> Schema | None:
        """``version`` None: the latest version that is not soft-deleted."""
        ...

    def subjects(self) -> dict[str, list[int]]:
        """Every subject with its versions (soft-deleted ones left out), as the REST API's ``/subjects`` lists them."""
        ...


@dataclass
class SchemasTopic:
    """The Registry's store as a replay of its ``_schemas`` topic leaves it (see the module's rules)."""

    store: dict[tuple[str, int], Schema] = field(default_factory=dict)
    #: records whose key or value the Registry could not deserialize and skips, by offset
    skipped: list[int] = field(default_factory=list)

    @classmethod
    def replay(cls, records: Iterable[tuple[bytes | None, bytes | None, int]]) -> SchemasTopic:
        """The store after applying ``(key, value, offset)`` records in offset order."""
        out = cls()
        for key, value, offset in records:
            try:
                k = json.loads(key) if key is not None else None
                kind = k["keytype"]
            except (ValueError, TypeError, KeyError):
                out.skipped.append(offset)
                continue
            try:
                v = json.loads(value) if value is not None else None
            except ValueError:
                out.skipped.append(offset)
                continue
            if kind in ("NOOP", "CONFIG", "MODE"):
                continue
            try:
                if kind == "SCHEMA":
                    sv = (str(k["subject"]), int(k["version"]))
                    if v is None:
                        out.store.pop(sv, None)
                        continue
                    s = _schema_of(v)
                    old = out.by_id(s.id)  # validateUpdate: an id already registered for another schema text is refused
                    if old is not None and old.text != s.text:
                        continue
                    out.store[sv] = replace(s, subject=sv[0], version=sv[1])
                elif kind == "DELETE_SUBJECT" and v is not None:
                    subject, upto = str(v["subject"]), int(v["version"])
                    for (s_, ver), s in list(out.store.items()):
                        if s_ == subject and ver <= upto:
                            out.store[(s_, ver)] = replace(s, deleted=True)
                elif kind == "CLEAR_SUBJECT" and v is not None:
                    subject = str(v["subject"])
                    for sv2 in [sv2 for sv2, s in out.store.items() if sv2[0] == subject and s.deleted]:
                        del out.store[sv2]
                elif kind not in ("DELETE_SUBJECT", "CLEAR_SUBJECT"):
                    out.skipped.append(offset)
            except (ValueError, TypeError, KeyError):
                out.skipped.append(offset)
        return out

    def by_id(self, schema_id: int) -> Schema | None:
        for s in self.store.values():
            if s.id == schema_id:
                return s
        return None

    def by_version(self, subject: str, version: int | None) -> Schema | None:
        if version is not None:
            return self.store.get((subject, version))
        live = [v for (s, v), sc in self.store.items() if s == subject and not sc.deleted]
        return self.store[(subject, max(live))] if live else None

    def subjects(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for (s, v), sc in sorted(self.store.items()):
            if not sc.deleted:
                out.setdefault(s, []).append(v)
        return out


_SUFFIX_TYPES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".json": "JSON"}


@dataclass
class SchemaFiles:
    """Schemas given as files, each under the id the values carry: ``{id: path}``. The type comes
    from the suffix: ``.avsc`` Avro, ``.proto`` Protobuf, ``.json`` JSON Schema."""

    files: Mapping[int, str | os.PathLike[str]]

    def by_id(self, schema_id: int) -> Schema | None:
        path = self.files.get(schema_id)
        if path is None:
            return None
        kind = _SUFFIX_TYPES.get(Path(path).suffix.lower())
        if kind is None:
            raise ValueError(f"{path}: a schema file ends in {', '.join(_SUFFIX_TYPES)}")
        return Schema(schema_id, kind, Path(path).read_text(encoding="utf-8"))

    def by_version(self, subject: str, version: int | None) -> Schema | None:
        return None

    def subjects(self) -> dict[str, list[int]]:
        return {}


class RegistryClient:
    """A live Schema Registry, through its REST API (``GET /schemas/ids/{id}``,
    ``GET /subjects/{subject}/versions/{version}``, ``GET /subjects``), as kcat's ``-r URL``.

    Only the standard library: the API is three GETs of JSON. Answers are cached. A 404 is "not
    there"; anything else that is not the API's JSON raises :class:`~kafkalog.errors.RegistryUnreachableError`."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._cache: dict[str, Any] = {}

    def _get(self, path: str) -> Any:
        import urllib.error  # only for a registry URL: its import is a tenth of a second of a Spark planner's start
        import urllib.request

        if path in self._cache:
            return self._cache[path]
        req = urllib.request.Request(self.url + path, headers={"Accept": "application/vnd.schemaregistry.v1+json, application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:  # noqa: S310 - the user's registry URL
                out = json.loads(r.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                out = None
            else:
                raise RegistryUnreachableError(f"schema registry {self.url}: GET {path} answered HTTP {e.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise RegistryUnreachableError(f"schema registry {self.url} cannot be reached: GET {path}: {reason}") from None
        self._cache[path] = out
        return out

    def by_id(self, schema_id: int) -> Schema | None:
        v = self._get(f"/schemas/ids/{schema_id}")
        return None if v is None else _schema_of(v, schema_id=schema_id)

    def by_version(self, subject: str, version: int | None) -> Schema | None:
        v = self._get(f"/subjects/{urllib.parse.quote(subject, safe='')}/versions/{'latest' if version is None else version}")
        return None if v is None else _schema_of(v)

    def subjects(self) -> dict[str, list[int]]:
        return {s: self._get(f"/subjects/{urllib.parse.quote(s, safe='')}/versions") or [] for s in self._get("/subjects") or []}


class Registry:
    """Schema sources asked in order (schema files, the backup's topic, a registry URL): the first
    that knows an id or subject answers."""

    def __init__(self, sources: Sequence[SchemaSource]) -> None:
        self.sources = list(sources)

    def by_id(self, schema_id: int) -> Schema:
        """The schema with this id; :class:`~kafkalog.errors.UnknownSchemaError` when no source has it."""
        for src in self.sources:
            s = src.by_id(schema_id)
            if s is not None:
                return s
        where = ", ".join(type(s).__name__ for s in self.sources) or "no schema source"
        raise UnknownSchemaError(f"no schema with this id in {where}", schema_id=schema_id)

    def by_version(self, subject: str, version: int | None = None) -> Schema | None:
        """A subject's version (None: its latest live one), or None."""
        for src in self.sources:
            s = src.by_version(subject, version)
            if s is not None:
                return s
        return None

    def subjects(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for src in reversed(self.sources):
            out.update(src.subjects())
        return dict(sorted(out.items()))

    @classmethod
    def open(
        cls,
        schemas_topic: Iterable[tuple[bytes | None, bytes | None, int]] | None = None,
        *,
        schema_files: Mapping[int, str | os.PathLike[str]] | None = None,
        url: str | None = None,
    ) -> Registry:
        """The sources for a read, asked in this order: ``schema_files`` ({id: path}), the records of
        a ``_schemas`` topic (:func:`kafkalog.dataset.scan.topic_records` reads them from a backup),
        and a registry ``url``."""
        sources: list[SchemaSource] = []
        if schema_files:
            sources.append(SchemaFiles(schema_files))
        if schemas_topic is not None:
            sources.append(SchemasTopic.replay(schemas_topic))
        if url:
            sources.append(RegistryClient(url))
        return cls(sources)
