"""Where a partition's files come from: the partitions under broker data dirs, partition dirs,
globs of them, or URLs (``s3://bucket/dir``), each seen as an ordered list of segments on some
storage. What ``kafkalog.scan``, ``info``, ``cat`` and ``export`` read is found here.

A partition is a :class:`PartitionFiles`: its topic and partition, the :class:`Storage` its files
live on, and its segments (:class:`SegmentFiles`, by base offset) and producer snapshots. Nothing
here assumes a local disk: another source of segments (a tiered-storage bucket, say) only needs
to make :class:`PartitionFiles` whose storage reads its files.

A directory is seen as the broker serves it once it has loaded it: the leftovers of an interrupted
cleaner, split or retention (``.swap``, ``.cleaned``, ``.deleted`` files) are dropped, or a
completed swap's files stand in for the segments they replace, by LogLoader's rule
(:mod:`kafkalog.log.leftovers`, SPEC R-RCV-04).

Reading never writes: files are opened read-only and nothing is created.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import gc
import glob
import itertools
import operator
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import MISSING, dataclass, field, fields
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, Protocol, TypeVar

from kafkalog.errors import KafkaLogError, LogNotFoundError
from kafkalog.format.files import RemoteFile, UrlFile, dir_lister, is_url, url_filesystem
from kafkalog.log.gaps import (
    PARTITION_DIR,
    SEGMENT_KINDS,
    SMALL_LISTING,
    WHOLE_TAIL,
    Gap,
    LogDirOffsets,
    find_gaps,
    read_local,
    segment_file,
)
from kafkalog.log.layout import PARTITION_FILES, layout, read_layout
from kafkalog.log.leftovers import as_loaded, renamed_name
from kafkalog.log.reads import log_start_offset

if TYPE_CHECKING:
    from fsspec.spec import AbstractFileSystem

    from kafkalog.log.s3get import DirectGets

__all__ = [
    "Entry",
    "LocalStorage",
    "PartitionFiles",
    "SegmentFiles",
    "Storage",
    "UrlStorage",
    "find_copies",
    "find_partitions",
    "gc_paused",
    "partition_dirs",
    "slots_maker",
    "storage_for",
    "storage_of",
]

T = TypeVar("T")

#: a pending delete, a future replica, a stray: Kafka reads none of them as the partition's log
_SKIPPED_DIR = re.compile(r"-(delete|future|stray)$")


#: the files whose size a local listing asks for: a segment's data (or a completed swap's, which stands
#: for it); a stat apiece is most of a listing's cost, and no other file's size is needed before it is read
_SIZED = (".log", ".log.swap")


class _EntryFields(NamedTuple):
    path: str
    size: int | None
    is_dir: bool
    name: str


class Entry(_EntryFields):
    """One directory entry: its full path (as the storage names it), size and whether it is a
    directory, and its ``name`` (the last part of the path, found from it when not given).
    ``size`` is None when the listing did not ask for it: a local listing stats only the files
    named in :data:`_SIZED`.

    A named tuple: a listing of 100,000 partition dirs makes an entry per file, and a tuple is made
    in a fraction of a frozen dataclass's time (which sets each field through ``object.__setattr__``)."""

    __slots__ = ()

    def __new__(cls, path: str, size: int | None, is_dir: bool, name: str = "") -> Entry:  # noqa: D102
        return _new_tuple(cls, (path, size, is_dir, name or path.rstrip("/").rsplit("/", 1)[-1]))


_new_tuple = tuple.__new__


class Storage(Protocol):
    """The read-only file operations a partition source needs."""

    def listdir(self, path: str) -> list[Entry]:
        """The entries of a directory."""

    def tree(self, path: str) -> dict[str, list[Entry]]:
        """The files of a directory and of every directory under it (at any depth; not under a
        ``-delete``, ``-future`` or ``-stray`` one), keyed by directory."""

    def walk(self, path: str) -> Iterator[tuple[str, list[Entry]]]:
        """:meth:`tree`'s directories one at a time, in no set order: a caller that handles each
        and lets its entries go holds one directory's listing, not the whole tree's."""

    def open(self, path: str, size: int | None = None) -> BinaryIO:
        """A seekable binary file opened for reading; ``size``: its size when a listing gave it (on
        object storage it then need not be asked for)."""

    def read(self, path: str) -> bytes:
        """A whole (small) file."""

    def isdir(self, path: str) -> bool: ...

    def exists(self, path: str) -> bool: ...

    def glob(self, pattern: str) -> list[str]: ...

    def join(self, directory: str, name: str) -> str: ...

    def display(self, path: str) -> str:
        """The path as a user gave it (a URL keeps its protocol), for messages and output."""


class LocalStorage:
    """The local file system."""

    def listdir(self, path: str) -> list[Entry]:
        return _local_entries(path, None)

    @staticmethod
    def files(path: str, subdirs: list[str]) -> list[Entry]:
        """A directory's files as :meth:`walk` lists each directory: the paths of the directories
        under it that a walk enters (not ``-delete``, ``-future`` or ``-stray`` ones) are added to
        ``subdirs`` instead. For a caller that lists the dirs a walk found one at a time (the Spark
        source's planning workers) and must see them as the walk would."""
        return _local_entries(path, subdirs)

    def tree(self, path: str) -> dict[str, list[Entry]]:
        return dict(self.walk(path))

    def walk(self, path: str) -> Iterator[tuple[str, list[Entry]]]:
        return _local_walk(path, None)  # type: ignore[return-value]

    def open(self, path: str, size: int | None = None) -> BinaryIO:
        return _listed(path, lambda p: open(p, "rb"))

    def read(self, path: str) -> bytes:
        return read_local(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def glob(self, pattern: str) -> list[str]:
        return sorted(glob.glob(pattern))

    def join(self, directory: str, name: str) -> str:
        return os.path.join(directory, name)

    def display(self, path: str) -> str:
        return path


def _local_walk(path: str, leave: Callable[[str], tuple | None] | None, *, root: bool = True) -> Iterator[tuple[str, list[Entry] | tuple]]:
    """:meth:`LocalStorage.walk`; ``leave(d)``, when not None, is given in place of the listing of a
    directory below ``path`` that is left unlisted (the walk then goes on without it). ``root``:
    ``path`` is the walk's root, which raises when it cannot be listed (below a root, a directory
    removed while walked is passed over)."""
    todo = [path]
    while todo:
        d = todo.pop()
        if leave is not None and d != path and (left := leave(d)) is not None:
            yield d, left
            continue
        subdirs: list[str] = []
        try:
            files = _local_entries(d, subdirs)
        except (FileNotFoundError, NotADirectoryError):
            if d == path and root:
                raise
            continue  # removed while walked
        todo.extend(subdirs)
        yield d, files


def _local_entries(path: str, subdirs: list[str] | None) -> list[Entry]:
    """The entries of a local directory, in one pass: with ``subdirs``, only its files, the paths of
    the directories under it that a walk enters (not ``-delete``, ``-future`` or ``-stray`` ones)
    being added to ``subdirs`` instead."""
    lister = dir_lister()
    if lister is not None:
        return lister(path, subdirs, Entry, _SKIPPED_DIR.search)[0]
    return _scandir_entries(path, subdirs)


def _local_listing(path: str, subdirs: list[str]) -> tuple[list[Entry], dict[str, bytes] | None]:
    """:func:`_local_entries` of a partition dir whose data loss is to be found next, and the whole
    bytes of the small files that check reads (:func:`kafkalog.log.gaps.find_gaps`'s ``held``),
    which the compiled listing reads through the directory it holds open (None on the plain path:
    the check reads them itself)."""
    lister = dir_lister()
    if lister is not None:
        return lister(path, subdirs, Entry, _SKIPPED_DIR.search, WHOLE_TAIL)  # type: ignore[no-any-return]
    return _scandir_entries(path, subdirs), None


def _scandir_entries(path: str, subdirs: list[str] | None) -> list[Entry]:
    """:func:`_local_entries` the plain way (``os.scandir``), which the compiled listing
    (:func:`kafkalog.fast._dirs.list_dir`, plugged in by the package) gives the same entries,
    order and errors as: a directory's ``stat``, an entry's (its type, when the listing does not
    give it or it is a symbolic link, followed; its size, for the names in :data:`_SIZED`), but that
    of an entry removed while listed, which is passed over when its size was wanted."""
    out = []
    with os.scandir(path) as it:
        for e in it:
            name = e.name
            try:
                if e.is_dir():
                    if subdirs is None:
                        out.append(_new_tuple(Entry, (e.path, 0, True, name)))
                    elif not _SKIPPED_DIR.search(name):
                        subdirs.append(e.path)
                    continue
                size = e.stat().st_size if name.endswith(_SIZED) else None
            except FileNotFoundError:
                continue  # removed while listed
            out.append(_new_tuple(Entry, (e.path, size, False, name)))
    return out


class UrlStorage:
    """An fsspec file system (``s3://`` and the others fsspec knows), its paths without the protocol."""

    def __init__(self, fs: AbstractFileSystem) -> None:
        self.fs = fs
        self._found: dict[str, dict[str, dict]] = {}  # a recursive listing taken by isdir, until tree takes it
        self._tails: dict[str, tuple[int, bytes]] = {}  # what open_tail read of each file: its start and bytes
        self._tail_bytes = 0
        self._kept: dict[str, bytes] = {}  # the last small files read, oldest first
        self._kept_bytes = 0
        self._lock = threading.Lock()
        self._direct: DirectGets | None = None  # s3fs called from outside its event loop: GETs received into the caller's buffer
        if callable(getattr(fs, "_call_s3", None)) and not getattr(fs, "asynchronous", True):
            from kafkalog.log.s3get import DirectGets

            self._direct = DirectGets(fs)

    def _find(self, top: str) -> dict[str, dict]:
        """Every file under ``top`` with its details: one recursive listing, however many objects."""
        if top not in self._found:
            try:
                self._found[top] = self._call(top, lambda: self.fs.find(top, withdirs=False, detail=True))  # type: ignore[assignment]
            except FileNotFoundError:  # no such bucket: nothing under it
                self._found[top] = {}
        return self._found[top]

    def _call(self, path: str, call: Callable[[], object]) -> object:
        try:
            return call()
        except (OSError, KafkaLogError):
            raise
        except Exception as e:  # noqa: BLE001 - any library's error (refused credentials, ...) is reported as the path's
            raise OSError(f"{self.display(path)}: {type(e).__name__}: {e}") from e

    def listdir(self, path: str) -> list[Entry]:
        found = self._call(path, lambda: self.fs.ls(path, detail=True))
        return [Entry(e["name"], int(e.get("size") or 0), e.get("type") == "directory") for e in found]  # type: ignore[attr-defined]

    def tree(self, path: str) -> dict[str, list[Entry]]:
        """From one recursive listing (the one :meth:`isdir` took, if it did): on object storage
        listing each partition dir would be a request apiece."""
        top = path.rstrip("/")
        found = self._find(top)
        self._found.pop(top, None)  # listed once; not kept: a large bucket's listing is large
        out: dict[str, list[Entry]] = {top: []}
        for name, info in sorted(found.items()):
            rel = name[len(top) + 1 :] if name.startswith(top + "/") else ""
            parts = rel.split("/")
            if not rel or any(_SKIPPED_DIR.search(p) for p in parts[:-1]):
                continue
            d = "/".join([top, *parts[:-1]])
            out.setdefault(d, []).append(Entry(name, int(info.get("size") or 0), False))
        return out

    def walk(self, path: str) -> Iterator[tuple[str, list[Entry]]]:
        """:meth:`tree`'s items (the one recursive listing is taken whole)."""
        return iter(self.tree(path).items())

    def open(self, path: str, size: int | None = None) -> BinaryIO:
        """The file read with ranged requests (:class:`~kafkalog.format.files.UrlFile`, through
        :meth:`read_range`: what planning read of a ``.log``'s end is not fetched again), sized by the
        listing when ``size`` is given, else by asking once."""
        def ask() -> int:
            return int(_listed(path, lambda p: self._call(p, lambda: self.fs.size(p))))  # type: ignore[call-overload]

        return UrlFile(self.display(path), lambda a, b: self.read_range(path, a, b), size if size else ask,
                       lambda a, view: self.read_range_into(path, a, view))

    def read(self, path: str) -> bytes:
        """A whole (small) file. The last few read are kept (up to :data:`KEPT_BYTES`): the data-loss
        check, ``info``'s inventory and a scan's plan each read a last segment's indexes, and on
        object storage each read is a request."""
        with self._lock:
            data = self._kept.get(path)
        if data is not None:
            return data
        data = self._call(path, lambda: self.fs.cat_file(path))  # type: ignore[assignment]
        if len(data) <= KEPT_BYTES:  # type: ignore[arg-type]
            with self._lock:
                self._kept[path] = data  # type: ignore[assignment]
                self._kept_bytes += len(data)  # type: ignore[arg-type]
                while self._kept_bytes > KEPT_BYTES:
                    self._kept_bytes -= len(self._kept.pop(next(iter(self._kept))))
        return data  # type: ignore[return-value]

    def read_range(self, path: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of a file a listing named (one ranged request, no HEAD), as
        :meth:`open` finds it: under its new name if the broker renamed it since. What
        :meth:`open_tail` read of the file already is not fetched again (and is let go once read)."""
        end, kept = self._held_tail(path, start, end)
        if end <= start:
            return kept
        return _listed(path, lambda p: self._call(p, lambda: self.fs.cat_file(p, start=start, end=end))) + kept  # type: ignore[operator]

    def read_range_into(self, path: str, start: int, view: memoryview, progress: Callable[[int], None] | None = None) -> int:
        """:meth:`read_range` of ``[start, start + len(view))`` written into ``view``; the bytes
        written (fewer at the file's end). From S3 (s3fs), the response body is written into
        ``view`` as it arrives: no bytes object of the whole range is made, so a caller that
        reuses its buffers (:class:`kafkalog.log.ranges.ReadAhead`) touches no new memory; and
        ``progress(n)`` is told, as they arrive, that the first ``n`` bytes are in ``view``, for a
        reader to read them before the rest (should a request fail part-way and be sent again,
        the same bytes are written again)."""
        end, kept = self._held_tail(path, start, start + len(view))
        n = 0
        if end > start:
            n = _listed(path, lambda p: self._call(p, lambda: _fetch_into(self.fs, p, start, view[: end - start], self._direct, progress)))  # type: ignore[assignment]
            if n < end - start:  # the file ends there
                return n
        view[n : n + len(kept)] = kept
        return n + len(kept)

    def _held_tail(self, path: str, start: int, end: int) -> tuple[int, bytes]:
        """Where the request for ``[start, end)`` of ``path`` ends and the bytes after that which
        :meth:`open_tail` kept (let go once the read reaches the file's end)."""
        with self._lock:
            t0, tail = self._tails.get(path, (end, b""))
            if start < end <= t0 + len(tail) and t0 < end:
                if end == t0 + len(tail):  # read to the end: the read that follows planning's
                    del self._tails[path]
                    self._tail_bytes -= len(tail)
                return max(start, t0), tail[max(0, start - t0) : end - t0]
        return end, b""

    def open_tail(self, path: str) -> BinaryIO:
        """A ``.log`` to read from some position to its end (planning's data-loss check of a last
        segment: :func:`kafkalog.log.gaps.find_gaps`): what it reads is kept, up to
        :data:`TAIL_BYTES` for the storage, for :meth:`read_range` to give the scan that follows
        rather than fetch it twice."""
        return _TailFile(self, path)

    def _keep_tail(self, path: str, start: int, data: bytes) -> None:
        with self._lock:
            if path not in self._tails and self._tail_bytes + len(data) <= TAIL_BYTES:
                self._tails[path] = (start, data)
                self._tail_bytes += len(data)

    def isdir(self, path: str) -> bool:
        """Whether objects lie under the prefix, from the recursive listing that :meth:`tree` then
        reads (an object store has no directories to ask about: the listing is the one request)."""
        top = path.rstrip("/")
        return any(name.startswith(top + "/") for name in self._find(top)) or bool(self._call(path, lambda: self.fs.isdir(path)))

    def exists(self, path: str) -> bool:
        return bool(self._call(path, lambda: self.fs.exists(path)))

    def glob(self, pattern: str) -> list[str]:
        return sorted(self._call(pattern, lambda: self.fs.glob(pattern)))  # type: ignore[call-overload]

    def join(self, directory: str, name: str) -> str:
        return f"{directory.rstrip('/')}/{name}"

    def display(self, path: str) -> str:
        return self.fs.unstrip_protocol(path)


#: Bytes of ``.log`` ends that planning read and a scan reads next, kept per storage at most.
TAIL_BYTES = 64 << 20
#: Bytes of whole small files (indexes, snapshots) kept per storage at most, the last read.
KEPT_BYTES = 16 << 20


class _TailFile(RemoteFile):
    """A file read forward from some position to its end: each range is fetched once, from the
    position asked to the bytes already held (a read from an earlier position fetches only what
    lies before them), and given to the storage when closed."""

    def __init__(self, storage: UrlStorage, path: str) -> None:
        super().__init__(storage.display(path), int(storage._call(path, lambda: storage.fs.size(path))))  # type: ignore[call-overload]
        self._storage = storage
        self._path = path
        self._start = self._size  # the bytes held are [_start, _size)
        self._data = b""

    def readinto(self, b: memoryview | bytearray) -> int:  # type: ignore[override]
        view = memoryview(b).cast("B")
        pos = self._pos
        if pos < self._start:
            self._data = self._storage.read_range(self._path, pos, self._start) + self._data
            self._start = pos
        n = max(0, min(len(view), self._size - pos))
        view[:n] = self._data[pos - self._start : pos - self._start + n]
        self._pos += n
        return n

    def close(self) -> None:
        if not self.closed and self._data:
            self._storage._keep_tail(self._path, self._start, self._data)
            self._data = b""
        super().close()


def _fetch_into(fs: AbstractFileSystem, path: str, start: int, view: memoryview, direct: DirectGets | None,
                progress: Callable[[int], None] | None = None) -> int:
    """Bytes ``[start, start + len(view))`` of ``path`` on ``fs`` written into ``view`` with one
    ranged request; the bytes written. From s3fs (``direct``: :class:`~kafkalog.log.s3get.DirectGets`
    of ``fs``), the body is received into ``view``, else s3fs's response body is copied in as it
    arrives (a bytes object of the whole range, as ``cat_file`` makes by joining the chunks, costs a
    copy and fresh memory: on loopback, most of a client's CPU); any other filesystem's
    ``cat_file`` is copied in. ``progress``: as :meth:`UrlStorage.read_range_into`."""
    if not len(view):
        return 0
    if direct is None:  # not s3fs, or one in an event loop of its own
        data = fs.cat_file(path, start=start, end=start + len(view))
        view[: len(data)] = data
        return len(data)
    n = direct.get_into(path, start, view, progress)
    if n is not None:
        return n
    from fsspec.asyn import sync

    return sync(fs.loop, _s3_get_into, fs, path, start, view, progress)


async def _s3_get_into(fs: AbstractFileSystem, path: str, start: int, view: memoryview,
                       progress: Callable[[int], None] | None = None) -> int:
    """One ranged GetObject of s3fs's ``fs`` (its retries, error translation and request options),
    its body copied into ``view`` chunk by chunk (``progress``: told of each)."""
    bucket, key, version = fs.split_path(path)  # type: ignore[attr-defined]
    resp = await fs._call_s3("get_object", Bucket=bucket, Key=key, Range=f"bytes={start}-{start + len(view) - 1}",  # type: ignore[attr-defined]
                             **({"VersionId": version} if version else {}))
    body = resp["Body"]
    try:
        stream = getattr(getattr(body, "raw_stream", None), "content", None)  # aiohttp's StreamReader
        if not callable(getattr(stream, "readany", None)):
            data = await body.read()
            view[: len(data)] = data
            return len(data)
        n = 0
        while n < len(view):
            chunk = await stream.readany()
            if not chunk:
                break
            if n + len(chunk) > len(view):
                raise OSError(f"{fs.unstrip_protocol(path)}: the server sent more than the {len(view)} bytes asked for from byte {start}")
            view[n : n + len(chunk)] = chunk
            n += len(chunk)
            if progress:
                progress(n)
        return n
    finally:
        body.close()


def _listed(path: str, open_file: Callable[[str], T]) -> T:
    """``open_file(path)`` of a file a listing named; if the broker renamed it since (a completed
    swap, a segment renamed ``.deleted``: :func:`kafkalog.log.leftovers.renamed_name`), the file
    under its new name, which holds the same bytes. The original error when neither is there."""
    try:
        return open_file(path)
    except FileNotFoundError:
        try:
            return open_file(renamed_name(path))
        except FileNotFoundError:
            pass
        raise


def storage_of(fs: AbstractFileSystem) -> Storage:
    """The storage of an fsspec filesystem's paths (a caller that holds a filesystem, as Spark's
    executors do): its local disk as :class:`LocalStorage`, any other as :class:`UrlStorage`, so
    that its files are opened as every reader opens them (ranged requests into reused buffers)."""
    protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
    return LocalStorage() if "file" in protocols else UrlStorage(fs)


def storage_for(path: str) -> tuple[Storage, str]:
    """The storage ``path`` lives on and the path within it."""
    if is_url(path):
        fs, stripped = url_filesystem(path)
        return UrlStorage(fs), stripped
    return LocalStorage(), path


def slots_maker(cls: type[T], *names: str) -> Callable[..., T]:
    """A function making a ``cls`` (a frozen dataclass with slots and no ``__post_init__``) from the
    values of its fields ``names``, in that order, the others at their defaults: the object
    ``cls(...)`` makes (equal, as frozen), in about half the time. The dataclass's ``__init__`` sets
    each field through ``object.__setattr__``, looked up again for each; this one through the
    field's slot. For the objects planning makes for each of many partitions (four apiece, over
    100,000 partition dirs: :meth:`_Walk.listed`, :func:`kafkalog.dataset.scan.plan_all`), written
    out field by field as ``dataclasses`` writes ``__init__``."""
    known = fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or not set(names) <= {f.name for f in known} or any(f.name.startswith("_m_") for f in known):
        raise TypeError(f"{cls.__name__} is not made by setting its fields {names}")
    # the function's own names start with "_m_", which no field's may (refused above)
    env: dict[str, object] = {"_m_new": object.__new__, "_m_cls": cls}
    lines = []
    for f in known:
        env[f"_m_set_{f.name}"] = cls.__dict__[f.name].__set__
        if f.name not in names:
            if f.default is MISSING:
                raise TypeError(f"{cls.__name__}.{f.name} has no plain default: give it")
            env[f"_m_default_{f.name}"] = f.default
        lines.append(f"    _m_set_{f.name}(_m_o, {f.name if f.name in names else f'_m_default_{f.name}'})\n")
    exec(f"def _m_make({', '.join(names)}):\n    _m_o = _m_new(_m_cls)\n{''.join(lines)}    return _m_o\n", env)
    return env["_m_make"]  # type: ignore[return-value]


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """One segment: its base offset, its ``.log`` (None when only its indexes are there) and the
    ``.log``'s size when listed, and the index files found beside it.

    ``first_offset``: the first offset read from it, when an earlier segment already gave the ones
    before (a segment in both tiers of tiered storage, or two leaders' copies overlapping; see
    :meth:`kafkalog.log.tiered.TieredPartition.files`); None: from its base offset. ``until``: the
    first offset not read from it, when a later segment of another copy gives the rest
    (:func:`kafkalog.log.replicas.one_view`); None: up to the next segment."""

    base_offset: int
    log: str | None
    size: int = 0
    index: str | None = None
    timeindex: str | None = None
    txnindex: str | None = None
    first_offset: int | None = None
    until: int | None = None

    @property
    def first(self) -> int:
        """The first offset read from the segment."""
        return self.base_offset if self.first_offset is None else self.first_offset


@dataclass(frozen=True, slots=True)
class PartitionFiles:
    """One topic-partition's files: segments by base offset, producer snapshots by offset.

    ``log_dir`` holds what its data dir's checkpoints say (the log start offset, and the log end
    at a clean shutdown); ``listing`` is every file name of the directory with its size, as
    listed (what :mod:`kafkalog.log.gaps` judges; None: not asked, see :class:`Entry`)."""

    storage: Storage = field(repr=False, compare=False)
    topic: str
    partition: int
    dir: str
    segments: tuple[SegmentFiles, ...]
    snapshots: tuple[tuple[int, str], ...] = ()
    log_dir: LogDirOffsets = field(default_factory=LogDirOffsets, repr=False, compare=False)
    listing: tuple[tuple[str, int | None], ...] = field(default=(), repr=False, compare=False)
    #: its data loss as :meth:`gaps` gives it, when found already (by the worker process that listed
    #: the directory: :func:`find_partitions`'s ``list_many``), as the files were then: a caller that
    #: keeps the partition while the log changes discovers it again; None: found when asked
    found_gaps: tuple[Gap, ...] | None = field(default=None, repr=False, compare=False)

    @property
    def log_start_checkpoint(self) -> int | None:
        """The partition's entry in its data dir's ``log-start-offset-checkpoint``, if any."""
        return self.log_dir.log_start.get((self.topic, self.partition))

    @property
    def log_start_offset(self) -> int | None:
        """Where a consumer's "earliest" starts (:func:`kafkalog.log.reads.log_start_offset`): the
        checkpoint's entry when above the first segment's base offset, else that base offset."""
        for s in self.segments:  # the first of :attr:`logs`, without making the list (asked once per partition planned)
            if s.log is not None:
                return log_start_offset(self.log_start_checkpoint, s.base_offset)
        return log_start_offset(self.log_start_checkpoint, None)

    @property
    def name(self) -> str:
        """``<topic>-<partition>``."""
        return f"{self.topic}-{self.partition}"

    @property
    def logs(self) -> list[SegmentFiles]:
        """The segments whose ``.log`` is there, by base offset."""
        return [s for s in self.segments if s.log is not None]

    def display(self, path: str | None = None) -> str:
        """A file of the partition (default: its directory) as the user named it."""
        return self.storage.display(self.dir if path is None else path)

    def gaps(self) -> list[Gap]:
        """Offsets the partition's own files say existed but no ``.log`` holds (data loss: :func:`kafkalog.log.gaps.find_gaps`)."""
        if self.found_gaps is not None:
            return list(self.found_gaps)
        if isinstance(self.storage, UrlStorage):  # its reads: what is read twice is fetched once
            remote = self.storage
            found = find_gaps(self.dir, fs=remote.fs, files=dict(self.listing), checkpoints=self.log_dir, open_log=remote.open_tail,
                              read_file=remote.read)
        else:
            found = _local_gaps(self.dir, self.listing, self.log_dir)
        shown = self.display()
        return [Gap(shown, g.start, g.end, g.evidence) for g in found] if shown != self.dir else found


#: :class:`SegmentFiles` of its first six fields (as a worker sends them: :data:`Listed`), and
#: :class:`PartitionFiles` of all its fields, made as :func:`slots_maker` makes them
_new_segment = slots_maker(SegmentFiles, "base_offset", "log", "size", "index", "timeindex", "txnindex")
_new_partition = slots_maker(PartitionFiles, *(f.name for f in fields(PartitionFiles)))


def _local_gaps(directory: str, listing: tuple[tuple[str, int | None], ...], log_dir: LogDirOffsets,
                held: dict[str, bytes] | None = None, partition: tuple[str, int] | None = None) -> list[Gap]:
    """:meth:`PartitionFiles.gaps` of a partition dir on local disk, found afresh from its listing;
    ``held``: the whole files the listing read (:func:`_local_listing`), ``partition``: its topic
    and partition when its name has been read already (a worker's, :func:`_list_candidate`)."""
    return find_gaps(directory, files=dict(listing), checkpoints=log_dir, held=held, partition=partition)


def _partition(storage: Storage, directory: str, files: list[Entry], log_dir: LogDirOffsets,
               topic_partition: tuple[str, int] | None = None) -> PartitionFiles | None:
    """The partition a directory's files describe, or None when they hold no Kafka partition file.
    ``topic_partition``: what the directory's name says, when the caller has read it already."""
    parts = _parts(storage, files)
    if parts is None:
        return None
    if topic_partition is None:
        name = directory.rstrip("/").rsplit("/", 1)[-1]
        if os.sep != "/":
            name = name.rsplit(os.sep, 1)[-1]
        m = PARTITION_DIR.match(name)
        if m is None:
            raise KafkaLogError("holds Kafka files but its name is not <topic>-<partition>, so its topic and partition are unknown",
                                file=storage.display(directory))
        topic_partition = m["topic"], int(m["partition"])
    segments, snapshots, listing = parts
    return PartitionFiles(storage, *topic_partition, directory, tuple([SegmentFiles(*s) for s in segments]), snapshots, log_dir, listing)


def _parts(storage: Storage, files: list[Entry]) -> tuple[tuple[tuple, ...], tuple[tuple[int, str], ...], tuple[tuple[str, int | None], ...]] | None:
    """What a directory's files make of a partition, as plain values (:data:`Listed`'s first three:
    its segments, each :class:`SegmentFiles`' first six fields, its snapshots and its listing), or
    None when they hold no Kafka partition file. A worker process gives them as they are (they
    pickle several times faster than the objects, which are made once, by the process that asked)."""
    names = tuple(map(_NAME, files))
    found = layout(names) if len(names) <= SMALL_LISTING else read_layout(names)
    if found is None:  # leftovers of an interrupted operation: as the broker has the files after loading them
        if not any(map(_is_kafka_file, names)):
            return None  # none opened: a directory of leftovers alone is no partition dir
        found = read_layout(names, as_loaded({e.name: e for e in files}, lambda e: storage.open(e.path, e.size)))
    plan, snapshot_at, partition_file, _ = found
    if not plan and not snapshot_at and not partition_file:
        return None  # no Kafka file: the layout of names that hold one has a segment, snapshot or partition file
    segments = tuple([(base, None if log is None else files[log].path, 0 if log is None else files[log].size,
                       None if index is None else files[index].path, None if time is None else files[time].path,
                       None if txn is None else files[txn].path) for base, _, log, index, time, txn in plan])
    snapshots = tuple([(base, files[i].path) for base, i in snapshot_at])
    sizes = tuple(map(_SIZE, files))
    return segments, snapshots, _listing(names, sizes) if len(names) <= SMALL_LISTING else tuple(zip(names, sizes, strict=True))


_NAME = operator.itemgetter(3)
_SIZE = operator.itemgetter(1)


@functools.lru_cache(maxsize=1 << 12)
def _listing(names: tuple[str, ...], sizes: tuple[int | None, ...]) -> tuple[tuple[str, int | None], ...]:
    """A :attr:`PartitionFiles.listing` of a small directory, one tuple for every partition dir that
    lists its files alike (most do: ``partition.metadata``, an unsized ``00000000000000000000.index``,
    a ``.log`` of the same size): over 100,000 partition dirs, a few shared tuples rather than
    600,000 for the memory to hold and Python's cyclic garbage collector to walk."""
    return tuple(zip(names, sizes, strict=True))


@functools.lru_cache(maxsize=1 << 14)
def _is_kafka_file(name: str) -> bool:
    """Whether a file makes its directory a partition dir: a segment file, a producer snapshot, or
    one of :data:`PARTITION_FILES`. The same names recur in each partition dir: the answers are kept."""
    k = segment_file(name)
    return (k is not None and k[1] in SEGMENT_KINDS) or name in PARTITION_FILES


def _log_dir(storage: Storage, directory: str, listed: list[Entry] | None) -> LogDirOffsets:
    """What a data dir's checkpoints say (nothing when they are absent or unreadable: a log then
    starts at its first segment, as Kafka falls back). ``listed``: the data dir's files, when the
    listing reached it; on object storage only the checkpoints among them are fetched."""
    if not isinstance(storage, UrlStorage):
        return LogDirOffsets.read(directory)
    return LogDirOffsets.read(directory, storage.fs, names=None if listed is None else {e.name for e in listed})


def _parent(storage: Storage, directory: str) -> str:
    d = directory.rstrip("/")
    if isinstance(storage, UrlStorage):
        return d.rsplit("/", 1)[0] if "/" in d else d
    return os.path.dirname(os.path.abspath(d))


def _expand(storage: Storage, path: str) -> list[str]:
    if any(c in path for c in "*?["):
        return [p for p in storage.glob(path) if storage.isdir(p)]
    if not storage.isdir(path):
        what = "not a directory" if storage.exists(path) else "no such directory"
        raise LogNotFoundError(f"{what}: give a broker data dir, a partition dir or a glob of them", file=storage.display(path))
    return [path]


def tiered_hint(roots: Iterable[str]) -> str:
    """`` (this looks like tiered storage ...: add --tiered PREFIX)`` when one of ``roots`` holds the
    objects of Aiven's tiered-storage plug-in (an ``.rsm-manifest`` under ``<topic>-<topic id>/<partition>/``)
    rather than partition dirs, naming the prefix to read them with; else ``""``. Lists the roots
    again: asked only once nothing was found."""
    from kafkalog.format.tiered_aiven import open_store, parse_object_key

    for root in roots:
        for key, _size in open_store(root).list(""):
            if not key.endswith(".rsm-manifest"):
                continue
            full = f"{root.rstrip('/')}/{key}"
            k = parse_object_key(full)
            if k is None:
                continue
            # the prefix is the folder above <topic>-<topic id>: the root itself, or above it when a topic or partition folder was given
            prefix = root if parse_object_key(key) is not None else full[: full.rfind(f"{k.topic}-{k.topic_id}/")].rstrip("/") or "."
            return f" (this looks like tiered storage written by Aiven's plug-in: add --tiered {prefix}; in kafkalog.scan, tiered={prefix!r})"
    return ""


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off while the block runs, then left as it was found.
    Planning makes a few long-lived objects per partition and next to no garbage, and each full
    collection walks every object alive: over 100,000 partitions the collections cost about 15% of
    the planning's CPU time, and more per partition the more partitions there are.

    What the block made is then moved into the collector's oldest generation as it is, uncollected
    (``gc.freeze()`` then ``gc.unfreeze()``: two list moves), rather than walked by the collection
    of the youngest generation that the first allocation after the pause would start, and then
    again by the middle one's: long-lived, it is walked by the next full collection alone. Unless
    the program holds objects frozen itself (``gc.freeze()`` before a ``fork``): those stay frozen."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if not gc.get_freeze_count():
            gc.freeze()
            gc.unfreeze()
        gc.enable()


#: A directory named ``<topic>-<partition>`` under a root on local disk, as :func:`find_partitions`
#: hands it to its ``list_many``: its path, the topic and partition its name says, whether the
#: caller wants that partition, and its data dir's ``log-start-offset-checkpoint`` entry and clean
#: shutdown's recovery point for it (None: none).
Candidate = tuple[str, str, int, bool, int | None, int | None]

#: What :func:`list_candidates` gives of a candidate: ``()`` when it is no partition dir (or is
#: gone), else its segments (each :class:`SegmentFiles`'s first six fields, as plain values:
#: they pickle several times faster), snapshots, listing, and its data loss (None when not
#: wanted, or when finding it failed: it is found again when asked).
Listed = tuple


def find_partitions(paths: str | Iterable[str], *, wants: Callable[[str, int], bool] | None = None,
                    list_many: Callable[[Iterator[Candidate]], Iterator[Listed | None] | None] | None = None) -> list[PartitionFiles]:
    """Every partition directory under ``paths`` (each a folder searched at any depth, a partition
    dir or a glob of them, local or a URL), each copy on its own, sorted by topic, partition and
    directory; ``wants(topic, partition)`` false skips one. This is the one discovery of kafkalog:
    :func:`kafkalog.log.replicas.discover` (and so ``info``, ``cat``, ``scan``, ``export``), ``dump``, ``verify`` and the
    Spark source find partitions with it.

    A directory named ``<topic>-<partition>`` holding segment files, snapshots, ``partition.metadata``
    or ``leader-epoch-checkpoint`` is a partition (an empty one too), and its parent its data dir
    (whose checkpoints give its log start offset). Directories ending in ``-delete``, ``-future`` or
    ``-stray`` are skipped, as Kafka skips them, with everything under them. A path named twice gives
    its partitions once. A path holding no partition raises :class:`~kafkalog.errors.LogNotFoundError`.

    ``list_many``: a caller that lists many directories at once (worker processes: see
    :func:`kafkalog.dataset.scan.plan_all`) is called once the walk has met ``list_many.start_at``
    (default 1) directories named ``<topic>-<partition>`` below a root on local disk, and given them
    (:data:`Candidate`, in the order the walk meets them) as an iterator that takes the walk on as
    it is advanced: its listing runs beside the rest of the walk. It returns None (list them here)
    or what :func:`list_candidates` gives of each, in that order, None where this process is to
    list it; a walk that meets fewer lists them here. The partitions, and the errors, are those one
    process finds, in the same order (an error of the walk is raised after those of the directories
    met before it); ``wants`` is then asked of each such directory before it is listed, and the
    data loss of those wanted comes found (:attr:`PartitionFiles.found_gaps`)."""
    with gc_paused():
        return _find_partitions(paths, wants, list_many)[0]


def find_copies(paths: str | Iterable[str], *, wants: Callable[[str, int], bool] | None = None,
                list_many: Callable[[Iterator[Candidate]], Iterator[Listed | None] | None] | None = None) -> tuple[list[PartitionFiles], bool]:
    """:func:`find_partitions`' partitions, and whether two or more of them are copies of one
    topic-partition (in several directories): known from the walk's own record of what it found, where
    finding it from the partitions would cost about as much as sorting them."""
    with gc_paused():
        return _find_partitions(paths, wants, list_many)


def _find_partitions(paths: str | Iterable[str], wants: Callable[[str, int], bool] | None,
                     list_many: Callable[[Iterator[Candidate]], Iterator[Listed | None] | None] | None) -> tuple[list[PartitionFiles], bool]:
    found: dict[tuple[str, str], PartitionFiles] = {}
    _apply(_walk(paths, wants, found, list_many), list_many)
    # found by (<topic>-<partition>, directory): two copies of one partition share the name
    copies = len(set(map(_FIRST, found))) < len(found)
    # by topic, partition and directory as the user named it, those alike in all three in the order
    # found: by partition, then (stable) by topic, two sorts of plain keys, cheaper than one of
    # tuples; the directory (a name made per partition on object storage) orders only the copies of
    # one partition, so it is asked for only when there may be some
    ordered = sorted(found.values(), key=_PARTITION)
    ordered.sort(key=_TOPIC)
    if copies:
        ordered.sort(key=lambda p: (p.topic, p.partition, p.display()))
    return ordered, copies


_FIRST = operator.itemgetter(0)
_TOPIC = operator.attrgetter("topic")
_PARTITION = operator.attrgetter("partition")


def _apply(events: Iterator[tuple], list_many: Callable[[Iterator[Candidate]], Iterator[Listed | None] | None] | None) -> None:
    """Make the calls that ``events`` (:func:`_walk`'s) are, in order: those from the first
    directory left for ``list_many`` on are held (:class:`_Held`); once the walk has met
    ``list_many.start_at`` such directories (default 1), ``list_many`` is given them, and then
    each as the walk meets it, while their listings are taken in, in order; a walk that ends short
    of that lists them here."""
    for event in events:
        if event[0] is _CANDIDATE:
            break
        event[0](*event[1:])
    else:
        return
    held = _Held(events, event)
    start_at = getattr(list_many, "start_at", 1)
    while held.met < start_at and held.more():
        pass
    held.make(list_many(held.candidates()) if held.met >= start_at else None)  # type: ignore[misc]


class _Held:
    """The events of a walk (:func:`_walk`'s) from its first directory left for ``list_many`` on:
    taken from the walk as they are asked for (:meth:`more`), held until they are made, in order
    (:meth:`make`). What ``list_many`` is told of each such directory (:meth:`_Walk.candidate`,
    which asks ``wants``) is found as the walk meets it, and given to it by :meth:`candidates`,
    ahead of the directory's turn. An exception of the walk ends it: it is held in its turn, and
    raised after the errors of the directories met before it, as one process raises it."""

    def __init__(self, events: Iterator[tuple], first: tuple) -> None:
        self.events: Iterator[tuple] | None = events  # None once the walk has ended
        self.held: collections.deque[tuple] = collections.deque()  # the events not made yet
        self.made: collections.deque[tuple[Candidate, _Under]] = collections.deque()  # each held directory's Candidate and data dir (_Walk.candidate's)
        self.todo: collections.deque[Candidate] = collections.deque()  # those not yet given to list_many
        self.met = 0  # the directories left for list_many met
        self.listing = True  # list_many is (to be) given them
        self.more(first)

    def more(self, event: tuple | None = None) -> bool:
        """One more event of the walk (``event``, else the walk's next) held; False once the walk has
        ended. The hot path of a walk of 100,000 directories: a few operations a directory."""
        events = self.events
        if events is None:
            return False
        try:
            if event is None:
                event = next(events)
            if event[0] is _CANDIDATE:
                c, parent = event[1].candidate(event[2], event[4], event[5])
                self.made.append((c, parent))
                if self.listing:
                    self.todo.append(c)
                self.met += 1
        except StopIteration:
            self.events = None
            return False
        except Exception as e:  # noqa: BLE001 - raised in its turn, after the errors of the directories met before it
            event = (_raise, e)
            self.events = None
            close = getattr(events, "close", None)
            if close is not None:
                close()
        self.held.append(event)
        return True

    def candidates(self) -> Iterator[Candidate]:
        """``list_many``'s directories: those met, then each as the walk, taken on, meets it."""
        todo, more = self.todo, self.more
        while True:
            if todo:
                yield todo.popleft()
            elif not more():
                return

    def make(self, results: Iterator[Listed | None] | None) -> None:
        """Every event made in its turn, the walk taken on as they are: a directory left for
        ``list_many`` made a partition of from its listing in ``results`` (None: listed here, as
        where a listing is None)."""
        self.listing = results is not None
        held, made, more = self.held, self.made, self.more
        try:
            while held or more():
                event = held.popleft()
                if event[0] is not _CANDIDATE:
                    event[0](*event[1:])
                    continue
                c, under = made.popleft()
                listed = None if results is None else next(results)  # type: ignore[call-overload]
                if listed is None:
                    event[1].subtree(event[2], event[6])
                else:
                    event[1].listed(c, under, event[3], listed)
        finally:
            close = getattr(results, "close", None)
            if close is not None:
                close()


#: an event of :func:`_walk`: a directory left for ``list_many``
_CANDIDATE = object()


def _raise(e: Exception) -> None:
    raise e


def _walk(paths: str | Iterable[str], wants: Callable[[str, int], bool] | None, found: dict[tuple[str, str], PartitionFiles],
          list_many: Callable[[Iterator[Candidate]], Iterator[Listed | None] | None] | None) -> Iterator[tuple]:
    """What the walk of ``paths`` meets, in order, each a call to make (its function, then its
    arguments): a partition found, a path's end (whose check raises when it held none); with
    ``list_many``, a directory named ``<topic>-<partition>`` below a root on local disk is not
    listed but met as ``(_CANDIDATE, walk, directory, name, topic, partition, top)``."""
    for raw in [paths] if isinstance(paths, str) else paths:
        storage, path = storage_for(os.fspath(raw))
        roots = _expand(storage, path)
        walk = _Walk(storage, wants, found, list_many)
        for root in roots:
            top = root.rstrip("/")
            if isinstance(storage, UrlStorage):
                # on object storage the one listing is kept whole: a data dir's own files tell which
                # checkpoints exist, so absent ones are not asked for; a local walk lets each directory go
                tree = storage.tree(root)
                for d, files in tree.items():  # the result is sorted in the end
                    if (event := walk.visit(d, files, top, tree)) is not None:
                        yield event
                continue
            yield from walk.walk_local(root, top)
        yield walk.end, storage, path, roots


def _name(d: str) -> str:
    """A directory's last name, as a listing gives it."""
    return d.rstrip("/").rsplit("/", 1)[-1].rsplit(os.sep, 1)[-1]


#: what :meth:`_Walk.candidate` finds once of a data dir: its checkpoints, the start of the paths
#: joined under it, and the lookups of a partition's log start and log end in its checkpoints
_Under = tuple[LogDirOffsets, str, Callable[[tuple[str, int]], int | None], Callable[[tuple[str, int]], int | None]]


class _Walk:
    """The partitions under one path given to :func:`find_partitions`, found in ``found``: what its
    directories have in common (its storage, the data dirs' checkpoints, read once each)."""

    def __init__(self, storage: Storage, wants: Callable[[str, int], bool] | None, found: dict[tuple[str, str], PartitionFiles],
                 list_many: Callable[[Iterator[Candidate]], Iterator[Listed | None] | None] | None) -> None:
        self.storage = storage
        self.list_many = list_many
        self.wants = wants
        self.found = found
        self.local = isinstance(storage, LocalStorage)
        self.log_dirs: dict[str, LogDirOffsets] = {}
        self.parents: dict[str, str] = {}  # a directory's parent as listed -> as _parent gives it (found once per data dir)
        self.under: dict[str, _Under] = {}  # a candidate's parent as listed -> what is asked of it for each (found once per data dir)
        self.count = 0

    def parent(self, d: str, is_root: bool) -> str:
        if is_root:
            return _parent(self.storage, d)
        # a directory the listing found under a root: its parent is named as the listing names it
        listed = d.rsplit(os.sep if self.local else "/", 1)[0]
        if listed not in self.parents:
            self.parents[listed] = _parent(self.storage, d)
        return self.parents[listed]

    def log_dir(self, parent: str, top: str, tree: dict[str, list[Entry]] | None) -> LogDirOffsets:
        if parent not in self.log_dirs:
            covered = tree is not None and (parent == top or parent.startswith(top + "/"))  # the listing reached it
            self.log_dirs[parent] = _log_dir(self.storage, parent, tree.get(parent, []) if covered else None)  # type: ignore[union-attr]
        return self.log_dirs[parent]

    def visit(self, d: str, files: list[Entry], top: str, tree: dict[str, list[Entry]] | None) -> tuple | None:
        """The partition directory ``d`` is, as an event of :func:`_walk` (None: none)."""
        name = _name(d)
        is_root = d.rstrip("/") == top
        m = None if is_root else PARTITION_DIR.match(name)
        if (not is_root and m is None) or not any(_is_kafka_file(e.name) for e in files):
            return None
        parent = self.parent(d, is_root)
        p = _partition(self.storage, d, files, self.log_dir(parent, top, tree), None if m is None else (m["topic"], int(m["partition"])))
        if p is None:
            return None
        # os.path.abspath(d), without normalizing the path again for each partition
        key = (os.path.abspath(d) if is_root else os.path.join(parent, name)) if self.local else self.storage.display(d)
        return self.add, p, key, None

    def add(self, p: PartitionFiles, key: str, wanted: bool | None) -> None:
        self.count += 1
        if wanted if wanted is not None else (self.wants is None or self.wants(p.topic, p.partition)):
            self.found.setdefault((p.name, key), p)

    def end(self, storage: Storage, path: str, roots: list[str]) -> None:
        """The end of the path's walk: it must have held a partition."""
        if roots and not self.count:
            raise LogNotFoundError("no Kafka partition directories (<topic>-<partition> holding Kafka files) found"
                                   + tiered_hint([storage.display(r) for r in roots]), file=storage.display(path))
        if not roots:
            raise LogNotFoundError("the glob matches no directory", file=storage.display(path))

    def candidate(self, d: str, topic: str, partition: int) -> tuple[Candidate, _Under]:
        """What ``list_many`` is told of directory ``d`` (on local disk), and what :meth:`listed`
        needs of its data dir: its parts that are the same for each of its partitions are found once
        (a data dir may hold 100,000 of them)."""
        listed = d.rsplit(os.sep, 1)[0]
        under = self.under.get(listed)
        if under is None:
            parent = self.parent(d, False)
            log_dir = self.log_dir(parent, "", None)
            under = self.under[listed] = (log_dir, os.path.join(parent, ""), log_dir.log_start.get, log_dir.log_end_at_shutdown.get)
        tp = (topic, partition)
        return (d, topic, partition, self.wants is None or self.wants(topic, partition), under[2](tp), under[3](tp)), under

    def listed(self, c: Candidate, under: _Under, name: str, listed: Listed) -> None:
        """A directory another process listed (:func:`list_candidates`): the partition it is
        (``under``: :meth:`candidate`'s)."""
        if not listed:
            return
        d, topic, partition, wanted, _, _ = c
        segments, snapshots, listing, gaps = listed
        p = _new_partition(self.storage, topic, partition, d, tuple(itertools.starmap(_new_segment, segments)), snapshots, under[0],
                           listing, gaps)
        self.add(p, under[1] + name, wanted)  # os.path.join(parent, name)

    def walk_local(self, d: str, top: str, *, root: bool = True) -> Iterator[tuple]:
        """:func:`_walk`'s events of local directory ``d`` and those under it (``root``: ``d`` is a root)."""
        leave = None
        if self.list_many is not None:
            def leave(sub: str) -> tuple | None:
                name = _name(sub)
                m = PARTITION_DIR.match(name) if sub.rstrip("/") != top else None
                return None if m is None else (_CANDIDATE, self, sub, name, m["topic"], int(m["partition"]), top)
        for sub, files in _local_walk(d, leave, root=root):
            if isinstance(files, tuple):
                yield files
            elif (event := self.visit(sub, files, top, None)) is not None:
                yield event

    def subtree(self, d: str, top: str) -> None:
        """Directory ``d`` listed by this process, and those under it as the walk lists them (those
        named ``<topic>-<partition>`` given to ``list_many`` in turn: a data dir under a broker's
        folder named ``broker-1``)."""
        _apply(self.walk_local(d, top, root=False), self.list_many)


def list_candidates(candidates: list[Candidate]) -> list[Listed | None]:
    """In a worker process (:func:`find_partitions`'s ``list_many``): each directory listed, the
    partition it is, and the data loss of those wanted (:meth:`PartitionFiles.gaps`), as plain
    values (:data:`Listed`); None for a directory that holds directories (its walk goes on under
    it) or whose listing failed: the process that asked lists it itself, and meets what one
    process meets."""
    storage = LocalStorage()
    out: list[Listed | None] = []
    with gc_paused():
        for d, topic, partition, wanted, log_start, log_end in candidates:
            try:
                out.append(_list_candidate(storage, d, topic, partition, wanted, log_start, log_end))
            except Exception:  # noqa: BLE001 - met again by the process that asked, as one process meets it
                out.append(None)
    return out


#: a data dir's checkpoints that say nothing of a partition (read only)
_NO_OFFSETS = LogDirOffsets()


def own_offsets(topic: str, partition: int, log_start: int | None, log_end: int | None) -> LogDirOffsets:
    """What a data dir's checkpoints say of one partition (its ``log-start-offset-checkpoint`` entry
    and its clean shutdown's recovery point; None: none), as a worker process is given them in place
    of the whole data dir's (:func:`list_candidates`, and ``scan``'s data-loss workers). Read only."""
    if log_start is None and log_end is None:
        return _NO_OFFSETS
    tp = (topic, partition)
    return LogDirOffsets({} if log_start is None else {tp: log_start}, {} if log_end is None else {tp: log_end})


def _list_candidate(storage: LocalStorage, d: str, topic: str, partition: int, wanted: bool,
                    log_start: int | None, log_end: int | None) -> Listed | None:
    subdirs: list[str] = []
    try:
        files, held = _local_listing(d, subdirs) if wanted else (_local_entries(d, subdirs), None)
    except (FileNotFoundError, NotADirectoryError):
        return ()  # removed while walked
    if subdirs:
        return None
    parts = _parts(storage, files)  # None without a Kafka file, as the walk's visit finds
    if parts is None:
        return ()
    segments, snapshots, listing = parts
    if not wanted:
        return segments, snapshots, listing, None
    try:  # PartitionFiles.gaps() of a local partition, found without making the partition (a try costs less than contextlib.suppress)
        gaps = tuple(_local_gaps(d, listing, own_offsets(topic, partition, log_start, log_end), held, (topic, partition)))
    except Exception:  # noqa: BLE001 - found again, and raised, when the partition is planned
        gaps = None
    return segments, snapshots, listing, gaps


def partition_dirs(root: str) -> list[str]:
    """The partition directories under ``root`` that hold a ``.log`` (:func:`find_partitions`: any
    depth, every copy), sorted; none when it holds no partition."""
    try:
        return sorted({p.dir for p in find_partitions(root) if p.logs})
    except LogNotFoundError:
        return []
