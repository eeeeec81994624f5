"""``kafkalog cat``: records as text, on kcat's consumer flags (``kcat -C -t orders -p 0 -o -5 -e``),
read from the files at rest.

Keys and values are printed as text: UTF-8 is decoded, and every byte that is not valid UTF-8 and
every control character is escaped (``\\xNN``, ``\\n``, ``\\t``, ...), so a terminal never gets raw
binary and each record stays on its line. There is no new data at rest: the command always ends at
the end of the files; ``-e`` (kcat's "exit at the end") is accepted for kcat's command lines.

Records are read as objects (:func:`kafkalog.dataset.scan.read_records`), so ``cat`` needs only the
base install, no pyarrow.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalog.format.records.record import Header, TimestampType
from kafkalog.tools.command import (
    EXIT_IO,
    EXIT_OK,
    UsageError,
    add_crc_options,
    add_read_options,
    add_tiered_options,
    corrupt_failure,
    crc_options,
    only_internal,
    parse_time,
    partition_filter,
    partitions_of,
)
from kafkalog.tools.formats import add_format_options, make_decoding, parse_formats

if TYPE_CHECKING:
    from kafkalog.dataset.scan import PartitionPlan
    from kafkalog.dataset.values import Decoding
    from kafkalog.format.records.record import Record
    from kafkalog.format.records.stream import Batch

    #: What each record is printed from: its partition's plan, its batch and itself (:func:`~kafkalog.dataset.scan.read_records`),
    #: and with ``-s`` its decoded key and value (``key_text``/``value_text`` as JSON, ``key_data``/``value_data``)
    Row = tuple[PartitionPlan, Batch, Record, dict[str, Any] | None]

__all__ = ["compile_format", "envelope", "register", "text"]

#: C0 controls, DEL and C1 controls, escaped so that no record can move the cursor or split a line
_ESCAPES = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]}
_ESCAPES.update({c: f"\\xc2\\x{c:02x}" for c in range(0x80, 0xA0)})  # as their UTF-8 bytes
_ESCAPES.update({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})


def text(data: bytes | None, null: str = "") -> str:
    """``data`` as one line of text: UTF-8 decoded, other bytes as ``\\xNN``, control characters escaped."""
    if data is None:
        return null
    return data.decode("utf-8", "backslashreplace").translate(_ESCAPES)


def _headers(hs: tuple[Header, ...], null: str) -> str:
    return ",".join(f"{text(k.encode('utf-8', 'surrogatepass'))}={text(v, null)}" for k, v in hs)


_TOKENS: dict[str, Callable[[Row, str], str]] = {
    "s": lambda row, null: row[3]["value_text"] if row[3] and "value_text" in row[3] else text(row[2].value, null),
    "k": lambda row, null: row[3]["key_text"] if row[3] and "key_text" in row[3] else text(row[2].key, null),
    "S": lambda row, null: str(-1 if row[2].value is None else len(row[2].value)),
    "K": lambda row, null: str(-1 if row[2].key is None else len(row[2].key)),
    "t": lambda row, null: row[0].topic,
    "p": lambda row, null: str(row[0].partition),
    "o": lambda row, null: str(row[2].offset),
    "T": lambda row, null: str(row[2].timestamp),
    "h": lambda row, null: _headers(row[2].headers, null),
}
_BACKSLASH = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "0": "\0"}
_PART = re.compile(r"%(.)|\\(.)|([^%\\]+)|(.)", re.S)


def compile_format(fmt: str) -> Callable[[Row, str], str]:
    """kcat's ``-f`` format as a function of a record (with its partition's plan and its batch) and
    the text for null.

    Tokens: ``%s`` value, ``%k`` key, ``%S``/``%K`` their sizes in bytes (-1 for null), ``%t`` topic,
    ``%p`` partition, ``%o`` offset, ``%T`` timestamp (ms), ``%h`` headers (``k=v,k=v``), ``%%``;
    escapes ``\\n``, ``\\t``, ``\\r``, ``\\\\``, ``\\0``. Anything else is a usage error."""
    parts: list[Callable[[Row, str], str]] = []
    for m in _PART.finditer(fmt):
        token, esc, lit, lone = m.groups()
        if token is not None:
            if token == "%":
                parts.append(lambda r, null: "%")
            elif token in _TOKENS:
                parts.append(_TOKENS[token])
            else:
                raise UsageError(f"-f: unknown token %{token} (known: %s %k %S %K %t %p %o %T %h %%)")
        elif esc is not None:
            if esc not in _BACKSLASH:
                raise UsageError(f"-f: unknown escape \\{esc} (known: \\n \\t \\r \\\\ \\0)")
            parts.append(lambda r, null, c=_BACKSLASH[esc]: c)
        elif lone is not None:
            raise UsageError(f"-f: {fmt!r} ends with a lone {lone!r}")
        else:
            parts.append(lambda r, null, s=lit: s)
    return lambda row, null: "".join(p(row, null) for p in parts)


#: kcat's ``tstype`` names; a batch without timestamps (magic 0) has neither ``tstype`` nor ``ts``
_TSTYPE = {TimestampType.CREATE_TIME: "create", TimestampType.LOG_APPEND_TIME: "logappend"}
#: C1 controls, which JSON leaves raw, as \u escapes: a terminal receives no control sequence
_JSON_C1 = {c: f"\\u{c:04x}" for c in range(0x80, 0xA0)}


def _json_text(data: bytes | str | None) -> str | None:
    if data is None:
        return None
    if isinstance(data, str):  # a header key: Java's modified UTF-8 may leave lone surrogates in it
        data = data.encode("utf-8", "surrogatepass")
    return data.decode("utf-8", "backslashreplace")


def envelope(row: Row, null: str = "") -> str:
    """A record as kcat's ``-J`` prints it, one JSON object per line, with kcat's fields in its order
    (kcat's json.c): ``topic``, ``partition``, ``offset``, ``tstype`` (``create``/``logappend``) and
    ``ts`` (ms; both left out for magic 0, which has no timestamps), ``broker`` (-1: at rest there is
    no broker), ``headers`` (``[name, value, ...]``, left out when the record has none), ``key`` and
    ``payload`` (null for null). Keys, values and header values are JSON strings: UTF-8 decoded, any
    other byte written ``\\xNN`` (a backslash in the string), so every line is valid JSON."""
    p, batch, r, dec = row
    out: dict[str, object] = {"topic": p.topic, "partition": p.partition, "offset": r.offset}
    tstype = _TSTYPE.get(batch.timestamp_type)
    if tstype is not None:
        out["tstype"] = tstype
        out["ts"] = r.timestamp
    out["broker"] = -1
    if r.headers:
        out["headers"] = [_json_text(x) for h in r.headers for x in h]
    if dec is None:
        out["key"] = _json_text(r.key)
        out["payload"] = _json_text(r.value)
        return json.dumps(out, ensure_ascii=False, separators=(",", ":")).translate(_JSON_C1) + "\n"
    from kafkalog.dataset.values import json_text

    out["key"] = dec["key_data"] if "key_data" in dec else _json_text(r.key)
    out["payload"] = dec["value_data"] if "value_data" in dec else _json_text(r.value)
    return json_text(out).translate(_JSON_ESCAPES) + "\n"


#: C1 controls, DEL and the line separators as JSON escapes: decoded text printed as JSON keeps each record on its line
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in [0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]}
#: records decoded together (one partition's): the decoders work on lists
_DECODE_CHUNK = 512


def _decoded(records: Iterable[tuple[PartitionPlan, Batch, Record]], decoding: Decoding) -> Iterator[Row]:
    """Each record with its decoded key and value (``-s``): ``key_text``/``value_text`` as JSON
    (``null`` for None), ``key_data``/``value_data`` as data for ``-J``, or the raw bytes' text when
    ``--on-undecodable raw`` kept them; with ``skip``, undecodable records are left out."""
    from kafkalog.dataset.values import decode_all, json_text

    on = decoding.on_undecodable
    records = iter(records)
    while chunk := list(itertools.islice(records, _DECODE_CHUNK)):
        for p, group in itertools.groupby(chunk, key=lambda row: row[0]):
            rows = list(group)
            extra: list[dict[str, Any]] = [{} for _ in rows]
            skip: set[int] = set()
            for role, d in decoding.decoders(p.topic).items():
                values, bad = decode_all(d, [getattr(r[2], role) for r in rows], topic=p.topic, partition=p.partition,
                                         offsets=lambda i, rows=rows: rows[i][2].offset, on_undecodable=on, warn=decoding.warn)
                for i, v in enumerate(values):
                    raw = on == "raw" and i in bad
                    extra[i][f"{role}_text"] = text(v) if raw else json_text(v).translate(_JSON_ESCAPES)
                    extra[i][f"{role}_data"] = text(v) if raw else v
                if on == "skip":
                    skip.update(bad)
            yield from ((*row, e) for i, (row, e) in enumerate(zip(rows, extra, strict=True)) if i not in skip)


@dataclass(frozen=True)
class Start:
    """Where ``-o`` starts each partition: an offset (``-N``: that many before the end), the
    beginning, the end, or a timestamp; and where ``e@`` stops it."""

    offset: int | None = None
    relative: int | None = None
    time: int | None = None
    end: bool = False
    stop_time: int | None = None


def parse_offsets(values: list[str]) -> Start:
    """kcat's ``-o`` values (repeatable: a start and an ``e@`` stop)."""
    start = Start()
    for v in values:
        try:
            if v == "beginning":
                start = Start(stop_time=start.stop_time)
            elif v == "end":
                start = Start(end=True, stop_time=start.stop_time)
            elif v.startswith("s@"):
                start = Start(time=parse_time(v[2:]), stop_time=start.stop_time)
            elif v.startswith("e@"):
                start = Start(start.offset, start.relative, start.time, start.end, parse_time(v[2:]))
            elif v.startswith("-"):
                start = Start(relative=int(v[1:]), stop_time=start.stop_time)
            else:
                start = Start(offset=int(v), stop_time=start.stop_time)
        except ValueError:
            raise UsageError(f"-o {v!r}: give beginning, end, an offset, -N (N before the end), s@TIME or e@TIME (TIME: ms since "
                             "the epoch or ISO 8601)") from None
    return start


def _command(args: argparse.Namespace) -> int:
    from kafkalog.dataset.scan import plan_all, read_records, start_floor
    from kafkalog.errors import CrcMismatchError, LogNotFoundError
    from kafkalog.log.plan import describe

    start = parse_offsets(args.offset or ["beginning"])
    if args.count is not None and args.count < 0:
        raise UsageError(f"-c must be 0 or more, got {args.count}")
    render = envelope if args.json else compile_format(args.format)
    formats = parse_formats(args)
    verify_crc, on_corrupt = crc_options(args, "cat")
    try:
        files = partitions_of(args, wants=partition_filter(args))
    except LogNotFoundError as e:
        print(f"kafkalog cat: {e}", file=sys.stderr)
        return EXIT_IO
    if not files:
        where = " ".join(args.paths + ([args.tiered] if args.tiered else []))
        if args.topic or args.partition:
            print(f"kafkalog cat: no partition of {where} matches the -t/-p given", file=sys.stderr)
            return EXIT_IO
        print(only_internal("cat", args), file=sys.stderr)
        return EXIT_OK
    committed = args.isolation == "read_committed"
    starts: dict[tuple[str, int], int] | None = None
    if start.end or start.relative is not None:
        starts = {}
        for pf in files:
            s = describe(pf)
            end = (s.last_stable_offset if committed else s.end_offset) or 0
            # -N never reaches below the log start offset, as a consumer's seek is reset there
            floor = start_floor(pf, include_deleted=args.include_deleted)
            starts[(pf.topic, pf.partition)] = end if start.end else max(floor, end - (start.relative or 0))
    plans = plan_all(files, start_offset=starts if starts is not None else start.offset, start_time=start.time, end_time=start.stop_time,
                     read_committed=committed, allow_gaps=args.allow_gaps, include_deleted=args.include_deleted,
                     on_gap=lambda g: print(f"kafkalog cat: warning: {g} (--allow-gaps: reading on)", file=sys.stderr),
                     on_deleted=lambda m: print(f"kafkalog cat: warning: {m}", file=sys.stderr))
    records = read_records(plans, read_committed=committed, verify_crc=verify_crc, on_corrupt=on_corrupt)
    rows: Iterator[Row] = _decoded(records, make_decoding(args, formats, "cat")) if formats else ((*r, None) for r in records)
    if args.count is not None:
        rows = itertools.islice(rows, args.count)
    out = sys.stdout
    null = "NULL" if args.null else ""
    try:
        for row in rows:
            out.write(render(row, null))
    except CrcMismatchError as e:
        return corrupt_failure("cat", e)  # the records before the corrupt batch are out, as a consumer has them
    return EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog cat`` to the command line."""
    c = sub.add_parser("cat", help="print records as text, with kcat's consumer flags (-t -p -o -c -f -J -e)", description=(
        "Print the records of data dirs, partition dirs, globs or URLs as a consumer receives them (no transaction "
        "markers), partition by partition in offset order, one line per record by default (the value). Keys and values "
        "are text: bytes that are not UTF-8 and control characters are escaped (\\xNN, \\n, ...), never printed raw. "
        "Every batch's CRC is checked, as Kafka's consumer checks it: a corrupt batch ends the command (exit 1) naming "
        "the file, byte position and offset, unless --skip-corrupt (or --no-crc). "
        "Flags as kcat's consumer mode. The files at rest get no new data, so the command always ends at their end; "
        "-e is accepted as kcat's 'exit at the end'."))
    c.add_argument("paths", nargs="*", metavar="PATH")
    c.add_argument("-t", "--topic", action="append", metavar="TOPIC", help="only this topic (repeatable; default: every topic)")
    c.add_argument("-p", "--partition", action="append", type=int, metavar="N", help="only this partition (repeatable; default: all)")
    c.add_argument("-o", "--offset", action="append", metavar="OFFSET", help=(
        "where to start in each partition: beginning (default), end, an offset, -N (N offsets before the end), s@TIME "
        "(the first record at or after that time, by the time index; TIME: ms since the epoch or ISO 8601 such as "
        "2024-04-19T14:30:00Z, no zone: UTC); also e@TIME: stop before the first record at or after that time"))
    c.add_argument("-c", "--count", type=int, metavar="N", help="stop after N records in all")
    shape = c.add_mutually_exclusive_group()
    shape.add_argument("-f", "--format", default="%s\\n", metavar="FORMAT", help=(
        "output format (kcat's): %%s value, %%k key, %%S/%%K their sizes (-1 for null), %%t topic, %%p partition, "
        "%%o offset, %%T timestamp (ms), %%h headers (k=v,...), %%%%; \\n \\t \\r \\\\ escapes. Default: '%%s\\n'"))
    shape.add_argument("-J", "--json", action="store_true", help=(
        "kcat's JSON envelope, one object per record: topic, partition, offset, tstype, ts, broker (-1), headers "
        "([name, value, ...], when there are any), key, payload (as data when decoded with -s, else as text)"))
    c.add_argument("-e", "--exit", action="store_true", help="exit at the end of the files (always so at rest; accepted for kcat's command lines)")
    c.add_argument("-Z", "--null", action="store_true", help="print NULL for a null key or value (default: nothing)")
    c.add_argument("--isolation", choices=["read_uncommitted", "read_committed"], default="read_uncommitted", help=(
        "read_committed: leave out aborted transactions and everything from the last stable offset on (-N and end "
        "then count from the last stable offset)"))
    c.add_argument("--allow-gaps", action="store_true", help="read on over offsets the files say existed but no .log holds, with a warning")
    add_read_options(c)
    add_crc_options(c)
    add_format_options(c, serdes_flag=True)
    add_tiered_options(c)
    c.set_defaults(func=_command)
