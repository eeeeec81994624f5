"""Read one :class:`~.planning.SegmentSlice` into Arrow record batches (runs on executors).

The ``.log`` is opened as kafkalog's own readers open it (on object storage, ranged requests) and decoded a chunk of batches at a time by kafkalog's
columnar decoder (at most :data:`MAX_ROWS` records and a few MB of log per chunk), each chunk
converted and yielded before the next is read, so memory is bounded by one chunk.
"""

from __future__ import annotations

import logging
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

import pyarrow as pa
from fsspec.spec import AbstractFileSystem

from kafkalog.errors import CrcMismatchError, KafkaLogError
from kafkalog.fast.columnar import BatchColumns, ChunkBatches, ChunkColumns, iter_chunks, iter_columns
from kafkalog.format.records.stream import LogReader, OnCorrupt, checked
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.format.tiered_aiven import Keyring
from kafkalog.log.gaps import segment_claim
from kafkalog.log.isolation import ReadCommittedFilter
from kafkalog_spark.arrow import count_rows, pieces_to_arrow
from kafkalog_spark.filters import RowFilter
from kafkalog_spark.layout import SegmentFiles
from kafkalog_spark.planning import SegmentSlice, index_kinds, report_data_loss

__all__ = ["MAX_ROWS", "ReadSettings", "read_slice"]

log = logging.getLogger(__name__)

#: the suffix Kafka gives a segment file it will delete after file.delete.delay.ms

#: Records per decoded chunk, so per yielded Arrow batch at most (unless one Kafka batch holds more).
MAX_ROWS = 32 * 1024


@dataclass(frozen=True)
class ReadSettings:
    """What every slice of one scan shares (picklable)."""

    schema: pa.Schema
    row_filter: RowFilter = RowFilter()
    read_committed: bool = False
    verify_crc: bool = True
    ignore_corrupt_files: bool = False
    fail_on_data_loss: bool = True
    #: private keys for encrypted tiered segments (the PEM text travels to the workers; repr shows key ids only)
    keys: Keyring | None = field(default=None, repr=False)
    #: ``skipCorrupt``: read past a batch whose CRC does not match, with a warning, instead of failing
    skip_corrupt: bool = False
    #: the Kafka release whose decoders fill ``decoded`` (None: the newest; ``auto``: each segment's, :func:`_release_of`)
    kafka_version: str | None = None

    @property
    def on_corrupt(self) -> OnCorrupt:
        """What the decoder does with a corrupt batch: fail, or warn and read on (``skipCorrupt``)."""
        return _warn_corrupt if self.skip_corrupt else "fail"


def _warn_corrupt(err: CrcMismatchError) -> None:
    log.warning("kafkalog source: %s (skipCorrupt=true: its records left out, reading on)", err)


def _display(sl: SegmentSlice) -> str:
    return sl.log if sl.fs.protocol in ("file", "local") else f"{sl.fs.protocol}://{sl.log.lstrip('/')}"


def _open_segment(fs: AbstractFileSystem, path: str, tiered: bool = False, keys: Keyring | None = None) -> BinaryIO:
    """Open a planned segment as every reader opens it (:meth:`~kafkalog_spark.layout.SegmentFiles.open_log`);
    if retention or the cleaner renamed it since planning, it is read under its new name
    (:func:`kafkalog.log.leftovers.renamed_name`: the ``.deleted`` name it keeps for
    file.delete.delay.ms, so that reads in flight can finish, or a swap's final name); gone, it
    raises FileNotFoundError. A tiered segment of Aiven's plug-in opens as the seekable original
    bytes its chunks hold."""
    return SegmentFiles(0, path, 0, tiered=tiered, keys=keys).open_log(fs)


def read_slice(sl: SegmentSlice, settings: ReadSettings) -> Iterator[pa.RecordBatch]:
    """Yield the slice's records as Arrow batches of ``settings.schema``.

    The ``.log`` is decoded by kafkalog's chunked columnar decoder (:func:`~kafkalog.fast.columnar.iter_chunks`),
    which checks each batch's CRC (``verifyCrc``, default true, as Kafka's consumer's ``check.crcs``)
    in its compiled framing pass; an empty schema reads batch headers only. Control batches are
    never returned; under read_committed, batches of the slice's aborted transactions are dropped.
    A corrupt batch is left out with a warning naming it when ``skip_corrupt`` is set
    (``skipCorrupt``). A :class:`~kafkalog.KafkaLogError` (bad CRC, undecodable batch) propagates
    with its file, byte position and offset, unless ``ignore_corrupt_files`` is set: then the rows
    before the bad batch are returned and the rest of the segment is skipped with a warning naming both.
    """
    name = _display(sl)
    fs = sl.fs.get()
    try:
        f = _open_segment(fs, sl.log, sl.tiered, settings.keys)
    except FileNotFoundError:
        report_data_loss(f"segment of {sl.topic}-{sl.partition} (offsets from {sl.lo}) was deleted after planning", name, settings.fail_on_data_loss)
        return
    # the consumer's read_committed algorithm (R-ISO-04), fed every batch of the slice in order
    committed = ReadCommittedFilter((pid, first) for pid, first, _last in sl.aborted) if settings.read_committed and sl.aborted else None
    rf = settings.row_filter
    count_only = not settings.schema.names
    bounds = {"lo": sl.lo, "hi": sl.hi, "offsets": rf.offset, "timestamps_ms": rf.timestamp_ms}
    release = settings.kafka_version
    if release is not None and "decoded" in settings.schema.names:
        release = _release_of(release, f, name, sl.topic)

    def convert(pieces: list) -> pa.RecordBatch | None:
        if count_only:
            n = sum(count_rows(p, lambda i, p=p: p.batch(i, reader), **bounds, committed=committed) for p in pieces)  # type: ignore[arg-type]
            return pa.RecordBatch.from_arrays([pa.nulls(n)], names=["rows"]).select([]) if n else None
        return pieces_to_arrow(pieces, schema=settings.schema, topic=sl.topic, partition=sl.partition, segment=name, **bounds, committed=committed,
                               kafka_version=release)

    reached = sl.lo  # the offset after the last batch read
    with f, LogReader(f, name=name, start=sl.start, end=sl.end) as reader:
        chunks = iter_chunks(reader, max_rows=MAX_ROWS, headers="headers" in settings.schema.names, verify_crc=settings.verify_crc,
                             records=not count_only, on_corrupt=settings.on_corrupt)
        try:
            for piece in chunks:
                out = convert([piece])
                if out is not None:
                    yield out
                reached = max(reached, _last_offset(piece) + 1)
                if sl.hi is not None and _last_offset(piece) >= sl.hi - 1:
                    break
        except KafkaLogError as e:
            if not settings.ignore_corrupt_files:
                raise
            yield from _salvage(f, name, reader.start + reader.valid_bytes, sl, settings, convert, e)
            return
        finally:
            chunks.close()
        if reader.tail is not None and sl.end is None:
            log.info("kafkalog source: %s", reader.tail.message())
    claims = [] if sl.claimed_end is None else [(sl.claimed_end, sl.claim)]
    if sl.claim_indexes is not None:  # the last segment's own indexes, read now that its .log was read to its end
        base, kinds = sl.claim_indexes
        if (c := segment_claim(posixpath.dirname(sl.log), base, index_kinds(kinds), fs=fs)) is not None:
            claims.append(c)
    claim = max(claims, key=lambda c: c[0], default=None)  # the first of the furthest: the names' claims before the indexes'
    if claim is not None and reached < claim[0]:  # R-LOSS-03: the files say the log went further
        report_data_loss(f"offsets {reached} to {claim[0] - 1} are in no .log: the last segment ends at offset {reached}, "
                         f"and {claim[1]}", name, settings.fail_on_data_loss)


def _release_of(release: str, f: BinaryIO, name: str, topic: str) -> str | None:
    """The release whose decoders fill ``decoded``: ``release``, or for ``auto`` the one the whole
    segment's own records say wrote it (the rule of ``--kafka-version auto``,
    :func:`kafkalog.internal.detect.detect_release`, which leaves ``f`` at its start); None (the
    newest) for a topic without an internal decoder."""
    from kafkalog.internal import decoder_for_topic
    from kafkalog.internal.detect import AUTO, detect_release

    if release != AUTO:
        return release
    decoder = decoder_for_topic(topic)
    return None if decoder is None else detect_release(name, decoder, f).name


def _last_offset(piece: ChunkColumns | ChunkBatches | BatchColumns) -> int:
    """The last offset of the last batch a piece holds."""
    if isinstance(piece, BatchColumns):
        return piece.batch.last_offset
    b = piece.batches if isinstance(piece, ChunkColumns) else piece
    assert b is not None
    return int(b.last_offsets[-1]) if len(b) else -1


def _salvage(
    f: BinaryIO, name: str, start: int, sl: SegmentSlice, settings: ReadSettings, convert: Callable[[list], pa.RecordBatch | None],
    error: KafkaLogError,
) -> Iterator[pa.RecordBatch]:
    """``ignoreCorruptFiles``: the rows of the batches from ``start`` (where the chunk that failed
    began) up to the corrupt one, decoded one batch at a time, then a warning naming the file and
    byte position from which the rest of the segment is skipped."""
    with LogReader(f, name=name, start=start, end=sl.end) as reader:
        batches = checked(reader.batches(), settings.on_corrupt) if settings.verify_crc else reader.batches()
        while True:
            try:
                batch = next(batches, None)
                if batch is None or (sl.hi is not None and isinstance(batch, RecordBatch) and batch.base_offset >= sl.hi):
                    break
                out = convert(list(iter_columns([batch]))) if batch.last_offset >= sl.lo else None
            except KafkaLogError as e:
                error = e
                break
            if out is not None:
                yield out
    log.warning("kafkalog source: skipping the rest of %s from byte %s (ignoreCorruptFiles=true): %s", error.file or name, error.position, error.message)


#: Bytes of Arrow data at which a batch is handed to Spark as it is, whatever its rows: joining
#: large batches copies every byte once more for no saving (a chunk of 1 KB values holds ~8,000 rows).
COALESCE_BYTES = 4 << 20


def coalesce(batches: Iterator[pa.RecordBatch], rows: int = MAX_ROWS, nbytes: int = COALESCE_BYTES) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` in batches of at least ``rows`` rows or ``nbytes`` bytes (the last
    one may hold fewer): the small batches of small segments are joined, as Spark takes each
    Arrow batch from a Python source at a cost of its own."""
    pending: list[pa.RecordBatch] = []
    held = held_bytes = 0
    for b in batches:
        size = b.nbytes
        if b.num_rows >= rows or size >= nbytes:  # large enough alone: not copied into a join
            if pending:
                yield pending[0] if len(pending) == 1 else pa.concat_batches(pending)
                pending, held, held_bytes = [], 0, 0
            yield b
            continue
        pending.append(b)
        held += b.num_rows
        held_bytes += size
        if held >= rows or held_bytes >= nbytes:
            yield pending[0] if len(pending) == 1 else pa.concat_batches(pending)
            pending, held, held_bytes = [], 0, 0
    if pending:
        yield pending[0] if len(pending) == 1 else pa.concat_batches(pending)
