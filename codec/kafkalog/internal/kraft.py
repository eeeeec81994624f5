"""Control records: KRaft's LeaderChange, SnapshotHeader, SnapshotFooter, KRaftVersion and
KRaftVoters (in ``__cluster_metadata`` and KRaft snapshots), and transaction markers.

The key is int16 version + int16 type. Kafka reads a KRaft control value at version 0 and writes
its JSON at the version stored in the message's own ``Version`` field. kafka-dump-log prints
``SnapshotHeader {...}``, ``SnapshotFooter {...}``, ``KRaftVersion {...}`` and ``KRaftVoters {...}``
after a control record's metadata (with or without a decoder), ``endTxnMarker: COMMIT
coordinatorEpoch: N`` for markers, and ``controlType: LEADER_CHANGE(2)`` for the others; from Kafka
4.1 a LEADER_CHANGE prints ``LeaderChange: {...}``.
"""

from __future__ import annotations

from kafkalog.errors import KafkaLogError
from kafkalog.format.records.control import ControlType, control_type_of, parse_end_txn_marker
from kafkalog.internal.errors import MalformedInternalRecordError, UnknownRecordTypeError, UnknownRecordVersionError
from kafkalog.internal.messages import messages_of
from kafkalog.internal.releases import NEWEST, Release
from kafkalog.internal.result import Decoded
from kafkalog.internal.wire import MessageReadError, Reader, kafka_json, message_json, read_message

__all__ = ["control_record_text", "decode_control_record"]

#: The label kafka-dump-log (DumpLogSegments) prints before a KRaft control record's JSON, by type.
_LABELS = {2: "LeaderChange", 3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}

#: The control types kafka-dump-log prints as JSON after their label.
_PRINTED = {3, 4, 5, 6}


def decode_control_record(key: bytes | None, value: bytes | None, offset: int = -1, release: Release = NEWEST) -> Decoded:
    """Decode a control record with ``release``'s control messages; ``key`` is
    ``{"version":v,"type":id}``, ``value`` the message's JSON (for markers
    ``{"version":v,"coordinatorEpoch":e}``). Unknown control types raise :class:`UnknownRecordTypeError`."""
    try:
        ctype, type_id = control_type_of(key)
        assert key is not None
        key_obj = {"version": int.from_bytes(key[0:2], "big", signed=True), "type": type_id}
        if ctype in (ControlType.ABORT, ControlType.COMMIT):
            m = parse_end_txn_marker(ctype, value)
            return Decoded(
                key_obj, {"version": m.version, "coordinatorEpoch": m.coordinator_epoch},
                ctype.name, "EndTxnMarker", type_id, m.version,
            )
    except KafkaLogError as e:
        raise MalformedInternalRecordError(f"bad control record: {e.message}", offset=offset) from None
    message = messages_of(release).control.get(type_id)
    if message is None:
        raise UnknownRecordTypeError(
            f"unknown control record type {type_id}", kafka_text=f"controlType: {ctype.name}({type_id})", offset=offset
        )
    if value is None:
        raise MalformedInternalRecordError(f"{_LABELS[type_id]} control record without a value", offset=offset)
    try:
        raw = read_message(message, 0, Reader(value))
    except MessageReadError as e:
        raise MalformedInternalRecordError(f"could not read {message.name}: {e.kafka_message}", offset=offset) from None
    version = raw["version"]
    if version not in message.valid:
        raise UnknownRecordVersionError(
            f"{message.name} declares version {version} (known: {message.valid})", offset=offset
        )
    return Decoded(key_obj, message_json(message, version, raw), ctype.name, message.name, type_id, version)


def control_record_text(key: bytes | None, value: bytes | None, offset: int = -1, release: Release = NEWEST) -> str:
    """What ``release``'s kafka-dump-log appends to a control record's metadata line (with its leading space)."""
    ctype, type_id = control_type_of(key)
    if ctype in (ControlType.ABORT, ControlType.COMMIT):
        m = parse_end_txn_marker(ctype, value)
        return f" endTxnMarker: {ctype.name} coordinatorEpoch: {m.coordinator_epoch}"
    if type_id in _PRINTED:
        d = decode_control_record(key, value, offset, release)
        return f" {_LABELS[type_id]} {kafka_json(d.value)}"
    if type_id == ControlType.LEADER_CHANGE.value and release >= (4, 1):
        return f" LeaderChange: {kafka_json(decode_control_record(key, value, offset, release).value)}"
    return f" controlType: {ctype.name}({type_id})"
