"""Iterate the batches of a ``.log`` file or buffer, one batch in memory at a time.

Follows Kafka's FileLogInputStream: an entry is read when at least 17 bytes (offset, size,
epoch/crc and magic) remain; a declared size under 14 bytes is corruption; an entry that runs
past the end of the input, or fewer than 18 remaining bytes, is a torn tail (normal after an
unclean shutdown): iteration stops and :attr:`LogReader.tail` reports it.
"""

from __future__ import annotations

import io
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, Literal

from kafkalog.errors import CorruptRecordError, CrcMismatchError, KafkaLogError, UnsupportedMagicError
from kafkalog.format.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from kafkalog.format.files import is_url, open_read
from kafkalog.format.records.legacy import RECORD_OVERHEAD_V0, LegacyBatch
from kafkalog.format.records.record import Record
from kafkalog.format.records.v2 import HEADER_SIZE, RecordBatch

__all__ = ["Batch", "LogReader", "OnCorrupt", "TornTail", "checked", "corrupt_handler", "crc_error", "next_offset_of", "read_batches"]


Batch = RecordBatch | LegacyBatch
Source = str | os.PathLike | bytes | bytearray | memoryview | BinaryIO
#: What a reader does with a batch whose CRC does not match (R-VAL-09): ``"fail"`` raises its
#: :class:`~kafkalog.errors.CrcMismatchError`; ``"skip"`` logs it as a warning and reads on after the
#: batch; a callable is given the error and reading goes on after the batch.
OnCorrupt = Literal["fail", "skip"] | Callable[[CrcMismatchError], None]

#: offset(8) + size(4) + partitionLeaderEpoch/crc(4) + magic(1)
HEADER_SIZE_UP_TO_MAGIC = 17
LOG_OVERHEAD = 12
_PREFIX = struct.Struct(">qi")
#: A magic 2 batch's header up to its lastOffsetDelta (schemas.RECORD_BATCH_V2_HEADER: baseOffset,
#: batchLength, partitionLeaderEpoch, magic; crc and attributes skipped): what :func:`next_offset_of` reads
_V2_TO_LAST_DELTA = struct.Struct(">qiiB6xi")
#: the header :class:`RecordBatch` needs whole, less the prefix that ``batchLength`` does not count
_V2_MIN_LENGTH = HEADER_SIZE - LOG_OVERHEAD


@dataclass(frozen=True)
class TornTail:
    """Bytes at the end of a log that do not form a whole entry."""

    file: str | None
    position: int
    size: int

    def message(self) -> str:
        name = os.path.basename(self.file) if self.file else "<buffer>"
        return f"Found {self.size} invalid bytes at the end of {name}"


class LogReader:
    """Streams the batches of a ``.log`` file (path, URL such as ``s3://bucket/key``, binary file
    object or bytes).

    Use as a context manager when given a path. ``batches()`` yields :class:`RecordBatch` (magic
    2) or :class:`LegacyBatch` (magic 0/1) objects positioned in the file; memory holds one batch.
    After iteration, :attr:`tail` is a :class:`TornTail` if the input ended inside an entry.
    """

    def __init__(
        self,
        source: Source,
        *,
        name: str | None = None,
        start: int = 0,
        end: int | None = None,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        buffer_size: int = 1 << 20,
    ) -> None:
        self._own = False
        self._buf: bytes | memoryview | None = None
        self._fh: BinaryIO | None = None
        if isinstance(source, (bytes, bytearray, memoryview)):
            self._buf = source if isinstance(source, bytes) else bytes(source)
            self.name = name
            size = len(self._buf)
        elif is_url(source):  # s3://bucket/key and other fsspec URLs: ranged reads
            self.name = name or os.fspath(source)
            self._fh = open_read(source)
            self._own = True
            size = self._fh.seek(0, io.SEEK_END)
        elif isinstance(source, (str, os.PathLike)):
            self.name = name or os.fspath(source)
            self._fh = open(source, "rb", buffering=buffer_size)  # noqa: SIM115 - closed in close()
            self._own = True
            size = os.fstat(self._fh.fileno()).st_size
        else:
            self._fh = source
            self.name = name or getattr(source, "name", None)
            cur = source.tell()
            size = source.seek(0, io.SEEK_END)
            source.seek(cur)
        self.size = size
        self.start = start
        self.end = size if end is None else min(end, size)
        self.max_decompressed_size = max_decompressed_size
        self.tail: TornTail | None = None
        self.valid_bytes = 0

    def __enter__(self) -> LogReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file if this reader opened it."""
        if self._own and self._fh is not None:
            self._fh.close()
            self._fh = None

    def _read(self, pos: int, n: int) -> bytes:
        if self._buf is not None:
            return self._buf[pos : pos + n]
        assert self._fh is not None
        if self._fh.tell() != pos:
            self._fh.seek(pos)
        return self._fh.read(n)

    def batches(self) -> Iterator[Batch]:
        """Yield each batch in file order, stopping at a torn tail."""
        pos = self.start
        end = self.end
        name = self.name
        self.tail = None
        while True:
            if pos >= end - HEADER_SIZE_UP_TO_MAGIC:
                if pos < end:
                    self.tail = TornTail(name, pos, end - pos)
                break
            head = self._read(pos, LOG_OVERHEAD)
            offset, size = _PREFIX.unpack_from(head, 0)
            if size < RECORD_OVERHEAD_V0:
                raise CorruptRecordError(
                    f"found record size {size} smaller than minimum record overhead ({RECORD_OVERHEAD_V0})",
                    file=name, position=pos, offset=offset,
                )
            if pos > end - LOG_OVERHEAD - size:
                self.tail = TornTail(name, pos, end - pos)
                break
            # in memory: one slice of the whole batch (not a slice of its prefix joined to one of the rest)
            data = self._buf[pos : pos + LOG_OVERHEAD + size] if self._buf is not None else head + self._read(pos + LOG_OVERHEAD, size)
            if len(data) != LOG_OVERHEAD + size:
                self.tail = TornTail(name, pos, len(data))
                break
            magic = data[16]
            if magic == 2:
                batch: Batch = RecordBatch(data, pos, name, self.max_decompressed_size)
            elif magic < 2:
                batch = LegacyBatch(data, pos, name, self.max_decompressed_size)
            else:
                raise UnsupportedMagicError(f"unknown magic {magic}", file=name, position=pos, offset=offset)
            yield batch
            pos += len(data)
            self.valid_bytes = pos - self.start

    def next_offset(self) -> int | None:
        """The offset after the last whole batch before the end, a torn tail or a damaged batch (whose
        error is not raised: the log ends before it), None when there is none: where a log's data
        ends, as a reader that stops at damage finds it."""
        end = None
        try:
            for batch in self.batches():
                end = batch.last_offset + 1
        except KafkaLogError:
            pass
        return end

    def records(self, verify_crc: bool = True, on_corrupt: OnCorrupt = "fail") -> Iterator[Record]:
        """Yield every record of every batch, checking each batch's CRC first as Kafka's consumer does
        (R-VAL-09, :func:`crc_error`): a mismatch raises :class:`~kafkalog.errors.CrcMismatchError`
        naming the file, position and offset, or with ``on_corrupt="skip"`` is warned about and the
        batch left out. ``verify_crc=False`` does not check (faster, and the corrupt records come out)."""
        batches = self.batches()
        for batch in checked(batches, on_corrupt) if verify_crc else batches:
            yield from batch.records()

    def __iter__(self) -> Iterator[Batch]:
        return self.batches()


def next_offset_of(data: bytes) -> int | None:
    """The offset after the last whole batch of ``data`` (a ``.log``'s bytes from a batch's start
    on), that is ``batch.last_offset + 1`` of the last batch :meth:`LogReader.batches` gives before the
    end, a torn tail or a damaged batch (:meth:`LogReader.next_offset`); None when it gives none. A log
    end is found this way for every partition a planner weighs (SPEC R-LOSS-03), so magic 2 batches
    are stepped over by their headers alone, one struct each; anything else (an older magic, a
    length too short for a header) is left to :class:`LogReader`, which reads it as it reads any log."""
    unpack = _V2_TO_LAST_DELTA.unpack_from
    size = len(data)
    last_header = size - _V2_TO_LAST_DELTA.size  # the last position a header can be unpacked from
    pos = 0
    end = None
    while pos <= last_header:
        offset, length, _, magic, delta = unpack(data, pos)
        if magic != 2 or length < _V2_MIN_LENGTH:
            break
        pos += LOG_OVERHEAD + length
        if pos > size:
            return end  # a torn tail
        end = offset + delta + 1
    else:
        if pos >= size - HEADER_SIZE_UP_TO_MAGIC:
            return end  # the end, or a torn tail too short to name its magic
    return LogReader(data).next_offset()


def read_batches(source: Source, **kwargs: object) -> Iterator[Batch]:
    """Yield the batches of ``source`` (closing the file when done); see :class:`LogReader`."""
    with LogReader(source, **kwargs) as reader:  # type: ignore[arg-type]
        yield from reader.batches()



def crc_error(batch: Batch) -> CrcMismatchError | None:
    """The first CRC of ``batch`` that does not match its bytes, as the error a reader raises (R-VAL-09),
    or None: a magic 2 batch's CRC-32C (:func:`~kafkalog.format.records.v2.batch_crc_error`); a magic
    0/1 message's CRC-32, then, for a compressed wrapper, each inner message's (Kafka's consumer with
    ``check.crcs=true``: CompletedFetch.maybeEnsureValid)."""
    err = batch.crc_error()
    if err is None and isinstance(batch, LegacyBatch):
        err = next(iter(batch.inner_crc_errors()), None)
    return err


def _warn(err: CrcMismatchError) -> None:
    import logging  # only when a batch is skipped: a small command's start-up does not pay for it

    logging.getLogger(__name__).warning("%s (on_corrupt='skip': the batch is left out, reading on)", err)


def corrupt_handler(on_corrupt: OnCorrupt) -> Callable[[CrcMismatchError], None] | None:
    """What to call with the error of a corrupt batch before reading on after it; None: raise it."""
    if on_corrupt == "fail":
        return None
    if on_corrupt == "skip":
        return _warn
    if callable(on_corrupt):
        return on_corrupt
    raise ValueError(f"on_corrupt must be 'fail', 'skip' or a callable, got {on_corrupt!r}")


def checked(batches: Iterable[Batch], on_corrupt: OnCorrupt = "fail") -> Iterator[Batch]:
    """``batches`` whose CRCs match (:func:`crc_error`); a corrupt one raises its
    :class:`~kafkalog.errors.CrcMismatchError`, or is left out after ``on_corrupt`` has it."""
    handler = corrupt_handler(on_corrupt)
    for batch in batches:
        err = crc_error(batch)
        if err is None:
            yield batch
        elif handler is None:
            raise err
        else:
            handler(err)
