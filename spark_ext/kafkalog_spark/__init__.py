"""PySpark data source ``kafkalog``: read Kafka partition directories as Spark's Kafka source reads topics.

>>> import kafkalog_spark
>>> kafkalog_spark.register(spark)                                   # doctest: +SKIP
>>> spark.read.format("kafkalog").load("/var/lib/kafka/data")        # doctest: +SKIP

See :mod:`kafkalog_spark.source` for the schema and :mod:`kafkalog_spark.options` for the options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .arrow import records_to_arrow
from .errors import DataLossError, LayoutError, SourceOptionError
from .source import KafkaLogDataSource, source_schema
from .views import consumer_offsets
from .writer import append_by_default

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DataLossError",
    "KafkaLogDataSource",
    "LayoutError",
    "SourceOptionError",
    "consumer_offsets",
    "records_to_arrow",
    "register",
    "source_schema",
]


def register(spark: SparkSession) -> None:
    """Register the ``kafkalog`` format with ``spark``, enable Python filter pushdown and let the
    default save mode append.

    Spark only calls a Python source's ``pushFilters`` with
    ``spark.sql.python.filterPushdown.enabled=true``, and fails reads of a source that defines it
    when the setting is off, so registering sets it. Spark's default save mode (``errorifexists``)
    appends, as with Spark's Kafka sink (:func:`kafkalog_spark.writer.append_by_default`).
    """
    spark.dataSource.register(KafkaLogDataSource)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    append_by_default()
