"""Kafka's default partitioner: where the Java producer sends a record that names no partition.

A keyed record goes to ``toPositive(murmur2(key)) % numPartitions`` (``Utils.murmur2``,
``Utils.toPositive``, ``BuiltInPartitioner.partitionForKey`` @1eb7644; SPEC R-WR-08). A keyless
record goes to a *sticky* partition, chosen at random and kept until about ``batch.size`` bytes were
produced to it (``BuiltInPartitioner`` @1eb7644). The hash runs in C (:mod:`kafkalog.fast._partitioner`,
built at install) over Arrow binary buffers; :func:`murmur2_plain` is its plain-Python twin, used
without the extension (``KAFKALOG_NO_EXTENSIONS=1``) and held to it by the tests.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

from kafkalog.fast import compiled

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = [
    "COMPILED",
    "DEFAULT_BATCH_SIZE",
    "StickyPartitioner",
    "key_hashes",
    "murmur2",
    "murmur2_plain",
    "partition_for_key",
    "partitions_for_keys",
    "to_positive",
]

#: The producer's ``batch.size`` default (ProducerConfig.java @1eb7644): bytes a keyless run fills before switching.
DEFAULT_BATCH_SIZE = 16384

_SEED = 0x9747B28C
_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


_ext: Any = compiled("_partitioner")

#: Whether the hash runs compiled (else :func:`murmur2_plain`).
COMPILED = _ext is not None


def _murmur2_unsigned(data: bytes | bytearray | memoryview) -> int:
    """Murmur2 of ``data`` as an unsigned 32-bit value (Java's int bits): every step masked to
    32 bits, Java's ``>>>`` a plain shift of the non-negative value."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    for p in range(0, length - 3, 4):
        k = data[p] | (data[p + 1] << 8) | (data[p + 2] << 16) | (data[p + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h


def murmur2_plain(data: bytes | bytearray | memoryview) -> int:
    """:func:`murmur2` in plain Python (the twin of the compiled hash)."""
    h = _murmur2_unsigned(memoryview(data).cast("B"))
    return h - (1 << 32) if h & 0x80000000 else h


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's murmur2 of ``data``, as the signed 32-bit int ``Utils.murmur2`` returns."""
    return _ext.murmur2(data) if _ext is not None else murmur2_plain(data)


def _positive_hashes_plain(data: Any, offsets: Any, valid: Any, out: Any) -> None:
    """The compiled ``positive_hashes`` in plain Python (same arguments, same checks)."""
    n = len(out)
    if len(offsets) != n + 1 or len(valid) != n:
        raise ValueError("offsets, valid and out do not describe the same number of keys")
    mv = memoryview(data).cast("B")
    for i in range(n):
        if valid[i]:
            a, z = int(offsets[i]), int(offsets[i + 1])
            if a < 0 or z < a or z > len(mv):
                raise ValueError(f"key {i} spans bytes {a}..{z}, outside the {len(mv)} bytes of data")
            out[i] = _murmur2_unsigned(mv[a:z]) & 0x7FFFFFFF
        else:
            out[i] = -1


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: the low 31 bits (not ``abs``, which overflows for MIN_VALUE)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition the Java producer's default partitioner picks for a serialized ``key``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


def key_hashes(keys: pa.Array) -> np.ndarray:
    """``toPositive(murmur2(key))`` of every key of an Arrow binary or string array (int64; -1 for
    a null key): the partition is this modulo the topic's partition count."""
    import numpy as np
    import pyarrow as pa

    if pa.types.is_string(keys.type) or pa.types.is_large_string(keys.type):
        keys = keys.cast(pa.large_binary() if pa.types.is_large_string(keys.type) else pa.binary())
    if not (pa.types.is_binary(keys.type) or pa.types.is_large_binary(keys.type)):
        raise TypeError(f"keys must be binary or string, not {keys.type}")
    n = len(keys)
    out = np.empty(n, np.int64)
    if n == 0:
        return out
    _, offsets_buf, data_buf = keys.buffers()
    width = np.int64 if pa.types.is_large_binary(keys.type) else np.int32
    offsets = np.frombuffer(offsets_buf, width)[keys.offset : keys.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None else np.empty(0, np.uint8)
    valid = keys.is_valid().to_numpy(zero_copy_only=False).astype(np.uint8)
    (_ext.positive_hashes if _ext is not None else _positive_hashes_plain)(data, offsets, valid, out)
    return out


def partitions_for_keys(keys: pa.Array, num_partitions: int) -> np.ndarray:
    """:func:`partition_for_key` of every key of an Arrow binary or string array (int32; -1 for a null key)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    import numpy as np

    h = key_hashes(keys)
    return np.where(h < 0, -1, h % num_partitions).astype(np.int32)


class StickyPartitioner:
    """Keyless records: one partition, chosen uniformly at random, until at least ``batch_size``
    bytes were produced to it, then another random choice (which may be the same partition).

    Kafka's producer also switches on batch boundaries and weighs partitions by broker queue
    sizes; offline there is no broker, so the choice is uniform, as Kafka's is without load stats."""

    def __init__(self, num_partitions: int, batch_size: int = DEFAULT_BATCH_SIZE, rng: random.Random | None = None) -> None:
        if num_partitions <= 0 or batch_size <= 0:
            raise ValueError(f"num_partitions and batch_size must be positive, got {num_partitions} and {batch_size}")
        self.num_partitions = num_partitions
        self.batch_size = batch_size
        self._rng = rng or random.Random()
        self._current = self._rng.randrange(num_partitions)
        self._produced = 0

    def partition(self, size: int) -> int:
        """The partition of the next keyless record of ``size`` bytes."""
        if self._produced >= self.batch_size:
            self._current = self._rng.randrange(self.num_partitions)
            self._produced = 0
        self._produced += size
        return self._current
