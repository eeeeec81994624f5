"""kafka-python's default partitioner, the independent reference for where a keyed record goes."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():  # kafka-python loads its protocol schemas with a deprecated importlib.resources call
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import DefaultPartitioner
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

__all__ = ["kafka_python_murmur2", "kafka_python_partition"]


class _Cluster:
    """The three ClusterMetadata calls kafka-python's DefaultPartitioner makes, for one topic."""

    def __init__(self, num_partitions: int) -> None:
        self.parts = set(range(num_partitions))

    def topics(self) -> set[str]:
        return {"t"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self.parts

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return self.parts


def kafka_python_partition(key: bytes, num_partitions: int) -> int:
    """Where kafka-python's default partitioner sends a record with serialized key ``key``."""
    return DefaultPartitioner().partition("t", key, key, b"", b"", _Cluster(num_partitions))
