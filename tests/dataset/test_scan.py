"""``kafkalog.scan`` against Kafka's own dump of the same files: every golden-real set (bundled in
golden/real, and ../shared/golden-real), golden/kafka's log dirs, read_committed against the
transaction markers and ``.txnindex`` entries Kafka's dump shows, and the pushed-down filters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import kafkalog
from corrupt_copy import corrupt_copy
from helpers import (
    GOLDEN,
    KAFKA_INTERNAL_TOPICS,
    SHARED,
    KafkaRow,
    hex_bytes,
    kafka_rows,
    log_starts,
    need_shared,
    read_jsonl,
    real_set_root,
    real_sets,
)
from kafkalog.errors import CrcMismatchError, LogNotFoundError
from kafkalog.fast.arrow import KAFKA_SCHEMA

Row = KafkaRow


def scanned_rows(reader: pa.RecordBatchReader) -> list[Row]:
    t = reader.read_all()
    ts = t.column("timestamp").cast(pa.int64()).to_pylist()
    return [
        (topic, part, off, key, value, None if us is None else us // 1000)
        for topic, part, off, key, value, us in zip(*(t.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value")), ts,
                                                   strict=True)
    ]


SETS = [pytest.param(s, e, id=f"bundled-{n}") for n, s, e in real_sets(GOLDEN / "real")]
SHARED_SETS = [pytest.param(s, e, id=f"shared-{n}", marks=pytest.mark.shared) for n, s, e in real_sets(SHARED / "golden-real")]


@pytest.mark.rule("R-VAL-10")
@pytest.mark.rule("R-VAL-11")
@pytest.mark.parametrize("set_dir,expected_file", SETS + SHARED_SETS)
def test_scan_returns_the_records_of_kafkas_dump(set_dir: Path, expected_file: Path) -> None:
    expected = read_jsonl(expected_file)
    root = real_set_root(set_dir, expected)
    reader = kafkalog.scan(root, allow_gaps=True)
    assert reader.schema == KAFKA_SCHEMA
    consumer = kafka_rows(expected, log_starts(root))
    assert scanned_rows(reader) == consumer
    # an explicit offset below the log start offset starts there, as a consumer's reset does
    assert scanned_rows(kafkalog.scan(root, start_offset=0, allow_gaps=True)) == consumer
    everything = kafka_rows(expected, log_starts(root), internal=True)
    assert scanned_rows(kafkalog.scan(root, allow_gaps=True, include_internal=True)) == everything
    internal = sorted({r[0] for r in everything} & KAFKA_INTERNAL_TOPICS)
    if internal:  # named, an internal topic is read without include_internal
        assert scanned_rows(kafkalog.scan(root, topics=internal, allow_gaps=True)) == [r for r in everything if r[0] in internal]
    # include_deleted: also the records below the log start offset that the files still hold
    assert scanned_rows(kafkalog.scan(root, include_internal=True, include_deleted=True, allow_gaps=True)) == kafka_rows(expected, internal=True)


def test_shared_sets_are_there_when_shared_is() -> None:
    need_shared("golden-real")
    assert SHARED_SETS, "../shared/golden-real has no expected dumps"


def _logdir_expected() -> list[dict]:
    return read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")


def committed_rows(expected: list[dict], partition_dir: str) -> list[tuple[int, bytes | None]]:
    """A read_committed consumer's (offset, value)s, from Kafka's dump alone: the ``.txnindex``
    entries (aborted ranges), the markers, and the last stable offset (the first offset of a
    transaction no marker has closed yet)."""
    lines = [o for o in expected if o["file"].startswith(partition_dir + "/")]
    aborted = [(o["producerId"], o["firstOffset"], o["lastOffset"]) for o in lines if o["type"] == "abortedTxn"]
    open_txn: dict[int, int] = {}
    batches = []
    for o in lines:
        if o["type"] == "batch" and o["file"].endswith(".log"):
            batches.append(dict(o, records=[]))
            if o["isTransactional"]:
                if o["isControlBatch"]:
                    open_txn.pop(o["producerId"], None)
                else:
                    open_txn.setdefault(o["producerId"], o["baseOffset"])
        elif o["type"] == "record" and o["file"].endswith(".log"):
            batches[-1]["records"].append(o)
    lso = min(open_txn.values(), default=None)
    out = []
    for b in batches:
        if b["isControlBatch"]:
            continue
        if b["isTransactional"] and any(pid == b["producerId"] and lo <= b["baseOffset"] <= hi for pid, lo, hi in aborted):
            continue
        out.extend((r["offset"], hex_bytes(r["value"])) for r in b["records"] if lso is None or r["offset"] < lso)
    return out


@pytest.mark.parametrize("name", ["transactional-0", "golden-0"])
def test_read_committed_leaves_out_aborted_and_undecided_transactions(name: str) -> None:
    expected = _logdir_expected()
    want = committed_rows(expected, name)
    t = kafkalog.scan(GOLDEN / "kafka" / "logdir" / name, read_committed=True, columns=["offset", "value"]).read_all()
    assert list(zip(t.column("offset").to_pylist(), t.column("value").to_pylist(), strict=True)) == want
    everything = kafkalog.scan(GOLDEN / "kafka" / "logdir" / name).read_all()
    assert everything.num_rows > len(want)  # the test can tell the two apart


def test_a_data_dir_a_glob_and_partition_dirs_give_the_same_rows() -> None:
    logdir = GOLDEN / "kafka" / "logdir"
    whole = scanned_rows(kafkalog.scan(logdir))
    globbed = scanned_rows(kafkalog.scan(str(logdir / "*-[0-9]")))
    listed = scanned_rows(kafkalog.scan(sorted(str(p) for p in logdir.iterdir() if p.is_dir())))
    assert whole == globbed == listed
    assert {r[0] for r in whole} >= {"golden", "transactional", "compacted"}


def test_topics_partitions_and_columns() -> None:
    logdir = GOLDEN / "kafka" / "logdir"
    t = kafkalog.scan(logdir, topics="compacted", partitions=[1], columns=["offset", "topic", "partition"]).read_all()
    assert t.schema.names == ["offset", "topic", "partition"]
    assert set(t.column("topic").to_pylist()) == {"compacted"} and set(t.column("partition").to_pylist()) == {1}
    with pytest.raises(ValueError, match="columns"):
        kafkalog.scan(logdir, columns=["nope"])


def test_an_empty_result_still_has_the_schema() -> None:
    t = kafkalog.scan(GOLDEN / "kafka" / "logdir", topics="no-such-topic").read_all()
    assert t.num_rows == 0 and t.schema == KAFKA_SCHEMA
    t = kafkalog.scan(GOLDEN / "kafka" / "logdir" / "golden-0", start_offset=10**9).read_all()
    assert t.num_rows == 0 and t.schema == KAFKA_SCHEMA


def _dump_records(name: str) -> list[dict]:
    expected = _logdir_expected()
    control = False
    out = []
    for o in expected:
        if not o["file"].startswith(name + "/") or not o["file"].endswith(".log"):
            continue
        if o["type"] == "batch":
            control = o["isControlBatch"]
        elif o["type"] == "record" and not control:
            out.append(o)
    return out


def test_offset_range_across_segments() -> None:
    records = _dump_records("golden-0")
    offsets = [r["offset"] for r in records]
    lo, hi = offsets[len(offsets) // 4], offsets[3 * len(offsets) // 4]
    t = kafkalog.scan(GOLDEN / "kafka" / "logdir" / "golden-0", start_offset=lo, end_offset=hi, columns=["offset"]).read_all()
    assert t.column("offset").to_pylist() == [o for o in offsets if lo <= o < hi]
    per = kafkalog.scan(GOLDEN / "kafka" / "logdir" / "golden-0", start_offset={("golden", 0): hi}, columns=["offset"]).read_all()
    assert per.column("offset").to_pylist() == [o for o in offsets if o >= hi]


def test_time_range_is_resolved_as_kafka_resolves_offsets_for_times() -> None:
    records = _dump_records("golden-0")
    times = sorted({r["timestamp"] for r in records})
    t0, t1 = times[len(times) // 3], times[2 * len(times) // 3]

    def first_at_or_after(t: int) -> int:  # ListOffsets by timestamp: the first record (offset order) at or after t
        return next(r["offset"] for r in records if r["timestamp"] >= t)

    want = [r["offset"] for r in records if first_at_or_after(t0) <= r["offset"] < first_at_or_after(t1)]
    t = kafkalog.scan(GOLDEN / "kafka" / "logdir" / "golden-0", start_time=t0, end_time=t1, columns=["offset"]).read_all()
    assert t.column("offset").to_pylist() == want and want


def test_a_path_without_partitions_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LogNotFoundError, match="no Kafka partition"):
        kafkalog.scan(tmp_path)
    with pytest.raises(LogNotFoundError, match="no such directory"):
        kafkalog.scan(tmp_path / "absent")


def test_import_kafkalog_does_not_load_pyarrow_until_scan_is_used() -> None:
    """Neither ``import kafkalog`` nor planning (what ``kafkalog cat`` uses) loads pyarrow; calling scan does."""
    code = ("import sys, kafkalog; assert 'pyarrow' not in sys.modules, 'pyarrow imported'; "
            "from kafkalog.dataset.scan import plan_all, read_records; assert 'pyarrow' not in sys.modules, 'planning loads pyarrow'; "
            f"kafkalog.scan({str(GOLDEN / 'kafka' / 'logdir' / 'golden-0')!r}); assert 'pyarrow' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_partition_after_an_unclean_shutdown(tmp_path: Path) -> None:
    """The README's scratch ``data/orders-0``: a torn last batch, the last segment's indexes and every
    producer snapshot missing. Both isolation levels give what Kafka's dump says a consumer gets,
    and the directory is left as it was."""
    from scratch import ORDERS, consumer_truth, fingerprint, make_scratch, orders_batches

    scratch = make_scratch(tmp_path / "scratch")
    before = fingerprint(scratch)
    committed, uncommitted, _lso = consumer_truth(orders_batches())
    assert committed != uncommitted
    for read_committed, want in ((False, uncommitted), (True, committed)):
        t = kafkalog.scan(scratch / "data", read_committed=read_committed, columns=["offset", "topic"]).read_all()
        assert t.column("offset").to_pylist() == want
        assert set(t.column("topic").to_pylist()) == {"orders"}
        small = kafkalog.scan(scratch / ORDERS, read_committed=read_committed, columns=["offset"], batch_rows=7)
        assert [o for b in small for o in b.column("offset").to_pylist()] == want
    assert fingerprint(scratch) == before


def test_no_silent_gaps_on_cp760(caplog: pytest.LogCaptureFixture) -> None:
    """customers-0 and products-0 have indexes and a snapshot at 17081/17097 but no .log: scan fails
    naming them, unless gaps are allowed; then it warns and reads the rest."""
    from kafkalog.errors import DataLossError

    data = need_shared("golden-real/cp760-flink-on-prem/data")
    with pytest.raises(DataLossError, match="customers-0") as err:
        kafkalog.scan(data)
    assert "products-0" in str(err.value) and "17080" in str(err.value) and "allow_gaps" in str(err.value)
    with pytest.raises(DataLossError):
        kafkalog.scan(data, topics="customers")
    assert kafkalog.scan(data, topics="orders").read_all().num_rows > 0  # a partition without loss reads as before
    with caplog.at_level("WARNING"):
        t = kafkalog.scan(data, allow_gaps=True, columns=["topic"]).read_all()
    assert "customers" not in t.column("topic").to_pylist() and t.num_rows > 0
    assert "customers-0" in caplog.text and "products-0" in caplog.text


def test_a_missing_segment_in_the_middle(tmp_path: Path) -> None:
    """golden-0 with its second .log removed (indexes kept): the offsets it held are data loss;
    offsets outside them read without complaint."""
    import shutil

    from kafkalog.errors import DataLossError

    d = tmp_path / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    logs = sorted(d.glob("*.log"))
    gone, nxt = logs[1], logs[2]
    gone.unlink()
    lo, hi = int(gone.stem), int(nxt.stem)
    with pytest.raises(DataLossError, match=f"offsets {lo} to {hi - 1}"):
        kafkalog.scan(d)
    assert kafkalog.scan(d, end_offset=lo).read_all().num_rows > 0
    assert kafkalog.scan(d, start_offset=hi).read_all().num_rows > 0
    offsets = kafkalog.scan(d, allow_gaps=True, columns=["offset"]).read_all().column("offset").to_pylist()
    assert offsets and not [o for o in offsets if lo <= o < hi]


@pytest.mark.rule("R-VAL-09")
@pytest.mark.usefixtures("kernels")
def test_a_corrupt_batch_fails_the_scan_unless_skipped_or_unchecked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """One byte flipped inside a batch of a real orders-0 (figures from Kafka's dump of the intact
    file): the scan returns the rows before it, then raises CrcMismatchError naming the file,
    position and offset; on_corrupt="skip" leaves out that batch's records with one warning;
    verify_crc=False returns the corrupted value."""
    c = corrupt_copy(tmp_path)
    rows = 0
    with pytest.raises(CrcMismatchError) as e:
        for b in kafkalog.scan(c.data, topics="orders", columns=["offset"]):
            rows += b.num_rows
    assert (e.value.file, e.value.position, e.value.offset, rows) == (str(c.log), c.position, c.base_offset, c.before)
    with caplog.at_level("WARNING"):
        got = kafkalog.scan(c.data, topics="orders", columns=["offset"], on_corrupt="skip").read_all()
    assert got.num_rows == c.rows_when_skipped == 17212 - c.records
    assert not set(got.column("offset").to_pylist()) & set(range(c.base_offset, c.last_offset + 1))
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and f"{c.log}, position {c.position}, offset {c.base_offset}" in warned[0]
    one = kafkalog.scan(c.data, topics="orders", columns=["value"], start_offset=c.offset, end_offset=c.offset + 1, verify_crc=False)
    assert one.read_all().column("value").to_pylist() == [c.flipped] != [c.value]
