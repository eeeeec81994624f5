"""Sparse ``.index`` (offset -> position) and ``.timeindex`` (timestamp -> offset) files.

Both are arrays of big-endian fixed-size entries (``schemas.OFFSET_INDEX_ENTRY``, 8 bytes;
``schemas.TIME_INDEX_ENTRY``, 12 bytes) with offsets relative to the segment's base offset. An
active segment's index is preallocated (10 MiB by default) and zero-filled past its entries; a
closed one is trimmed. Reading is one ``numpy.frombuffer`` plus a conversion to native integers;
lookups are ``searchsorted`` over those arrays.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from .errors import CorruptIndexError

__all__ = ["OFFSET_INDEX_DTYPE", "TIME_INDEX_DTYPE", "OffsetIndex", "TimeIndex", "base_offset_of"]

#: numpy view of schemas.OFFSET_INDEX_ENTRY
OFFSET_INDEX_DTYPE = np.dtype([("relativeOffset", ">i4"), ("position", ">i4")])
#: numpy view of schemas.TIME_INDEX_ENTRY
TIME_INDEX_DTYPE = np.dtype([("timestamp", ">i8"), ("relativeOffset", ">i4")])


def base_offset_of(path: str | os.PathLike[str]) -> int:
    """The base offset encoded in a segment file's name (the digits before the first dot)."""
    name = os.path.basename(os.fspath(path))
    stem = name.split(".", 1)[0].split("-", 1)[0]
    if not stem.isdigit():
        raise CorruptIndexError(f"file name {name!r} does not start with a base offset", file=os.fspath(path))
    return int(stem)


def _read(path: str | os.PathLike[str] | None, data: bytes | None) -> bytes:
    if data is not None:
        return data
    assert path is not None
    with open(path, "rb") as f:
        return f.read()


@dataclass
class OffsetIndex:
    """An offset index: ``offsets[i]`` (absolute) is at byte ``positions[i]`` of the ``.log``.

    ``slots`` counts every 8-byte slot in the file; ``len(self)`` only the entries before the
    zero-filled preallocated tail (the first slot, after the first, whose relative offset is 0 -
    Kafka's dump stops there too - or an all-zero first slot).
    """

    base_offset: int
    offsets: np.ndarray
    positions: np.ndarray
    slots: int
    file: str | None = None
    trailing_bytes: int = 0

    @classmethod
    def read(cls, path: str | os.PathLike[str] | None = None, *, data: bytes | None = None, base_offset: int | None = None) -> OffsetIndex:
        """Read an index file (or its bytes)."""
        raw = _read(path, data)
        name = None if path is None else os.fspath(path)
        base = base_offset if base_offset is not None else base_offset_of(path)  # type: ignore[arg-type]
        n = len(raw) // OFFSET_INDEX_DTYPE.itemsize
        arr = np.frombuffer(raw, dtype=OFFSET_INDEX_DTYPE, count=n)
        rel = arr["relativeOffset"].astype(np.int64)
        pos = arr["position"].astype(np.int64)
        used = _used_entries(rel, pos)
        return cls(base, rel[:used] + base, pos[:used], n, name, len(raw) - n * OFFSET_INDEX_DTYPE.itemsize)

    def __len__(self) -> int:
        return len(self.offsets)

    def lookup(self, target: int) -> tuple[int, int]:
        """The largest entry with offset <= ``target``, as (offset, position); (base, 0) if none."""
        i = int(np.searchsorted(self.offsets, target, side="right")) - 1
        if i < 0:
            return self.base_offset, 0
        return int(self.offsets[i]), int(self.positions[i])


@dataclass
class TimeIndex:
    """A time index: by ``offsets[i]`` the segment's max timestamp so far was ``timestamps[i]``."""

    base_offset: int
    timestamps: np.ndarray
    offsets: np.ndarray
    slots: int
    file: str | None = None
    trailing_bytes: int = 0

    @classmethod
    def read(cls, path: str | os.PathLike[str] | None = None, *, data: bytes | None = None, base_offset: int | None = None) -> TimeIndex:
        """Read a time index file (or its bytes)."""
        raw = _read(path, data)
        name = None if path is None else os.fspath(path)
        base = base_offset if base_offset is not None else base_offset_of(path)  # type: ignore[arg-type]
        n = len(raw) // TIME_INDEX_DTYPE.itemsize
        arr = np.frombuffer(raw, dtype=TIME_INDEX_DTYPE, count=n)
        ts = arr["timestamp"].astype(np.int64)
        rel = arr["relativeOffset"].astype(np.int64)
        used = _used_entries(rel, ts)
        return cls(base, ts[:used], rel[:used] + base, n, name, len(raw) - n * TIME_INDEX_DTYPE.itemsize)

    def __len__(self) -> int:
        return len(self.offsets)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The last entry with timestamp <= ``timestamp``, as (timestamp, offset); (-1, base) if none."""
        i = int(np.searchsorted(self.timestamps, timestamp, side="right")) - 1
        if i < 0:
            return -1, self.base_offset
        return int(self.timestamps[i]), int(self.offsets[i])


def _used_entries(rel: np.ndarray, other: np.ndarray) -> int:
    n = len(rel)
    if n == 0:
        return 0
    if rel[0] == 0 and other[0] == 0:
        return 0
    zeros = np.flatnonzero(rel[1:] == 0)
    return int(zeros[0]) + 1 if len(zeros) else n
