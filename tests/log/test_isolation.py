"""read_committed and read_uncommitted consumers (SPEC R-ISO-04, CompletedFetch.java @1eb7644).

Over Kafka's transactional-0 log the expected records come from Kafka's dump alone: a
transactional batch belongs to its producer's next control record (COMMIT or ABORT); a
transaction with no marker yet is open, and the last stable offset is the first offset of the
earliest open transaction.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import GOLDEN, SHARED, dump_batches, need_shared, read_jsonl
from kafkalog import ControlType, LogReader, RecordBatchBuilder
from kafkalog.format.txnindex import AbortedTxn
from kafkalog.log.isolation import ReadCommittedFilter, consume, consumer_records
from kafkalog.log.unified import FetchIsolation, Log
from scratch import consumer_truth as _expected

SOURCES = {"golden": (GOLDEN / "kafka",), "shared": (SHARED / "golden-kafka",)}


@pytest.fixture(params=list(SOURCES))
def transactional(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, list[dict]]:
    root = SOURCES[request.param][0] if request.param == "golden" else need_shared("golden-kafka")
    d = tmp_path / "transactional-0"
    shutil.copytree(root / "logdir" / "transactional-0", d)
    return d, sorted(dump_batches(read_jsonl(root / "dump" / "logdir.jsonl"), "transactional-0/"), key=lambda b: b["baseOffset"])


@pytest.mark.rule("R-ISO-04")
def test_kafka_transactional_log_read_committed(transactional: tuple[Path, list[dict]]) -> None:
    d, batches = transactional
    committed, uncommitted, lso = _expected(batches)
    assert lso == 136 and len(committed) < len(uncommitted)  # the set has aborted data and open transactions
    with Log.open(d) as lg:
        assert lg.last_stable_offset == lso
        for max_bytes in (1 << 20, 700, 1):  # one fetch, several, one batch per fetch
            assert [r.offset for r in consume(lg, max_bytes=max_bytes)] == committed
            assert [r.offset for r in consume(lg, read_committed=False, max_bytes=max_bytes)] == uncommitted
        # starting inside transactions: records below the position are not returned either
        for start in (3, 50, 97, 135):
            assert [r.offset for r in consume(lg, start, max_bytes=300)] == [o for o in committed if o >= start]
        # values as Kafka wrote them
        want = {r["offset"]: r["value"] for b in batches for r in b["records"]}
        assert all((r.value.hex() if r.value is not None else None) == want[r.offset] for r in consume(lg))


@pytest.mark.rule("R-ISO-04")
def test_fetches_with_their_aborted_lists(transactional: tuple[Path, list[dict]]) -> None:
    """consumer_records over each Log.read(TXN_COMMITTED) answer (one segment each): its batches and aborted list."""
    d, batches = transactional
    committed, _, lso = _expected(batches)
    data = [r["offset"] for b in batches if not b["isControlBatch"] for r in b["records"] if r["offset"] < lso]
    got: list[int] = []
    unfiltered: list[int] = []  # without the aborted list nothing is skipped, but control records are still dropped
    lists = 0
    with Log.open(d) as lg:
        position = 0
        while position < lso:
            fetch = lg.read(position, 1 << 30, isolation=FetchIsolation.TXN_COMMITTED)
            fetched = list(fetch.batches())
            lists += bool(fetch.aborted_transactions)
            got += [r.offset for r in consumer_records(fetched, fetch.aborted_transactions, start_offset=position)]
            unfiltered += [r.offset for r in consumer_records(fetched, None, start_offset=position)]
            position = fetched[-1].next_offset
    assert got == committed and unfiltered == data
    assert lists >= 3


def _batch(base: int, n: int, pid: int = -1, *, txn: bool = False, seq: int = 0) -> bytes:
    b = RecordBatchBuilder(base, producer_id=pid, producer_epoch=0 if pid >= 0 else -1, base_sequence=seq if pid >= 0 else -1, is_transactional=txn)
    for i in range(n):
        b.append(1000 + base + i, b"k", b"%d" % (base + i))
    return b.build()


def _marker(base: int, pid: int, kind: ControlType) -> bytes:
    b = RecordBatchBuilder(base, producer_id=pid, producer_epoch=0, is_transactional=True, is_control=True)
    b.append_end_txn_marker(kind, 0, 2000 + base)
    return b.build()


P1, P2, P3 = 11, 22, 33
#: two producers interleaving transactions, an idempotent producer and a plain one
INTERLEAVED = b"".join([
    _batch(0, 2, P1, txn=True),        # 0-1   P1 txn A (aborted)
    _batch(2, 2, P2, txn=True),        # 2-3   P2 txn (committed)
    _batch(4, 1, P1, txn=True),        # 4     P1 txn A
    _batch(5, 1, P3, seq=0),           # 5     idempotent, not transactional
    _batch(6, 1, P2, txn=True),        # 6     P2 txn
    _marker(7, P1, ControlType.ABORT),  # 7
    _batch(8, 1),                      # 8     no producer id
    _marker(9, P2, ControlType.COMMIT),  # 9
    _batch(10, 2, P1, txn=True),       # 10-11 P1 txn B (committed)
    _batch(12, 1, P2, txn=True),       # 12    P2 txn (aborted)
    _marker(13, P1, ControlType.COMMIT),  # 13
    _marker(14, P2, ControlType.ABORT),   # 14
    _batch(15, 1, P2, txn=True),       # 15    P2 txn (committed)
    _marker(16, P2, ControlType.COMMIT),  # 16
])
ABORTED = [(P2, 12), (P1, 0)]  # out of order on purpose: the filter orders them by first offset


@pytest.mark.rule("R-ISO-04")
def test_interleaved_producers() -> None:
    batches = list(LogReader(INTERLEAVED).batches())
    assert [r.offset for r in consumer_records(batches, ABORTED)] == [2, 3, 5, 6, 8, 10, 11, 15]
    assert [r.offset for r in consumer_records(batches, [AbortedTxn(0, p, f, 0, 0) for p, f in ABORTED])] == [2, 3, 5, 6, 8, 10, 11, 15]
    assert [r.offset for r in consumer_records(batches, ABORTED, read_committed=False)] == [0, 1, 2, 3, 4, 5, 6, 8, 10, 11, 12, 15]
    assert [r.offset for r in consumer_records(batches, ABORTED, start_offset=3)] == [3, 5, 6, 8, 10, 11, 15]


@pytest.mark.rule("R-ISO-04")
def test_filter_state_follows_the_algorithm() -> None:
    """A listed transaction only applies from its first offset; its producer's non-transactional
    batches are kept; the ABORT marker ends the skipping."""
    f = ReadCommittedFilter([(P1, 4)])
    batches = {b.base_offset: b for b in LogReader(b"".join([
        _batch(0, 2, P1, txn=True), _batch(2, 1, P1, seq=5), _batch(3, 2, P1, txn=True), _batch(5, 1, P1, txn=True),
        _marker(6, P1, ControlType.ABORT), _batch(7, 1, P1, txn=True),
    ])).batches()}
    assert not f.skips(batches[0])          # before the transaction's first offset 4
    assert not f.skips(batches[2]) and P1 not in f.aborted_producers
    assert f.skips(batches[3])              # last offset 4 >= first offset 4: P1 now aborted
    assert P1 in f.aborted_producers
    f2 = ReadCommittedFilter([(P1, 4)])
    for b in (batches[0], batches[3]):
        f2.skips(b)
    assert not f2.skips(LogReader(_batch(2, 1, P1, seq=5)).batches().__next__())  # idempotent, kept
    assert f.skips(batches[5])
    assert not f.skips(batches[6]) and P1 not in f.aborted_producers  # the ABORT marker
    assert not f.skips(batches[7])


@pytest.mark.rule("R-ISO-04")
def test_log_written_with_interleaved_transactions(tmp_path: Path) -> None:
    """The same data appended as leader (control batches from the coordinator): the log's own
    .txnindex and last stable offset feed consume(); reopened read-only, the same."""
    with Log.open(tmp_path / "t-0", writable=True) as lg:
        seqs: dict[int, int] = {}
        for b in LogReader(INTERLEAVED).batches():
            if not b.is_control and b.producer_id >= 0:
                pid, n = b.producer_id, b.count
                seq = seqs.get(pid, 0)
                seqs[pid] = seq + n
                lg.append(_batch(0, n, pid, txn=b.is_transactional, seq=seq))
            elif b.is_control:
                lg.append(b.data)
            else:
                lg.append(_batch(0, b.count))
        lg.append(_batch(0, 1, P1, txn=True, seq=seqs[P1]))  # 17: an open transaction
        lg.append(_batch(0, 1))                              # 18
        assert lg.last_stable_offset == 17
        assert [r.offset for r in consume(lg)] == [2, 3, 5, 6, 8, 10, 11, 15]
        assert [r.offset for r in consume(lg, read_committed=False)][-3:] == [15, 17, 18]
    with Log.open(tmp_path / "t-0") as lg:
        assert lg.last_stable_offset == 17
        assert [r.offset for r in consume(lg)] == [2, 3, 5, 6, 8, 10, 11, 15]


@pytest.mark.rule("R-VAL-09")
def test_consume_checks_crcs_as_the_consumer_does(tmp_path: Path) -> None:
    """check.crcs=true: a batch of a real orders-0 with one byte flipped stops the consumer, naming
    the segment file, the batch's position in it and its offset; on_corrupt="skip" reads past it,
    verify_crc=False returns the corrupted value. Figures from Kafka's dump of the intact file."""
    from corrupt_copy import corrupt_copy
    from kafkalog.errors import CrcMismatchError

    c = corrupt_copy(tmp_path)
    with Log.open(c.data / "orders-0") as log:
        got: list[int] = []
        with pytest.raises(CrcMismatchError) as e:
            got.extend(r.offset for r in consume(log, read_committed=False))
        assert (e.value.file, e.value.position, e.value.offset, len(got)) == (str(c.log), c.position, c.base_offset, c.before)
        skipped = [r.offset for r in consume(log, read_committed=False, on_corrupt=lambda err: None)]
        assert len(skipped) == c.rows_when_skipped and not set(skipped) & set(range(c.base_offset, c.last_offset + 1))
        unchecked = next(r for r in consume(log, c.offset, read_committed=False, verify_crc=False))
        assert (unchecked.offset, unchecked.value) == (c.offset, c.flipped)
