"""The committed message data (codec/kafkalog/internal/data/messages-<X.Y>.json) covers every record
type and version each release's own classes wrote in golden/kafka-<release>/, and nothing those
classes do not know.

golden/jvm writes, per coordinator record type, one record per value version, and per metadata
record type one record per version; so for those topics the data's types and versions must be
exactly the goldens'. The remote-log-metadata and control records in the goldens are a sample: the
data must hold each of them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.format.records.stream import LogReader
from kafkalog.internal.messages import ReleaseMessages, messages_of
from kafkalog.internal.releases import RELEASES, parse_release
from kafkalog.internal.wire import Reader

_I16 = struct.Struct(">h")


def _golden_root(line: str) -> Path:
    roots = sorted(GOLDEN.glob(f"kafka-{line}.*"))
    assert len(roots) == 1, roots
    return roots[0]


def _records(root: Path, topic: str) -> Iterator[tuple[bool, bytes | None, bytes | None]]:
    """(in a control batch, key, value) of every record of the topic's golden log."""
    with LogReader(root / f"{topic}-0" / "00000000000000000000.log") as reader:
        for batch in reader.batches():
            for r in batch.records():
                yield batch.is_control, r.key, r.value


def _framed(value: bytes) -> tuple[int, int]:
    """(api key, version) of a metadata-framed value."""
    r = Reader(value)
    assert r.uvarint() == 1  # frame version
    return r.uvarint(), r.uvarint()


def _coordinator_seen(root: Path, topic: str) -> set[tuple[int, int | None]]:
    seen: set[tuple[int, int | None]] = set()
    for _, key, value in _records(root, topic):
        assert key is not None
        seen.add((_I16.unpack_from(key)[0], None if value is None else _I16.unpack_from(value)[0]))
    return seen


def _coordinator_known(registry: dict) -> set[tuple[int, int | None]]:
    return {(t, v) for t, (_, value) in registry.items() for v in range(value.valid.lo, value.valid.hi + 1)}


@pytest.mark.parametrize("line", RELEASES)
def test_data_covers_every_record_the_release_wrote(line: str) -> None:
    m: ReleaseMessages = messages_of(parse_release(line))
    root = _golden_root(line)
    assert m.release == root.name[len("kafka-") :]
    for topic, registry in (
        ("__consumer_offsets", m.group_coordinator),
        ("__share_group_state", m.share_coordinator),
        ("__transaction_state", m.transaction_coordinator),
    ):
        seen = _coordinator_seen(root, topic)
        # a tombstone (version None) of a known type, and every (type, value version) the data has
        assert {t for t, v in seen if v is None} <= set(registry), topic
        assert {s for s in seen if s[1] is not None} == _coordinator_known(registry), topic
    metadata: set[tuple[int, int]] = set()
    control: set[int] = set()
    for is_control, key, value in _records(root, "__cluster_metadata"):
        assert value is not None
        if is_control:
            assert key is not None
            control.add(_I16.unpack_from(key, 2)[0])
        else:
            metadata.add(_framed(value))
    assert metadata == {(k, v) for k, (_, msg) in m.metadata.items() for v in range(msg.valid.lo, msg.valid.hi + 1)}
    assert control and control <= set(m.control)
    remote = {_framed(value) for _, _, value in _records(root, "__remote_log_metadata") if value is not None}
    assert remote and all(k in m.remote_log_metadata and v in m.remote_log_metadata[k][1].valid for k, v in remote)


def test_a_release_reads_only_its_own_file() -> None:
    """Each release line has its own layouts: 4.1 changed ShareSnapshotValue's SnapshotEpoch to int32."""
    epoch = {line: messages_of(parse_release(line)).share_coordinator[0][1].fields[0] for line in ("4.0", "4.1")}
    assert (epoch["4.0"].name, epoch["4.0"].type) == ("SnapshotEpoch", "uint16")
    assert (epoch["4.1"].name, epoch["4.1"].type) == ("SnapshotEpoch", "int32")
