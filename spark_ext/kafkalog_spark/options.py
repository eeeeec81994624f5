"""The source's options, parsed once into plain, picklable values.

Option names and meanings follow Spark's Kafka source (``subscribe``, ``startingOffsets``, ...);
Spark hands them to Python lower-cased, so lookups here are by lower-cased key.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from kafkalog.log.reads import is_internal_topic

from .errors import SourceOptionError

__all__ = ["EARLIEST", "LATEST", "OffsetSpec", "SourceOptions", "parse_options"]

log = logging.getLogger(__name__)

#: Spark's (and Kafka's ListOffsets) sentinels in per-partition offset JSON.
EARLIEST = -2
LATEST = -1

TopicPartition = tuple[str, int]

_KNOWN = {
    "path", "paths", "subscribe", "subscribepattern", "assign",
    "startingoffsets", "endingoffsets", "startingtimestamp", "endingtimestamp",
    "startingoffsetsbytimestamp", "endingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy",
    "isolationlevel", "kafka.isolation.level", "includeheaders", "includemetadata", "includeinternaltopics", "decodeinternaltopics",
    "includedeleted",
    "kafkaversion",
    "failondataloss", "ignorecorruptfiles", "verifycrc", "maxbytesperpartition", "opencostinbytes", "minpartitions",
    "maxoffsetspertrigger", "privatekeys", "planningjobs",
    "keyformat", "valueformat", "schemastopic", "schemaregistry", "onundecodable", "validate",  # keys and values as data (kafkalog_spark.source)
}


@dataclass(frozen=True)
class OffsetSpec:
    """Where reading starts or ends: ``earliest``, ``latest``, per-partition offsets, one
    timestamp for every partition, or per-partition timestamps (resolved to the first offset whose
    timestamp is at or after it)."""

    kind: Literal["earliest", "latest", "offsets", "timestamp", "timestamps"]
    timestamp: int | None = None
    per_partition: tuple[tuple[str, int, int], ...] = ()

    def partitions(self) -> dict[TopicPartition, int]:
        """The per-partition values (offsets or timestamps) as a dict."""
        return {(t, p): v for t, p, v in self.per_partition}


@dataclass(frozen=True)
class SourceOptions:
    """Every option the reader uses, validated. Build with :func:`parse_options`."""

    paths: tuple[str, ...]
    storage_options: tuple[tuple[str, object], ...] = ()
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    assign: tuple[TopicPartition, ...] | None = None
    starting: OffsetSpec = OffsetSpec("earliest")
    ending: OffsetSpec = OffsetSpec("latest")
    start_by_timestamp_no_match: Literal["error", "latest"] = "error"
    read_committed: bool = False
    include_headers: bool = False
    include_metadata: bool = False
    include_internal_topics: bool = False
    include_deleted: bool = False
    #: ``kafkaVersion``: the Kafka release whose decoders fill ``decoded`` (None: the newest; ``auto``: each segment's own)
    kafka_version: str | None = None
    fail_on_data_loss: bool = True
    ignore_corrupt_files: bool = False
    verify_crc: bool = True
    skip_corrupt: bool = False
    max_bytes_per_partition: int | None = None  # None: the session's spark.sql.files.maxPartitionBytes
    open_cost_in_bytes: int | None = None  # None: the session's spark.sql.files.openCostInBytes
    min_partitions: int | None = None  # None: spark.sql.files.minPartitionNum, else the default parallelism
    max_offsets_per_trigger: int | None = None
    #: ``planningJobs``: the processes a batch planning of many partition dirs on local disk may use (None: the CPUs available)
    planning_jobs: int | None = None
    #: (key-pair id, PEM file on the driver) for encrypted tiered segments (SPEC Appendix D); paths only, no key material
    private_keys: tuple[tuple[str, str], ...] = ()
    _pattern: re.Pattern[str] | None = field(default=None, compare=False, repr=False)

    def wants_topic(self, topic: str) -> bool:
        """True when ``topic`` is selected by subscribe/subscribePattern/assign and the internal-topic rule.

        Topics named in ``subscribe`` or ``assign`` are read even when internal (Kafka's own,
        :data:`kafkalog.log.reads.INTERNAL_TOPICS`); with ``subscribePattern`` or no subscription
        they need ``includeInternalTopics=true``, as a Kafka consumer's pattern subscription with
        ``exclude.internal.topics=true`` (SPEC R-VAL-11).
        """
        if self.subscribe is not None:
            return topic in self.subscribe
        if self.assign is not None:
            return any(t == topic for t, _ in self.assign)
        if is_internal_topic(topic) and not self.include_internal_topics:
            return False
        if self._pattern is not None:
            return self._pattern.fullmatch(topic) is not None
        return True

    def wants_partition(self, topic: str, partition: int) -> bool:
        """True when the topic is wanted and, under ``assign``, the partition is assigned."""
        if self.assign is not None:
            return (topic, partition) in self.assign
        return self.wants_topic(topic)


def _bool(opts: Mapping[str, str], key: str, default: bool) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    v = str(raw).strip().lower()
    if v not in ("true", "false"):
        raise SourceOptionError(f"option {key} must be true or false, got {raw!r}")
    return v == "true"


def _int(raw: str, key: str) -> int:
    try:
        return int(str(raw).strip())
    except ValueError:
        raise SourceOptionError(f"option {key} expects an integer, got {raw!r}") from None


def _json(raw: str, key: str) -> object:
    try:
        return json.loads(raw)
    except json.JSONDecodeError as e:
        raise SourceOptionError(f"option {key} is not valid JSON ({e.msg} at character {e.pos}): {raw!r}") from None


def _partition_values(raw: str, key: str) -> tuple[tuple[str, int, int], ...]:
    """``{"topic": {"0": 23, "1": -2}}`` as (topic, partition, value) triples."""
    obj = _json(raw, key)
    if not isinstance(obj, dict):
        raise SourceOptionError(f'option {key} expects {{"topic": {{"partition": value}}}}, got {raw!r}')
    out = []
    for topic, parts in obj.items():
        if not isinstance(parts, dict):
            raise SourceOptionError(f'option {key}: topic {topic!r} needs {{"partition": value}}, got {parts!r}')
        for p, v in parts.items():
            if not str(p).lstrip("-").isdigit() or isinstance(v, bool) or not isinstance(v, int):
                raise SourceOptionError(f"option {key}: {topic}-{p} needs an integer partition and value, got {v!r}")
            out.append((str(topic), int(p), int(v)))
    return tuple(sorted(out))


def _offset_spec(opts: Mapping[str, str], prefix: str, default: str) -> OffsetSpec:
    """Spark's precedence: ``<prefix>Timestamp``, then ``<prefix>OffsetsByTimestamp``, then ``<prefix>Offsets``."""
    ts_key, by_ts_key, off_key = f"{prefix}timestamp", f"{prefix}offsetsbytimestamp", f"{prefix}offsets"
    if ts_key in opts:
        return OffsetSpec("timestamp", timestamp=_int(opts[ts_key], ts_key))
    if by_ts_key in opts:
        return OffsetSpec("timestamps", per_partition=_partition_values(opts[by_ts_key], by_ts_key))
    raw = opts.get(off_key, default).strip()
    if raw.lower() in ("earliest", "latest"):
        return OffsetSpec(raw.lower())  # type: ignore[arg-type]
    return OffsetSpec("offsets", per_partition=_partition_values(raw, off_key))


def _storage_options(opts: Mapping[str, str]) -> tuple[tuple[str, object], ...]:
    """``fs.<name>`` options, passed to the fsspec filesystem (JSON values decoded, others kept as strings)."""
    out = []
    for k, v in opts.items():
        if k.startswith("fs."):
            try:
                value: object = json.loads(v)
            except (json.JSONDecodeError, TypeError):
                value = v
            out.append((k[3:], value))
    return tuple(sorted(out))


def _paths(opts: Mapping[str, str]) -> tuple[str, ...]:
    """``path`` (comma-separated) and ``paths`` (what ``load([p1, p2])`` sends: a JSON list)."""
    found: list[str] = []
    raw = opts.get("paths", "").strip()
    if raw:
        listed = _json(raw, "paths") if raw.startswith("[") else raw.split(",")
        if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
            raise SourceOptionError(f"option paths expects a list of paths, got {raw!r}")
        found.extend(listed)
    found.extend(opts.get("path", "").split(","))
    paths = tuple(p.strip() for p in found if p.strip())
    if not paths:
        raise SourceOptionError("no path: use load(path) or option('path', ...) (comma-separated, globs allowed)")
    return paths


def _kafka_version(opts: dict[str, str]) -> str | None:
    """``kafkaVersion``: a Kafka release line from 4.0 to 4.4 (or one of its patch releases), or
    ``auto``: the release each segment's own records say wrote it, as ``--kafka-version auto``
    (:func:`kafkalog.internal.detect.detect_release`, SPEC R-KVER-01)."""
    text = opts.get("kafkaversion")
    if text is None:
        return None
    from kafkalog.internal.detect import AUTO
    from kafkalog.internal.releases import parse_release

    if text.strip().lower() == AUTO:
        return AUTO

    try:
        parse_release(text)
    except ValueError as e:
        raise SourceOptionError(f"option kafkaVersion: {e}") from None
    return text


def parse_options(options: Mapping[str, str], *, streaming: bool = False) -> SourceOptions:
    """Validate Spark's option map (keys lower-cased) into :class:`SourceOptions`.

    Batch reads default to ``startingOffsets=earliest`` and ``endingOffsets=latest``; streaming
    reads to ``startingOffsets=latest`` and reject ending options, as Spark's Kafka source does.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    for k in opts:
        if k not in _KNOWN and not k.startswith("fs."):
            log.warning("kafkalog source: ignoring unknown option %r", k)
    paths = _paths(opts)

    strategies = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(strategies) > 1:
        raise SourceOptionError(f"use at most one of subscribe, subscribePattern and assign, got {', '.join(strategies)}")
    subscribe = pattern = assign = compiled = None
    if "subscribe" in opts:
        subscribe = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not subscribe:
            raise SourceOptionError("option subscribe names no topic")
    if "subscribepattern" in opts:
        pattern = opts["subscribepattern"].strip()
        try:
            compiled = re.compile(pattern)
        except re.error as e:
            raise SourceOptionError(f"option subscribePattern is not a valid regular expression: {e}") from None
    if "assign" in opts:
        obj = _json(opts["assign"], "assign")
        if not isinstance(obj, dict) or not all(isinstance(v, list) and all(isinstance(p, int) for p in v) for v in obj.values()):
            raise SourceOptionError(f'option assign expects {{"topic": [partition, ...]}}, got {opts["assign"]!r}')
        assign = tuple(sorted((str(t), int(p)) for t, ps in obj.items() for p in ps))

    if streaming:
        for k in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if k in opts:
                raise SourceOptionError(f"option {k} is not valid in streaming queries")
    starting = _offset_spec(opts, "starting", "latest" if streaming else "earliest")
    ending = _offset_spec(opts, "ending", "latest")
    if not streaming:
        if starting.kind == "latest" or (starting.kind == "offsets" and any(v == LATEST for *_, v in starting.per_partition)):
            raise SourceOptionError("starting offset can't be latest for batch queries")
        if ending.kind == "earliest" or (ending.kind == "offsets" and any(v == EARLIEST for *_, v in ending.per_partition)):
            raise SourceOptionError("ending offset can't be earliest for batch queries")
    if starting.kind == "offsets" and ending.kind == "offsets":
        end = ending.partitions()
        for t, p, s in starting.per_partition:
            e = end.get((t, p))
            if e is not None and s >= 0 and e >= 0 and s > e:
                raise SourceOptionError(f"starting offset {s} of {t}-{p} is after its ending offset {e}")

    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise SourceOptionError(f"option startingOffsetsByTimestampStrategy must be error or latest, got {strategy!r}")
    isolation = opts.get("isolationlevel", opts.get("kafka.isolation.level", "read_uncommitted")).strip().lower()
    if isolation not in ("read_uncommitted", "read_committed"):
        raise SourceOptionError(f"option isolationLevel must be read_uncommitted or read_committed, got {isolation!r}")
    sizes: dict[str, int | None] = {}
    for key, name, least in (("maxbytesperpartition", "maxBytesPerPartition", 1), ("opencostinbytes", "openCostInBytes", 0),
                             ("minpartitions", "minPartitions", 1), ("planningjobs", "planningJobs", 1)):
        sizes[key] = None if key not in opts else _int(opts[key], name)
        if sizes[key] is not None and sizes[key] < least:  # type: ignore[operator]
            raise SourceOptionError(f"option {name} must be {'positive' if least else 'zero or more'}, got {sizes[key]}")
    max_offsets = None
    if "maxoffsetspertrigger" in opts:
        max_offsets = _int(opts["maxoffsetspertrigger"], "maxOffsetsPerTrigger")
        if max_offsets <= 0:
            raise SourceOptionError(f"option maxOffsetsPerTrigger must be positive, got {max_offsets}")

    return SourceOptions(
        paths=paths,
        storage_options=_storage_options(opts),
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=starting,
        ending=ending,
        start_by_timestamp_no_match=strategy,  # type: ignore[arg-type]
        read_committed=isolation == "read_committed",
        include_headers=_bool(opts, "includeheaders", False),
        include_metadata=_bool(opts, "includemetadata", False),
        include_internal_topics=_bool(opts, "includeinternaltopics", False),
        include_deleted=_bool(opts, "includedeleted", False),
        kafka_version=_kafka_version(opts),
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        ignore_corrupt_files=_bool(opts, "ignorecorruptfiles", False),
        verify_crc=_bool(opts, "verifycrc", True),
        skip_corrupt=_bool(opts, "skipcorrupt", False),
        max_bytes_per_partition=sizes["maxbytesperpartition"],
        open_cost_in_bytes=sizes["opencostinbytes"],
        min_partitions=sizes["minpartitions"],
        max_offsets_per_trigger=max_offsets,
        planning_jobs=sizes["planningjobs"],
        private_keys=_private_keys(opts.get("privatekeys", "")),
        _pattern=compiled,
    )


def _private_keys(raw: str) -> tuple[tuple[str, str], ...]:
    """``privateKeys``: ``ID=FILE`` pairs, comma-separated (the key-pair ids of Aiven's tiered-storage
    plug-in and PEM files on the driver; the CLI's ``--private-key``)."""
    out = []
    for item in (i.strip() for i in raw.split(",")):
        if not item:
            continue
        key_id, sep, path = item.partition("=")
        if not sep or not key_id.strip() or not path.strip():
            raise SourceOptionError(f"option privateKeys takes ID=FILE pairs separated by commas, got {item!r}")
        out.append((key_id.strip(), path.strip()))
    return tuple(out)
