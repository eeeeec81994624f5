"""Streaming: a query tailing a live data dir sees every appended record exactly once, including
records that arrive in new segments and new partitions, and never a half-written batch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import GOLDEN, read_jsonl

from ._support import assert_same_rows, dump_batches, expected_rows, rows_of

SRC = GOLDEN / "kafka" / "logdir" / "golden-0"


@pytest.fixture(scope="module")
def dump() -> list[dict]:
    return read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


@pytest.mark.cluster
def test_stream_reads_each_appended_record_once(spark, dump, tmp_path) -> None:  # noqa: ANN001 - fixtures
    seg0 = (SRC / "00000000000000000000.log").read_bytes()
    cuts = [b["position"] for b in dump_batches(dump, "golden-0/00000000000000000000.log")] + [len(seg0)]
    golden = expected_rows(dump_batches(dump, "golden-0/"))
    live = tmp_path / "live"
    part = live / "golden-0"
    part.mkdir(parents=True)
    active = part / "00000000000000000000.log"
    _append(active, seg0[: cuts[3]])  # three batches: offsets 0..20

    query = (
        spark.readStream.format("kafkalog").option("startingOffsets", "earliest").option("includeHeaders", "true").load(str(live))
        .writeStream.format("memory").queryName("kafkalog_stream_test").start()
    )

    def seen() -> dict:
        query.processAllAvailable()
        return rows_of(spark.table("kafkalog_stream_test").toArrow())

    try:
        assert_same_rows(seen(), {k: v for k, v in golden.items() if k[2] < 21})

        # seven more batches and half of the next one: the torn batch is not read yet
        half = (cuts[10] + cuts[11]) // 2
        _append(active, seg0[cuts[3] : half])
        assert_same_rows(seen(), {k: v for k, v in golden.items() if k[2] < 44})

        # the batch completes, the segment rolls, a new segment fills
        _append(active, seg0[half:])
        (part / "00000000000000000051.log").write_bytes((SRC / "00000000000000000051.log").read_bytes())
        assert_same_rows(seen(), {k: v for k, v in golden.items() if k[2] < 102})

        # two more segments, and a partition that did not exist when the query started
        for base in ("00000000000000000102.log", "00000000000000000146.log"):
            (part / base).write_bytes((SRC / base).read_bytes())
        fresh = live / "fresh-0"
        fresh.mkdir()
        (fresh / "00000000000000000000.log").write_bytes(seg0)
        want = {k: v for k, v in golden.items() if k[2] < 190}
        want.update({("fresh", 0, o): v for (_, _, o), v in golden.items() if o < 51})
        assert_same_rows(seen(), want)
        assert json.loads(query.lastProgress["sources"][0]["endOffset"]) == {"fresh": {"0": 51}, "golden": {"0": 190}}
    finally:
        query.stop()
