"""The one grouping of a partition dir's listing (:func:`kafkalog.log.layout.read_layout`) that
kafkalog's discovery and the Spark source share: both see the same segments and producer snapshots
in every partition dir of golden/ and ../shared, and a tiered copy's ``<offset>-<uuid>`` names are
read only when asked for (Aiven's plug-in wrote those of golden-tiered)."""

from __future__ import annotations

import os
from pathlib import Path

import fsspec
import pytest
from test_gaps_quick import DIRS

from helpers import SHARED
from kafkalog.errors import KafkaLogError
from kafkalog.log import source
from kafkalog.log.layout import read_layout

pytest.importorskip("pyspark")
from kafkalog_spark.layout import _replica  # noqa: E402 - after the skip

TIERED = SHARED / "golden-tiered" / "aiven"


def test_kafkalog_and_the_spark_source_see_the_same_segments_in_every_partition_dir() -> None:
    fs = fsspec.filesystem("file")
    compared = 0
    for d in DIRS:
        files = source.LocalStorage.files(str(d), [])
        try:
            p = source._partition(source.LocalStorage(), str(d), files, source.LogDirOffsets())
        except KafkaLogError:  # not named <topic>-<partition>: no partition of kafkalog's
            continue
        rep = _replica(fs, str(d), files)
        if p is None or rep is None:
            continue
        compared += 1
        assert [(s.base_offset, s.log, s.index, s.timeindex, s.txnindex) for s in p.logs] == [
            (s.base_offset, s.log, s.index, s.timeindex, s.txnindex) for s in rep.segments
        ], d
        assert p.snapshots == rep.snapshots, d
    assert compared > 300


def test_a_tiered_copys_names_are_read_only_when_asked_for() -> None:
    if not TIERED.exists():
        pytest.skip(f"{TIERED} is absent")
    dirs = sorted({Path(p).parent for p in TIERED.rglob("*.rsm-manifest")})
    assert dirs
    for d in dirs:
        names = tuple(os.listdir(d))
        logs = sorted(n for n in names if n.endswith(".log"))  # the plug-in's <offset>-<uuid>.log objects
        assert logs
        plain = read_layout(names)
        assert plain is not None and plain.segments == () and plain.snapshots == () and not plain.partition_file
        copies = read_layout(names, copies=True)
        assert copies is not None
        assert [(base, seg_id, names[at]) for base, seg_id, at, *_ in copies.segments] == [
            (int(n[:20]), n[21:-4], n) for n in logs
        ]
        assert copies.names == tuple(sorted(names))
