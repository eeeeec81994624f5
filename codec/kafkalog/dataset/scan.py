"""``kafkalog.scan``: the records of broker data dirs, partition dirs, globs of them or ``s3://``
prefixes as one :class:`pyarrow.RecordBatchReader`, as a consumer of every partition receives
them; :func:`read_records` gives the same records as objects, without pyarrow (``kafkalog cat``).

Planning happens when :func:`scan` is called (so a bad path or an unreachable offset fails at once):
the partitions are found (:func:`kafkalog.log.replicas.discover`), offsets and times are resolved
through the offset and time indexes (:mod:`kafkalog.log.plan`), and each partition becomes a list
of byte ranges of its segments. Decoding happens as the reader is consumed, a chunk of batches at a
time (:func:`kafkalog.fast.arrow.read_partition`), so memory holds a few batches whatever the input.
Planning needs no pyarrow (the ``arrow`` extra): it is imported when Arrow batches are made.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import itertools
import logging
import operator
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from kafkalog.format.records.stream import Batch, LogReader, OnCorrupt, checked
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.format.txnindex import AbortedTxn
from kafkalog.log.gaps import Divergence, Gap, gaps_error
from kafkalog.log.isolation import ReadCommittedFilter
from kafkalog.log.plan import aborted_transactions, describe, offset_for_timestamp, offset_index
from kafkalog.log.ranges import ReadAhead, map_ahead
from kafkalog.log.reads import includes_topic
from kafkalog.log.replicas import discover
from kafkalog.log.source import (
    LocalStorage,
    PartitionFiles,
    SegmentFiles,
    UrlStorage,
    gc_paused,
    list_candidates,
    own_offsets,
    slots_maker,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from kafkalog.dataset.registry import Registry
    from kafkalog.dataset.values import Decoding
    from kafkalog.fast.arrow import CommittedState
    from kafkalog.format.records.record import Record
    from kafkalog.format.tiered_aiven import Keyring
    from kafkalog.log.source import Candidate, Listed

log = logging.getLogger(__name__)

__all__ = [
    "BATCH_ROWS", "PartitionPlan", "Slice", "committed_at", "plan", "plan_all", "read_ahead", "read_plans", "read_records", "scan", "scan_files", "schema_of",
    "start_floor", "topic_records",
]

#: Records per Arrow batch at most (unless one Kafka batch holds more).
BATCH_ROWS = 32 * 1024

Offsets = int | Mapping[tuple[str, int], int] | None
Time = int | datetime | None


@dataclass(frozen=True, slots=True)
class Slice:
    """Bytes ``[start, end)`` of one segment's ``.log`` (``end`` None: to its end)."""

    segment: SegmentFiles
    start: int
    end: int | None


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    """What :func:`scan` reads of one partition: offsets ``[start, end)`` (``end`` None: to the end
    of the files) from ``slices``, with the aborted transactions and last stable offset that
    read_committed needs."""

    files: PartitionFiles
    start: int
    end: int | None
    slices: tuple[Slice, ...]
    aborted: tuple[AbortedTxn, ...] = ()
    last_stable_offset: int | None = None

    @property
    def topic(self) -> str:
        return self.files.topic

    @property
    def partition(self) -> int:
        return self.files.partition


#: :class:`Slice` and :class:`PartitionPlan` of all their fields, made as :func:`~kafkalog.log.source.slots_maker` makes
#: them: :func:`plan_all` makes one of each for each partition
_new_slice = slots_maker(Slice, "segment", "start", "end")
_new_plan = slots_maker(PartitionPlan, "files", "start", "end", "slices", "aborted", "last_stable_offset")


def _ms(t: Time) -> int | None:
    """Milliseconds since the epoch (an int is taken as such; a naive datetime as UTC)."""
    if t is None or isinstance(t, int):
        return t
    if t.tzinfo is None:
        from datetime import UTC

        t = t.replace(tzinfo=UTC)
    return int(t.timestamp() * 1000)


def _offsets_for(spec: Offsets, files: list[PartitionFiles]) -> Iterable[int | None]:
    """Each of ``files``' offset of ``spec`` (:func:`scan`'s ``start_offset`` or ``end_offset``):
    one offset for all (as most scans give it, none) is repeated, not asked of each of 100,000 partitions."""
    if spec is None or isinstance(spec, int):
        return itertools.repeat(spec, len(files))
    return [spec.get((pf.topic, pf.partition)) for pf in files]


def _slices(pf: PartitionFiles, logs: list[SegmentFiles], start: int, end: int | None) -> list[Slice]:
    """The byte ranges of the segments holding offsets ``[start, end)`` (``logs``: ``pf``'s), cut at
    ``.index`` entries: a segment entirely outside the range is not opened. A segment gives offsets
    from its :attr:`~kafkalog.log.source.SegmentFiles.first` to the next one's (or to its ``until``)."""
    out = []
    count = len(logs)
    for n, seg in enumerate(logs):
        nxt = seg.until if seg.until is not None else logs[n + 1].first if n + 1 < count else None
        seg_first = seg.first
        if not seg.size or (nxt is not None and nxt <= start) or (end is not None and seg_first >= end):
            continue
        lo = start if start > seg_first else seg_first
        first, last = lo > seg.base_offset, end is not None and (nxt is None or end < nxt)
        if not first and not last:  # the whole segment (most are): no index is read
            out.append(_new_slice(seg, 0, None))
            continue
        idx = offset_index(pf, seg)
        pos, stop = 0, None
        if idx is not None and len(idx):
            if first:
                pos = idx.lookup(lo)[1]
            if last:
                # the append that holds ``end - 1`` ends before the next index entry after the first one at or past it
                k = int(idx.offsets.searchsorted(end, side="left"))
                if k + 1 < len(idx):
                    stop = int(idx.positions[k + 1])
        out.append(_new_slice(seg, pos, stop))
    return out


def start_floor(files: PartitionFiles, *, include_deleted: bool = False) -> int:
    """The lowest offset a read of ``files`` returns (SPEC R-VAL-10): the log start offset, or with
    ``include_deleted`` the first segment's base offset (the deleted records the files still hold);
    0 when no ``.log`` is there."""
    return _floor(files.logs, files.log_start_offset, include_deleted)


def _floor(logs: list[SegmentFiles], log_start: int | None, include_deleted: bool) -> int:
    """:func:`start_floor` of a partition whose :attr:`~PartitionFiles.logs` and log start offset are known."""
    return logs[0].base_offset if include_deleted and logs else log_start or 0


def plan(
    files: PartitionFiles,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    start_time: int | None = None,
    end_time: int | None = None,
    read_committed: bool = False,
    include_deleted: bool = False,
) -> PartitionPlan | None:
    """One partition's reads for offsets from ``start_offset`` (default: the log start offset, see
    :func:`scan`; never below it unless ``include_deleted``, then never below the first segment) to
    ``end_offset`` (exclusive; default: the end), narrowed by times as Kafka's ListOffsets resolves
    them: from the first record at or after ``start_time`` to the first at or after ``end_time``.
    None when nothing can be in range (no record at or after ``start_time``)."""
    return _plan(files, files.log_start_offset, start_offset, end_offset, start_time, end_time, read_committed, include_deleted)


def _plan(files: PartitionFiles, log_start: int | None, start_offset: int | None, end_offset: int | None, start_time: int | None,
          end_time: int | None, read_committed: bool, include_deleted: bool) -> PartitionPlan | None:
    """:func:`plan`, its options by place, given the partition's log start offset (:func:`plan_all`
    calls it for each of many partitions, and asks for the log start offset once)."""
    logs = files.logs
    floor = _floor(logs, log_start, include_deleted)
    start = floor if start_offset is None or start_offset < floor else start_offset
    end = end_offset
    if not logs:
        return _new_plan(files, start, end, (), (), None)
    if start_time is not None:
        t = offset_for_timestamp(files, start_time)
        if t is None:
            return None
        start = max(start, t)
    if end_time is not None:
        t = offset_for_timestamp(files, end_time)
        if t is not None:
            end = t if end is None else min(end, t)
    aborted: tuple[AbortedTxn, ...] = ()
    lso = None
    if read_committed:
        lso = describe(files).last_stable_offset
        end = lso if end is None or lso is None else min(end, lso)
        aborted = tuple(aborted_transactions(files, start, end))
    if end is not None and end <= start:
        return _new_plan(files, start, end, (), aborted, lso)
    return _new_plan(files, start, end, tuple(_slices(files, logs, start, end)), aborted, lso)


def _as_set(v: object, kind: type) -> set | None:
    if v is None:
        return None
    if isinstance(v, kind):
        return {v}
    return set(v)  # type: ignore[call-overload]


def _slice_end(sl: Slice) -> int:
    return sl.end if sl.end is not None else sl.segment.size


def read_ahead(plans: Iterable[PartitionPlan], part: tuple[int, int] | None = None) -> ReadAhead:
    """What ``plans`` read of object storage, fetched ahead of the reading (:class:`~kafkalog.log.ranges.ReadAhead`):
    give it to :func:`read_plans` or :func:`read_records` that read these plans in this order (and ``part``), and close it."""
    cut = slice(None) if part is None else slice(*part)
    return ReadAhead((p.files.storage, sl.segment.log, sl.start, _slice_end(sl)) for p in plans for sl in p.slices[cut])  # type: ignore[misc]


def _runs(p: PartitionPlan, ahead: ReadAhead, part: tuple[int, int] | None = None) -> Iterator[tuple[int, int | None, Iterator[LogReader]]]:
    """``p``'s slices as runs, each with the offsets it gives records from and up to (None: to the
    plan's end) and its readers; ``part``: only slices ``[i, j)``, each run's offsets those of the
    whole run (a share of the partition read as the whole read reads it)."""
    storage = p.files.storage

    def readers(slices: list[Slice]) -> Iterator[LogReader]:
        for sl in slices:
            log, end = sl.segment.log, _slice_end(sl)
            with ahead.open(storage, log, sl.start, end, sl.segment.size) as f, LogReader(  # type: ignore[arg-type]
                    f, name=p.files.display(log), start=sl.start, end=end or None) as reader:
                yield reader

    # a segment whose first offsets an earlier one gave (tiered storage's overlap, another copy of the
    # partition) starts a run read from its own first offset; one whose last offsets a later copy gives ends its run
    runs: list[list[tuple[int, Slice]]] = []
    for i, sl in enumerate(p.slices):
        if not _continues(p, i):
            runs.append([])
        runs[-1].append((i, sl))
    lo, hi = (0, len(p.slices)) if part is None else part
    for run in runs:
        until = run[-1][1].segment.until
        end = until if p.end is None else p.end if until is None else min(p.end, until)
        if mine := [sl for i, sl in run if lo <= i < hi]:
            yield max(p.start, run[0][1].segment.first), end, readers(mine)


def _continues(p: PartitionPlan, i: int) -> bool:
    """Whether ``p``'s slice ``i`` is read on from the slice before it, in one run (see :func:`_runs`)."""
    return i > 0 and p.slices[i].segment.first_offset is None and p.slices[i - 1].segment.until is None


def committed_at(p: PartitionPlan, i: int) -> CommittedState | None:
    """The read_committed state a read of ``p`` holds on reaching its slice ``i``, as the
    partition's ``.txnindex`` files give it (:meth:`~kafkalog.fast.arrow.CommittedState.at`); None
    where the read starts afresh (the first slice, or one whose first offsets an earlier one gave)."""
    from kafkalog.fast.arrow import CommittedState

    return CommittedState.at(p.aborted, p.slices[i].segment.first) if _continues(p, i) else None


def _read(p: PartitionPlan, columns: list[str], read_committed: bool, batch_rows: int, verify_crc: bool,
          on_corrupt: OnCorrupt, ahead: ReadAhead, part: tuple[int, int] | None = None, committed: CommittedState | None = None,
          on_committed: Callable[[CommittedState | None], None] | None = None) -> Iterator[pa.RecordBatch]:
    from kafkalog.fast.arrow import read_partition

    first = 0 if part is None else part[0]
    if read_committed and committed is None and first > 0:
        committed = committed_at(p, first)
    ended: list[CommittedState | None] = [None]
    for k, (start, end, readers) in enumerate(_runs(p, ahead, part)):
        for batch in read_partition(
            readers, topic=p.topic, partition=p.partition, start=start, end=end, aborted=p.aborted,
            last_stable_offset=p.last_stable_offset, read_committed=read_committed, include_headers="headers" in columns, columns=columns,
            max_rows=batch_rows, verify_crc=verify_crc, on_corrupt=on_corrupt, committed=committed if k == 0 and _continues(p, first) else None,
            on_committed=lambda state: ended.__setitem__(0, state),
        ):
            yield batch if batch.schema.names == columns else batch.select(columns)
    if on_committed is not None:
        on_committed(ended[0])


def scan(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    topics: str | Iterable[str] | None = None,
    partitions: int | Iterable[int] | None = None,
    start_offset: Offsets = None,
    end_offset: Offsets = None,
    start_time: Time = None,
    end_time: Time = None,
    read_committed: bool = False,
    columns: Sequence[str] | None = None,
    allow_gaps: bool = False,
    batch_rows: int = BATCH_ROWS,
    tiered: str | os.PathLike[str] | None = None,
    private_keys: Mapping[str, str | os.PathLike[str]] | Keyring | None = None,
    include_internal: bool = False,
    include_deleted: bool = False,
    verify_crc: bool = True,
    on_corrupt: OnCorrupt = "fail",
    key_format: str | None = None,
    value_format: str | None = None,
    schemas: Registry | None = None,
    on_undecodable: str = "error",
    validate: bool = False,
    workers: int = 1,
    plan_jobs: int | None = None,
) -> pa.RecordBatchReader:
    """Every record of the partitions under ``path`` as a :class:`pyarrow.RecordBatchReader`, as
    Kafka consumers of each partition would receive them: partition by partition (sorted by topic
    and partition), each in offset order, transaction markers left out.

    ``path``: a broker data dir (a ``log.dirs`` entry), a partition dir (``orders-0``), a glob of
    them (``data/orders-*``), an fsspec URL (``s3://bucket/data``: the ``s3`` extra), or a list of
    these. ``topics`` and ``partitions`` keep only those. Kafka's internal topics
    (:data:`kafkalog.log.reads.INTERNAL_TOPICS`: ``__consumer_offsets``, ``__transaction_state``,
    ...) are left out unless named in ``topics`` or ``include_internal`` is set, as Kafka's
    consumers leave them out of a pattern subscription (``exclude.internal.topics=true``). The schema is the Spark source's
    (:data:`kafkalog.fast.arrow.KAFKA_SCHEMA`: key, value, topic, partition, offset, timestamp,
    timestampType, headers), or the ``columns`` asked for, in that order; every row carries its
    partition's real topic and partition, and an empty result still has the schema.

    A partition is read from its log start offset, where a consumer's "earliest" starts: the data
    dir's ``log-start-offset-checkpoint`` entry when there is one (records below it were deleted by
    DeleteRecords or retention and wait only for their segment to go), else its first segment
    (:func:`kafkalog.log.reads.log_start_offset`). An explicit ``start_offset`` below it starts at
    it, with a warning, as a consumer's out-of-range position is reset to the earliest offset;
    ``include_deleted=True`` reads the deleted records the files still hold (from the first segment).

    Offsets and times select as a consumer seeking does, pushed down through the indexes so that
    segments outside the range are not read: ``start_offset`` (inclusive) and ``end_offset``
    (exclusive), each one number for every partition or a ``{(topic, partition): offset}`` mapping;
    ``start_time`` and ``end_time`` (ms since the epoch, or a datetime; naive means UTC) become the
    offset of the first record whose timestamp is at or after them (Kafka's offsetsForTimes, as the
    Spark source's startingTimestamp/endingTimestamp), so rows run from the first record at or
    after ``start_time`` up to, not including, the first at or after ``end_time``. With
    ``read_committed`` the records of aborted transactions and those from the last stable offset on
    are left out, as a read_committed consumer leaves them.

    Memory stays bounded by a few batches of at most ``batch_rows`` rows: the files are read as the
    reader is consumed. A path holding no partition raises :class:`~kafkalog.errors.LogNotFoundError`.

    No silent gaps: offsets in range that a partition's own files say existed but no ``.log`` holds
    (a ``.log`` missing beside its indexes or snapshot, a log ending before its snapshot says it
    did: :mod:`kafkalog.log.gaps`) raise :class:`~kafkalog.errors.DataLossError` naming the
    partition and the offsets, before anything is read; with ``allow_gaps=True`` each is logged as
    a warning and the rest is read (Spark's ``failOnDataLoss=false``).

    No silent corruption: every batch's CRC is checked before its records are read, as Kafka's
    consumer does (``check.crcs=true``, SPEC R-VAL-09). A batch whose CRC does not match raises
    :class:`~kafkalog.errors.CrcMismatchError` naming the ``.log``, the byte position and the offset,
    as the reader reaches it; with ``on_corrupt="skip"`` it is logged as a warning and left out, and
    the rest is read; ``verify_crc=False`` turns the check off, for speed.

    Folders are searched at any depth, and a partition held by several directories (its replicas
    under each broker's data dir) is read as one log whatever the order of the paths
    (:func:`kafkalog.log.replicas.one_view`, SPEC §6.9): each offset once, from the copies that hold
    it; copies holding different records at the same offsets raise
    :class:`~kafkalog.errors.ReplicaDivergenceError` naming both, or with ``allow_gaps=True`` warn
    and read the copy Kafka keeps.

    Tiered storage: ``tiered`` is a prefix (a directory or ``s3://...``) holding the objects Aiven's
    tiered-storage plug-in wrote, and ``path`` then the broker's local data or partition dirs
    (optional). Each partition is one log across tiers (SPEC D.6,
    :meth:`kafkalog.log.tiered.TieredPartition.files`): remote segments, then local ones, each
    offset once; a hole between segments is data loss as above. ``private_keys`` maps the
    plug-in's key-pair ids to private key (PEM) files, for encrypted segments.

    Keys and values as data: ``key_format`` and ``value_format`` (``avro``, ``json``, ``auto``,
    ``string``, ``int``, ... :mod:`kafkalog.dataset.values`) turn the ``key`` and ``value`` columns
    into typed ones: for Avro a struct per record, its Arrow types from the topic subject's latest
    schema, every version read with that one as the reader schema. Schemas come from ``schemas``
    (:class:`kafkalog.dataset.registry.Registry`: schema files, a registry URL), by default from
    the ``_schemas`` topic under ``path``. A value that does not decode raises
    :class:`~kafkalog.errors.SchemaError` naming topic, partition, offset and schema id, unless
    ``on_undecodable`` is ``null`` or ``skip`` (a logged warning, and a null or no row).
    ``validate=True`` also checks each JSON Schema value against its schema (the jsonschema library,
    extra ``jsonschema``; the CLI's ``--validate``): an invalid one is undecodable as above.

    ``workers``: threads that read the next partitions ahead while the current one is consumed
    (each up to :data:`READ_AHEAD` batches ahead, so memory stays bounded). The result is the same,
    batch for batch, whatever the number (``Table.equals`` holds), and an error is raised where
    one thread would raise it. Threads, not processes: the compiled kernels frame, check and walk
    batches without the GIL (``nogil`` in ``kafkalog/fast/_columnar.pyx``) and pyarrow builds
    arrays without it, and the batches need no copying between processes; the plain-Python path
    (``KAFKALOG_NO_EXTENSIONS=1``) gains little. The default is 1 (see ``bench/export.py --scan-workers``
    for the figures): on the readers' hot path the GIL is held for most of a batch's work.

    ``plan_jobs``: thousands of partition dirs on local disk (:data:`PARALLEL_PLANNING`) are listed,
    made partitions of and have their data loss found by that many worker processes (the
    ``list_many`` of :func:`~kafkalog.log.source.find_partitions`; by default one per CPU, unless a
    worker would run the program's script again; 1: none; see :func:`plan_all`'s ``jobs``), with
    the same plans and errors."""
    want_topics = _as_set(topics, str)
    want_parts = _as_set(partitions, int)
    paths = [] if path is None else [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]

    def wants(topic: str, partition: int) -> bool:
        return includes_topic(topic, want_topics, include_internal=include_internal) and (want_parts is None or partition in want_parts)

    schema_of(columns)  # a wrong column fails before any listing
    # listing and planning make a few long-lived objects per partition: one pause of the garbage collector
    # over both, so that its one collection of them (when it is given back) comes once, not after each
    with gc_paused():
        if tiered is not None:
            from kafkalog.format.tiered_aiven import Keyring, read_private_keys
            from kafkalog.log.tiered import tiered_files

            keys = private_keys if isinstance(private_keys, Keyring) else read_private_keys({k: os.fspath(v) for k, v in (private_keys or {}).items()})
            files = tiered_files(os.fspath(tiered), paths, keys=keys, wants=wants)
        elif not paths:
            raise ValueError("scan needs a path (or tiered=PREFIX)")
        else:
            files = discover(paths, wants=wants, list_many=_lister(plan_jobs))
        decoding = None
        if key_format not in (None, "bytes") or value_format not in (None, "bytes"):
            from kafkalog.dataset.registry import SCHEMAS_TOPIC, Registry
            from kafkalog.dataset.values import WIRE_FORMATS, Decoding

            formats = {r: f for r, f in (("key", key_format), ("value", value_format)) if f not in (None, "bytes")}
            if schemas is None and WIRE_FORMATS.intersection(formats.values()):
                schemas = Registry.open(topic_records(paths, SCHEMAS_TOPIC))
            decoding = Decoding(formats, schemas, on_undecodable=on_undecodable, warn=log.warning, validate=validate)  # type: ignore[arg-type]
        return scan_files(files, start_offset=start_offset, end_offset=end_offset, start_time=start_time, end_time=end_time,
                          read_committed=read_committed, columns=columns, allow_gaps=allow_gaps, batch_rows=batch_rows,
                          include_deleted=include_deleted, verify_crc=verify_crc, on_corrupt=on_corrupt, decoding=decoding, workers=workers,
                          plan_jobs=plan_jobs)


def topic_records(paths: Sequence[str | os.PathLike[str]], topic: str) -> Iterator[tuple[bytes | None, bytes | None, int]] | None:
    """The ``(key, value, offset)`` of every record of ``topic`` under ``paths``, read as :func:`scan`
    reads (CRCs checked, data loss an error); None when no partition of it is there. For small
    topics that hold state, such as the Schema Registry's ``_schemas``."""
    from kafkalog.errors import LogNotFoundError

    try:
        files = discover([os.fspath(p) for p in paths], wants=lambda t, p: t == topic)
    except LogNotFoundError:
        return None
    if not files:
        return None
    plans = plan_all(files)

    def records() -> Iterator[tuple[bytes | None, bytes | None, int]]:
        for b in read_plans(plans, columns=["key", "value", "offset"]):
            yield from zip(b.column(0).to_pylist(), b.column(1).to_pylist(), b.column(2).to_pylist(), strict=True)

    return records()


def schema_of(columns: Sequence[str] | None) -> pa.Schema:
    """The schema :func:`scan` gives for ``columns`` (None: all of :data:`~kafkalog.fast.arrow.KAFKA_SCHEMA`)."""
    return _schema_of(None if columns is None else tuple(columns))


@functools.lru_cache(maxsize=64)
def _schema_of(columns: tuple[str, ...] | None) -> pa.Schema:
    # asked for once per partition read: building a pyarrow schema costs more than a small partition's rows
    import pyarrow as pa

    from kafkalog.fast.arrow import KAFKA_SCHEMA

    cols = list(KAFKA_SCHEMA.names if columns is None else columns)
    unknown = [c for c in cols if c not in KAFKA_SCHEMA.names]
    if unknown or len(set(cols)) != len(cols):
        raise ValueError(f"columns must be distinct names among {KAFKA_SCHEMA.names}; got {cols}")
    return pa.schema([KAFKA_SCHEMA.field(c) for c in cols])


def _warn(gap: Gap) -> None:
    log.warning("%s (gaps allowed: reading on)", gap)


def _warn_deleted(message: str) -> None:
    log.warning("%s", message)


def plan_all(
    files: Iterable[PartitionFiles],
    *,
    start_offset: Offsets = None,
    end_offset: Offsets = None,
    start_time: Time = None,
    end_time: Time = None,
    read_committed: bool = False,
    allow_gaps: bool = False,
    on_gap: Callable[[Gap], None] = _warn,
    include_deleted: bool = False,
    on_deleted: Callable[[str], None] = _warn_deleted,
    jobs: int | None = None,
) -> list[PartitionPlan]:
    """The plans of several partitions (see :func:`plan`), those with nothing in range left out.

    Offsets in range that a partition's own files say existed but no ``.log`` holds are data loss
    (:mod:`kafkalog.log.gaps`): one :class:`~kafkalog.errors.DataLossError` names every such range
    of every partition, unless ``allow_gaps``, when each is passed to ``on_gap`` (default: a logged
    warning) and the rest is read. A ``start_offset`` below a partition's log start offset starts
    there (unless ``include_deleted``), and ``on_deleted`` (default: a logged warning) is told so.

    Finding the data loss is most of planning's work (each partition's last segment's indexes and
    ``.log`` end are read): a partition whose loss was found when it was listed (by :func:`scan`'s
    workers: :attr:`~kafkalog.log.source.PartitionFiles.found_gaps`) is not asked again; with
    :data:`PARALLEL_PLANNING` or more others on local disk it is done by ``jobs`` worker processes
    (:mod:`kafkalog.dataset.processes`; None: the CPUs available, 1: in this process; None also
    keeps it here when a worker would run the program's script again, see
    :func:`main_runs_again`) while this one plans, with the same plans, warnings and errors, in
    the same order."""
    t0, t1 = _ms(start_time), _ms(end_time)
    plans = []
    lost: list[Gap] = []
    files = list(files)
    found = _lost_in_processes(files, jobs)

    def planned(i: int, pf: PartitionFiles, asked: int | None, end: int | None) -> tuple[PartitionPlan | None, int | None, int | None, list[Gap]]:
        log_start = pf.log_start_offset
        p = _plan(pf, log_start, asked, end, t0, t1, read_committed, include_deleted)
        return p, asked, log_start, [] if p is None else pf.gaps() if found is None else found(i, pf)

    # many partitions' plans, long-lived: no full collection between them
    with gc_paused(), contextlib.closing(found) if found is not None else contextlib.nullcontext():
        # on object storage each partition's index and log-end reads are requests: several partitions' at a time
        items = zip(itertools.count(), files, _offsets_for(start_offset, files), _offsets_for(end_offset, files))
        if any(issubclass(kind, UrlStorage) for kind in set(map(type, map(_STORAGE, files)))):  # a kind or two, however many partitions
            results: Iterable = ((item[1], r) for item, r in map_ahead(lambda item: planned(*item), items,
                                                                        remote=lambda item: isinstance(item[1].storage, UrlStorage)))
        else:
            results = zip(files, itertools.starmap(planned, items), strict=True)
        for pf, (p, asked, log_start, gaps) in results:
            if p is None:
                continue
            if asked is not None and not include_deleted and log_start is not None and asked < log_start:
                on_deleted(f"{pf.display()}: offsets {asked} to {log_start - 1} are below the log start offset {log_start} (deleted "
                           f"records): reading from {log_start} (include_deleted=True, --include-deleted in the CLI, reads what the "
                           "files still hold of them)")
            if gaps:
                lost.extend(g for g in gaps if g.end > p.start and (p.end is None or g.start < p.end))
            plans.append(p)
    lost.sort(key=lambda g: not isinstance(g, Divergence))  # a divergence first: the error is a ReplicaDivergenceError
    if lost and not allow_gaps:
        e = gaps_error(lost)
        raise type(e)(f"{e.message} (allow_gaps=True, --allow-gaps in the CLI, reads the rest with a warning)", file=e.file,
                      offset=e.offset, gaps=e.gaps)
    for g in lost:
        on_gap(g)
    return plans


_STORAGE = operator.attrgetter("storage")


#: Partition dirs on local disk from which :func:`scan` lists them, and :func:`plan_all` finds their
#: data loss, in worker processes: starting them (about 0.3 s) costs less than the work they share
#: (some 0.1-0.3 ms a partition).
PARALLEL_PLANNING = 4096


class _LostAhead:
    """The data loss (:meth:`PartitionFiles.gaps`) of the partitions on local disk among ``files``
    (a :class:`~kafkalog.log.replicas.ReplicatedFiles` keeps what it found, and object storage's
    requests overlap in threads: those are found here), found in runs by worker processes ahead of
    their asking: ``self(i, files[i])`` is the partition's. A partition whose finding failed in a
    worker is found again here, so that its error is raised as one process raises it; so are those
    of a worker's run and after when a worker dies, or when none can be started."""

    def __init__(self, files: list[PartitionFiles], mine: list[int], jobs: int) -> None:
        from kafkalog.dataset.processes import WorkerDied, ordered_map, runs, span

        self.died = WorkerDied

        self.tasks = runs(mine, [1] * len(mine), jobs)
        self.mine = set(mine)
        self.held: dict[int, list[Gap] | None] = {}
        self.next = 0  # the first task whose results are not in
        self.results = ordered_map(_find_lost, [[_lost_task(files[i]) for i in t] for t in self.tasks], jobs,
                                   names=lambda k: span([files[i].display() for i in self.tasks[k]]), preload=[__name__])

    def __call__(self, i: int, pf: PartitionFiles) -> list[Gap]:
        if i not in self.mine:
            return pf.gaps()
        while self.next < len(self.tasks) and self.tasks[self.next][0] <= i:
            try:
                found = next(self.results)
            except self.died:  # this task's partitions and the rest are found here
                self.mine = set()
                return pf.gaps()
            for j, gaps in zip(self.tasks[self.next], found, strict=True):
                if gaps != []:
                    self.held[j] = gaps
            self.next += 1
        gaps = self.held.pop(i, [])
        return pf.gaps() if gaps is None else gaps

    def close(self) -> None:
        """Stops the workers (those under way finish): planning may end before every result is asked for."""
        self.results.close()  # type: ignore[attr-defined]


def _lost_in_processes(files: list[PartitionFiles], jobs: int | None) -> _LostAhead | None:
    """:class:`_LostAhead` for ``files`` when :data:`PARALLEL_PLANNING` or more on local disk have
    their data loss to find and more than one process may be used (None: each partition's loss is
    found as it is planned)."""
    mine = [i for i, pf in enumerate(files) if pf.found_gaps is None and type(pf) is PartitionFiles and isinstance(pf.storage, LocalStorage)]
    jobs = _planning_jobs(len(mine), jobs)
    return _LostAhead(files, mine, jobs) if jobs > 1 else None


def _planning_jobs(count: int, jobs: int | None) -> int:
    """The processes that plan ``count`` partitions on local disk (1: this one alone): ``jobs``, by
    default the CPUs available, when there are :data:`PARALLEL_PLANNING` or more, unless a worker
    would run the program's script again (:func:`main_runs_again`) or this process may start none."""
    if count < PARALLEL_PLANNING or jobs == 1 or (jobs is None and main_runs_again()):
        return 1
    import multiprocessing

    if multiprocessing.current_process().daemon:  # a daemonic process (a pool's worker) may start none
        return 1
    if jobs is None:
        from kafkalog.dataset.processes import default_jobs

        jobs = default_jobs()
    return jobs


def _lister(jobs: int | None) -> _Lister | None:
    """:func:`~kafkalog.log.source.find_partitions`'s ``list_many`` for planning with ``jobs``
    processes (see :func:`plan_all`); None when no worker may be started: the walk lists each
    directory as it meets it."""
    jobs = _planning_jobs(PARALLEL_PLANNING, jobs)
    return _Lister(jobs) if jobs > 1 else None


#: the modules the planning workers' server imports before it forks them
_LISTING_PRELOAD = ["kafkalog.log.source"]


class _Lister:
    """:func:`~kafkalog.log.source.find_partitions`'s ``list_many``: once the walk has met
    :data:`PARALLEL_PLANNING` partition dirs (``start_at``), they, and then each as the walk meets
    it, are listed, made partitions of and have their data loss found by ``jobs`` worker processes
    (:func:`~kafkalog.log.source.list_candidates`) while the walk goes on.

    The workers' server is started then, and the walk goes on over :data:`_SERVER_LEAD` times as
    many before the first run is sent: the server's start (a fresh interpreter's imports, about
    0.3 s, for which sending a task waits) runs beside that much of the walk (about 0.2 s at some
    12 us a dir) instead of keeping this process waiting."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.start_at = PARALLEL_PLANNING

    def __call__(self, candidates: Iterator[Candidate]) -> Iterator[Listed | None]:
        from kafkalog.dataset.processes import start_server

        start_server(_LISTING_PRELOAD)
        met = list(itertools.islice(candidates, _SERVER_LEAD * self.start_at))
        return _listed_in_processes(itertools.chain(met, candidates), self.jobs, max(1, self.start_at // (2 * self.jobs)))


#: the walk's lead over the listing workers (see :class:`_Lister`), in :data:`PARALLEL_PLANNING`s
_SERVER_LEAD = 4


def _listed_in_processes(candidates: Iterator[Candidate], jobs: int, size: int) -> Iterator[Listed | None]:
    """:func:`~kafkalog.log.source.list_candidates` of ``candidates``, taken as they come, in runs
    of ``size`` spread over ``jobs`` worker processes (the candidates met when the listing starts
    make two runs per process), one result per candidate in order; from a worker's death on, None
    for each (this process lists them, and meets what one process meets)."""
    from kafkalog.dataset.processes import WorkerDied, cut, ordered_map, span

    sent: collections.deque[list[Candidate]] = collections.deque()  # the runs sent whose results are not in, first to last
    given = 0  # the runs whose results are in

    def tasks() -> Iterator[list[Candidate]]:
        for run in cut(zip(candidates, itertools.repeat(1)), size):
            sent.append(run)
            yield run

    cuts = tasks()
    results = ordered_map(list_candidates, cuts, jobs, names=lambda k: span([c[0] for c in sent[k - given]]), preload=_LISTING_PRELOAD)
    try:
        for listed in results:
            sent.popleft()
            given += 1
            yield from listed
    except WorkerDied:
        for run in itertools.chain(list(sent), cuts):  # those taken, then the rest as the walk meets them
            yield from [None] * len(run)
    finally:
        results.close()  # type: ignore[attr-defined]


def main_runs_again() -> bool:
    """Whether a worker process would run the program's main module again before its task, as
    multiprocessing's ``spawn`` and ``forkserver`` run a script given by path or a module run with
    ``-m`` (as ``__mp_main__``): a script that calls :func:`scan` unguarded by ``if __name__ ==
    "__main__":`` (Python's "safe importing of main module" rule, which a program that never
    started a process need not follow) would run again in each. Planning then stays in this
    process unless ``jobs`` is given. An interactive session, ``python -c`` and a package's
    ``__main__`` are not run again."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return not (name == "__main__" or name.endswith(".__main__"))
    return getattr(main, "__file__", None) is not None


#: the fields of a segment, in the order :class:`SegmentFiles` takes them
_SEGMENT_FIELDS = tuple(f.name for f in dataclasses.fields(SegmentFiles))


def _lost_task(pf: PartitionFiles) -> tuple:
    """What a worker needs of a partition on local disk to find its data loss, as plain values (a
    tuple pickles several times faster than the dataclasses); of its data dir's checkpoints, only
    the partition's own entries."""
    tp = (pf.topic, pf.partition)
    return (pf.topic, pf.partition, pf.dir, tuple(tuple(getattr(s, f) for f in _SEGMENT_FIELDS) for s in pf.segments), pf.snapshots,
            pf.listing, pf.log_dir.log_start.get(tp), pf.log_dir.log_end_at_shutdown.get(tp))


def _find_lost(task: list[tuple]) -> list[list[Gap] | None]:
    """In a worker process: the data loss of each partition of ``task`` (:func:`_lost_task`), None
    where finding it failed (it is found again, and fails, in the planning process)."""
    storage = LocalStorage()
    out: list[list[Gap] | None] = []
    with gc_paused():
        for topic, partition, directory, segments, snapshots, listing, log_start, log_end in task:
            pf = PartitionFiles(storage, topic, partition, directory, tuple(SegmentFiles(*s) for s in segments), snapshots,
                                own_offsets(topic, partition, log_start, log_end), listing)
            try:
                out.append(pf.gaps())
            except Exception:  # noqa: BLE001 - raised by the planning process, which finds it again, as one process would
                out.append(None)
    return out


def read_plans(plans: Iterable[PartitionPlan], *, columns: Sequence[str] | None = None, read_committed: bool = False,
               batch_rows: int = BATCH_ROWS, verify_crc: bool = True, on_corrupt: OnCorrupt = "fail",
               ahead: ReadAhead | None = None, part: tuple[int, int] | None = None, committed: CommittedState | None = None,
               on_committed: Callable[[CommittedState | None], None] | None = None) -> Iterator[pa.RecordBatch]:
    """The Arrow batches of planned partitions, one partition after the other, each batch's CRC
    checked as :func:`scan` checks it. What they read of object storage is fetched ahead
    (:func:`read_ahead`; ``ahead``: one made for a longer run of plans, read a part at a time).

    ``part``: only slices ``[i, j)`` of each plan (segments, in offset order), giving the batches
    the whole read gives for them (a batch never holds records of two segments): a share of one
    large partition read by another process (``export -j``). Under ``read_committed`` a part
    starts from ``committed``, the state the read of the slices before it ends in, by default
    the one the ``.txnindex`` files give (:func:`committed_at`); ``on_committed`` is given the
    state each plan's read ends in (None: not read_committed), for the caller to check against
    the next part's (they differ only where the ``.txnindex`` files and the markers disagree)."""
    cols = schema_of(columns).names
    plans = list(plans)
    with read_ahead(plans, part) if ahead is None else contextlib.nullcontext(ahead) as fetched:
        for p in plans:
            yield from _read(p, cols, read_committed, batch_rows, verify_crc, on_corrupt, fetched, part, committed, on_committed)


def scan_files(
    files: Iterable[PartitionFiles],
    *,
    start_offset: Offsets = None,
    end_offset: Offsets = None,
    start_time: Time = None,
    end_time: Time = None,
    read_committed: bool = False,
    columns: Sequence[str] | None = None,
    allow_gaps: bool = False,
    batch_rows: int = BATCH_ROWS,
    include_deleted: bool = False,
    verify_crc: bool = True,
    on_corrupt: OnCorrupt = "fail",
    decoding: Decoding | None = None,
    workers: int = 1,
    plan_jobs: int | None = None,
) -> pa.RecordBatchReader:
    """:func:`scan` of partitions already found (:func:`kafkalog.log.replicas.discover`, or another source of segments);
    ``decoding`` types the key and value columns (:class:`kafkalog.dataset.values.Decoding`); ``workers``
    threads read partitions ahead, ``plan_jobs`` processes help plan them (see :func:`scan`)."""
    import pyarrow as pa

    schema = schema_of(columns)
    plans = plan_all(files, start_offset=start_offset, end_offset=end_offset, start_time=start_time, end_time=end_time,
                     read_committed=read_committed, allow_gaps=allow_gaps, include_deleted=include_deleted, jobs=plan_jobs)
    if decoding is not None:
        typed = decoding.schema(schema, [p.topic for p in plans])
        cols = decoding.columns(schema.names)

        def partition(p: PartitionPlan, ahead: ReadAhead) -> Iterator[pa.RecordBatch]:
            return decoding.batches(read_plans([p], columns=cols, read_committed=read_committed, batch_rows=batch_rows,
                                               verify_crc=verify_crc, on_corrupt=on_corrupt, ahead=ahead), p.topic, p.partition, typed)
    else:
        typed = schema

        def partition(p: PartitionPlan, ahead: ReadAhead) -> Iterator[pa.RecordBatch]:
            return _read(p, schema.names, read_committed, batch_rows, verify_crc, on_corrupt, ahead)
    return pa.RecordBatchReader.from_batches(typed, _partitions(plans, partition, workers))


def _partitions(plans: list[PartitionPlan], partition: Callable[[PartitionPlan, ReadAhead], Iterator[pa.RecordBatch]],
                workers: int) -> Iterator[pa.RecordBatch]:
    """The batches of each plan in turn. Read by one thread, the plans share one fetch-ahead of object storage
    (:func:`read_ahead`); read by ``workers`` threads at once, each partition has its own, since a fetch-ahead
    gives its ranges in the order it was made with."""
    if workers <= 1 or len(plans) <= 1:
        with read_ahead(plans) as ahead:
            for p in plans:
                yield from partition(p, ahead)
        return

    def alone(p: PartitionPlan) -> Iterator[pa.RecordBatch]:
        with read_ahead([p]) as ahead:
            yield from partition(p, ahead)

    yield from _read_ahead([functools.partial(alone, p) for p in plans], workers)


#: Batches a read-ahead thread of :func:`scan` (``workers``) holds at most before the reader takes them.
READ_AHEAD = 4


def _read_ahead(sources: Sequence[Callable[[], Iterator[pa.RecordBatch]]], threads: int) -> Iterator[pa.RecordBatch]:
    """The items of each source in turn, as one thread gives them, the next ``threads - 1`` sources
    read ahead in threads of their own, each into a queue of :data:`READ_AHEAD` batches. A source's
    error is raised when its turn comes, after every item before it. Closing the iterator stops the
    threads (each at its next batch)."""
    if threads <= 1 or len(sources) <= 1:
        for source in sources:
            yield from source()
        return
    import queue
    import threading

    stop = threading.Event()

    def put(q: queue.Queue[tuple[str, object]], item: tuple[str, object]) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce(source: Callable[[], Iterator[pa.RecordBatch]], q: queue.Queue[tuple[str, object]]) -> None:
        try:
            for batch in source():
                if not put(q, ("batch", batch)):
                    return
        except BaseException as e:  # noqa: BLE001 - raised again by the reader, in its thread, in its turn
            put(q, ("error", e))
            return
        put(q, ("end", None))

    queues: dict[int, queue.Queue[tuple[str, object]]] = {}
    started = 0
    try:
        for i in range(len(sources)):
            while started < len(sources) and started < i + threads:
                queues[started] = q = queue.Queue(maxsize=READ_AHEAD)
                threading.Thread(target=produce, args=(sources[started], q), name=f"kafkalog-scan-{started}", daemon=True).start()
                started += 1
            q = queues.pop(i)
            while True:
                kind, item = q.get()
                if kind == "end":
                    break
                if kind == "error":
                    raise item  # type: ignore[misc]
                yield item  # type: ignore[misc]
    finally:
        stop.set()


def read_records(plans: Iterable[PartitionPlan], *, read_committed: bool = False, verify_crc: bool = True,
                 on_corrupt: OnCorrupt = "fail") -> Iterator[tuple[PartitionPlan, Batch, Record]]:
    """The records of planned partitions as :class:`~kafkalog.format.records.record.Record` objects,
    each with its plan and batch: the records :func:`read_plans` gives as Arrow rows, in the same
    order (control records and, with ``read_committed``, aborted transactions left out), for callers
    that handle records one by one (``kafkalog cat``) and need no pyarrow.

    Every batch's CRC is checked first, as a consumer with ``check.crcs=true`` checks it (skipped
    batches and markers too): a mismatch raises :class:`~kafkalog.errors.CrcMismatchError` naming
    the file, position and offset, or with ``on_corrupt`` leaves the batch out
    (:func:`~kafkalog.format.records.stream.checked`); ``verify_crc=False`` turns the check off."""
    plans = list(plans)
    with read_ahead(plans) as ahead:
        for p in plans:
            committed = ReadCommittedFilter(p.aborted) if read_committed else None
            for start, end, readers in _runs(p, ahead):
                batches = _batches_until(readers, end)
                for batch in checked(batches, on_corrupt) if verify_crc else batches:
                    if (committed is not None and committed.skips(batch)) or (isinstance(batch, RecordBatch) and batch.is_control):
                        continue
                    for r in batch.records():
                        if r.offset >= start and (end is None or r.offset < end):
                            yield p, batch, r


def _batches_until(readers: Iterator[LogReader], end: int | None) -> Iterator[Batch]:
    """The batches of ``readers`` up to the first that reaches offset ``end`` (None: all of them);
    a batch starting at or past it is not decoded."""
    for reader in readers:
        for batch in reader.batches():
            if end is not None and isinstance(batch, RecordBatch) and batch.base_offset >= end:
                return
            yield batch
            if end is not None and batch.last_offset >= end - 1:
                return
