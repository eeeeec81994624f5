"""Record objects made by compiled code: :meth:`RecordBatch.records` and iteration through the C
walker of :mod:`kafkalog.fast._objects` (a Cython extension built at install).

Making a Python object per field (two ``bytes`` and a few ints per record) and a :class:`Record`
per record costs more than walking the records, and every pure-Python way to make them runs
interpreter machinery per record. The walker makes them in C, as a C extension does (its docstring
gives the SPEC rules it follows: R-REC-01..R-REC-03, R-REC-09, R-V2-10, R-V2-12, R-V2-16,
R-PRIM-04). A record it cannot read itself (any structural problem, a header key that is not
well-formed UTF-8, an offset past int64) hands the batch to the plain decoder
(``RecordBatch.records_plain``) from there, so records and errors are the plain decoder's: same
values, same exception class, file, position and offset.

Iteration makes each record as it reaches it, so that records already used are freed before the
next are made: memory stays bounded by the records the caller keeps, the memory of the others is
reused at once, and CPython's collector does not run over a whole batch of them.

With the extension loaded, :class:`Record`'s field attributes are the extension's member
descriptors (``_objects.item_members``) rather than ``_tuplegetter``: the same values, but reads
that CPython's attribute cache specializes, so that reading a few fields of each record no longer
costs as much as making it.

Without the extension (not built, or ``KAFKALOG_NO_EXTENSIONS=1``) :data:`COMPILED` is False and
both functions are the plain decoder itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kafkalog.fast import compiled
from kafkalog.format.records.record import RECORD_FIELDS, Record
from kafkalog.format.records.v2 import ATTR_COMPRESSION_MASK, ATTR_TIMESTAMP_TYPE, HEADER_SIZE, RecordBatch

__all__ = ["COMPILED", "iter_records", "records"]

_objects: Any = compiled("_objects")

#: Whether records are made by the compiled walker (else by the plain decoder).
COMPILED = _objects is not None


def _member_fields() -> None:
    """Give :class:`Record` the compiled module's member descriptors for its fields in place of
    ``_tuplegetter`` ones: the same values and docs, but reads CPython specializes, so a loop
    that reads a few fields of each record spends less on the reads than on making the record."""
    if type(Record.__dict__["offset"]).__name__ == "member_descriptor":
        return  # done already (this module imported again)
    docs = tuple(Record.__dict__[name].__doc__ or "" for name in RECORD_FIELDS)
    for name, descriptor in zip(RECORD_FIELDS, _objects.item_members(Record, RECORD_FIELDS, docs), strict=True):
        setattr(Record, name, descriptor)


if COMPILED:
    _member_fields()

def _area(batch: RecordBatch) -> tuple[Any, int]:
    """The batch's record area (uncompressed: the batch's own bytes, no copy) and where records start."""
    if batch.attributes & ATTR_COMPRESSION_MASK == 0:
        return batch.data, HEADER_SIZE
    return batch.records_buffer(), 0


def _walk(batch: RecordBatch, area: Any, pos: int, count: int) -> tuple[list[Record], int]:
    """(the next ``count`` records from ``pos``, the position after them); the position is -1 when
    the plain decoder must take over, the list then holding the records made before that."""
    lat = batch.max_timestamp if batch.attributes & ATTR_TIMESTAMP_TYPE else None
    return _objects.walk(area, pos, count, batch.base_offset, batch.base_timestamp, lat, batch.base_sequence, Record)


def records(batch: RecordBatch) -> list[Record]:
    """``batch.records()`` (no CRC check) through the compiled walker; same values and errors."""
    if not COMPILED:
        return batch.records_plain()
    area, start = _area(batch)
    out, pos = _walk(batch, area, start, batch.count)
    return out if pos == len(area) else batch.records_plain()


def iter_records(batch: RecordBatch) -> Iterator[Record]:
    """Like :func:`records`, but each record is made as iteration reaches it (so that the memory
    of records already used is reused). As Kafka's record iterator does, a malformed record raises
    when iteration reaches it, after the records before it (the plain decoder alone raises before
    any record)."""
    if not COMPILED:
        return iter(batch.records_plain())
    area, start = _area(batch)
    lat = batch.max_timestamp if batch.attributes & ATTR_TIMESTAMP_TYPE else None
    return _objects.Records(area, start, batch.count, batch.base_offset, batch.base_timestamp, lat, batch.base_sequence,
                            Record, batch.records_plain)
