"""Exceptions raised for bad input: every one names the file, byte position and offset.

The hierarchy mirrors the names Kafka gives these conditions (``CorruptRecordException``,
``InvalidRecordException``, ...) so that a message can be traced back to Kafka's behaviour.
"""

from __future__ import annotations

import errno


class KafkaLogError(ValueError):
    """Base class of every error kafkalog raises for bad input.

    ``file`` is the path (or ``None`` for an in-memory buffer), ``position`` the byte position in
    that file where the problem starts, ``offset`` the Kafka offset concerned when known.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        position: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.position = position
        self.offset = offset
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.position is not None:
            where.append(f"position {self.position}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def located(
        self, *, file: str | None = None, position: int | None = None, offset: int | None = None
    ) -> KafkaLogError:
        """Fill in location fields that are still unknown (used as errors travel up the stack)."""
        if self.file is None and file is not None:
            self.file = file
        if self.position is None and position is not None:
            self.position = position
        if self.offset is None and offset is not None:
            self.offset = offset
        self.args = (self._render(),)
        return self


class CorruptRecordError(KafkaLogError):
    """The bytes do not form a valid batch or record (Kafka: CorruptRecordException)."""


class InvalidRecordError(CorruptRecordError):
    """A structurally readable batch whose contents break a format rule (Kafka: InvalidRecordException)."""


class CrcMismatchError(CorruptRecordError):
    """The stored CRC does not match the bytes it covers."""


class TruncatedError(CorruptRecordError):
    """The input ends inside a batch, record or field."""


class UnsupportedMagicError(CorruptRecordError):
    """A batch declares a magic (format version) other than 0, 1 or 2."""


class UnsupportedCompressionError(CorruptRecordError):
    """A batch declares a compression codec Kafka does not define, or one its magic cannot carry."""


class DecompressionError(CorruptRecordError):
    """A compressed payload could not be decompressed (bad framing or data, or over the size limit)."""


class BuildError(KafkaLogError):
    """Input to a builder (canonical JSON or API call) cannot be written as Kafka would write it."""


class CorruptIndexError(KafkaLogError):
    """An index, time index, transaction index, snapshot or checkpoint file is malformed."""


class InvalidOffsetError(KafkaLogError):
    """An index append whose offset (or timestamp) does not follow the last entry (Kafka: InvalidOffsetException)."""


class IndexOffsetOverflowError(KafkaLogError):
    """An offset that cannot be stored relative to a segment's base offset (Kafka: IndexOffsetOverflowException,
    LogSegmentOffsetOverflowException)."""


class CleaningAbortedError(KafkaLogError):
    """A cleaner pass stopped because it split a segment whose offsets overflow (Kafka:
    LogCleaningAbortedException); the next pass cleans the split segments."""


class IndexFullError(KafkaLogError):
    """An append to an offset or time index with no free slot (Kafka: IllegalArgumentException in AbstractIndex)."""


class UnexpectedAppendOffsetError(KafkaLogError):
    """A follower append whose first offset is below the log end offset (Kafka: UnexpectedAppendOffsetException)."""


class OffsetsOutOfOrderError(KafkaLogError):
    """A follower append whose batches' offsets do not increase (Kafka: OffsetsOutOfOrderException)."""


class RecordBatchTooLargeError(KafkaLogError):
    """An append larger than segment.bytes or a batch larger than max.message.bytes (Kafka:
    RecordBatchTooLargeException, RecordTooLargeException)."""


class OffsetOutOfRangeError(KafkaLogError):
    """A read below the log start offset or above the log end offset (Kafka: OffsetOutOfRangeException)."""


class ProducerStateError(KafkaLogError):
    """A batch that breaks the producer's epoch, sequence or transaction state (Kafka: InvalidProducerEpochException,
    OutOfOrderSequenceException, InvalidTxnStateException, TransactionCoordinatorFencedException)."""


class InvalidTopicError(KafkaLogError):
    """A topic name Kafka refuses (Kafka: InvalidTopicException): a writer does not create its directory."""


class InconsistentTopicIdError(KafkaLogError):
    """A topic id that differs from the one in ``partition.metadata`` (Kafka: InconsistentTopicIdException)."""


class MetaPropertiesError(CorruptIndexError):
    """A ``meta.properties`` whose version is unknown or that lacks a field its version requires
    (Kafka: the RuntimeException of MetaProperties.Builder)."""


class BrokerRejectedBatchError(InvalidRecordError):
    """A batch a broker refuses from a producer: bad count or offset range, a control batch, a
    producer id without a sequence, or a magic unlike the first batch's (Kafka: InvalidRecordException
    from LogValidator.validateBatch; R-WR-07)."""


class ReadOnlyLogError(KafkaLogError):
    """A write (append, roll, truncation, retention, a state file) asked of a log opened read-only:
    open it with ``Log.open(path, writable=True)`` to load and change it as a broker does."""


class TieredStorageError(KafkaLogError):
    """An object a tiered-storage plug-in wrote is missing, malformed or cannot be decrypted (SPEC §10);
    ``file`` names the object (path or URL) and ``position`` the byte in it."""


class ManifestError(TieredStorageError):
    """A segment manifest (``.rsm-manifest``) of an unknown version, or one that is not the JSON the plug-in writes."""


class RemoteObjectMissingError(TieredStorageError):
    """One of a tiered segment's objects (``.log``, ``.indexes``, ``.rsm-manifest``) is not in the store."""


class TruncatedObjectError(TieredStorageError):
    """An object ends before the bytes its manifest places in it: a chunk or index part is missing."""


class CorruptChunkError(TieredStorageError):
    """A chunk or index part that fails its AES-GCM tag, is not a zstd frame, or gives another size than the manifest says."""


class DataKeyError(TieredStorageError):
    """A segment's data key cannot be unwrapped: no private key with its key-pair id, or one that does not fit."""


class LogNotFoundError(KafkaLogError, FileNotFoundError):
    """A partition directory given to a reader does not exist (nothing is created for it).

    Also a :class:`FileNotFoundError`, with ``filename`` set to the path."""

    def __init__(self, message: str, *, file: str | None = None, position: int | None = None, offset: int | None = None) -> None:
        super().__init__(message, file=file, position=position, offset=offset)
        self.errno = errno.ENOENT
        self.strerror = "No such file or directory"
        self.filename = file

    def __str__(self) -> str:
        return self._render()


class DataLossError(KafkaLogError):
    """Offsets that a partition directory's own files say existed but that no ``.log`` holds (SPEC
    §6.8): a ``.log`` missing beside its index files or snapshot, or a log that ends before its
    snapshots, indexes or checkpoints say it did. ``file`` is the partition directory, ``offset``
    the first missing offset; ``gaps`` lists every missing range (:class:`kafkalog.log.gaps.Gap`).
    Readers raise it unless gaps are allowed (``--allow-gaps``, Spark's ``failOnDataLoss=false``)."""

    def __init__(
        self, message: str, *, file: str | None = None, position: int | None = None, offset: int | None = None,
        gaps: list[object] | None = None,
    ) -> None:
        super().__init__(message, file=file, position=position, offset=offset)
        self.gaps = list(gaps or [])


class ReplicaDivergenceError(DataLossError):
    """Two copies of one topic-partition (replicas under two brokers' data dirs, or two paths given)
    hold different records at the same offsets, as after an unclean leader election: Kafka keeps one
    history and truncates the other, so one of them is lost (SPEC §6.9). ``file`` names both copies,
    ``offset`` the first offset at which they differ, and ``gaps`` the diverged ranges
    (:class:`kafkalog.log.gaps.Divergence`). Readers raise it unless gaps are allowed, when they read
    the copy SPEC §6.9 chooses, with a warning."""


class SchemaError(KafkaLogError):
    """A key or value in Confluent's Schema Registry formats that cannot be decoded (SPEC appendix
    "Schema Registry wire format"). Names the topic, partition and offset of the record and the schema
    id when known, so that the one record can be found again; ``--on-undecodable`` turns it into a warning."""

    def __init__(
        self, message: str, *, topic: str | None = None, partition: int | None = None, offset: int | None = None,
        schema_id: int | None = None, file: str | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.schema_id = schema_id
        super().__init__(message, file=file, offset=offset)

    def _render(self) -> str:
        where = []
        if self.topic is not None:
            where.append(f"topic {self.topic}")
        if self.partition is not None:
            where.append(f"partition {self.partition}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        if self.schema_id is not None:
            where.append(f"schema id {self.schema_id}")
        if self.file is not None:
            where.insert(0, str(self.file))
        return f"{' '.join(where)}: {self.message}" if where else self.message

    def at(self, topic: str, partition: int, offset: int) -> SchemaError:
        """This error located at one record (decoders raise it before they know the record)."""
        self.topic, self.partition, self.offset = topic, partition, offset
        self.args = (self._render(),)
        return self


class UnknownSchemaError(SchemaError):
    """A value's schema id is in none of the schema sources (the backup's ``_schemas`` topic, schema files, a registry URL)."""


class UndecodableValueError(SchemaError):
    """A value's bytes do not decode with its format or schema (no magic byte 0, cut short, not valid Avro, JSON, ...)."""


class RegistryUnreachableError(SchemaError):
    """A Schema Registry URL that does not answer, or answers with something other than the REST API's JSON."""
