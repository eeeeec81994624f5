"""The Arrow batches a task hands to Spark: small ones joined, large ones passed on as they are."""

from __future__ import annotations

import pyarrow as pa

from kafkalog_spark.reader import coalesce


def _batch(n: int, width: int, first: int = 0) -> pa.RecordBatch:
    return pa.record_batch({"offset": pa.array(range(first, first + n), pa.int64()), "value": pa.array([b"v" * width] * n, pa.binary())})


def test_small_batches_are_joined_and_large_ones_are_not_copied() -> None:
    """Batches under both budgets are joined up to ``rows`` rows; a batch over the byte budget
    (1 KB values: a chunk of a few thousand rows) is yielded itself, after what was pending, and
    every row comes out once, in order."""
    small = [_batch(10, 10, 10 * i) for i in range(5)]
    big = _batch(5000, 1000, 50)
    tail = [_batch(10, 10, 5050 + 10 * i) for i in range(5)]
    out = list(coalesce(iter(small + [big] + tail), rows=32, nbytes=1 << 20))
    assert [b.num_rows for b in out] == [40, 10, 5000, 40, 10]
    assert out[2] is big
    assert pa.Table.from_batches(out).column("offset").to_pylist() == list(range(5100))
    assert [b.num_rows for b in coalesce(iter(small), rows=1000, nbytes=1 << 20)] == [50]
