"""What each Kafka release from 4.0 to 4.4 writes to its internal topics and how its DumpLogSegments
prints it (``kafkalog dump --decode --kafka-version X.Y``).

:mod:`kafkalog.internal.schemas` declares the layouts as Kafka 4.0 has them; this module declares
what later releases changed (from each release's message specs, checked against the records each
release's own classes wrote in ``golden/kafka-<release>/``) and gives every decoder its registry by
release:

* ``__consumer_offsets`` (4.1): record type 0 is LegacyOffsetCommit (value version 0 only), type 9
  (ShareGroupPartitionMetadata) is gone, ShareGroupMetadataValue gains ``MetadataHash`` and
  ShareGroupStatePartitionMetadataValue ``InitializingTopics`` (both incompatible with 4.0), tagged
  ``topicId`` (OffsetCommitValue) and ``MetadataHash`` (ConsumerGroupMetadataValue), and the streams
  groups of KIP-1071 (types 17, 19-23; more tagged fields in 4.2 and 4.4); 4.3 adds the tagged
  ``AssignmentEpochs`` and ``AssignmentTimestamp``.
* ``__share_group_state`` (4.1): ``SnapshotEpoch`` becomes an int32 and ShareSnapshotValue gains
  ``CreateTimestamp``/``WriteTimestamp`` (incompatible with 4.0); the value's version is labelled
  ``"version"`` (4.0 wrote ``"type"``); 4.2 adds the tagged ``DeliveryCompleteCount``.
* ``__transaction_state`` (4.1): printed as JSON like the other coordinator topics, with the tagged
  ``NextProducerEpoch``; 4.4 prints ``transactionStatus`` as the state's name.
* Control records (4.1): LEADER_CHANGE prints `` LeaderChange: {json}``.
* ``__cluster_metadata``: RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3 (4.3,
  ``CordonedLogDirs``), UnregisterControllerRecord (type 29, 4.4).
"""

from __future__ import annotations

import copy
from functools import cache

from kafkalog.format.releases import NEWEST_VERSION, RELEASES, parse_version
from kafkalog.internal.schemas import (
    BROKER_REGISTRATION_CHANGE_RECORD,
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    CONSUMER_GROUP_METADATA_VALUE,
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    GROUP_COORDINATOR_RECORDS,
    METADATA_RECORDS,
    NULL,
    OFFSET_COMMIT_KEY,
    OFFSET_COMMIT_VALUE,
    REGISTER_BROKER_RECORD,
    SHARE_COORDINATOR_RECORDS,
    SHARE_GROUP_METADATA_VALUE,
    SHARE_GROUP_STATE_PARTITION_METADATA_VALUE,
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE,
    SHARE_SNAPSHOT_KEY,
    SHARE_SNAPSHOT_VALUE,
    SHARE_UPDATE_KEY,
    SHARE_UPDATE_VALUE,
    TRANSACTION_LOG_VALUE,
    F,
    Message,
    metadata_type_name,
)

__all__ = [
    "NEWEST",
    "RELEASES",
    "Release",
    "group_coordinator_records",
    "metadata_records",
    "parse_release",
    "share_coordinator_records",
    "transaction_log_value",
]

#: A Kafka release line, ``(major, minor)``.
Release = tuple[int, int]

#: The default: the newest release line.
NEWEST: Release = (NEWEST_VERSION[0], NEWEST_VERSION[1])


def parse_release(text: str | Release | None) -> Release:
    """``"4.1"`` or ``"4.1.2"`` (a patch release reads as its line) -> ``(4, 1)``; ``None`` -> the
    newest. Raises ``ValueError`` naming the known lines for any other text."""
    if isinstance(text, tuple):
        return text
    major, minor, _ = parse_version(text)
    return major, minor


def _revised(
    m: Message,
    *,
    valid: str | None = None,
    after: dict[str | None, list[F]] | None = None,
    replace: dict[str, F] | None = None,
    structs: dict[str, list[F]] | None = None,
) -> Message:
    """``m`` as a later release declares it: fields inserted after a field (``None``: first), fields
    replaced by name, structs redeclared. The fields are copies, since a message resolves its fields'
    structs in place."""
    after = after or {}
    fields = [copy.copy(f) for f in after.get(None, [])]
    for f in m.fields:
        fields.append(copy.copy((replace or {}).get(f.name, f)))
        fields.extend(copy.copy(g) for g in after.get(f.name, []))
    return Message(m.name, valid or str(m.valid), flexible=str(m.flexible), fields=fields, structs={**m.structs, **(structs or {})})


# ================================================================= __consumer_offsets, 4.1-4.4
LEGACY_OFFSET_COMMIT_VALUE = Message(
    "LegacyOffsetCommitValue", "0", flexible="none",
    fields=[
        F("offset", "int64", "0"),
        F("metadata", "string", "0"),
        F("commitTimestamp", "int64", "0"),
    ],
)
OFFSET_COMMIT_VALUE_41 = _revised(OFFSET_COMMIT_VALUE, after={"expireTimestamp": [F("topicId", "uuid", "4+", tag=0, tagged="4+")]})
CONSUMER_GROUP_METADATA_VALUE_41 = _revised(
    CONSUMER_GROUP_METADATA_VALUE, after={"Epoch": [F("MetadataHash", "int64", "0+", tag=0, tagged="0+", default=0)]}
)
_ASSIGNMENT_TIMESTAMP = [F("AssignmentTimestamp", "int64", "0+", tag=0, tagged="0+", default=0)]
CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_43 = _revised(
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, after={"AssignmentEpoch": _ASSIGNMENT_TIMESTAMP}
)
_ASSIGNMENT_EPOCHS = F("AssignmentEpochs", "[]int32", "0+", nullable="0+", tag=0, tagged="0+", default=NULL)
CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE_43 = _revised(
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE,
    structs={"TopicPartitions": [F("TopicId", "uuid", "0+"), F("Partitions", "[]int32", "0+"), _ASSIGNMENT_EPOCHS]},
)
SHARE_GROUP_METADATA_VALUE_41 = _revised(SHARE_GROUP_METADATA_VALUE, after={"Epoch": [F("MetadataHash", "int64", "0+")]})
SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_43 = _revised(
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE, after={"AssignmentEpoch": _ASSIGNMENT_TIMESTAMP}
)
SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_41 = _revised(
    SHARE_GROUP_STATE_PARTITION_METADATA_VALUE, after={None: [F("InitializingTopics", "[]TopicPartitionsInfo", "0+")]}
)


def _streams_key(name: str, rtype: int, member: bool = False) -> Message:
    """A streams-group key: GroupId (and MemberId), read at the version that is its record type."""
    v = str(rtype)
    return Message(name, v, flexible="none", fields=[F("GroupId", "string", v), *([F("MemberId", "string", v)] if member else [])])


_KEY_VALUE = [F("Key", "string", "0+"), F("Value", "string", "0+")]
STREAMS_GROUP_METADATA_KEY = _streams_key("StreamsGroupMetadataKey", 17)
STREAMS_GROUP_METADATA_VALUE_41 = Message(
    "StreamsGroupMetadataValue", "0", flexible="0+",
    fields=[F("Epoch", "int32", "0+"), F("MetadataHash", "int64", "0+")],
)
STREAMS_GROUP_METADATA_VALUE_42 = _revised(STREAMS_GROUP_METADATA_VALUE_41, after={"MetadataHash": [
    F("ValidatedTopologyEpoch", "int32", "0+", tag=0, tagged="0+", default=-1),
    F("LastAssignmentConfigs", "[]LastAssignmentConfig", "0+", nullable="0+", tag=1, tagged="0+", default=NULL, fields=_KEY_VALUE),
]})
STREAMS_GROUP_METADATA_VALUE_44 = _revised(STREAMS_GROUP_METADATA_VALUE_42, after={"LastAssignmentConfigs": [
    F("StoredDescriptionTopologyEpoch", "int32", "0+", tag=2, tagged="0+", default=-1),
    F("FailedDescriptionTopologyEpoch", "int32", "0+", tag=3, tagged="0+", default=-1),
]})
STREAMS_GROUP_MEMBER_METADATA_KEY = _streams_key("StreamsGroupMemberMetadataKey", 19, member=True)
STREAMS_GROUP_MEMBER_METADATA_VALUE = Message(
    "StreamsGroupMemberMetadataValue", "0", flexible="0+",
    fields=[
        F("InstanceId", "string", "0+", nullable="0+"),
        F("RackId", "string", "0+", nullable="0+"),
        F("ClientId", "string", "0+"),
        F("ClientHost", "string", "0+"),
        F("RebalanceTimeoutMs", "int32", "0+", default=-1),
        F("TopologyEpoch", "int32", "0+"),
        F("ProcessId", "string", "0+"),
        F("UserEndpoint", "Endpoint", "0+", nullable="0+", default=NULL, fields=[
            F("Host", "string", "0+"),
            F("Port", "uint16", "0+"),
        ]),
        F("ClientTags", "[]KeyValue", "0+", fields=_KEY_VALUE),
    ],
)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY = _streams_key("StreamsGroupTargetAssignmentMetadataKey", 20)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_41 = Message(
    "StreamsGroupTargetAssignmentMetadataValue", "0", flexible="0+", fields=[F("AssignmentEpoch", "int32", "0+")]
)
STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_43 = _revised(
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_41, after={"AssignmentEpoch": _ASSIGNMENT_TIMESTAMP}
)
_TASK_IDS = [F("SubtopologyId", "string", "0+"), F("Partitions", "[]int32", "0+")]
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY = _streams_key("StreamsGroupTargetAssignmentMemberKey", 21, member=True)
STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE = Message(
    "StreamsGroupTargetAssignmentMemberValue", "0", flexible="0+",
    fields=[F(name, "[]TaskIds", "0+") for name in ("ActiveTasks", "StandbyTasks", "WarmupTasks")],
    structs={"TaskIds": _TASK_IDS},
)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY = _streams_key("StreamsGroupCurrentMemberAssignmentKey", 22, member=True)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE_41 = Message(
    "StreamsGroupCurrentMemberAssignmentValue", "0", flexible="0+",
    fields=[
        F("MemberEpoch", "int32", "0+"),
        F("PreviousMemberEpoch", "int32", "0+"),
        F("State", "int8", "0+"),
        *(F(name, "[]TaskIds", "0+") for name in (
            "ActiveTasks", "StandbyTasks", "WarmupTasks",
            "ActiveTasksPendingRevocation", "StandbyTasksPendingRevocation", "WarmupTasksPendingRevocation",
        )),
    ],
    structs={"TaskIds": _TASK_IDS},
)
STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE_42 = _revised(
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE_41, structs={"TaskIds": [*_TASK_IDS, _ASSIGNMENT_EPOCHS]}
)
_TOPIC_INFO = [
    F("Name", "string", "0+"),
    F("Partitions", "int32", "0+"),
    F("ReplicationFactor", "int16", "0+"),
    F("TopicConfigs", "[]TopicConfig", "0+", fields=[F("key", "string", "0+"), F("value", "string", "0+")]),
]
STREAMS_GROUP_TOPOLOGY_KEY = _streams_key("StreamsGroupTopologyKey", 23)
STREAMS_GROUP_TOPOLOGY_VALUE = Message(
    "StreamsGroupTopologyValue", "0", flexible="0+",
    fields=[
        F("Epoch", "int32", "0+"),
        F("Subtopologies", "[]Subtopology", "0+", fields=[
            F("SubtopologyId", "string", "0+"),
            F("SourceTopics", "[]string", "0+"),
            F("SourceTopicRegex", "[]string", "0+"),
            F("StateChangelogTopics", "[]TopicInfo", "0+"),
            F("RepartitionSinkTopics", "[]string", "0+"),
            F("RepartitionSourceTopics", "[]TopicInfo", "0+"),
            F("CopartitionGroups", "[]CopartitionGroup", "0+", fields=[
                F("SourceTopics", "[]int16", "0+"),
                F("SourceTopicRegex", "[]int16", "0+"),
                F("RepartitionSourceTopics", "[]int16", "0+"),
            ]),
        ]),
    ],
    structs={"TopicInfo": _TOPIC_INFO},
)


@cache
def group_coordinator_records(release: Release = NEWEST) -> dict[int, tuple[Message, Message]]:
    """``__consumer_offsets`` record types as ``release`` reads them (see GROUP_COORDINATOR_RECORDS)."""
    records = dict(GROUP_COORDINATOR_RECORDS)
    if release < (4, 1):
        return records
    del records[9]
    records[0] = (OFFSET_COMMIT_KEY, LEGACY_OFFSET_COMMIT_VALUE)
    records[1] = (OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE_41)
    records[3] = (records[3][0], CONSUMER_GROUP_METADATA_VALUE_41)
    records[11] = (records[11][0], SHARE_GROUP_METADATA_VALUE_41)
    records[15] = (records[15][0], SHARE_GROUP_STATE_PARTITION_METADATA_VALUE_41)
    records[17] = (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE_41)
    records[19] = (STREAMS_GROUP_MEMBER_METADATA_KEY, STREAMS_GROUP_MEMBER_METADATA_VALUE)
    records[20] = (STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_41)
    records[21] = (STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER_VALUE)
    records[22] = (STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE_41)
    records[23] = (STREAMS_GROUP_TOPOLOGY_KEY, STREAMS_GROUP_TOPOLOGY_VALUE)
    if release >= (4, 2):
        records[17] = (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE_42)
        records[22] = (STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_KEY, STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE_42)
    if release >= (4, 3):
        records[6] = (records[6][0], CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_43)
        records[8] = (records[8][0], CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT_VALUE_43)
        records[12] = (records[12][0], SHARE_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_43)
        records[20] = (STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_KEY, STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA_VALUE_43)
    if release >= (4, 4):
        records[17] = (STREAMS_GROUP_METADATA_KEY, STREAMS_GROUP_METADATA_VALUE_44)
    return dict(sorted(records.items()))


# ================================================================ __share_group_state, 4.1-4.4
_EPOCH_32 = F("SnapshotEpoch", "int32", "0+")
_DELIVERY_COMPLETE_COUNT = F("DeliveryCompleteCount", "int32", "0+", tag=0, tagged="0+", default=-1)
_TIMESTAMPS = [F("CreateTimestamp", "int64", "0+"), F("WriteTimestamp", "int64", "0+")]
SHARE_SNAPSHOT_VALUE_41 = _revised(SHARE_SNAPSHOT_VALUE, replace={"SnapshotEpoch": _EPOCH_32}, after={"StartOffset": _TIMESTAMPS})
SHARE_SNAPSHOT_VALUE_42 = _revised(
    SHARE_SNAPSHOT_VALUE, replace={"SnapshotEpoch": _EPOCH_32}, after={"StartOffset": [_DELIVERY_COMPLETE_COUNT, *_TIMESTAMPS]}
)
SHARE_UPDATE_VALUE_41 = _revised(SHARE_UPDATE_VALUE, replace={"SnapshotEpoch": _EPOCH_32})
SHARE_UPDATE_VALUE_42 = _revised(SHARE_UPDATE_VALUE_41, after={"StartOffset": [_DELIVERY_COMPLETE_COUNT]})


@cache
def share_coordinator_records(release: Release = NEWEST) -> dict[int, tuple[Message, Message]]:
    """``__share_group_state`` record types as ``release`` reads them."""
    if release < (4, 1):
        return dict(SHARE_COORDINATOR_RECORDS)
    if release < (4, 2):
        return {0: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE_41), 1: (SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE_41)}
    return {0: (SHARE_SNAPSHOT_KEY, SHARE_SNAPSHOT_VALUE_42), 1: (SHARE_UPDATE_KEY, SHARE_UPDATE_VALUE_42)}


# ================================================================ __transaction_state, 4.1-4.4
TRANSACTION_LOG_VALUE_41 = _revised(
    TRANSACTION_LOG_VALUE, after={"ProducerEpoch": [F("NextProducerEpoch", "int16", "1+", tag=3, tagged="1+", default=-1)]}
)


def transaction_log_value(release: Release = NEWEST) -> Message:
    """TransactionLogValue as ``release`` reads it."""
    return TRANSACTION_LOG_VALUE if release < (4, 1) else TRANSACTION_LOG_VALUE_41


# ================================================================= __cluster_metadata, 4.3-4.4
_CORDONED = "CordonedLogDirs"
REGISTER_BROKER_RECORD_43 = _revised(
    REGISTER_BROKER_RECORD, valid="0-4",
    after={"LogDirs": [F(_CORDONED, "[]uuid", "4+", nullable="4+", tag=1, tagged="4+", default=NULL)]},
)
BROKER_REGISTRATION_CHANGE_RECORD_43 = _revised(
    BROKER_REGISTRATION_CHANGE_RECORD, valid="0-3",
    after={"LogDirs": [F(_CORDONED, "[]uuid", "3+", nullable="3+", tag=3, tagged="3+", default=NULL)]},
)
UNREGISTER_CONTROLLER_RECORD = Message(
    "UnregisterControllerRecord", "0", flexible="0+", fields=[F("ControllerId", "int32", "0+")]
)


@cache
def metadata_records(release: Release = NEWEST) -> dict[int, tuple[str, Message]]:
    """``__cluster_metadata`` record types as ``release`` reads them (see METADATA_RECORDS)."""
    records = dict(METADATA_RECORDS)
    if release >= (4, 3):
        for key, m in ((0, REGISTER_BROKER_RECORD_43), (17, BROKER_REGISTRATION_CHANGE_RECORD_43)):
            records[key] = (metadata_type_name(m.name), m)
    if release >= (4, 4):
        records[29] = (metadata_type_name(UNREGISTER_CONTROLLER_RECORD.name), UNREGISTER_CONTROLLER_RECORD)
    return records
