"""``kafkalog info``: what a backup holds, one line per topic-partition (``kafka-log-dirs`` and
``kafka-get-offsets`` at rest), from the indexes, the producer snapshot and the last batches."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kafkalog.tools.command import EXIT_IO, EXIT_OK, add_tiered_options, partitions_of

if TYPE_CHECKING:
    from kafkalog.log.plan import PartitionSummary

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
    """One partition's line of ``info --json`` (``copies``, ``mostComplete`` and ``divergence`` for a
    partition read from several directories)."""
    from kafkalog.log.gaps import Divergence

    several = {
        "copies": s.copies,
        "mostComplete": s.copies[0],
        "divergence": [{"start": g.start, "end": g.end, "copies": [g.directory, g.other], "kept": g.kept, "evidence": g.evidence}
                       for g in s.gaps if isinstance(g, Divergence)],
    } if len(s.copies) > 1 else {}
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
        "dataLoss": [{"start": g.start, "end": g.end, "evidence": g.evidence} for g in s.gaps if not isinstance(g, Divergence)],
        **several,
        "problems": s.problems,
    }


_COLUMNS = ("TOPIC", "PART", "SEGS", "BYTES", "START", "END", "FIRST TIME", "LAST TIME", "OPEN TXNS", "PROBLEMS")


def _row(s: PartitionSummary, copies: bool) -> list[str]:
    def num(v: int | None) -> str:
        return "-" if v is None else str(v)

    several = [str(len(s.copies)), s.copies[0] if s.copies else s.dir] if copies else []
    return [s.topic, str(s.partition), *several, str(s.segments), str(s.bytes), num(s.log_start_offset), num(s.end_offset), _time(s.first_timestamp),
            _time(s.last_timestamp), str(len(s.open_transactions)) if s.open_transactions else "-", "; ".join(s.problems) or "-"]


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    right = {1, 2, 3, 4, 5} if len(rows[0]) == len(_COLUMNS) else {1, 2, 4, 5, 6, 7}
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
        for s in summaries:
            print(json.dumps(summary_json(s), separators=(",", ":")))
        return EXIT_OK
    # with copies of a partition in several directories (replicas), how many and the most complete one
    copies = any(len(s.copies) > 1 for s in summaries)
    head = [*_COLUMNS[:2], "COPIES", "MOST COMPLETE", *_COLUMNS[2:]] if copies else list(_COLUMNS)
    print(_table([head, *(_row(s, copies) for s in summaries)]))
    damaged = sum(1 for s in summaries if s.problems)
    records = sum(1 for s in summaries if s.last_offset is not None)
    tail = f", {damaged} with missing or damaged files" if damaged else ""
    print(f"{len(summaries)} partitions, {records} with data{tail}", file=sys.stderr)
    return EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog info`` to the command line."""
    p = sub.add_parser("info", help="one line per topic-partition: offsets, times, open transactions, missing files", description=(
        "What data dirs, partition dirs, globs of them or URLs (s3://bucket/data) hold: for every topic-partition its "
        "segments and bytes, log start offset and end offset (the next offset), the first batch's and the largest "
        "timestamp, its open transactions (from the producer snapshot and the batches after it) and any missing or "
        "damaged files. Folders are searched at any depth; a partition found in several directories (its replicas "
        "under each broker's data dir) is one line, read as one log (SPEC 6.9), with its number of COPIES, the MOST "
        "COMPLETE one and any replica divergence. Reads the indexes, the snapshot and the last batches only, never whole "
        "segments (with copies, every batch header, to compare them). A table, or "
        "one JSON object per partition with --json. Exit 0 whatever the files hold (problems are reported, not "
        "failed on); 3 when a path is missing or holds no partition."))
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--json", action="store_true", help="one JSON object per partition")
    add_tiered_options(p, "as one log: its log start and end offsets across tiers, a hole between segments listed as data loss")
    p.set_defaults(func=_command)
