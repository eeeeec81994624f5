"""What a read of a partition includes unless the reader asks for more (SPEC R-VAL-10, R-VAL-11):
the one rule ``cat``, ``scan``, ``export``, ``info``, ``dump --isolation`` and the Spark source
apply, so that they give the same rows and ranges.

* :func:`log_start_offset`: where a partition's read starts, as a consumer's "earliest" does (the
  offsets below it were deleted; ``include_deleted`` reads what the files still hold of them).
* :func:`is_internal_topic` and :func:`includes_topic`: Kafka's own topics are left out of a read
  of every topic, as Kafka's consumers leave them out of a pattern subscription
  (``exclude.internal.topics=true``), and read when named or asked for (``include_internal``).
"""

from __future__ import annotations

from collections.abc import Collection

__all__ = ["INTERNAL_TOPICS", "includes_topic", "is_internal_topic", "log_start_offset"]

#: The topics Kafka keeps for itself: ``Topic.isInternal``'s (group coordinator, transaction
#: coordinator, share coordinator), KRaft's metadata log (never served to a consumer) and the
#: tiered-storage metadata topic (TopicBasedRemoteLogMetadataManager). Other clients' bookkeeping
#: topics (Confluent's ``_schemas`` and ``_confluent-*``, Connect's, Streams') are ordinary topics to
#: Kafka, which returns them to a pattern subscription, so they are read like any other.
INTERNAL_TOPICS: frozenset[str] = frozenset({
    "__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata", "__remote_log_metadata",
})


def is_internal_topic(topic: str) -> bool:
    """Whether ``topic`` is one of Kafka's own (:data:`INTERNAL_TOPICS`)."""
    return topic in INTERNAL_TOPICS


def includes_topic(topic: str, named: Collection[str] | None = None, *, include_internal: bool = False) -> bool:
    """Whether a read includes ``topic``: the topics ``named`` when there are any (an internal one
    too, as a consumer subscribing to it by name reads it), else every topic but Kafka's internal
    ones unless ``include_internal``."""
    if named is not None:
        return topic in named
    return include_internal or not is_internal_topic(topic)


def log_start_offset(checkpoint: int | None, first_segment: int | None) -> int | None:
    """A partition's log start offset as Kafka's LogLoader sets it when it loads the log: the
    larger of its ``log-start-offset-checkpoint`` entry (records below it were deleted by
    DeleteRecords or retention, their segment not yet) and its first segment's base offset; the
    entry alone without a segment, None without either. A consumer's "earliest" starts there."""
    if first_segment is None:
        return checkpoint
    return first_segment if checkpoint is None else max(checkpoint, first_segment)
