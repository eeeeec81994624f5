"""A real broker's partition with one byte flipped inside a batch, for the readers' CRC checks (SPEC R-VAL-09).

``orders-0`` of ``../shared/golden-real/cp760-flink-on-prem/data`` (a broker's data dir) is copied to
a temporary data dir with the log dir's own files (the golden copy is never touched), and one byte of
a record value in the batch of orders-0 that holds the most records is flipped: a byte the batch's
CRC-32C covers (R-PRIM-07), so that the batch still frames and decodes but its CRC no longer matches.
Every expected figure comes from Kafka's own dump of the intact file
(``golden-real/expected/cp760-flink-on-prem.jsonl.gz``), never from kafkalog.
"""

from __future__ import annotations

import functools
import gzip
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from helpers import dump_batches, need_shared

SEGMENT = "orders-0/00000000000000000000.log"


@dataclass(frozen=True)
class CorruptCopy:
    """The copy, and what Kafka's dump of the intact file says about the batch made corrupt."""

    data: Path  #: the data dir holding the copy of orders-0
    log: Path  #: its .log, with the flipped byte
    position: int  #: the corrupt batch's byte position in the .log
    base_offset: int
    last_offset: int
    records: int  #: the corrupt batch's records
    before: int  #: records of the batches before it
    total: int  #: records of orders-0 (17,212)
    offset: int  #: the record whose value holds the flipped byte
    value: bytes  #: that record's value, as stored
    flipped: bytes  #: that value with the byte flipped: what a reader that does not check returns

    @property
    def rows_when_skipped(self) -> int:
        """The records a reader that skips the corrupt batch returns."""
        return self.total - self.records


@functools.cache
def _kafka_batches(src: Path) -> list[dict]:
    """Kafka's dump of the intact segment: its batches, each with its records (only its lines are parsed)."""
    with gzip.open(src.parents[1] / "expected" / "cp760-flink-on-prem.jsonl.gz", "rt", encoding="utf-8") as f:
        return dump_batches(json.loads(line) for line in f if f'"file":"{SEGMENT}"' in line)


def corrupt_copy(dest: Path) -> CorruptCopy:
    """Copy cp760's orders-0 under ``dest/data`` and flip one byte of a record value in its largest batch."""
    src = need_shared("golden-real/cp760-flink-on-prem/data")
    batches = _kafka_batches(src)
    data = dest / "data"
    (data / "orders-0").mkdir(parents=True)
    for f in src.iterdir():  # the log dir's own files (checkpoints, meta.properties), then the partition
        if f.is_file():
            shutil.copyfile(f, data / f.name)
    for f in (src / "orders-0").iterdir():
        shutil.copyfile(f, data / "orders-0" / f.name)
    k, batch = max(enumerate(batches), key=lambda kb: len(kb[1]["records"]))
    assert batch["compression"] == "none" and len(batch["records"]) > 1, batch
    record = batch["records"][0]
    value = bytes.fromhex(record["value"])
    log = data / SEGMENT
    raw = bytearray(log.read_bytes())
    start = raw.find(value, batch["position"] + 61, batch["position"] + batch["sizeInBytes"])
    assert start > 0
    at = start + len(value) // 2
    raw[at] ^= 0x01
    log.write_bytes(bytes(raw))
    flipped = bytearray(value)
    flipped[len(value) // 2] ^= 0x01
    return CorruptCopy(data, log, batch["position"], batch["baseOffset"], batch["lastOffset"], len(batch["records"]),
                       sum(len(b["records"]) for b in batches[:k]), sum(len(b["records"]) for b in batches), record["offset"], value,
                       bytes(flipped))
