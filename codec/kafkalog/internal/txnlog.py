"""``__transaction_state``: one record per transactional id (TransactionLogKey/Value).

The key is an int16 version (0) and the transactional id; the value an int16 version (0, or 1 -
flexible, with tagged fields) and the transaction's state. The JSON objects follow Kafka's
console formatter for this topic (``{"version":N,"data":{...}}``, ``"unknown"`` data for a
version Kafka does not know); :attr:`Decoded.key_text`/``value_text`` are kafka-dump-log
``--transaction-log-decoder``'s text (``transaction_metadata::transactionalId=...`` and
``producerId:...,state=...,partitions=[...]``), as Kafka 4.0 prints them. From 4.1 kafka-dump-log
prints this topic as the other coordinator topics (``{"type":"0","data":{...}}`` /
``{"version":"1","data":{...}}``, with the tagged NextProducerEpoch), and 4.4 prints
``transactionStatus`` as the state's name.
"""

from __future__ import annotations

import struct
from typing import Any

from kafkalog.internal.errors import MalformedInternalRecordError, UnknownRecordVersionError
from kafkalog.internal.messages import messages_of
from kafkalog.internal.offsets import decode_coordinator_record
from kafkalog.internal.releases import NEWEST, Release
from kafkalog.internal.result import Decoded
from kafkalog.internal.wire import MessageReadError, Reader, message_json, read_message

__all__ = ["TRANSACTION_STATES", "decode_txn_record", "java_hash_set_order"]

_I16 = struct.Struct(">h")

#: Kafka's TransactionState by the id stored in ``TransactionStatus``.
TRANSACTION_STATES = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}


def _java_string_hash(s: str) -> int:
    h = 0
    for unit in range(0, len(b := s.encode("utf-16-be")), 2):
        h = (31 * h + (b[unit] << 8 | b[unit + 1])) & 0xFFFFFFFF
    return h


def _topic_partition_hash(topic: str, partition: int) -> int:
    return (31 * (31 + partition) + _java_string_hash(topic)) & 0xFFFFFFFF


def java_hash_set_order(items: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The iteration order of a hash set of (topic, partition) after adding ``items`` in order.

    kafka-dump-log prints a transaction's partitions from such a set: buckets of a table of 16
    that doubles past 3/4 full, indexed by the TopicPartition hash with its high half folded in;
    ascending bucket, insertion order inside a bucket.
    """
    seen: dict[tuple[str, int], None] = {}
    for it in items:
        seen.setdefault(it, None)
    uniq = list(seen)
    cap = 16
    while len(uniq) > cap * 3 // 4:
        cap *= 2

    def bucket(tp: tuple[str, int]) -> int:
        h = _topic_partition_hash(*tp)
        return (h ^ (h >> 16)) & (cap - 1)

    return sorted(uniq, key=bucket)  # sorted() is stable: insertion order within a bucket


def _txn_text(value: dict[str, Any]) -> str:
    status = value["transactionStatus"]
    state = TRANSACTION_STATES.get(status)
    if state is None:
        raise MalformedInternalRecordError(f"Unknown transaction state id {status} from the transaction status message")
    parts: list[tuple[str, int]] = []
    if state != "Empty":
        if value["transactionPartitions"] is None:
            raise MalformedInternalRecordError("transaction partitions are null in a non-Empty transaction")
        for p in value["transactionPartitions"]:
            parts.extend((p["topic"], i) for i in p["partitionIds"])
    partitions = ",".join(f"{t}-{p}" for t, p in java_hash_set_order(parts))
    return (
        f"producerId:{value['producerId']},producerEpoch:{value['producerEpoch']},state={state},"
        f"partitions=[{partitions}],txnLastUpdateTimestamp={value['transactionLastUpdateTimestampMs']},"
        f"txnTimeoutMs={value['transactionTimeoutMs']}"
    )


def _decode_as_coordinator(key: bytes | None, value: bytes | None, offset: int, release: Release) -> Decoded:
    """4.1 on: the coordinator records' JSON; from 4.4 with the state's name for ``transactionStatus``
    (a number Kafka has no state for stays a number, as text), in place."""
    registry = messages_of(release).transaction_coordinator
    d = decode_coordinator_record(key, value, offset, registry, "transaction log", "version", release)
    if release >= (4, 4) and d.value is not None:
        data = d.value["data"]
        status = data["transactionStatus"]
        data["transactionStatus"] = TRANSACTION_STATES.get(status, str(status))
    return d


def decode_txn_record(key: bytes | None, value: bytes | None, offset: int = -1, release: Release = NEWEST) -> Decoded:
    """Decode one ``__transaction_state`` record as ``release``'s kafka-dump-log does (raises
    :class:`InternalRecordError` subclasses)."""
    if release >= (4, 1):
        return _decode_as_coordinator(key, value, offset, release)
    key_message, value_message = messages_of(release).transaction_coordinator[0]
    if key is None or len(key) < 2:
        raise MalformedInternalRecordError("transaction log record without a readable key version", offset=offset)
    kver = _I16.unpack_from(key, 0)[0]
    if kver not in key_message.valid:
        raise UnknownRecordVersionError(
            f"unknown transaction log key version {kver}", kafka_text=f"unknown::version={kver}", offset=offset
        )
    try:
        key_raw = read_message(key_message, kver, Reader(key, 2))
    except MessageReadError as e:
        raise MalformedInternalRecordError(f"could not read the transaction log key: {e.kafka_message}", offset=offset) from None
    key_obj = {"version": kver, "data": message_json(key_message, kver, key_raw)}
    key_text = f"transaction_metadata::transactionalId={key_raw['transactionalId']}"
    if value is None:
        return Decoded(key_obj, None, key_message.name, None, kver, None, key_text=key_text)
    if len(value) < 2:
        raise MalformedInternalRecordError("transaction log value without a readable version", offset=offset)
    vver = _I16.unpack_from(value, 0)[0]
    if vver not in value_message.valid:
        raise UnknownRecordVersionError(f"Unknown version {vver} from the transaction log message value", offset=offset)
    try:
        value_raw = read_message(value_message, vver, Reader(value, 2))
    except MessageReadError as e:
        raise MalformedInternalRecordError(
            f"could not read the transaction log value (version {vver}): {e.kafka_message}", offset=offset
        ) from None
    try:
        value_text = _txn_text(value_raw)
    except MalformedInternalRecordError as e:
        raise e.located(offset=offset) from None
    value_obj = {"version": vver, "data": message_json(value_message, vver, value_raw)}
    return Decoded(
        key_obj, value_obj, key_message.name, value_message.name, kver, vver,
        key_text=key_text, value_text=value_text,
    )
