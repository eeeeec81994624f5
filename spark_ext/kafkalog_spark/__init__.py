"""PySpark data source ``kafkalog``: read Kafka partition directories as Spark's Kafka source reads topics.

>>> import kafkalog_spark
>>> kafkalog_spark.register(spark)                                   # doctest: +SKIP
>>> spark.read.format("kafkalog").load("/var/lib/kafka/data")        # doctest: +SKIP

See :mod:`kafkalog_spark.source` for the schema and :mod:`kafkalog_spark.options` for the options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkalog_spark.errors import DataLossError, LayoutError, SourceOptionError, WorkerPythonError
from kafkalog_spark.source import KafkaLogDataSource, session_defaults, source_schema
from kafkalog_spark.views import consumer_offsets

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DataLossError",
    "KafkaLogDataSource",
    "LayoutError",
    "SourceOptionError",
    "WorkerPythonError",
    "consumer_offsets",
    "records_to_arrow",
    "register",
    "source_schema",
]


def __getattr__(name: str) -> Any:
    """``records_to_arrow``, imported on first use: it loads the compiled decoder, which the
    Python processes Spark plans in do not need."""
    if name == "records_to_arrow":
        from kafkalog_spark.arrow import records_to_arrow

        return records_to_arrow
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(spark: SparkSession, *, check_workers: bool = True) -> None:
    """Register the ``kafkalog`` format with ``spark``, enable Python filter pushdown and let the
    default save mode append.

    First, for a local master, it checks that the interpreters Spark starts Python workers with can
    import ``kafkalog_spark`` (:func:`kafkalog_spark.workers.check_workers`): a job run as
    ``.venv/bin/python job.py`` without the venv activated has workers running ``python3`` from
    ``PATH``, and gets :class:`WorkerPythonError` naming ``PYSPARK_PYTHON`` and the interpreter to
    set it to, instead of a pickling traceback at the first read. ``check_workers=False`` skips it.

    Spark only calls a Python source's ``pushFilters`` with
    ``spark.sql.python.filterPushdown.enabled=true``, and fails reads of a source that defines it
    when the setting is off, so registering sets it. Spark's default save mode (``errorifexists``)
    appends, as with Spark's Kafka sink (:func:`kafkalog_spark.writer.append_by_default`). The
    session's file-source planning settings (``spark.sql.files.maxPartitionBytes``,
    ``openCostInBytes``, ``minPartitionNum``, the default parallelism) are read now and travel with
    the registered source, since planning runs in a Python worker that cannot ask the session:
    register again after changing them.
    """
    from kafkalog_spark.writer import append_by_default  # the writer loads the compiled partitioner: not at import

    if check_workers:
        from kafkalog_spark.workers import check_workers as check

        check(spark)
    defaults = session_defaults(spark)

    class SessionKafkaLogDataSource(KafkaLogDataSource):
        """``format("kafkalog")`` with this session's planning settings (pickled by value: defined here)."""

        session_defaults = defaults

    spark.dataSource.register(SessionKafkaLogDataSource)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    append_by_default()
