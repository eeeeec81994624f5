"""kafkalog: read, verify and write Apache Kafka's on-disk log files without a broker.

Start with :class:`LogReader` (one ``.log`` file), :func:`scan` (whole data dirs as Arrow), the
builders :class:`RecordBatchBuilder` and :class:`LegacyBatchBuilder`, and the CLI (``kafkalog --help``). SPEC.md defines the formats.
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
from kafkalog.format.files import set_dir_lister
from kafkalog.format.primitives import crc32c, set_small_crc32c
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
    """The compiled record walker of the fast path, loaded when a batch's records are first decoded
    (the plain decoder when the extension is not built or is off)."""
    from kafkalog.fast import objects

    return objects  # type: ignore[return-value]


def _small_crc32c(data: bytes | bytearray | memoryview) -> int:
    """The format layer's CRC-32C of a small buffer: the compiled core's code when it is there (no
    import of the crc32c package for a small command), else the package's."""
    from kafkalog.fast import compiled

    ext = compiled("_native")
    f = ext.crc32c_of if ext is not None else None
    set_small_crc32c(f)
    return (f or crc32c)(data)


set_record_decoder(_compiled_record_decoder)
set_small_crc32c(_small_crc32c)


def __getattr__(name: str) -> object:
    """``kafkalog.scan``, imported when first used: the dataset layer, and pyarrow when it is called,
    are more than ``import kafkalog`` loads."""
    if name == "scan":
        from kafkalog.dataset.scan import scan

        return scan
    raise AttributeError(f"module 'kafkalog' has no attribute {name!r}")


def _compiled_block_compressors() -> BlockCompressors:
    """The compiled lz4 and snappy compressors (the same bytes as kafkalog.format.compressors, which
    stand in when the extension was not built or KAFKALOG_NO_EXTENSIONS is set), loaded on first use."""
    from kafkalog import fast
    from kafkalog.format import compressors

    return fast.compiled("_compress") or compressors  # type: ignore[return-value]


set_block_compressors(_compiled_block_compressors)


def _compiled_dir_lister() -> object:
    """The listing of local directories in C (:mod:`kafkalog.fast._dirs`: planning lists every
    partition dir), loaded on first use; None (the plain listing) when it was not built or is off."""
    from kafkalog import fast

    ext = fast.compiled("_dirs")
    return None if ext is None else ext.list_dir


set_dir_lister(_compiled_dir_lister)  # type: ignore[arg-type]

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
    "scan",
]
