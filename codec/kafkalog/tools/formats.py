"""The command line's options for keys and values as data (issue #34), shared by ``cat`` and ``export``:
the formats (kcat's ``-s value=avro``), the schema sources (the backup's ``_schemas`` topic,
``--schema-file``, kcat's ``-r URL``) and what an undecodable value does (``--on-undecodable``).
The decoding itself is :mod:`kafkalog.dataset.values`'s."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kafkalog.dataset.values import FORMATS as _FORMATS
from kafkalog.dataset.values import ON_UNDECODABLE as _ON_UNDECODABLE
from kafkalog.dataset.values import WIRE_FORMATS
from kafkalog.tools.command import UsageError

if TYPE_CHECKING:
    from kafkalog.dataset.registry import Registry
    from kafkalog.dataset.values import Decoding

__all__ = ["add_format_options", "make_decoding", "parse_formats", "registry_of"]


def add_format_options(c: argparse.ArgumentParser, *, serdes_flag: bool) -> None:
    """``-s``/``--key-format``/``--value-format``, the schema sources and ``--on-undecodable``."""
    g = c.add_argument_group("keys and values as data (Schema Registry wire format: Avro, JSON Schema; plain formats)")
    if serdes_flag:
        g.add_argument("-s", dest="serdes", action="append", metavar="[key=|value=]FORMAT", help=(
            f"decode keys and/or values (kcat's -s): {', '.join(_FORMATS)}; 'avro', 'json', 'protobuf' and 'auto' read "
            "Confluent's wire format with the schemas of the backup's _schemas topic (or --schema-file, -r). Each record is then "
            "printed as JSON (%%s, %%k)"))
    g.add_argument("--key-format", choices=_FORMATS, help="decode keys (as -s key=FORMAT)")
    g.add_argument("--value-format", choices=_FORMATS, help="decode values (as -s value=FORMAT)")
    g.add_argument("--schemas-topic", default="_schemas", metavar="TOPIC", help=(
        "the Schema Registry's topic in the data read (default: _schemas, the Registry's kafkastore.topic)"))
    g.add_argument("--schema-file", action="append", metavar="ID=PATH", help=(
        "the schema with this id in a file: .avsc (Avro), .json (JSON Schema), .proto; asked before the _schemas topic (repeatable)"))
    g.add_argument("-r", "--schema-registry", metavar="URL", help="a live Schema Registry, asked last (kcat's -r)")
    g.add_argument("--on-undecodable", choices=_ON_UNDECODABLE, default="error", help=(
        "a key or value that does not decode (unknown schema id, bad bytes): error (default, exit 1), or a warning and "
        "the raw bytes (cat only), a null, or the record left out"))
    g.add_argument("--validate", action="store_true", help=(
        "validate JSON Schema values against their schema (the jsonschema library: pip install 'kafkalog[jsonschema]'); "
        "an invalid value is undecodable (--on-undecodable)"))


def parse_formats(args: argparse.Namespace) -> dict[str, str]:
    """``{"key": FORMAT, "value": FORMAT}`` from ``-s`` (a bare FORMAT is both, as kcat's) and the long flags."""
    out: dict[str, str] = {}
    for s in getattr(args, "serdes", None) or []:
        role, _, fmt = s.rpartition("=")
        roles = [role] if role else ["key", "value"]
        if role not in ("", "key", "value") or fmt not in _FORMATS:
            raise UsageError(f"-s {s!r}: give [key=|value=]FORMAT with FORMAT one of {', '.join(_FORMATS)}")
        out.update(dict.fromkeys(roles, fmt))
    if args.key_format:
        out["key"] = args.key_format
    if args.value_format:
        out["value"] = args.value_format
    return {r: f for r, f in out.items() if f != "bytes"}


def registry_of(args: argparse.Namespace, formats: dict[str, str]) -> Registry | None:
    """The schema sources the formats need (None when no format reads the wire format)."""
    if not WIRE_FORMATS.intersection(formats.values()):
        return None
    from kafkalog.dataset.registry import Registry
    from kafkalog.dataset.scan import topic_records

    files: dict[int, str] = {}
    for spec in args.schema_file or []:
        sid, eq, path = spec.partition("=")
        if not eq or not sid.isdigit():
            raise UsageError(f"--schema-file {spec!r}: give ID=PATH")
        files[int(sid)] = path
    return Registry.open(topic_records(args.paths, args.schemas_topic) if args.paths else None, schema_files=files,
                         url=args.schema_registry)


def make_decoding(args: argparse.Namespace, formats: dict[str, str], command: str) -> Decoding:
    """The decoding of a command's reads: its formats, schema sources and ``--on-undecodable``, warnings on stderr."""
    from kafkalog.dataset.values import Decoding

    return Decoding(formats, registry_of(args, formats), on_undecodable=args.on_undecodable, validate=args.validate,
                    warn=lambda msg: print(f"kafkalog {command}: warning: {msg}", file=sys.stderr))
