"""What each Kafka release from 4.0 to 4.4 writes to its internal topics and how its DumpLogSegments
prints it (``kafkalog dump --decode --kafka-version X.Y``).

Each release's message layouts and record types are data, not code: ``kafkalog/internal/data/
messages-<X.Y>.json``, written with that release's own jars by ``golden/jvm`` (``./run goldens``) and
read by :mod:`kafkalog.internal.messages`. What the files say changed after 4.0, and what the decoders
print differently:

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

from kafkalog.format.releases import NEWEST_VERSION, RELEASES, parse_version

__all__ = ["NEWEST", "RELEASES", "Release", "parse_release"]

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
