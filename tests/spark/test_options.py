"""Options with Spark's Kafka-source meaning, error handling and the opt-in columns.

Most checks run the source in this process (:func:`read_in_process`: the same reader, pushdown,
partitions and pickled read() Spark uses); one test sends errors and a projected schema through
Spark itself.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql.streaming.datasource import ReadMaxRows

from helpers import GOLDEN, read_jsonl
from kafkalog.errors import CrcMismatchError, DecompressionError
from kafkalog_spark import DataLossError, SourceOptionError
from kafkalog_spark.source import KafkaLogDataSource

from ._support import assert_same_rows, copy_segments, dump_batches, expected_rows, read_in_process, rows_of

LOGDIR = GOLDEN / "kafka" / "logdir"
BHEEM = GOLDEN / "real" / "kafka310-bheem" / "kafka-logs"
T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def dump() -> list[dict]:
    return read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")


@pytest.fixture(scope="module")
def golden(dump) -> dict:  # noqa: ANN001 - fixture
    return expected_rows(dump_batches(dump, "golden-0/"))


def _offsets(table) -> list[int]:  # noqa: ANN001 - pyarrow table or None
    return [] if table is None else sorted(table.column("offset").to_pylist())


def _first_offset_at(dump: list[dict], ts: int) -> int:
    """Kafka's offset for a timestamp, from the dump: the first batch whose max timestamp reaches
    it, then the first record in that batch that does."""
    for b in dump_batches(dump, "golden-0/"):
        if not b["isControlBatch"] and b["maxTimestamp"] >= ts:
            return next(r["offset"] for r in b["records"] if r["timestamp"] >= ts)
    raise AssertionError(ts)


def test_offsets_by_timestamp(dump, golden) -> None:  # noqa: ANN001 - fixtures
    path = str(LOGDIR / "golden-0")
    start, end = _first_offset_at(dump, T0 + 100), _first_offset_at(dump, T0 + 300)
    for opts in (
        {"startingTimestamp": str(T0 + 100), "endingTimestamp": str(T0 + 300)},
        {"startingOffsetsByTimestamp": json.dumps({"golden": {"0": T0 + 100}}), "endingOffsetsByTimestamp": json.dumps({"golden": {"0": T0 + 300}})},
    ):
        table, _, _ = read_in_process({"path": path, "includeHeaders": "true", **opts})
        assert_same_rows(rows_of(table), {k: v for k, v in golden.items() if start <= k[2] < end})
    with pytest.raises(SourceOptionError, match="no record of golden-0 has a timestamp at or after"):
        read_in_process({"path": path, "startingTimestamp": str(T0 + 10_000)})
    table, _, _ = read_in_process({"path": path, "startingTimestamp": str(T0 + 10_000), "startingOffsetsByTimestampStrategy": "latest"})
    assert table is None
    table, _, _ = read_in_process({"path": path, "endingTimestamp": str(T0 + 10_000)})  # no match: to the end
    assert _offsets(table)[-1] == 264


def test_subscriptions_and_internal_topics() -> None:
    def topics(**opts: str) -> set[str]:
        table, _, _ = read_in_process({"path": str(BHEEM), **opts})
        return set() if table is None else set(table.column("topic").to_pylist())

    assert topics() == {"cities"}
    assert topics(includeInternalTopics="true") == {"cities", "__consumer_offsets"}
    assert topics(subscribe="__consumer_offsets") == {"__consumer_offsets"}
    assert topics(subscribePattern="__.*") == set()
    assert topics(subscribePattern="__.*", includeInternalTopics="true") == {"__consumer_offsets"}
    table, _, _ = read_in_process({"path": str(BHEEM), "assign": '{"__consumer_offsets": [0, 49], "cities": [0]}'})
    assert {(t, p) for t, p in zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), strict=True)} == {
        ("__consumer_offsets", 0), ("cities", 0)  # partition 49 holds no records
    }


def test_offsets_beyond_what_is_on_disk_are_data_loss(tmp_path, golden, caplog) -> None:  # noqa: ANN001 - fixtures
    copy_segments(LOGDIR / "golden-0", tmp_path / "golden-0", [51, 102])
    path = str(tmp_path / "golden-0")
    cases = [
        ({"startingOffsets": '{"golden": {"0": 10}}'}, "offsets 10 to 50 of golden-0 are not on disk", list(range(51, 146))),
        ({"endingOffsets": '{"golden": {"0": 500}}'}, "ending offset 500 of golden-0 is beyond the log end offset 146", list(range(51, 146))),
        ({"assign": '{"golden": [0, 7]}'}, "partition golden-7 is named in the options but not found", list(range(51, 146))),
    ]
    for opts, message, offsets in cases:
        with pytest.raises(DataLossError, match=message):
            read_in_process({"path": path, **opts})
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="kafkalog_spark"):
            table, _, _ = read_in_process({"path": path, "failOnDataLoss": "false", **opts})
        assert message in caplog.text
        want = [o for o in offsets if ("golden", 0, o) in golden]
        assert _offsets(table) == want


def _corrupt_copy(tmp: Path, position: int) -> Path:
    part = tmp / "golden-0"
    shutil.copytree(LOGDIR / "golden-0", part)
    log = part / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[position] ^= 0xFF
    log.write_bytes(bytes(data))
    return part


def test_corrupt_batches(tmp_path, golden, caplog) -> None:  # noqa: ANN001 - fixtures
    # the CRC field of the batch at byte 1294 (offsets 35..37): only the checksum is wrong
    bad_crc = _corrupt_copy(tmp_path / "crc", 1294 + 17)
    with pytest.raises(CrcMismatchError, match=r"00000000000000000000.log, position 1294, offset 35: record batch is corrupt"):
        read_in_process({"path": str(bad_crc)})
    table, _, _ = read_in_process({"path": str(bad_crc), "verifyCrc": "false", "includeHeaders": "true"})
    assert_same_rows(rows_of(table), golden)
    with caplog.at_level(logging.WARNING, logger="kafkalog_spark"):
        table, _, _ = read_in_process({"path": str(bad_crc), "ignoreCorruptFiles": "true"})
    assert "skipping the rest of" in caplog.text and "00000000000000000000.log from byte 1294" in caplog.text
    assert _offsets(table) == [o for (_, _, o) in sorted(golden) if o < 35 or o >= 51]

    # a byte inside the gzip payload of the batch at byte 258 (offsets 7..13): it cannot be decompressed
    bad_gzip = _corrupt_copy(tmp_path / "gzip", 258 + 61 + 20)
    with pytest.raises(DecompressionError, match="position 258, offset 7"):
        read_in_process({"path": str(bad_gzip), "verifyCrc": "false"})
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kafkalog_spark"):
        table, _, _ = read_in_process({"path": str(bad_gzip), "verifyCrc": "false", "ignoreCorruptFiles": "true"})
    assert "00000000000000000000.log from byte 258" in caplog.text
    assert _offsets(table) == [o for (_, _, o) in sorted(golden) if o < 7 or o >= 51]


def test_metadata_columns(dump) -> None:  # noqa: ANN001 - fixture
    table, _, _ = read_in_process({"path": f"{LOGDIR / 'golden-0'},{LOGDIR / 'legacy-0'}", "includeMetadata": "true"})
    assert table.schema.names[7:] == ["producerId", "producerEpoch", "sequence", "isTransactional", "leaderEpoch", "segment", "position"]
    got = {(r["topic"], r["offset"]): r for r in table.to_pylist()}
    checked = 0
    for b in dump_batches(dump, "golden-0/") + dump_batches(dump, "legacy-0/"):
        if b.get("isControlBatch", False):
            continue
        for rec in b["records"]:
            row = got[(b["file"].split("-")[0], rec["offset"])]
            assert (row["producerId"], row["producerEpoch"], row["sequence"], row["isTransactional"], row["leaderEpoch"]) == (
                b.get("producerId", -1), b.get("producerEpoch", -1), rec["sequence"], b.get("isTransactional", False), b.get("partitionLeaderEpoch", -1),
            )
            assert row["segment"].endswith(b["file"]) and row["position"] == b["position"]
            checked += 1
    assert checked == table.num_rows == 259 + 63  # golden-0 also holds 6 control records


def test_read_committed_stream_ends_at_the_last_stable_offset() -> None:
    ds = KafkaLogDataSource({"path": str(LOGDIR / "transactional-0"), "isolationlevel": "read_committed", "startingoffsets": "earliest"})
    reader = ds.streamReader(ds.schema())
    start = reader.initialOffset()
    assert start == {"transactional": {"0": 0}}
    assert reader.latestOffset(start, ReadMaxRows(50)) == {"transactional": {"0": 50}}
    end = reader.latestOffset(start, None)
    assert end == {"transactional": {"0": 136}}  # the oldest open transaction starts at 136
    slices = [s for p in reader.partitions(start, end) for s in p.slices]
    assert slices and all(s.hi is not None and s.hi <= 136 for s in slices)
    assert any(s.aborted for s in slices)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"startingOffsets": "latest"}, "starting offset can't be latest for batch queries"),
        ({"endingOffsets": '{"golden": {"0": -2}}'}, "ending offset can't be earliest"),
        ({"subscribe": "golden", "assign": '{"golden": [0]}'}, "at most one of subscribe, subscribePattern and assign"),
        ({"startingOffsets": "{bad"}, "not valid JSON"),
        ({"isolationLevel": "serializable"}, "read_uncommitted or read_committed"),
        ({"maxBytesPerPartition": "0"}, "must be positive"),
        ({"openCostInBytes": "-1"}, "openCostInBytes must be zero or more"),
        ({"minPartitions": "0"}, "minPartitions must be positive"),
        ({"startingOffsets": '{"golden": {"0": 9}}', "endingOffsets": '{"golden": {"0": 3}}'}, "after its ending offset"),
        ({"failOnDataLoss": "maybe"}, "must be true or false"),
    ],
)
def test_invalid_options(options: dict, message: str) -> None:
    with pytest.raises(SourceOptionError, match=message):
        read_in_process({"path": str(LOGDIR / "golden-0"), **options})


def test_errors_and_projection_through_spark(spark, tmp_path) -> None:  # noqa: ANN001 - fixtures
    projected = spark.read.format("kafkalog").schema("offset bigint, value binary").load(str(LOGDIR / "golden-0"))
    table = projected.toArrow()
    assert table.schema.names == ["offset", "value"] and table.num_rows == 259
    assert projected.where("offset > 100000").count() == 0  # no input partition at all
    copy_segments(LOGDIR / "golden-0", tmp_path / "golden-0", [51])
    lossy = spark.read.format("kafkalog").option("startingOffsets", '{"golden": {"0": 0}}').load(str(tmp_path / "golden-0"))
    with pytest.raises(PySparkException, match="DataLossError.*offsets 0 to 50 of golden-0 are not on disk"):
        lossy.count()
    bad = _corrupt_copy(tmp_path / "crc", 1294 + 17)
    with pytest.raises(PySparkException, match=r"CrcMismatchError: .*00000000000000000000.log, position 1294, offset 35"):
        spark.read.format("kafkalog").load(str(bad)).count()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or (os.cpu_count() or 1) < 2, reason="needs CPU affinity and 2 CPUs")
def test_min_partitions_default_is_the_cpus_the_process_may_run_on() -> None:
    """Without a session's settings, a source plans for the CPUs available to the process (a
    container's or ``taskset``'s limit, ``os.sched_getaffinity``), as the CLI's ``-j`` does, not the
    machine's CPU count: a planner started on one CPU of several plans for one."""
    import subprocess
    import sys

    code = "from kafkalog_spark.source import SessionDefaults; print(SessionDefaults().min_partitions)"
    one = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    assert one.stdout.strip() == "1"
