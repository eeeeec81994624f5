"""kafkalog: read, verify and write Apache Kafka's on-disk log files without a broker.

Start with :class:`LogReader` (one ``.log`` file), the builders :class:`RecordBatchBuilder`
and :class:`LegacyBatchBuilder`, and the CLI (``kafkalog --help``). SPEC.md defines the formats.
"""

from kafkalog.errors import (
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
from kafkalog.format.compression import BlockCompressors, Codec, set_block_compressors
from kafkalog.format.records import (
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
from kafkalog.format.records.v2 import RecordDecoder, set_record_decoder

__version__ = "0.1.0"


def _compiled_record_decoder() -> RecordDecoder:
    """The compiled record walker of the fast path, loaded when a batch's records are first decoded."""
    from kafkalog.fast import objects

    return objects  # type: ignore[return-value]


set_record_decoder(_compiled_record_decoder)


def _compiled_block_compressors() -> BlockCompressors:
    """The compiled lz4 and snappy compressors (the same bytes as kafkalog.format.compressors, which
    stand in when the extension was not built or KAFKALOG_NO_EXTENSIONS is set), loaded on first use."""
    from kafkalog import fast
    from kafkalog.format import compressors

    return fast.compiled("_compress") or compressors  # type: ignore[return-value]


set_block_compressors(_compiled_block_compressors)

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
