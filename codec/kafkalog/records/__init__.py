"""Record batches of every magic: readers, builders and the record model."""

from .control import ControlType, EndTxnMarker
from .legacy import LegacyBatch, LegacyBatchBuilder
from .record import Header, LegacyRecord, Record, TimestampType
from .stream import Batch, LogReader, TornTail, read_batches
from .v2 import RecordBatch, RecordBatchBuilder

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
