"""The ``.txnindex`` file: one 34-byte entry per aborted transaction (``schemas.ABORTED_TXN_ENTRY``)."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from .errors import CorruptIndexError

__all__ = ["ABORTED_TXN", "AbortedTxn", "read_txn_index"]

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
        return ABORTED_TXN.pack(self.version, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)


def read_txn_index(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> list[AbortedTxn]:
    """Every entry of a transaction index, in file order."""
    name = None if path is None else os.fspath(path)
    if data is None:
        assert path is not None
        with open(path, "rb") as f:
            data = f.read()
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
