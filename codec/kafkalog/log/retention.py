"""Retention: deleting a partition's old segments as Kafka's UnifiedLog.deleteOldSegments does.

Three passes run in Kafka's order, each over the segments the previous one left: segments wholly
below the log start offset; then, when cleanup.policy includes delete, segments over
``retention.bytes``; then segments whose largest timestamp (the ``.log`` file's modification time
when the segment has no timestamp) is more than ``retention.ms`` old. A pass deletes a run of
segments from the oldest on and stops at the first one it keeps; it never passes the high
watermark and never deletes an empty last segment. When a pass would delete every segment, a new
empty active segment is rolled at the log end offset first, so a log always keeps one segment.

Deleted segments leave the log at once: the log start offset moves to the next segment's base
offset (trimming the leader epoch cache and the producer state), their files and producer
snapshots are renamed with a ``.deleted`` suffix and removed ``file.delete.delay.ms`` later by
:func:`delete_pending_files`. A ``.deleted`` file found when a log is opened is removed then
(LogLoader). See SPEC.md §6.3 and ``core/src/main/scala/kafka/log/UnifiedLog.scala`` @1eb7644::

    result = delete_old_segments(log, now_ms=1_700_000_000_000)
    delete_pending_files(log, now_ms=1_700_000_060_000)   # after file.delete.delay.ms
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from kafkalog.errors import OffsetOutOfRangeError
from kafkalog.format.files import fsync_dir, segment_file_name
from kafkalog.format.index import TimeIndex

if TYPE_CHECKING:
    from kafkalog.log.segment import Segment
    from kafkalog.log.unified import Log, LogConfig

__all__ = [
    "DELETED_SUFFIX",
    "DeletionReason",
    "PendingDeletion",
    "RetentionPass",
    "RetentionResult",
    "SegmentInfo",
    "delete_old_segments",
    "delete_pending_files",
    "maybe_increment_log_start_offset",
    "plan_retention",
    "schedule_segment_deletion",
    "segment_infos",
    "segment_infos_of_dir",
]

log = logging.getLogger(__name__)

DELETED_SUFFIX = ".deleted"
_SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


class DeletionReason(Enum):
    """Why a pass deleted segments (Kafka's StartOffsetBreach, RetentionSizeBreach, RetentionMsBreach)."""

    LOG_START_OFFSET = "log-start-offset"
    RETENTION_BYTES = "retention.bytes"
    RETENTION_MS = "retention.ms"


@dataclass(frozen=True)
class SegmentInfo:
    """What retention looks at in a segment: base offset, ``.log`` size and largest timestamp.

    ``timestamp_from_mtime`` is True when the segment has no timestamp and the ``.log`` file's
    modification time stands in for it (LogSegment.largestTimestamp).
    """

    base_offset: int
    size: int
    largest_timestamp: int
    timestamp_from_mtime: bool = False

    def to_json(self) -> dict[str, object]:
        return {"baseOffset": self.base_offset, "size": self.size, "largestTimestamp": self.largest_timestamp,
                "timestampFromMtime": self.timestamp_from_mtime}


@dataclass(frozen=True)
class RetentionPass:
    """One pass that deleted something: its reason, the segments, the segment rolled first (or None)
    and the log start offset after it."""

    reason: DeletionReason
    segments: tuple[SegmentInfo, ...]
    rolled: int | None
    log_start_offset: int

    def to_json(self) -> dict[str, object]:
        return {"reason": self.reason.value, "segments": [s.to_json() for s in self.segments],
                "rolled": self.rolled, "logStartOffset": self.log_start_offset}


@dataclass(frozen=True)
class PendingDeletion:
    """Files renamed ``.deleted`` that :func:`delete_pending_files` removes once ``now >= due_ms``."""

    due_ms: int
    paths: tuple[str, ...]


@dataclass
class RetentionResult:
    """What :func:`delete_old_segments` did (or, with ``dry_run``, would do)."""

    now_ms: int
    log_start_offset_before: int
    log_start_offset: int
    passes: list[RetentionPass] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    pending: list[PendingDeletion] = field(default_factory=list)
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        """Whether retention deleted a segment or moved the log start offset."""
        return bool(self.deleted_segments) or self.log_start_offset != self.log_start_offset_before

    @property
    def deleted_segments(self) -> list[SegmentInfo]:
        """Every segment deleted, oldest first."""
        return [s for p in self.passes for s in p.segments]

    def to_json(self) -> dict[str, object]:
        return {
            "nowMs": self.now_ms, "dryRun": self.dry_run, "logStartOffsetBefore": self.log_start_offset_before,
            "logStartOffset": self.log_start_offset, "passes": [p.to_json() for p in self.passes],
            "deletedBytes": sum(s.size for s in self.deleted_segments),
            "renamed": self.renamed, "removed": self.removed,
            "pending": [{"dueMs": p.due_ms, "paths": list(p.paths)} for p in self.pending],
        }


# ------------------------------------------------------------------------------------ planning
def _deletable(
    segments: Sequence[SegmentInfo], predicate: Callable[[SegmentInfo, SegmentInfo | None], bool], log_end_offset: int, high_watermark: int
) -> list[SegmentInfo]:
    """UnifiedLog.deletableSegments without tiered storage: oldest first, up to the first segment kept."""
    out: list[SegmentInfo] = []
    for i, seg in enumerate(segments):
        nxt = segments[i + 1] if i + 1 < len(segments) else None
        last_and_empty = nxt is None and seg.size == 0
        upper = nxt.base_offset if nxt is not None else log_end_offset
        if not (high_watermark >= upper and predicate(seg, nxt)) or last_and_empty:
            break
        out.append(seg)
    return out


def plan_retention(
    segments: Sequence[SegmentInfo],
    *,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int,
    config: LogConfig,
    now_ms: int,
) -> list[RetentionPass]:
    """The passes of UnifiedLog.deleteOldSegments over ``segments`` (oldest first), without touching any file.

    Passes that delete nothing are left out. A pass that would delete every segment first rolls
    an empty segment at ``log_end_offset`` (its ``rolled``).
    """
    segs = list(segments)
    lso = log_start_offset
    passes: list[RetentionPass] = []

    def run(reason: DeletionReason, predicate: Callable[[SegmentInfo, SegmentInfo | None], bool]) -> None:
        nonlocal segs, lso
        deletable = _deletable(segs, predicate, log_end_offset, high_watermark)
        if not deletable:
            return
        to_delete = deletable
        rolled = None
        if len(deletable) == len(segs):  # keep one segment: roll an empty one first (UnifiedLog.deleteSegments)
            rolled = max(0, log_end_offset)
            segs.append(SegmentInfo(rolled, 0, now_ms, True))
            if deletable[-1].base_offset == rolled:
                to_delete = deletable[:-1]
        if to_delete:
            gone = {s.base_offset for s in to_delete}
            segs = [s for s in segs if s.base_offset not in gone]
            lso = max(lso, segs[0].base_offset)
        passes.append(RetentionPass(reason, tuple(to_delete), rolled, lso))

    run(DeletionReason.LOG_START_OFFSET, lambda _s, nxt: nxt is not None and nxt.base_offset <= lso)
    if config.delete:
        retention_bytes = config.retention_bytes
        total = sum(s.size for s in segs)
        if retention_bytes >= 0 and total >= retention_bytes:
            diff = total - retention_bytes

            def over_size(seg: SegmentInfo, _nxt: SegmentInfo | None) -> bool:
                nonlocal diff
                if diff - seg.size >= 0:
                    diff -= seg.size
                    return True
                return False

            run(DeletionReason.RETENTION_BYTES, over_size)
        retention_ms = config.retention_ms
        if retention_ms >= 0:
            run(DeletionReason.RETENTION_MS, lambda seg, _nxt: now_ms - seg.largest_timestamp > retention_ms)
    return passes


def segment_infos(log: Log) -> list[SegmentInfo]:
    """The :class:`SegmentInfo` of every segment of an open log."""
    out = []
    for s in log.segments:
        ts = s.largest_record_timestamp
        out.append(SegmentInfo(s.base_offset, s.size, s.last_modified if ts is None else ts, ts is None))
    return out


def segment_infos_of_dir(directory: str | os.PathLike[str]) -> list[SegmentInfo]:
    """:class:`SegmentInfo` read from a partition directory without opening it as a :class:`Log` (for dry runs):
    the largest timestamp is the ``.timeindex``'s last entry, or the batches' largest when that index is
    missing or empty, or the ``.log`` modification time when no batch has a timestamp."""
    from kafkalog.format.records.stream import LogReader

    d = os.fspath(directory)
    out = []
    for name in sorted(os.listdir(d)):
        stem, _dot, ext = name.partition(".")
        if ext != "log" or len(stem) != 20 or not stem.isdigit():
            continue
        base = int(stem)
        path = os.path.join(d, name)
        st = os.stat(path)
        ts = -1
        tpath = os.path.join(d, segment_file_name(base, ".timeindex"))
        if os.path.exists(tpath):
            ti = TimeIndex.read(tpath, base_offset=base)
            if len(ti):
                ts = int(ti.timestamps[-1])
        if ts < 0 and st.st_size:
            with LogReader(path) as reader:
                ts = max((b.max_timestamp for b in reader.batches()), default=-1)
        mtime = st.st_mtime_ns // 1_000_000
        out.append(SegmentInfo(base, st.st_size, mtime if ts < 0 else ts, ts < 0))
    return out


# ---------------------------------------------------------------------------------- applying
def maybe_increment_log_start_offset(log: Log, new_log_start_offset: int) -> bool:
    """Move the log start offset up to ``new_log_start_offset`` (UnifiedLog.maybeIncrementLogStartOffset).

    Raises :class:`OffsetOutOfRangeError` above the high watermark. When it moves, the recovery
    point is raised to it if lower, the leader epoch cache is truncated from the start and written,
    and the producer state forgets what lies below it. Returns whether it moved.
    """
    if new_log_start_offset > log.high_watermark:
        raise OffsetOutOfRangeError(
            f"cannot increment the log start offset to {new_log_start_offset}: it is above the high watermark {log.high_watermark}",
            file=log.dir, offset=new_log_start_offset,
        )
    if new_log_start_offset <= log.log_start_offset:
        return False
    log.log_start_offset = new_log_start_offset
    if log.recovery_point < new_log_start_offset:
        log.recovery_point = new_log_start_offset
    if log.leader_epoch_cache.truncate_from_start(new_log_start_offset):
        log.leader_epoch_cache.write()
    log.producer_state.on_log_start_offset_incremented(new_log_start_offset)
    return True


def _rename_to_deleted(paths: Iterable[str]) -> list[str]:
    out = []
    for p in paths:
        if os.path.exists(p):
            os.replace(p, p + DELETED_SUFFIX)
            out.append(p + DELETED_SUFFIX)
    return out


def schedule_segment_deletion(log: Log, segment: Segment, now_ms: int | None = None) -> list[str]:
    """Close ``segment``'s files, rename them ``.deleted`` and schedule their removal after
    file.delete.delay.ms (LocalLog.deleteSegmentFiles with asyncDelete); returns the new paths.
    The caller has already taken the segment out of the log."""
    segment.close_handlers()
    paths = _rename_to_deleted(os.path.join(log.dir, segment_file_name(segment.base_offset, s)) for s in _SEGMENT_SUFFIXES)
    if paths:
        now = log.clock() if now_ms is None else now_ms
        log.pending_deletions.append(PendingDeletion(now + log.config.file_delete_delay_ms, tuple(paths)))
    return paths


def delete_old_segments(log: Log, now_ms: int | None = None, *, config: LogConfig | None = None, dry_run: bool = False) -> RetentionResult:
    """Apply retention to ``log`` at time ``now_ms`` (default: the log's clock), with ``config`` (default: the log's).

    Deleted segments' files and producer snapshots are renamed ``.deleted`` and scheduled for
    removal ``file.delete.delay.ms`` after ``now_ms``; files already due (a zero delay included)
    are removed before returning. ``dry_run`` only plans.
    """
    log.check_open()
    now = log.clock() if now_ms is None else now_ms
    cfg = config or log.config
    before = log.log_start_offset
    passes = plan_retention(
        segment_infos(log), log_start_offset=before, log_end_offset=log.log_end_offset,
        high_watermark=log.high_watermark, config=cfg, now_ms=now,
    )
    result = RetentionResult(now, before, passes[-1].log_start_offset if passes else before, passes, dry_run=dry_run)
    if dry_run:
        return result
    for p in passes:
        if p.rolled is not None:
            new = log.roll()
            if new.base_offset != p.rolled:  # the plan and the log disagree: a bug, not bad input
                raise AssertionError(f"rolled segment {new.base_offset}, planned {p.rolled}")
        if p.segments:
            maybe_increment_log_start_offset(log, log.higher_segment(p.segments[-1].base_offset).base_offset)  # type: ignore[union-attr]
        paths: list[str] = []
        for info in p.segments:
            seg = log.floor_segment(info.base_offset)
            assert seg is not None and seg.base_offset == info.base_offset
            log.remove_segment(info.base_offset)
            seg.close_handlers()
            paths += _rename_to_deleted(os.path.join(log.dir, segment_file_name(info.base_offset, s)) for s in _SEGMENT_SUFFIXES)
            _log_reason(log, info, p.reason, cfg)
        for info in p.segments:  # UnifiedLog.deleteProducerSnapshots
            if info.base_offset in log.producer_state.snapshot_offsets:
                paths += _rename_to_deleted([log.producer_state.snapshot_path(info.base_offset)])
                log.producer_state.delete_snapshot(info.base_offset)  # forgets it; the file is already renamed
        if paths:
            result.renamed += paths
            log.pending_deletions.append(PendingDeletion(now + cfg.file_delete_delay_ms, tuple(paths)))
    if result.renamed and log.sync:
        fsync_dir(log.dir)
    result.log_start_offset = log.log_start_offset
    result.removed = delete_pending_files(log, now)
    result.pending = list(log.pending_deletions)
    return result


def _log_reason(log_: Log, info: SegmentInfo, reason: DeletionReason, cfg: LogConfig) -> None:
    if reason is DeletionReason.RETENTION_MS:
        basis = "last modified time" if info.timestamp_from_mtime else "largest record timestamp"
        log.info("deleting segment %d of %s: retention.ms %d breached (by its %s)", info.base_offset, log_.dir, cfg.retention_ms, basis)
    elif reason is DeletionReason.RETENTION_BYTES:
        log.info("deleting segment %d of %s: retention.bytes %d breached", info.base_offset, log_.dir, cfg.retention_bytes)
    else:
        log.info("deleting segment %d of %s: below the log start offset %d", info.base_offset, log_.dir, log_.log_start_offset)


def delete_pending_files(log: Log, now_ms: int | None = None) -> list[str]:
    """Remove the ``.deleted`` files whose delay has passed at ``now_ms``; return their paths."""
    now = log.clock() if now_ms is None else now_ms
    removed: list[str] = []
    keep: list[PendingDeletion] = []
    for p in log.pending_deletions:
        if now < p.due_ms:
            keep.append(p)
            continue
        for path in p.paths:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
                removed.append(path)
    log.pending_deletions[:] = keep
    return removed
