"""Analytics views over Kafka's internal topics at rest (built on ``decodeInternalTopics``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["consumer_offsets"]


def consumer_offsets(spark: SparkSession, *paths: str) -> DataFrame:
    """Each consumer group's latest committed offset per topic-partition, from ``__consumer_offsets``.

    Columns: ``group``, ``topic``, ``partition``, ``committedOffset``, ``leaderEpoch``,
    ``metadata``, ``commitTimestamp`` (timestamp), ``source`` (the ``__consumer_offsets`` partition
    and offset of the commit). A group's records all live in one ``__consumer_offsets`` partition,
    so the last record per (group, topic, partition) in offset order is the current commit; a
    tombstone there means the offset was deleted, and the row is dropped.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    raw = (
        spark.read.format("kafkalog")
        .option("subscribe", "__consumer_offsets")
        .option("decodeInternalTopics", "true")
        .load(list(paths) if len(paths) > 1 else paths[0])
    )
    key = F.get_json_object("decoded", "$.key")
    commits = raw.where(F.get_json_object(key, "$.type").isin("0", "1")).select(
        F.get_json_object(key, "$.data.group").alias("group"),
        F.get_json_object(key, "$.data.topic").alias("topic"),
        F.get_json_object(key, "$.data.partition").cast("int").alias("partition"),
        F.get_json_object("decoded", "$.value").alias("v"),
        F.col("partition").alias("sourcePartition"),
        F.col("offset").alias("sourceOffset"),
    )
    last = Window.partitionBy("group", "topic", "partition").orderBy(F.col("sourcePartition"), F.col("sourceOffset").desc())
    latest = commits.withColumn("rank", F.row_number().over(last)).where("rank = 1 AND v IS NOT NULL")
    return latest.select(
        "group",
        "topic",
        "partition",
        F.get_json_object("v", "$.data.offset").cast("bigint").alias("committedOffset"),
        F.get_json_object("v", "$.data.leaderEpoch").cast("int").alias("leaderEpoch"),
        F.get_json_object("v", "$.data.metadata").alias("metadata"),
        F.timestamp_millis(F.get_json_object("v", "$.data.commitTimestamp").cast("bigint")).alias("commitTimestamp"),
        F.concat_ws(":", F.col("sourcePartition").cast("string"), F.col("sourceOffset").cast("string")).alias("source"),
    )
