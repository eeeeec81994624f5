"""``kafkalog info``: what a backup holds, one line per topic-partition (``kafka-log-dirs`` and
``kafka-get-offsets`` at rest), from the indexes, the producer snapshot and the last batches."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kafkalog.tools.command import EXIT_IO, EXIT_OK, add_tiered_options, partitions_of

if TYPE_CHECKING:
    from kafkalog.log.plan import PartitionSummary
    from kafkalog.log.source import PartitionFiles

__all__ = ["register", "summary_json"]


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    from datetime import UTC, datetime

    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ms)  # beyond what a datetime holds: the number as Kafka stores it


def summary_json(s: PartitionSummary) -> dict[str, Any]:
    """One partition's line of ``info --json``."""
    return {
        "topic": s.topic,
        "partition": s.partition,
        "dir": s.dir,
        "segments": s.segments,
        "bytes": s.bytes,
        "logStartOffset": s.log_start_offset,
        "firstOffset": s.first_offset,
        "lastOffset": s.last_offset,
        "endOffset": s.end_offset,
        "lastStableOffset": s.last_stable_offset,
        "firstTimestamp": s.first_timestamp,
        "lastTimestamp": s.last_timestamp,
        "openTransactions": [{"producerId": pid, "firstOffset": first} for pid, first in s.open_transactions.items()],
        "dataLoss": [{"start": g.start, "end": g.end, "evidence": g.evidence} for g in s.gaps],
        "problems": s.problems,
    }


_COLUMNS = ("TOPIC", "PART", "SEGS", "BYTES", "START", "END", "FIRST TIME", "LAST TIME", "OPEN TXNS", "PROBLEMS")


def _row(s: PartitionSummary) -> list[str]:
    def num(v: int | None) -> str:
        return "-" if v is None else str(v)

    return [s.topic, str(s.partition), str(s.segments), str(s.bytes), num(s.log_start_offset), num(s.end_offset), _time(s.first_timestamp),
            _time(s.last_timestamp), str(len(s.open_transactions)) if s.open_transactions else "-", "; ".join(s.problems) or "-"]


def _table(rows: list[list[str]], right: frozenset[int] = frozenset({1, 2, 3, 4, 5})) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False))]
        lines.append("  ".join([*cells, r[-1]]).rstrip())
    return "\n".join(lines)


def _command(args: argparse.Namespace) -> int:
    import json

    from kafkalog.errors import LogNotFoundError
    from kafkalog.log.plan import describe

    try:
        partitions = partitions_of(args)
    except LogNotFoundError as e:
        print(f"kafkalog info: {e}", file=sys.stderr)
        return EXIT_IO
    summaries = [describe(p) for p in partitions]
    if args.json:
        formats = {r[0]: r for r in _formats(args, partitions)[1:]} if args.formats else {}
        for s in summaries:
            line = summary_json(s)
            if s.topic in formats:
                _, line["keyFormat"], line["valueFormat"], subjects = formats[s.topic]
                line["subjects"] = [] if subjects == "-" else subjects.split(", ")
            print(json.dumps(line, separators=(",", ":")))
        return EXIT_OK
    print(_table([list(_COLUMNS), *(_row(s) for s in summaries)]))
    if args.formats:
        print()
        print(_table(_formats(args, partitions), right=frozenset()))
    damaged = sum(1 for s in summaries if s.problems)
    records = sum(1 for s in summaries if s.last_offset is not None)
    tail = f", {damaged} with missing or damaged files" if damaged else ""
    print(f"{len(summaries)} partitions, {records} with data{tail}", file=sys.stderr)
    return EXIT_OK


#: records sampled per topic by --formats (its first ones, from its first partition with data)
FORMAT_SAMPLE = 100


def _formats(args: argparse.Namespace, partitions: list[PartitionFiles]) -> list[list[str]]:
    """``--formats``: per topic, what its first records' keys and values hold (:func:`kafkalog.dataset.values.guess_format`)
    and its subjects in the data's Schema Registry topic (``<topic>-key``, ``<topic>-value``, with their versions)."""
    from kafkalog.dataset.registry import Registry
    from kafkalog.dataset.scan import plan_all, read_plans, topic_records
    from kafkalog.dataset.values import guess_format

    registry = Registry.open(topic_records(args.paths, args.schemas_topic)) if args.paths else None
    subjects = registry.subjects() if registry is not None else {}
    rows = [["TOPIC", "KEY FORMAT", "VALUE FORMAT", "SUBJECTS"]]
    for topic in sorted({p.topic for p in partitions}):
        keys: list[bytes | None] = []
        values: list[bytes | None] = []
        for p in plan_all([p for p in partitions if p.topic == topic], allow_gaps=True, on_gap=lambda g: None):
            for b in read_plans([p], columns=["key", "value"]):
                keys += b.column(0).to_pylist()[: FORMAT_SAMPLE - len(keys)]
                values += b.column(1).to_pylist()[: FORMAT_SAMPLE - len(values)]
                if len(keys) >= FORMAT_SAMPLE:
                    break
            if keys:
                break
        subs = [f"{s} (v{', v'.join(map(str, subjects[s]))})" for s in (f"{topic}-key", f"{topic}-value") if s in subjects]
        rows.append([topic, guess_format(keys, registry), guess_format(values, registry), ", ".join(subs) or "-"])
    return rows


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog info`` to the command line."""
    p = sub.add_parser("info", help="one line per topic-partition: offsets, times, open transactions, missing files", description=(
        "What data dirs, partition dirs, globs of them or URLs (s3://bucket/data) hold: for every topic-partition its "
        "segments and bytes, log start offset and end offset (the next offset), the first batch's and the largest "
        "timestamp, its open transactions (from the producer snapshot and the batches after it) and any missing or "
        "damaged files. Reads the indexes, the snapshot and the last batches only, never whole segments. A table, or "
        "one JSON object per partition with --json. Exit 0 whatever the files hold (problems are reported, not "
        "failed on); 3 when a path is missing or holds no partition."))
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--json", action="store_true", help="one JSON object per partition")
    p.add_argument("--formats", action="store_true", help=(
        "also each topic's key and value formats, from its first records (Schema Registry wire format: avro, json, "
        "protobuf, by the schemas in the data's _schemas topic; else string or bytes), and its subjects"))
    p.add_argument("--schemas-topic", default="_schemas", metavar="TOPIC", help="the Schema Registry's topic (default: _schemas)")
    add_tiered_options(p, "as one log: its log start and end offsets across tiers, a hole between segments listed as data loss")
    p.set_defaults(func=_command)
