"""``kafkalog retention`` and ``kafkalog recover``: what a broker does to its log dirs, run on a directory at rest.

Both take partition directories or whole data dirs (every ``<topic>-<partition>`` directory in
them; ``-delete``, ``-future`` and ``-stray`` directories are left alone), read the data dir's
``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint`` as LogManager does, open
each partition as a :class:`~kafkalog.log.unified.Log`, close it cleanly and write both checkpoints back.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field

from kafkalog.errors import KafkaLogError, OffsetOutOfRangeError
from kafkalog.format.checkpoints import read_offset_checkpoint
from kafkalog.format.files import FileKind, kind_of, segment_file_name
from kafkalog.format.index import base_offset_of
from kafkalog.log.leftovers import COMPLETE, Leftover, local_load_plan
from kafkalog.log.plan import scan_headers
from kafkalog.log.retention import (
    RetentionResult,
    delete_old_segments,
    plan_retention,
    segment_infos_of_dir,
)
from kafkalog.log.unified import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    Log,
    LogConfig,
    checkpoint_log_dir,
    parse_topic_partition,
)
from kafkalog.tools.command import EXIT_BAD_DATA, EXIT_IO, EXIT_OK, EXIT_USAGE

__all__ = ["Cut", "PartitionDir", "RecoveryReport", "find_partitions", "plan_recovery", "recover_partition", "register"]

_SPECIAL_DIR_SUFFIXES = ("-delete", "-future", "-stray")
_TEMP_SUFFIXES = (".deleted", ".cleaned", ".swap")
_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")


@dataclass(frozen=True)
class PartitionDir:
    """A partition directory with the offsets its data dir's checkpoints hold for it (None when absent)."""

    path: str
    data_dir: str
    topic_partition: tuple[str, int]
    log_start_offset: int | None
    recovery_point: int | None


def _is_partition_name(name: str) -> bool:
    return parse_topic_partition(name) is not None and not any(name.endswith(s) for s in _SPECIAL_DIR_SUFFIXES)


def _checkpoint(data_dir: str, name: str) -> dict[tuple[str, int], int]:
    path = os.path.join(data_dir, name)
    return read_offset_checkpoint(path) if os.path.isfile(path) else {}


class NoPartitionsError(ValueError):
    """A directory that is neither a partition directory nor a data dir holding one."""


def find_partitions(path: str) -> list[PartitionDir]:
    """The partition directories of ``path``: itself when it is one, else its ``<topic>-<partition>`` children.

    Raises FileNotFoundError when ``path`` is not a directory, :class:`NoPartitionsError` when it holds no partition."""
    path = os.path.normpath(path)
    if not os.path.isdir(path):
        raise FileNotFoundError(path)
    children = sorted(n for n in os.listdir(path) if os.path.isdir(os.path.join(path, n)) and _is_partition_name(n))
    if children:
        dirs, data_dir = [os.path.join(path, n) for n in children], path
    elif _is_partition_name(os.path.basename(path)):
        dirs, data_dir = [path], os.path.dirname(os.path.abspath(path))
    else:
        raise NoPartitionsError(f"{path} is neither a partition directory (<topic>-<partition>) nor a data dir holding some")
    starts = _checkpoint(data_dir, LOG_START_OFFSET_CHECKPOINT)
    recovery = _checkpoint(data_dir, RECOVERY_POINT_CHECKPOINT)
    out = []
    for d in dirs:
        tp = parse_topic_partition(d)
        assert tp is not None
        out.append(PartitionDir(d, data_dir, tp, starts.get(tp), recovery.get(tp)))
    return out


def _open(p: PartitionDir, config: LogConfig, *, clean: bool) -> Log:
    return Log.open(p.path, config, log_start_offset=p.log_start_offset or 0, recovery_point=p.recovery_point, had_clean_shutdown=clean, writable=True)


# ------------------------------------------------------------------------------------ retention
def _log_end_offset_of_dir(p: PartitionDir, bases: list[int]) -> int:
    from kafkalog.format.records.stream import LogReader

    if not bases:
        return p.log_start_offset or 0
    end = bases[-1]
    with LogReader(os.path.join(p.path, segment_file_name(bases[-1], ".log"))) as reader:
        for b in reader.batches():
            end = b.last_offset + 1
    return end


def _plan_dry(p: PartitionDir, config: LogConfig, now_ms: int, log_start_offset: int | None) -> RetentionResult:
    """What retention would do, read from the files without opening (and so changing) the directory."""
    infos = segment_infos_of_dir(p.path)
    leo = _log_end_offset_of_dir(p, [i.base_offset for i in infos])
    lso = before = max(p.log_start_offset or 0, infos[0].base_offset if infos else 0)
    if log_start_offset is not None:
        if log_start_offset > leo:
            raise OffsetOutOfRangeError(f"cannot move the log start offset to {log_start_offset}: the log ends at {leo}", file=p.path, offset=log_start_offset)
        lso = max(lso, log_start_offset)
    passes = plan_retention(infos, log_start_offset=lso, log_end_offset=leo, high_watermark=leo, config=config, now_ms=now_ms)
    return RetentionResult(now_ms, before, passes[-1].log_start_offset if passes else lso, passes, dry_run=True)


def _describe(p: PartitionDir, r: RetentionResult) -> str:
    segs = r.deleted_segments
    if not r.changed:
        return f"{p.path}: nothing to delete (log start offset {r.log_start_offset})"
    verb = "would delete" if r.dry_run else "deleted"
    why = ", ".join(f"{p_.reason.value}: {len(p_.segments)}" for p_ in r.passes)
    rolled = [p_.rolled for p_ in r.passes if p_.rolled is not None]
    text = f"{p.path}: {verb} {len(segs)} segment(s), {sum(s.size for s in segs)} bytes ({why or 'none'})"
    if rolled:
        text += f"; rolled an empty segment at {rolled[0]} first"
    text += f"; log start offset {r.log_start_offset_before} -> {r.log_start_offset}"
    pending = sum(len(x.paths) for x in r.pending)
    if pending:
        text += f"; {pending} .deleted file(s) wait for file.delete.delay.ms (removed at the next open)"
    return text


def _config(args: argparse.Namespace, command: str) -> LogConfig | None:
    """LogConfig from ``--config KEY=VALUE`` (Kafka topic property names); None after a usage message."""
    props: dict[str, object] = {}
    for item in args.config or []:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"kafkalog {command}: --config takes KEY=VALUE, got {item!r}", file=sys.stderr)
            return None
        props[key.strip()] = value.strip()
    try:
        return LogConfig.from_properties(props)
    except ValueError as e:
        print(f"kafkalog {command}: {e}", file=sys.stderr)
        return None


def _cmd_retention(args: argparse.Namespace) -> int:
    base = _config(args, "retention")
    if base is None:
        return EXIT_USAGE
    overrides = {k: v for k, v in (("retention_ms", args.retention_ms), ("retention_bytes", args.retention_bytes),
                                   ("file_delete_delay_ms", args.file_delete_delay_ms)) if v is not None}
    config = dataclasses.replace(base, **overrides)
    now = args.now_ms if args.now_ms is not None else time.time_ns() // 1_000_000
    parts, code = _partitions(args.dirs, "retention")
    if code:
        return code
    if args.log_start_offset is not None and len(parts) != 1:
        print("kafkalog retention: --log-start-offset needs exactly one partition directory", file=sys.stderr)
        return EXIT_USAGE
    status = EXIT_OK
    by_data_dir: dict[str, list[Log]] = {}
    for p in parts:
        try:
            if args.dry_run:
                result = _plan_dry(p, config, now, args.log_start_offset)
            else:
                log = _open(p, config, clean=True)
                try:
                    before = log.log_start_offset
                    if args.log_start_offset is not None:
                        log.maybe_increment_log_start_offset(args.log_start_offset)
                    result = delete_old_segments(log, now)
                    result.log_start_offset_before = before  # as it was before --log-start-offset moved it
                finally:
                    log.close()
                by_data_dir.setdefault(p.data_dir, []).append(log)
        except OffsetOutOfRangeError as e:
            print(f"kafkalog retention: {e}", file=sys.stderr)
            return EXIT_USAGE
        except KafkaLogError as e:
            print(f"kafkalog retention: {e}", file=sys.stderr)
            status = EXIT_BAD_DATA
            continue
        if args.json:
            print(json.dumps({"dir": p.path, **result.to_json()}, separators=(",", ":")))
        else:
            print(_describe(p, result))
    for data_dir, logs in by_data_dir.items():
        checkpoint_log_dir(data_dir, logs)
    return status


# ------------------------------------------------------------------------------------- recovery
@dataclass(frozen=True)
class Cut:
    """What recovery cuts from one ``.log`` (LogSegment.recover truncates a segment at its first
    invalid batch; LogLoader.recoverLog then deletes every later segment it was recovering):
    ``bytes`` from byte ``position`` to the end (``deleted``: the whole segment), first the offset
    the log then ends at (``from_offset``), and what the headers of the cut batches say: their
    number, their records (v2 header counts, a v0/v1 entry as one) and their last offset (None when
    no header can be framed)."""

    file: str
    position: int
    bytes: int
    from_offset: int
    batches: int
    records: int
    last_offset: int | None
    deleted: bool

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "position": self.position, "bytes": self.bytes, "fromOffset": self.from_offset,
                "batches": self.batches, "records": self.records, "lastOffset": self.last_offset, "deleted": self.deleted}

    def describe(self, verb: str) -> str:
        """``verb`` ("truncated", "would truncate"): where, and what the cut held."""
        what = "deleted" if verb == "truncated" else "would delete"
        head = f"{what} {self.file}" if self.deleted else f"{verb} {self.file} at offset {self.from_offset}, position {self.position}"
        if self.last_offset is None:
            return f"{head}: {self.bytes} bytes, no whole batch header in them (a torn or unreadable tail)"
        return f"{head}: {self.bytes} bytes, {self.records} records in {self.batches} batches, offsets {self.from_offset}..{self.last_offset}"


@dataclass
class RecoveryReport:
    """What opening a partition directory as after an unclean shutdown changed on disk (or, with
    ``dry_run``, would change): the cuts, what became of leftovers of interrupted operations, and
    every file changed."""

    dir: str
    recovery_point: int
    log_start_offset: int = 0
    log_end_offset: int = 0
    segments: int = 0
    dry_run: bool = False
    cuts: list[Cut] = field(default_factory=list)
    leftovers: list[Leftover] = field(default_factory=list)
    truncated: dict[str, tuple[int, int]] = field(default_factory=dict)
    deleted_segments: list[str] = field(default_factory=list)
    deleted_temp_files: list[str] = field(default_factory=list)
    deleted_files: list[str] = field(default_factory=list)
    rebuilt_indexes: list[str] = field(default_factory=list)
    created_files: list[str] = field(default_factory=list)

    @property
    def truncated_bytes(self) -> int:
        """Bytes cut from ``.log`` files that survived."""
        return sum(before - after for before, after in self.truncated.values())

    @property
    def changed(self) -> bool:
        return bool(self.cuts or self.leftovers or self.truncated or self.deleted_segments or self.deleted_temp_files or self.deleted_files
                    or self.rebuilt_indexes)

    def to_json(self) -> dict[str, object]:
        return {
            "dir": self.dir, "dryRun": self.dry_run, "recoveryPoint": self.recovery_point, "logStartOffset": self.log_start_offset,
            "logEndOffset": self.log_end_offset, "segments": self.segments,
            "cuts": [c.to_json() for c in self.cuts],
            "leftovers": [{"file": a.name, "action": a.action, "renamedTo": a.target, "why": a.reason} for a in self.leftovers],
            "truncatedBytes": self.truncated_bytes,
            "truncated": [{"file": n, "sizeBefore": b, "sizeAfter": a} for n, (b, a) in sorted(self.truncated.items())],
            "deletedSegments": self.deleted_segments, "deletedTempFiles": self.deleted_temp_files,
            "deletedFiles": self.deleted_files, "rebuiltIndexes": self.rebuilt_indexes, "createdFiles": self.created_files,
        }


def _state(d: str) -> dict[str, tuple[int, bytes | None]]:
    """name -> (size, digest of the content without trailing zero bytes, for index files)."""
    out: dict[str, tuple[int, bytes | None]] = {}
    for name in os.listdir(d):
        path = os.path.join(d, name)
        if not os.path.isfile(path):
            continue
        digest = None
        if name.endswith(_INDEX_SUFFIXES):
            with open(path, "rb") as f:
                digest = hashlib.sha256(f.read().rstrip(b"\0")).digest()  # a preallocated tail is not content
        out[name] = (os.path.getsize(path), digest)
    return out


def _cut_of(path: str, shown: str, position: int, from_offset: int, deleted: bool) -> Cut:
    """What the bytes of ``path`` from ``position`` on hold, by their batch headers (framing only:
    the first of them is the invalid batch), up to the first that cannot be framed."""
    size = os.path.getsize(path)
    batches = records = 0
    last: int | None = None
    with open(path, "rb") as f, contextlib.suppress(KafkaLogError):
        for h in scan_headers(f, path, position, size):
            batches, records, last = batches + 1, records + h.records, h.last_offset
    return Cut(shown, position, size - position, from_offset, batches, records, last, deleted)


def plan_recovery(p: PartitionDir, config: LogConfig | None = None) -> RecoveryReport:
    """What :func:`recover_partition` would do to ``p``, from a read-only load of it as after an
    unclean shutdown (nothing is written): the leftovers of interrupted operations handled as
    LogLoader handles them, then each cut, by segment."""
    plan = local_load_plan(p.path)
    served = plan.served if plan is not None else {n: n for n in sorted(os.listdir(p.path))}
    with Log.open(p.path, config or LogConfig(), log_start_offset=p.log_start_offset or 0, recovery_point=p.recovery_point,
                  had_clean_shutdown=False) as lg:
        kept = {s.base_offset: s for s in lg.segments}
        rep = RecoveryReport(p.path, p.recovery_point or 0, lg.log_start_offset, lg.log_end_offset, len(lg.segments), dry_run=True,
                             leftovers=list(plan.actions) if plan is not None else [])
        end = lg.log_end_offset
        for name, held in served.items():
            if kind_of(name) is not FileKind.LOG:
                continue
            path = os.path.join(p.path, held)
            seg = kept.get(base_offset_of(name))
            if seg is None:
                rep.cuts.append(_cut_of(path, held, 0, max(base_offset_of(name), end), True))
            elif seg.size < os.path.getsize(path):
                rep.cuts.append(_cut_of(path, held, seg.size, seg.read_next_offset(), False))
    return rep


def recover_partition(p: PartitionDir, config: LogConfig | None = None) -> tuple[Log, RecoveryReport]:
    """Open ``p`` as LogLoader does after an unclean shutdown (from its checkpointed recovery point, 0 when
    none), close it cleanly, and report what it cut (:func:`plan_recovery`, read before anything is
    cut) and what changed on disk."""
    planned = plan_recovery(p, config)
    # a completed swap renames a .swap file over its old segment's name: neither is a cut or a deletion
    touched = {n for a in planned.leftovers if a.action == COMPLETE for n in (a.name, a.target)}
    before = _state(p.path)
    log = _open(p, config or LogConfig(), clean=False)
    log.close()
    after = _state(p.path)
    rep = RecoveryReport(p.path, p.recovery_point or 0, log.log_start_offset, log.log_end_offset, len(log.segments),
                         cuts=planned.cuts, leftovers=planned.leftovers)
    for name in sorted((set(before) | set(after)) - touched):
        b, a = before.get(name), after.get(name)
        if a is None and b is not None:
            if name.endswith(_TEMP_SUFFIXES):
                rep.deleted_temp_files.append(name)
            elif name.endswith(".log"):
                rep.deleted_segments.append(name)
            else:
                rep.deleted_files.append(name)
        elif b is None and a is not None:
            (rep.rebuilt_indexes if name.endswith(_INDEX_SUFFIXES) else rep.created_files).append(name)
        elif a is not None and b is not None:
            if name.endswith(".log") and a[0] < b[0]:
                rep.truncated[name] = (b[0], a[0])
            elif name.endswith(_INDEX_SUFFIXES) and a[1] != b[1]:
                rep.rebuilt_indexes.append(name)
    return log, rep


#: why recovery cuts what it cuts, said once after the cuts
_CUT_RULE = ("as Kafka recovers a segment after an unclean shutdown: LogSegment.recover cuts it at its first invalid batch "
             "and LogLoader deletes the segments after it")


def _describe_recovery(r: RecoveryReport) -> str:
    held = f"{r.segments} segment(s), log offsets [{r.log_start_offset}, {r.log_end_offset})"
    head = (f"{r.dir}: after recovery from offset {r.recovery_point} it would hold {held}" if r.dry_run
            else f"{r.dir}: {held}, recovered from offset {r.recovery_point}")
    if not r.changed:
        return head + ": nothing to repair"
    parts = []
    for a in r.leftovers:
        if a.action == COMPLETE:
            parts.append(f"{'would complete' if r.dry_run else 'completed'} an interrupted swap: {a.name} -> {a.target}")
        else:
            parts.append(f"{'would delete' if r.dry_run else 'deleted'} {a.name} ({a.reason})")
    if r.cuts:
        total = sum(c.bytes for c in r.cuts)
        records = sum(c.records for c in r.cuts)
        lasts = [c.last_offset for c in r.cuts if c.last_offset is not None]
        first = min(c.from_offset for c in r.cuts)
        span = f"{records} records, offsets {first}..{max(lasts)}" if lasts else f"offsets from {first}"
        parts.append(f"{'would cut' if r.dry_run else 'cut'} {total} bytes, {span} ({_CUT_RULE})")
        parts += [c.describe("would truncate" if r.dry_run else "truncated") for c in r.cuts]
    if r.dry_run:
        return head + ": " + "; ".join(parts) + " (dry run: nothing changed)"
    said = {a.name for a in r.leftovers} | {c.file for c in r.cuts}  # already named above
    if r.rebuilt_indexes:
        parts.append(f"rebuilt {', '.join(r.rebuilt_indexes)}")
    if temp := [n for n in r.deleted_temp_files if n not in said]:
        parts.append(f"deleted temporary file(s) {', '.join(temp)}")
    if other := [n for n in r.deleted_segments + r.deleted_files if n not in said]:
        parts.append(f"deleted {', '.join(other)}")
    return head + ": " + "; ".join(parts)


def _cmd_recover(args: argparse.Namespace) -> int:
    config = _config(args, "recover")
    if config is None:
        return EXIT_USAGE
    parts, code = _partitions(args.dirs, "recover")
    if code:
        return code
    status = EXIT_OK
    by_data_dir: dict[str, list[Log]] = {}
    for p in parts:
        try:
            if args.dry_run:
                rep = plan_recovery(p, config)
                print(json.dumps(rep.to_json(), separators=(",", ":")) if args.json else _describe_recovery(rep))
                continue
            log, rep = recover_partition(p, config)
        except KafkaLogError as e:
            print(f"kafkalog recover: {e}", file=sys.stderr)
            status = EXIT_BAD_DATA
            continue
        by_data_dir.setdefault(p.data_dir, []).append(log)
        print(json.dumps(rep.to_json(), separators=(",", ":")) if args.json else _describe_recovery(rep))
    for data_dir, logs in by_data_dir.items():
        checkpoint_log_dir(data_dir, logs)
    return status


# -------------------------------------------------------------------------------------- parsers
def _partitions(dirs: list[str], command: str) -> tuple[list[PartitionDir], int]:
    """The partitions of every DIR, or an exit code after a message on stderr."""
    out: list[PartitionDir] = []
    for d in dirs:
        try:
            out += find_partitions(d)
        except FileNotFoundError:
            print(f"kafkalog {command}: no such directory: {d}", file=sys.stderr)
            return [], EXIT_IO
        except NoPartitionsError as e:  # holds no Kafka partition: exit 3, as dump and verify of a dir without Kafka files
            print(f"kafkalog {command}: {e}", file=sys.stderr)
            return [], EXIT_IO
        except KafkaLogError as e:  # a corrupt checkpoint file
            print(f"kafkalog {command}: {e}", file=sys.stderr)
            return [], EXIT_BAD_DATA
        except ValueError as e:
            print(f"kafkalog {command}: {e}", file=sys.stderr)
            return [], EXIT_USAGE
    return out, EXIT_OK


_CONFIG_HELP = ("a topic config the directory was written with, by Kafka's name (repeatable), e.g. index.interval.bytes=256; "
                "rebuilt indexes follow index.interval.bytes and segment.index.bytes")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``retention`` and ``recover`` sub-commands to the ``kafkalog`` parser."""
    r = sub.add_parser("retention", help="delete old segments by retention.ms, retention.bytes and the log start offset", description=(
        "Apply Kafka's retention to partition directories or whole data dirs (UnifiedLog.deleteOldSegments): "
        "segments wholly below the log start offset, then segments over retention.bytes, then segments whose largest "
        "timestamp (the .log file's modification time when there is none) is more than retention.ms before --now-ms. "
        "If every segment is due, an empty segment is rolled at the log end offset first. Deleted files are renamed "
        ".deleted and removed once file.delete.delay.ms has passed (files still waiting when the command ends are "
        "removed the next time the directory is opened). The data dir's log-start-offset-checkpoint and "
        "recovery-point-offset-checkpoint are updated. Options default to Kafka's topic defaults."))
    r.add_argument("dirs", nargs="+", metavar="DIR")
    r.add_argument("--now-ms", type=int, metavar="MS", help="the current time in ms since the epoch (default: the clock)")
    r.add_argument("--retention-ms", type=int, metavar="N", help="retention.ms (default 604800000; -1: no time limit)")
    r.add_argument("--retention-bytes", type=int, metavar="N", help="retention.bytes (default -1: no size limit)")
    r.add_argument("--log-start-offset", type=int, metavar="N", help="first move the log start offset up to N, as DeleteRecords does (one partition only)")
    r.add_argument("--file-delete-delay-ms", type=int, metavar="N", help="file.delete.delay.ms (default 60000; 0: remove at once)")
    r.add_argument("--config", action="append", metavar="KEY=VALUE", help=_CONFIG_HELP)
    r.add_argument("--dry-run", action="store_true", help="print what would be deleted; change nothing")
    r.add_argument("--json", action="store_true", help="one JSON object per partition")
    r.set_defaults(func=_cmd_retention)

    c = sub.add_parser("recover", help="recover partition directories as a broker does after an unclean shutdown", description=(
        "Open partition directories or whole data dirs as Kafka's LogLoader does after an unclean shutdown: from the "
        "checkpointed recovery point (0 when none) every segment is re-read, torn or corrupt tails are cut, indexes "
        "rebuilt, .deleted and .cleaned files removed, a complete set of .swap files swapped in (an incomplete one dropped); then the logs are closed cleanly and the data "
        "dir's checkpoints written. Prints what it cut (bytes, records and offsets, per segment) and what changed on disk, one line (or "
        "--json object) per partition; --dry-run prints the same without changing anything."))
    c.add_argument("dirs", nargs="+", metavar="DIR")
    c.add_argument("--config", action="append", metavar="KEY=VALUE", help=_CONFIG_HELP)
    c.add_argument("--dry-run", action="store_true", help=(
        "print what recovery would cut (bytes, records, offsets, per segment) and do with leftovers of interrupted "
        "operations, from a read-only load; change nothing"))
    c.add_argument("--json", action="store_true", help="one JSON object per partition")
    c.set_defaults(func=_cmd_recover)
