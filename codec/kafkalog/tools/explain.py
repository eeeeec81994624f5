"""``kafkalog explain``: an annotated hex dump of a file, field by field, driven by the construct
schemas in :mod:`kafkalog.format.schemas` (so what it prints is what SPEC.md's tables say)."""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalog.errors import KafkaLogError, OffsetOutOfRangeError
from kafkalog.format.compression import Codec
from kafkalog.format.files import FileKind, kind_of
from kafkalog.format.records.legacy import LegacyBatch
from kafkalog.format.records.stream import LogReader
from kafkalog.format.records.v2 import HEADER_SIZE, RecordBatch
from kafkalog.tools.command import EXIT_IO, EXIT_OK, UsageError

if TYPE_CHECKING:
    from construct import Construct, Container, Struct

# construct and the schemas built with it are imported by the functions that parse: `kafkalog
# --help`, which loads every command's module, does not load them.

__all__ = ["Field", "annotate", "explain_file"]


@dataclass(frozen=True)
class Field:
    """One decoded field: its path (``records[0].key``), byte range in ``data``, and value."""

    path: str
    start: int
    end: int
    value: Any
    type: str


def _context(stream: io.BytesIO) -> Container:
    from construct import Container

    return Container(_params=Container(), _root=None, _parsing=True, _building=False, _sizing=False, _io=stream, _index=None)


def _type_name(sc: Construct) -> str:
    from construct import Renamed

    inner = sc.subcon if isinstance(sc, Renamed) else sc
    while type(inner).__name__ == "Rebuild":
        inner = inner.subcon
    name = type(inner).__name__
    if name == "FormatField":
        fmt = inner.fmtstr
        size = inner.length
        signed = fmt[-1].islower()
        return f"{'int' if signed else 'uint'}{size * 8}"
    if name == "ZigZag":
        return "varint"
    if name in ("IfThenElse", "Bytes"):
        return "bytes"
    if name == "Const":
        return type(inner.subcon).__name__ == "FormatField" and f"int{inner.subcon.length * 8}" or "bytes"
    if name == "FocusedSeq":
        return "array"
    return name


def annotate(struct: Struct, data: bytes, start: int = 0, prefix: str = "") -> tuple[list[Field], int]:
    """Parse ``struct`` at ``data[start:]`` field by field; return the fields and the end position."""
    from construct import Array, FocusedSeq, Renamed

    stream = io.BytesIO(data)
    stream.seek(start)
    ctx = _context(stream)
    fields: list[Field] = []
    for sc in struct.subcons:
        inner = sc.subcon if isinstance(sc, Renamed) else sc
        a = stream.tell()
        if isinstance(inner, FocusedSeq) and any(isinstance(x, Renamed) and isinstance(x.subcon, Array) for x in inner.subcons):
            count_sc = inner.subcons[0]
            array_sc = next(x.subcon for x in inner.subcons if isinstance(x, Renamed) and isinstance(x.subcon, Array))
            count = count_sc._parsereport(stream, _context(stream), "(explain)")
            fields.append(Field(f"{prefix}{sc.name}.count", a, stream.tell(), count, _type_name(count_sc)))
            items = []
            for i in range(count):
                sub, end = annotate(array_sc.subcon, data, stream.tell(), f"{prefix}{sc.name}[{i}].")
                fields.extend(sub)
                stream.seek(end)
                items.append(None)
            ctx[sc.name] = items
            continue
        value = sc._parsereport(stream, ctx, "(explain)")
        ctx[sc.name] = value
        fields.append(Field(prefix + sc.name, a, stream.tell(), value, _type_name(sc)))
    return fields, stream.tell()


def _fmt_value(v: Any) -> str:
    if isinstance(v, bytes):
        if len(v) <= 24:
            text = v.decode("latin-1")
            shown = repr(v)[1:] if text.isprintable() else v.hex()
            return shown
        return f"{v[:16].hex()}... ({len(v)} bytes)"
    return "null" if v is None else str(v)


def _hex_lines(data: bytes, f: Field, base: int) -> Iterator[str]:
    raw = data[f.start : f.end]
    chunks = [raw[i : i + 12] for i in range(0, max(len(raw), 1), 12)] or [b""]
    for n, chunk in enumerate(chunks[:3]):
        hexs = " ".join(f"{b:02x}" for b in chunk)
        label = f"{f.path:<36} {f.type:<7} {_fmt_value(f.value)}" if n == 0 else ""
        yield f"  {base + f.start + 12 * n:08x}  {hexs:<36} {label}".rstrip()
    if len(chunks) > 3:
        yield f"  {'':8}  ... {len(raw) - 36} more bytes"


def _explain_control(buf: bytes, f: Field, base: int) -> Iterator[str]:
    """A control record's key (version, type) and, for ABORT/COMMIT, its marker value."""
    from kafkalog.format import schemas as S

    if f.path.endswith(".key") and f.end - f.start >= S.CONTROL_RECORD_KEY.sizeof():
        schema = S.CONTROL_RECORD_KEY
    elif f.path.endswith(".value") and f.end - f.start >= S.END_TXN_MARKER_VALUE.sizeof():
        schema = S.END_TXN_MARKER_VALUE
    else:
        return
    sub, _ = annotate(schema, buf, f.start, f.path + ".")
    for g in sub:
        yield from _hex_lines(buf, g, base)


def _explain_batch(batch: RecordBatch | LegacyBatch) -> Iterator[str]:
    from kafkalog.format import schemas as S

    data = batch.data
    if isinstance(batch, RecordBatch):
        yield f"record batch (magic 2) at position {batch.position}, offsets {batch.base_offset}..{batch.last_offset}, {batch.compression.label}"
        fields, pos = annotate(S.RECORD_BATCH_V2_HEADER, data)
        for f in fields:
            yield from _hex_lines(data, f, batch.position)
        if batch.compression is Codec.NONE:
            buf, base, where = data, batch.position, "position"
        else:
            buf, pos, base, where = batch.records_buffer(), 0, 0, "byte of the decompressed records"
            yield f"  records ({batch.compression.label}-compressed, {len(data) - HEADER_SIZE} bytes; shown decompressed, {len(buf)} bytes)"
        for i in range(batch.count):
            yield f"  record {i} at {where} {base + pos}"
            fields, pos = annotate(S.RECORD_V2, buf, pos, f"records[{i}].")
            for f in fields:
                yield from _hex_lines(buf, f, base)
                if batch.is_control and f.path.endswith((".key", ".value")) and f.value is not None:
                    yield from _explain_control(buf, f, base)
    else:
        schema = S.LEGACY_MESSAGE_V0 if batch.magic == 0 else S.LEGACY_MESSAGE_V1
        yield f"message (magic {batch.magic}) at position {batch.position}, offset {batch.last_offset}, {batch.compression.label}"
        fields, _ = annotate(schema, data)
        for f in fields:
            yield from _hex_lines(data, f, batch.position)


def explain_file(path: str, *, offset: int | None = None, limit: int = 1) -> Iterator[str]:
    """Annotated lines for ``limit`` batches of a ``.log`` (from the one holding ``offset``), or
    every entry of an index, time index, transaction index or producer snapshot."""
    from kafkalog.format import schemas as S

    kind = kind_of(path)
    if kind is FileKind.LOG or kind is None and path.endswith(".log"):
        shown = 0
        last: int | None = None
        with LogReader(path) as reader:
            for batch in reader.batches():
                last = batch.last_offset
                if offset is not None and batch.last_offset < offset:
                    continue
                yield from _explain_batch(batch)
                shown += 1
                if shown >= limit:
                    return
            if reader.tail is not None:
                yield reader.tail.message()
        if not shown and offset is not None:
            end = "it holds no batch" if last is None else f"its last offset is {last}"
            raise OffsetOutOfRangeError(f"no batch holds offset {offset}: {end}", file=path, offset=offset)
        return
    schema = {
        FileKind.INDEX: S.OFFSET_INDEX_ENTRY,
        FileKind.TIME_INDEX: S.TIME_INDEX_ENTRY,
        FileKind.TXN_INDEX: S.ABORTED_TXN_ENTRY,
    }.get(kind)  # type: ignore[arg-type]
    with open(path, "rb") as f:
        data = f.read()
    if kind is FileKind.PRODUCER_SNAPSHOT:
        fields, _ = annotate(S.PRODUCER_SNAPSHOT, data)
        yield f"producer snapshot {os.path.basename(path)}"
        for fl in fields:
            yield from _hex_lines(data, fl, 0)
        return
    if schema is None:
        raise KafkaLogError(f"explain reads .log, .index, .timeindex, .txnindex and .snapshot files, not {os.path.basename(path)}", file=path)
    size = schema.sizeof()
    for i in range(0, len(data) - len(data) % size, size):
        yield f"entry {i // size} at position {i}"
        fields, _ = annotate(schema, data, i)
        for fl in fields:
            yield from _hex_lines(data, fl, 0)


def _command(args: argparse.Namespace) -> int:

    if not os.path.exists(args.file):
        print(f"kafkalog explain: no such file: {args.file}", file=sys.stderr)
        return EXIT_IO
    if os.path.isdir(args.file):
        raise UsageError(f"{args.file} is a directory; explain takes one file, e.g. {os.path.join(args.file, '00000000000000000000.log')}")
    if args.count < 1:
        raise UsageError(f"--count must be 1 or more, got {args.count}")
    if (args.offset is not None or args.count != 1) and not args.file.endswith(".log"):
        raise UsageError("--offset and --count apply to .log files")
    for line in explain_file(args.file, offset=args.offset, limit=args.count):
        print(line)
    return EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog explain`` to the command line."""
    e = sub.add_parser("explain", help="annotated hex dump of a file, field by field", description=(
        "Print every field of a batch (or of each entry of an index, time index, transaction index or producer "
        "snapshot) with its byte position, bytes, name as SPEC.md names it, type and value."))
    e.add_argument("file", metavar="FILE")
    e.add_argument("--offset", type=int, help=".log: start at the batch holding this offset (default: the first)")
    e.add_argument("--count", type=int, default=1, help=".log: how many batches to show (default 1)")
    e.set_defaults(func=_command)
