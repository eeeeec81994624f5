"""to_arrow as a consumer reads: control records dropped unless asked for, read_committed, and the
opt-in batch metadata columns, all checked against Kafka's own dump of the same files."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from helpers import GOLDEN, dump_batches, read_jsonl
from kafkalog import LogReader
from kafkalog.fast.arrow import METADATA_SCHEMA, to_arrow
from kafkalog.log.unified import Log
from scratch import ORDERS, consumer_truth, fingerprint, make_scratch, orders_batches

KAFKA = GOLDEN / "kafka"
TXN_FILE = KAFKA / "records" / "v2-transactional" / "00000000000000000000.log"


def _txn_file_batches() -> list[dict]:
    return dump_batches(read_jsonl(KAFKA / "dump" / "records.jsonl"), "v2-transactional/")


def _offsets(batches: list[pa.RecordBatch]) -> list[int]:
    return [o for rb in batches for o in rb.column("offset").to_pylist()]


@pytest.mark.parametrize("views", [False, True])
@pytest.mark.parametrize("max_rows", [32768, 2])
def test_file_as_a_consumer_reads_it(views: bool, max_rows: int) -> None:
    """A .log with idempotent and transactional batches, COMMIT and ABORT markers: the default
    drops the markers, read_committed drops the aborted transaction too (Kafka's dump decides)."""
    kafka = _txn_file_batches()
    assert any(b["isControlBatch"] for b in kafka)
    committed, uncommitted, _lso = consumer_truth(kafka)
    assert len(committed) < len(uncommitted)
    every = [r["offset"] for b in kafka for r in b["records"]]
    with LogReader(TXN_FILE) as reader:
        assert _offsets(list(to_arrow(reader, views=views, max_rows=max_rows))) == uncommitted
        assert _offsets(list(to_arrow(reader, views=views, max_rows=max_rows, read_committed=True))) == committed
        assert _offsets(list(to_arrow(reader, views=views, max_rows=max_rows, include_control=True))) == every
        objects = list(reader.batches())
    assert _offsets(list(to_arrow(objects, read_committed=True))) == committed
    assert _offsets(list(to_arrow(objects))) == uncommitted


@pytest.mark.parametrize("source", ["reader", "objects"])
def test_metadata_columns_are_kafkas_batch_fields(source: str) -> None:
    kafka = _txn_file_batches()
    want = []
    for b in kafka:
        for r in b["records"]:
            want.append({
                "offset": r["offset"], "producerId": b["producerId"], "producerEpoch": b["producerEpoch"], "sequence": r["sequence"],
                "isTransactional": b["isTransactional"], "isControl": b["isControlBatch"], "leaderEpoch": b["partitionLeaderEpoch"],
                "position": b["position"],
            })
    with LogReader(TXN_FILE) as reader:
        src = reader if source == "reader" else list(reader.batches())
        table = pa.Table.from_batches(list(to_arrow(src, include_control=True, metadata=True, max_rows=3)))
    assert table.schema.names[-len(METADATA_SCHEMA):] == METADATA_SCHEMA.names
    rows = table.select(list(want[0])).to_pylist()
    assert rows == want
    assert set(table.column("segment").to_pylist()) == {str(TXN_FILE) if source == "reader" else ""}


@pytest.mark.parametrize("views", [False, True])
def test_read_only_log_as_a_consumer_reads_it(tmp_path: Path, views: bool) -> None:
    """A whole partition (torn tail, indexes missing), opened read-only: what consume() returns,
    per Kafka's dump, and the directory untouched."""
    scratch = make_scratch(tmp_path / "scratch")
    before = fingerprint(scratch)
    committed, uncommitted, _lso = consumer_truth(orders_batches())
    with Log.open(scratch / ORDERS) as lg:
        assert _offsets(list(to_arrow(lg, read_committed=True, views=views, max_rows=40))) == committed
        assert _offsets(list(to_arrow(lg, views=views))) == uncommitted
        with_meta = pa.Table.from_batches(list(to_arrow(lg, include_control=True, metadata=True)))
    kafka = {r["offset"]: (b["file"].split("/")[-1], b["position"]) for b in orders_batches() for r in b["records"]}
    got = zip(with_meta.column("offset").to_pylist(), with_meta.column("segment").to_pylist(), with_meta.column("position").to_pylist(), strict=True)
    assert {o: (Path(s).name, p) for o, s, p in got} == kafka
    assert fingerprint(scratch) == before


def test_a_log_labels_rows_with_its_own_topic_and_partition() -> None:
    """to_arrow(Log.open("…/compacted-1")) labels every row compacted/1, as the directory name says
    (issue #27: it used to say '' and 0); explicit labels still win."""
    with Log.open(KAFKA / "logdir" / "compacted-1") as lg:
        table = pa.Table.from_batches(list(to_arrow(lg)))
        relabeled = pa.Table.from_batches(list(to_arrow(lg, topic="t", partition=7)))
    assert table.num_rows > 0
    assert set(table.column("topic").to_pylist()) == {"compacted"} and set(table.column("partition").to_pylist()) == {1}
    assert set(relabeled.column("topic").to_pylist()) == {"t"} and set(relabeled.column("partition").to_pylist()) == {7}
