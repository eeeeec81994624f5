"""The messages each Kafka release writes to its internal topics, read from the release's data file.

``kafkalog/internal/data/messages-<X.Y>.json`` holds, for one release line, every message layout
the decoders read (:class:`~kafkalog.internal.schemas.Message`) and which record type or api key
each topic gives them. ``golden/jvm`` writes it with that release's own jars (``Schemas.java``,
``./run goldens``): the record types come from the release's classes by reflection
(``CoordinatorRecordType``, ``MetadataRecordType``, ``ControlRecordType``), each message's valid
versions from its generated class, and its fields from the message spec bundled beside the class,
which keeps the field names the generated ``*JsonConverter`` classes print. Supporting a new release
is regenerating its file, not editing a table.

A release's file is read the first time a decoder asks for that release (:func:`messages_of`), so
start-up reads none and a run reads only the releases it decodes.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

from kafkalog.internal.releases import NEWEST, Release
from kafkalog.internal.schemas import NULL, F, Message

__all__ = ["DATA_DIR", "ReleaseMessages", "data_file", "messages_of"]

#: Where the data files are (inside the package, so wheels carry them).
DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

_INTS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})


@dataclass(frozen=True)
class ReleaseMessages:
    """One release line's messages, by topic (see the module's description)."""

    #: the release the file was generated from, e.g. ``"4.1.2"``
    release: str
    #: every message, by Kafka's name
    messages: dict[str, Message]
    #: ``__consumer_offsets``: record type (the key's leading int16) -> (key message, value message);
    #: the key is read at the version that is its record type, the value at its own leading int16
    group_coordinator: dict[int, tuple[Message, Message]]
    #: ``__share_group_state``, as ``group_coordinator``
    share_coordinator: dict[int, tuple[Message, Message]]
    #: ``__transaction_state``, as ``group_coordinator`` (one type, 0)
    transaction_coordinator: dict[int, tuple[Message, Message]]
    #: ``__cluster_metadata``: api key -> (MetadataRecordType name, message); framed as
    #: :func:`kafkalog.internal.metadata.read_frame` reads
    metadata: dict[int, tuple[str, Message]]
    #: ``__remote_log_metadata``: api key -> (the storage module's MetadataRecordType name, message)
    remote_log_metadata: dict[int, tuple[str, Message]]
    #: KRaft control records: ControlRecordType id -> message (read at version 0, written at the
    #: version its own ``Version`` field holds)
    control: dict[int, Message]
    #: the consumer protocol's subscription and assignment (embedded in classic group metadata)
    consumer_subscription: Message
    consumer_assignment: Message


def data_file(release: Release) -> str:
    """The path of ``release``'s data file."""
    return os.path.join(DATA_DIR, f"messages-{release[0]}.{release[1]}.json")


def _default(spec: dict[str, Any]) -> Any:
    """A spec field's ``default`` as :class:`F` takes it (``None``: Kafka's rule for the type)."""
    d = spec.get("default")
    if d is None or d == "":
        return None
    if d == "null":
        return NULL
    t = spec["type"]
    if t in _INTS:
        return d if isinstance(d, int) else int(d, 0)
    if t == "bool":
        return d if isinstance(d, bool) else d == "true"
    if t == "float64":
        return float(d)
    if t == "uuid":
        return base64.urlsafe_b64decode(d + "==")
    return d


def _field(spec: dict[str, Any]) -> F:
    # a field without "versions" exists in its tagged versions (Kafka's FieldSpec)
    versions = spec.get("versions", spec.get("taggedVersions"))
    return F(
        spec["name"],
        spec["type"],
        versions,
        nullable=spec.get("nullableVersions"),
        tag=int(spec["tag"]) if "tag" in spec else None,
        tagged=spec.get("taggedVersions"),
        default=_default(spec),
        flexible=spec.get("flexibleVersions"),
        fields=[_field(f) for f in spec["fields"]] if "fields" in spec else None,
    )


def _message(name: str, spec: dict[str, Any]) -> Message:
    return Message(
        name,
        spec["validVersions"],
        flexible=spec["flexibleVersions"],
        fields=[_field(f) for f in spec["fields"]],
        structs={s["name"]: [_field(f) for f in s["fields"]] for s in spec.get("commonStructs", ())},
    )


@cache
def messages_of(release: Release = NEWEST) -> ReleaseMessages:
    """``release``'s messages, read from its data file once (:func:`data_file`)."""
    with open(data_file(release), encoding="utf-8") as f:
        doc = json.load(f)
    messages = {name: _message(name, spec) for name, spec in doc["messages"].items()}

    def pairs(rows: list[list[Any]]) -> dict[int, tuple[Message, Message]]:
        return {t: (messages[k], messages[v]) for t, k, v in rows}

    def named(rows: list[list[Any]]) -> dict[int, tuple[str, Message]]:
        return {t: (type_name, messages[m]) for t, type_name, m in rows}

    subscription, assignment = doc["consumerProtocol"]
    return ReleaseMessages(
        release=doc["release"],
        messages=messages,
        group_coordinator=pairs(doc["groupCoordinator"]),
        share_coordinator=pairs(doc["shareCoordinator"]),
        transaction_coordinator=pairs(doc["transactionCoordinator"]),
        metadata=named(doc["metadata"]),
        remote_log_metadata=named(doc["remoteLogMetadata"]),
        control={t: messages[m] for t, _, m in doc["control"]},
        consumer_subscription=messages[subscription],
        consumer_assignment=messages[assignment],
    )
