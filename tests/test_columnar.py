"""The columnar decoder and the Arrow conversion agree with Kafka's dumps and the object decoder,
compiled (numba) and plain."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog import Codec, InvalidRecordError, LogReader, RecordBatchBuilder
from kafkalog.arrow import KAFKA_SCHEMA, to_arrow
from kafkalog.columnar import decode_columns, iter_columns

KAFKA = GOLDEN / "kafka"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _span(c, starts, lens, i):  # noqa: ANN001, ANN202
    n = int(lens[i])
    return None if n < 0 else c.buf[int(starts[i]) : int(starts[i]) + n].tobytes()


def _kafka_records(folder: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for d in read_jsonl(KAFKA / "dump" / f"{folder}.jsonl"):
        if d["type"] == "record":
            out.setdefault(d["file"], []).append(d)
    return out


@pytest.mark.parametrize("folder", ["records", "logdir"])
def test_arrow_rows_equal_kafkas_dump(folder: str) -> None:
    for rel, expected in _kafka_records(folder).items():
        with LogReader(KAFKA / folder / rel) as reader:
            table = pa.Table.from_batches(list(to_arrow(reader.batches(), topic="t", include_headers=True)), schema=KAFKA_SCHEMA)
        rows = table.to_pylist()
        assert len(rows) == len(expected), rel
        for got, exp in zip(rows, expected, strict=True):
            assert got["offset"] == exp["offset"]
            assert got["key"] == (None if exp["key"] is None else bytes.fromhex(exp["key"]))
            assert got["value"] == (None if exp["value"] is None else bytes.fromhex(exp["value"]))
            assert (got["timestamp"] - EPOCH) // timedelta(milliseconds=1) == exp["timestamp"]
            hdrs = [(h["key"], None if h["value"] is None else bytes.fromhex(h["value"])) for h in exp["headers"]]
            assert (got["headers"] or []) == [{"key": k, "value": v} for k, v in hdrs]
            assert got["headers"] is None or len(got["headers"]) > 0


def _random_batches(seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    out = []
    base = 0
    for codec in Codec:
        b = RecordBatchBuilder(base, compression=codec, producer_id=5, producer_epoch=1, base_sequence=2**31 - 3)
        off = base
        for _ in range(rnd.randint(1, 60)):
            key = None if rnd.random() < 0.2 else rnd.randbytes(rnd.choice([0, 3, 70, 300]))
            val = None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([0, 1, 100, 9000]))
            hdrs = [(rnd.choice(["a", "ü", "x" * 70]), None if rnd.random() < 0.3 else rnd.randbytes(rnd.randint(0, 200))) for _ in range(rnd.choice([0, 0, 1, 3]))]
            b.append(1700000000000 + rnd.randint(-10**6, 10**6), key, val, hdrs, offset=off)
            off += rnd.choice([1, 1, 2])  # gaps, as compaction leaves them
        out.append(b.build())
        base += 10_000
    return out


@pytest.mark.parametrize("seed", range(5))
def test_columns_equal_object_decoder(seed: int) -> None:
    data = b"".join(_random_batches(seed))
    with LogReader(data) as reader:
        batches = list(reader.batches())
    for batch, cols in zip(batches, iter_columns(batches), strict=True):
        recs = batch.records()
        assert cols.offsets.tolist() == [r.offset for r in recs]
        assert cols.timestamps.tolist() == [r.timestamp for r in recs]
        first = 0
        for i, r in enumerate(recs):
            assert _span(cols, cols.key_start, cols.key_len, i) == r.key
            assert _span(cols, cols.val_start, cols.val_len, i) == r.value
            n = int(cols.hdr_count[i])
            h = cols.headers[first : first + n]
            got = [(cols.buf[k : k + kl].tobytes().decode(), None if vl < 0 else cols.buf[v : v + vl].tobytes()) for k, kl, v, vl in h]
            assert tuple(got) == r.headers
            first += n


def test_plain_python_path_matches(tmp_path: Path) -> None:
    """The same source run without numba (KAFKALOG_NO_NUMBA=1) gives the same columns."""
    data = b"".join(_random_batches(7))
    (tmp_path / "x.log").write_bytes(data)
    code = (
        "import sys, numpy as np; from kafkalog import LogReader; from kafkalog.columnar import iter_columns, ACCELERATED;"
        "assert not ACCELERATED;"
        f"r = LogReader({str(tmp_path / 'x.log')!r});"
        "cols = list(iter_columns(r.batches()));"
        "np.save(sys.argv[1], np.concatenate([np.concatenate([c.offsets, c.timestamps, c.key_len, c.val_len, c.hdr_count]) for c in cols]))"
    )
    env = dict(os.environ, KAFKALOG_NO_NUMBA="1")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "plain.npy")], check=True, env=env)
    with LogReader(data) as r:
        cols = list(iter_columns(r.batches()))
    ours = np.concatenate([np.concatenate([c.offsets, c.timestamps, c.key_len, c.val_len, c.hdr_count]) for c in cols])
    assert np.array_equal(np.load(tmp_path / "plain.npy"), ours)


def test_malformed_record_area_raises_with_position() -> None:
    b = RecordBatchBuilder(0)
    b.append(1, b"k", b"v")
    data = bytearray(b.build())
    data[61] = 0x7E  # record length varint: 63, past the end of the batch
    with LogReader(bytes(data)) as r:
        batch = next(r.batches())
    with pytest.raises(InvalidRecordError) as e:
        decode_columns(batch)
    assert e.value.position == 61 and e.value.offset == 0
