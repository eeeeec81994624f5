"""``kafkalog info``: what a backup holds, one line per topic-partition (``kafka-log-dirs`` and
``kafka-get-offsets`` at rest), or per topic with ``--by topic``, from the indexes, the producer
snapshot and the last batches."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from kafkalog.tools.command import (
    EXIT_IO,
    EXIT_OK,
    add_read_options,
    add_tiered_options,
    partition_filter,
    partitions_of,
)
from kafkalog.tools.jobs import add_jobs_option

if TYPE_CHECKING:
    from kafkalog.log.plan import PartitionSummary
    from kafkalog.log.source import PartitionFiles

__all__ = ["MIN_PARALLEL_PARTITIONS", "register", "summarize", "summary_json", "topic_totals"]


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


def _num(v: int | None, segments: int = 0) -> str:
    """A number; ``-`` when there is none (no segment), ``?`` when there are segments but it could not be read."""
    return str(v) if v is not None else "?" if segments else "-"


def _row(s: PartitionSummary, copies: bool) -> list[str]:
    several = [str(len(s.copies)), s.copies[0] if s.copies else s.dir] if copies else []
    return [s.topic, str(s.partition), *several, str(s.segments), str(s.bytes), _num(s.log_start_offset), _num(s.end_offset, s.segments),
            _time(s.first_timestamp), _time(s.last_timestamp), str(len(s.open_transactions)) if s.open_transactions else "-",
            "; ".join(s.problems) or "-"]


def topic_totals(summaries: list[PartitionSummary]) -> list[dict[str, Any]]:
    """One entry per topic (``info --by topic``, in topic order): its partitions, segments and bytes
    summed, ``offsets`` the sum of each partition's end offset minus its log start offset (the
    offsets a consumer reading from the start goes through; None when a partition's end is not
    known), the first and the largest timestamp over its partitions, the open transactions summed
    and how many partitions have problems."""
    by: dict[str, list[PartitionSummary]] = {}
    for s in summaries:
        by.setdefault(s.topic, []).append(s)
    out = []
    for topic, parts in sorted(by.items()):
        spans = [None if s.end_offset is None else s.end_offset - (s.log_start_offset or 0) for s in parts if s.segments]
        firsts = [s.first_timestamp for s in parts if s.first_timestamp is not None]
        lasts = [s.last_timestamp for s in parts if s.last_timestamp is not None]
        out.append({
            "topic": topic,
            "partitions": len(parts),
            "segments": sum(s.segments for s in parts),
            "bytes": sum(s.bytes for s in parts),
            "offsets": None if None in spans else sum(spans),  # type: ignore[arg-type]
            "firstTimestamp": min(firsts, default=None),
            "lastTimestamp": max(lasts, default=None),
            "openTransactions": sum(len(s.open_transactions) for s in parts),
            "partitionsWithProblems": sum(1 for s in parts if s.problems),
        })
    return out


_TOPIC_COLUMNS = ("TOPIC", "PARTS", "SEGS", "BYTES", "OFFSETS", "FIRST TIME", "LAST TIME", "OPEN TXNS", "PROBLEMS")


def _topic_row(t: dict[str, Any]) -> list[str]:
    bad = t["partitionsWithProblems"]
    return [t["topic"], str(t["partitions"]), str(t["segments"]), str(t["bytes"]), _num(t["offsets"], t["segments"]),
            _time(t["firstTimestamp"]), _time(t["lastTimestamp"]), str(t["openTransactions"] or "-"),
            f"{bad} partition{'s' * (bad != 1)} with problems" if bad else "-"]


def _table(rows: list[list[str]], right: frozenset[int] | None = None) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    if right is None:  # the number columns: --by topic's, a partition's, or a partition's with COPIES and MOST COMPLETE after PART
        right = frozenset({1, 2, 3, 4} if rows[0][1] == "PARTS" else {1, 2, 3, 4, 5} if len(rows[0]) == len(_COLUMNS) else {1, 2, 4, 5, 6, 7})
    lines = []
    for r in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=False))]
        lines.append("  ".join([*cells, r[-1]]).rstrip())
    return "\n".join(lines)


def _command(args: argparse.Namespace) -> int:
    import json

    from kafkalog.errors import LogNotFoundError

    try:
        found = partitions_of(args)
    except LogNotFoundError as e:
        print(f"kafkalog info: {e}", file=sys.stderr)
        return EXIT_IO
    wanted = partition_filter(args)
    partitions = [p for p in found if wanted(p.topic, p.partition)]
    if not found:
        print(f"kafkalog info: no partition of {' '.join(args.paths + ([args.tiered] if args.tiered else []))} matches the -t/-p given",
              file=sys.stderr)
        return EXIT_IO
    summaries = summarize(partitions, args.jobs)
    by_topic = topic_totals(summaries) if args.by == "topic" else None
    if args.json:
        formats = {r[0]: r for r in _formats(args, partitions)[1:]} if args.formats else {}
        for obj in by_topic if by_topic is not None else map(summary_json, summaries):
            if obj["topic"] in formats:
                _, obj["keyFormat"], obj["valueFormat"], subjects = formats[obj["topic"]]
                obj["subjects"] = [] if subjects == "-" else subjects.split(", ")
            print(json.dumps(obj, separators=(",", ":")))
        return EXIT_OK
    if by_topic is not None:
        print(_table([list(_TOPIC_COLUMNS), *(_topic_row(t) for t in by_topic)]))
    else:
        # with copies of a partition in several directories (replicas), how many and the most complete one
        copies = any(len(s.copies) > 1 for s in summaries)
        head = [*_COLUMNS[:2], "COPIES", "MOST COMPLETE", *_COLUMNS[2:]] if copies else list(_COLUMNS)
        print(_table([head, *(_row(s, copies) for s in summaries)]))
    if args.formats:
        print()
        print(_table(_formats(args, partitions), right=frozenset()))
    damaged = sum(1 for s in summaries if s.problems)
    records = sum(1 for s in summaries if s.last_offset is not None)
    tail = f", {damaged} with missing or damaged files" if damaged else ""
    if left_out := len(found) - len(partitions):
        tail += f"; {left_out} partitions of Kafka's internal topics not shown (--include-internal shows them)"
    print(f"{len(summaries)} partitions, {records} with data{tail}", file=sys.stderr)
    return EXIT_OK


#: Partitions below which ``info`` stays in one process: taking one's inventory costs about a
#: millisecond, starting worker processes a few hundred.
MIN_PARALLEL_PARTITIONS = 1000


def _describe_all(partitions: list[PartitionFiles]) -> list[PartitionSummary]:
    from kafkalog.log.plan import describe

    return [describe(p) for p in partitions]


def summarize(partitions: list[PartitionFiles], jobs: int = 1) -> list[PartitionSummary]:
    """Each partition's inventory (:func:`kafkalog.log.plan.describe`), in order; with ``jobs`` above
    1 and at least :data:`MIN_PARALLEL_PARTITIONS` partitions, taken by that many worker processes,
    a run of partitions at a time (the same summaries)."""
    from kafkalog.tools.jobs import crosses_processes, ordered_map, runs, span

    if jobs <= 1 or len(partitions) < max(2, MIN_PARALLEL_PARTITIONS) or not crosses_processes(partitions[0]):
        return _describe_all(partitions)
    tasks = runs(partitions, [1] * len(partitions), jobs)
    return [s for run in ordered_map(_describe_all, tasks, jobs, names=lambda i: span([p.display() for p in tasks[i]]),
                                     preload=["kafkalog.log.plan"]) for s in run]


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
        "damaged files. Folders are searched at any depth; a partition found in several directories (its replicas "
        "under each broker's data dir) is one line, read as one log (SPEC 6.9), with its number of COPIES, the MOST "
        "COMPLETE one and any replica divergence. Kafka's internal topics are left out unless --include-internal or "
        "named with -t, as the other readers leave them out. Reads the indexes, the snapshot and the last batches only, "
        "never whole segments (with copies, every batch header, to compare them). A table (a line per topic with --by "
        "topic), or one JSON object per line with --json; ? for an offset that cannot be read. Exit 0 whatever the "
        "files hold (problems are reported, not failed on); 3 when a path is missing or holds no partition (or none "
        "the -t/-p given)."))
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("-t", "--topic", action="append", metavar="TOPIC", help="only this topic (repeatable; default: every topic)")
    p.add_argument("-p", "--partition", action="append", type=int, metavar="N", help="only this partition (repeatable; default: all)")
    p.add_argument("--by", choices=["partition", "topic"], default="partition", help=(
        "partition (default): a line per topic-partition; topic: a line per topic, its partitions summed (partitions, "
        "segments, bytes, offsets from log start to end, first and last time, open transactions, partitions with problems)"))
    p.add_argument("--json", action="store_true", help="one JSON object per line (per partition, or per topic with --by topic)")
    p.add_argument("--formats", action="store_true", help=(
        "also each topic's key and value formats, from its first records (Schema Registry wire format: avro, json, "
        "protobuf, by the schemas in the data's _schemas topic; else string or bytes), and its subjects"))
    p.add_argument("--schemas-topic", default="_schemas", metavar="TOPIC", help="the Schema Registry's topic (default: _schemas)")
    add_read_options(p, deleted=False)
    add_tiered_options(p, "as one log: its log start and end offsets across tiers, a hole between segments listed as data loss")
    add_jobs_option(p, "partitions", small="fewer than 1000 partitions")
    p.set_defaults(func=_command)
