"""The ``.txnindex`` file: one 34-byte entry per aborted transaction (``schemas.ABORTED_TXN_ENTRY``)."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from kafkalog.errors import CorruptIndexError, ReadOnlyLogError
from kafkalog.format.files import pwrite_all, read_bytes

__all__ = ["ABORTED_TXN", "AbortedTxn", "MutableTransactionIndex", "read_txn_index"]

#: struct view of schemas.ABORTED_TXN_ENTRY
ABORTED_TXN = struct.Struct(">hqqqq")
CURRENT_VERSION = 0


@dataclass(frozen=True)
class AbortedTxn:
    """An aborted transaction: producer ``producer_id`` wrote ``first_offset``..``last_offset``."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def pack(self) -> bytes:
        """The entry's 34 bytes."""
        return ABORTED_TXN.pack(self.version, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def read_txn_index(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> list[AbortedTxn]:
    """Every entry of a transaction index, in file order."""
    name = None if path is None else os.fspath(path)
    if data is None:
        assert path is not None
        data = read_bytes(path)
    size = ABORTED_TXN.size
    if len(data) % size:
        raise CorruptIndexError(
            f"transaction index has a partial entry: {len(data)} bytes is not a multiple of {size}",
            file=name, position=len(data) - len(data) % size,
        )
    out = []
    for pos in range(0, len(data), size):
        entry = AbortedTxn(*ABORTED_TXN.unpack_from(data, pos))
        if entry.version != CURRENT_VERSION:
            raise CorruptIndexError(f"unexpected aborted transaction version {entry.version}", file=name, position=pos)
        out.append(entry)
    return out


class MutableTransactionIndex:
    """A writable ``.txnindex`` (Kafka's TransactionIndex): the file is created by the first append.

    Entries must arrive in strictly increasing ``last_offset`` order; ``flush`` fsyncs the file
    when it exists. With ``writable=False`` the file is only read: appends and truncations
    change the entries in memory.
    """

    def __init__(self, path: str | os.PathLike[str], start_offset: int, *, writable: bool = True) -> None:
        self.path = os.fspath(path)
        self.start_offset = start_offset
        self.writable = writable
        self._fd: int | None = None
        self._entries: list[AbortedTxn] = []
        if os.path.exists(self.path):
            self._entries = read_txn_index(self.path)
            if writable:
                self._open()

    def _open(self) -> int | None:
        if self._fd is None and self.writable:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self._fd

    @property
    def last_offset(self) -> int | None:
        """The last entry's ``last_offset``, or None when empty."""
        return self._entries[-1].last_offset if self._entries else None

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, txn: AbortedTxn) -> None:
        """Append an aborted transaction (TransactionIndex.append)."""
        last = self.last_offset
        if last is not None and last >= txn.last_offset:
            raise ValueError(
                f"the last offset of appended transactions must increase: {txn.last_offset} is not greater than {last} in {self.path}"
            )
        fd = self._open()
        if fd is not None:
            pwrite_all(fd, txn.pack(), len(self._entries) * ABORTED_TXN.size)
        self._entries.append(txn)

    def all_aborted_txns(self) -> list[AbortedTxn]:
        """Every entry, in file order."""
        return list(self._entries)

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """The entries overlapping ``[fetch_offset, upper_bound_offset)`` and whether the search is complete
        (an entry's last stable offset reached the upper bound; TransactionIndex.collectAbortedTxns)."""
        out = []
        for t in self._entries:
            if t.last_offset >= fetch_offset and t.first_offset < upper_bound_offset:
                out.append(t)
            if t.last_stable_offset >= upper_bound_offset:
                return out, True
        return out, False

    def truncate_to(self, offset: int) -> None:
        """Remove the entries whose ``last_offset`` is >= ``offset`` (TransactionIndex.truncateTo)."""
        keep = next((i for i, t in enumerate(self._entries) if t.last_offset >= offset), len(self._entries))
        if keep < len(self._entries):
            fd = self._open()
            if fd is not None:
                os.ftruncate(fd, keep * ABORTED_TXN.size)
            del self._entries[keep:]

    def reset(self) -> None:
        """Remove every entry (the file, when it exists, is truncated to 0 bytes)."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
        self._entries.clear()

    def sanity_check(self) -> None:
        """Raise :class:`CorruptIndexError` for an entry below the segment's base offset (TransactionIndex.sanityCheck)."""
        for i, t in enumerate(self._entries):
            if t.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"last offset of aborted transaction {t.last_offset} is less than start offset {self.start_offset}",
                    file=self.path, position=i * ABORTED_TXN.size, offset=t.last_offset,
                )

    def flush(self) -> None:
        """fsync the file if it exists."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> bool:
        """Close and remove the file; False if it did not exist."""
        if not self.writable:
            raise ReadOnlyLogError(f"transaction index {self.path} was opened read-only", file=self.path)
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            return False
        return True

    def rename_to(self, path: str | os.PathLike[str]) -> None:
        """Rename the file if it exists."""
        if not self.writable:
            raise ReadOnlyLogError(f"transaction index {self.path} was opened read-only", file=self.path)
        if os.path.exists(self.path):
            os.replace(self.path, path)
        self.path = os.fspath(path)
