"""Kafka's default partitioner: murmur2 against Kafka's own test vectors and kafka-python, on both
paths (the C extension ``kafkalog.fast._partitioner`` and its plain-Python twin)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_partitioner_ref import kafka_python_murmur2, kafka_python_partition
from kafkalog import fast
from kafkalog.fast import partitioner as part
from kafkalog.fast.partitioner import (
    StickyPartitioner,
    key_hashes,
    murmur2,
    partition_for_key,
    partitions_for_keys,
    to_positive,
)

#: UtilsTest.testMurmur2 (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java @1eb7644).
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}

_COMPILED = part._ext


@pytest.fixture(autouse=True, params=["c-extension", "pure-python"])
def impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every test on both paths: the extension (which must be there unless KAFKALOG_NO_EXTENSIONS
    says it is off) and the plain twin."""
    if request.param == "c-extension":
        if _COMPILED is None:
            if fast.DISABLED:
                pytest.skip("KAFKALOG_NO_EXTENSIONS is set")
            pytest.fail("kafkalog.fast._partitioner is not built (pip install -e . builds it)")
    else:
        monkeypatch.setattr(part, "_ext", None)
    yield request.param


def _plain_murmur2(data: bytes) -> int:
    return part.murmur2_plain(data)


@pytest.mark.rule("R-WR-08")
@pytest.mark.parametrize(("key", "expected"), list(KAFKA_VECTORS.items()))
def test_murmur2_matches_kafkas_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected
    assert _plain_murmur2(key) == expected
    assert key_hashes(pa.array([key]))[0] == expected & 0x7FFFFFFF


def test_to_positive_is_not_abs() -> None:
    assert to_positive(-(2**31)) == 0  # Math.abs(Integer.MIN_VALUE) would stay negative
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(-973932308) == -973932308 & 0x7FFFFFFF


@pytest.mark.rule("R-WR-08")
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=80), st.integers(min_value=1, max_value=1000))
def test_agrees_with_kafka_python(key: bytes, num_partitions: int) -> None:
    want = kafka_python_murmur2(key)  # unsigned 32 bits
    assert murmur2(key) & 0xFFFFFFFF == want
    assert _plain_murmur2(key) & 0xFFFFFFFF == want
    assert partition_for_key(key, num_partitions) == kafka_python_partition(key, num_partitions)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=50), st.integers(min_value=1, max_value=64), st.integers(min_value=0, max_value=5))
def test_arrow_arrays_hash_like_single_keys(keys: list[bytes | None], num_partitions: int, cut: int) -> None:
    arr = pa.array(keys, pa.binary()).slice(min(cut, len(keys)))  # a sliced array starts past offset 0
    want = [-1 if k is None else kafka_python_partition(k, num_partitions) for k in keys[min(cut, len(keys)) :]]
    assert partitions_for_keys(arr, num_partitions).tolist() == want
    large = pa.array(keys, pa.large_binary()).slice(min(cut, len(keys)))
    assert partitions_for_keys(large, num_partitions).tolist() == want


def test_spans_outside_the_data_are_refused() -> None:
    """The hash over Arrow buffers checks every key's span against the data buffer."""
    import numpy as np

    hashes = part._ext.positive_hashes if part._ext is not None else part._positive_hashes_plain
    out = np.empty(2, np.int64)
    with pytest.raises(ValueError, match="outside"):
        hashes(b"abcd", np.array([0, 2, 5], np.int64), np.ones(2, np.uint8), out)
    with pytest.raises(ValueError, match="outside"):
        hashes(b"abcd", np.array([3, 2, 4], np.int64), np.ones(2, np.uint8), out)
    with pytest.raises(ValueError, match="same number"):
        hashes(b"abcd", np.array([0, 2], np.int64), np.ones(2, np.uint8), out)
    hashes(b"abcd", np.array([3, 2, 9], np.int64), np.zeros(2, np.uint8), out)  # null keys: spans not read
    assert out.tolist() == [-1, -1]


def test_string_keys_hash_their_utf8_bytes() -> None:
    keys = ["21", "ключ", None]
    expect = [partition_for_key(k.encode(), 7) if k is not None else -1 for k in keys]
    assert partitions_for_keys(pa.array(keys), 7).tolist() == expect
    with pytest.raises(TypeError, match="binary or string"):
        key_hashes(pa.array([1, 2]))
    with pytest.raises(ValueError, match="positive"):
        partition_for_key(b"k", 0)


@pytest.mark.rule("R-WR-08")
def test_sticky_partitioner_switches_after_batch_size_bytes() -> None:
    sticky = StickyPartitioner(8, batch_size=1000, rng=random.Random(5))
    chosen = [sticky.partition(100) for _ in range(400)]
    runs = [chosen[i : i + 10] for i in range(0, 400, 10)]
    assert all(len(set(r)) == 1 for r in runs)  # 10 x 100 bytes reach batch.size: one partition per run
    assert len(set(chosen)) > 4  # the runs spread over the partitions
    with pytest.raises(ValueError, match="positive"):
        StickyPartitioner(0)
