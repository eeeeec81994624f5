"""Consumer groups at rest: committed offsets, group metadata and lag, read from a data dir.

:func:`read_groups` replays every ``__consumer_offsets-N`` partition found under the given
directories in log order, as a group coordinator loading the partition does:

* an offset commit (record types 0/1) sets the group's offset for a topic-partition; a later
  one replaces it, a tombstone removes it. Commits in transactional batches take effect when
  their producer's COMMIT marker is read (and are dropped on ABORT), unless a commit for the same
  partition was written after them;
* a classic group's metadata (type 2) is the latest value; a tombstone removes the group (it is
  still listed, as ``Empty`` with no metadata, while it has live offsets, as Kafka loads it);
* consumer groups of KIP-848 (types 3-8), share groups (types 9-15; 9 only
  in Kafka 4.0) and streams groups of
  KIP-1071 (types 17, 19-23: members with their process, target and current tasks, and the
  topology's subtopologies) are rebuilt from their group, member, assignment, metadata and
  topology records (tombstones remove them);
* a share group's partitions' state (start offset, state and leader epochs) is replayed from the
  ``__share_group_state-N`` partitions: a ShareSnapshot replaces it, a ShareUpdate moves its start
  offset and epochs, a tombstone removes it.

Records are read as the Kafka release ``release`` (``--kafka-version``, default the newest)
writes them, with the decoders of :mod:`kafkalog.internal`.

Lag is against each partition's log end offset: the offset after the last batch of that
partition's directory among the same directories (``None`` when the partition is not there).
Everything is returned as dataclasses; :func:`groups_json` gives a JSON-able form.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafkalog.errors import KafkaLogError
from kafkalog.format.files import FileKind, kind_of
from kafkalog.format.records.control import ControlType, control_type_of
from kafkalog.format.records.stream import LogReader
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.format.releases import RELEASES
from kafkalog.tools.command import EXIT_BAD_DATA, EXIT_IO, EXIT_OK, is_kafka_file, kafka_version_arg, missing_or_empty

if TYPE_CHECKING:
    from kafkalog.internal.releases import Release

# The internal topics' decoders (construct and Kafka's message schemas) and the log layer's discovery
# are imported by the functions that read: `kafkalog --help`, which loads every command's module,
# does not load them.

__all__ = [
    "CommittedOffset",
    "ConsumerGroup",
    "GroupMember",
    "GroupsResult",
    "SharePartitionState",
    "Subtopology",
    "describe_groups",
    "groups_json",
    "log_end_offset",
    "read_groups",
]

OFFSETS_TOPIC = "__consumer_offsets"
SHARE_STATE_TOPIC = "__share_group_state"


@dataclass
class CommittedOffset:
    """A group's committed offset for one topic-partition, with the partition's end and lag."""

    topic: str
    partition: int
    offset: int
    leader_epoch: int | None
    metadata: str
    commit_timestamp: int
    expire_timestamp: int | None
    log_end_offset: int | None = None
    lag: int | None = None
    #: where the commit is stored: ``__consumer_offsets`` partition and the record's offset
    source_partition: int = -1
    source_offset: int = -1

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "leaderEpoch": self.leader_epoch,
            "metadata": self.metadata,
            "commitTimestamp": self.commit_timestamp,
            "expireTimestamp": self.expire_timestamp,
            "logEndOffset": self.log_end_offset,
            "lag": self.lag,
        }


@dataclass
class GroupMember:
    """A member of a group as its latest metadata describes it."""

    member_id: str
    #: ``None`` for a member of a consumer, share or streams group whose assignment records are
    #: stored but whose member metadata is not
    client_id: str | None
    client_host: str | None
    group_instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int | None = None
    session_timeout_ms: int | None = None
    #: subscribed topics (classic: from the consumer-protocol subscription, when it parses)
    subscription: list[str] | None = None
    #: assigned partitions as (topic, partition); a topic is its id when its name is unknown
    assignment: list[tuple[str, int]] | None = None
    member_epoch: int | None = None
    #: streams members: the Kafka Streams process, its endpoint (``host:port``) and topology epoch
    process_id: str | None = None
    user_endpoint: str | None = None
    topology_epoch: int | None = None
    #: streams members' tasks by kind (``active``, ``standby``, ``warmup``): [(subtopology, partitions)]
    target_tasks: dict[str, list[tuple[str, list[int]]]] | None = None
    current_tasks: dict[str, list[tuple[str, list[int]]]] | None = None

    def to_json(self) -> dict[str, Any]:
        def tasks(t: dict[str, list[tuple[str, list[int]]]] | None) -> dict[str, Any] | None:
            return (
                None if t is None else {k: [{"subtopologyId": s, "partitions": p} for s, p in v] for k, v in t.items()}
            )

        return {
            "memberId": self.member_id,
            "groupInstanceId": self.group_instance_id,
            "clientId": self.client_id,
            "clientHost": self.client_host,
            "rackId": self.rack_id,
            "rebalanceTimeoutMs": self.rebalance_timeout_ms,
            "sessionTimeoutMs": self.session_timeout_ms,
            "memberEpoch": self.member_epoch,
            "subscription": self.subscription,
            "assignment": None
            if self.assignment is None
            else [{"topic": t, "partition": p} for t, p in self.assignment],
            "processId": self.process_id,
            "userEndpoint": self.user_endpoint,
            "topologyEpoch": self.topology_epoch,
            "targetTasks": tasks(self.target_tasks),
            "currentTasks": tasks(self.current_tasks),
        }


@dataclass
class Subtopology:
    """One subtopology of a streams group's topology: the topics it reads, repartitions through
    and keeps its state stores' changelogs in."""

    subtopology_id: str
    source_topics: list[str]
    source_topic_regex: list[str]
    repartition_sink_topics: list[str]
    repartition_source_topics: list[str]
    changelog_topics: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "subtopologyId": self.subtopology_id,
            "sourceTopics": self.source_topics,
            "sourceTopicRegex": self.source_topic_regex,
            "repartitionSinkTopics": self.repartition_sink_topics,
            "repartitionSourceTopics": self.repartition_source_topics,
            "stateChangelogTopics": self.changelog_topics,
        }


@dataclass
class SharePartitionState:
    """A share group's state of one topic-partition (``__share_group_state``): where consumption
    starts, with lag against the partition's log end offset when its name and directory are known."""

    topic_id: str
    #: the topic's name when the group's metadata names it (else ``None``)
    topic: str | None
    partition: int
    start_offset: int
    state_epoch: int | None
    leader_epoch: int
    snapshot_epoch: int
    log_end_offset: int | None = None
    lag: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "topicId": self.topic_id,
            "topic": self.topic,
            "partition": self.partition,
            "startOffset": self.start_offset,
            "stateEpoch": self.state_epoch,
            "leaderEpoch": self.leader_epoch,
            "snapshotEpoch": self.snapshot_epoch,
            "logEndOffset": self.log_end_offset,
            "lag": self.lag,
        }


@dataclass
class ConsumerGroup:
    """One group: its kind (``classic``, ``consumer``, ``share`` or ``streams``), state, members and
    offsets; a share group's partitions' state; a streams group's topology."""

    group_id: str
    group_type: str
    state: str
    protocol_type: str | None = None
    protocol: str | None = None
    generation: int | None = None
    leader: str | None = None
    current_state_timestamp: int | None = None
    members: list[GroupMember] = field(default_factory=list)
    offsets: list[CommittedOffset] = field(default_factory=list)
    #: the ``__consumer_offsets`` partition holding the group
    source_partition: int = -1
    share_partitions: list[SharePartitionState] = field(default_factory=list)
    topology_epoch: int | None = None
    topology: list[Subtopology] | None = None

    @property
    def total_lag(self) -> int | None:
        lags = [o.lag for o in self.offsets if o.lag is not None]
        return sum(lags) if lags else None

    def to_json(self) -> dict[str, Any]:
        return {
            "groupId": self.group_id,
            "type": self.group_type,
            "state": self.state,
            "protocolType": self.protocol_type,
            "protocol": self.protocol,
            "generation": self.generation,
            "leader": self.leader,
            "currentStateTimestamp": self.current_state_timestamp,
            "offsetsPartition": self.source_partition,
            "members": [m.to_json() for m in self.members],
            "offsets": [o.to_json() for o in self.offsets],
            "totalLag": self.total_lag,
            "sharePartitions": [p.to_json() for p in self.share_partitions],
            "topologyEpoch": self.topology_epoch,
            "topology": None if self.topology is None else [t.to_json() for t in self.topology],
        }


@dataclass
class GroupsResult:
    """All groups found, and the records that could not be decoded (messages with location)."""

    groups: list[ConsumerGroup]
    errors: list[str] = field(default_factory=list)
    #: the Kafka release line the records were read as (``--kafka-version``, or what ``auto`` chose)
    kafka_version: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"groups": [g.to_json() for g in self.groups], "errors": list(self.errors), "kafkaVersion": self.kafka_version}


# --------------------------------------------------------------------------- partition dirs
def _partition_dirs(dirs: Iterable[str | os.PathLike[str]]) -> dict[tuple[str, int], list[str]]:
    from kafkalog.log.gaps import PARTITION_DIR
    from kafkalog.log.source import partition_dirs

    found: dict[tuple[str, int], list[str]] = {}
    for d in dirs:
        d = os.fspath(d)
        if not os.path.isdir(d):
            raise FileNotFoundError(d)
        for pdir in partition_dirs(d):  # kafkalog's one discovery: any depth, -delete/-future/-stray skipped
            m = PARTITION_DIR.match(os.path.basename(pdir))
            if m:
                found.setdefault((m.group(1), int(m.group(2))), []).append(pdir)
    return found


def _auto_release(parts: dict[tuple[str, int], list[str]]) -> str:
    """``--kafka-version auto`` for the groups' topics: the newest release any of their segments asks for."""
    from kafkalog.internal import decoder_for_topic
    from kafkalog.internal.detect import detect_release
    from kafkalog.internal.releases import NEWEST

    found = []
    for (topic, _number), pdirs in parts.items():
        if topic in (OFFSETS_TOPIC, SHARE_STATE_TOPIC):
            for seg in (seg for pdir in pdirs for seg in _segments(pdir)):
                try:
                    found.append(detect_release(seg, decoder_for_topic(topic)))
                except KafkaLogError:
                    continue  # a corrupt segment says nothing: the replay reports it
    newest = max((d.release for d in found if d.from_records), default=NEWEST)
    return f"{newest[0]}.{newest[1]}"


def _segments(partition_dir: str) -> list[str]:
    logs = [n for n in os.listdir(partition_dir) if kind_of(n) is FileKind.LOG]
    return [os.path.join(partition_dir, n) for n in sorted(logs, key=lambda n: int(n.split(".")[0].split("-")[0]))]


def log_end_offset(partition_dir: str | os.PathLike[str]) -> int | None:
    """The offset after the last batch in a partition directory's segments (the base offset of
    the newest segment when no segment holds a batch; ``None`` without segments)."""
    segs = _segments(os.fspath(partition_dir))
    for seg in reversed(segs):
        last = None
        with LogReader(seg) as reader:
            for batch in reader.batches():
                last = batch
        if last is not None:
            return last.last_offset + 1
    if segs:
        return int(os.path.basename(segs[-1]).split(".")[0])
    return None


# ------------------------------------------------------------------------------ the replay
@dataclass
class _Offset:
    value: dict[str, Any]
    partition: int
    record_offset: int


@dataclass
class _State:
    """Everything known about one group while replaying."""

    group_id: str
    partition: int
    classic: dict[str, Any] | None = None
    offsets: dict[tuple[str, int], _Offset] = field(default_factory=dict)
    # modern groups (consumer: types 3-8, share: 9-14)
    kind: str | None = None
    epoch: int | None = None
    target_epoch: int | None = None
    members: dict[str, dict[str, Any]] = field(default_factory=dict)
    current: dict[str, dict[str, Any]] = field(default_factory=dict)
    target: dict[str, dict[str, Any]] = field(default_factory=dict)
    topic_names: dict[str, str] = field(default_factory=dict)
    topology: dict[str, Any] | None = None
    #: share groups: (topic id, partition) -> the partition's state from ``__share_group_state``
    share_state: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)


_CONSUMER_TYPES = {3, 4, 5, 6, 7, 8, 16}
#: share-group record types -> the consumer-group type with the same role
_SHARE_TYPES = {11: 3, 9: 4, 10: 5, 12: 6, 13: 7, 14: 8, 15: 15}
#: streams-group record types (KIP-1071) -> the consumer-group type with the same role (23: topology)
_STREAMS_TYPES = {17: 3, 19: 5, 20: 6, 21: 7, 22: 8, 23: 23}
_KIND_TYPES = (("consumer", {t: t for t in _CONSUMER_TYPES}), ("share", _SHARE_TYPES), ("streams", _STREAMS_TYPES))


def _group_key(rtype: int, data: dict[str, Any]) -> str:
    return data["group"] if rtype in (0, 1, 2) else data["groupId"]


class _Replay:
    def __init__(self, release: Release) -> None:
        self.release = release
        self.groups: dict[str, _State] = {}
        self.pending: dict[int, list[tuple[str, tuple[str, int], _Offset | None]]] = {}
        self.errors: list[str] = []

    def state(self, group: str, partition: int) -> _State:
        st = self.groups.get(group)
        if st is None:
            st = self.groups[group] = _State(group, partition)
        return st

    def partition(self, number: int, segments: list[str]) -> None:
        from kafkalog.internal import decode_log

        for seg in segments:
            try:
                for item in decode_log(seg, decoder="offsets", release=self.release):
                    batch = item.batch
                    if item.control:
                        self.marker(batch, item.record)
                        continue
                    if item.error is not None:
                        self.errors.append(str(item.error))
                        continue
                    assert item.decoded is not None
                    txn_pid = batch.producer_id if isinstance(batch, RecordBatch) and batch.is_transactional else None
                    self.apply(
                        number,
                        item.record.offset,
                        item.decoded.record_type,
                        item.decoded.key["data"],
                        item.decoded.value,
                        txn_pid,
                    )
            except KafkaLogError as e:
                self.errors.append(str(e.located(file=seg)))

    def marker(self, batch: Any, record: Any) -> None:
        try:
            ctype, _ = control_type_of(record.key)
        except KafkaLogError as e:
            self.errors.append(str(e))
            return
        if ctype not in (ControlType.COMMIT, ControlType.ABORT):
            return
        pending = self.pending.pop(batch.producer_id, [])
        if ctype is ControlType.ABORT:
            return
        for group, tp, off in pending:
            st = self.groups.get(group)
            if st is None:
                if off is None:
                    continue
                st = self.state(group, off.partition)
            current = st.offsets.get(tp)
            if off is None:
                st.offsets.pop(tp, None)
            elif current is None or current.record_offset < off.record_offset:
                st.offsets[tp] = off

    def apply(
        self, number: int, offset: int, rtype: int | None, key: dict[str, Any], value: Any, txn_pid: int | None
    ) -> None:
        assert rtype is not None
        group = _group_key(rtype, key)
        data = None if value is None else value["data"]
        if rtype in (0, 1):
            tp = (key["topic"], key["partition"])
            off = None if data is None else _Offset(data, number, offset)
            if txn_pid is not None:
                self.pending.setdefault(txn_pid, []).append((group, tp, off))
                return
            if off is None:
                st = self.groups.get(group)
                if st is not None:
                    st.offsets.pop(tp, None)
            else:
                self.state(group, number).offsets[tp] = off
            return
        if rtype == 2:
            if data is None:
                st = self.groups.get(group)
                if st is not None:
                    st.classic = None
            else:
                self.state(group, number).classic = data
            return
        for kind, types in _KIND_TYPES:
            if rtype in types:
                self.modern(number, kind, types[rtype], group, key, data)

    def modern(
        self, number: int, kind: str, base: int, group: str, key: dict[str, Any], data: dict[str, Any] | None
    ) -> None:
        st = self.groups.get(group)
        if data is None and st is None:
            return
        if st is None:
            st = self.state(group, number)
        st.kind = kind
        member = key.get("memberId")
        if base == 3:  # group metadata
            if data is None:
                st.kind, st.epoch, st.target_epoch, st.topology = None, None, None, None
                st.members.clear()
                st.current.clear()
                st.target.clear()
            else:
                st.epoch = data["epoch"]
        elif base in (4, 15):  # topics' metadata (share groups: their state partitions): ids and names
            for name in ("topics", "initializingTopics", "initializedTopics", "deletingTopics"):
                for t in (data or {}).get(name) or []:
                    st.topic_names[t["topicId"]] = t["topicName"]
        elif base == 5:  # member metadata
            if data is None:
                st.members.pop(member, None)
                st.current.pop(member, None)
                st.target.pop(member, None)
            else:
                st.members[member] = data
        elif base == 6:  # target assignment epoch
            st.target_epoch = None if data is None else data["assignmentEpoch"]
        elif base in (7, 8):  # member's target / current assignment
            held = st.target if base == 7 else st.current
            if data is None:
                held.pop(member, None)
            else:
                held[member] = data
        elif base == 23:  # streams topology
            st.topology = data

    def share_state(self, segments: list[str]) -> None:
        """Replay a ``__share_group_state`` partition as ShareCoordinatorShard does: a snapshot
        (type 0) replaces a partition's state, an update (type 1) moves its start offset and leader
        epoch when they are not -1 (the state epoch only comes with snapshots), a tombstone removes it."""
        from kafkalog.internal import decode_log

        for seg in segments:
            try:
                for item in decode_log(seg, decoder="share-group-state", release=self.release):
                    if item.control:
                        continue
                    if item.error is not None:
                        self.errors.append(str(item.error))
                        continue
                    assert item.decoded is not None
                    key = item.decoded.key["data"]
                    value = item.decoded.value
                    tp = (key["topicId"], key["partition"])
                    st = self.groups.get(key["groupId"])
                    if value is None:
                        if st is not None:
                            st.share_state.pop(tp, None)
                        continue
                    if st is None:
                        st = self.state(key["groupId"], -1)
                    data = value["data"]
                    old = st.share_state.get(tp)
                    if item.decoded.record_type == 0 or old is None:
                        st.share_state[tp] = {"stateEpoch": data.get("stateEpoch"), **data}
                    else:
                        for name in ("startOffset", "leaderEpoch"):
                            if data[name] != -1:
                                old[name] = data[name]
            except KafkaLogError as e:
                self.errors.append(str(e.located(file=seg)))


def _classic_members(meta: dict[str, Any]) -> list[GroupMember]:
    out = []
    for m in meta.get("members") or []:
        sub = m.get("subscription")
        asg = m.get("assignment")
        out.append(
            GroupMember(
                member_id=m["memberId"],
                client_id=m["clientId"],
                client_host=m["clientHost"],
                group_instance_id=m.get("groupInstanceId"),
                rebalance_timeout_ms=m.get("rebalanceTimeout"),
                session_timeout_ms=m.get("sessionTimeout"),
                subscription=list(sub["topics"]) if isinstance(sub, dict) else None,
                assignment=[(tp["topic"], p) for tp in asg["assignedPartitions"] for p in tp["partitions"]]
                if isinstance(asg, dict)
                else None,
            )
        )
    return out


_TASK_KINDS = ("active", "standby", "warmup")


def _tasks(assignment: dict[str, Any] | None) -> dict[str, list[tuple[str, list[int]]]] | None:
    """A streams member's tasks by kind from its target or current assignment record."""
    if assignment is None:
        return None
    return {k: [(t["subtopologyId"], list(t["partitions"])) for t in assignment[f"{k}Tasks"]] for k in _TASK_KINDS}


def _member_ids(st: _State) -> list[str]:
    """Every member a record names: its metadata, target or current assignment (at rest a member's
    assignment records can outlive or precede its metadata)."""
    return sorted(st.members.keys() | st.target.keys() | st.current.keys())


def _topology(data: dict[str, Any]) -> list[Subtopology]:
    return [
        Subtopology(
            subtopology_id=t["subtopologyId"],
            source_topics=list(t["sourceTopics"]),
            source_topic_regex=list(t["sourceTopicRegex"]),
            repartition_sink_topics=list(t["repartitionSinkTopics"]),
            repartition_source_topics=[r["name"] for r in t["repartitionSourceTopics"]],
            changelog_topics=[c["name"] for c in t["stateChangelogTopics"]],
        )
        for t in data["subtopologies"]
    ]


def _modern_members(st: _State) -> list[GroupMember]:
    out = []
    for member_id in _member_ids(st):
        m = st.members.get(member_id, {})
        cur = st.current.get(member_id)
        member = GroupMember(
            member_id=member_id,
            client_id=m.get("clientId"),
            client_host=m.get("clientHost"),
            group_instance_id=m.get("instanceId"),
            rack_id=m.get("rackId"),
            rebalance_timeout_ms=m.get("rebalanceTimeoutMs"),
            member_epoch=None if cur is None else cur["memberEpoch"],
        )
        if st.kind == "streams":  # tasks of subtopologies, not partitions
            endpoint = m.get("userEndpoint")
            member.process_id = m.get("processId")
            member.user_endpoint = None if endpoint is None else f"{endpoint['host']}:{endpoint['port']}"
            member.topology_epoch = m.get("topologyEpoch")
            member.target_tasks = _tasks(st.target.get(member_id))
            member.current_tasks = _tasks(cur)
        else:
            classic = m.get("classicMemberMetadata")
            member.session_timeout_ms = classic.get("sessionTimeoutMs") if isinstance(classic, dict) else None
            member.subscription = list(m.get("subscribedTopicNames", []))
            if cur is not None:
                member.assignment = [
                    (st.topic_names.get(tp["topicId"], tp["topicId"]), p)
                    for tp in cur.get("assignedPartitions", [])
                    for p in tp["partitions"]
                ]
        out.append(member)
    return out


def _modern_state(st: _State) -> str:
    if not st.members:
        return "Empty"
    if st.kind == "share":
        return "Stable"
    if (st.epoch or 0) > (st.target_epoch or 0):
        return "Assigning"
    for member_id in st.members:
        cur = st.current.get(member_id)
        if cur is None or cur["memberEpoch"] != st.target_epoch or cur["state"] != 0:
            return "Reconciling"
    return "Stable"


def read_groups(*dirs: str | os.PathLike[str], release: str | Release | None = None) -> GroupsResult:
    """Every group stored in the ``__consumer_offsets`` partitions under ``dirs``, with share
    groups' partition state from the ``__share_group_state`` partitions there, read as Kafka
    ``release`` (``"4.0"`` to ``"4.4"``, default the newest) writes them; ``"auto"``: the newest of the
    releases :func:`kafkalog.internal.detect.detect_release` finds for their segments, as the one
    coordinator that wrote them all must read every one of them."""
    from kafkalog.internal import parse_release

    parts = _partition_dirs(dirs)
    if release == "auto":
        release = _auto_release(parts)
    line = parse_release(release)
    replay = _Replay(line)
    for (topic, number), pdirs in sorted(parts.items()):
        if topic == OFFSETS_TOPIC:
            for pdir in pdirs:
                replay.partition(number, _segments(pdir))
    for (topic, _number), pdirs in sorted(parts.items()):
        if topic == SHARE_STATE_TOPIC:
            for pdir in pdirs:
                replay.share_state(_segments(pdir))
    leo_cache: dict[tuple[str, int], int | None] = {}

    def leo(tp: tuple[str, int]) -> int | None:
        if tp not in leo_cache:
            ends = []
            for pdir in parts.get(tp, []):
                try:
                    ends.append(log_end_offset(pdir))
                except KafkaLogError as e:
                    replay.errors.append(str(e))
            known = [e for e in ends if e is not None]
            leo_cache[tp] = max(known) if known else None
        return leo_cache[tp]

    groups = []
    for gid, st in sorted(replay.groups.items()):
        offsets = []
        for (topic, partition), off in sorted(st.offsets.items()):
            v = off.value
            end = leo((topic, partition))
            offsets.append(
                CommittedOffset(
                    topic=topic,
                    partition=partition,
                    offset=v["offset"],
                    leader_epoch=v.get("leaderEpoch"),
                    metadata=v["metadata"],
                    commit_timestamp=v["commitTimestamp"],
                    expire_timestamp=v.get("expireTimestamp"),
                    log_end_offset=end,
                    lag=None if end is None or v["offset"] < 0 else max(0, end - v["offset"]),
                    source_partition=off.partition,
                    source_offset=off.record_offset,
                )
            )
        shares = []
        for (topic_id, partition), v in sorted(st.share_state.items()):
            name = st.topic_names.get(topic_id)
            end = None if name is None else leo((name, partition))
            shares.append(
                SharePartitionState(
                    topic_id=topic_id,
                    topic=name,
                    partition=partition,
                    start_offset=v["startOffset"],
                    state_epoch=v["stateEpoch"],
                    leader_epoch=v["leaderEpoch"],
                    snapshot_epoch=v["snapshotEpoch"],
                    log_end_offset=end,
                    lag=None if end is None or v["startOffset"] < 0 else max(0, end - v["startOffset"]),
                )
            )
        if st.classic is not None:
            meta = st.classic
            members = _classic_members(meta)
            g = ConsumerGroup(
                group_id=gid,
                group_type="classic",
                state="Stable" if members else "Empty",
                protocol_type=meta["protocolType"],
                protocol=meta["protocol"],
                generation=meta["generation"],
                leader=meta["leader"],
                current_state_timestamp=meta.get("currentStateTimestamp"),
                members=members,
                offsets=offsets,
                source_partition=st.partition,
            )
        elif st.kind is not None:
            g = ConsumerGroup(
                group_id=gid,
                group_type=st.kind,
                state=_modern_state(st),
                protocol_type=st.kind,
                generation=st.epoch,
                members=_modern_members(st),
                offsets=offsets,
                source_partition=st.partition,
                topology_epoch=None if st.topology is None else st.topology["epoch"],
                topology=None if st.topology is None else _topology(st.topology),
            )
        elif offsets:
            g = ConsumerGroup(
                group_id=gid, group_type="classic", state="Empty", offsets=offsets, source_partition=st.partition
            )
        elif shares:  # share-partition state of a group with no record left in __consumer_offsets
            g = ConsumerGroup(group_id=gid, group_type="share", state="Empty", protocol_type="share")
        else:
            continue  # removed: no metadata and no offsets left
        g.share_partitions = shares
        groups.append(g)
    return GroupsResult(groups, replay.errors, f"{line[0]}.{line[1]}")


def groups_json(*dirs: str | os.PathLike[str], release: str | Release | None = None) -> dict[str, Any]:
    """:func:`read_groups` as a JSON-able dict: ``{"groups": [...], "errors": [...]}``."""
    return read_groups(*dirs, release=release).to_json()


def _task_text(tasks: dict[str, list[tuple[str, list[int]]]] | None) -> str:
    if tasks is None:
        return "-"
    return " ".join(f"{k}=" + (",".join(f"{s}:{'/'.join(map(str, p))}" for s, p in v) or "-") for k, v in tasks.items())


_COLUMNS = (
    "GROUP",
    "TOPIC",
    "PARTITION",
    "CURRENT-OFFSET",
    "LOG-END-OFFSET",
    "LAG",
    "CONSUMER-ID",
    "HOST",
    "CLIENT-ID",
)


def describe_groups(result: GroupsResult) -> str:
    """A text table in the layout of ``kafka-consumer-groups --describe`` (one row per committed
    partition, with the member it is assigned to when the group's metadata says; ``-`` when
    unknown), then one line per group with its kind, state, protocol and member count."""
    rows = []
    for g in result.groups:
        owner: dict[tuple[str, int], GroupMember] = {}
        for m in g.members:
            for tp in m.assignment or ():
                owner[tp] = m
        for o in g.offsets:
            m = owner.get((o.topic, o.partition))
            rows.append(
                (
                    g.group_id,
                    o.topic,
                    str(o.partition),
                    str(o.offset),
                    "-" if o.log_end_offset is None else str(o.log_end_offset),
                    "-" if o.lag is None else str(o.lag),
                    m.member_id if m else "-",
                    (m.client_host if m else None) or "-",
                    (m.client_id if m else None) or "-",
                )
            )
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(_COLUMNS)]
    lines = [" ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [_COLUMNS, *rows]]
    lines.append("")
    for g in result.groups:
        lines.append(
            f"{g.group_id}: {g.group_type} group, state {g.state}, protocol {g.protocol or '-'}"
            f" ({g.protocol_type or '-'}), generation {'-' if g.generation is None else g.generation},"
            f" {len(g.members)} member(s), {len(g.offsets)} committed partition(s)"
        )
        for p in g.share_partitions:
            lines.append(
                f"  share partition {p.topic or p.topic_id}-{p.partition}: start offset {p.start_offset},"
                f" state epoch {'-' if p.state_epoch is None else p.state_epoch}, leader epoch {p.leader_epoch},"
                f" log end offset {'-' if p.log_end_offset is None else p.log_end_offset}, lag {'-' if p.lag is None else p.lag}"
            )
        for m in g.members:
            if g.group_type == "streams":
                lines.append(
                    f"  member {m.member_id}: process {m.process_id or '-'}, client {m.client_id or '-'}@{m.client_host or '-'},"
                    f" epoch {'-' if m.member_epoch is None else m.member_epoch}"
                )
                lines.append(f"    target tasks {_task_text(m.target_tasks)}")
                lines.append(f"    current tasks {_task_text(m.current_tasks)}")
        for t in g.topology or ():
            lines.append(
                f"  subtopology {t.subtopology_id} (topology epoch {g.topology_epoch}): sources {','.join(t.source_topics) or '-'},"
                f" repartition sinks {','.join(t.repartition_sink_topics) or '-'},"
                f" repartition sources {','.join(t.repartition_source_topics) or '-'},"
                f" changelogs {','.join(t.changelog_topics) or '-'}"
            )
    return "\n".join(lines) + "\n"


def _command(args: argparse.Namespace) -> int:
    import json

    for d in args.dirs:
        if not os.path.isdir(d):
            print(f"kafkalog groups: no such directory: {d}", file=sys.stderr)
            return EXIT_IO
    if (code := missing_or_empty("groups", args.dirs, is_kafka_file)) is not None:
        return code
    res = read_groups(*args.dirs, release=args.kafka_version)
    if args.verbose and args.kafka_version == "auto":
        print(f"kafkalog groups: read as Kafka {res.kafka_version} (the newest release any segment's records need)", file=sys.stderr)
    if args.json:
        print(json.dumps(res.to_json(), separators=(",", ":")))
    else:
        print(describe_groups(res))
    for err in res.errors:
        print(f"error: {err}", file=sys.stderr)
    if not res.groups and not any(
        os.path.basename(p).startswith("__consumer_offsets-") for d in args.dirs for p, _, _ in os.walk(d)
    ):
        print(
            f"kafkalog groups: no __consumer_offsets partition under {' '.join(args.dirs)}: no committed offsets to show",
            file=sys.stderr,
        )
    return EXIT_BAD_DATA if res.errors else EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog groups`` to the command line."""
    g = sub.add_parser(
        "groups",
        help="classic, consumer, share and streams groups: members, offsets and lag, from a data dir at rest",
        description=(
            "Read __consumer_offsets (and __share_group_state) partitions under the given log dirs and print each group's "
            "latest committed offset per topic-partition, its state and members with their assignments, and its lag "
            "against the partition's log end offset when that partition's directory is there too; share groups' "
            "partition state and streams groups' tasks and topology too."
        ),
    )
    g.add_argument("dirs", nargs="+", metavar="DIR")
    g.add_argument("--json", action="store_true", help="one JSON object")
    g.add_argument(
        "--kafka-version",
        metavar="X.Y",
        type=kafka_version_arg,
        default=None,
        help=f"read the records as this Kafka release writes them ({', '.join(RELEASES)}; default the newest); auto: the "
        "newest release any segment's records need (see kafkalog dump --kafka-version auto)",
    )
    g.add_argument("-v", "--verbose", action="store_true", help="with --kafka-version auto: name on stderr the release chosen")
    g.set_defaults(func=_command)
