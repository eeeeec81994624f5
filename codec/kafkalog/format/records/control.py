"""Control records: the records of a batch whose control bit is set (transaction markers, KRaft)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum

from kafkalog.errors import InvalidRecordError

__all__ = ["ControlType", "EndTxnMarker", "control_type_of", "parse_end_txn_marker", "encode_control_key", "encode_end_txn_marker"]


class ControlType(Enum):
    """Control record types by the id in the key's second int16 (Kafka's ControlRecordType)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1

    @classmethod
    def from_id(cls, type_id: int) -> ControlType:
        """The type for ``type_id``; ids Kafka does not define map to ``UNKNOWN``."""
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True)
class EndTxnMarker:
    """The value of an ABORT or COMMIT control record."""

    control_type: ControlType
    version: int
    coordinator_epoch: int


def control_type_of(key: bytes | None) -> tuple[ControlType, int]:
    """Parse a control record key; return (type, raw type id). Raises for keys Kafka rejects."""
    if key is None or len(key) < 4:
        raise InvalidRecordError(f"control record key must be at least 4 bytes, got {0 if key is None else len(key)}")
    version, type_id = struct.unpack_from(">hh", key, 0)
    if version < 0:
        raise InvalidRecordError(f"invalid control record key version {version}")
    return ControlType.from_id(type_id), type_id


def parse_end_txn_marker(control_type: ControlType, value: bytes | None) -> EndTxnMarker:
    """Parse an end-transaction marker value (version int16, coordinator epoch int32)."""
    if value is None or len(value) < 6:
        raise InvalidRecordError(f"end transaction marker value must be at least 6 bytes, got {0 if value is None else len(value)}")
    version, epoch = struct.unpack_from(">hi", value, 0)
    if version < 0:
        raise InvalidRecordError(f"invalid end transaction marker version {version}")
    return EndTxnMarker(control_type, version, epoch)


def encode_control_key(control_type: ControlType, version: int = 0) -> bytes:
    """The 4-byte key of a control record."""
    return struct.pack(">hh", version, control_type.value)


def encode_end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    """The 6-byte value of an ABORT/COMMIT control record."""
    return struct.pack(">hi", version, coordinator_epoch)
