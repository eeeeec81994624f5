"""Internal topics in Spark: the decoded JSON column and the consumer_offsets view."""

from __future__ import annotations

import json

import pytest

import kafkalog_spark
from helpers import GOLDEN
from kafkalog.tools.groups import read_groups

SET = GOLDEN / "real" / "zk-danielmorales9-kafkafun" / "data" / "kafka"


def test_decoded_column_matches_kafkas_decoders(spark) -> None:  # noqa: ANN001
    """decoded JSON equals kafka-dump-log's --offsets-decoder key/payload for the same records."""
    import gzip

    kafka: dict[tuple[str, int], tuple[dict, dict | None]] = {}
    part = None
    with gzip.open(GOLDEN / "real" / "expected-decoded" / "zk-danielmorales9-kafkafun.txt.gz", "rt") as f:
        for line in f:
            if line.startswith("Dumping "):
                part = line.split("/")[-2]
            elif line.startswith("| offset: ") and " key: " in line:
                off = int(line.split()[2])
                key = json.loads(line.split(" key: ", 1)[1].split(" payload: ", 1)[0])
                payload = line.split(" payload: ", 1)[1].strip() if " payload: " in line else None
                kafka[(part, off)] = (key, None if payload in (None, "<DELETE>") else json.loads(payload))
    rows = (
        spark.read.format("kafkalog").option("subscribe", "__consumer_offsets").option("decodeInternalTopics", "true")
        .option("kafkaVersion", "4.0")  # the dump it is compared with is Kafka 4.0's
        .load(str(SET)).select("partition", "offset", "decoded").collect()
    )
    assert len(rows) == len(kafka) > 100
    for r in rows:
        d = json.loads(r.decoded)
        key, value = kafka[(f"__consumer_offsets-{r.partition}", r.offset)]
        assert d["key"] == key
        assert d["value"] == value


def test_consumer_offsets_view_agrees_with_groups(spark) -> None:  # noqa: ANN001
    view = {(r.group, r.topic, r.partition): r.committedOffset for r in kafkalog_spark.consumer_offsets(spark, str(SET)).collect()}
    expected = {(g.group_id, o.topic, o.partition): o.offset for g in read_groups(SET).groups for o in g.offsets}
    assert view == expected and len(view) > 0


def test_decoded_column_for_kafka_4_internal_topics(spark, tmp_path) -> None:  # noqa: ANN001
    """__share_group_state and __remote_log_metadata (Kafka 4.0): the decoded column carries what
    kafka-dump-log's --share-group-state-decoder printed, and for __remote_log_metadata the record
    whose toString Kafka printed (its state and offsets as in Kafka's text)."""
    import re
    import shutil

    base = GOLDEN / "kafka" / "internal"
    shutil.copytree(base / "sharegroupstate-0", tmp_path / "__share_group_state-0")
    shutil.copytree(base / "remotelogmetadata-0", tmp_path / "__remote_log_metadata-0")
    kafka: dict[tuple[str, int], tuple[str | None, str]] = {}
    for name, topic in (("sharegroupstate-0", "__share_group_state"), ("remotelogmetadata-0", "__remote_log_metadata")):
        for line in (base / "dump" / f"{name}-decoded.txt").read_text(encoding="utf-8").splitlines():
            if line.startswith("| offset: "):
                rest = line.split(" headerKeys: [] ", 1)[1]
                key = rest[len("key: "):].split(" payload: ", 1)[0] if rest.startswith("key: ") else None
                kafka[(topic, int(line.split()[2]))] = (key, rest.split("payload: ", 1)[1])
    rows = (
        spark.read.format("kafkalog").option("subscribe", "__share_group_state,__remote_log_metadata")
        .option("decodeInternalTopics", "true").option("kafkaVersion", "4.0").load(str(tmp_path)).select("topic", "offset", "decoded").collect()
    )
    assert len(rows) == len(kafka) == 19
    for r in rows:
        d = json.loads(r.decoded)
        key, payload = kafka[(r.topic, r.offset)]
        if r.topic == "__share_group_state":
            assert d["key"] == json.loads(key)
            assert d["value"] == (None if payload == "<DELETE>" else json.loads(payload))
        else:
            assert d["key"] is None and key is None
            state = re.search(r"state=(\w+)", payload).group(1)
            data = d["value"]["data"]
            if payload.startswith("RemotePartitionDeleteMetadata{"):
                assert ["DELETE_PARTITION_MARKED", "DELETE_PARTITION_STARTED", "DELETE_PARTITION_FINISHED"][data["remotePartitionDeleteState"]] == state
            else:
                names = ["COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"]
                assert names[data["remoteLogSegmentState"]] == state
            assert f"eventTimestampMs={data['eventTimestampMs']}," in payload


@pytest.mark.rule("R-KVER-01")
def test_kafka_version_auto_reads_each_segment_as_the_release_that_wrote_it() -> None:
    """``kafkaVersion=auto`` (as ``--kafka-version auto``): Kafka 4.0.2's internal topics decode as
    Kafka 4.0 prints them, which differs from the newest release's text for some records; the
    option takes ``auto`` in any case and still refuses a release it does not know."""
    from kafkalog_spark.errors import SourceOptionError
    from kafkalog_spark.options import parse_options

    from ._support import read_in_process

    def decoded(version: str | None) -> list[tuple]:
        opts = {"path": str(GOLDEN / "kafka-4.0.2"), "subscribe": "__consumer_offsets,__transaction_state,__share_group_state",
                "decodeInternalTopics": "true", **({"kafkaVersion": version} if version else {})}
        table = read_in_process(opts)[0]
        assert table is not None
        return [(r["topic"], r["partition"], r["offset"], r["decoded"]) for r in table.to_pylist()]

    auto, as_40, newest = decoded("auto"), decoded("4.0"), decoded(None)
    assert auto == as_40 != newest and len(auto) == 50
    assert parse_options({"path": "x", "kafkaversion": "AUTO"}).kafka_version == "auto"
    with pytest.raises(SourceOptionError, match="kafkaVersion"):
        parse_options({"path": "x", "kafkaversion": "automatic"})
