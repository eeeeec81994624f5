"""``kafkalog cat``: records as text, on kcat's consumer flags (``kcat -C -t orders -p 0 -o -5 -e``),
read from the files at rest.

Keys and values are printed as text: UTF-8 is decoded, and every byte that is not valid UTF-8 and
every control character is escaped (``\\xNN``, ``\\n``, ``\\t``, ...), so a terminal never gets raw
binary and each record stays on its line. There is no new data at rest: the command always ends at
the end of the files; ``-e`` (kcat's "exit at the end") is accepted for kcat's command lines.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalog.tools.command import EXIT_IO, EXIT_OK, UsageError, add_tiered_options, partitions_of
from kafkalog.tools.formats import add_format_options, make_decoding, parse_formats

if TYPE_CHECKING:
    from kafkalog.dataset.values import Decoding

__all__ = ["compile_format", "register", "text"]

#: C0 controls, DEL and C1 controls, escaped so that no record can move the cursor or split a line
_ESCAPES = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]}
_ESCAPES.update({c: f"\\xc2\\x{c:02x}" for c in range(0x80, 0xA0)})  # as their UTF-8 bytes
_ESCAPES.update({0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})


def text(data: bytes | None, null: str = "") -> str:
    """``data`` as one line of text: UTF-8 decoded, other bytes as ``\\xNN``, control characters escaped."""
    if data is None:
        return null
    return data.decode("utf-8", "backslashreplace").translate(_ESCAPES)


def _headers(hs: list[dict[str, Any]] | None, null: str) -> str:
    return ",".join(f"{text(h['key'].encode('utf-8', 'surrogatepass'))}={text(h['value'], null)}" for h in hs or [])


_TOKENS: dict[str, Callable[[dict[str, Any], str], str]] = {
    "s": lambda r, null: r["value_text"] if "value_text" in r else text(r["value"], null),
    "k": lambda r, null: r["key_text"] if "key_text" in r else text(r["key"], null),
    "S": lambda r, null: str(-1 if r["value"] is None else len(r["value"])),
    "K": lambda r, null: str(-1 if r["key"] is None else len(r["key"])),
    "t": lambda r, null: r["topic"],
    "p": lambda r, null: str(r["partition"]),
    "o": lambda r, null: str(r["offset"]),
    "T": lambda r, null: str(r["timestamp"]),
    "h": lambda r, null: _headers(r["headers"], null),
}
_BACKSLASH = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "0": "\0"}
_PART = re.compile(r"%(.)|\\(.)|([^%\\]+)|(.)", re.S)


def compile_format(fmt: str) -> tuple[Callable[[dict[str, Any], str], str], set[str]]:
    """kcat's ``-f`` format as a function of a record (a row dict), and the columns it needs.

    Tokens: ``%s`` value, ``%k`` key, ``%S``/``%K`` their sizes in bytes (-1 for null), ``%t`` topic,
    ``%p`` partition, ``%o`` offset, ``%T`` timestamp (ms), ``%h`` headers (``k=v,k=v``), ``%%``;
    escapes ``\\n``, ``\\t``, ``\\r``, ``\\\\``, ``\\0``. Anything else is a usage error."""
    parts: list[Callable[[dict[str, Any], str], str]] = []
    needs: set[str] = set()
    columns = {"s": "value", "k": "key", "S": "value", "K": "key", "t": "topic", "p": "partition", "o": "offset", "T": "timestamp", "h": "headers"}
    for m in _PART.finditer(fmt):
        token, esc, lit, lone = m.groups()
        if token is not None:
            if token == "%":
                parts.append(lambda r, null: "%")
            elif token in _TOKENS:
                parts.append(_TOKENS[token])
                needs.add(columns[token])
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
    return (lambda r, null: "".join(p(r, null) for p in parts)), needs


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
                start = Start(time=int(v[2:]), stop_time=start.stop_time)
            elif v.startswith("e@"):
                start = Start(start.offset, start.relative, start.time, start.end, int(v[2:]))
            elif v.startswith("-"):
                start = Start(relative=int(v[1:]), stop_time=start.stop_time)
            else:
                start = Start(offset=int(v), stop_time=start.stop_time)
        except ValueError:
            raise UsageError(f"-o {v!r}: give beginning, end, an offset, -N (N before the end), s@MS or e@MS") from None
    return start


def _command(args: argparse.Namespace) -> int:
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafkalog.dataset.scan import plan_all, read_plans
    from kafkalog.errors import LogNotFoundError
    from kafkalog.log.plan import describe

    start = parse_offsets(args.offset or ["beginning"])
    if args.count is not None and args.count < 0:
        raise UsageError(f"-c must be 0 or more, got {args.count}")
    render, needs = compile_format(args.format)
    formats = parse_formats(args)
    if args.json:
        render, needs = _envelope, {"topic", "partition", "offset", "timestamp", "key", "value", "headers"}
    if formats:
        needs |= {"topic", "partition", "offset", *formats}
    topics = set(args.topic) if args.topic else None
    parts = set(args.partition) if args.partition else None
    try:
        files = partitions_of(args, wants=lambda t, p: (topics is None or t in topics) and (parts is None or p in parts))
    except LogNotFoundError as e:
        print(f"kafkalog cat: {e}", file=sys.stderr)
        return EXIT_IO
    if not files:
        print(f"kafkalog cat: no partition of {' '.join(args.paths + ([args.tiered] if args.tiered else []))} matches the -t/-p given", file=sys.stderr)
        return EXIT_IO
    committed = args.isolation == "read_committed"
    starts: dict[tuple[str, int], int] | None = None
    if start.end or start.relative is not None:
        starts = {}
        for pf in files:
            s = describe(pf)
            end = (s.last_stable_offset if committed else s.end_offset) or 0
            # -N never reaches below the log start offset, as a consumer's seek is reset there
            starts[(pf.topic, pf.partition)] = end if start.end else max(s.log_start_offset or 0, end - (start.relative or 0))
    plans = plan_all(files, start_offset=starts if starts is not None else start.offset, start_time=start.time, end_time=start.stop_time,
                     read_committed=committed, allow_gaps=args.allow_gaps,
                     on_gap=lambda g: print(f"kafkalog cat: warning: {g} (--allow-gaps: reading on)", file=sys.stderr))
    columns = [c for c in ("topic", "partition", "offset", "timestamp", "key", "value", "headers") if c in needs]
    left = args.count
    decoding = make_decoding(args, formats, "cat")
    out = sys.stdout
    null = "NULL" if args.null else ""
    for batch in read_plans(plans, columns=columns or ["offset"], read_committed=committed):
        if left is not None:
            if left <= 0:
                break
            batch = batch.slice(0, left)
            left -= batch.num_rows
        if "timestamp" in columns:
            batch = batch.set_column(batch.schema.get_field_index("timestamp"), "timestamp",
                                     pc.divide(batch.column("timestamp").cast(pa.int64()), 1000))
        rows = batch.to_pylist()
        if formats:
            rows = _decoded(rows, decoding)
        for row in rows:
            out.write(render(row, null))
    return EXIT_OK


#: C1 controls, DEL and the line separators as JSON escapes: decoded text printed as JSON keeps each record on its line
_JSON_ESCAPES = {c: f"\\u{c:04x}" for c in [0x7F, *range(0x80, 0xA0), 0x2028, 0x2029]}


def _decoded(rows: list[dict[str, Any]], decoding: Decoding) -> list[dict[str, Any]]:
    """The rows of one batch (one partition) with ``key_text``/``value_text``: the decoded key and
    value as JSON (None as ``null``), or the raw bytes' text when ``--on-undecodable raw`` kept them."""
    from kafkalog.dataset.values import decode_all, json_text

    on_undecodable = decoding.on_undecodable

    if not rows:
        return rows
    topic, partition = rows[0]["topic"], rows[0]["partition"]
    dec = decoding.decoders(topic)
    skip: set[int] = set()
    for role, d in dec.items():
        values, bad = decode_all(d, [r[role] for r in rows], topic=topic, partition=partition, offsets=lambda i: rows[i]["offset"],
                                 on_undecodable=on_undecodable, warn=decoding.warn)
        for i, (r, v) in enumerate(zip(rows, values, strict=True)):
            raw = on_undecodable == "raw" and i in bad
            r[f"{role}_text"] = text(v) if raw else json_text(v).translate(_JSON_ESCAPES)
            r[f"{role}_data"] = text(v) if raw else v
        if on_undecodable == "skip":
            skip.update(bad)
    return [r for i, r in enumerate(rows) if i not in skip]


def _envelope(r: dict[str, Any], null: str) -> str:
    """kcat's -J: one JSON object per record (key and payload decoded when a format is given, else as text)."""
    from kafkalog.dataset.values import json_text

    def field(role: str) -> Any:
        if f"{role}_data" in r:
            return r[f"{role}_data"]
        return None if r[role] is None else text(r[role])

    hs = [x for h in r["headers"] or [] for x in (h["key"], None if h["value"] is None else text(h["value"]))]
    env = {"topic": r["topic"], "partition": r["partition"], "offset": r["offset"], "tstype": "create", "ts": r["timestamp"],
           "broker": -1, "headers": hs, "key": field("key"), "payload": field("value")}
    return json_text(env).translate(_JSON_ESCAPES) + "\n"


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog cat`` to the command line."""
    c = sub.add_parser("cat", help="print records as text, with kcat's consumer flags (-t -p -o -c -f -e)", description=(
        "Print the records of data dirs, partition dirs, globs or URLs as a consumer receives them (no transaction "
        "markers), partition by partition in offset order, one line per record by default (the value). Keys and values "
        "are text: bytes that are not UTF-8 and control characters are escaped (\\xNN, \\n, ...), never printed raw. "
        "Flags as kcat's consumer mode. The files at rest get no new data, so the command always ends at their end; "
        "-e is accepted as kcat's 'exit at the end'."))
    c.add_argument("paths", nargs="*", metavar="PATH")
    c.add_argument("-t", "--topic", action="append", metavar="TOPIC", help="only this topic (repeatable; default: every topic)")
    c.add_argument("-p", "--partition", action="append", type=int, metavar="N", help="only this partition (repeatable; default: all)")
    c.add_argument("-o", "--offset", action="append", metavar="OFFSET", help=(
        "where to start in each partition: beginning (default), end, an offset, -N (N offsets before the end), s@MS "
        "(the first record at or after that timestamp, by the time index); also e@MS: stop before the first record at "
        "or after that timestamp"))
    c.add_argument("-c", "--count", type=int, metavar="N", help="stop after N records in all")
    c.add_argument("-f", "--format", default="%s\\n", metavar="FORMAT", help=(
        "output format (kcat's): %%s value, %%k key, %%S/%%K their sizes (-1 for null), %%t topic, %%p partition, "
        "%%o offset, %%T timestamp (ms), %%h headers (k=v,...), %%%%; \\n \\t \\r \\\\ escapes. Default: '%%s\\n'"))
    c.add_argument("-e", "--exit", action="store_true", help="exit at the end of the files (always so at rest; accepted for kcat's command lines)")
    c.add_argument("-Z", "--null", action="store_true", help="print NULL for a null key or value (default: nothing)")
    c.add_argument("--isolation", choices=["read_uncommitted", "read_committed"], default="read_uncommitted", help=(
        "read_committed: leave out aborted transactions and everything from the last stable offset on (-N and end "
        "then count from the last stable offset)"))
    c.add_argument("--allow-gaps", action="store_true", help="read on over offsets the files say existed but no .log holds, with a warning")
    c.add_argument("-J", dest="json", action="store_true", help=(
        "kcat's JSON envelope: one object per record with topic, partition, offset, tstype, ts, broker (-1: at rest), "
        "headers, key and payload (decoded with -s, else as text)"))
    add_format_options(c, serdes_flag=True)
    add_tiered_options(c)
    c.set_defaults(func=_command)
