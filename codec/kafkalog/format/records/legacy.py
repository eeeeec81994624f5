"""Message sets of magic 0 and 1 (Kafka 0.8-0.10): reader and builder.

Each log entry is one message (``schemas.LEGACY_MESSAGE_V0``/``V1``). A compressed message is a
*wrapper*: its value holds a compressed message set of inner messages. The wrapper carries the
offset of the last inner message; inner offsets are absolute for magic 0 and relative (0..n-1)
for magic 1; under LogAppendTime the inner messages take the wrapper's timestamp.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from kafkalog.errors import (
    CorruptRecordError,
    CrcMismatchError,
    InvalidRecordError,
    KafkaLogError,
    UnsupportedMagicError,
)
from kafkalog.format.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, Codec, codec_of, compress, decompress
from kafkalog.format.primitives import crc32
from kafkalog.format.records.record import LegacyRecord, Record, TimestampType

__all__ = ["LegacyBatch", "LegacyBatchBuilder", "parse_message", "RECORD_OVERHEAD_V0", "RECORD_OVERHEAD_V1"]

LOG_OVERHEAD = 12
#: crc(4) magic(1) attributes(1) keyLength(4) valueLength(4)
RECORD_OVERHEAD_V0 = 14
#: ... plus timestamp(8)
RECORD_OVERHEAD_V1 = 22
ATTR_COMPRESSION_MASK = 0x07
ATTR_TIMESTAMP_TYPE = 0x08

_PREFIX = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class _Message:
    """The fields of one legacy message, parsed from ``data[start:start+12+size]``."""

    __slots__ = ("offset", "crc", "magic", "attributes", "timestamp", "key", "value", "size_in_bytes", "crc_valid")

    def __init__(self, data: bytes, start: int, end: int) -> None:
        if end - start < LOG_OVERHEAD + RECORD_OVERHEAD_V0:
            raise CorruptRecordError(f"message of {end - start - LOG_OVERHEAD} bytes is smaller than the minimum overhead {RECORD_OVERHEAD_V0}", position=start)
        self.offset, _size, self.crc, self.magic, self.attributes = _PREFIX.unpack_from(data, start)
        if self.magic not in (0, 1):
            raise UnsupportedMagicError(f"invalid magic {self.magic} for a legacy message", position=start)
        pos = start + 18
        if self.magic == 1:
            if end - start < LOG_OVERHEAD + RECORD_OVERHEAD_V1:
                raise CorruptRecordError(f"magic 1 message of {end - start - LOG_OVERHEAD} bytes is smaller than the minimum overhead {RECORD_OVERHEAD_V1}", position=start)
            (self.timestamp,) = _I64.unpack_from(data, pos)
            pos += 8
        else:
            self.timestamp = -1
        (klen,) = _I32.unpack_from(data, pos)
        pos += 4
        if klen < 0:
            self.key = None
        else:
            if pos + klen + 4 > end:
                raise CorruptRecordError(f"key length {klen} runs past the message", position=pos - 4)
            self.key = data[pos : pos + klen]
            pos += klen
        (vlen,) = _I32.unpack_from(data, pos)
        pos += 4
        if vlen < 0:
            self.value = None
        else:
            if pos + vlen > end:
                raise CorruptRecordError(f"value length {vlen} runs past the message", position=pos - 4)
            self.value = data[pos : pos + vlen]
            pos += vlen
        if pos != end:
            raise CorruptRecordError(f"message declares {end - start - LOG_OVERHEAD} bytes but its fields take {pos - start - LOG_OVERHEAD}", position=start)
        self.size_in_bytes = end - start
        self.crc_valid = crc32(memoryview(data)[start + 16 : end]) == self.crc


def parse_message(data: bytes, start: int = 0) -> tuple[_Message, int]:
    """Parse one legacy message at ``start``; return it and the position after it."""
    if len(data) - start < LOG_OVERHEAD:
        raise CorruptRecordError("message header is truncated", position=start)
    (size,) = _I32.unpack_from(data, start + 8)
    if size < RECORD_OVERHEAD_V0:
        raise CorruptRecordError(f"record size {size} is smaller than the minimum record overhead ({RECORD_OVERHEAD_V0})", position=start)
    end = start + LOG_OVERHEAD + size
    if end > len(data):
        raise CorruptRecordError(f"message of {size} bytes runs past the end of its buffer", position=start)
    return _Message(data, start, end), end


class LegacyBatch:
    """One top-level v0/v1 log entry: a plain message or a compressed wrapper of inner messages.

    Kafka treats each such entry as a "batch"; its records are the message itself or the inner
    messages, with Kafka's offset and timestamp rules applied.
    """

    __slots__ = ("data", "position", "file", "msg", "max_decompressed_size", "_records")

    def __init__(self, data: bytes, position: int = 0, file: str | None = None, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> None:
        try:
            self.msg, _ = parse_message(data, 0)
        except KafkaLogError as e:
            e.position = position + (e.position or 0)  # message-relative -> file position
            raise e.located(file=file, offset=None) from None
        self.data = data
        self.position = position
        self.file = file
        self.max_decompressed_size = max_decompressed_size
        self._records: list[Record] | None = None

    @property
    def magic(self) -> int:
        return self.msg.magic

    @property
    def attributes(self) -> int:
        return self.msg.attributes

    @property
    def crc(self) -> int:
        return self.msg.crc

    @property
    def is_valid(self) -> bool:
        return self.msg.crc_valid

    @property
    def size_in_bytes(self) -> int:
        return len(self.data)

    @property
    def compression(self) -> Codec:
        try:
            return codec_of(self.msg.attributes & ATTR_COMPRESSION_MASK)
        except KafkaLogError as e:
            raise e.located(file=self.file, position=self.position, offset=self.msg.offset) from None

    @property
    def timestamp_type(self) -> TimestampType:
        if self.msg.magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return TimestampType.LOG_APPEND_TIME if self.msg.attributes & ATTR_TIMESTAMP_TYPE else TimestampType.CREATE_TIME

    @property
    def max_timestamp(self) -> int:
        return self.msg.timestamp

    @property
    def last_offset(self) -> int:
        return self.msg.offset

    @property
    def next_offset(self) -> int:
        return self.msg.offset + 1

    @property
    def base_offset(self) -> int:
        """The first record's offset (decompresses a wrapper, as Kafka does)."""
        if self.msg.attributes & ATTR_COMPRESSION_MASK == 0:
            return self.msg.offset
        return self.records()[0].offset

    def crc_error(self) -> CrcMismatchError | None:
        """The :class:`CrcMismatchError` :meth:`ensure_valid` raises, or None when the CRC matches."""
        if self.is_valid:
            return None
        computed = crc32(memoryview(self.data)[16:])
        return CrcMismatchError(f"message is corrupt (stored crc = {self.crc}, computed crc = {computed})",
                                file=self.file, position=self.position, offset=self.msg.offset)

    def ensure_valid(self) -> None:
        """Raise :class:`CrcMismatchError` unless the message's (the wrapper's) CRC-32 matches (Kafka's
        AbstractLegacyRecordBatch.ensureValid, which checks the outer message only)."""
        if (err := self.crc_error()) is not None:
            raise err

    def inner_crc_errors(self) -> list[CrcMismatchError]:
        """A :class:`CrcMismatchError` for each inner message of a compressed wrapper whose own CRC-32
        does not match (``position`` the wrapper's, ``offset`` the inner message's): what Kafka's
        consumer checks record by record (CompletedFetch.maybeEnsureValid). Decodes the wrapper."""
        if self.msg.attributes & ATTR_COMPRESSION_MASK == 0:
            return []
        return [
            CrcMismatchError(f"inner message {n} of the wrapper is corrupt (stored crc = {r.checksum})", file=self.file,
                             position=self.position, offset=r.offset)
            for n, r in enumerate(self.records())
            if isinstance(r, LegacyRecord) and not r.is_valid
        ]

    def records(self, verify_crc: bool = False) -> list[Record]:
        """The message itself, or the wrapper's inner messages with absolute offsets; with
        ``verify_crc``, the wrapper's CRC and each inner message's are checked first (the first
        mismatch raises :class:`CrcMismatchError`)."""
        if verify_crc:
            self.ensure_valid()
            for err in self.inner_crc_errors():
                raise err
        if self._records is None:
            try:
                self._records = self._decode()
            except KafkaLogError as e:
                raise e.located(file=self.file, position=self.position, offset=self.msg.offset) from None
        return self._records

    def __iter__(self):  # noqa: ANN204 - iterator of Record
        return iter(self.records())

    def _decode(self) -> list[Record]:
        m = self.msg
        codec = self.compression
        if codec is Codec.NONE:
            return [_to_record(m, m.offset, m.timestamp)]
        if m.value is None:
            raise InvalidRecordError(f"compressed message set with null value (magic = {m.magic})")
        inner_data = decompress(codec, m.value, magic=m.magic, max_size=self.max_decompressed_size)
        inner: list[_Message] = []
        pos = 0
        n = len(inner_data)
        while n - pos >= LOG_OVERHEAD:
            (size,) = _I32.unpack_from(inner_data, pos + 8)
            if size < RECORD_OVERHEAD_V0:
                raise CorruptRecordError(f"inner message size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0}) at byte {pos} of the decompressed wrapper")
            if pos + LOG_OVERHEAD + size > n:
                break  # Kafka stops at a partial inner message
            try:
                im, pos = parse_message(inner_data, pos)
            except KafkaLogError as e:
                e.message += f" (at byte {e.position} of the decompressed wrapper)"
                e.position = None
                raise
            if im.magic != m.magic:
                raise InvalidRecordError(f"compressed message magic {im.magic} does not match wrapper magic {m.magic}")
            if im.attributes & ATTR_COMPRESSION_MASK:
                raise InvalidRecordError("inner messages must not be compressed")
            inner.append(im)
        if not inner:
            raise InvalidRecordError("compressed message set with no inner records")
        lat = m.magic == 1 and m.attributes & ATTR_TIMESTAMP_TYPE
        if m.magic == 1:
            if m.offset == 0:
                base = 0
            else:
                last_inner = inner[-1].offset
                if m.offset < last_inner:
                    raise InvalidRecordError(f"wrapper offset {m.offset} is less than the last inner message offset {last_inner} and is not zero")
                base = _long(m.offset - last_inner)
            return [_to_record(im, _long(base + im.offset), m.timestamp if lat else im.timestamp) for im in inner]
        return [_to_record(im, im.offset, im.timestamp) for im in inner]

    def __repr__(self) -> str:
        return f"LegacyBatch(magic={self.magic}, offset={self.last_offset}, compression={self.compression.label}, position={self.position})"


def _long(v: int) -> int:
    """``v`` wrapped to a signed 64-bit value, as Java's long arithmetic computes inner offsets
    (AbstractLegacyRecordBatch's absoluteBaseOffset + relative offset); only corrupt input overflows."""
    return (v + 2**63) % 2**64 - 2**63


def _to_record(m: _Message, offset: int, timestamp: int) -> LegacyRecord:
    return LegacyRecord(
        offset, timestamp, m.key, m.value,
        magic=m.magic, checksum=m.crc, is_valid=m.crc_valid, size_in_bytes=m.size_in_bytes,
        attributes=m.attributes & 0xFF, create_timestamp=m.timestamp,
    )


def encode_message(offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None) -> bytes:
    """One legacy message with its 12-byte log prefix and CRC-32."""
    body = bytearray()
    body.append(magic)
    body.append(attributes & 0xFF)
    if magic == 1:
        body += _I64.pack(timestamp)
    body += _I32.pack(-1 if key is None else len(key))
    if key is not None:
        body += key
    body += _I32.pack(-1 if value is None else len(value))
    if value is not None:
        body += value
    crc = crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


class LegacyBatchBuilder:
    """Builds a v0/v1 message set as Kafka's MemoryRecordsBuilder does.

    Uncompressed: one message per record, each its own log entry. Compressed: one wrapper whose
    offset is the last record's, whose (v1) timestamp is the max timestamp or the log-append time,
    and whose value is the compressed inner messages (v1 inner offsets relative to the first).
    """

    def __init__(
        self,
        magic: int,
        base_offset: int = 0,
        *,
        compression: Codec = Codec.NONE,
        compression_level: int | None = None,
        timestamp_type: TimestampType | None = None,
        log_append_time: int | None = None,
    ) -> None:
        if magic not in (0, 1):
            raise ValueError("legacy builders write magic 0 or 1")
        if compression is Codec.ZSTD:
            raise ValueError("zstd needs magic 2")
        if timestamp_type is None:
            timestamp_type = TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else TimestampType.CREATE_TIME
        if magic == 1 and timestamp_type is TimestampType.LOG_APPEND_TIME and log_append_time is None:
            raise ValueError("LogAppendTime needs log_append_time")
        self.magic = magic
        self.base_offset = base_offset
        self.compression = compression
        self.compression_level = compression_level
        self.timestamp_type = timestamp_type
        self.log_append_time = log_append_time
        self._entries: list[tuple[int, int, bytes | None, bytes | None, int]] = []

    def __len__(self) -> int:
        return len(self._entries)

    def append(
        self, timestamp: int, key: bytes | None, value: bytes | None, headers: Iterable[object] = (), *,
        offset: int | None = None, attributes: int | None = None, keep_timestamp: bool = False,
    ) -> int:
        """Add a message and return its offset. Legacy messages carry no headers.

        Under LogAppendTime the producer writes the log-append time into every message, as Kafka's
        builder does; ``keep_timestamp`` stores ``timestamp`` as given instead (a copy of a wrapper
        that a broker stamped in place, whose inner messages kept their create times)."""
        if list(headers):
            raise ValueError("magic 0 and 1 messages cannot carry headers")
        if offset is None:
            offset = self._entries[-1][0] + 1 if self._entries else self.base_offset
        elif self._entries and offset <= self._entries[-1][0]:
            raise ValueError(f"offset {offset} is not after the previous message's")
        if self.magic == 1 and self.timestamp_type is TimestampType.LOG_APPEND_TIME and not keep_timestamp:
            timestamp = self.log_append_time  # type: ignore[assignment]
        if attributes is None:
            attributes = ATTR_TIMESTAMP_TYPE if self.magic == 1 and self.timestamp_type is TimestampType.LOG_APPEND_TIME else 0
        self._entries.append((offset, timestamp, key, value, attributes))
        return offset

    def build(
        self, *, wrapper_timestamp: int | None = None, wrapper_attributes: int | None = None,
        wrapper_offset: int | None = None, payload: bytes | None = None,
    ) -> bytes:
        """Return the message set bytes. The keyword overrides keep a stored wrapper's fields: its
        timestamp, attributes and offset (another client may have left it 0), and ``payload``, its
        value as that client compressed it (the caller checks that it holds the appended messages),
        written instead of compressing them."""
        if self.compression is Codec.NONE:
            return b"".join(encode_message(o, self.magic, a, t, k, v) for o, t, k, v, a in self._entries)
        if not self._entries:
            return b""
        if payload is None:
            first = self._entries[0][0]
            inner = b"".join(
                encode_message(o - first if self.magic == 1 else o, self.magic, a, t, k, v) for o, t, k, v, a in self._entries
            )
            payload = compress(self.compression, inner, magic=self.magic, level=self.compression_level)
        attrs = int(self.compression)
        if self.magic == 1 and self.timestamp_type is TimestampType.LOG_APPEND_TIME:
            attrs |= ATTR_TIMESTAMP_TYPE
        if wrapper_attributes is not None:
            attrs = wrapper_attributes
        if wrapper_timestamp is None:
            if self.magic == 0:
                wrapper_timestamp = -1
            elif self.timestamp_type is TimestampType.LOG_APPEND_TIME:
                wrapper_timestamp = self.log_append_time
            else:
                wrapper_timestamp = max(t for _, t, _, _, _ in self._entries)
        if wrapper_offset is None:
            wrapper_offset = self._entries[-1][0]
        return encode_message(wrapper_offset, self.magic, attrs, wrapper_timestamp, None, payload)  # type: ignore[arg-type]
