"""Record batches of every magic: readers, builders and the record model."""

from kafkalog.format.records.control import ControlType, EndTxnMarker
from kafkalog.format.records.legacy import LegacyBatch, LegacyBatchBuilder
from kafkalog.format.records.record import Header, LegacyRecord, Record, TimestampType
from kafkalog.format.records.stream import Batch, LogReader, TornTail, read_batches
from kafkalog.format.records.v2 import RecordBatch, RecordBatchBuilder

__all__ = [
    "Batch",
    "ControlType",
    "EndTxnMarker",
    "Header",
    "LegacyBatch",
    "LegacyBatchBuilder",
    "LegacyRecord",
    "LogReader",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "TimestampType",
    "TornTail",
    "read_batches",
]
