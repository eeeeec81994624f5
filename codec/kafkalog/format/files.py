"""What each file of a Kafka log dir is, by its name (SPEC §2, "Naming"), crash-safe file
replacement, and read-only access to files given as URLs (``s3://bucket/dir``, any fsspec protocol).

A path with ``://`` is opened through fsspec (the ``s3`` extra brings s3fs), with the
filesystem's own configuration: for S3, the standard AWS variables (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``, ...) and files. Reads are ranged requests and
create nothing locally.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Iterator
from enum import Enum
from typing import TYPE_CHECKING, BinaryIO, TypeVar

if TYPE_CHECKING:
    from fsspec.spec import AbstractFileSystem

T = TypeVar("T")

__all__ = [
    "PARTITION_DIR", "FileKind", "UrlFile", "atomic_write", "dir_lister", "exists", "fsync_dir", "is_dir", "is_url", "kind_of", "open_read", "open_url",
    "read_bytes", "segment_file_name", "set_dir_lister", "url_filesystem", "walk",
]

#: a partition dir's name, ``<topic>-<partition>`` (groups ``topic``, ``partition``), split at its last
#: ``-`` (SPEC R-NAME-01, R-NAME-02): any topic part is read (Kafka's naming rule is the writer's
#: concern, R-NAME-03). Every module that reads a partition dir's name reads it with this
#: (kafkalog's discovery, the internal topics' decoders, the Spark source).
PARTITION_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>[0-9]+)$", re.S)

#: what :func:`set_dir_lister` was given, and what it gave (``False``: not asked yet)
_dir_lister_loader: Callable[[], Callable | None] | None = None
_dir_lister: Callable | None | bool = False


def set_dir_lister(loader: Callable[[], Callable | None] | None) -> None:
    """Plug a compiled listing of local directories in from a layer above: ``loader`` runs on first
    use and returns it, or None for the plain one (the package plugs in
    :func:`kafkalog.fast._dirs.list_dir` this way); ``None`` restores the plain listing, which is
    :func:`kafkalog.log.source._local_entries`'s own (its docstring says what the lister is given)."""
    global _dir_lister_loader, _dir_lister
    _dir_lister_loader, _dir_lister = loader, False


def dir_lister() -> Callable | None:
    """The compiled directory listing :func:`set_dir_lister` plugged in, None when there is none."""
    global _dir_lister
    if _dir_lister is False:
        _dir_lister = _dir_lister_loader() if _dir_lister_loader is not None else None
    return _dir_lister  # type: ignore[return-value]


class FileKind(Enum):
    """The file types kafkalog reads, with the suffix or name Kafka gives them."""

    LOG = ".log"
    INDEX = ".index"
    TIME_INDEX = ".timeindex"
    TXN_INDEX = ".txnindex"
    PRODUCER_SNAPSHOT = ".snapshot"
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition.metadata"
    KRAFT_SNAPSHOT = ".checkpoint"


#: Kinds that a directory dump includes (the files Kafka's dump of a data dir covers).
DUMPED_KINDS = frozenset(
    {
        FileKind.LOG,
        FileKind.INDEX,
        FileKind.TIME_INDEX,
        FileKind.TXN_INDEX,
        FileKind.PRODUCER_SNAPSHOT,
        FileKind.LEADER_EPOCH_CHECKPOINT,
        FileKind.PARTITION_METADATA,
    }
)

_SEGMENT = re.compile(r"^\d{20}(?:-[A-Za-z0-9_-]{22})?\.(log|index|timeindex|txnindex|snapshot)$")
_KRAFT_SNAPSHOT = re.compile(r"^\d{20}-\d{10}\.checkpoint$")


def kind_of(path: str | os.PathLike[str]) -> FileKind | None:
    """The kind of a file by its name, or None for files kafkalog does not read.

    Segment files are ``<20-digit base offset>.<suffix>`` (tiered-storage copies add
    ``-<segment uuid>`` before the suffix); ``.deleted``/``.cleaned``/``.swap`` names are not matched.
    """
    name = os.path.basename(os.fspath(path))
    m = _SEGMENT.match(name)
    if m:
        return FileKind("." + m.group(1))
    if name == "leader-epoch-checkpoint":
        return FileKind.LEADER_EPOCH_CHECKPOINT
    if name == "partition.metadata":
        return FileKind.PARTITION_METADATA
    if _KRAFT_SNAPSHOT.match(name):
        return FileKind.KRAFT_SNAPSHOT
    return None


def is_url(path: str | os.PathLike[str]) -> bool:
    """True for a ``protocol://...`` path, which is read through fsspec."""
    return isinstance(path, str) and "://" in path


def url_filesystem(url: str) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem of ``url`` and the path within it."""
    try:
        from fsspec.core import url_to_fs
    except ImportError:
        raise OSError(f"{url}: reading URLs needs fsspec (pip install 'kafkalog[s3]' for s3://)") from None
    try:
        return url_to_fs(url)
    except (ImportError, ValueError) as e:  # no implementation installed for the protocol
        raise OSError(f"{url}: {e}") from None


def _on_url(url: str, call: Callable[[], T]) -> T:
    """``call()``, with the filesystem library's own errors (botocore's NoCredentialsError, ...)
    raised as OSError naming ``url``, as a local path's errors are."""
    try:
        return call()
    except OSError:
        raise
    except Exception as e:  # noqa: BLE001 - any library's error: reported as the path's
        raise OSError(f"{url}: {type(e).__name__}: {e}") from e


def open_read(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a local file or a URL for reading (a seekable binary file; a URL's is a :class:`UrlFile`)."""
    if is_url(path):
        fs, p = url_filesystem(os.fspath(path))
        return open_url(fs, p)
    return open(path, "rb")  # noqa: SIM115 - the caller closes it


def open_url(fs: AbstractFileSystem, path: str, size: int | None = None) -> UrlFile:
    """``path`` on the fsspec filesystem ``fs`` as a :class:`UrlFile` (``size``: its size when a
    listing gave it); a library's error is raised as an OSError naming the URL."""
    url = fs.unstrip_protocol(path)
    return UrlFile(url, lambda a, b: _on_url(url, lambda: fs.cat_file(path, start=a, end=b)),
                   size if size else lambda: _on_url(url, lambda: fs.size(path)))


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The whole content of a local file or a URL."""
    with open_read(path) as f:
        return f.read()


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether a local path or a URL exists."""
    if is_url(path):
        fs, p = url_filesystem(path)  # type: ignore[arg-type]
        return _on_url(path, lambda: fs.exists(p))  # type: ignore[arg-type]
    return os.path.exists(path)


def is_dir(path: str | os.PathLike[str]) -> bool:
    """Whether a local path or a URL is a directory (for object stores: a key prefix)."""
    if is_url(path):
        fs, p = url_filesystem(path)  # type: ignore[arg-type]
        return _on_url(path, lambda: fs.isdir(p))  # type: ignore[arg-type]
    return os.path.isdir(path)


def walk(root: str | os.PathLike[str]) -> Iterator[tuple[str, str]]:
    """Yield (path, path relative to ``root``) for every file under ``root`` (a directory or a
    URL), sorted by relative path; the paths under a URL are URLs."""
    if is_url(root):
        fs, base = url_filesystem(root)  # type: ignore[arg-type]
        base = base.rstrip("/")
        found = [(p[len(base) + 1 :], fs.unstrip_protocol(p)) for p in _on_url(root, lambda: fs.find(base))]  # type: ignore[arg-type]
    else:
        root = os.fspath(root)
        found = []
        for dirpath, _dirs, names in os.walk(root):
            for n in names:
                p = os.path.join(dirpath, n)
                found.append((os.path.relpath(p, root).replace(os.sep, "/"), p))
    for rel, p in sorted(found):
        yield p, rel


def segment_file_name(offset: int, suffix: str) -> str:
    """``<offset as 20 digits><suffix>``, Kafka's name for segment files and snapshots (LogFileUtils)."""
    return f"{offset:020d}{suffix}"


def pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> int:
    """Write all of ``data`` at ``offset``, returning the offset after it. ``os.pwrite`` may write
    less than asked (a disk filling up writes what fits first); the rest is written or its error
    raised, so a caller never takes a partly written index entry or batch for a whole one."""
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        offset += n
        view = view[n:]
    return offset


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory so that renames and new files in it survive a crash (Utils.flushDirIfExists).

    A failed fsync raises, as in Kafka: swallowing it would let a flush report renames and new
    segments durable that a power cut can still undo. Skipped on Windows, where Kafka skips it too.
    """
    if os.name == "nt":
        return
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes, *, sync: bool = True) -> None:
    """Write ``data`` to ``<path>.tmp``, fsync it, rename it over ``path`` and fsync the directory.

    This is how Kafka replaces checkpoint files (CheckpointFile.write, Utils.atomicMoveWithFallback);
    with ``sync=False`` the two fsyncs are skipped (the rename stays atomic).
    """
    target = os.fspath(path)
    tmp = target + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, target)
    if sync:
        fsync_dir(os.path.dirname(os.path.abspath(target)))


class RemoteFile(io.RawIOBase):
    """A read-only, seekable file on object storage, named ``name``: a subclass says how the bytes at
    the position are had (``readinto``) and, when it learns the length only later, what it is (``_length``)."""

    def __init__(self, name: str, size: int = 0) -> None:
        super().__init__()
        self.name = name
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def _length(self) -> int:
        return self._size

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        base = 0 if whence == io.SEEK_SET else self._pos if whence == io.SEEK_CUR else self._length()
        if base + pos < 0:
            raise ValueError("negative seek position")
        self._pos = base + pos
        return self._pos


class UrlFile(RemoteFile):
    """A file on object storage read with ranged requests, ``fetch(start, end)`` giving bytes ``[start,
    end)``: every reader of ``s3://`` (``dump``, ``info``, ``cat``, ``scan``'s reads outside its
    read-ahead, :mod:`kafkalog.log.ranges`) reads objects this way. A read fetches what it asks for
    and, reading forward, a block beyond it that doubles with each further request (from
    :data:`MIN_BLOCK` to :data:`MAX_BLOCK`): a reader of small pieces (batch headers, a dump's
    batches) makes few requests, and fetches at most one block it does not read. ``size`` is the
    object's length, or a call that asks for it (once, when needed): a listing that gave the size
    saves a request. Nothing else is asked (no HEAD per open, no cache kept after close).
    ``fetch_into(start, view)``, when given, fetches ``[start, start + len(view))`` into ``view``
    (the bytes written) and is used instead: the file then fetches into one buffer of its own,
    reused, as a page of memory written before costs nothing to write again (fresh memory costs a
    page fault per page, which over a fast network costs more than copying the bytes)."""

    #: The first block fetched beyond a read, and the largest.
    MIN_BLOCK = 64 << 10
    MAX_BLOCK = 8 << 20

    def __init__(self, name: str, fetch: Callable[[int, int], bytes], size: int | Callable[[], int],
                 fetch_into: Callable[[int, memoryview], int] | None = None) -> None:
        super().__init__(name, size if isinstance(size, int) else -1)
        self._fetch = fetch
        self._fetch_into = fetch_into
        self._ask_size = None if isinstance(size, int) else size
        self._buf: bytes | memoryview = b""
        self._buffer = bytearray()  # what fetch_into writes to
        self._buf_start = 0
        self._block = self.MIN_BLOCK

    def _length(self) -> int:
        if self._size < 0:
            self._size = int(self._ask_size())  # type: ignore[misc]
        return self._size

    def readinto(self, b: memoryview | bytearray) -> int:  # type: ignore[override]
        view = memoryview(b).cast("B")
        want = max(0, min(len(view), self._length() - self._pos))
        done = 0
        while done < want:  # all that is asked (a short read would look like the end of the file)
            pos = self._pos + done
            at = pos - self._buf_start
            if not 0 <= at < len(self._buf):
                forward = bool(self._buf) and pos >= self._buf_start + len(self._buf)
                self._block = min(2 * self._block, self.MAX_BLOCK) if forward else self.MIN_BLOCK
                data = self._get(pos, min(self._size, pos + want - done + self._block))
                if not data:
                    break
                self._buf, self._buf_start, at = data, pos, 0
            n = min(want - done, len(self._buf) - at)
            view[done : done + n] = self._buf[at : at + n]
            done += n
        self._pos += done
        return done

    def _get(self, start: int, end: int) -> bytes | memoryview:
        """Bytes ``[start, end)``: fetched into the file's buffer when it can be, else as bytes."""
        if self._fetch_into is None:
            return self._fetch(start, end)
        if len(self._buffer) < end - start:
            self._buf = b""  # the view of the old buffer goes before the buffer is replaced
            self._buffer = bytearray(end - start)
        return memoryview(self._buffer)[: self._fetch_into(start, memoryview(self._buffer)[: end - start])]

    def readall(self) -> bytes:
        """The rest of the file, in one request (what is held already is not fetched again)."""
        pos, end = self._pos, self._length()
        if pos >= end:
            return b""
        at = pos - self._buf_start
        held = bytes(self._buf[at:]) if 0 <= at < len(self._buf) else b""
        rest = self._fetch(pos + len(held), end) if pos + len(held) < end else b""
        self._pos = end
        return held + rest

    def close(self) -> None:
        self._buf = b""
        self._buffer = bytearray()
        super().close()
