"""The Spark source and offsets a partition's own files say existed but no ``.log`` holds (SPEC §6.8):
``failOnDataLoss`` (default true, as Spark's Kafka source) raises ``DataLossError`` naming the
partition directory and the offsets; ``false`` reads the rest and logs a warning.

Lost ranges follow from the names Kafka gave golden-0's segments (0, 51, 102, 146, 190, 234) and,
for the real backup cp760-flink-on-prem, from its producer snapshots' names (customers-0: 17081);
the rows read are compared with Kafka's own dump of the same files."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from pyspark.errors import PySparkException

from helpers import GOLDEN, need_shared, read_jsonl
from kafkalog.errors import DataLossError as KafkaLogDataLoss
from kafkalog_spark import DataLossError

from ._support import assert_same_rows, dump_batches, expected_rows, read_in_process, rows_of

LOGDIR = GOLDEN / "kafka" / "logdir"


def _kafka_rows(*, lost: range = range(0)) -> dict:
    """Kafka's dump of golden-0 as rows, without the offsets in ``lost``."""
    rows = expected_rows(dump_batches(read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"), "golden-0/"))
    return {k: v for k, v in rows.items() if k[2] not in lost}


@pytest.fixture
def lossy(tmp_path: Path) -> Path:
    d = tmp_path / "broker-1" / "golden-0"
    shutil.copytree(LOGDIR / "golden-0", d)
    (d / "00000000000000000102.log").unlink()
    return d


@pytest.mark.rule("R-LOSS-04")
def test_a_missing_log_fails_the_read_naming_partition_and_offsets(lossy: Path) -> None:
    with pytest.raises(DataLossError) as info:
        read_in_process({"path": str(lossy)})
    err = info.value
    assert isinstance(err, KafkaLogDataLoss) and err.file == str(lossy)
    assert "offsets 102 to 145 are in no .log" in str(err) and 'failOnDataLoss to "false"' in str(err)
    # a read that ends before the lost range does not need it
    table, _, _ = read_in_process({"path": str(lossy), "endingOffsets": '{"golden": {"0": 102}}'})
    assert table is not None and max(table.column("offset").to_pylist()) < 102


@pytest.mark.rule("R-LOSS-04")
def test_fail_on_data_loss_false_reads_the_rest_with_a_warning(lossy: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kafkalog_spark"):
        table, _, _ = read_in_process({"path": str(lossy), "failOnDataLoss": "false", "includeHeaders": "true"})
    assert "offsets 102 to 145 are in no .log" in caplog.text
    assert_same_rows(rows_of(table), _kafka_rows(lost=range(102, 146)))


def test_another_replica_holding_the_offsets_is_no_loss(lossy: Path, tmp_path: Path) -> None:
    whole = tmp_path / "broker-2" / "golden-0"
    shutil.copytree(LOGDIR / "golden-0", whole)
    table, _, _ = read_in_process({"path": f"{tmp_path}/broker-*", "includeHeaders": "true"})
    assert_same_rows(rows_of(table), _kafka_rows())


def test_the_real_backup_fails_on_customers_and_reads_the_rest() -> None:
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    with pytest.raises(DataLossError, match="customers-0.*offsets 0 to 17080 are in no .log"):
        read_in_process({"path": str(data), "subscribe": "customers"})
    table, _, _ = read_in_process({"path": str(data), "subscribe": "customers", "failOnDataLoss": "false"})
    assert table is None  # nothing of customers-0 is on disk
    table, _, _ = read_in_process({"path": str(data), "subscribe": "orders"})
    assert table is not None and table.num_rows == 17212


def test_through_spark(spark, lossy: Path) -> None:  # noqa: ANN001 - fixture
    df = spark.read.format("kafkalog").load(str(lossy))
    with pytest.raises(PySparkException, match=r"DataLossError.*golden-0.*offsets 102 to 145 are in no \.log"):
        df.count()
    n = spark.read.format("kafkalog").option("failOnDataLoss", "false").load(str(lossy)).count()
    assert n == len(_kafka_rows(lost=range(102, 146)))


@pytest.mark.rule("R-LOSS-03", "R-LOSS-04")
def test_a_last_log_ending_before_its_snapshot_fails_the_read(tmp_path: Path) -> None:
    """The last .log cut short (its batches from offset 234 on gone): Kafka's snapshot at 265, the
    log end offset, says offsets 234 to 264 existed. Found where the read reaches the file's end."""
    d = tmp_path / "golden-0"
    shutil.copytree(LOGDIR / "golden-0", d)
    log = d / "00000000000000000234.log"
    log.write_bytes(log.read_bytes()[:40])  # not even one whole batch
    with pytest.raises(DataLossError, match="offsets 234 to 264 are in no .log.*00000000000000000265.snapshot"):
        read_in_process({"path": str(d)})
    table, _, _ = read_in_process({"path": str(d), "failOnDataLoss": "false", "includeHeaders": "true"})
    assert_same_rows(rows_of(table), _kafka_rows(lost=range(234, 265)))
    table, _, _ = read_in_process({"path": str(d), "endingOffsets": '{"golden": {"0": 234}}', "includeHeaders": "true"})
    assert_same_rows(rows_of(table), _kafka_rows(lost=range(234, 265)))  # a read that stops before needs nothing more


def _tail_claimed_by_timeindex_only(d: Path) -> Path:
    """golden-0 with its last batch (offset 264, from byte 1277 of 00000000000000000234.log) cut off
    and its 265.snapshot gone: only that segment's .timeindex, whose last entry is for offset 264,
    says the log reached 265 (as :func:`helpers.many_partitions` damages ``lost_tail``)."""
    shutil.copytree(LOGDIR / "golden-0", d)
    (d / "00000000000000000265.snapshot").unlink()
    log = d / "00000000000000000234.log"
    log.write_bytes(log.read_bytes()[:1277])
    return d


@pytest.mark.rule("R-LOSS-03")
def test_a_lost_tail_only_the_last_indexes_claim_fails_the_read_as_scan_fails(tmp_path: Path) -> None:
    """The claim of the last segment's own .timeindex is weighed where the read reaches the .log's
    end, as kafkalog.scan weighs it: the same offsets, the same evidence."""
    import kafkalog

    d = _tail_claimed_by_timeindex_only(tmp_path / "golden-0")
    with pytest.raises(KafkaLogDataLoss, match=r"00000000000000000234\.timeindex has an entry for offset 264") as by_scan:
        kafkalog.scan(str(d))
    assert (by_scan.value.gaps[0].start, by_scan.value.gaps[0].end) == (264, 265)
    with pytest.raises(DataLossError, match=r"offsets 264 to 264 are in no \.log.*00000000000000000234\.timeindex has an entry for offset 264"):
        read_in_process({"path": str(d)})
    table, _, _ = read_in_process({"path": str(d), "failOnDataLoss": "false", "includeHeaders": "true"})
    assert_same_rows(rows_of(table), _kafka_rows(lost=range(264, 265)))


@pytest.mark.rule("R-LOSS-03")
def test_copies_that_all_lost_the_tail_their_indexes_claim_fail_the_read(tmp_path: Path) -> None:
    """Two copies, each cut the same way: the tails read while merging them end at 264, and the
    last segments' .timeindex files say 265. One whole copy beside a cut one: no loss."""
    for broker in ("broker-1", "broker-2"):
        _tail_claimed_by_timeindex_only(tmp_path / "cut" / broker / "golden-0")
    with pytest.raises(DataLossError, match=r"00000000000000000234\.timeindex has an entry for offset 264"):
        read_in_process({"path": f"{tmp_path}/cut/broker-*"})
    _tail_claimed_by_timeindex_only(tmp_path / "one-cut" / "broker-1" / "golden-0")
    shutil.copytree(LOGDIR / "golden-0", tmp_path / "one-cut" / "broker-2" / "golden-0")
    table, _, _ = read_in_process({"path": f"{tmp_path}/one-cut/broker-*", "includeHeaders": "true"})
    assert_same_rows(rows_of(table), _kafka_rows())
