"""``__consumer_offsets`` (offset commits, group metadata and the newer group record types) and
``__share_group_state``, both written by a coordinator in the same key/value form.

Every key starts with an int16, the record type (0/1 offset commit, 2 classic group metadata,
3-8 consumer groups of KIP-848, 9-15 share groups, 16 consumer-group regular expressions); the key
body is read at that version. A value starts with its own int16 version; a null value is a
tombstone. kafka-dump-log ``--offsets-decoder`` prints the key as ``{"type":"<type>","data":{...}}``
and the value as ``{"version":"<version>","data":{...}}`` (both numbers as text), ``<DELETE>`` for a
tombstone; in a classic group whose protocol type is ``consumer`` each member's subscription and
assignment bytes are replaced by their decoded consumer-protocol form when they parse.
``--share-group-state-decoder`` reads ``__share_group_state`` the same way (record types 0
ShareSnapshot, 1 ShareUpdate); Kafka 4.0 labels the value's version ``"type"`` as well. The record
types and layouts of each release are its data file's (:mod:`kafkalog.internal.messages`).
"""

from __future__ import annotations

import struct
from typing import Any

from kafkalog.internal.errors import (
    InternalRecordError,
    MalformedInternalRecordError,
    UnknownRecordTypeError,
    UnknownRecordVersionError,
)
from kafkalog.internal.messages import messages_of
from kafkalog.internal.releases import NEWEST, Release
from kafkalog.internal.result import Decoded
from kafkalog.internal.schemas import Message
from kafkalog.internal.wire import MessageReadError, Reader, message_json, read_message

__all__ = ["decode_coordinator_record", "decode_offsets_record", "decode_share_state_record", "decode_consumer_protocol"]

_I16 = struct.Struct(">h")


def decode_consumer_protocol(data: bytes, message: Message) -> dict[str, Any] | None:
    """A member's subscription or assignment (int16 version, then ``message``) as Kafka's JSON,
    or ``None`` when it does not parse (kafka-dump-log then keeps the base64 bytes)."""
    try:
        r = Reader(data)
        version = r.int16()
        return message_json(message, version, read_message(message, version, r))
    except MessageReadError:
        return None


def _group_metadata_json(data: dict[str, Any], raw: dict[str, Any], release: Release) -> dict[str, Any]:
    if data.get("protocolType") != "consumer":
        return data
    m = messages_of(release)
    for member, raw_member in zip(data.get("members") or (), raw.get("members") or (), strict=True):
        for field, message in (("subscription", m.consumer_subscription), ("assignment", m.consumer_assignment)):
            if field in member and raw_member.get(field) is not None:
                decoded = decode_consumer_protocol(raw_member[field], message)
                if decoded is not None:
                    member[field] = decoded
    return data


def decode_coordinator_record(
    key: bytes | None,
    value: bytes | None,
    offset: int,
    registry: dict[int, tuple[Message, Message]],
    topic_word: str,
    value_label: str,
    release: Release,
) -> Decoded:
    """A coordinator record (key: int16 record type + key fields; value: int16 version + value
    fields) with the record types of ``registry``, as ``release``'s coordinator record parsers print
    it: the value's version labelled ``value_label``; ``topic_word`` names the topic in the error for
    a record without a key. The key is read at the version that is its record type where the key
    message has it (4.0's keys), else at its only version (4.1 on: one key message per type)."""
    if key is None:
        raise MalformedInternalRecordError(
            f"Failed to decode message at offset {offset} using {topic_word} decoder (message had a missing key)",
            offset=offset,
        )

    def error(cls: type[InternalRecordError], detail: str) -> InternalRecordError:
        return cls(detail, kafka_text=f"Error at offset {offset}, skipping. {detail}", offset=offset)

    if len(key) < 2:
        raise error(MalformedInternalRecordError, "Could not read version from key's buffer.")
    rtype = _I16.unpack_from(key, 0)[0]
    messages = registry.get(rtype)
    if messages is None:
        raise UnknownRecordTypeError(
            f"unknown record type {rtype} in the key",
            kafka_text=f"Unknown record type {rtype} at offset {offset}, skipping.", offset=offset,
        )
    key_msg, value_msg = messages
    key_version = rtype if rtype in key_msg.valid else key_msg.valid.lo
    try:
        key_raw = read_message(key_msg, key_version, Reader(key, 2))
    except MessageReadError as e:
        raise error(
            MalformedInternalRecordError,
            f"Could not read record with version {rtype} from key's buffer due to: {e.kafka_message}.",
        ) from None
    key_obj = {"type": str(rtype), "data": message_json(key_msg, key_version, key_raw)}
    if value is None:
        return Decoded(key_obj, None, key_msg.name, None, rtype, None)
    if len(value) < 2:
        raise error(MalformedInternalRecordError, "Could not read version from value's buffer.")
    version = _I16.unpack_from(value, 0)[0]
    try:
        value_raw = read_message(value_msg, version, Reader(value, 2))
    except MessageReadError as e:
        cls = UnknownRecordVersionError if version not in value_msg.valid else MalformedInternalRecordError
        raise error(cls, f"Could not read record with version {version} from value's buffer due to: {e.kafka_message}.") from None
    data = message_json(value_msg, version, value_raw)
    if value_msg.name == "GroupMetadataValue":
        data = _group_metadata_json(data, value_raw, release)
    return Decoded(key_obj, {value_label: str(version), "data": data}, key_msg.name, value_msg.name, rtype, version)


def decode_offsets_record(key: bytes | None, value: bytes | None, offset: int = -1, release: Release = NEWEST) -> Decoded:
    """Decode one ``__consumer_offsets`` record as ``release``'s kafka-dump-log ``--offsets-decoder`` does."""
    return decode_coordinator_record(
        key, value, offset, messages_of(release).group_coordinator, "offset topic", "version", release
    )


def decode_share_state_record(key: bytes | None, value: bytes | None, offset: int = -1, release: Release = NEWEST) -> Decoded:
    """Decode one ``__share_group_state`` record as ``release``'s ``--share-group-state-decoder`` does.
    Kafka 4.0's ShareGroupStateMessageParser labels the value's version ``"type"``, as it does the
    key's record type (``{"type":"0","data":{...}}``); from 4.1 it writes ``"version"``."""
    label = "type" if release < (4, 1) else "version"
    return decode_coordinator_record(
        key, value, offset, messages_of(release).share_coordinator, "share group state topic", label, release
    )
