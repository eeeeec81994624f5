"""Sparse ``.index`` (offset -> position) and ``.timeindex`` (timestamp -> offset) files.

Both are arrays of big-endian fixed-size entries (``schemas.OFFSET_INDEX_ENTRY``, 8 bytes;
``schemas.TIME_INDEX_ENTRY``, 12 bytes) with offsets relative to the segment's base offset. An
active segment's index is preallocated (10 MiB by default) and zero-filled past its entries; a
closed one is trimmed. Reading finds the end of the entries on the raw slots (a search whose cost
follows the entries, not the preallocated size) and converts only the entries to native integers;
lookups are ``searchsorted`` over those arrays.

The write side, :class:`MutableOffsetIndex` and :class:`MutableTimeIndex`, follows Kafka's
AbstractIndex/OffsetIndex/TimeIndex: a new file is created with ``segment.index.bytes`` rounded down
to a multiple of the entry size (a sparse, zero-filled file), entries are written from slot 0 on
and only in increasing order, and ``trim_to_valid_size`` cuts the file to its entries when the
segment becomes inactive or is closed.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalog.errors import (
    CorruptIndexError,
    IndexFullError,
    IndexOffsetOverflowError,
    InvalidOffsetError,
    ReadOnlyLogError,
)
from kafkalog.format.files import is_url, pwrite_all, read_bytes

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_MAX_INDEX_SIZE",
    "IndexFile",
    "OFFSET_INDEX_DTYPE",  # noqa: F822 - given by __getattr__
    "TIME_INDEX_DTYPE",  # noqa: F822 - given by __getattr__
    "MutableOffsetIndex",
    "MutableTimeIndex",
    "OffsetIndex",
    "TimeIndex",
    "base_offset_of",
    "last_offset",
]

#: Kafka's default ``segment.index.bytes`` (10 MiB)
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024
_INT32_MAX = 2**31 - 1

#: The numpy views of schemas.OFFSET_INDEX_ENTRY and schemas.TIME_INDEX_ENTRY, made on first use (the
#: module's ``__getattr__`` gives them as ``OFFSET_INDEX_DTYPE`` and ``TIME_INDEX_DTYPE``): numpy loads
#: when an index is read, not when this module is imported.
_DTYPES: dict[str, Any] = {}


def _dtype(name: str) -> np.dtype:
    if not _DTYPES:
        import numpy as np

        _DTYPES["OFFSET_INDEX_DTYPE"] = np.dtype([("relativeOffset", ">i4"), ("position", ">i4")])
        _DTYPES["TIME_INDEX_DTYPE"] = np.dtype([("timestamp", ">i8"), ("relativeOffset", ">i4")])
    return _DTYPES[name]


def __getattr__(name: str) -> Any:
    if name in ("OFFSET_INDEX_DTYPE", "TIME_INDEX_DTYPE"):
        return _dtype(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def base_offset_of(path: str | os.PathLike[str]) -> int:
    """The base offset encoded in a segment file's name (the digits before the first dot)."""
    name = os.path.basename(os.fspath(path))
    stem = name.split(".", 1)[0].split("-", 1)[0]
    if not stem.isdigit():
        raise CorruptIndexError(f"file name {name!r} does not start with a base offset", file=os.fspath(path))
    return int(stem)


#: The first bytes of an index file read, and the first slots searched for the end of the entries
#: (each next read or search is larger: 4x, 2x): enough for the entries of most active segments, so
#: that opening a preallocated index costs what its entries do, not its 10 MiB.
_FIRST_READ = 65536
_FIRST_SEARCH = 512


def _first_free(arr: np.ndarray, rel_field: int, start: int = 0) -> int | None:
    """The first slot at or after ``start`` that ends the used entries (see :class:`OffsetIndex`) of
    a structured view of an index's slots, None if there is none (every slot from ``start`` is an
    entry). Searched from ``start`` in chunks that double, on the big-endian fields as they are (a
    zero is a zero in any byte order), so the cost follows the entries, not the preallocated slots."""
    names = arr.dtype.names
    rel = arr[names[rel_field]]
    if start == 0:
        if not len(rel):
            return None
        if rel[0] == 0 and arr[names[1 - rel_field]][0] == 0:
            return 0
        start = 1
    step = _FIRST_SEARCH
    while start < len(rel):
        zero = rel[start : start + step] == 0
        j = int(zero.argmax())
        if zero[j]:
            return start + j
        start += step
        step *= 2
    return None


def _read_used(path: str | os.PathLike[str], dtype: np.dtype, rel_field: int) -> tuple[np.ndarray, int, int | None]:
    """The bytes of an index file up to the end of its used entries at least, the file's length and
    that end (:func:`_first_free`). The file is read straight into one numpy buffer (no ``bytes``
    copy), in reads that grow until the end of the entries is in them, so a preallocated 10 MiB
    index with a few entries costs a 64 KiB read. The length is the one the file had when opened
    unless the reads end first (a writer trimming it meanwhile): then it is what was read. It is not
    memory-mapped: a broker or writer trimming the file while it is read would make a mapped read
    fault (SIGBUS); a read simply sees the shorter file."""
    import numpy as np

    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        raw = np.empty(size, dtype=np.uint8)
        view = memoryview(raw)
        got = searched = 0
        want = min(size, _FIRST_READ)
        while True:
            while got < want:
                k = f.readinto(view[got:want])
                if not k:
                    size = got
                    break
                got += k
            slots = np.frombuffer(raw, dtype=dtype, count=got // dtype.itemsize)
            free = _first_free(slots, rel_field, searched)
            if free is not None or got >= size:
                return raw[:got], size, free
            searched = len(slots)
            want = min(size, 4 * want)


#: The most bytes of index read without numpy (a few entries, as in a last segment's trimmed index,
#: which planning reads for each partition): numpy's cost per call would be most of such a read.
_SMALL = 4096
#: The struct formats of schemas.OFFSET_INDEX_ENTRY and schemas.TIME_INDEX_ENTRY (the dtypes' fields).
_ENTRY = {"OFFSET_INDEX_DTYPE": struct.Struct(">ii"), "TIME_INDEX_DTYPE": struct.Struct(">qi")}


def _small_used(data: bytes, dtype_name: str, rel_field: int) -> tuple[list[tuple[int, int]], int]:
    """The used slots of a few entries' bytes (see :class:`OffsetIndex`), unpacked without numpy
    (whose cost per call would be most of the read), with the count of every whole slot: each
    used slot as its two fields, the relative offset (field ``rel_field``) not yet made absolute."""
    entry = _ENTRY[dtype_name]
    n = len(data) // entry.size
    whole = n * entry.size
    rows = list(entry.iter_unpack(data if whole == len(data) else data[:whole]))
    if not rows or (rows[0][0] == 0 and rows[0][1] == 0):
        return [], n
    for i in range(1, n):
        if rows[i][rel_field] == 0:
            return rows[:i], n
    return rows, n


def _used(path: str | os.PathLike[str] | None, data: bytes | None, dtype_name: str, base: int, rel_field: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The used entries of an index file (or its bytes) as two native int64 arrays, field 0 and
    field 1 (field ``rel_field``, the relative offset, made absolute by adding ``base``), with the
    slot count and the bytes after the last whole slot. Only the used slots are converted (and, for
    a file, read: :func:`_read_used`)."""
    import numpy as np

    if data is None and path is not None and is_url(path):
        data = read_bytes(path)
    if data is not None and len(data) <= _SMALL:
        rows, n = _small_used(data, dtype_name, rel_field)
        cols = [[r[0] for r in rows], [r[1] for r in rows]]
        cols[rel_field] = [r + base for r in cols[rel_field]]
        return np.array(cols[0], dtype=np.int64), np.array(cols[1], dtype=np.int64), n, len(data) - n * _ENTRY[dtype_name].size
    dtype = _dtype(dtype_name)
    if data is None:
        assert path is not None
        buf, total, used = _read_used(path, dtype, rel_field)
        arr = np.frombuffer(buf, dtype=dtype, count=len(buf) // dtype.itemsize)
    else:
        total = len(data)
        arr = np.frombuffer(data, dtype=dtype, count=total // dtype.itemsize)
        used = _first_free(arr, rel_field)
    if used is not None:
        arr = arr[:used]
    n = total // dtype.itemsize
    out = [arr[dtype.names[0]].astype(np.int64), arr[dtype.names[1]].astype(np.int64)]
    out[rel_field] += base
    return out[0], out[1], n, total - n * dtype.itemsize


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
        name = None if path is None else os.fspath(path)
        base = base_offset if base_offset is not None else base_offset_of(path)  # type: ignore[arg-type]
        offsets, positions, n, trailing = _used(path, data, "OFFSET_INDEX_DTYPE", base, 0)
        return cls(base, offsets, positions, n, name, trailing)

    def __len__(self) -> int:
        return len(self.offsets)

    def lookup(self, target: int) -> tuple[int, int]:
        """The largest entry with offset <= ``target``, as (offset, position); (base, 0) if none."""
        import numpy as np

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
        name = None if path is None else os.fspath(path)
        base = base_offset if base_offset is not None else base_offset_of(path)  # type: ignore[arg-type]
        timestamps, offsets, n, trailing = _used(path, data, "TIME_INDEX_DTYPE", base, 1)
        return cls(base, timestamps, offsets, n, name, trailing)

    def __len__(self) -> int:
        return len(self.offsets)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The last entry with timestamp <= ``timestamp``, as (timestamp, offset); (-1, base) if none."""
        import numpy as np

        i = int(np.searchsorted(self.timestamps, timestamp, side="right")) - 1
        if i < 0:
            return -1, self.base_offset
        return int(self.timestamps[i]), int(self.offsets[i])


def last_offset(data: bytes, *, base_offset: int, time: bool = False) -> int | None:
    """The offset of the last used entry of an index file's bytes (``time``: a ``.timeindex``'s),
    None when it has none: the last of ``OffsetIndex.read(data=...).offsets`` (or ``TimeIndex``'s),
    without making the arrays when the file holds a few entries (the claim a last segment's index
    makes, which planning reads for every partition: SPEC R-LOSS-03)."""
    if len(data) > _SMALL:
        offsets = (TimeIndex if time else OffsetIndex).read(data=data, base_offset=base_offset).offsets
        return int(offsets[-1]) if len(offsets) else None
    rel_field = 1 if time else 0
    rows, _ = _small_used(data, "TIME_INDEX_DTYPE" if time else "OFFSET_INDEX_DTYPE", rel_field)
    return rows[-1][rel_field] + base_offset if rows else None


def offsets_and_positions(data: bytes, *, base_offset: int) -> tuple[list[int], list[int]]:
    """The used entries of an ``.index`` file's bytes as lists, absolute offsets and positions:
    ``OffsetIndex.read(data=...)``'s arrays, without making them when the file holds a few entries
    (a last segment's index, whose last entry planning weighs and walks the ``.log`` from)."""
    if len(data) > _SMALL:
        idx = OffsetIndex.read(data=data, base_offset=base_offset)
        return idx.offsets.tolist(), idx.positions.tolist()
    rows, _ = _small_used(data, "OFFSET_INDEX_DTYPE", 0)
    return [r[0] + base_offset for r in rows], [r[1] for r in rows]


# ------------------------------------------------------------------------------------ write side
def _round_down(number: int, factor: int) -> int:
    return factor * (number // factor)


class _Column:
    """A growable int64 numpy array (entries of a writable index)."""

    __slots__ = ("_a", "n")

    def __init__(self, values: np.ndarray | None = None) -> None:
        import numpy as np

        self._a = np.zeros(16, dtype=np.int64) if values is None or not len(values) else np.ascontiguousarray(values, dtype=np.int64)
        self.n = 0 if values is None else len(values)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> int:
        if i < 0:
            i += self.n
        if not 0 <= i < self.n:
            raise IndexError(i)
        return int(self._a[i])

    def append(self, value: int) -> None:
        import numpy as np

        if self.n == len(self._a):
            grown = np.zeros(max(16, 2 * self.n), dtype=np.int64)
            grown[: self.n] = self._a[: self.n]
            self._a = grown
        self._a[self.n] = value
        self.n += 1

    def truncate(self, n: int) -> None:
        self.n = min(n, self.n)

    def view(self) -> np.ndarray:
        return self._a[: self.n]

    def bisect_left(self, value: int) -> int:
        import numpy as np

        return int(np.searchsorted(self._a[: self.n], value, side="left"))

    def bisect_right(self, value: int) -> int:
        import numpy as np

        return int(np.searchsorted(self._a[: self.n], value, side="right"))


class IndexFile:
    """The file handle of a writable index file (``.index``, ``.timeindex``, ``.txnindex``): opened
    writable (created if absent) or not at all (``writable=False``: entries then change in memory
    only), fsynced, closed, deleted and renamed as Kafka's AbstractIndex and TransactionIndex do.
    Subclasses keep the entries."""

    #: Whether the file may not exist yet (a ``.txnindex`` is created by its first entry): renaming
    #: then renames the handle only.
    _LAZY = False
    #: What the file is called in messages.
    _WHAT = "index"

    def __init__(self, path: str | os.PathLike[str], *, writable: bool = True) -> None:
        self.path = os.fspath(path)
        self.writable = writable
        self._fd: int | None = None
        self._closed = False

    def _open(self) -> int | None:
        """The file's descriptor, opening (and creating) it if it is not open; None when read-only."""
        if self._fd is None and self.writable:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    def _require_writable(self) -> None:
        if not self.writable:
            raise ReadOnlyLogError(f"{self._WHAT} {self.path} was opened read-only", file=self.path)

    def flush(self) -> None:
        """fsync the file (when it is open: written to)."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close_handler(self) -> None:
        """Close the file (nothing else: :meth:`close` may do more)."""
        self._closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def close(self) -> None:
        """Close the file."""
        self.close_handler()

    def delete(self) -> bool:
        """Close and remove the file; False if it did not exist."""
        self._require_writable()
        self.close_handler()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            return False
        return True

    def rename_to(self, path: str | os.PathLike[str]) -> None:
        """Rename the file (atomically, as Kafka's Utils.atomicMoveWithFallback)."""
        self._require_writable()
        if not (self._LAZY and not os.path.exists(self.path)):
            os.replace(self.path, path)
        self.path = os.fspath(path)

    def __enter__(self):  # noqa: ANN204 - returns the subclass instance
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _MutableIndex(IndexFile):
    """What Kafka's AbstractIndex does with the file: preallocation, entry count, resize, trim, flush.

    Entries live in memory as Python lists (read in bulk with numpy when an existing file is
    opened) and each new entry is written in place, whole (:func:`~kafkalog.format.files.pwrite_all`);
    the file itself is the one Kafka's memory map would leave behind.

    With ``writable=False`` the file is read (when it exists) and closed: entries, resizes and
    trims then happen in memory only, so a read-only log can rebuild an index without touching
    the disk.
    """

    ENTRY_SIZE = 0
    _ENTRY: struct.Struct

    def __init__(self, path: str | os.PathLike[str], base_offset: int, max_index_size: int = DEFAULT_MAX_INDEX_SIZE, *, writable: bool = True) -> None:
        super().__init__(path, writable=writable)
        self.base_offset = base_offset
        self.max_index_size = max_index_size
        size = self.ENTRY_SIZE
        newly_created = not os.path.exists(self.path)
        if newly_created and max_index_size < size:
            raise ValueError(f"invalid max index size {max_index_size}: smaller than one {size}-byte entry")
        if newly_created:
            # Kafka: RandomAccessFile.setLength on a new file, i.e. a sparse zero-filled file
            length = _round_down(max_index_size, size)
            raw = b""
            fd = self._open()
            if fd is not None:
                try:
                    os.ftruncate(fd, length)
                except BaseException:
                    self.close_handler()
                    raise
        else:
            # Kafka takes every whole slot of an existing file as an entry (a clean shutdown trims)
            fd = os.open(self.path, os.O_RDWR if writable else os.O_RDONLY)
            try:
                length = os.fstat(fd).st_size
                raw = os.pread(fd, _round_down(length, size), 0)
            except BaseException:
                os.close(fd)
                raise
            if writable:
                self._fd = fd
            else:
                os.close(fd)
        #: whether the file existed when the index was opened
        self.existed = not newly_created
        self._length = length
        self._max_entries = length // size
        self._load(raw)

    # -- subclass hooks --------------------------------------------------------------------------
    def _load(self, raw: bytes) -> None:
        raise NotImplementedError

    def _truncate_entries(self, entries: int) -> None:
        raise NotImplementedError

    @property
    def entries(self) -> int:
        """Number of entries written."""
        raise NotImplementedError

    # -- AbstractIndex ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.entries

    @property
    def max_entries(self) -> int:
        """Slots in the file as it is now sized."""
        return self._max_entries

    @property
    def length(self) -> int:
        """Current file length in bytes."""
        return self._length

    @property
    def size_in_bytes(self) -> int:
        """Bytes used by entries."""
        return self.entries * self.ENTRY_SIZE

    def is_full(self) -> bool:
        """True when no slot is free (AbstractIndex.isFull)."""
        return self.entries >= self._max_entries

    def can_append_offset(self, offset: int) -> bool:
        """True when ``offset`` can be stored relative to the base offset (0 .. Int32.MAX_VALUE)."""
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def relative_offset(self, offset: int) -> int:
        """``offset - base_offset``, raising :class:`IndexOffsetOverflowError` when it does not fit an int32."""
        if not self.can_append_offset(offset):
            raise IndexOffsetOverflowError(f"integer overflow for offset {offset} (base offset {self.base_offset})", file=self.path, offset=offset)
        return offset - self.base_offset

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"index {self.path} is closed")

    def _write_slot(self, slot: int, data: bytes) -> None:
        self._check_open()
        if slot >= self._max_entries:
            raise IndexFullError(f"attempt to append to a full index (size = {self.entries})", file=self.path, position=slot * self.ENTRY_SIZE)
        if self._fd is not None:
            pwrite_all(self._fd, data, slot * self.ENTRY_SIZE)

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down to whole entries; False if unchanged."""
        rounded = _round_down(new_size, self.ENTRY_SIZE)
        if rounded == self._length:
            return False
        self._check_open()
        if self._fd is not None:
            os.ftruncate(self._fd, rounded)
        self._length = rounded
        self._max_entries = rounded // self.ENTRY_SIZE
        return True

    def trim_to_valid_size(self) -> None:
        """Cut the file to the used entries (AbstractIndex.trimToValidSize)."""
        self.resize(self.entries * self.ENTRY_SIZE)

    def truncate(self) -> None:
        """Drop every entry (the file keeps its length; stale slots are overwritten later, as in Kafka)."""
        self._truncate_entries(0)

    def reset(self) -> None:
        """Drop every entry and size the file for ``max_index_size`` again (AbstractIndex.reset)."""
        self.truncate()
        self.resize(self.max_index_size)

    def close(self) -> None:
        """Trim to the used entries and close (AbstractIndex.close)."""
        if self._closed:
            return
        if self.writable:
            self.trim_to_valid_size()
        self.close_handler()


class MutableOffsetIndex(_MutableIndex):
    """A writable ``.index`` (Kafka's OffsetIndex): entries ``(offset, position)``, offsets strictly increasing."""

    ENTRY_SIZE = 8
    _ENTRY = struct.Struct(">ii")

    def _load(self, raw: bytes) -> None:
        import numpy as np

        arr = np.frombuffer(raw, dtype=_dtype("OFFSET_INDEX_DTYPE"))
        self._offsets = _Column(arr["relativeOffset"].astype(np.int64) + self.base_offset)
        self._positions = _Column(arr["position"].astype(np.int64))

    @property
    def entries(self) -> int:
        """Number of entries written."""
        return len(self._offsets)

    @property
    def last_offset(self) -> int:
        """The last entry's offset, or the base offset when empty."""
        return self._offsets[-1] if self._offsets else self.base_offset

    def entry(self, n: int) -> tuple[int, int]:
        """Entry ``n`` as (offset, position)."""
        if not 0 <= n < self.entries:
            raise IndexError(f"attempt to fetch entry {n} from index {self.path}, which has size {self.entries}")
        return self._offsets[n], self._positions[n]

    def append(self, offset: int, position: int) -> None:
        """Append ``(offset, position)``; the offset must be larger than the last entry's (OffsetIndex.append)."""
        if self.is_full():
            raise IndexFullError(f"attempt to append to a full index (size = {self.entries})", file=self.path, offset=offset)
        if self._offsets and offset <= self._offsets[-1]:
            raise InvalidOffsetError(
                f"attempt to append an offset {offset} to position {self.entries} no larger than the last offset appended ({self._offsets[-1]})",
                file=self.path, position=self.entries * self.ENTRY_SIZE, offset=offset,
            )
        self._write_slot(self.entries, self._ENTRY.pack(self.relative_offset(offset), position))
        self._offsets.append(offset)
        self._positions.append(position)

    def lookup(self, target: int) -> tuple[int, int]:
        """The entry with the largest offset <= ``target`` as (offset, position); (base, 0) if none."""
        i = self._offsets.bisect_right(target) - 1
        if i < 0:
            return self.base_offset, 0
        return self._offsets[i], self._positions[i]

    def offsets_and_positions(self) -> tuple[np.ndarray, np.ndarray]:
        """The entries' offsets and positions (views: do not modify)."""
        return self._offsets.view(), self._positions.view()

    def fetch_upper_bound_offset(self, position: int, fetch_size: int) -> tuple[int, int] | None:
        """The first entry whose position is >= ``position + fetch_size`` (OffsetIndex.fetchUpperBoundOffset)."""
        i = self._positions.bisect_left(position + fetch_size)
        if i >= self.entries:
            return None
        return self._offsets[i], self._positions[i]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= ``offset`` (OffsetIndex.truncateTo)."""
        self._truncate_entries(self._offsets.bisect_left(offset))

    def _truncate_entries(self, entries: int) -> None:
        self._offsets.truncate(entries)
        self._positions.truncate(entries)

    def sanity_check(self) -> None:
        """Raise :class:`CorruptIndexError` where Kafka's OffsetIndex.sanityCheck would."""
        if self.entries and self.last_offset < self.base_offset:
            raise CorruptIndexError(f"index has non-zero size but the last offset is {self.last_offset}, less than the base offset", file=self.path)
        if self._length % self.ENTRY_SIZE:
            raise CorruptIndexError(f"index is corrupt: {self._length} bytes is not a multiple of {self.ENTRY_SIZE}", file=self.path)

    def to_index(self) -> OffsetIndex:
        """A read-only :class:`OffsetIndex` of the current entries."""
        return OffsetIndex(self.base_offset, self._offsets.view().copy(), self._positions.view().copy(), self._max_entries, self.path)


class MutableTimeIndex(_MutableIndex):
    """A writable ``.timeindex`` (Kafka's TimeIndex): entries ``(timestamp, offset)``, timestamps strictly increasing.

    The last slot is kept free for the entry written when the segment becomes inactive, so the
    index counts as full one entry early (TimeIndex.isFull).
    """

    ENTRY_SIZE = 12
    _ENTRY = struct.Struct(">qi")

    def _load(self, raw: bytes) -> None:
        import numpy as np

        arr = np.frombuffer(raw, dtype=_dtype("TIME_INDEX_DTYPE"))
        self._timestamps = _Column(arr["timestamp"].astype(np.int64))
        self._offsets = _Column(arr["relativeOffset"].astype(np.int64) + self.base_offset)

    @property
    def entries(self) -> int:
        """Number of entries written."""
        return len(self._offsets)

    def is_full(self) -> bool:
        """True when only the reserved last slot is free (TimeIndex.isFull)."""
        return self.entries >= self._max_entries - 1

    @property
    def last_entry(self) -> tuple[int, int]:
        """The last entry as (timestamp, offset), or (-1, base offset) when empty."""
        if not self._offsets:
            return -1, self.base_offset
        return self._timestamps[-1], self._offsets[-1]

    def entry(self, n: int) -> tuple[int, int]:
        """Entry ``n`` as (timestamp, offset)."""
        if not 0 <= n < self.entries:
            raise IndexError(f"attempt to fetch entry {n} from time index {self.path}, which has size {self.entries}")
        return self._timestamps[n], self._offsets[n]

    def timestamps_and_offsets(self) -> tuple[np.ndarray, np.ndarray]:
        """The entries' timestamps and offsets (views: do not modify)."""
        return self._timestamps.view(), self._offsets.view()

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Append ``(timestamp, offset)`` if the timestamp is larger than the last entry's (TimeIndex.maybeAppend).

        Returns whether an entry was written. ``skip_full_check`` lets the roll/close entry use
        the reserved last slot.
        """
        if not skip_full_check and self.is_full():
            raise IndexFullError(f"attempt to append to a full time index (size = {self.entries})", file=self.path, offset=offset)
        last_ts, last_offset = self.last_entry
        if self._offsets and offset < last_offset:
            raise InvalidOffsetError(
                f"attempt to append an offset ({offset}) to slot {self.entries} no larger than the last offset appended ({last_offset})",
                file=self.path, position=self.entries * self.ENTRY_SIZE, offset=offset,
            )
        if self._offsets and timestamp < last_ts:
            raise InvalidOffsetError(
                f"attempt to append a timestamp ({timestamp}) to slot {self.entries} no larger than the last timestamp appended ({last_ts})",
                file=self.path, position=self.entries * self.ENTRY_SIZE, offset=offset,
            )
        if timestamp <= last_ts:
            return False
        self._write_slot(self.entries, self._ENTRY.pack(timestamp, self.relative_offset(offset)))
        self._timestamps.append(timestamp)
        self._offsets.append(offset)
        return True

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The entry with the largest timestamp <= ``timestamp`` as (timestamp, offset); (-1, base) if none."""
        i = self._timestamps.bisect_right(timestamp) - 1
        if i < 0:
            return -1, self.base_offset
        return self._timestamps[i], self._offsets[i]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with an offset >= ``offset`` (TimeIndex.truncateTo)."""
        self._truncate_entries(self._offsets.bisect_left(offset))

    def _truncate_entries(self, entries: int) -> None:
        self._timestamps.truncate(entries)
        self._offsets.truncate(entries)

    def sanity_check(self) -> None:
        """Raise :class:`CorruptIndexError` where Kafka's TimeIndex.sanityCheck would."""
        if self.entries:
            last_ts, last_offset = self.last_entry
            if last_ts < self._timestamps[0]:
                raise CorruptIndexError(f"time index has non-zero size but the last timestamp is {last_ts}, less than the first", file=self.path)
            if last_offset < self.base_offset:
                raise CorruptIndexError(f"time index has non-zero size but the last offset is {last_offset}, less than the base offset", file=self.path)
        if self._length % self.ENTRY_SIZE:
            raise CorruptIndexError(f"time index is corrupt: {self._length} bytes is not a multiple of {self.ENTRY_SIZE}", file=self.path)

    def to_index(self) -> TimeIndex:
        """A read-only :class:`TimeIndex` of the current entries."""
        return TimeIndex(self.base_offset, self._timestamps.view().copy(), self._offsets.view().copy(), self._max_entries, self.path)
