"""Record batches of magic 2 (Kafka 0.11+): reader and builder.

Layout: ``schemas.RECORD_BATCH_V2_HEADER`` (61 bytes) then ``recordsCount`` records
(``schemas.RECORD_V2``), compressed as a whole when the codec bits say so. The hot path here uses
``struct`` and an inlined varint walk; tests hold it against the construct declarations.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from kafkalog.errors import (
    BrokerRejectedBatchError,
    CorruptRecordError,
    CrcMismatchError,
    InvalidRecordError,
    KafkaLogError,
)
from kafkalog.format.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, Codec, codec_of, compress, decompress
from kafkalog.format.primitives import JAVA_UTF8, crc32c, read_varint, read_varlong, write_varint
from kafkalog.format.records.control import ControlType, control_type_of, encode_control_key, encode_end_txn_marker
from kafkalog.format.records.record import Header, Record, TimestampType

if TYPE_CHECKING:
    from kafkalog.format.records.legacy import LegacyBatch

__all__ = [
    "HEADER_SIZE", "RecordBatch", "RecordBatchBuilder", "batch_crc_error", "check_client_batches", "decode_records", "increment_sequence",
    "validate_batch",
]

#: struct layout of the 61-byte v2 batch header (mirrors schemas.RECORD_BATCH_V2_HEADER).
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size
#: Byte position of the attributes field: CRC-32C covers from here to the end of the batch.
CRC_START = 21
CRC_OFFSET = 17

ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
_INT32_MAX = 2**31 - 1
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_MASK64 = 2**64 - 1


_CRC = struct.Struct(">qiibI")  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc


def batch_crc_error(data: bytes | memoryview, *, file: str | None = None, position: int = 0) -> CrcMismatchError | None:
    """The :class:`CrcMismatchError` of the magic 2 batch whose bytes (from its ``baseOffset``) are
    ``data``, when its stored CRC is not the CRC-32C of R-PRIM-07; None when it matches. The one
    check behind :meth:`RecordBatch.ensure_valid`, the readers' default check (R-VAL-09) and
    ``kafkalog verify``'s ``batch-crc`` (DefaultRecordBatch.ensureValid)."""
    base_offset, _length, _epoch, _magic, stored = _CRC.unpack_from(data, 0)
    computed = crc32c(memoryview(data)[CRC_START:])
    if computed == stored:
        return None
    return CrcMismatchError(f"record batch is corrupt (stored crc = {stored}, computed crc = {computed})", file=file, position=position,
                            offset=base_offset)


def _wrap64(value: int) -> int:
    """``value`` as a Java long would hold it (two's complement wrap-around)."""
    return ((value - _INT64_MIN) & _MASK64) + _INT64_MIN


def _int32(v: int) -> int:
    """``v`` as a Java int: its low 32 bits, signed."""
    return ((v + 0x80000000) & 0xFFFFFFFF) - 0x80000000


def increment_sequence(sequence: int, increment: int) -> int:
    """Add to a producer sequence number, wrapping past Int32.MAX_VALUE to 0 as Kafka does, in
    Java int arithmetic (a negative increment, possible only in a crafted batch, overflows
    ``Int32.MAX_VALUE - increment`` there: DefaultRecordBatch.incrementSequence @1eb7644)."""
    if sequence > _int32(_INT32_MAX - increment):
        return _int32(increment - (_INT32_MAX - sequence) - 1)
    return _int32(sequence + increment)


def _bad(msg: str, pos: int) -> CorruptRecordError:
    return InvalidRecordError(msg, position=pos)


def decode_records(
    buf: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None,
    base_sequence: int,
    position: int = 0,
) -> list[Record]:
    """Decode ``count`` records from the (uncompressed) record area ``buf`` of a v2 batch.

    ``position`` is added to in-buffer positions in errors (the file position of ``buf[0]`` for
    uncompressed batches). Raises :class:`InvalidRecordError` on any structural problem, as
    Kafka's DefaultRecord.readFrom does, including bytes left over after the last record.
    """
    if count < 0:
        raise _bad(f"invalid record count {count}", position)
    out: list[Record] = []
    append = out.append
    lat = log_append_time
    pos = 0
    end_buf = len(buf)
    for _ in range(count):
        start = pos
        try:
            # Varints of one or two bytes (lengths below 8 KiB) are decoded inline: the hot path.
            b = buf[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                length = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                length, pos = read_varint(buf, pos)
            body = pos
            end = pos + length
            if length < 0 or end > end_buf:
                raise _bad(f"invalid record size {length}: {end_buf - pos} bytes remain", start)
            attributes = buf[pos]
            pos += 1
            b = buf[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                ts_delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                ts_delta, pos = read_varlong(buf, pos)
            b = buf[pos]
            if b < 0x80:
                off_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                off_delta = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                off_delta, pos = read_varint(buf, pos)
            b = buf[pos]
            if b < 0x80:
                klen = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                klen = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                klen, pos = read_varint(buf, pos)
            if klen < 0:
                key = None
            else:
                if pos + klen > end:
                    raise _bad(f"key of {klen} bytes runs past its record", pos)
                key = buf[pos : pos + klen]
                pos += klen
            b = buf[pos]
            if b < 0x80:
                vlen = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                raw = (b & 0x7F) | (buf[pos + 1] << 7)
                vlen = (raw >> 1) ^ -(raw & 1)
                pos += 2
            else:
                vlen, pos = read_varint(buf, pos)
            if vlen < 0:
                value = None
            else:
                if pos + vlen > end:
                    raise _bad(f"value of {vlen} bytes runs past its record", pos)
                value = buf[pos : pos + vlen]
                pos += vlen
            b = buf[pos]
            if b == 0:
                headers: tuple[Header, ...] = ()
                pos += 1
            else:
                nh, pos = read_varint(buf, pos)
                if nh < 0:
                    raise _bad(f"invalid number of record headers {nh}", pos)
                if nh > end - pos:
                    raise _bad(f"{nh} record headers cannot fit in the record", pos)
                hlist = []
                for _h in range(nh):
                    hk, pos = read_varint(buf, pos)
                    if hk < 0 or pos + hk > end:
                        raise _bad(f"invalid header key size {hk}", pos)
                    hkey = buf[pos : pos + hk].decode("utf-8", JAVA_UTF8)  # as Java decodes it (R-REC-09)
                    pos += hk
                    hv, pos = read_varint(buf, pos)
                    if hv < 0:
                        hval = None
                    else:
                        if pos + hv > end:
                            raise _bad(f"header value of {hv} bytes runs past its record", pos)
                        hval = buf[pos : pos + hv]
                        pos += hv
                    hlist.append((hkey, hval))
                headers = tuple(hlist)
            if pos != end:
                raise _bad(f"invalid record size: expected {length} bytes of record body, read {pos - body}", start)
        except IndexError:
            raise _bad("record runs past the end of its batch", position + start) from None
        except KafkaLogError as e:
            # positions raised in this loop are relative to buf: make them relative to the caller's origin
            e.position = position + (start if e.position is None else e.position)
            raise e.located() from None
        ts = base_timestamp + ts_delta
        if not _INT64_MIN <= ts <= _INT64_MAX:  # Java's long arithmetic wraps
            ts = _wrap64(ts)
        append(
            Record(
                base_offset + off_delta,
                ts if lat is None else lat,
                key,
                value,
                headers,
                -1 if base_sequence < 0 else increment_sequence(base_sequence, off_delta),
                pos - start,
                attributes,
                ts,
            )
        )
    if pos != end_buf:
        raise _bad(f"incorrect declared batch size: {end_buf - pos} bytes remain after {count} records", position + pos)
    return out


class RecordDecoder(Protocol):
    """What decodes a batch's records for :meth:`RecordBatch.records` and iteration."""

    def records(self, batch: RecordBatch) -> list[Record]: ...

    def iter_records(self, batch: RecordBatch) -> Iterator[Record]: ...


class _PlainDecoder:
    """The plain-Python decoder, the reference a faster one is held to."""

    @staticmethod
    def records(batch: RecordBatch) -> list[Record]:
        return batch.records_plain()

    @staticmethod
    def iter_records(batch: RecordBatch) -> Iterator[Record]:
        return iter(batch.records_plain())


_decoder: RecordDecoder | None = None
_decoder_loader: Callable[[], RecordDecoder] | None = None


def set_record_decoder(loader: Callable[[], RecordDecoder] | None) -> None:
    """Plug a faster record decoder in from a layer above: ``loader`` runs on first use and returns it
    (the package plugs in :mod:`kafkalog.fast.objects` this way); ``None`` restores the plain decoder.

    The record format imports nothing from the fast path: the compiled one plugs in from above."""
    global _decoder, _decoder_loader
    _decoder, _decoder_loader = None, loader


def _record_decoder() -> RecordDecoder:
    global _decoder
    if _decoder is None:
        _decoder = _decoder_loader() if _decoder_loader is not None else _PlainDecoder()
    return _decoder


class RecordBatch:
    """A magic-2 batch over its bytes: header fields parsed eagerly, records decoded on demand."""

    __slots__ = (
        "data",
        "position",
        "file",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "count",
        "max_decompressed_size",
    )

    def __init__(
        self,
        data: bytes,
        position: int = 0,
        file: str | None = None,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
    ) -> None:
        if len(data) < HEADER_SIZE:
            raise CorruptRecordError(
                f"record batch is {len(data)} bytes, smaller than the minimum overhead {HEADER_SIZE}",
                file=file,
                position=position,
            )
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.count,
        ) = HEADER.unpack_from(data, 0)
        self.data = data
        self.position = position
        self.file = file
        self.max_decompressed_size = max_decompressed_size

    # -- header-derived properties -------------------------------------------------------------
    @property
    def size_in_bytes(self) -> int:
        """Bytes this batch occupies in the log, including the 12-byte offset/length prefix."""
        return len(self.data)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> Codec:
        try:
            return codec_of(self.attributes & ATTR_COMPRESSION_MASK)
        except KafkaLogError as e:
            raise e.located(file=self.file, position=self.position, offset=self.base_offset) from None

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & ATTR_TIMESTAMP_TYPE else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def delete_horizon_ms(self) -> int | None:
        """The delete horizon stamped by the log cleaner (it is the base timestamp), or None."""
        return self.base_timestamp if self.attributes & ATTR_DELETE_HORIZON else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def is_valid(self) -> bool:
        """True when the stored CRC-32C matches the bytes from the attributes field to the end."""
        return len(self.data) >= HEADER_SIZE and crc32c(memoryview(self.data)[CRC_START:]) == self.crc

    def crc_error(self) -> CrcMismatchError | None:
        """The :class:`CrcMismatchError` :meth:`ensure_valid` raises, or None when the CRC matches."""
        return batch_crc_error(self.data, file=self.file, position=self.position)

    def ensure_valid(self) -> None:
        """Raise :class:`CrcMismatchError` unless the CRC matches (Kafka's ensureValid)."""
        if (err := self.crc_error()) is not None:
            raise err

    # -- records -------------------------------------------------------------------------------
    def records_buffer(self) -> bytes:
        """The record area, decompressed."""
        codec = self.compression
        try:
            if codec is Codec.NONE:
                return self.data[HEADER_SIZE:]
            return decompress(codec, self.data[HEADER_SIZE:], magic=2, max_size=self.max_decompressed_size)
        except KafkaLogError as e:
            raise e.located(file=self.file, position=self.position, offset=self.base_offset) from None

    def records(self, verify_crc: bool = False) -> list[Record]:
        """Decode every record (optionally checking the CRC first).

        A batch whose count is 0 (one the log cleaner emptied) has no records, and its payload
        is not decompressed, as in Kafka."""
        if verify_crc:
            self.ensure_valid()
        if self.count == 0:
            return []
        return (_decoder or _record_decoder()).records(self)

    def records_plain(self) -> list[Record]:
        """:meth:`records` by the plain-Python decoder (the reference the fast path is tested against)."""
        if self.count == 0:
            return []
        buf = self.records_buffer()
        uncompressed = self.attributes & ATTR_COMPRESSION_MASK == 0
        try:
            return decode_records(
                buf,
                self.count,
                self.base_offset,
                self.base_timestamp,
                self.max_timestamp if self.attributes & ATTR_TIMESTAMP_TYPE else None,
                self.base_sequence,
                self.position + HEADER_SIZE if uncompressed else 0,
            )
        except KafkaLogError as e:
            if not uncompressed:
                e.message = f"{e.message} (at byte {e.position} of the decompressed records)"
                e.position = None
            raise e.located(file=self.file, position=self.position, offset=self.base_offset) from None

    def __iter__(self) -> Iterator[Record]:
        """The records without a CRC check, made a few at a time as iteration reaches them (so
        that records already used can be freed); a malformed record raises when it is reached."""
        if self.count == 0:
            return iter(())
        return (_decoder or _record_decoder()).iter_records(self)

    def control_type(self, record: Record) -> ControlType:
        """The control type of one of this batch's records (the batch must be a control batch)."""
        try:
            return control_type_of(record.key)[0]
        except KafkaLogError as e:
            raise e.located(file=self.file, position=self.position, offset=record.offset) from None

    def __repr__(self) -> str:
        return (
            f"RecordBatch(baseOffset={self.base_offset}, lastOffset={self.last_offset}, count={self.count}, "
            f"compression={self.compression.label}, position={self.position})"
        )


def _varint_bytes(value: int) -> bytes:
    out = bytearray()
    write_varint(value, out)
    return bytes(out)


#: Encodings of the varints -8192..8191 (one or two bytes), the values lengths and deltas take:
#: made when a builder first needs them, not at import (16,384 encodings cost more than the import).
_SMALL = 8192
_VARINTS: list[bytes] = []


def _varint(value: int) -> bytes:
    if -_SMALL <= value < _SMALL:
        if not _VARINTS:
            _VARINTS.extend(_varint_bytes(v) for v in range(-_SMALL, _SMALL))
        return _VARINTS[value + _SMALL]
    return _varint_bytes(value)


def _encode_record(
    out: bytearray, offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
    headers: Iterable[Header], attributes: int = 0,
) -> None:
    parts = [bytes((attributes & 0xFF,)), _varint(timestamp_delta), _varint(offset_delta)]
    if key is None:
        parts.append(b"\x01")
    else:
        parts.append(_varint(len(key)))
        parts.append(key)
    if value is None:
        parts.append(b"\x01")
    else:
        parts.append(_varint(len(value)))
        parts.append(value)
    hlist = headers if isinstance(headers, list | tuple) else list(headers)
    parts.append(_varint(len(hlist)))
    for hk, hv in hlist:
        kb = hk.encode("utf-8")
        parts.append(_varint(len(kb)))
        parts.append(kb)
        if hv is None:
            parts.append(b"\x01")
        else:
            parts.append(_varint(len(hv)))
            parts.append(hv)
    body = b"".join(parts)
    out += _varint(len(body))
    out += body


def validate_batch(
    first: RecordBatch | LegacyBatch, batch: RecordBatch | LegacyBatch, *, from_client: bool = True, file: str | None = None
) -> None:
    """Refuse ``batch`` as LogValidator.validateBatch does (R-WR-07), ``first`` being the first batch of
    the same append: every batch must have the first's magic; from a client, a magic 2 batch must also
    hold ``lastOffsetDelta + 1`` records (a positive count), not be a control batch, and carry a
    ``baseSequence >= 0`` when it has a producer id. Raises BrokerRejectedBatchError."""

    def refuse(message: str) -> BrokerRejectedBatchError:
        offset = batch.base_offset if isinstance(batch, RecordBatch) else batch.last_offset
        return BrokerRejectedBatchError(message, file=file or batch.file, position=batch.position, offset=offset)

    if batch.magic != first.magic:
        raise refuse(f"batch magic {batch.magic} is not the same as the first batch's magic {first.magic}")
    if not from_client or not isinstance(batch, RecordBatch):
        return
    from_offsets = batch.last_offset_delta + 1
    if from_offsets <= 0:
        raise refuse(f"batch has an invalid offset range: [{batch.base_offset}, {batch.last_offset}]")
    if batch.count <= 0:
        raise refuse(f"invalid reported count for record batch: {batch.count}")
    if from_offsets != batch.count:
        raise refuse(f"inconsistent batch offset range [{batch.base_offset}, {batch.last_offset}] and count of records {batch.count}")
    if batch.is_control:
        raise refuse("clients are not allowed to write control records")
    if batch.producer_id > NO_PRODUCER_ID and batch.base_sequence < 0:
        raise refuse(f"invalid sequence number {batch.base_sequence} in record batch with producerId {batch.producer_id}")


def check_client_batches(batches: Iterable[RecordBatch | LegacyBatch], *, file: str | None = None) -> None:
    """Check the batches of one produce request as a broker does before accepting them from a client
    (:func:`validate_batch` against the first batch, R-WR-07); raises BrokerRejectedBatchError."""
    first: RecordBatch | LegacyBatch | None = None
    for batch in batches:
        if first is None:
            first = batch
        validate_batch(first, batch, file=file)


class RecordBatchBuilder:
    """Builds one magic-2 batch the way Kafka's MemoryRecordsBuilder does.

    The base timestamp is the first record's timestamp (or the delete horizon when one is set),
    the max timestamp the largest record timestamp (or the log-append time under LogAppendTime),
    the CRC-32C is computed last. Uncompressed output is byte-identical to Kafka's. With
    ``for_broker=True`` :meth:`build` refuses a batch a broker would refuse from a client (R-WR-07).
    """

    def __init__(
        self,
        base_offset: int = 0,
        *,
        compression: Codec = Codec.NONE,
        compression_level: int | None = None,
        timestamp_type: TimestampType = TimestampType.CREATE_TIME,
        log_append_time: int | None = None,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        delete_horizon_ms: int | None = None,
        for_broker: bool = False,
    ) -> None:
        if timestamp_type is TimestampType.NO_TIMESTAMP_TYPE:
            raise ValueError("magic 2 batches carry CreateTime or LogAppendTime")
        if timestamp_type is TimestampType.LOG_APPEND_TIME and log_append_time is None:
            raise ValueError("LogAppendTime batches need log_append_time")
        self.base_offset = base_offset
        self.compression = compression
        self.compression_level = compression_level
        self.timestamp_type = timestamp_type
        self.log_append_time = log_append_time
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        self.delete_horizon_ms = delete_horizon_ms
        self.for_broker = for_broker
        self.base_timestamp: int | None = delete_horizon_ms
        self.max_timestamp = NO_TIMESTAMP
        self._records = bytearray()
        self._count = 0
        self._last_offset_delta = -1

    def __len__(self) -> int:
        return self._count

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Iterable[Header] = (),
        *,
        offset: int | None = None,
        attributes: int = 0,
    ) -> int:
        """Add a record (at ``offset``, default: the next one) and return its offset."""
        offset_delta = self._last_offset_delta + 1 if offset is None else offset - self.base_offset
        if offset_delta <= self._last_offset_delta or offset_delta > _INT32_MAX:
            raise ValueError(f"offset {self.base_offset + offset_delta} is not after the previous record's")
        if self.base_timestamp is None:
            self.base_timestamp = timestamp
        _encode_record(self._records, offset_delta, _wrap64(timestamp - self.base_timestamp), key, value, headers, attributes)
        self._count += 1
        self._last_offset_delta = offset_delta
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        return self.base_offset + offset_delta

    def append_end_txn_marker(self, control_type: ControlType, coordinator_epoch: int, timestamp: int) -> int:
        """Add an ABORT or COMMIT marker (the batch must be a control batch)."""
        if not self.is_control:
            raise ValueError("end-transaction markers go in control batches")
        return self.append(timestamp, encode_control_key(control_type), encode_end_txn_marker(coordinator_epoch))

    def build(
        self,
        *,
        last_offset_delta: int | None = None,
        base_timestamp: int | None = None,
        max_timestamp: int | None = None,
        attributes: int | None = None,
        payload: bytes | None = None,
    ) -> bytes:
        """Return the batch bytes. The keyword overrides let a follower-style copy keep fields
        the cleaner or broker changed (a compacted batch's lastOffsetDelta, a stamped max timestamp),
        and ``payload`` the record area as another client compressed it (a copy of a stored batch;
        the caller checks that it holds the appended records): it is written instead of compressing them.
        With nothing appended and no ``last_offset_delta`` there is no batch (b""), as in Kafka (R-WR-02)."""
        if self._count == 0 and last_offset_delta is None:
            return b""
        codec = self.compression
        if payload is None:
            records = bytes(self._records)
            payload = records if codec is Codec.NONE else compress(codec, records, magic=2, level=self.compression_level)
        attrs = int(codec)
        if self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            attrs |= ATTR_TIMESTAMP_TYPE
        if self.is_transactional:
            attrs |= ATTR_TRANSACTIONAL
        if self.is_control:
            attrs |= ATTR_CONTROL
        if self.delete_horizon_ms is not None:
            attrs |= ATTR_DELETE_HORIZON
        if attributes is not None:
            attrs = attributes
        base_ts = self.base_timestamp if base_timestamp is None else base_timestamp
        if base_ts is None:
            base_ts = NO_TIMESTAMP
        if max_timestamp is None:
            max_timestamp = self.log_append_time if self.timestamp_type is TimestampType.LOG_APPEND_TIME else self.max_timestamp
        lod = self._last_offset_delta if last_offset_delta is None else last_offset_delta
        if lod < 0:
            lod = 0
        out = bytearray(HEADER_SIZE)
        HEADER.pack_into(
            out, 0, self.base_offset, HEADER_SIZE - 12 + len(payload), self.partition_leader_epoch, 2, 0, attrs, lod,
            base_ts, max_timestamp, self.producer_id, self.producer_epoch, self.base_sequence, self._count,
        )
        out += payload
        struct.pack_into(">I", out, CRC_OFFSET, crc32c(memoryview(out)[CRC_START:]))
        if self.for_broker:
            batch = RecordBatch(bytes(out))
            validate_batch(batch, batch)
        return bytes(out)
