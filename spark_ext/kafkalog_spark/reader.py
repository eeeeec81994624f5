"""Read one :class:`~.planning.SegmentSlice` into Arrow record batches (runs on executors).

The ``.log`` is opened through fsspec and streamed batch by batch with kafkalog's
:class:`~kafkalog.LogReader`; at most about :data:`MAX_ROWS` records (or :data:`MAX_BYTES` of
batches) are held before they are converted and yielded, so memory is bounded by one Arrow batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

import pyarrow as pa
from fsspec.spec import AbstractFileSystem

from kafkalog.errors import KafkaLogError
from kafkalog.format.records.stream import Batch, LogReader
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.log.isolation import ReadCommittedFilter

from .arrow import records_to_arrow
from .filters import RowFilter
from .planning import SegmentSlice, report_data_loss

__all__ = ["MAX_BYTES", "MAX_ROWS", "ReadSettings", "read_slice"]

log = logging.getLogger(__name__)

#: the suffix Kafka gives a segment file it will delete after file.delete.delay.ms
DELETED_SUFFIX = ".deleted"

#: Records per yielded Arrow batch (before filtering), and bytes of Kafka batches held at most.
MAX_ROWS = 32 * 1024
MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class ReadSettings:
    """What every slice of one scan shares (picklable)."""

    schema: pa.Schema
    row_filter: RowFilter = RowFilter()
    read_committed: bool = False
    verify_crc: bool = True
    ignore_corrupt_files: bool = False
    fail_on_data_loss: bool = True


def _display(sl: SegmentSlice) -> str:
    return sl.log if sl.fs.protocol in ("file", "local") else f"{sl.fs.protocol}://{sl.log.lstrip('/')}"


def _open_segment(fs: AbstractFileSystem, path: str) -> BinaryIO:
    """Open a planned segment; if retention or the cleaner removed it since planning, read it
    under the ``.deleted`` name it keeps for file.delete.delay.ms (Kafka delays deletion so that
    reads in flight can finish)."""
    try:
        return fs.open(path, "rb")
    except FileNotFoundError:
        return fs.open(path + DELETED_SUFFIX, "rb")


def read_slice(sl: SegmentSlice, settings: ReadSettings) -> Iterator[pa.RecordBatch]:
    """Yield the slice's records as Arrow batches of ``settings.schema``.

    Control batches are never returned; under read_committed, batches of the slice's aborted
    transactions are dropped. A :class:`~kafkalog.KafkaLogError` (bad CRC, undecodable batch)
    propagates with its file and byte position, unless ``ignore_corrupt_files`` is set: then the
    rest of the segment is skipped with a warning naming both.
    """
    name = _display(sl)
    fs = sl.fs.get()
    try:
        f = _open_segment(fs, sl.log)
    except FileNotFoundError:
        report_data_loss(f"segment of {sl.topic}-{sl.partition} (offsets from {sl.lo}) was deleted after planning", name, settings.fail_on_data_loss)
        return
    # the consumer's read_committed algorithm (R-ISO-04), fed every batch of the slice in order
    committed = ReadCommittedFilter((pid, first) for pid, first, _last in sl.aborted) if settings.read_committed and sl.aborted else None
    rf = settings.row_filter
    pending: list[Batch] = []
    rows = held = 0

    def convert(batches: list[Batch]) -> pa.RecordBatch | None:
        return records_to_arrow(
            batches, schema=settings.schema, topic=sl.topic, partition=sl.partition, segment=name,
            lo=sl.lo, hi=sl.hi, offsets=rf.offset, timestamps_ms=rf.timestamp_ms,
        )

    def skip_rest(e: KafkaLogError) -> None:
        log.warning("kafkalog source: skipping the rest of %s from byte %s (ignoreCorruptFiles=true): %s", e.file or name, e.position, e.message)

    def flush(batches: list[Batch]) -> tuple[list[pa.RecordBatch], bool]:
        """The Arrow batches of ``batches``, and whether a corrupt batch ends the segment here."""
        try:
            out = convert(batches)
            return ([] if out is None else [out]), False
        except KafkaLogError:
            if not settings.ignore_corrupt_files:
                raise
        good = []  # one batch at a time: keep the rows before the bad batch, then stop there
        for b in batches:
            try:
                one = convert([b])
            except KafkaLogError as e:
                skip_rest(e)
                return good, True
            if one is not None:
                good.append(one)
        return good, False

    with f, LogReader(f, name=name, start=sl.start, end=sl.end) as reader:
        batches = reader.batches()
        while True:
            try:
                batch = next(batches, None)
                if batch is None:
                    break
                if batch.last_offset < sl.lo:
                    continue
                if sl.hi is not None and isinstance(batch, RecordBatch) and batch.base_offset >= sl.hi:
                    break
                if settings.verify_crc:
                    batch.ensure_valid()
            except KafkaLogError as e:
                if not settings.ignore_corrupt_files:
                    raise
                skip_rest(e)
                break
            if isinstance(batch, RecordBatch):
                if (committed is not None and committed.skips(batch)) or batch.is_control:
                    continue
                rows += batch.count
            else:
                rows += 1
            pending.append(batch)
            held += batch.size_in_bytes
            if rows >= MAX_ROWS or held >= MAX_BYTES:
                out, stop = flush(pending)
                yield from out
                if stop:
                    return
                pending, rows, held = [], 0, 0
            if sl.hi is not None and batch.last_offset >= sl.hi - 1:
                break
        if pending:
            out, _ = flush(pending)
            yield from out
        if reader.tail is not None and sl.end is None:
            log.info("kafkalog source: %s", reader.tail.message())
