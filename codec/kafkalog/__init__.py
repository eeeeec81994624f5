"""kafkalog: read, verify and write Apache Kafka's on-disk log files without a broker.

Start with :class:`LogReader` (one ``.log`` file), the builders :class:`RecordBatchBuilder`
and :class:`LegacyBatchBuilder`, and the CLI (``kafkalog --help``). SPEC.md defines the formats.
"""

from .compression import Codec
from .errors import (
    BuildError,
    CorruptIndexError,
    CorruptRecordError,
    CrcMismatchError,
    DecompressionError,
    InvalidRecordError,
    KafkaLogError,
    LogNotFoundError,
    ReadOnlyLogError,
    TruncatedError,
    UnsupportedCompressionError,
    UnsupportedMagicError,
)
from .records import (
    ControlType,
    LegacyBatch,
    LegacyBatchBuilder,
    LegacyRecord,
    LogReader,
    Record,
    RecordBatch,
    RecordBatchBuilder,
    TimestampType,
    TornTail,
    read_batches,
)

__version__ = "0.1.0"

__all__ = [
    "BuildError",
    "Codec",
    "ControlType",
    "CorruptIndexError",
    "CorruptRecordError",
    "CrcMismatchError",
    "DecompressionError",
    "InvalidRecordError",
    "KafkaLogError",
    "LegacyBatch",
    "LegacyBatchBuilder",
    "LegacyRecord",
    "LogNotFoundError",
    "LogReader",
    "ReadOnlyLogError",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "TimestampType",
    "TornTail",
    "TruncatedError",
    "UnsupportedCompressionError",
    "UnsupportedMagicError",
    "read_batches",
]
