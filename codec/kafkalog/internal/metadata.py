"""``__cluster_metadata`` and KRaft snapshots: the metadata record envelope and its records.

A metadata record has no key. Its value is an unsigned varint frame version (only 1 exists),
an unsigned varint record type (api key), an unsigned varint record version, then the record at
that version, which must end exactly at the end of the value. kafka-dump-log
``--cluster-metadata-decoder`` prints ``payload: {"type":"<TYPE_NAME>","version":N,"data":{...}}``.
"""

from __future__ import annotations

from typing import Any

from kafkalog.internal.errors import MalformedInternalRecordError, UnknownRecordTypeError, UnknownRecordVersionError
from kafkalog.internal.messages import messages_of
from kafkalog.internal.releases import NEWEST, Release
from kafkalog.internal.result import Decoded
from kafkalog.internal.schemas import Message
from kafkalog.internal.wire import MessageReadError, Reader, message_json, read_message

__all__ = ["decode_metadata_record", "decode_metadata_value", "read_frame"]


def _short(r: Reader, entity: str) -> int:
    try:
        val = r.uvarint()
    except MessageReadError:
        raise MalformedInternalRecordError(f"Error while reading {entity}") from None
    if val > 0x7FFF:
        raise MalformedInternalRecordError(f"Value for {entity} was too large.")
    return ((val + 0x8000) & 0xFFFF) - 0x8000  # a varint past 2^31 is a negative Java int, cast to short


def read_frame(value: bytes, records: dict[int, tuple[str, Message]]) -> tuple[int, int, str, Message, dict[str, Any]]:
    """Read one framed record (Kafka's AbstractApiMessageSerde.read) whose api keys are ``records``:
    (api key, version, type name, message, the message read). Raises :class:`InternalRecordError`
    subclasses worded as Kafka's exceptions are, with no location: callers add it."""
    r = Reader(value)
    frame = _short(r, "frame version")
    if frame == 0:
        raise UnknownRecordVersionError(
            "Could not deserialize metadata record with frame version 0. Note that upgrades from the preview "
            "release of KRaft in 2.8 to newer versions are not supported."
        )
    if frame != 1:
        raise UnknownRecordVersionError(
            f"Could not deserialize metadata record due to unknown frame version {frame}(only frame version 1 is supported)"
        )
    api_key = _short(r, "type")
    version = _short(r, "version")
    entry = records.get(api_key)
    if entry is None:
        raise UnknownRecordTypeError(f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}")
    type_name, message = entry
    java = f"Failed to deserialize record with type {api_key}"
    if version not in message.valid:
        raise UnknownRecordVersionError(f"{type_name} has no version {version} (known: {message.valid})", kafka_text=java)
    try:
        raw = read_message(message, version, r)
    except MessageReadError as e:
        raise MalformedInternalRecordError(f"{java} ({type_name} v{version}): {e.kafka_message}", kafka_text=java) from None
    if r.remaining > 0:
        raise MalformedInternalRecordError(f"Found {r.remaining} byte(s) of garbage after {api_key}")
    return api_key, version, type_name, message, raw


def decode_metadata_value(value: bytes, release: Release = NEWEST) -> Decoded:
    """Decode one metadata record value with ``release``'s record types (raises
    :class:`InternalRecordError` subclasses, with no location: callers add it)."""
    api_key, version, type_name, message, raw = read_frame(value, messages_of(release).metadata)
    obj = {"type": type_name, "version": version, "data": message_json(message, version, raw)}
    return Decoded(None, obj, None, message.name, api_key, version)


def decode_metadata_record(key: bytes | None, value: bytes | None, offset: int = -1, release: Release = NEWEST) -> Decoded:
    """Decode one ``__cluster_metadata`` record as kafka-dump-log ``--cluster-metadata-decoder``
    does; errors carry Kafka's text (``Error at <offset>, skipping. <message>``)."""
    del key  # metadata records have no key
    try:
        if value is None:
            raise MalformedInternalRecordError("null")
        return decode_metadata_value(value, release)
    except (MalformedInternalRecordError, UnknownRecordTypeError, UnknownRecordVersionError) as e:
        e.kafka_text = f"Error at {offset}, skipping. {e.kafka_text or e.message}"
        e.text_part = "payload"
        raise e.located(offset=offset) from None
