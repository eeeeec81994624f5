"""Errors raised by the Spark source, as subclasses of kafkalog's :class:`~kafkalog.KafkaLogError`."""

from __future__ import annotations

from kafkalog.errors import DataLossError as _KafkaLogDataLossError
from kafkalog.errors import KafkaLogError

__all__ = ["DataLossError", "LayoutError", "SourceOptionError", "WorkerPythonError"]


class SourceOptionError(KafkaLogError):
    """A source option that is unknown in this context, malformed or contradicts another option."""


class LayoutError(KafkaLogError):
    """A path that does not hold a Kafka log layout the source can read (``file`` names it)."""


class DataLossError(_KafkaLogDataLossError):
    """Requested offsets are not on disk (deleted by retention, never copied, or beyond the log end;
    also :class:`kafkalog.errors.DataLossError`, which the partition's own files prove: SPEC §6.8).

    Raised only with ``failOnDataLoss=true`` (the default); with ``false`` the gap is skipped and
    logged as a warning, as Spark's Kafka source does.
    """


class WorkerPythonError(RuntimeError):
    """Spark's Python workers run an interpreter that cannot import ``kafkalog_spark`` (or what it
    needs): the message names the interpreter, the setting that chose it (``PYSPARK_PYTHON``, ...)
    and the one to use instead (see :mod:`kafkalog_spark.workers`). Not a
    :class:`~kafkalog.errors.KafkaLogError`: no data is at fault."""
