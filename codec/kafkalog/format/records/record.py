"""The record model shared by every magic: one :class:`Record` per Kafka record, plus enums."""

from __future__ import annotations

from enum import Enum

__all__ = ["RECORD_FIELDS", "Header", "LegacyRecord", "Record", "TimestampType"]

#: A record header: (key, value); the key is text, the value bytes or ``None``.
Header = tuple[str, bytes | None]


class TimestampType(Enum):
    """What a batch's timestamps mean (attribute bit 3; magic 0 has none)."""

    NO_TIMESTAMP_TYPE = "NoTimestampType"
    CREATE_TIME = "CreateTime"
    LOG_APPEND_TIME = "LogAppendTime"

    def __str__(self) -> str:
        return self.value


# the C accessor namedtuple uses (CPython); a property over itemgetter elsewhere. The compiled record
# walker (kafkalog.fast.objects) replaces them with member descriptors over the same items when it loads.
try:
    from collections import _tuplegetter as _field
except ImportError:  # pragma: no cover
    from operator import itemgetter as _itemgetter

    def _field(index: int, doc: str) -> property:  # type: ignore[misc]
        return property(_itemgetter(index), doc=doc)


_tuple_new = tuple.__new__

#: Record's fields, in the order of its constructor's parameters and of its tuple items.
RECORD_FIELDS = (
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


def _unordered(self: object, other: object) -> object:
    """Records have no order (tuple's comparisons would compare field by field)."""
    return NotImplemented


class _RecordType(type):
    """Record's metaclass: it takes the constructor's parameters, so that Record itself keeps
    tuple's C-level ``__new__``. The fast decoder calls ``type.__call__`` bound to Record on a tuple
    of fields, which builds a record with no Python code (see :mod:`kafkalog.fast.objects`)."""

    def __call__(  # type: ignore[override]
        cls,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: tuple[Header, ...],
        sequence: int = -1,
        size_in_bytes: int = 0,
        attributes: int = 0,
        create_timestamp: int | None = None,
    ) -> Record:
        return _tuple_new(cls, (
            offset, timestamp, key, value, headers, sequence, size_in_bytes, attributes,
            timestamp if create_timestamp is None else create_timestamp,
        ))


class Record(tuple, metaclass=_RecordType):
    """One record as Kafka's reader presents it.

    ``timestamp`` is what Kafka reports: under LogAppendTime it is the batch's max timestamp,
    while ``create_timestamp`` keeps the value stored in the record itself. ``size_in_bytes`` is
    the record's encoded size (v2: length varint included; v0/v1: with the 12-byte log overhead).
    ``headers`` is a tuple of (key, value) pairs, empty when the record has none.

    Immutable; stored as a tuple of its fields (in :data:`RECORD_FIELDS` order) so that the fast
    decoder builds records with tuple's C code alone, no Python code per record. Equal to
    another record when every field is; never equal to a plain tuple, unordered, unhashable.
    """

    __slots__ = ()

    offset = _field(0, "Offset of the record.")
    timestamp = _field(1, "Timestamp Kafka reports (the batch's max timestamp under LogAppendTime).")
    key = _field(2, "Key bytes, or None.")
    value = _field(3, "Value bytes, or None (a tombstone).")
    headers = _field(4, "Headers: a tuple of (str, bytes | None) pairs.")
    sequence = _field(5, "Producer sequence number, -1 without one.")
    size_in_bytes = _field(6, "Encoded size of the record in bytes.")
    attributes = _field(7, "Record attributes byte.")
    create_timestamp = _field(8, "Timestamp stored in the record itself.")

    def __reduce__(self) -> tuple:
        return _from_items, (type(self), tuple(self))

    @property
    def key_size(self) -> int:
        """Key length in bytes, -1 for a null key."""
        return -1 if self[2] is None else len(self[2])

    @property
    def value_size(self) -> int:
        """Value length in bytes, -1 for a null value (a tombstone)."""
        return -1 if self[3] is None else len(self[3])

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(offset={self[0]}, timestamp={self[1]}, key={self[2]!r}, "
            f"value={self[3]!r}, headers={self[4]!r})"
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Record):
            return tuple.__getitem__(self, _RECORD_SLICE) == tuple.__getitem__(other, _RECORD_SLICE)
        return False if isinstance(other, tuple) else NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __lt__ = __le__ = __gt__ = __ge__ = _unordered
    __hash__ = None  # type: ignore[assignment]


_RECORD_SLICE = slice(0, len(RECORD_FIELDS))


def _from_items(cls: type[Record], items: tuple) -> Record:
    """Unpickle a record (or a :class:`LegacyRecord`) from its tuple items."""
    return _tuple_new(cls, items)


class _LegacyRecordType(_RecordType):
    """LegacyRecord's metaclass: its constructor's parameters (see :class:`_RecordType`)."""

    def __call__(  # type: ignore[override]
        cls,
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
    ) -> LegacyRecord:
        return _tuple_new(cls, (
            offset, timestamp, key, value, (), -1, size_in_bytes, attributes,
            timestamp if create_timestamp is None else create_timestamp, magic, checksum, is_valid,
        ))


class LegacyRecord(Record, metaclass=_LegacyRecordType):
    """A v0/v1 message (or a message inside a compressed wrapper): adds its own CRC-32."""

    __slots__ = ()

    magic = _field(9, "Message format version (0 or 1).")
    checksum = _field(10, "The message's stored CRC-32.")
    is_valid = _field(11, "Whether the CRC-32 matches the message bytes.")
