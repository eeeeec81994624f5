"""``--kafka-version auto``: the Kafka release a file's own records say wrote it (SPEC.md §13.8).

The rule, for one ``.log`` or KRaft snapshot read with an internal topic's decoder:

1. ``metadata.version``: a ``FeatureLevelRecord`` named ``metadata.version`` (``__cluster_metadata``, its
   snapshots, ``bootstrap.checkpoint``) gives a lower bound, the release line of that feature level in
   Kafka's ``org.apache.kafka.server.common.MetadataVersion`` enum (:data:`METADATA_VERSION_LEVELS`; a
   3.x level reads as 4.0, the oldest line kafkalog follows; a level newer than 4.4's as 4.4).
2. Records: the release is the oldest line, not below that bound, whose decoders read every record of
   the file in full: a record type and version it knows, no tagged field it does not know (a tag only a
   later release writes, such as 4.2's ``DeliveryCompleteCount``), no read error. Records that only
   some releases know therefore decide it: streams-group types (4.1 on), 4.3's tagged assignment epochs,
   type 9 ShareGroupPartitionMetadata (4.0 only).
3. Otherwise the newest release: a file with no record an internal decoder reads (a user topic, only
   control records, empty), or one no release reads in full.

It is a lower bound: bytes that an older release could have written read as that release, whose
kafka-dump-log prints the same records (4.1 to 4.4 write ``__transaction_state`` byte for byte alike;
auto prints them as 4.1 does). Each release line is tried from the oldest, re-reading the file, until
one reads it all: one pass for data any release reads, at most one per release line otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import BinaryIO

from kafkalog.format.records.stream import LogReader
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.internal import DECODERS, InternalRecordError
from kafkalog.internal.releases import NEWEST, RELEASES, Release, parse_release
from kafkalog.internal.wire import counting_unknown_tags

__all__ = ["AUTO", "METADATA_VERSION_LEVELS", "Detected", "detect_release", "release_of_metadata_version"]

#: the ``--kafka-version`` value that asks for the release the data says
AUTO = "auto"

#: the first ``metadata.version`` feature level of each release line: ``MetadataVersion``'s IBP_4_0_IV0
#: (22) to IBP_4_4_IV2 (33), Kafka 4.4.0 (``featureLevel()``; the level's IBP string ``X.Y-IVn`` names its line)
METADATA_VERSION_LEVELS: dict[Release, int] = {(4, 0): 22, (4, 1): 26, (4, 2): 28, (4, 3): 30, (4, 4): 31}


def release_of_metadata_version(level: int) -> Release:
    """The release line a ``metadata.version`` feature level belongs to (clamped to 4.0 ... 4.4)."""
    lines = [line for line, first in METADATA_VERSION_LEVELS.items() if first <= level]
    return lines[-1] if lines else min(METADATA_VERSION_LEVELS)


@dataclass(frozen=True)
class Detected:
    """The release ``auto`` chose for a file, and why (printed by ``--verbose``)."""

    release: Release
    reason: str
    #: whether records chose it (False: the newest, for want of records that say)
    from_records: bool = True

    @property
    def name(self) -> str:
        return f"{self.release[0]}.{self.release[1]}"


def _reads_all(path: str, source: BinaryIO | None, decoder: str, release: Release) -> tuple[bool, int, int | None]:
    """Whether ``release`` reads every non-control record in full; the records read and the last
    ``metadata.version`` level met (up to the first record it does not read)."""
    read, level = 0, None
    decode = DECODERS[decoder]
    if source is not None:
        source.seek(0)
    with LogReader(path if source is None else source, name=path) as reader, counting_unknown_tags() as unknown:
        for batch in reader.batches():
            if isinstance(batch, RecordBatch) and batch.is_control:
                continue
            for r in batch.records():
                try:
                    d = decode(r.key, r.value, r.offset, release)
                except InternalRecordError:
                    return False, read, level
                if unknown[0]:
                    return False, read, level
                read += 1
                if d.value_type == "FeatureLevelRecord" and isinstance(d.value, dict):
                    fields = d.value.get("data", {})
                    if fields.get("name") == "metadata.version":
                        level = fields.get("featureLevel")
    return True, read, level


def detect_release(path: str | os.PathLike[str], decoder: str | None, source: BinaryIO | None = None) -> Detected:
    """The release ``--kafka-version auto`` reads ``path`` as (see the module's rule). ``decoder`` is the
    internal topic's decoder for it (``None``: not an internal topic); ``source`` the file opened."""
    path = os.fspath(path)
    if decoder is None:
        return Detected(NEWEST, "no internal-topic decoder: the newest release", from_records=False)
    lines = [parse_release(line) for line in RELEASES]
    floor, why = lines[0], ""
    i = 0
    while i < len(lines):
        release = lines[i]
        if release < floor:
            i += 1
            continue
        try:
            ok, read, level = _reads_all(path, source, decoder, release)
        finally:
            if source is not None:
                source.seek(0)
        if level is not None and release_of_metadata_version(level) > floor:
            floor = release_of_metadata_version(level)
            why = f"metadata.version level {level}"
            continue  # read again from the bound: records before it may read otherwise there
        if ok:
            if read == 0:
                return Detected(NEWEST, "no record an internal decoder reads: the newest release", from_records=False)
            name = f"{release[0]}.{release[1]}"
            reason = f"{why}; " if why else ""
            return Detected(release, f"{reason}the oldest release reading every record in full is {name}")
        i += 1
    return Detected(NEWEST, "no release reads every record: the newest release", from_records=False)
