"""Producer-state ``.snapshot`` files (version 1): each producer's last batch, CRC-32C protected."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from kafkalog.errors import CorruptIndexError
from kafkalog.format.files import read_bytes
from kafkalog.format.primitives import crc32c

__all__ = ["ProducerSnapshotEntry", "read_producer_snapshot", "write_producer_snapshot"]

_HEAD = struct.Struct(">hIi")  # version, crc, entry count (schemas.PRODUCER_SNAPSHOT)
#: struct view of schemas.PRODUCER_SNAPSHOT_ENTRY
ENTRY = struct.Struct(">qhiqiqiq")
VERSION = 1
CRC_START = 6  # the CRC covers everything after the version and crc fields


@dataclass(frozen=True)
class ProducerSnapshotEntry:
    """One producer's state; ``last_offset`` < 0 means no batch metadata was kept."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def first_sequence(self) -> int:
        """The batch's first sequence: ``last_sequence - offset_delta``, wrapping below 0 to
        Int32.MAX_VALUE as sequences do (Kafka's decrementSequence)."""
        if self.last_offset < 0:
            return -1
        if self.last_sequence < self.offset_delta:
            return 2**31 - 1 - (self.offset_delta - self.last_sequence) + 1
        return self.last_sequence - self.offset_delta

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


def read_producer_snapshot(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> list[ProducerSnapshotEntry]:
    """Parse a snapshot, checking its version, structure and CRC-32C as Kafka does."""
    name = None if path is None else os.fspath(path)
    if data is None:
        assert path is not None
        data = read_bytes(path)
    if len(data) < _HEAD.size:
        raise CorruptIndexError(f"snapshot of {len(data)} bytes is shorter than its {_HEAD.size}-byte header", file=name, position=0)
    version, crc, count = _HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise CorruptIndexError(f"snapshot contained an unknown file version {version}", file=name, position=0)
    if count < 0 or _HEAD.size + count * ENTRY.size != len(data):
        raise CorruptIndexError(
            f"snapshot failed schema validation: {count} entries need {_HEAD.size + max(count, 0) * ENTRY.size} bytes, file has {len(data)}",
            file=name, position=6,
        )
    computed = crc32c(memoryview(data)[CRC_START:])
    if computed != crc:
        raise CorruptIndexError(f"snapshot is corrupt (stored crc {crc}, computed crc {computed})", file=name, position=2)
    return [ProducerSnapshotEntry(*ENTRY.unpack_from(data, _HEAD.size + i * ENTRY.size)) for i in range(count)]


def write_producer_snapshot(entries: list[ProducerSnapshotEntry]) -> bytes:
    """Serialize a snapshot as Kafka writes it (entries in the given order)."""
    body = bytearray(_HEAD.pack(VERSION, 0, len(entries)))
    for e in entries:
        body += ENTRY.pack(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
    struct.pack_into(">I", body, 2, crc32c(memoryview(body)[CRC_START:]))
    return bytes(body)
