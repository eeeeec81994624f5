"""Byte layouts of the keys and values Kafka writes to its internal topics, declared once.

Kafka describes these records with "message specs" (JSON files in its source tree, turned into
Java classes at build time). This module declares the same layouts in a compact form of our own:
a :class:`Message` has valid versions, flexible versions and a list of :class:`F` fields, each
with its Kafka name, type, versions, nullable versions, tag/tagged versions and default. One
declaration covers every version Kafka has written; the reader in :mod:`kafkalog.internal`
interprets it, and :func:`construct_for` turns one (message, version) into a ``construct``
layout (for SPEC.md, ``explain`` and the tests, which check both agree).

Coverage: every version of every record type in Kafka's specs up to the 4.0 development line
(all releases 0.8-3.9), plus ClearElrRecord (metadata api key 28) and the consumer-group regular
expression record (type 16) of 4.0. Share-group records (early access) are declared as Kafka's
trunk of October 2024 has them. Streams-group records (types 17+, early access in 4.1) are not
declared: they, and any other unknown type or version, are reported as unknown, never guessed.

Sections: the ``__consumer_offsets`` records (group coordinator, record types 0-16, and the
consumer protocol subscription/assignment embedded in group metadata), ``__transaction_state``,
``__cluster_metadata`` records (by api key), KRaft control records, ``__share_group_state``,
``__remote_log_metadata``.

Wire rules (Kafka's protocol types): int8/16/32/64 big-endian two's complement; uint16/uint32
big-endian unsigned; float64 IEEE-754 big-endian; bool one byte (non-zero is true); uuid 16
bytes; in a *non-flexible* version a string is an int16 length (-1 null) then UTF-8, bytes and
arrays an int32 length (-1 null); in a *flexible* version all three use an unsigned varint of
length+1 (0 null), and every struct ends with tagged fields: an unsigned varint count, then per
field an unsigned varint tag, an unsigned varint size and the value. A nullable struct that is
not tagged starts with an int8 (-1 null, 1 present); a tagged one with an unsigned varint (0 null).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from construct import (
    Bytes,
    Construct,
    ConstructError,
    Flag,
    Float64b,
    Int8sb,
    Int16sb,
    Int16ub,
    Int32sb,
    Int32ub,
    Int64sb,
    Struct,
    VarInt,
    stream_read,
    stream_write,
)
from construct import (
    Container as _Container,
)

from kafkalog.format.primitives import JAVA_UTF8

__all__ = [
    "CONTROL_RECORDS",
    "CONSUMER_PROTOCOL_ASSIGNMENT",
    "CONSUMER_PROTOCOL_SUBSCRIPTION",
    "F",
    "GROUP_COORDINATOR_RECORDS",
    "INTERNAL_SCHEMAS",
    "KafkaArray",
    "KafkaNullableStruct",
    "KafkaTaggedFields",
    "KafkaValueError",
    "KafkaVarData",
    "METADATA_RECORDS",
    "Message",
    "NULL",
    "REMOTE_LOG_METADATA_RECORDS",
    "SHARE_COORDINATOR_RECORDS",
    "TRANSACTION_LOG_KEY",
    "TRANSACTION_LOG_VALUE",
    "Versions",
    "construct_for",
    "metadata_type_name",
    "uuid_text",
]

MAX_VERSION = 0x7FFF


class _Null:
    """The default "null" (distinct from "no default given")."""

    def __repr__(self) -> str:
        return "NULL"


#: A field whose default is null.
NULL: Any = _Null()


class Versions:
    """An inclusive version range: ``"3"``, ``"0-2"``, ``"1+"`` or ``"none"``."""

    __slots__ = ("lo", "hi")

    def __init__(self, spec: str | None) -> None:
        if spec is None or spec == "none":
            self.lo, self.hi = 1, 0
        elif spec.endswith("+"):
            self.lo, self.hi = int(spec[:-1]), MAX_VERSION
        elif "-" in spec:
            lo, hi = spec.split("-")
            self.lo, self.hi = int(lo), int(hi)
        else:
            self.lo = self.hi = int(spec)

    def __contains__(self, v: int) -> bool:
        return self.lo <= v <= self.hi

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"

    __repr__ = __str__


PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes"}
)
_INTS = frozenset({"int8", "int16", "uint16", "int32", "uint32", "int64"})
ZERO_UUID = bytes(16)


class F:
    """One field: Kafka's name and type, the versions it exists in, and how it is encoded.

    ``type`` is a primitive (:data:`PRIMITIVES`), a struct name, or ``[]`` + either for an array.
    ``nullable`` are the versions where it may be null; ``tag``/``tagged`` make it a tagged field
    in those versions; ``default`` is the value when absent (Kafka's rule when not given: 0,
    false, "", empty bytes/array, the zero UUID or a struct of defaults); ``flexible`` overrides the
    message's flexible versions for a string or bytes field. ``fields`` declares an inline struct.
    """

    __slots__ = (
        "name", "type", "versions", "nullable", "tag", "tagged", "default", "flexible", "fields",
        "json_name", "is_array", "elem", "struct",
    )

    def __init__(
        self,
        name: str,
        type: str,
        versions: str,
        *,
        nullable: str | None = None,
        tag: int | None = None,
        tagged: str | None = None,
        default: Any = None,
        flexible: str | None = None,
        fields: list[F] | None = None,
    ) -> None:
        self.name = name
        self.type = type
        self.versions = Versions(versions)
        self.nullable = Versions(nullable)
        self.tag = tag
        self.tagged = Versions(tagged)
        self.default = default
        self.flexible = Versions(flexible) if flexible is not None else None
        self.fields = fields
        #: the JSON key Kafka's converters use: the name with its first letter lowercased
        self.json_name = name[:1].lower() + name[1:]
        self.is_array = type.startswith("[]")
        self.elem = type[2:] if self.is_array else type
        self.struct: list[F] | None = None  # resolved by Message

    def present(self, version: int) -> bool:
        return version in self.versions

    def is_tagged(self, version: int) -> bool:
        return version in self.tagged and version in self.versions

    def default_value(self) -> Any:
        """The value Kafka gives this field when it is absent (a fresh object for mutable ones)."""
        d = self.default
        if d is NULL:
            return None
        if self.is_array:
            return []
        if self.struct is not None:
            return {f.json_name: f.default_value() for f in self.struct}
        if d is not None:
            return d
        t = self.type
        if t in _INTS:
            return 0
        if t == "bool":
            return False
        if t == "float64":
            return 0.0
        if t == "string":
            return ""
        if t == "bytes":
            return b""
        if t == "uuid":
            return ZERO_UUID
        raise ValueError(f"no default for type {t}")

    def __repr__(self) -> str:
        return f"F({self.name!r}, {self.type!r}, {str(self.versions)!r})"


class Message:
    """A message spec: name, valid versions, flexible versions, fields and named common structs."""

    __slots__ = ("name", "valid", "flexible", "fields", "structs")

    def __init__(
        self,
        name: str,
        valid: str,
        *,
        flexible: str,
        fields: list[F],
        structs: Mapping[str, list[F]] | None = None,
    ) -> None:
        self.name = name
        self.valid = Versions(valid)
        self.flexible = Versions(flexible)
        self.fields = fields
        self.structs = dict(structs or {})
        for fs in self.structs.values():
            self._resolve(fs)
        self._resolve(fields)

    def _resolve(self, fields: list[F]) -> None:
        for f in fields:
            if f.elem not in PRIMITIVES:
                f.struct = f.fields if f.fields is not None else self.structs[f.elem]
                if f.fields is not None:
                    self._resolve(f.fields)
            elif f.fields is not None:
                raise ValueError(f"{self.name}.{f.name}: a {f.type} field cannot have fields")

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def __repr__(self) -> str:
        return f"Message({self.name!r}, {str(self.valid)!r})"


def metadata_type_name(message_name: str) -> str:
    """Kafka's MetadataRecordType name of a metadata record: ``TopicRecord`` -> ``TOPIC_RECORD``.

    The rule (Kafka's snake-casing): an underscore goes before an upper-case letter that follows
    a lower-case one, so runs of capitals stay together (``KRaft`` -> ``KRAFT``).
    """
    out = []
    prev_upper = True
    for c in message_name:
        if c.isupper():
            if not prev_upper:
                out.append("_")
            out.append(c.lower())
            prev_upper = True
        else:
            out.append(c)
            prev_upper = False
    return "".join(out).upper()


# ================================================ __consumer_offsets (group coordinator)
# Keys are read at the version that is their record type (see GROUP_COORDINATOR_RECORDS).

OFFSET_COMMIT_KEY = Message(
    "OffsetCommitKey", "0-1", flexible="none",
    fields=[
        F("group", "string", "0-1"),
        F("topic", "string", "0-1"),
        F("partition", "int32", "0-1"),
    ],
)

OFFSET_COMMIT_VALUE = Message(
    "OffsetCommitValue", "0-4", flexible="4+",
    fields=[
        F("offset", "int64", "0+"),
        F("leaderEpoch", "int32", "3+", default=-1),
        F("metadata", "string", "0+"),
        F("commitTimestamp", "int64", "0+"),
        F("expireTimestamp", "int64", "1", default=-1),
    ],
)

GROUP_METADATA_KEY = Message(
    "GroupMetadataKey", "2", flexible="none",
    fields=[
        F("group", "string", "2"),
    ],
)

GROUP_METADATA_VALUE = Message(
    "GroupMetadataValue", "0-4", flexible="4+",
    fields=[
        F("protocolType", "string", "0+"),
        F("generation", "int32", "0+"),
        F("protocol", "string", "0+", nullable="0+"),
        F("leader", "string", "0+", nullable="0+"),
        F("currentStateTimestamp", "int64", "2+", default=-1),
        F("members", "[]MemberMetadata", "0+"),
    ],
    structs={
        "MemberMetadata": [
            F("memberId", "string", "0+"),
            F("groupInstanceId", "string", "3+", nullable="3+", default=NULL),
            F("clientId", "string", "0+"),
            F("clientHost", "string", "0+"),
            F("rebalanceTimeout", "int32", "1+", default=-1),
            F("sessionTimeout", "int32", "0+"),
            F("subscription", "bytes", "0+"),
            F("assignment", "bytes", "0+"),
        ],
    },
)

CONSUMER_GROUP_METADATA_KEY = Message(
    "ConsumerGroupMetadataKey", "3", flexible="none",
    fields=[
        F("GroupId", "string", "3"),
    ],
)

CONSUMER_GROUP_METADATA_VALUE = Message(
    "ConsumerGroupMetadataValue", "0", flexible="0+",
    fields=[
        F("Epoch", "int32", "0+"),
    ],
)

CONSUMER_GROUP_PARTITION_METADATA_KEY = Message(
    "ConsumerGroupPartitionMetadataKey", "4", flexible="none",
    fields=[
        F("GroupId", "string", "4"),
    ],
)

CONSUMER_GROUP_PARTITION_METADATA_VALUE = Message(
    "ConsumerGroupPartitionMetadataValue", "0", flexible="0+",
    fields=[
        F("Topics", "[]TopicMetadata", "0+", fields=[
            F("TopicId", "uuid", "0+"),
            F("TopicName", "string", "0+"),
            F("NumPartitions", "int32", "0+"),
            F("PartitionMetadata", "[]PartitionMetadata", "0+", fields=[
                F("Partition", "int32", "0+"),
                F("Racks", "[]string", "0+"),
            ]),
        ]),
    ],
)

CONSUMER_GROUP_MEMBER_METADATA_KEY = Message(
    "ConsumerGroupMemberMetadataKey", "5", flexible="none",
    fields=[
        F("GroupId", "string", "5"),
        F("MemberId", "string", "5"),
    ],
)

CONSUMER_GROUP_MEMBER_METADATA_VALUE = Message(
    "ConsumerGroupMemberMetadataValue", "0", flexible="0+",
    fields=[
        F("InstanceId", "string", "0+", nullable="0+"),
        F("RackId", "string", "0+", nullable="0+"),
        F("ClientId", "string", "0+"),
        F("ClientHost", "string", "0+"),
        F("SubscribedTopicNames", "[]string", "0+"),
        F("SubscribedTopicRegex", "string", "0+", nullable="0+"),
        F("RebalanceTimeoutMs", "int32", "0+", default=-1),
        F("ServerAssignor", "string", "0+", nullable="0+"),
        F("ClassicMemberMetadata", "ClassicMemberMetadata", "0+", nullable="0+", tag=0, tagged="0+", fields=[
            F("SessionTimeoutMs", "int32", "0+"),
            F("SupportedProtocols", "[]ClassicProtocol", "0+", fields=[
                F("Name", "string", "0+"),
                F("Metadata", "bytes", "0+"),
            ]),
        ]),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = Message(
    "ConsumerGroupTargetAssignmentMetadataKey", "6", flexible="none",
    fields=[
        F("GroupId", "string", "6"),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "ConsumerGroupTargetAssignmentMetadataValue", "0", flexible="0+",
    fields=[
        F("AssignmentEpoch", "int32", "0+"),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = Message(
    "ConsumerGroupTargetAssignmentMemberKey", "7", flexible="none",
    fields=[
        F("GroupId", "string", "7"),
        F("MemberId", "string", "7"),
    ],
)

CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "ConsumerGroupTargetAssignmentMemberValue", "0", flexible="0+",
    fields=[
        F("TopicPartitions", "[]TopicPartition", "0+", fields=[
            F("TopicId", "uuid", "0+"),
            F("Partitions", "[]int32", "0+"),
        ]),
    ],
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = Message(
    "ConsumerGroupCurrentMemberAssignmentKey", "8", flexible="none",
    fields=[
        F("GroupId", "string", "8"),
        F("MemberId", "string", "8"),
    ],
)

CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message(
    "ConsumerGroupCurrentMemberAssignmentValue", "0", flexible="0+",
    fields=[
        F("MemberEpoch", "int32", "0+"),
        F("PreviousMemberEpoch", "int32", "0+"),
        F("State", "int8", "0+"),
        F("AssignedPartitions", "[]TopicPartitions", "0+"),
        F("PartitionsPendingRevocation", "[]TopicPartitions", "0+"),
    ],
    structs={
        "TopicPartitions": [
            F("TopicId", "uuid", "0+"),
            F("Partitions", "[]int32", "0+"),
        ],
    },
)

SHARE_GROUP_PARTITION_METADATA_KEY = Message(
    "ShareGroupPartitionMetadataKey", "9", flexible="none",
    fields=[
        F("GroupId", "string", "9"),
    ],
)

SHARE_GROUP_PARTITION_METADATA_VALUE = Message(
    "ShareGroupPartitionMetadataValue", "0", flexible="0+",
    fields=[
        F("Topics", "[]TopicMetadata", "0+", fields=[
            F("TopicId", "uuid", "0+"),
            F("TopicName", "string", "0+"),
            F("NumPartitions", "int32", "0+"),
            F("PartitionMetadata", "[]PartitionMetadata", "0+", fields=[
                F("Partition", "int32", "0+"),
                F("Racks", "[]string", "0+"),
            ]),
        ]),
    ],
)

SHARE_GROUP_MEMBER_METADATA_KEY = Message(
    "ShareGroupMemberMetadataKey", "10", flexible="none",
    fields=[
        F("GroupId", "string", "10"),
        F("MemberId", "string", "10"),
    ],
)

SHARE_GROUP_MEMBER_METADATA_VALUE = Message(
    "ShareGroupMemberMetadataValue", "0", flexible="0+",
    fields=[
        F("RackId", "string", "0+", nullable="0+"),
        F("ClientId", "string", "0+"),
        F("ClientHost", "string", "0+"),
        F("SubscribedTopicNames", "[]string", "0+"),
    ],
)

SHARE_GROUP_METADATA_KEY = Message(
    "ShareGroupMetadataKey", "11", flexible="none",
    fields=[
        F("GroupId", "string", "11"),
    ],
)

SHARE_GROUP_METADATA_VALUE = Message(
    "ShareGroupMetadataValue", "0", flexible="0+",
    fields=[
        F("Epoch", "int32", "0+"),
    ],
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = Message(
    "ShareGroupTargetAssignmentMetadataKey", "12", flexible="none",
    fields=[
        F("GroupId", "string", "12"),
    ],
)

SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE = Message(
    "ShareGroupTargetAssignmentMetadataValue", "0", flexible="0+",
    fields=[
        F("AssignmentEpoch", "int32", "0+"),
    ],
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = Message(
    "ShareGroupTargetAssignmentMemberKey", "13", flexible="none",
    fields=[
        F("GroupId", "string", "13"),
        F("MemberId", "string", "13"),
    ],
)

SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "ShareGroupTargetAssignmentMemberValue", "0", flexible="0+",
    fields=[
        F("TopicPartitions", "[]TopicPartition", "0+", fields=[
            F("TopicId", "uuid", "0+"),
            F("Partitions", "[]int32", "0+"),
        ]),
    ],
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = Message(
    "ShareGroupCurrentMemberAssignmentKey", "14", flexible="none",
    fields=[
        F("GroupId", "string", "14"),
        F("MemberId", "string", "14"),
    ],
)

SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE = Message(
    "ShareGroupCurrentMemberAssignmentValue", "0", flexible="0+",
    fields=[
        F("MemberEpoch", "int32", "0+"),
        F("PreviousMemberEpoch", "int32", "0+"),
        F("State", "int8", "0+"),
        F("AssignedPartitions", "[]TopicPartitions", "0+"),
    ],
    structs={
        "TopicPartitions": [
            F("TopicId", "uuid", "0+"),
            F("Partitions", "[]int32", "0+"),
        ],
    },
)

SHARE_GROUP_STATE_PARTITION_METADATA_KEY = Message(
    "ShareGroupStatePartitionMetadataKey", "15", flexible="none",
    fields=[
        F("GroupId", "string", "15"),
    ],
)

SHARE_GROUP_STATE_PARTITION_METADATA_VALUE = Message(
    "ShareGroupStatePartitionMetadataValue", "0", flexible="0+",
    fields=[
        F("InitializedTopics", "[]TopicPartitionsInfo", "0+"),
        F("DeletingTopics", "[]TopicInfo", "0+"),
    ],
    structs={
        "TopicPartitionsInfo": [
            F("TopicId", "uuid", "0+"),
            F("TopicName", "string", "0+"),
            F("Partitions", "[]int32", "0+"),
        ],
        "TopicInfo": [
            F("TopicId", "uuid", "0+"),
            F("TopicName", "string", "0+"),
        ],
    },
)

CONSUMER_GROUP_REGULAR_EXPRESSION_KEY = Message(
    "ConsumerGroupRegularExpressionKey", "16", flexible="none",
    fields=[
        F("GroupId", "string", "16"),
        F("RegularExpression", "string", "16"),
    ],
)

CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE = Message(
    "ConsumerGroupRegularExpressionValue", "0", flexible="0+",
    fields=[
        F("Topics", "[]string", "0+"),
        F("Version", "int64", "0+"),
        F("Timestamp", "int64", "0+"),
    ],
)


# ================================= consumer protocol (inside GroupMetadataValue members)
# A member's subscription/assignment bytes: int16 version, then this message at that version.

CONSUMER_PROTOCOL_SUBSCRIPTION = Message(
    "ConsumerProtocolSubscription", "0-3", flexible="none",
    fields=[
        F("Topics", "[]string", "0+"),
        F("UserData", "bytes", "0+", nullable="0+", default=NULL),
        F("OwnedPartitions", "[]TopicPartition", "1+", fields=[
            F("Topic", "string", "1+"),
            F("Partitions", "[]int32", "1+"),
        ]),
        F("GenerationId", "int32", "2+", default=-1),
        F("RackId", "string", "3+", nullable="3+", default=NULL),
    ],
)

CONSUMER_PROTOCOL_ASSIGNMENT = Message(
    "ConsumerProtocolAssignment", "0-3", flexible="none",
    fields=[
        F("AssignedPartitions", "[]TopicPartition", "0+", fields=[
            F("Topic", "string", "0+"),
            F("Partitions", "[]int32", "0+"),
        ]),
        F("UserData", "bytes", "0+", nullable="0+", default=NULL),
    ],
)


# =================================================================== __transaction_state

TRANSACTION_LOG_KEY = Message(
    "TransactionLogKey", "0", flexible="none",
    fields=[
        F("TransactionalId", "string", "0"),
    ],
)

TRANSACTION_LOG_VALUE = Message(
    "TransactionLogValue", "0-1", flexible="1+",
    fields=[
        F("ProducerId", "int64", "0+"),
        F("PreviousProducerId", "int64", "1+", tag=0, tagged="1+", default=-1),
        F("NextProducerId", "int64", "1+", tag=1, tagged="1+", default=-1),
        F("ProducerEpoch", "int16", "0+"),
        F("TransactionTimeoutMs", "int32", "0+"),
        F("TransactionStatus", "int8", "0+"),
        F("TransactionPartitions", "[]PartitionsSchema", "0+", nullable="0+", fields=[
            F("Topic", "string", "0+"),
            F("PartitionIds", "[]int32", "0+"),
        ]),
        F("TransactionLastUpdateTimestampMs", "int64", "0+"),
        F("TransactionStartTimestampMs", "int64", "0+"),
        F("ClientTransactionVersion", "int16", "1+", tag=2, tagged="1+", default=0),
    ],
)


# ============================================================ __cluster_metadata records

REGISTER_BROKER_RECORD = Message(
    "RegisterBrokerRecord", "0-3", flexible="0+",
    fields=[
        F("BrokerId", "int32", "0+"),
        F("IsMigratingZkBroker", "bool", "2+", default=False),
        F("IncarnationId", "uuid", "0+"),
        F("BrokerEpoch", "int64", "0+"),
        F("EndPoints", "[]BrokerEndpoint", "0+", fields=[
            F("Name", "string", "0+"),
            F("Host", "string", "0+"),
            F("Port", "uint16", "0+"),
            F("SecurityProtocol", "int16", "0+"),
        ]),
        F("Features", "[]BrokerFeature", "0+", fields=[
            F("Name", "string", "0+"),
            F("MinSupportedVersion", "int16", "0+"),
            F("MaxSupportedVersion", "int16", "0+"),
        ]),
        F("Rack", "string", "0+", nullable="0+"),
        F("Fenced", "bool", "0+", default=True),
        F("InControlledShutdown", "bool", "1+", default=False),
        F("LogDirs", "[]uuid", "3+", tag=0, tagged="3+"),
    ],
)

UNREGISTER_BROKER_RECORD = Message(
    "UnregisterBrokerRecord", "0", flexible="0+",
    fields=[
        F("BrokerId", "int32", "0+"),
        F("BrokerEpoch", "int64", "0+"),
    ],
)

TOPIC_RECORD = Message(
    "TopicRecord", "0", flexible="0+",
    fields=[
        F("Name", "string", "0+"),
        F("TopicId", "uuid", "0+"),
    ],
)

PARTITION_RECORD = Message(
    "PartitionRecord", "0-2", flexible="0+",
    fields=[
        F("PartitionId", "int32", "0+", default=-1),
        F("TopicId", "uuid", "0+"),
        F("Replicas", "[]int32", "0+"),
        F("Isr", "[]int32", "0+"),
        F("RemovingReplicas", "[]int32", "0+"),
        F("AddingReplicas", "[]int32", "0+"),
        F("Leader", "int32", "0+", default=-1),
        F("LeaderRecoveryState", "int8", "0+", tag=0, tagged="0+", default=0),
        F("LeaderEpoch", "int32", "0+", default=-1),
        F("PartitionEpoch", "int32", "0+", default=-1),
        F("Directories", "[]uuid", "1+"),
        F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tag=1, tagged="2+", default=NULL),
        F("LastKnownElr", "[]int32", "2+", nullable="2+", tag=2, tagged="2+", default=NULL),
    ],
)

CONFIG_RECORD = Message(
    "ConfigRecord", "0", flexible="0+",
    fields=[
        F("ResourceType", "int8", "0+"),
        F("ResourceName", "string", "0+"),
        F("Name", "string", "0+"),
        F("Value", "string", "0+", nullable="0+"),
    ],
)

PARTITION_CHANGE_RECORD = Message(
    "PartitionChangeRecord", "0-2", flexible="0+",
    fields=[
        F("PartitionId", "int32", "0+", default=-1),
        F("TopicId", "uuid", "0+"),
        F("Isr", "[]int32", "0+", nullable="0+", tag=0, tagged="0+", default=NULL),
        F("Leader", "int32", "0+", tag=1, tagged="0+", default=-2),
        F("Replicas", "[]int32", "0+", nullable="0+", tag=2, tagged="0+", default=NULL),
        F("RemovingReplicas", "[]int32", "0+", nullable="0+", tag=3, tagged="0+", default=NULL),
        F("AddingReplicas", "[]int32", "0+", nullable="0+", tag=4, tagged="0+", default=NULL),
        F("LeaderRecoveryState", "int8", "0+", tag=5, tagged="0+", default=-1),
        F("Directories", "[]uuid", "1+", nullable="1+", tag=8, tagged="1+", default=NULL),
        F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tag=6, tagged="2+", default=NULL),
        F("LastKnownElr", "[]int32", "2+", nullable="2+", tag=7, tagged="2+", default=NULL),
    ],
)

FENCE_BROKER_RECORD = Message(
    "FenceBrokerRecord", "0", flexible="0+",
    fields=[
        F("Id", "int32", "0+"),
        F("Epoch", "int64", "0+"),
    ],
)

UNFENCE_BROKER_RECORD = Message(
    "UnfenceBrokerRecord", "0", flexible="0+",
    fields=[
        F("Id", "int32", "0+"),
        F("Epoch", "int64", "0+"),
    ],
)

REMOVE_TOPIC_RECORD = Message(
    "RemoveTopicRecord", "0", flexible="0+",
    fields=[
        F("TopicId", "uuid", "0+"),
    ],
)

DELEGATION_TOKEN_RECORD = Message(
    "DelegationTokenRecord", "0", flexible="0+",
    fields=[
        F("Owner", "string", "0+"),
        F("Requester", "string", "0+"),
        F("Renewers", "[]string", "0+"),
        F("IssueTimestamp", "int64", "0+"),
        F("MaxTimestamp", "int64", "0+"),
        F("ExpirationTimestamp", "int64", "0+"),
        F("TokenId", "string", "0+"),
    ],
)

USER_SCRAM_CREDENTIAL_RECORD = Message(
    "UserScramCredentialRecord", "0", flexible="0+",
    fields=[
        F("Name", "string", "0+"),
        F("Mechanism", "int8", "0+"),
        F("Salt", "bytes", "0+"),
        F("StoredKey", "bytes", "0+"),
        F("ServerKey", "bytes", "0+"),
        F("Iterations", "int32", "0+"),
    ],
)

FEATURE_LEVEL_RECORD = Message(
    "FeatureLevelRecord", "0", flexible="0+",
    fields=[
        F("Name", "string", "0+"),
        F("FeatureLevel", "int16", "0+"),
    ],
)

CLIENT_QUOTA_RECORD = Message(
    "ClientQuotaRecord", "0", flexible="0+",
    fields=[
        F("Entity", "[]EntityData", "0+", fields=[
            F("EntityType", "string", "0+"),
            F("EntityName", "string", "0+", nullable="0+"),
        ]),
        F("Key", "string", "0+"),
        F("Value", "float64", "0+"),
        F("Remove", "bool", "0+"),
    ],
)

PRODUCER_IDS_RECORD = Message(
    "ProducerIdsRecord", "0", flexible="0+",
    fields=[
        F("BrokerId", "int32", "0+"),
        F("BrokerEpoch", "int64", "0+", default=-1),
        F("NextProducerId", "int64", "0+"),
    ],
)

BROKER_REGISTRATION_CHANGE_RECORD = Message(
    "BrokerRegistrationChangeRecord", "0-2", flexible="0+",
    fields=[
        F("BrokerId", "int32", "0+"),
        F("BrokerEpoch", "int64", "0+"),
        F("Fenced", "int8", "0+", tag=0, tagged="0+"),
        F("InControlledShutdown", "int8", "1+", tag=1, tagged="1+"),
        F("LogDirs", "[]uuid", "2+", tag=2, tagged="2+"),
    ],
)

ACCESS_CONTROL_ENTRY_RECORD = Message(
    "AccessControlEntryRecord", "0", flexible="0+",
    fields=[
        F("Id", "uuid", "0+"),
        F("ResourceType", "int8", "0+"),
        F("ResourceName", "string", "0+"),
        F("PatternType", "int8", "0+"),
        F("Principal", "string", "0+"),
        F("Host", "string", "0+"),
        F("Operation", "int8", "0+"),
        F("PermissionType", "int8", "0+"),
    ],
)

REMOVE_ACCESS_CONTROL_ENTRY_RECORD = Message(
    "RemoveAccessControlEntryRecord", "0", flexible="0+",
    fields=[
        F("Id", "uuid", "0+"),
    ],
)

NO_OP_RECORD = Message(
    "NoOpRecord", "0", flexible="0+",
    fields=[],
)

ZK_MIGRATION_STATE_RECORD = Message(
    "ZkMigrationStateRecord", "0", flexible="0+",
    fields=[
        F("ZkMigrationState", "int8", "0+"),
    ],
)

REMOVE_USER_SCRAM_CREDENTIAL_RECORD = Message(
    "RemoveUserScramCredentialRecord", "0", flexible="0+",
    fields=[
        F("Name", "string", "0+"),
        F("Mechanism", "int8", "0+"),
    ],
)

BEGIN_TRANSACTION_RECORD = Message(
    "BeginTransactionRecord", "0", flexible="0+",
    fields=[
        F("Name", "string", "0+", nullable="0+", tag=0, tagged="0+", default=NULL),
    ],
)

END_TRANSACTION_RECORD = Message(
    "EndTransactionRecord", "0", flexible="0+",
    fields=[],
)

ABORT_TRANSACTION_RECORD = Message(
    "AbortTransactionRecord", "0", flexible="0+",
    fields=[
        F("Reason", "string", "0+", nullable="0+", tag=0, tagged="0+", default=NULL),
    ],
)

REMOVE_DELEGATION_TOKEN_RECORD = Message(
    "RemoveDelegationTokenRecord", "0", flexible="0+",
    fields=[
        F("TokenId", "string", "0+"),
    ],
)

REGISTER_CONTROLLER_RECORD = Message(
    "RegisterControllerRecord", "0", flexible="0+",
    fields=[
        F("ControllerId", "int32", "0+"),
        F("IncarnationId", "uuid", "0+"),
        F("ZkMigrationReady", "bool", "0+"),
        F("EndPoints", "[]ControllerEndpoint", "0+", fields=[
            F("Name", "string", "0+"),
            F("Host", "string", "0+"),
            F("Port", "uint16", "0+"),
            F("SecurityProtocol", "int16", "0+"),
        ]),
        F("Features", "[]ControllerFeature", "0+", fields=[
            F("Name", "string", "0+"),
            F("MinSupportedVersion", "int16", "0+"),
            F("MaxSupportedVersion", "int16", "0+"),
        ]),
    ],
)

CLEAR_ELR_RECORD = Message(
    "ClearElrRecord", "0", flexible="0+",
    fields=[
        F("TopicName", "string", "0+"),
    ],
)


# ================================================================= KRaft control records

LEADER_CHANGE_MESSAGE = Message(
    "LeaderChangeMessage", "0-1", flexible="0+",
    fields=[
        F("Version", "int16", "0+"),
        F("LeaderId", "int32", "0+"),
        F("Voters", "[]Voter", "0+"),
        F("GrantingVoters", "[]Voter", "0+"),
    ],
    structs={
        "Voter": [
            F("VoterId", "int32", "0+"),
            F("VoterDirectoryId", "uuid", "1+"),
        ],
    },
)

SNAPSHOT_HEADER_RECORD = Message(
    "SnapshotHeaderRecord", "0", flexible="0+",
    fields=[
        F("Version", "int16", "0+"),
        F("LastContainedLogTimestamp", "int64", "0+"),
    ],
)

SNAPSHOT_FOOTER_RECORD = Message(
    "SnapshotFooterRecord", "0", flexible="0+",
    fields=[
        F("Version", "int16", "0+"),
    ],
)

KRAFT_VERSION_RECORD = Message(
    "KRaftVersionRecord", "0", flexible="0+",
    fields=[
        F("Version", "int16", "0+"),
        F("KRaftVersion", "int16", "0+"),
    ],
)

VOTERS_RECORD = Message(
    "VotersRecord", "0", flexible="0+",
    fields=[
        F("Version", "int16", "0+"),
        F("Voters", "[]Voter", "0+", fields=[
            F("VoterId", "int32", "0+"),
            F("VoterDirectoryId", "uuid", "0+"),
            F("Endpoints", "[]Endpoint", "0+", fields=[
                F("Name", "string", "0+"),
                F("Host", "string", "0+"),
                F("Port", "uint16", "0+"),
            ]),
            F("KRaftVersionFeature", "KRaftVersionFeature", "0+", fields=[
                F("MinSupportedVersion", "int16", "0+"),
                F("MaxSupportedVersion", "int16", "0+"),
            ]),
        ]),
    ],
)


# =============================================== __share_group_state (share coordinator)

SHARE_SNAPSHOT_KEY = Message(
    "ShareSnapshotKey", "0", flexible="none",
    fields=[
        F("GroupId", "string", "0"),
        F("TopicId", "uuid", "0"),
        F("Partition", "int32", "0"),
    ],
)

SHARE_SNAPSHOT_VALUE = Message(
    "ShareSnapshotValue", "0", flexible="0+",
    fields=[
        F("SnapshotEpoch", "uint16", "0"),
        F("StateEpoch", "int32", "0+"),
        F("LeaderEpoch", "int32", "0+"),
        F("StartOffset", "int64", "0"),
        F("StateBatches", "[]StateBatch", "0", fields=[
            F("FirstOffset", "int64", "0"),
            F("LastOffset", "int64", "0"),
            F("DeliveryState", "int8", "0"),
            F("DeliveryCount", "int16", "0"),
        ]),
    ],
)

SHARE_UPDATE_KEY = Message(
    "ShareUpdateKey", "1", flexible="none",
    fields=[
        F("GroupId", "string", "1"),
        F("TopicId", "uuid", "1"),
        F("Partition", "int32", "1"),
    ],
)

SHARE_UPDATE_VALUE = Message(
    "ShareUpdateValue", "0", flexible="0+",
    fields=[
        F("SnapshotEpoch", "uint16", "0"),
        F("LeaderEpoch", "int32", "0+"),
        F("StartOffset", "int64", "0"),
        F("StateBatches", "[]StateBatch", "0", fields=[
            F("FirstOffset", "int64", "0"),
            F("LastOffset", "int64", "0"),
            F("DeliveryState", "int8", "0"),
            F("DeliveryCount", "int16", "0"),
        ]),
    ],
)


# ============================================ __remote_log_metadata (tiered storage, KIP-405)
# The records TopicBasedRemoteLogMetadataManager writes (storage/src/main/resources/message/
# RemoteLogSegmentMetadataRecord.json and its siblings; TxnIndexEmpty is the tagged field of 4.0's
# KIP-1058). Framed like metadata records: frame version 1, api key, version, then the message.
_TOPIC_ID_PARTITION = [
    F("Name", "string", "0+"),
    F("Id", "uuid", "0+"),
    F("Partition", "int32", "0+"),
]
_REMOTE_LOG_SEGMENT_ID = [
    F("TopicIdPartition", "TopicIdPartitionEntry", "0+", fields=_TOPIC_ID_PARTITION),
    F("Id", "uuid", "0+"),
]
_SEGMENT_LEADER_EPOCH = [
    F("LeaderEpoch", "int32", "0+"),
    F("Offset", "int64", "0+"),
]

REMOTE_LOG_SEGMENT_METADATA_RECORD = Message(
    "RemoteLogSegmentMetadataRecord", "0", flexible="0+",
    fields=[
        F("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", "0+", fields=_REMOTE_LOG_SEGMENT_ID),
        F("StartOffset", "int64", "0+"),
        F("EndOffset", "int64", "0+"),
        F("BrokerId", "int32", "0+"),
        F("MaxTimestampMs", "int64", "0+"),
        F("EventTimestampMs", "int64", "0+"),
        F("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", "0+", fields=_SEGMENT_LEADER_EPOCH),
        F("SegmentSizeInBytes", "int32", "0+"),
        F("CustomMetadata", "bytes", "0+", nullable="0+", default=NULL),
        F("RemoteLogSegmentState", "int8", "0+"),
        F("TxnIndexEmpty", "bool", "0+", tag=0, tagged="0+"),
    ],
)

REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD = Message(
    "RemoteLogSegmentMetadataUpdateRecord", "0", flexible="0+",
    fields=[
        F("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", "0+", fields=_REMOTE_LOG_SEGMENT_ID),
        F("BrokerId", "int32", "0+"),
        F("EventTimestampMs", "int64", "0+"),
        F("CustomMetadata", "bytes", "0+", nullable="0+", default=NULL),
        F("RemoteLogSegmentState", "int8", "0+"),
    ],
)

REMOTE_PARTITION_DELETE_METADATA_RECORD = Message(
    "RemotePartitionDeleteMetadataRecord", "0", flexible="0+",
    fields=[
        F("TopicIdPartition", "TopicIdPartitionEntry", "0+", fields=_TOPIC_ID_PARTITION),
        F("BrokerId", "int32", "0+"),
        F("EventTimestampMs", "int64", "0+"),
        F("RemotePartitionDeleteState", "int8", "0+"),
    ],
)

REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD = Message(
    "RemoteLogSegmentMetadataSnapshotRecord", "0", flexible="0+",
    fields=[
        F("SegmentId", "uuid", "0+"),
        F("StartOffset", "int64", "0+"),
        F("EndOffset", "int64", "0+"),
        F("BrokerId", "int32", "0+"),
        F("MaxTimestampMs", "int64", "0+"),
        F("EventTimestampMs", "int64", "0+"),
        F("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", "0+", fields=_SEGMENT_LEADER_EPOCH),
        F("SegmentSizeInBytes", "int32", "0+"),
        F("CustomMetadata", "bytes", "0+", nullable="0+", default=NULL),
        F("RemoteLogSegmentState", "int8", "0+"),
    ],
)


# ====================================================================================== registries
#: ``__consumer_offsets``: the key's leading int16 (Kafka calls it the key "version"; it is the
#: record type) -> (key message, value message). The key is read at that version; the value has
#: its own leading int16 version. Types 0 and 1 are both offset commits.
GROUP_COORDINATOR_RECORDS: dict[int, tuple[Message, Message]] = {
    0: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: (GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: (CONSUMER_GROUP_METADATA_KEY, CONSUMER_GROUP_METADATA_VALUE),
    4: (CONSUMER_GROUP_PARTITION_METADATA_KEY, CONSUMER_GROUP_PARTITION_METADATA_VALUE),
    5: (CONSUMER_GROUP_MEMBER_METADATA_KEY, CONSUMER_GROUP_MEMBER_METADATA_VALUE),
    6: (CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    7: (CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    8: (CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    9: (SHARE_GROUP_PARTITION_METADATA_KEY, SHARE_GROUP_PARTITION_METADATA_VALUE),
    10: (SHARE_GROUP_MEMBER_METADATA_KEY, SHARE_GROUP_MEMBER_METADATA_VALUE),
    11: (SHARE_GROUP_METADATA_KEY, SHARE_GROUP_METADATA_VALUE),
    12: (SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE),
    13: (SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE),
    14: (SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE),
    15: (SHARE_GROUP_STATE_PARTITION_METADATA_KEY, SHARE_GROUP_STATE_PARTITION_METADATA_VALUE),
    16: (CONSUMER_GROUP_REGULAR_EXPRESSION_KEY, CONSUMER_GROUP_REGULAR_EXPRESSION_VALUE),
}

#: ``__share_group_state``: key record type -> (key message, value message), as above.
SHARE_COORDINATOR_RECORDS: dict[int, tuple[Message, Message]] = {
    0: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE),
    1: (SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE),
}

_METADATA = [
    (0, REGISTER_BROKER_RECORD),
    (1, UNREGISTER_BROKER_RECORD),
    (2, TOPIC_RECORD),
    (3, PARTITION_RECORD),
    (4, CONFIG_RECORD),
    (5, PARTITION_CHANGE_RECORD),
    (7, FENCE_BROKER_RECORD),
    (8, UNFENCE_BROKER_RECORD),
    (9, REMOVE_TOPIC_RECORD),
    (10, DELEGATION_TOKEN_RECORD),
    (11, USER_SCRAM_CREDENTIAL_RECORD),
    (12, FEATURE_LEVEL_RECORD),
    (14, CLIENT_QUOTA_RECORD),
    (15, PRODUCER_IDS_RECORD),
    (17, BROKER_REGISTRATION_CHANGE_RECORD),
    (18, ACCESS_CONTROL_ENTRY_RECORD),
    (19, REMOVE_ACCESS_CONTROL_ENTRY_RECORD),
    (20, NO_OP_RECORD),
    (21, ZK_MIGRATION_STATE_RECORD),
    (22, REMOVE_USER_SCRAM_CREDENTIAL_RECORD),
    (23, BEGIN_TRANSACTION_RECORD),
    (24, END_TRANSACTION_RECORD),
    (25, ABORT_TRANSACTION_RECORD),
    (26, REMOVE_DELEGATION_TOKEN_RECORD),
    (27, REGISTER_CONTROLLER_RECORD),
    (28, CLEAR_ELR_RECORD),
]

#: ``__cluster_metadata`` (and KRaft snapshots): api key -> (MetadataRecordType name, message).
#: Each value is framed as: unsigned varint frame version (1), unsigned varint api key, unsigned
#: varint record version, then the message at that version, and nothing after it.
METADATA_RECORDS: dict[int, tuple[str, Message]] = {k: (metadata_type_name(m.name), m) for k, m in _METADATA}

#: ``__remote_log_metadata``: api key -> (MetadataRecordType name of the storage module, message),
#: framed as :data:`METADATA_RECORDS` are.
REMOTE_LOG_METADATA_RECORDS: dict[int, tuple[str, Message]] = {
    k: (metadata_type_name(m.name), m)
    for k, m in [
        (0, REMOTE_LOG_SEGMENT_METADATA_RECORD),
        (1, REMOTE_LOG_SEGMENT_METADATA_UPDATE_RECORD),
        (2, REMOTE_PARTITION_DELETE_METADATA_RECORD),
        (3, REMOTE_LOG_SEGMENT_METADATA_SNAPSHOT_RECORD),
    ]
}

#: KRaft control records (a control batch's record key type id) -> (label kafka-dump-log prints,
#: message). Kafka reads each value at version 0; the message's own ``Version`` field is the
#: version its JSON is written with.
CONTROL_RECORDS: dict[int, tuple[str, Message]] = {
    2: ("LeaderChange", LEADER_CHANGE_MESSAGE),
    3: ("SnapshotHeader", SNAPSHOT_HEADER_RECORD),
    4: ("SnapshotFooter", SNAPSHOT_FOOTER_RECORD),
    5: ("KRaftVersion", KRAFT_VERSION_RECORD),
    6: ("KRaftVoters", VOTERS_RECORD),
}

#: Every declared message by its Kafka name.
INTERNAL_SCHEMAS: dict[str, Message] = {
    m.name: m
    for m in [
        *(m for pair in GROUP_COORDINATOR_RECORDS.values() for m in pair),
        CONSUMER_PROTOCOL_SUBSCRIPTION,
        CONSUMER_PROTOCOL_ASSIGNMENT,
        TRANSACTION_LOG_KEY,
        TRANSACTION_LOG_VALUE,
        *(m for _, m in METADATA_RECORDS.values()),
        *(m for _, m in CONTROL_RECORDS.values()),
        *(m for pair in SHARE_COORDINATOR_RECORDS.values() for m in pair),
        *(m for _, m in REMOTE_LOG_METADATA_RECORDS.values()),
    ]
}


# ============================================================================ construct layouts
class KafkaValueError(ConstructError):
    """A declared layout met bytes Kafka rejects (a null where the field is not nullable)."""


def _uvarint_parse(stream: Any, path: str) -> int:
    return VarInt._parsereport(stream, None, path)


class KafkaVarData(Construct):
    """A string or bytes field: int16 (string) / int32 (bytes) length, or unsigned varint
    length+1 when ``compact``; a negative length is null (an error unless ``nullable``)."""

    def __init__(self, kind: str, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.kind, self.compact, self.nullable = kind, compact, nullable

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        if self.compact:
            n = _uvarint_parse(stream, path) - 1
        elif self.kind == "string":
            n = Int16sb._parsereport(stream, context, path)
        else:
            n = Int32sb._parsereport(stream, context, path)
        if n < 0:
            if not self.nullable:
                raise KafkaValueError(f"non-nullable {self.kind} was serialized as null")
            return None
        data = stream_read(stream, n, path)
        return data.decode("utf-8", JAVA_UTF8) if self.kind == "string" else data  # as Java decodes it

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        data = None if obj is None else (obj.encode("utf-8") if self.kind == "string" else bytes(obj))
        n = -1 if data is None else len(data)
        if self.compact:
            VarInt._build(n + 1, stream, context, path)
        elif self.kind == "string":
            Int16sb._build(n, stream, context, path)
        else:
            Int32sb._build(n, stream, context, path)
        if data:
            stream_write(stream, data, len(data), path)
        return obj


class KafkaArray(Construct):
    """An array: int32 count, or unsigned varint count+1 when ``compact``; negative is null."""

    def __init__(self, subcon: Construct, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.subcon, self.compact, self.nullable = subcon, compact, nullable

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        n = _uvarint_parse(stream, path) - 1 if self.compact else Int32sb._parsereport(stream, context, path)
        if n < 0:
            if not self.nullable:
                raise KafkaValueError("non-nullable array was serialized as null")
            return None
        return [self.subcon._parsereport(stream, context, path) for _ in range(n)]

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        n = -1 if obj is None else len(obj)
        if self.compact:
            VarInt._build(n + 1, stream, context, path)
        else:
            Int32sb._build(n, stream, context, path)
        for e in obj or ():
            self.subcon._build(e, stream, context, path)
        return obj


class KafkaNullableStruct(Construct):
    """A nullable struct: int8 marker (negative: null), or unsigned varint (0: null) when tagged."""

    def __init__(self, subcon: Construct, tagged: bool) -> None:
        super().__init__()
        self.subcon, self.tagged = subcon, tagged

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        marker = _uvarint_parse(stream, path) if self.tagged else Int8sb._parsereport(stream, context, path)
        if marker <= 0 if self.tagged else marker < 0:
            return None
        return self.subcon._parsereport(stream, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        if self.tagged:
            VarInt._build(0 if obj is None else 1, stream, context, path)
        else:
            Int8sb._build(-1 if obj is None else 1, stream, context, path)
        if obj is not None:
            self.subcon._build(obj, stream, context, path)
        return obj


class KafkaTaggedFields(Construct):
    """The tagged-field section of a flexible struct: unsigned varint count, then (tag, size,
    value) triples. Parses to a dict of the known fields present (by Kafka name) plus
    ``_unknown`` [(tag, raw bytes)]; builds from the same."""

    def __init__(self, known: Mapping[int, tuple[str, Construct]]) -> None:
        super().__init__()
        self.known = dict(known)
        self.by_name = {name: (tag, c) for tag, (name, c) in self.known.items()}

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        out = _Container()
        unknown = []
        for _ in range(_uvarint_parse(stream, path)):
            tag = _uvarint_parse(stream, path)
            size = _uvarint_parse(stream, path)
            if tag in self.known:
                name, c = self.known[tag]
                out[name] = c._parsereport(stream, context, path)
            else:
                unknown.append((tag, stream_read(stream, size, path)))
        if unknown:
            out["_unknown"] = unknown
        return out

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        obj = obj or {}
        items = []
        for name, value in obj.items():
            if name == "_unknown":
                items.extend(value)
            elif name in self.by_name:
                tag, c = self.by_name[name]
                items.append((tag, c.build(value)))
        items.sort(key=lambda t: t[0])
        VarInt._build(len(items), stream, context, path)
        for tag, data in items:
            VarInt._build(tag, stream, context, path)
            VarInt._build(len(data), stream, context, path)
            stream_write(stream, data, len(data), path)
        return obj


_FIXED: dict[str, Construct] = {
    "bool": Flag,
    "int8": Int8sb,
    "int16": Int16sb,
    "uint16": Int16ub,
    "int32": Int32sb,
    "uint32": Int32ub,
    "int64": Int64sb,
    "float64": Float64b,
    "uuid": Bytes(16),
}


def _field_flexible(message: Message, f: F, version: int) -> bool:
    return version in (f.flexible if f.flexible is not None else message.flexible)


def _value_construct(message: Message, f: F, version: int, elem: bool, tagged: bool) -> Construct:
    compact = tagged or _field_flexible(message, f, version)
    t = f.elem if elem else f.type
    if not elem and f.is_array:
        return KafkaArray(_value_construct(message, f, version, True, tagged), compact, version in f.nullable)
    if t in _FIXED:
        return _FIXED[t]
    if t in ("string", "bytes"):
        return KafkaVarData(t, compact, (version in f.nullable) and not elem)
    assert f.struct is not None
    body = _struct_construct(message, f.struct, version)
    if not elem and version in f.nullable:
        return KafkaNullableStruct(body, tagged)
    return body


def _struct_construct(message: Message, fields: list[F], version: int) -> Construct:
    members = []
    tagged: dict[int, tuple[str, Construct]] = {}
    for f in fields:
        if version not in f.versions:
            continue
        if version in f.tagged:
            assert f.tag is not None
            tagged[f.tag] = (f.name, _value_construct(message, f, version, False, True))
        else:
            members.append(f.name / _value_construct(message, f, version, False, False))
    if message.is_flexible(version):
        members.append("_tagged" / KafkaTaggedFields(tagged))
    return Struct(*members)


def construct_for(message: Message, version: int) -> Construct:
    """The ``construct`` layout of ``message`` at ``version`` (without the int16 version prefix).

    Fields absent from that version are left out; tagged fields are parsed into ``_tagged``.
    """
    if version not in message.valid:
        raise ValueError(f"{message.name} has no version {version} (valid: {message.valid})")
    return _struct_construct(message, message.fields, version)


def uuid_text(raw: bytes) -> str:
    """Kafka's text form of a UUID: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
