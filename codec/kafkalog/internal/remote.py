"""``__remote_log_metadata`` (tiered storage, KIP-405): the events of TopicBasedRemoteLogMetadataManager.

A record has no key (kafka-dump-log ignores one). Its value is framed as a metadata record is
(:func:`kafkalog.internal.metadata.read_frame`: frame version 1, api key, version, the message),
with the storage module's own api keys: 0 RemoteLogSegmentMetadataRecord, 1
RemoteLogSegmentMetadataUpdateRecord, 2 RemotePartitionDeleteMetadataRecord, 3
RemoteLogSegmentMetadataSnapshotRecord.

kafka-dump-log ``--remote-log-metadata-decoder`` prints no JSON here: it turns the message into
Kafka's Java object (RemoteLogMetadataSerde and its transforms) and prints that object's
``toString()``, e.g. ``RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=..., state=...}``; when
the transform or the object's constructor refuses the message, it prints ``Error at offset N,
skipping. <the exception's message>``. :func:`decode_remote_log_metadata_record` gives that text
(``value_text``) and, as the value object, Kafka's JSON of the message:
``{"type":"<TYPE_NAME>","version":N,"data":{...}}`` as for ``__cluster_metadata``.
"""

from __future__ import annotations

from typing import Any

from kafkalog.internal.errors import InternalRecordError, MalformedInternalRecordError
from kafkalog.internal.messages import messages_of
from kafkalog.internal.metadata import read_frame
from kafkalog.internal.releases import NEWEST, Release
from kafkalog.internal.result import Decoded
from kafkalog.internal.schemas import uuid_text
from kafkalog.internal.wire import message_json

__all__ = ["decode_remote_log_metadata_record", "remote_log_metadata_text"]

#: RemoteLogSegmentState ids -> names (storage/api .../RemoteLogSegmentState.java)
SEGMENT_STATES = {0: "COPY_SEGMENT_STARTED", 1: "COPY_SEGMENT_FINISHED", 2: "DELETE_SEGMENT_STARTED", 3: "DELETE_SEGMENT_FINISHED"}
#: RemotePartitionDeleteState ids -> names (storage/api .../RemotePartitionDeleteState.java)
PARTITION_DELETE_STATES = {0: "DELETE_PARTITION_MARKED", 1: "DELETE_PARTITION_STARTED", 2: "DELETE_PARTITION_FINISHED"}

#: What the JVM says (helpful NullPointerException messages, Java 14+) when kafka-dump-log's
#: parser calls ``record.value.remaining`` on a record without a value.
NULL_VALUE_MESSAGE = (
    'Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
    '"org.apache.kafka.common.record.Record.value()" is null'
)


class _Refused(Exception):
    """Kafka's Java object refuses the message; ``args[0]`` is the exception's message (``null``
    when it has none)."""


def _topic_id_partition(tip: dict[str, Any]) -> str:
    # TopicIdPartition.toString: topicId:topic-partition (Uuid.toString is URL-safe base64)
    return f"{uuid_text(tip['id'])}:{tip['name']}-{tip['partition']}"


def _segment_id(entry: dict[str, Any]) -> str:
    return f"RemoteLogSegmentId{{topicIdPartition={_topic_id_partition(entry['topicIdPartition'])}, id={uuid_text(entry['id'])}}}"


def _custom(b: bytes | None) -> str:
    return "Optional.empty" if b is None else f"Optional[CustomMetadata{{{len(b)} bytes}}]"


def _segment_state(state_id: int) -> str:
    name = SEGMENT_STATES.get(state_id)
    if name is None:  # RemoteLogSegmentState.forId gives null; the constructor's requireNonNull stops
        raise _Refused("state can not be null")
    return name


def _leader_epochs(entries: list[dict[str, Any]]) -> str:
    """A HashMap filled in order (a repeated epoch keeps its last offset), copied into a TreeMap."""
    epochs: dict[int, int] = {}
    for e in entries:
        epochs[e["leaderEpoch"]] = e["offset"]
    if not epochs:
        raise _Refused("segmentLeaderEpochs can not be null or empty")
    return "{" + ", ".join(f"{k}={epochs[k]}" for k in sorted(epochs)) + "}"


def _segment_metadata(d: dict[str, Any]) -> str:
    start, end = d["startOffset"], d["endOffset"]
    # the checks of RemoteLogSegmentMetadata's constructor, in its order
    if start < 0:
        raise _Refused(f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative")
    if end < start:
        raise _Refused(f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than startOffset = {start}")
    epochs = _leader_epochs(d["segmentLeaderEpochs"])
    state = _segment_state(d["remoteLogSegmentState"])  # the update applied by the transform
    return (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}, startOffset={start}, "
        f"endOffset={end}, brokerId={d['brokerId']}, maxTimestampMs={d['maxTimestampMs']}, "
        f"eventTimestampMs={d['eventTimestampMs']}, segmentLeaderEpochs={epochs}, "
        f"segmentSizeInBytes={d['segmentSizeInBytes']}, customMetadata={_custom(d['customMetadata'])}, "
        f"state={state}, txnIdxEmpty={'true' if d['txnIndexEmpty'] else 'false'}}}"
    )


def _segment_update(d: dict[str, Any]) -> str:
    state = _segment_state(d["remoteLogSegmentState"])
    return (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={_segment_id(d['remoteLogSegmentId'])}, "
        f"customMetadata={_custom(d['customMetadata'])}, state={state}, "
        f"eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}"
    )


def _partition_delete(d: dict[str, Any]) -> str:
    state = PARTITION_DELETE_STATES.get(d["remotePartitionDeleteState"])
    if state is None:  # Objects.requireNonNull(state) without a message
        raise _Refused("null")
    return (
        f"RemotePartitionDeleteMetadata{{topicPartition={_topic_id_partition(d['topicIdPartition'])}, state={state}, "
        f"eventTimestampMs={d['eventTimestampMs']}, brokerId={d['brokerId']}}}"
    )


def _segment_snapshot(d: dict[str, Any]) -> str:
    state = _segment_state(d["remoteLogSegmentState"])  # checked before the epochs
    epochs = _leader_epochs(d["segmentLeaderEpochs"])
    return (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={uuid_text(d['segmentId'])}, startOffset={d['startOffset']}, "
        f"endOffset={d['endOffset']}, maxTimestampMs={d['maxTimestampMs']}, segmentLeaderEpochs={epochs}, "
        f"segmentSizeInBytes={d['segmentSizeInBytes']}, customMetadata={_custom(d['customMetadata'])}, state={state}}}"
    )


_TEXT = {0: _segment_metadata, 1: _segment_update, 2: _partition_delete, 3: _segment_snapshot}


def remote_log_metadata_text(api_key: int, raw: dict[str, Any]) -> str:
    """The ``toString()`` of the Java object Kafka builds from a message read with api key
    ``api_key`` (``raw`` as :func:`kafkalog.internal.wire.read_message` gives it). Raises
    :class:`MalformedInternalRecordError` with Kafka's exception message when Kafka refuses it."""
    try:
        return _TEXT[api_key](raw)
    except _Refused as e:
        raise MalformedInternalRecordError(f"{e.args[0]}", kafka_text=e.args[0]) from None


def decode_remote_log_metadata_record(
    key: bytes | None, value: bytes | None, offset: int = -1, release: Release = NEWEST
) -> Decoded:
    """Decode one ``__remote_log_metadata`` record as kafka-dump-log ``--remote-log-metadata-decoder``
    does; errors carry Kafka's text (``Error at offset <offset>, skipping. <message>``), with
    ``release``'s record types. Every release from 4.0 to 4.4 prints these records alike."""
    del key  # Kafka's parser reads the value only
    try:
        if value is None:
            raise MalformedInternalRecordError("the record has no value", kafka_text=NULL_VALUE_MESSAGE)
        api_key, version, type_name, message, raw = read_frame(value, messages_of(release).remote_log_metadata)
        text = remote_log_metadata_text(api_key, raw)
    except InternalRecordError as e:
        e.kafka_text = f"Error at offset {offset}, skipping. {e.kafka_text or e.message}"
        e.text_part = "payload"
        raise e.located(offset=offset) from None
    obj = {"type": type_name, "version": version, "data": message_json(message, version, raw)}
    return Decoded(None, obj, None, message.name, api_key, version, value_text=text)
