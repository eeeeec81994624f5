"""What the durability harnesses (``crash.py``, ``faults.py``) share: record contents that derive
from (seed, writer generation, offset) alone, so a check needs only offsets, and a table of
per-kind counters with its total."""

from __future__ import annotations

import hashlib
from dataclasses import asdict
from typing import Any, TypeVar

R = TypeVar("R")


def record(seed: int, gen: int, offset: int, *, large: int, small: int, keys: int | None = None) -> tuple[bytes | None, bytes | None]:
    """The key and value writer generation ``gen`` appends at ``offset``: some null keys, some
    tombstones, values up to ``large`` bytes now and then and up to ``small`` otherwise, each
    starting with ``gen/offset:`` so a misplaced record shows in a message. With ``keys``, for a
    compacted topic, every record has one of that many keys, so later records supersede earlier ones."""
    h = hashlib.blake2b(b"%d/%d/%d" % (seed, gen, offset), digest_size=16).digest()
    if keys is not None:
        key: bytes | None = b"k%d" % (offset % keys)
    else:
        key = None if h[0] < 8 else b"k%d" % offset
    if h[1] < 6:
        return key, None
    size = int.from_bytes(h[2:4], "big") % (large if h[4] < 10 else small)
    return key, b"%d/%d:" % (gen, offset) + (h * (size // 16 + 1))[:size]


def summed(rows: dict[str, R], row_type: type[R]) -> R:
    """The counters of ``rows`` (dataclasses of ints) added field by field."""
    total: Any = row_type()
    for r in rows.values():
        for k, v in asdict(r).items():  # type: ignore[call-overload]
            setattr(total, k, getattr(total, k) + v)
    return total

