"""Internal topics in Spark: the decoded JSON column and the consumer_offsets view."""

from __future__ import annotations

import json

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
