"""``kafkalog compact``: one pass of Kafka's log cleaner over partition directories at rest.

Each partition is opened as a broker opens it (recovery point and log start offset from the data
dir's checkpoints, the clock at ``--now-ms``), cleaned by :func:`kafkalog.log.cleaner.compact` when it
is dirty enough, then given retention as Kafka's cleaner thread does after each pass
(``deleteOldSegments`` on every compacted log: segments below the log start offset, and with
``cleanup.policy=compact,delete`` retention.bytes and retention.ms too), closed cleanly, and the data dir's ``cleaner-offset-checkpoint``,
``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` are written back.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

from kafkalog.errors import KafkaLogError
from kafkalog.format.releases import parse_version
from kafkalog.log.cleaner import CleanerConfig, CompactResult, compact
from kafkalog.log.retention import delete_old_segments
from kafkalog.log.unified import Log, checkpoint_log_dir
from kafkalog.tools.command import EXIT_BAD_DATA, EXIT_OK, EXIT_USAGE, writer_version_arg
from kafkalog.tools.maintenance import _CONFIG_HELP, PartitionDir, _config, _partitions
from kafkalog.tools.maintenance import _describe as _describe_retention

__all__ = ["register"]

#: CLI option -> LogConfig field it overrides
_OVERRIDES = {
    "min_cleanable_dirty_ratio": "min_cleanable_dirty_ratio",
    "min_compaction_lag_ms": "min_compaction_lag_ms",
    "max_compaction_lag_ms": "max_compaction_lag_ms",
    "delete_retention_ms": "delete_retention_ms",
    "segment_bytes": "segment_bytes",
    "segment_index_bytes": "segment_index_bytes",
    "index_interval_bytes": "index_interval_bytes",
    "file_delete_delay_ms": "file_delete_delay_ms",
}


def _describe(p: PartitionDir, r: CompactResult, min_ratio: float, dry_run: bool) -> str:
    t = r.to_clean
    ratio = t.cleanable_ratio
    head = f"{p.path}: dirty offsets [{t.first_dirty_offset}, {t.first_uncleanable_offset}), {t.cleanable_bytes} of {t.total_bytes} bytes dirty"
    head += f" (ratio {ratio:.3f})" if ratio == ratio else ""
    if r.cleaned is None:
        if dry_run:
            return head + (": would be cleaned" if t.should_clean(min_ratio) else f": would not be cleaned (min.cleanable.dirty.ratio {min_ratio})")
        return head + f": not cleaned (min.cleanable.dirty.ratio {min_ratio}, nothing forced by max.compaction.lag.ms)"
    c = r.cleaned
    groups = "; ".join(
        f"segments {','.join(str(b) for b in g.replaced)} -> {g.base_offset} ({g.bytes_read} -> {g.bytes_written} bytes, "
        f"{g.messages_read} -> {g.messages_written} records)" for g in c.groups
    )
    return f"{head}: cleaned {len(c.groups)} group(s): {groups}; next dirty offset {c.end_offset}"


def _cmd_compact(args: argparse.Namespace) -> int:
    base = _config(args, "compact")
    if base is None:
        return EXIT_USAGE
    overrides = {field: getattr(args, opt) for opt, field in _OVERRIDES.items() if getattr(args, opt) is not None}
    overrides["kafka_version"] = parse_version(args.kafka_version)
    if not any(item.partition("=")[0].strip() == "cleanup.policy" for item in args.config or []):
        overrides["cleanup_policy"] = ("compact",)  # not Kafka's topic default (delete): retention only when asked for
    elif "compact" not in base.cleanup_policy:
        overrides["cleanup_policy"] = (*base.cleanup_policy, "compact")
    try:
        config = dataclasses.replace(base, **overrides)
        cleaner_config = CleanerConfig(**({"dedupe_buffer_size": args.dedupe_buffer_size} if args.dedupe_buffer_size else {}))
    except ValueError as e:
        print(f"kafkalog compact: {e}", file=sys.stderr)
        return EXIT_USAGE
    if not 0 <= config.min_cleanable_dirty_ratio <= 1:
        print(f"kafkalog compact: min.cleanable.dirty.ratio must be in [0, 1], got {config.min_cleanable_dirty_ratio}", file=sys.stderr)
        return EXIT_USAGE
    now = args.now_ms if args.now_ms is not None else time.time_ns() // 1_000_000
    parts, code = _partitions(args.dirs, "compact")
    if code:
        return code
    status = EXIT_OK
    by_data_dir: dict[str, list[Log]] = {}
    for p in parts:
        try:
            # a dry run reads only: the load happens in memory and no checkpoint is written
            lg = Log.open(p.path, config, log_start_offset=p.log_start_offset or 0, recovery_point=p.recovery_point, clock=lambda: now, writable=not args.dry_run)
            try:
                result = compact(lg, now, cleaner_config=cleaner_config, force=args.force, dry_run=args.dry_run)
                retention = delete_old_segments(lg, now, dry_run=args.dry_run)  # LogCleaner: deletableLogs after the pass
            finally:
                lg.close()
            if not args.dry_run:
                by_data_dir.setdefault(p.data_dir, []).append(lg)
        except KafkaLogError as e:
            print(f"kafkalog compact: {e}", file=sys.stderr)
            status = EXIT_BAD_DATA
            continue
        if args.json:
            print(json.dumps({"dir": p.path, **result.to_json(), "retention": retention.to_json()}, separators=(",", ":")))
        else:
            print(_describe(p, result, config.min_cleanable_dirty_ratio, args.dry_run))
            if retention.changed:
                print(_describe_retention(p, retention))
    for data_dir, logs in by_data_dir.items():
        checkpoint_log_dir(data_dir, logs)
    return status


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``compact`` sub-command to the ``kafkalog`` parser."""
    c = sub.add_parser("compact", help="compact partition directories as Kafka's log cleaner does", description=(
        "Run one pass of Kafka's log cleaner over partition directories or whole data dirs: the dirty range runs from "
        "the data dir's cleaner-offset-checkpoint entry (else the log start offset) to the first uncleanable offset "
        "(active segment, last stable offset, min.compaction.lag.ms); a log is cleaned when its dirty ratio exceeds "
        "min.cleanable.dirty.ratio or max.compaction.lag.ms has passed (or with --force). Cleaning keeps each key's "
        "latest record, stamps tombstones and emptied transactions' markers with a delete horizon (now + "
        "delete.retention.ms) and removes them once it has passed, drops aborted data, and swaps the cleaned segments "
        "in through .cleaned -> .swap -> final renames. After the pass, as Kafka's cleaner thread, it deletes segments "
        "below the log start offset and, with cleanup.policy=compact,delete (--config), those past retention.bytes "
        "or retention.ms. Options default to Kafka's topic defaults."))
    c.add_argument("dirs", nargs="+", metavar="DIR")
    c.add_argument("--now-ms", type=int, metavar="MS", help="the cleaner's clock in ms since the epoch (default: now)")
    c.add_argument("--min-cleanable-dirty-ratio", type=float, metavar="R", help="min.cleanable.dirty.ratio (default 0.5)")
    c.add_argument("--min-compaction-lag-ms", type=int, metavar="N", help="min.compaction.lag.ms (default 0)")
    c.add_argument("--max-compaction-lag-ms", type=int, metavar="N", help="max.compaction.lag.ms (default: no limit)")
    c.add_argument("--delete-retention-ms", type=int, metavar="N", help="delete.retention.ms (default 86400000)")
    c.add_argument("--segment-bytes", type=int, metavar="N", help="segment.bytes, the size limit of a group of cleaned segments")
    c.add_argument("--segment-index-bytes", type=int, metavar="N", help="segment.index.bytes (default 10485760)")
    c.add_argument("--index-interval-bytes", type=int, metavar="N", help="index.interval.bytes of the rewritten indexes (default 4096)")
    c.add_argument("--file-delete-delay-ms", type=int, metavar="N", help="file.delete.delay.ms (default 60000; 0: remove at once)")
    c.add_argument("--dedupe-buffer-size", type=int, metavar="BYTES", help="the offset map's memory (log.cleaner.dedupe.buffer.size, default 134217728)")
    c.add_argument("--config", action="append", metavar="KEY=VALUE", help=_CONFIG_HELP)
    c.add_argument("--kafka-version", type=writer_version_arg, metavar="X.Y[.Z]", help=(
        "the Kafka release whose cleaner to follow (4.0 to 4.4, or a patch release; default: the newest): from 4.0.1 the "
        "cleaned segments' indexes get an entry per batch (KAFKA-806), from 4.4 an emptied batch is kept for its offset "
        "only at the high watermark (KAFKA-20452)"))
    c.add_argument("--force", action="store_true", help="clean whatever is dirty, whatever the dirty ratio")
    c.add_argument("--dry-run", action="store_true", help="print the dirty range and ratio without cleaning")
    c.add_argument("--json", action="store_true", help="one JSON object per partition")
    c.set_defaults(func=_cmd_compact)
