"""The record model shared by every magic: one :class:`Record` per Kafka record, plus enums."""

from __future__ import annotations

from enum import Enum

__all__ = ["Header", "LegacyRecord", "Record", "TimestampType"]

#: A record header: (key, value); the key is text, the value bytes or ``None``.
Header = tuple[str, bytes | None]


class TimestampType(Enum):
    """What a batch's timestamps mean (attribute bit 3; magic 0 has none)."""

    NO_TIMESTAMP_TYPE = "NoTimestampType"
    CREATE_TIME = "CreateTime"
    LOG_APPEND_TIME = "LogAppendTime"

    def __str__(self) -> str:
        return self.value


class Record:
    """One record as Kafka's reader presents it.

    ``timestamp`` is what Kafka reports: under LogAppendTime it is the batch's max timestamp,
    while ``create_timestamp`` keeps the value stored in the record itself. ``size_in_bytes`` is
    the record's encoded size (v2: length varint included; v0/v1: with the 12-byte log overhead).
    ``headers`` is a tuple of (key, value) pairs, empty when the record has none.
    """

    __slots__ = (
        "offset",
        "timestamp",
        "key",
        "value",
        "headers",
        "sequence",
        "size_in_bytes",
        "attributes",
        "create_timestamp",
    )

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...],
        sequence: int = -1,
        size_in_bytes: int = 0,
        attributes: int = 0,
        create_timestamp: int | None = None,
    ) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers
        self.sequence = sequence
        self.size_in_bytes = size_in_bytes
        self.attributes = attributes
        self.create_timestamp = timestamp if create_timestamp is None else create_timestamp

    @property
    def key_size(self) -> int:
        """Key length in bytes, -1 for a null key."""
        return -1 if self.key is None else len(self.key)

    @property
    def value_size(self) -> int:
        """Value length in bytes, -1 for a null value (a tombstone)."""
        return -1 if self.value is None else len(self.value)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
            f"value={self.value!r}, headers={self.headers!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return all(getattr(self, s) == getattr(other, s) for s in Record.__slots__)

    __hash__ = None  # type: ignore[assignment]


class LegacyRecord(Record):
    """A v0/v1 message (or a message inside a compressed wrapper): adds its own CRC-32."""

    __slots__ = ("magic", "checksum", "is_valid")

    def __init__(
        self,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        *,
        magic: int,
        checksum: int,
        is_valid: bool,
        size_in_bytes: int,
        attributes: int,
        create_timestamp: int | None = None,
    ) -> None:
        super().__init__(offset, timestamp, key, value, (), -1, size_in_bytes, attributes, create_timestamp)
        self.magic = magic
        self.checksum = checksum
        self.is_valid = is_valid
