"""A backup of a three-broker cluster, written with kafkalog's own log layer (``Log.append``), for
the tests of copies of one partition read as one view (SPEC §6.9).

``backup/broker-N/kafka-data/orders-0``:

* broker-1: the leader's log, offsets 0 to 299, every record, under partition leader epoch 0;
* broker-2: a follower that lags: the leader's batches below offset 200, copied byte for byte;
* broker-3: a follower with a hole: every batch copied, then its second segment's ``.log``
  deleted (its ``.index`` and ``.timeindex`` stay, the evidence of data loss, SPEC R-LOSS-01).

``unclean/broker-4/kafka-data/orders-0``: a follower that had copied the batches below offset 150
and was then elected leader uncleanly (epoch 1) and wrote other records at offsets 150 to 179.

The expected records are the ones appended here (:data:`RECORDS`, :data:`UNCLEAN_RECORDS`), never
what kafkalog reads back."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from kafkalog import Codec, RecordBatchBuilder
from kafkalog.log.unified import Log, LogConfig

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=256)
T0 = 1_700_000_000_000
#: offset -> (timestamp, key, value) of every record the leader (broker-1) appended, epoch 0
RECORDS = {o: (T0 + o, b"k%d" % (o % 7), b"order-%04d" % o) for o in range(300)}
#: what the unclean leader (broker-4) appended under epoch 1 at offsets 150 to 179
UNCLEAN_RECORDS = {o: (T0 + 10_000 + o, b"k%d" % (o % 7), b"new-%04d" % o) for o in range(150, 180)}
LAGGING_END = 200
UNCLEAN_AT = 150


@dataclass(frozen=True)
class Backup:
    root: Path
    brokers: dict[int, Path]  # broker id -> its copy of orders-0
    hole: range  # the offsets broker-3's deleted .log held

    @property
    def backup(self) -> Path:
        """The folder holding broker-1 to broker-3."""
        return self.root / "backup"

    def copy(self, broker: int) -> str:
        return str(self.brokers[broker])


def _batch(records: dict[int, tuple[int, bytes, bytes]]) -> bytes:
    b = RecordBatchBuilder(base_offset=0, compression=Codec.NONE)
    for ts, key, value in records.values():
        b.append(ts, key, value)
    return b.build()


def _lead(path: Path, records: dict[int, tuple[int, bytes, bytes]], epoch: int) -> None:
    """Append ``records`` as the leader, ten a batch (offsets assigned from the log end)."""
    offsets = sorted(records)
    with Log.open(path, CONFIG, writable=True, sync=False) as lg:
        for i in range(0, len(offsets), 10):
            lg.append(_batch({o: records[o] for o in offsets[i : i + 10]}), leader_epoch=epoch)


def _batches(path: Path) -> list[tuple[int, bytes]]:
    """(base offset, bytes) of every batch of a partition dir, from the size field of each entry."""
    out = []
    for log in sorted(path.glob("*.log")):
        data = log.read_bytes()
        pos = 0
        while pos < len(data):
            base, size = struct.unpack_from(">qi", data, pos)
            out.append((base, data[pos : pos + 12 + size]))
            pos += 12 + size
    return out


def _follow(path: Path, batches: list[tuple[int, bytes]], end: int) -> None:
    """Copy the leader's batches below ``end`` as a follower does: byte for byte."""
    with Log.open(path, CONFIG, writable=True, sync=False) as lg:
        for base, data in batches:
            if base < end:
                lg.append(data, assign_offsets=False)


def build_backup(root: Path) -> Backup:
    brokers = {n: root / ("unclean" if n == 4 else "backup") / f"broker-{n}" / "kafka-data" / "orders-0" for n in (1, 2, 3, 4)}
    _lead(brokers[1], RECORDS, 0)
    leader = _batches(brokers[1])
    _follow(brokers[2], leader, LAGGING_END)
    _follow(brokers[3], leader, len(RECORDS))
    bases = sorted(int(p.stem) for p in brokers[3].glob("*.log"))
    assert len(bases) >= 4, bases  # the hole is a middle segment
    (brokers[3] / f"{bases[1]:020d}.log").unlink()
    _follow(brokers[4], leader, UNCLEAN_AT)
    _lead(brokers[4], UNCLEAN_RECORDS, 1)
    return Backup(root, brokers, range(bases[1], bases[2]))
