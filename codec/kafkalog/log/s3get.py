"""Ranged GETs of S3 objects received straight into the caller's buffer.

s3fs's client is asynchronous (aiobotocore over aiohttp): a body arrives as chunks that the event
loop's protocol receives into new bytes objects, one per socket read, which are then copied into
the caller's buffer. Over loopback that is most of a client's CPU for fetching (``bench/s3.py``:
1.0-1.3 CPU seconds per GB against moto, the server's own 1.2-1.3). :class:`DirectGets` asks for
the same range with ``http.client`` and has the socket write the body into the buffer
(``HTTPResponse.readinto``: one copy from the kernel, with the GIL released): 0.35-0.45 CPU seconds
per GB.

The request is s3fs's own as far as S3 sees it: the URL is presigned by the filesystem's client for
the object's bucket (``S3FileSystem.url``: its credentials, endpoint, region and addressing, a
version id), with a ``Range`` header. Anything else goes through s3fs's request instead
(:func:`kafkalog.log.source._s3_get_into`), with its retries and its errors: any answer but the
range asked for (a missing object, a refused signature, a redirect, a server error), a connection
that fails or ends early, a proxy, and filesystems with request options of their own (requester
pays, extra arguments). So errors, retries and their messages are s3fs's, and the fast path only
ever gives the bytes asked for.
"""

from __future__ import annotations

import http.client
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import ssl

    from fsspec.spec import AbstractFileSystem

__all__ = ["DirectGets"]

#: Seconds a connection or a read may wait (botocore's default for both).
TIMEOUT = 60
#: Presigned URLs are made for each request; this is only their validity.
EXPIRES = 3600
#: Bytes received between two calls of a reader's ``progress`` (a read-ahead's reader reads them as they arrive).
STEP = 1 << 20
#: Bytes of an answer other than the range asked for (an error's document) read to keep the connection.
DRAIN = 64 << 10
#: Idle kept-alive connections held per host at most (the read-ahead's requests in flight).
IDLE = 16

_Key = tuple[str, str, int | None]


class DirectGets:
    """Ranged GETs of objects of one s3fs filesystem, over kept-alive connections of its own."""

    def __init__(self, fs: AbstractFileSystem) -> None:
        self.fs = fs
        # requester pays, extra GetObject arguments (SSE-C keys): s3fs's request carries them
        self.usable = not (getattr(fs, "req_kw", None) or getattr(fs, "s3_additional_kwargs", None))
        self._idle: dict[_Key, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()
        self._ssl: ssl.SSLContext | None = None
        weakref.finalize(self, _close_all, self._idle)

    def get_into(self, path: str, start: int, view: memoryview, progress: Callable[[int], None] | None = None) -> int | None:
        """Bytes ``[start, start + len(view))`` of ``path`` written into ``view`` with one ranged GET:
        the bytes written (fewer at the object's end), or None when this way does not give them
        (the caller asks s3fs, whose request gives the bytes or the error). ``progress(n)``: the
        first ``n`` bytes are in ``view``, said every :data:`STEP` bytes as they arrive."""
        if not self.usable:
            return None
        url = self.fs.url(path, expires=EXPIRES)  # type: ignore[attr-defined]
        u = urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname or self._proxied(url) or (u.scheme == "https" and self._context() is None):
            return None
        key: _Key = (u.scheme, u.hostname, u.port)
        target = f"{u.path}?{u.query}" if u.query else u.path
        headers = {"Range": f"bytes={start}-{start + len(view) - 1}"}
        while True:
            conn, was_idle = self._connection(key)
            try:
                conn.request("GET", target, headers=headers)
                resp = conn.getresponse()
                break
            except (OSError, http.client.HTTPException):
                conn.close()
                if not was_idle:  # else a kept-alive connection the server closed meanwhile: the next one
                    return None
        try:
            n = self._body_into(resp, start, view, progress)
        except (OSError, http.client.HTTPException):
            n = None
        if n is None or resp.will_close or not resp.isclosed():
            conn.close()
        else:
            self._give_back(key, conn)
        return n

    @staticmethod
    def _body_into(resp: http.client.HTTPResponse, start: int, view: memoryview, progress: Callable[[int], None] | None) -> int | None:
        """The body of the range asked for, read into ``view``; None for any other answer (read and dropped)."""
        length = resp.length
        if resp.status != 206 or length is None or length > len(view) or not (resp.getheader("Content-Range") or "").startswith(f"bytes {start}-"):
            if length is not None and length <= DRAIN:
                resp.read()  # an error's document: the connection may be kept (a larger answer closes it)
            return None
        n = 0
        while n < length:
            got = resp.readinto(view[n : min(length, n + STEP)] if progress else view[n:length])
            if not got:  # the connection ended inside the body
                return None
            n += got
            if progress:
                progress(n)
        return n

    def _proxied(self, url: str) -> bool:
        """Whether the client reaches ``url`` through a proxy (s3fs's request goes that way)."""
        session = getattr(getattr(self.fs.s3, "_endpoint", None), "http_session", None)  # type: ignore[attr-defined]
        config = getattr(session, "_proxy_config", None)
        find = getattr(config, "proxy_url_for", None)
        return not callable(find) or bool(find(url))

    def _context(self) -> ssl.SSLContext | None:
        """The TLS settings of the client's own connections (its ``verify``, CA bundle and client
        certificate); None when the client does not say them as this aiobotocore does."""
        if self._ssl is None:
            try:
                self._ssl = self.fs.s3._endpoint.http_session._build_ssl_contexts(None)[0]  # type: ignore[attr-defined]
            except (AttributeError, TypeError, IndexError):
                self.usable = False
        return self._ssl

    def _connection(self, key: _Key) -> tuple[http.client.HTTPConnection, bool]:
        """A connection to ``key``'s host: an idle one (and True), else a new one (and False)."""
        with self._lock:
            idle = self._idle.get(key)
            if idle:
                return idle.pop(), True
        scheme, host, port = key
        if scheme == "https":
            return http.client.HTTPSConnection(host, port, timeout=TIMEOUT, context=self._context()), False
        return http.client.HTTPConnection(host, port, timeout=TIMEOUT), False

    def _give_back(self, key: _Key, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < IDLE:
                idle.append(conn)
                return
        conn.close()


def _close_all(idle: dict[_Key, list[http.client.HTTPConnection]]) -> None:
    for conns in idle.values():
        for conn in conns:
            conn.close()
    idle.clear()
