"""How a partition directory's listing is grouped: its segments, producer snapshots and partition files.

A partition dir holds ``<20-digit base offset>.log`` segments with their ``.index``, ``.timeindex``
and ``.txnindex`` beside them, ``<offset>.snapshot`` producer snapshots (LogFileUtils's suffixes), and
``leader-epoch-checkpoint`` and ``partition.metadata`` (LeaderEpochCheckpointFile,
PartitionMetadataFile; SPEC R-NAME-11), which make it a partition dir even when it holds no
segment. A tiered-storage copy as Kafka's ``LocalTieredStorage`` writes it
(RemoteLogSegmentFileset) names the same files ``<20-digit offset>-<22-char segment uuid>.<kind>``;
those are read only when asked (``copies``), as the Spark source asks for them.

:func:`read_layout` is the one place a listing's names are grouped so: kafkalog's discovery
(:mod:`kafkalog.log.source`) and the Spark source (``kafkalog_spark.layout``) both build their
partitions from its answer. A listing holding leftovers of an interrupted operation is read as the
broker has it after loading the directory (:func:`kafkalog.log.leftovers.as_loaded`, SPEC R-RCV-04).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from kafkalog.log.gaps import SEGMENT_KINDS, segment_file
from kafkalog.log.leftovers import has_leftovers

__all__ = ["PARTITION_FILES", "Layout", "SegmentPlaces", "layout", "read_layout"]

#: files that make a directory a partition dir even when it holds no segment (an empty partition)
PARTITION_FILES = frozenset({"partition.metadata", "leader-epoch-checkpoint"})
#: a tiered-storage copy's segment file or producer snapshot: ``<offset>-<segment uuid>.<kind>``
_COPY_FILE = re.compile(r"^(\d{20})-([A-Za-z0-9_-]{22})\.(log|index|timeindex|txnindex|snapshot)$")
#: where a kind of segment file goes in a segment's places
_KIND_PLACE = {"log": 0, "index": 1, "timeindex": 2, "txnindex": 3}

#: A segment in a listing: (base offset, segment uuid or None, then the places in the listing of its
#: ``.log``, ``.index``, ``.timeindex`` and ``.txnindex``, None where absent).
SegmentPlaces = tuple[int, "str | None", "int | None", "int | None", "int | None", "int | None"]


class Layout(NamedTuple):
    """What a listing's names say (places are indexes into the listing's names)."""

    #: every segment with any file listed (with or without its ``.log``), by base offset, then
    #: segment uuid (a plain segment's None first)
    segments: tuple[SegmentPlaces, ...]
    #: the producer snapshots as (offset, place), by offset, then name
    snapshots: tuple[tuple[int, int], ...]
    #: whether a file of :data:`PARTITION_FILES` is listed
    partition_file: bool
    #: the listing's names, sorted, each once
    names: tuple[str, ...]


def read_layout(
    names: Sequence[str], loaded: Sequence[tuple[str, Any]] | None = None, *, copies: bool = False
) -> Layout | None:
    """The :class:`Layout` of a listing's ``names`` (a name listed twice: its last place), None when
    it holds leftovers of an interrupted operation. ``loaded``: the files as the broker has them
    after loading the directory, when it does (:func:`kafkalog.log.leftovers.as_loaded`: (name, the
    listing's entry holding it now), whose entries have the ``name`` they are listed under).
    ``copies``: also read a tiered-storage copy's ``<offset>-<uuid>`` names (else they are no
    Kafka file, as the broker reads none in its log dir)."""
    at = {n: i for i, n in enumerate(names)}
    listed = tuple(sorted(at))
    if loaded is None:
        if has_leftovers(listed):
            return None
        pairs = [(n, at[n]) for n in listed]  # without a leftover: as listed, by name
    else:
        pairs = [(name, at[e.name]) for name, e in loaded]
    groups: dict[tuple[int, str | None], list[int | None]] = {}
    snapshots: list[tuple[int, str, int]] = []
    partition_file = False
    for name, i in pairs:
        k = segment_file(name)
        if k is not None and k[1] in SEGMENT_KINDS:
            (base, kind), seg_id = k, None
        elif copies and (m := _COPY_FILE.match(name)) is not None:
            base, seg_id, kind = int(m[1]), m[2], m[3]
        else:
            partition_file |= name in PARTITION_FILES
            continue
        if kind == "snapshot":
            snapshots.append((base, names[i], i))  # by offset, then the listed name
        else:
            groups.setdefault((base, seg_id), [None, None, None, None])[_KIND_PLACE[kind]] = i
    snapshots.sort(key=lambda s: s[:2])
    segments = [(base, seg_id, *found) for (base, seg_id), found in groups.items()]
    segments.sort(key=lambda s: (s[0], s[1] or ""))
    return Layout(tuple(segments), tuple([(base, i) for base, _, i in snapshots]), partition_file, listed)  # type: ignore[arg-type]


#: :func:`read_layout` of a small listing of a broker's partition dir (no ``copies``), kept: the
#: same listings recur in many partition dirs (a measured win over 100,000 of them). A caller asks
#: it only of listings of at most :data:`kafkalog.log.gaps.SMALL_LISTING` names (a large one's
#: answer would be kept in memory whole).
layout = functools.lru_cache(maxsize=1 << 12)(read_layout)
