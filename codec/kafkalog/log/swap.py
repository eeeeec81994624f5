"""Swapping new segments in for old ones (LocalLog.createNewCleanedSegment and LocalLog.replaceSegments).

The log cleaner and the split of an overflowed segment both write new segments under a ``.cleaned``
suffix and then swap them in: every new segment ``.cleaned`` -> ``.swap``, the old files ->
``.deleted``, ``.swap`` -> final names (SPEC R-CMP-14). A crash at any step leaves files that
loading the log completes or removes (:meth:`kafkalog.log.Log.open`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafkalog.format.files import fsync_dir, segment_file_name
from kafkalog.log.retention import _SEGMENT_SUFFIXES, DELETED_SUFFIX, PendingDeletion
from kafkalog.log.segment import Segment

if TYPE_CHECKING:
    from kafkalog.log.unified import Log

__all__ = ["CLEANED_SUFFIX", "SWAP_SUFFIX", "StepHook", "new_cleaned_segment", "replace_segments"]

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"

#: Called with (step, path) before each file of a swap is renamed: the fault harnesses stop there.
StepHook = Callable[[str, str], None]


def new_cleaned_segment(lg: Log, base_offset: int) -> Segment:
    """LocalLog.createNewCleanedSegment: a fresh ``.cleaned`` segment (left-over files removed first)."""
    for suffix in _SEGMENT_SUFFIXES:
        stale = os.path.join(lg.dir, segment_file_name(base_offset, suffix) + CLEANED_SUFFIX)
        if os.path.exists(stale):
            os.unlink(stale)
    return Segment.open(
        lg.dir, base_offset, index_interval_bytes=lg.config.index_interval_bytes, max_index_size=lg.config.segment_index_bytes,
        clock=lg.clock, suffix=CLEANED_SUFFIX, index_per_batch=lg.config.index_per_batch,
    )


def _rename_segment_files(seg: Segment, old: str, new: str, step: str, on_step: StepHook | None, sync: bool) -> None:
    """LogSegment.changeFileSuffixes: rename the four files (a missing ``.txnindex`` is skipped), fsyncing the directory."""

    def target(path: str) -> str:
        stem = path[: len(path) - len(old)] if old else path
        return stem + new

    paths = [seg.log_path, seg.index_path, seg.time_index_path, seg.txn_index.path]
    for path in paths:
        if on_step is not None:
            on_step(step, path)
        if path == seg.log_path:
            os.replace(path, target(path))
            seg.log_path = target(path)
        elif path in (paths[1], paths[2]):
            seg.rename_index(path, target(path))
        else:
            seg.txn_index.rename_to(target(path))
    seg.suffix = seg.suffix[: len(seg.suffix) - len(old)] + new if old else seg.suffix + new
    if sync:
        fsync_dir(seg.dir)


def replace_segments(lg: Log, new: list[Segment], old: list[Segment], now_ms: int, on_step: StepHook | None) -> list[str]:
    """Swap ``new`` (``.cleaned``) in for ``old`` (LocalLog.replaceSegments + UnifiedLog.deleteProducerSnapshots).

    Order: every new segment ``.cleaned`` -> ``.swap`` (highest base offset first), old files
    -> ``.deleted`` (removed after file.delete.delay.ms), ``.swap`` -> final name.
    """
    new = sorted(new, key=lambda s: s.base_offset)
    existing = {s.base_offset for s in lg.segments}
    old = sorted((s for s in old if s.base_offset in existing), key=lambda s: s.base_offset)
    for seg in reversed(new):
        _rename_segment_files(seg, CLEANED_SUFFIX, SWAP_SUFFIX, "swap", on_step, lg.sync)
        lg.add_segment(seg)
    new_bases = {s.base_offset for s in new}
    renamed: list[str] = []
    deleted_not_replaced: list[Segment] = []
    for seg in old:
        if seg.base_offset != new[0].base_offset:
            lg.remove_segment(seg.base_offset)
        seg.close_handlers()
        paths = [seg.log_path, seg.index_path, seg.time_index_path, seg.txn_index.path]
        moved = []
        for p in paths:
            if on_step is not None:
                on_step("delete", p)
            if os.path.exists(p):
                os.replace(p, p + DELETED_SUFFIX)
                moved.append(p + DELETED_SUFFIX)
        if moved:
            lg.pending_deletions.append(PendingDeletion(now_ms + lg.config.file_delete_delay_ms, tuple(moved)))
            renamed += moved
        if seg.base_offset not in new_bases:
            deleted_not_replaced.append(seg)
    if renamed and lg.sync:  # beyond Kafka: no .swap may lose its suffix before the old files' .deleted names are durable
        fsync_dir(lg.dir)
    for seg in new:
        _rename_segment_files(seg, SWAP_SUFFIX, "", "final", on_step, lg.sync)
    if lg.sync:
        fsync_dir(lg.dir)
    snaps: list[str] = []
    for seg in deleted_not_replaced:
        if seg.base_offset in lg.producer_state.snapshot_offsets:
            path = lg.producer_state.snapshot_path(seg.base_offset)
            if on_step is not None:
                on_step("snapshot", path)
            if os.path.exists(path):
                os.replace(path, path + DELETED_SUFFIX)
                snaps.append(path + DELETED_SUFFIX)
            lg.producer_state.delete_snapshot(seg.base_offset)
    if snaps:
        lg.pending_deletions.append(PendingDeletion(now_ms + lg.config.file_delete_delay_ms, tuple(snaps)))
        renamed += snaps
    return renamed
