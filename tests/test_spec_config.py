"""SPEC §6's configuration table (R-CONF-06) against the settings Kafka's own broker reported.

Each writer case of ``../shared/golden-kafka/writer`` records, in ``case.json`` ``topicConfig``,
every topic setting Kafka 4.0.0 had in effect, and in ``topicConfigSet`` the few the case set: the
others are Kafka's defaults, which kafkalog's ``LogConfig`` must have too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import need_shared
from kafkalog.format.records import TimestampType
from kafkalog.log.unified import LogConfig

#: Kafka's topic setting -> LogConfig field, for the settings SPEC §6's table lists.
FIELDS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "segment.jitter.ms": "segment_jitter_ms",
    "segment.index.bytes": "segment_index_bytes",
    "index.interval.bytes": "index_interval_bytes",
    "message.timestamp.type": "message_timestamp_type",
    "compression.type": "compression_type",
    "compression.gzip.level": "compression_gzip_level",
    "compression.lz4.level": "compression_lz4_level",
    "compression.zstd.level": "compression_zstd_level",
    "max.message.bytes": "max_message_bytes",
    "preallocate": "preallocate",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "cleanup.policy": "cleanup_policy",
    "retention.ms": "retention_ms",
    "retention.bytes": "retention_bytes",
    "file.delete.delay.ms": "file_delete_delay_ms",
    "delete.retention.ms": "delete_retention_ms",
    "min.compaction.lag.ms": "min_compaction_lag_ms",
    "max.compaction.lag.ms": "max_compaction_lag_ms",
    "min.cleanable.dirty.ratio": "min_cleanable_dirty_ratio",
}


def _cases() -> list[Path]:
    return sorted(need_shared("golden-kafka/writer").glob("*/case.json"))


def _ours(field: str) -> object:
    value = getattr(LogConfig(), field)
    if isinstance(value, TimestampType):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    return value


@pytest.mark.rule("R-CONF-06")
def test_defaults_are_the_ones_kafka_reports() -> None:
    cases = _cases()
    assert len(cases) >= 17
    checked = 0
    for path in cases:
        case = json.loads(path.read_text(encoding="utf-8"))
        kafka, set_by_case = case["topicConfig"], case["topicConfigSet"]
        for name, field in FIELDS.items():
            if name in set_by_case:
                continue
            assert _ours(field) == kafka[name], f"{path.parent.name}: {name} default {_ours(field)!r}, Kafka {kafka[name]!r}"
            checked += 1
        assert LogConfig().producer_id_expiration_ms == case["broker"]["producer.id.expiration.ms"]
    assert checked > 100


@pytest.mark.rule("R-CONF-06")
def test_minimums_are_accepted() -> None:
    """The smallest values Kafka's LogConfig accepts at @1eb7644 (SPEC §6 table)."""
    cfg = LogConfig.from_properties(
        {"segment.bytes": 14, "segment.ms": 1, "segment.jitter.ms": 0, "segment.index.bytes": 4, "index.interval.bytes": 0,
         "max.message.bytes": 0, "file.delete.delay.ms": 0, "delete.retention.ms": 0, "min.compaction.lag.ms": 0,
         "max.compaction.lag.ms": 1, "min.cleanable.dirty.ratio": 0, "retention.ms": -1, "retention.bytes": -1}
    )
    assert (cfg.segment_bytes, cfg.segment_index_bytes, cfg.index_interval_bytes) == (14, 4, 0)
