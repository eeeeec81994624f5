"""What a consumer hands to the application: control records dropped, and under read_committed
the batches of aborted transactions skipped (SPEC §6.5, R-ISO-04; CompletedFetch.java @1eb7644).

A broker answers a read_committed fetch with data up to the last stable offset and the list of
aborted transactions (producer id, first offset) the data overlaps (:meth:`kafkalog.log.unified.Log.read`
with ``FetchIsolation.TXN_COMMITTED``, R-ISO-03). :class:`ReadCommittedFilter` replays the
consumer's decision batch by batch; :func:`consumer_records` applies it to one fetch and
:func:`consume` to a whole :class:`~kafkalog.log.unified.Log`, fetch after fetch, as a consumer would::

    with Log.open("orders-0") as log:        # read-only: nothing in orders-0 changes
        for record in consume(log):          # read_committed from the log start offset
            ...
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalog.format.records.control import ControlType, control_type_of
from kafkalog.format.records.record import Record
from kafkalog.format.records.stream import Batch, OnCorrupt, checked
from kafkalog.format.records.v2 import NO_PRODUCER_ID, RecordBatch
from kafkalog.format.txnindex import AbortedTxn

if TYPE_CHECKING:
    from kafkalog.log.unified import Log

__all__ = ["DEFAULT_FETCH_BYTES", "ConsumedBatch", "ReadCommittedFilter", "consume", "consume_batches", "consumer_records", "is_abort_marker"]

#: A consumer's default fetch.max.bytes per partition (max.partition.fetch.bytes, 1 MiB).
DEFAULT_FETCH_BYTES = 1 << 20


def is_abort_marker(batch: Batch) -> bool:
    """True for a control batch whose first record is an ABORT marker (CompletedFetch.containsAbortMarker)."""
    if not isinstance(batch, RecordBatch) or not batch.is_control:
        return False
    first = next(iter(batch.records()), None)
    return first is not None and control_type_of(first.key)[0] is ControlType.ABORT


class ReadCommittedFilter:
    """The read_committed state of one fetch: the aborted transactions not yet reached, ordered by
    first offset, and the set of producer ids whose batches are being skipped.

    Feed every batch of the fetch, in offset order, to :meth:`skips`."""

    def __init__(self, aborted: Iterable[AbortedTxn | tuple[int, int]] = ()) -> None:
        pending = [(a.first_offset, a.producer_id) if isinstance(a, AbortedTxn) else (a[1], a[0]) for a in aborted]
        heapq.heapify(pending)
        self._pending = pending
        #: producer ids whose transactional batches are dropped until their ABORT marker
        self.aborted_producers: set[int] = set()

    def skips(self, batch: Batch) -> bool:
        """Whether the whole batch is dropped as part of an aborted transaction (R-ISO-04).

        Control batches are never "skipped" here (their ABORT marker ends the skipping), but their
        records are never returned either; :func:`consumer_records` handles both."""
        if not isinstance(batch, RecordBatch) or batch.producer_id == NO_PRODUCER_ID:
            return False
        return self.skips_fields(batch.producer_id, batch.last_offset, batch.is_transactional, batch.is_control, lambda: is_abort_marker(batch))

    def skips_fields(self, producer_id: int, last_offset: int, transactional: bool, control: bool, abort_marker: Callable[[], bool]) -> bool:
        """:meth:`skips` for a magic 2 batch given by its header fields (``producer_id`` not -1),
        for decoders that hold no batch object; ``abort_marker()`` says whether the control
        batch's first record is an ABORT marker (asked for control batches only). Batches neither
        transactional nor control may be left out: they do not consult the state, and what they
        would pop from it the next batch that does pops as well."""
        while self._pending and self._pending[0][0] <= last_offset:
            self.aborted_producers.add(heapq.heappop(self._pending)[1])
        if control and abort_marker():
            self.aborted_producers.discard(producer_id)
            return False
        return transactional and producer_id in self.aborted_producers


def _visible(
    batches: Iterable[Batch], aborted: Iterable[AbortedTxn | tuple[int, int]] | None, read_committed: bool, start_offset: int | None,
    verify_crc: bool, on_corrupt: OnCorrupt,
) -> Iterator[tuple[Batch, list[Record]]]:
    """Each batch of one fetch with the records a consumer returns from it (batches with none left
    out), each batch's CRC checked first as the consumer checks it (``check.crcs``, R-VAL-09)."""
    committed = ReadCommittedFilter(aborted or ()) if read_committed else None
    for batch in checked(batches, on_corrupt) if verify_crc else batches:
        if committed is not None and committed.skips(batch):
            continue
        if isinstance(batch, RecordBatch) and batch.is_control:
            continue
        records = [r for r in batch.records() if start_offset is None or r.offset >= start_offset]
        if records:
            yield batch, records


def consumer_records(
    batches: Iterable[Batch],
    aborted: Iterable[AbortedTxn | tuple[int, int]] | None = None,
    *,
    read_committed: bool = True,
    start_offset: int | None = None,
    verify_crc: bool = True,
    on_corrupt: OnCorrupt = "fail",
) -> Iterator[Record]:
    """The records of one fetch a consumer returns to its application: records below
    ``start_offset`` (the fetch position) and control records are dropped under both isolation
    levels; with ``read_committed`` so are the batches of the ``aborted`` transactions
    ((producer id, first offset) pairs or :class:`~kafkalog.format.txnindex.AbortedTxn`). A batch
    whose CRC does not match raises :class:`~kafkalog.errors.CrcMismatchError`, as the consumer's
    ``check.crcs=true`` does (``on_corrupt="skip"``: warned about and left out; ``verify_crc=False``:
    not checked)."""
    for _batch, records in _visible(batches, aborted, read_committed, start_offset, verify_crc, on_corrupt):
        yield from records


@dataclass(frozen=True)
class ConsumedBatch:
    """A batch a consumer reads records from: its segment (base offset), its byte position in that
    segment's ``.log``, the batch, and the records the consumer returns from it."""

    segment_base_offset: int
    position: int
    batch: Batch
    records: list[Record]


def consume_batches(
    log: Log, start_offset: int | None = None, *, read_committed: bool = True, max_bytes: int = DEFAULT_FETCH_BYTES,
    verify_crc: bool = True, on_corrupt: OnCorrupt = "fail",
) -> Iterator[ConsumedBatch]:
    """The batches :func:`consume` takes its records from, each with where it lies and its records."""
    from kafkalog.log.unified import FetchIsolation

    isolation = FetchIsolation.TXN_COMMITTED if read_committed else FetchIsolation.HIGH_WATERMARK
    position = log.log_start_offset if start_offset is None else start_offset
    while True:
        fetch = log.read(position, max_bytes, isolation=isolation, min_one_message=True)
        batches = list(fetch.batches())
        if not batches:
            return
        meta = fetch.offset_metadata  # one fetch reads one segment, from this byte position on
        segment = log.floor_segment(meta.segment_base_offset)
        for batch in batches:  # the file and position each batch has in its segment, for what names it (a CRC error)
            batch.file = None if segment is None else segment.log_path
            batch.position += meta.relative_position
        for batch, records in _visible(batches, fetch.aborted_transactions, read_committed, position, verify_crc, on_corrupt):
            yield ConsumedBatch(meta.segment_base_offset, batch.position, batch, records)
        position = batches[-1].next_offset


def consume(
    log: Log, start_offset: int | None = None, *, read_committed: bool = True, max_bytes: int = DEFAULT_FETCH_BYTES,
    verify_crc: bool = True, on_corrupt: OnCorrupt = "fail",
) -> Iterator[Record]:
    """Every record a consumer reading ``log`` from ``start_offset`` (default: the log start offset)
    receives: read_committed fetches stop at the last stable offset, read_uncommitted ones at the
    high watermark; each fetch is filtered by :func:`consumer_records` (CRCs checked: a corrupt batch
    raises :class:`~kafkalog.errors.CrcMismatchError` unless ``on_corrupt="skip"`` or
    ``verify_crc=False``) and the next one starts after its last batch. Works on a read-only log
    (the last stable offset and the aborted transactions come from its in-memory load)."""
    for consumed in consume_batches(log, start_offset, read_committed=read_committed, max_bytes=max_bytes, verify_crc=verify_crc,
                                    on_corrupt=on_corrupt):
        yield from consumed.records
