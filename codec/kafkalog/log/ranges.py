"""Byte ranges of files on object storage, fetched ahead of their reading, several at a time.

A reader of ``s3://`` (or any fsspec URL) waits for every request it makes: one round trip per
object, and the object store's per-request cost on top, while the decoder idles. A read that knows
what comes next does better. :class:`ReadAhead` is given the byte ranges a scan will read, in the
order it reads them (the ``.log`` slices of its plans: :mod:`kafkalog.dataset.scan`), and keeps
ranged GETs of the next ones in flight while the current one is decoded, across files and across
partitions. What it holds is bounded: at most :data:`MAX_REQUESTS` pieces of at most
:data:`PIECE_BYTES` each are fetched or waiting to be read at a time, and no more than
:data:`BUDGET_BYTES` together. Pieces are large, because an object store's cost is per request (S3
bills and throttles requests, and a server that reads a whole object for a ranged GET, as moto
does, pays the object's size per request): a segment up to a piece's size is one request. Over
moto on loopback (``bench/s3.py``), a 1 GB scan of 64 MB segments cost the server 5.0 CPU seconds
in 16 MB pieces, 3.0 in 32 MB ones and 1.4 in whole segments, and the client the same in each.

Planning's reads (the indexes and log ends that :func:`kafkalog.dataset.scan.plan_all` reads of
each partition) overlap the same way, several partitions at a time (:func:`map_ahead`).

Each piece is fetched into a buffer of a piece already read, of this read-ahead or an earlier
one (:meth:`UrlStorage.read_range_into <kafkalog.log.source.UrlStorage.read_range_into>`: from S3,
the socket writes the response body into it, :mod:`kafkalog.log.s3get`), and is read as it
arrives: the decoder starts on a piece's first MiB while the rest is still coming, rather than
waiting for all 64 MiB of it. Over loopback, where a byte costs the client little more than its
copies, most of the client's CPU went to memory rather than bytes: s3fs's ``cat_file`` joins the
body's chunks into a new bytes object, and a new 64 MB object costs a page fault per 4 KiB page.
Fetching into reused buffers took the client's CPU for a 1 GB scan over moto from 3.3-4.0 to
2.5-2.8 seconds (``bench/s3.py``; the decoding alone takes 1.1-1.4), and receiving the body
straight into them took fetching alone from 1.6-1.8 to 1.0-1.3 CPU seconds per GB (under load).

Only the ranges asked for are fetched, so the bytes fetched are the bytes needed, apart from the
read-ahead of a read abandoned early. Files on other storages (a local disk) are opened as before,
and a read outside the ranges given is the storage's own (on object storage a
:class:`~kafkalog.format.files.UrlFile`, as every other reader reads objects). Each piece is one
ranged GET (``cat_file``): no HEAD, no listing. Nothing is written.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import BinaryIO, TypeVar

from kafkalog.format.files import RemoteFile
from kafkalog.log.source import Storage, UrlStorage

__all__ = ["BUDGET_BYTES", "MAX_REQUESTS", "PIECE_BYTES", "ReadAhead", "map_ahead"]

T = TypeVar("T")
R = TypeVar("R")
_END = object()

#: Requests in flight (or fetched and not yet read) at most.
MAX_REQUESTS = 16
#: The largest piece of a file fetched in one request (a segment of Kafka's default 1 GB is 16).
PIECE_BYTES = 64 << 20
#: Bytes in flight or fetched and not yet read, at most (the read-ahead's memory): three pieces.
BUDGET_BYTES = 192 << 20

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
#: Buffers of pieces read, for the next pieces of any read-ahead (see :meth:`ReadAhead._buffer`).
_free: list[bytearray] = []
_free_lock = threading.Lock()  # given back by the threads of pieces dropped while fetched, taken by other read-aheads


def _executor() -> ThreadPoolExecutor:
    """The threads that wait on requests (shared: they only wait, the filesystem does the work)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(MAX_REQUESTS, thread_name_prefix="kafkalog-read-ahead")
        return _pool


def map_ahead(fn: Callable[[T], R], items: Iterable[T], *, remote: Callable[[T], bool]) -> Iterator[tuple[T, R]]:
    """``(item, fn(item))`` for each of ``items``, in order; ``fn`` of the items ``remote`` says are on
    object storage (whose reads are requests, each a round trip) runs on the read-ahead's threads, up
    to :data:`MAX_REQUESTS` items ahead of the one given, so that their requests overlap. An error is
    raised at its item's turn, as when one by one."""
    ahead: deque[tuple[T, Future[R] | None]] = deque()
    it = iter(items)
    while True:
        while len(ahead) < MAX_REQUESTS:
            item = next(it, _END)
            if item is _END:
                break
            ahead.append((item, _executor().submit(fn, item) if remote(item) else None))  # type: ignore[arg-type]
        if not ahead:
            return
        item, future = ahead.popleft()
        yield item, fn(item) if future is None else future.result()


@dataclass(eq=False)
class _Piece:
    """A range of a file fetched into ``buffer``, readable as it arrives: ``filled`` bytes are in
    (told by the fetch as they land), ``future`` gives the bytes fetched once the fetch ends."""

    start: int
    end: int
    buffer: bytearray
    future: Future[int] = field(init=False)
    filled: int = 0
    ended: bool = False
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def fetch(self, storage: UrlStorage, path: str) -> int:
        """Fetch the piece (on a read-ahead thread), telling a reader waiting in :meth:`ready` of each part."""
        try:
            return storage.read_range_into(path, self.start, memoryview(self.buffer)[: self.end - self.start], self._landed)
        finally:
            with self.arrived:
                self.ended = True
                self.arrived.notify_all()

    def _landed(self, n: int) -> None:
        with self.arrived:
            self.filled = max(self.filled, n)
            self.arrived.notify_all()

    def ready(self, at: int) -> int:
        """The bytes of the piece readable from its start, once byte ``at`` is (waiting for it to
        arrive), or the fetch has ended: then the bytes it fetched (its error raised)."""
        with self.arrived:
            self.arrived.wait_for(lambda: self.filled > at or self.ended)
            if self.filled > at and not self.ended:
                return self.filled
        return self.future.result()


@dataclass(eq=False)
class _Range:
    """One range to read: its pieces, fetched in order."""

    storage: UrlStorage
    path: str
    start: int
    end: int
    pieces: deque[_Piece] = field(default_factory=deque)
    unsent: int = 0  # the first byte not yet asked for
    closed: bool = False

    def __post_init__(self) -> None:
        self.unsent = self.start

    def next_size(self) -> int:
        return min(self.end - self.unsent, PIECE_BYTES)


class ReadAhead:
    """Fetches the ranges ``(storage, path, start, end)`` that will be read, in that order, ahead of
    their reading (see the module's docstring); :meth:`open` gives one of them as a file that reads
    from what was fetched. Ranges of storages other than :class:`~kafkalog.log.source.UrlStorage`
    are left to their storage. A range that is not opened (a read that stopped before it) is
    skipped when a later one is opened; :meth:`close` drops what is still held."""

    def __init__(self, ranges: Iterable[tuple[Storage, str, int, int]]) -> None:
        self._todo: deque[_Range] = deque(
            _Range(s, p, a, b) for s, p, a, b in ranges if isinstance(s, UrlStorage) and b > a
        )
        self._sending = 0  # index in _todo of the range whose pieces are being asked for
        self._held = 0  # bytes asked for and not yet read
        self._count = 0  # pieces asked for and not yet read
        self._arriving: list[_Piece] = []  # pieces being read whose fetch had not ended when last looked at
        self._fill()

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Drop every range and what was fetched of them (requests still running finish unread)."""
        while self._todo:
            self._drop(self._todo.popleft())
        self._sending = 0

    def _fill(self) -> None:
        """Ask for the next pieces while the bounds allow."""
        todo = self._todo
        self._arriving = [p for p in self._arriving if not p.ended]  # a piece read as it arrives is still a request in flight
        while self._sending < len(todo) and self._count + len(self._arriving) < MAX_REQUESTS:
            r = todo[self._sending]
            if r.unsent >= r.end:
                self._sending += 1
                continue
            if self._count and self._held + r.next_size() > BUDGET_BYTES:
                return
            self._send(r)

    def _send(self, r: _Range) -> None:
        """Ask for ``r``'s next piece, fetched into a buffer of an earlier piece when one is free."""
        size = r.next_size()
        piece = _Piece(r.unsent, r.unsent + size, self._buffer(size))
        piece.future = _executor().submit(piece.fetch, r.storage, r.path)
        r.pieces.append(piece)
        r.unsent += size
        self._held += size
        self._count += 1

    def _buffer(self, size: int) -> bytearray:
        """A buffer of at least ``size`` bytes: the smallest free one that fits, or a new one (of a
        power of two from 1 MiB: freed, it fits the next pieces). Memory a process has written to
        before costs nothing to write again; fresh memory costs a page fault per page, which for a
        piece fetched over loopback costs more than its bytes' copy."""
        with _free_lock:
            fits = [b for b in _free if len(b) >= size]
            if fits:
                best = min(fits, key=len)
                _free.remove(best)
                return best
        return bytearray(max(1 << 20, 1 << (size - 1).bit_length()))

    def _recycle(self, buffer: bytearray) -> None:
        """``buffer`` is no longer read: kept for the next pieces, of this read-ahead or a later one
        (a process's next scan, the read-ahead of each partition of a scan with ``workers``), the
        largest while the free ones stay within :data:`BUDGET_BYTES`: that much memory stays
        with the process once a scan of object storage has used it."""
        with _free_lock:
            _free.append(buffer)
            _free.sort(key=len)
            while sum(map(len, _free)) > BUDGET_BYTES:
                del _free[0]

    def _release(self, piece: _Piece, read: bool = True) -> None:
        """``piece`` leaves the bounds; ``read``: its buffer is being read (given back by its file),
        else it is dropped (given back once no request writes to it)."""
        self._held -= piece.end - piece.start
        self._count -= 1
        if not read:
            piece.future.cancel()  # one not started yet is not sent; a running one finishes unread
            piece.future.add_done_callback(lambda _f: self._recycle(piece.buffer))

    def _drop(self, r: _Range) -> None:
        r.closed = True
        while r.pieces:
            self._release(r.pieces.popleft(), read=False)

    def open(self, storage: Storage, path: str, start: int, end: int, size: int) -> BinaryIO:
        """Bytes ``[start, end)`` of ``path`` (a file of ``size`` bytes) as a seekable file: from the
        read-ahead when it holds that range (the ranges before it are dropped), else opened by ``storage``."""
        todo = self._todo
        k = None
        if isinstance(storage, UrlStorage):
            k = next((i for i, r in enumerate(todo) if r.storage is storage and r.path == path and r.start == start and r.end == end), None)
        if k is None:
            return storage.open(path, size)
        for _ in range(k):
            self._drop(todo.popleft())
        self._sending = max(0, self._sending - k)
        return _RangeFile(self, todo[0], size)

    def _take(self, r: _Range) -> _Piece | None:
        """The next piece of ``r``, asked for (its bytes read as they arrive: :meth:`_Piece.ready`);
        None when none is left. The caller gives its buffer back (:meth:`_recycle`) once read."""
        if not r.pieces:
            if r.unsent >= r.end or r.closed:
                return None
            self._send(r)  # not asked for yet (the bounds were full)
        piece = r.pieces.popleft()
        self._release(piece)
        self._arriving.append(piece)
        self._fill()
        return piece

    def _finish(self, r: _Range) -> None:
        """``r``'s file was closed: it leaves the read-ahead, with what is left of it."""
        for i, other in enumerate(self._todo):
            if other is r:
                del self._todo[i]
                if i < self._sending:
                    self._sending -= 1
                break
        self._drop(r)
        self._fill()


class _RangeFile(RemoteFile):
    """A file whose bytes ``[range.start, range.end)`` come from the read-ahead, read forward (as
    the log readers read); any other byte is fetched with a ranged request of its own."""

    def __init__(self, ahead: ReadAhead, r: _Range, size: int) -> None:
        super().__init__(r.storage.display(r.path), size)
        self._ahead = ahead
        self._range = r
        self._piece: _Piece | None = None  # the piece being read; its buffer is given back when done

    def _piece_at(self, pos: int) -> tuple[memoryview, int] | None:
        """The bytes of the piece that ``pos`` falls in that have arrived, once ``pos`` has (reading
        on to that piece), and where ``pos`` is in them; None when the read-ahead does not reach it."""
        r = self._range
        while (p := self._piece) is None or pos >= p.end:
            if pos < (r.start if p is None else p.start) or pos >= r.end:
                return None
            self._let_go()
            self._piece = self._ahead._take(r)
            if self._piece is None:
                return None
        if pos < p.start:
            return None
        at = pos - p.start
        n = p.ready(at)
        return (memoryview(p.buffer)[:n], at) if at < n else None

    def _let_go(self) -> None:
        """Give the piece's buffer back to the read-ahead, once its fetch has ended (a file closed
        before reading a piece to its end leaves it still arriving)."""
        p = self._piece
        if p is not None:
            self._piece = None
            p.future.add_done_callback(lambda _f: self._ahead._recycle(p.buffer))

    def readinto(self, b: memoryview | bytearray) -> int:  # type: ignore[override]
        view = memoryview(b).cast("B")
        want = max(0, min(len(view), self._size - self._pos))
        done = 0
        while done < want:
            pos = self._pos + done
            got = self._piece_at(pos)
            if got is not None:
                buf, at = got
                n = min(want - done, len(buf) - at)
                view[done : done + n] = buf[at : at + n]
            else:  # not in what is read ahead (before the range, or read again): a request of its own
                data = self._range.storage.read_range(self._range.path, pos, pos + want - done)
                n = len(data)
                if not n:
                    break
                view[done : done + n] = data
            done += n
        self._pos += done
        return done

    def close(self) -> None:
        if not self.closed:
            self._let_go()
            self._ahead._finish(self._range)
        super().close()
