"""Consumer groups at rest: committed offsets, group metadata and lag, read from a data dir.

:func:`read_groups` replays every ``__consumer_offsets-N`` partition found under the given
directories in log order, as a group coordinator loading the partition does:

* an offset commit (record types 0/1) sets the group's offset for a topic-partition; a later
  one replaces it, a tombstone removes it. Commits in transactional batches take effect when
  their producer's COMMIT marker is read (and are dropped on ABORT), unless a commit for the same
  partition was written after them;
* a classic group's metadata (type 2) is the latest value; a tombstone removes the group (it is
  still listed, as ``Empty`` with no metadata, while it has live offsets, as Kafka loads it);
* consumer groups of KIP-848 (types 3-8) and share groups (types 9-14) are rebuilt from their
  group, member, assignment and partition-metadata records (tombstones remove them).

Lag is against each partition's log end offset: the offset after the last batch of that
partition's directory among the same directories (``None`` when the partition is not there).
Everything is returned as dataclasses; :func:`groups_json` gives a JSON-able form.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafkalog.errors import KafkaLogError
from kafkalog.format.files import FileKind, kind_of
from kafkalog.format.records.control import ControlType, control_type_of
from kafkalog.format.records.stream import LogReader
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.internal import decode_log
from kafkalog.log.source import partition_dirs
from kafkalog.tools.command import EXIT_BAD_DATA, EXIT_IO, EXIT_OK, is_kafka_file, missing_or_empty

__all__ = [
    "CommittedOffset",
    "ConsumerGroup",
    "GroupMember",
    "GroupsResult",
    "describe_groups",
    "groups_json",
    "log_end_offset",
    "read_groups",
]

OFFSETS_TOPIC = "__consumer_offsets"
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")


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
    client_id: str
    client_host: str
    group_instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int | None = None
    session_timeout_ms: int | None = None
    #: subscribed topics (classic: from the consumer-protocol subscription, when it parses)
    subscription: list[str] | None = None
    #: assigned partitions as (topic, partition); a topic is its id when its name is unknown
    assignment: list[tuple[str, int]] | None = None
    member_epoch: int | None = None

    def to_json(self) -> dict[str, Any]:
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
            "assignment": None if self.assignment is None else [{"topic": t, "partition": p} for t, p in self.assignment],
        }


@dataclass
class ConsumerGroup:
    """One group: its kind (``classic``, ``consumer`` or ``share``), state, members and offsets."""

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
        }


@dataclass
class GroupsResult:
    """All groups found, and the records that could not be decoded (messages with location)."""

    groups: list[ConsumerGroup]
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"groups": [g.to_json() for g in self.groups], "errors": list(self.errors)}


# --------------------------------------------------------------------------- partition dirs
def _partition_dirs(dirs: Iterable[str | os.PathLike[str]]) -> dict[tuple[str, int], list[str]]:
    found: dict[tuple[str, int], list[str]] = {}
    for d in dirs:
        d = os.fspath(d)
        if not os.path.isdir(d):
            raise FileNotFoundError(d)
        for pdir in partition_dirs(d):  # kafkalog's one discovery: any depth, -delete/-future/-stray skipped
            m = _PARTITION_DIR.match(os.path.basename(pdir))
            if m:
                found.setdefault((m.group(1), int(m.group(2))), []).append(pdir)
    return found


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
    topic_names: dict[str, str] = field(default_factory=dict)


_CONSUMER_TYPES = {3, 4, 5, 6, 7, 8, 16}
#: share-group record types -> the consumer-group type with the same role
_SHARE_TYPES = {11: 3, 9: 4, 10: 5, 12: 6, 13: 7, 14: 8, 15: 15}


def _group_key(rtype: int, data: dict[str, Any]) -> str:
    return data["group"] if rtype in (0, 1, 2) else data["groupId"]


class _Replay:
    def __init__(self) -> None:
        self.groups: dict[str, _State] = {}
        self.pending: dict[int, list[tuple[str, tuple[str, int], _Offset | None]]] = {}
        self.errors: list[str] = []

    def state(self, group: str, partition: int) -> _State:
        st = self.groups.get(group)
        if st is None:
            st = self.groups[group] = _State(group, partition)
        return st

    def partition(self, number: int, segments: list[str]) -> None:
        for seg in segments:
            try:
                for item in decode_log(seg, decoder="offsets"):
                    batch = item.batch
                    if item.control:
                        self.marker(batch, item.record)
                        continue
                    if item.error is not None:
                        self.errors.append(str(item.error))
                        continue
                    assert item.decoded is not None
                    txn_pid = batch.producer_id if isinstance(batch, RecordBatch) and batch.is_transactional else None
                    self.apply(number, item.record.offset, item.decoded.record_type, item.decoded.key["data"],
                               item.decoded.value, txn_pid)
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

    def apply(self, number: int, offset: int, rtype: int | None, key: dict[str, Any], value: Any, txn_pid: int | None) -> None:
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
        if rtype in _CONSUMER_TYPES or rtype in _SHARE_TYPES:
            self.modern(number, rtype, group, key, data)

    def modern(self, number: int, rtype: int, group: str, key: dict[str, Any], data: dict[str, Any] | None) -> None:
        st = self.groups.get(group)
        if data is None and st is None:
            return
        if st is None:
            st = self.state(group, number)
        base = rtype if rtype in _CONSUMER_TYPES else _SHARE_TYPES[rtype]
        st.kind = "consumer" if rtype in _CONSUMER_TYPES else "share"
        member = key.get("memberId")
        if base == 3:  # group metadata
            if data is None:
                st.kind, st.epoch, st.target_epoch = None, None, None
                st.members.clear()
                st.current.clear()
            else:
                st.epoch = data["epoch"]
        elif base == 4:  # subscribed topics' metadata: topic ids and names
            if data is not None:
                for t in data.get("topics", []):
                    st.topic_names[t["topicId"]] = t["topicName"]
        elif base == 5:  # member metadata
            if data is None:
                st.members.pop(member, None)
                st.current.pop(member, None)
            else:
                st.members[member] = data
        elif base == 6:  # target assignment epoch
            st.target_epoch = None if data is None else data["assignmentEpoch"]
        elif base == 8:  # member's current assignment
            if data is None:
                st.current.pop(member, None)
            else:
                st.current[member] = data


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
                if isinstance(asg, dict) else None,
            )
        )
    return out


def _modern_members(st: _State) -> list[GroupMember]:
    out = []
    for member_id, m in sorted(st.members.items()):
        cur = st.current.get(member_id)
        assignment = None
        if cur is not None:
            assignment = [
                (st.topic_names.get(tp["topicId"], tp["topicId"]), p)
                for tp in cur.get("assignedPartitions", [])
                for p in tp["partitions"]
            ]
        classic = m.get("classicMemberMetadata")
        out.append(
            GroupMember(
                member_id=member_id,
                client_id=m["clientId"],
                client_host=m["clientHost"],
                group_instance_id=m.get("instanceId"),
                rack_id=m.get("rackId"),
                rebalance_timeout_ms=m.get("rebalanceTimeoutMs"),
                session_timeout_ms=classic.get("sessionTimeoutMs") if isinstance(classic, dict) else None,
                subscription=list(m.get("subscribedTopicNames", [])),
                assignment=assignment,
                member_epoch=None if cur is None else cur["memberEpoch"],
            )
        )
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


def read_groups(*dirs: str | os.PathLike[str]) -> GroupsResult:
    """Every consumer group stored in the ``__consumer_offsets`` partitions under ``dirs``."""
    parts = _partition_dirs(dirs)
    replay = _Replay()
    for (topic, number), pdirs in sorted(parts.items()):
        if topic == OFFSETS_TOPIC:
            for pdir in pdirs:
                replay.partition(number, _segments(pdir))
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
        if st.classic is not None:
            meta = st.classic
            members = _classic_members(meta)
            g = ConsumerGroup(
                group_id=gid, group_type="classic", state="Stable" if members else "Empty",
                protocol_type=meta["protocolType"], protocol=meta["protocol"], generation=meta["generation"],
                leader=meta["leader"], current_state_timestamp=meta.get("currentStateTimestamp"),
                members=members, offsets=offsets, source_partition=st.partition,
            )
        elif st.kind is not None:
            g = ConsumerGroup(
                group_id=gid, group_type=st.kind, state=_modern_state(st),
                protocol_type="consumer" if st.kind == "consumer" else "share", generation=st.epoch,
                members=_modern_members(st), offsets=offsets, source_partition=st.partition,
            )
        elif offsets:
            g = ConsumerGroup(group_id=gid, group_type="classic", state="Empty", offsets=offsets, source_partition=st.partition)
        else:
            continue  # removed: no metadata and no offsets left
        groups.append(g)
    return GroupsResult(groups, replay.errors)


def groups_json(*dirs: str | os.PathLike[str]) -> dict[str, Any]:
    """:func:`read_groups` as a JSON-able dict: ``{"groups": [...], "errors": [...]}``."""
    return read_groups(*dirs).to_json()


_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID")


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
            rows.append((
                g.group_id, o.topic, str(o.partition), str(o.offset),
                "-" if o.log_end_offset is None else str(o.log_end_offset), "-" if o.lag is None else str(o.lag),
                m.member_id if m else "-", m.client_host if m else "-", m.client_id if m else "-",
            ))
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(_COLUMNS)]
    lines = [" ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [_COLUMNS, *rows]]
    lines.append("")
    for g in result.groups:
        lines.append(
            f"{g.group_id}: {g.group_type} group, state {g.state}, protocol {g.protocol or '-'}"
            f" ({g.protocol_type or '-'}), generation {'-' if g.generation is None else g.generation},"
            f" {len(g.members)} member(s), {len(g.offsets)} committed partition(s)"
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
    res = read_groups(*args.dirs)
    if args.json:
        print(json.dumps(res.to_json(), separators=(",", ":")))
    else:
        print(describe_groups(res))
    for err in res.errors:
        print(f"error: {err}", file=sys.stderr)
    if not res.groups and not any(os.path.basename(p).startswith("__consumer_offsets-") for d in args.dirs for p, _, _ in os.walk(d)):
        print(f"kafkalog groups: no __consumer_offsets partition under {' '.join(args.dirs)}: no committed offsets to show",
              file=sys.stderr)
    return EXIT_BAD_DATA if res.errors else EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog groups`` to the command line."""
    g = sub.add_parser("groups", help="consumer groups' committed offsets and lag, from a data dir at rest", description=(
        "Read __consumer_offsets partitions under the given log dirs and print each consumer group's latest committed "
        "offset per topic-partition, its state and members, and its lag against the partition's log end offset when "
        "that partition's directory is there too."))
    g.add_argument("dirs", nargs="+", metavar="DIR")
    g.add_argument("--json", action="store_true", help="one JSON object")
    g.set_defaults(func=_command)
