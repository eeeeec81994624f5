"""Decoders for the keys and values of Kafka's internal topics, as kafka-dump-log decodes them.

=========================  =======================  ===========================================
topic                      decoder name             kafka-dump-log flag
=========================  =======================  ===========================================
``__consumer_offsets``     ``offsets``              ``--offsets-decoder``
``__transaction_state``    ``transaction-log``      ``--transaction-log-decoder``
``__cluster_metadata``     ``cluster-metadata``     ``--cluster-metadata-decoder`` (also KRaft
                                                    snapshots ``NNN-NNN.checkpoint``)
``__share_group_state``    ``share-group-state``    ``--share-group-state-decoder``
``__remote_log_metadata``  ``remote-log-metadata``  ``--remote-log-metadata-decoder`` (its text
                                                    is the Java objects' ``toString()``)
=========================  =======================  ===========================================

Control records (transaction markers, KRaft LeaderChange/SnapshotHeader/SnapshotFooter/
KRaftVersion/KRaftVoters) are decoded whatever the topic (:func:`decode` with ``control=True``,
:func:`control_text`).

Entry points: :func:`decode_record` (``(key, value)`` JSON-able objects), :func:`decode` (a
:class:`Decoded` with Kafka's text too), :func:`record_text` / :func:`control_text` (the exact text
kafka-dump-log appends to a record line), :func:`decoded_fields` (for canonical JSON lines) and
:func:`decode_log` (every record of a file). Undecodable records raise an
:class:`InternalRecordError` subclass naming file, position (of the batch) and offset.

Each entry point takes ``release``: the Kafka release line (``"4.0"`` to ``"4.4"``, or a
``(major, minor)`` tuple) whose record types it reads and whose kafka-dump-log text it gives; the
default is the newest (:data:`NEWEST`). What changed from release to release:
:mod:`kafkalog.internal.releases`; each release's message layouts and record types are read from its
data file (:mod:`kafkalog.internal.messages`), generated with that release's jars.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kafkalog.errors import KafkaLogError
from kafkalog.format.files import PARTITION_DIR
from kafkalog.format.primitives import JAVA_UTF8
from kafkalog.format.records.record import Record
from kafkalog.format.records.stream import Batch, LogReader
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.internal.errors import (
    InternalRecordError,
    MalformedInternalRecordError,
    UnknownRecordTypeError,
    UnknownRecordVersionError,
)
from kafkalog.internal.kraft import control_record_text, decode_control_record
from kafkalog.internal.metadata import decode_metadata_record
from kafkalog.internal.offsets import decode_offsets_record, decode_share_state_record
from kafkalog.internal.releases import NEWEST, RELEASES, Release, parse_release
from kafkalog.internal.remote import decode_remote_log_metadata_record
from kafkalog.internal.result import Decoded
from kafkalog.internal.txnlog import decode_txn_record
from kafkalog.internal.wire import kafka_json

__all__ = [
    "DECODERS",
    "TOPIC_DECODERS",
    "Decoded",
    "DecodedRecord",
    "NEWEST",
    "RELEASES",
    "InternalRecordError",
    "MalformedInternalRecordError",
    "UnknownRecordTypeError",
    "UnknownRecordVersionError",
    "control_text",
    "decode",
    "decode_log",
    "decode_record",
    "decoded_fields",
    "decoder_for_path",
    "decoder_for_topic",
    "kafka_json",
    "parse_release",
    "record_text",
    "topic_of_path",
]

DecodeFn = Callable[[bytes | None, bytes | None, int, Release], Decoded]

#: Decoders by name (the names kafka-dump-log's flags use, without ``--`` and ``-decoder``).
DECODERS: dict[str, DecodeFn] = {
    "offsets": decode_offsets_record,
    "transaction-log": decode_txn_record,
    "cluster-metadata": decode_metadata_record,
    "share-group-state": decode_share_state_record,
    "remote-log-metadata": decode_remote_log_metadata_record,
}

#: The decoder for each internal topic.
TOPIC_DECODERS: dict[str, str] = {
    "__consumer_offsets": "offsets",
    "__transaction_state": "transaction-log",
    "__cluster_metadata": "cluster-metadata",
    "__share_group_state": "share-group-state",
    "__remote_log_metadata": "remote-log-metadata",
}

def topic_of_path(path: str | os.PathLike[str]) -> str | None:
    """The topic of a partition directory, or of a file inside one (``.../__consumer_offsets-7/x.log``)."""
    p = os.path.normpath(os.fspath(path))
    for name in (os.path.basename(p), os.path.basename(os.path.dirname(p))):
        m = PARTITION_DIR.match(name)
        if m:
            return m["topic"]
    return None


def decoder_for_topic(topic: str | None) -> str | None:
    """The decoder name for an internal topic, ``None`` for any other topic."""
    return TOPIC_DECODERS.get(topic) if topic else None


def decoder_for_path(path: str | os.PathLike[str]) -> str | None:
    """The decoder for a ``.log`` or KRaft snapshot by the partition directory it is in."""
    name = os.path.basename(os.fspath(path))
    if name == "bootstrap.checkpoint":
        return "cluster-metadata"
    return decoder_for_topic(topic_of_path(path))


def _choose(topic: str | None, decoder: str | None) -> str | None:
    name = decoder if decoder is not None else decoder_for_topic(topic)
    if name is not None and name not in DECODERS:
        raise ValueError(f"unknown decoder {name!r} (known: {', '.join(DECODERS)})")
    return name


def decode(
    topic: str | None,
    record: Record,
    *,
    decoder: str | None = None,
    control: bool = False,
    file: str | None = None,
    position: int | None = None,
    release: str | Release | None = None,
) -> Decoded:
    """Decode ``record`` of ``topic`` (or with the ``decoder`` named, whatever the topic), as Kafka
    ``release`` does (default: the newest).

    ``control`` says the record is in a control batch. Raises an :class:`InternalRecordError`
    subclass (with ``file``, ``position`` and the record's offset) when it cannot be decoded,
    and ``ValueError`` when neither the topic nor ``decoder`` selects a decoder, or ``release`` is
    not a known release.
    """
    line = parse_release(release)
    try:
        if control:
            return decode_control_record(record.key, record.value, record.offset, line)
        name = _choose(topic, decoder)
        if name is None:
            raise ValueError(f"no decoder for topic {topic!r}: pass decoder= one of {', '.join(DECODERS)}")
        return DECODERS[name](record.key, record.value, record.offset, line)
    except KafkaLogError as e:
        raise e.located(file=file, position=position, offset=record.offset) from None


def decode_record(
    topic: str | None,
    record: Record,
    *,
    decoder: str | None = None,
    control: bool = False,
    file: str | None = None,
    position: int | None = None,
    release: str | Release | None = None,
) -> tuple[Any, Any]:
    """``(key, value)`` of a record as JSON-able objects: ``json.dumps(obj, separators=(",", ":"),
    ensure_ascii=False)`` gives Kafka's JSON text (use :func:`kafka_json` for the exact text in
    every case: it also writes float64 and control characters as Kafka does). ``value`` is
    ``None`` for a tombstone. See :func:`decode` for the arguments and errors."""
    return decode(topic, record, decoder=decoder, control=control, file=file, position=position, release=release).as_tuple()


def _plain(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", JAVA_UTF8)  # Kafka's StringDecoder: new String(bytes, UTF_8)


def record_text(
    topic: str | None,
    record: Record,
    *,
    decoder: str | None = None,
    prefix: str = " ",
    file: str | None = None,
    position: int | None = None,
    release: str | Release | None = None,
) -> str:
    """The text ``release``'s kafka-dump-log prints for a (non-control) record's contents with the
    decoder of ``topic`` (or ``decoder``): ``{prefix}key: ... payload: ...``.

    ``prefix`` is what Kafka puts before ``key:`` - ``" "`` after the record metadata, ``"| "``
    with ``--skip-record-metadata``; ``payload:`` follows a single space, or from Kafka 4.3 on the
    prefix when no key text is printed. Topics without a
    decoder print key and value as UTF-8 text (Kafka's StringDecoder). Records Kafka's decoder
    reports as unreadable give Kafka's "Error at offset ..." / "Unknown record type ..." text;
    a record kafka-dump-log itself stops on (e.g. an offsets record without a key) raises.
    """
    name = _choose(topic, decoder)
    if name is None:
        key_text, value_text = _plain(record.key), _plain(record.value)
    else:
        try:
            d = DECODERS[name](record.key, record.value, record.offset, parse_release(release))
            key_text, value_text = d.key_text, d.value_text
        except InternalRecordError as e:
            if e.kafka_text is None:
                raise e.located(file=file, position=position, offset=record.offset) from None
            key_text, value_text = (e.kafka_text, None) if e.text_part == "key" else (None, e.kafka_text)
    out = ""
    if key_text is not None:
        out = f"{prefix}key: {key_text}"
    if value_text is not None:
        # Kafka 4.3's Java tool carries the prefix over to a payload with no key text before it
        # ("| payload:" with --skip-record-metadata); the Scala tool before it wrote " payload:"
        lead = prefix if key_text is None and parse_release(release) >= (4, 3) else " "
        out += f"{lead}payload: {value_text}"
    return out


def control_text(
    record: Record, *, file: str | None = None, position: int | None = None, release: str | Release | None = None
) -> str:
    """What ``release``'s kafka-dump-log appends to a control record's metadata line, e.g.
    `` SnapshotHeader {"version":0,...}``, `` endTxnMarker: COMMIT coordinatorEpoch: 0`` or
    `` controlType: LEADER_CHANGE(2)`` (4.0; `` LeaderChange: {...}`` from 4.1). Kafka prints it
    with or without a decoder."""
    try:
        return control_record_text(record.key, record.value, record.offset, parse_release(release))
    except KafkaLogError as e:
        raise e.located(file=file, position=position, offset=record.offset) from None


def decoded_fields(
    topic: str | None,
    record: Record,
    *,
    decoder: str | None = None,
    control: bool = False,
    file: str | None = None,
    position: int | None = None,
    release: str | Release | None = None,
) -> dict[str, Any]:
    """Fields to add to a record's canonical JSON line: ``decodedKey`` and ``decodedValue``, or
    ``decodeError`` (the message, with file, position and offset) when it cannot be decoded.
    Empty when the topic has no decoder and none is named."""
    if not control and _choose(topic, decoder) is None:
        return {}
    try:
        d = decode(topic, record, decoder=decoder, control=control, file=file, position=position, release=release)
    except InternalRecordError as e:
        return {"decodedKey": None, "decodedValue": None, "decodeError": str(e)}
    return {"decodedKey": d.key, "decodedValue": d.value}


@dataclass
class DecodedRecord:
    """One record of a file with its decoding (``decoded``) or the reason it has none (``error``)."""

    batch: Batch
    record: Record
    control: bool
    decoded: Decoded | None
    error: InternalRecordError | None


def decode_log(
    path: str | os.PathLike[str],
    *,
    topic: str | None = None,
    decoder: str | None = None,
    release: str | Release | None = None,
) -> Iterator[DecodedRecord]:
    """Every record of a ``.log`` or KRaft snapshot file, decoded with the decoder of its
    partition directory's topic (or ``topic``/``decoder``). Undecodable records come with their
    error instead of stopping the iteration; corrupt batches raise as :class:`LogReader` does."""
    path = os.fspath(path)
    if decoder is None and topic is None:
        decoder = decoder_for_path(path)
    if _choose(topic, decoder) is None:
        raise ValueError(f"{path}: not in an internal topic's directory: pass topic= or decoder=")
    with LogReader(path) as reader:
        for batch in reader.batches():
            control = isinstance(batch, RecordBatch) and batch.is_control
            for r in batch.records():
                try:
                    d = decode(topic, r, decoder=decoder, control=control, file=path, position=batch.position, release=release)
                    yield DecodedRecord(batch, r, control, d, None)
                except InternalRecordError as e:
                    yield DecodedRecord(batch, r, control, None, e)
