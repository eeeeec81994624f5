"""Splitting a segment whose offsets overflow its indexes (LocalLog.splitOverflowedSegment, KAFKA-6264).

An index entry stores an offset as a 32-bit distance from the segment's base offset (R-IDX-01).
Brokers before Kafka 0.10.2 could write segments holding offsets further than that from their
base; Kafka splits such a segment when loading or cleaning meets it: the same batches, byte for
byte, are copied into new segments, each starting at the base offset of its first batch and
taking batches while they fit, and the new segments are swapped in for the old one as the cleaner
swaps (``.cleaned`` -> ``.swap`` -> final names, the old files renamed ``.deleted``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafkalog.errors import KafkaLogError
from kafkalog.format.records.stream import Batch
from kafkalog.log.retention import delete_pending_files
from kafkalog.log.segment import Segment
from kafkalog.log.swap import new_cleaned_segment, replace_segments

if TYPE_CHECKING:
    from kafkalog.log.unified import Log

__all__ = ["split_overflowed_segment"]

log = logging.getLogger(__name__)

#: LogSegment.appendChunkFromFile's first read buffer; it grows to hold a larger batch and stays grown
_READ_BUFFER = 1024 * 1024


def split_overflowed_segment(lg: Log, segment: Segment, now_ms: int | None = None) -> list[Segment]:
    """Replace ``segment`` of ``lg``, whose last offset does not fit its indexes, by segments that
    each fit, holding the same bytes; returns the new segments (SPEC R-RCV-06, R-CMP-14 swap order).

    The old segment's files are renamed ``.deleted`` and removed after ``file.delete.delay.ms``
    (at once when it is 0).
    As in Kafka, the new segments get no ``.txnindex`` entries: a later recovery rebuilds them.
    """
    lg.check_writable("split a segment")
    if not segment.has_overflow():
        raise ValueError(f"segment {segment.log_path} has no offset overflow: nothing to split")
    log.info("splitting overflowed segment %s", segment.log_path)
    now = lg.clock() if now_ms is None else now_ms
    new: list[Segment] = []
    try:
        batches = segment.batches()
        pending = next(batches, None)
        while pending is not None:
            dest = new_cleaned_segment(lg, pending.base_offset)
            new.append(dest)
            first = pending
            pending = _append_from(dest, pending, batches)
            if dest.size == 0:
                raise KafkaLogError(
                    f"batch with offsets {first.base_offset}..{first.last_offset} does not fit a segment based at its first offset",
                    file=segment.log_path, position=first.position, offset=first.last_offset,
                )
        mtime_ns = segment.last_modified * 1_000_000
        for s in new:
            s.on_become_inactive_segment()
            s.flush()
            for path in (s.log_path, s.index_path, s.time_index_path):
                os.utime(path, ns=(mtime_ns, mtime_ns))
        if sum(s.size for s in new) != segment.size:
            raise KafkaLogError(f"split segments hold {sum(s.size for s in new)} bytes, the original {segment.size}",
                                file=segment.log_path, position=segment.size, offset=segment.base_offset)
    except BaseException:
        for s in new:
            s.delete()
        raise
    replace_segments(lg, new, [segment], now, None)
    delete_pending_files(lg, now)  # those already due (file.delete.delay.ms 0), as the cleaner does
    log.info("replaced overflowed segment %s with segments at %s", segment.log_path, [s.base_offset for s in new])
    return new


def _append_from(dest: Segment, batch: Batch | None, rest: Iterator[Batch]) -> Batch | None:
    """LogSegment.appendFromFile: append ``batch`` and those after it while their offsets fit
    ``dest``, one append per read buffer's worth; returns the first batch that did not fit."""
    capacity = _READ_BUFFER
    while batch is not None and dest.can_convert_to_relative_offset(batch.last_offset):
        chunk: list[bytes] = []
        size = 0
        max_ts = shallow = max_offset = -(1 << 63)
        while batch is not None and dest.can_convert_to_relative_offset(batch.last_offset) and (size == 0 or size + batch.size_in_bytes < capacity):
            if batch.max_timestamp > max_ts:
                max_ts, shallow = batch.max_timestamp, batch.last_offset
            max_offset = batch.last_offset
            chunk.append(batch.data)
            size += batch.size_in_bytes
            batch = next(rest, None)
        capacity = max(capacity, size)  # the grown buffer is the one reused for the next chunk
        dest.append(max_offset, max_ts, shallow, b"".join(chunk))
    return batch
