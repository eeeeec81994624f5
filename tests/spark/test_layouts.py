"""The same partition reads identically from a broker log dir, a single partition dir, a glob, a
tiered-storage-style copy, an in-memory fsspec filesystem, split input partitions and merged replicas."""

from __future__ import annotations

import functools
import os
import shutil

import fsspec
import pytest
from pyspark.sql import functions as F

from helpers import GOLDEN, read_jsonl
from kafkalog.log.gaps import find_gaps
from kafkalog.log.source import Entry
from kafkalog_spark import DataLossError, LayoutError
from kafkalog_spark.layout import _child, discover, parse_partition_dir

from ._support import (
    assert_same_rows,
    copy_segments,
    dump_batches,
    expected_rows,
    read_in_process,
    rows_of,
    segment_uuid,
    tiered_copy,
)

LOGDIR = GOLDEN / "kafka" / "logdir"
HEADERS = {"includeHeaders": "true"}


@pytest.fixture(scope="module")
def dump() -> list[dict]:
    return read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")


def _expected(dump: list[dict], *dirs: str) -> dict:
    return {k: v for d in dirs for k, v in expected_rows(dump_batches(dump, f"{d}/")).items()}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict:  # noqa: ANN001 - fixture
    """golden-0 and transactional-0 as a tiered-storage copy and as two overlapping replicas."""
    tmp = tmp_path_factory.mktemp("layouts")
    topic_ids = {}
    for name in ("golden-0", "transactional-0"):
        meta = (LOGDIR / name / "partition.metadata").read_text()
        topic_ids[name] = meta.split("topic_id:")[1].strip()
        tiered_copy(LOGDIR / name, tmp / "tiered", topic_ids[name])
    # two brokers: one holds golden-0's first three segments, the other its first and last three (0
    # twice; both start at 0, so the partition does: SPEC R-REP-02), each offset read from one that holds it
    copy_segments(LOGDIR / "golden-0", tmp / "broker1" / "golden-0", [0, 51, 102])
    copy_segments(LOGDIR / "golden-0", tmp / "broker2" / "golden-0", [0, 146, 190, 234])
    # two brokers with a hole between them: offsets 51..101 are on neither, and gap2's files say they
    # existed (segment 0's .index without its .log: SPEC R-LOSS-01)
    copy_segments(LOGDIR / "golden-0", tmp / "gap1" / "golden-0", [0])
    copy_segments(LOGDIR / "golden-0", tmp / "gap2" / "golden-0", [102, 146])
    shutil.copy(LOGDIR / "golden-0" / "00000000000000000000.index", tmp / "gap2" / "golden-0")
    # things a reader must skip: a pending delete, a future replica, leftover cleaner files
    shutil.copytree(LOGDIR / "golden-0", tmp / "broker1" / "golden-0.0123456789abcdef0123456789abcdef-delete")
    shutil.copytree(LOGDIR / "golden-0", tmp / "broker1" / "golden-0.0123456789abcdef0123456789abcdef-future")
    shutil.copy(LOGDIR / "golden-0" / "00000000000000000000.log", tmp / "broker2" / "golden-0" / "00000000000000000000.log.deleted")
    for leftover in ("00000000000000000000.log.cleaned", "00000000000000000000.log.swap"):
        shutil.copy(LOGDIR / "golden-0" / "00000000000000000000.log", tmp / "broker2" / "golden-0" / leftover)
    return {"tmp": tmp, "topic_ids": topic_ids}


def test_every_layout_reads_the_same_rows(spark, dump, layouts) -> None:  # noqa: ANN001 - fixtures
    tmp = layouts["tmp"]
    want = _expected(dump, "golden-0", "transactional-0")
    reads = {
        "broker dir (subscribe)": (str(LOGDIR), {"subscribe": "golden,transactional"}),
        "partition dirs, load([...])": ([str(LOGDIR / "golden-0"), str(LOGDIR / "transactional-0")], {}),
        "glob": (str(LOGDIR / "[gt]*-0"), {"subscribePattern": "golden|transactional"}),
        "tiered copy": (str(tmp / "tiered"), {}),
        "split at index entries": (str(LOGDIR), {"subscribe": "golden,transactional", "maxBytesPerPartition": "700"}),
        "two replicas merged": (f"{tmp / 'broker1'},{tmp / 'broker2'},{LOGDIR / 'transactional-0'}", {}),
    }
    frames = [
        spark.read.format("kafkalog").options(**HEADERS, **opts).load(path).withColumn("layout", F.lit(name))
        for name, (path, opts) in reads.items()
    ]
    table = functools.reduce(lambda a, b: a.unionByName(b), frames).toArrow()
    layout = table.column("layout").to_numpy(zero_copy_only=False)
    for name in reads:
        got = rows_of(table.filter(layout == name))
        assert got, name
        assert_same_rows(got, want)


def test_in_memory_filesystem_reads_the_same_rows(dump, layouts) -> None:  # noqa: ANN001 - fixtures
    # Spark's Python workers are separate processes with their own (empty) memory filesystem, so
    # this runs the source's reader, partitions and pickled read() in this process.
    mem = fsspec.filesystem("memory")
    root = f"/kafkalog-{segment_uuid()}"
    for d in ("golden-0", "transactional-0"):
        for f in (LOGDIR / d).iterdir():
            mem.pipe_file(f"{root}/logdir/{d}/{f.name}", f.read_bytes())
    for f in (layouts["tmp"] / "tiered").rglob("*.*"):
        mem.pipe_file(f"{root}/tiered/{f.parent.name}/{f.name}", f.read_bytes())
    want = _expected(dump, "golden-0", "transactional-0")
    try:
        for path in (f"memory://{root}/logdir", f"memory://{root}/tiered"):
            table, parts, _ = read_in_process({"path": path, **HEADERS, "maxBytesPerPartition": "700"})
            assert len(parts) > 18  # split below one segment each
            assert_same_rows(rows_of(table), want)
            assert all(p.fs.protocol == "memory" for p in parts)
        committed, _, _ = read_in_process({"path": f"memory://{root}/logdir/transactional-0", "isolationLevel": "read_committed"})
        local, _, _ = read_in_process({"path": str(LOGDIR / "transactional-0"), "isolationLevel": "read_committed"})
        assert committed.equals(local)
    finally:
        mem.rm(root, recursive=True)


def test_replicas_with_a_hole_report_data_loss(layouts, caplog) -> None:  # noqa: ANN001 - fixtures
    tmp = layouts["tmp"]
    paths = f"{tmp / 'gap1'},{tmp / 'gap2'}"
    with pytest.raises(DataLossError, match="offsets 51 to 101 are in no .log"):
        read_in_process({"path": paths})
    table, _, _ = read_in_process({"path": paths, "failOnDataLoss": "false"})
    offsets = sorted(table.column("offset").to_pylist())
    assert offsets[0] == 0 and 51 not in offsets and 101 not in offsets and offsets[-1] == 189
    assert "offsets 51 to 101 are in no .log" in caplog.text


def test_discovery_skips_deleted_future_and_cleaner_files(layouts) -> None:  # noqa: ANN001 - fixture
    fs = fsspec.filesystem("file")
    found = discover(fs, [str(layouts["tmp"] / "broker1"), str(layouts["tmp"] / "broker2")])
    assert [(r.topic, r.partition, [s.base_offset for s in r.segments]) for r in found] == [
        ("golden", 0, [0, 51, 102]),
        ("golden", 0, [0, 146, 190, 234]),
    ]
    tiered = discover(fs, [str(layouts["tmp"] / "tiered")])
    assert {(r.topic, r.partition, r.topic_id) for r in tiered} == {("golden", 0, "AAAAAAAAAAAAAAAAAAAAAQ"), ("transactional", 0, layouts["topic_ids"]["transactional-0"])}
    assert all(s.segment_id and s.index and s.timeindex for r in tiered for s in r.segments)
    # a folder is searched at any depth (golden/kafka/logdir/golden-0 is found under golden/) ...
    assert ("golden", 0) in {r.key for r in discover(fs, [str(GOLDEN)])}
    # ... and one holding no partition directory at any depth is refused
    (layouts["tmp"] / "nothing" / "deeper").mkdir(parents=True, exist_ok=True)
    (layouts["tmp"] / "nothing" / "deeper" / "notes.txt").write_text("no Kafka files here")
    with pytest.raises(LayoutError, match="no Kafka partition directories"):
        discover(fs, [str(layouts["tmp"] / "nothing")])


def test_only_a_listing_find_gaps_clears_is_whole(layouts) -> None:  # noqa: ANN001 - fixture
    """Planning does not ask find_gaps about a replica marked whole: a listing whose plain segments
    each have their .log, without leftovers; an orphaned index, leftovers or a tiered copy are asked."""
    fs = fsspec.filesystem("file")
    tmp = layouts["tmp"]
    found = {r.dir.split("/")[-2]: r.whole for r in discover(fs, [str(tmp / d) for d in ("broker1", "broker2", "gap2")])}
    assert found == {"broker1": True, "broker2": False, "gap2": False}  # broker2: leftovers; gap2: 0's .index without its .log
    assert not any(r.whole for r in discover(fs, [str(tmp / "tiered")]))
    whole = [r for r in discover(fs, [str(LOGDIR)]) if r.whole]
    assert whole
    for r in whole:
        assert find_gaps(r.dir, fs=fs, files=r.names, tail=False) == []


def test_dirs_listed_alike_keep_their_own_files(tmp_path) -> None:  # noqa: ANN001 - fixture
    """Dirs whose listings name the same files in the same order share where the files go (read once
    per such listing), each with its own paths and .log sizes; a name listed twice is taken at its
    last place, as the listing's dict of names took it."""
    fs = fsspec.filesystem("file")
    names = ["00000000000000000000.log", "00000000000000000000.index", "00000000000000000007.snapshot", "partition.metadata"]
    found = []
    for n, d in enumerate(("a-0", "a-1")):
        (tmp_path / d).mkdir()
        for name in names:
            (tmp_path / d / name).write_bytes(b"x" * (n + 1) * (name.endswith(".log") + 1))
        entries = [Entry(str(tmp_path / d / name), os.stat(tmp_path / d / name).st_size if name.endswith(".log") else None, False) for name in names]
        found.append(_child(fs, str(tmp_path / d), entries, None))
    for (counted, rep), d, size in zip(found, ("a-0", "a-1"), (2, 4), strict=True):
        assert counted and rep is not None and rep.key == ("a", int(d[-1])) and rep.whole
        assert [(s.base_offset, s.log, s.size, s.index, s.timeindex) for s in rep.segments] == [
            (0, str(tmp_path / d / names[0]), size, str(tmp_path / d / names[1]), None)
        ]
        assert rep.snapshots == ((7, str(tmp_path / d / names[2])),)
        assert rep.names == tuple(sorted(names))
    twice = [Entry("/x/t-0/00000000000000000000.log", 1, False), Entry("/y/t-0/00000000000000000000.log", 2, False)]
    _, rep = _child(fs, "/x/t-0", twice, None)
    assert [(s.log, s.size) for s in rep.segments] == [("/y/t-0/00000000000000000000.log", 2)]


@pytest.mark.parametrize(
    ("name", "tiered", "parsed"),
    [
        ("orders-3", False, ("orders", 3, None)),
        ("my-topic-12", False, ("my-topic", 12, None)),
        ("kafka_topic-3-0", False, ("kafka_topic-3", 0, None)),
        ("orders-3-5fEBmixCR5-dMntYSLIr1g", True, ("orders", 3, "5fEBmixCR5-dMntYSLIr1g")),
        ("orders-5fEBmixCR5-dMntYSLIr1g-3", True, ("orders", 3, "5fEBmixCR5-dMntYSLIr1g")),
        ("orders-3", True, ("orders", 3, None)),
        ("orders-3.0123456789abcdef0123456789abcdef-delete", False, None),
        ("orders-3.0123456789abcdef0123456789abcdef-stray", False, None),
        ("orders", False, None),
        ("bad topic!-7", False, ("bad topic!", 7, None)),  # R-NAME-03: read, with a warning
        ("orders-\u0663", False, None),  # R-NAME-02: ASCII digits only
    ],
)
def test_partition_dir_names(name: str, tiered: bool, parsed: tuple | None) -> None:
    assert parse_partition_dir(name, tiered) == parsed


@pytest.mark.rule("R-NAME-03")
def test_a_topic_name_kafka_refuses_is_read_with_a_warning(dump, tmp_path, caplog) -> None:  # noqa: ANN001 - fixtures
    d = tmp_path / "bad topic!-0"
    shutil.copytree(LOGDIR / "legacy-0", d)
    with caplog.at_level("WARNING", logger="kafkalog_spark.layout"):
        table, _, _ = read_in_process({"path": str(d), **HEADERS})
    want = {("bad topic!", 0, off): row for (_t, _p, off), row in _expected(dump, "legacy-0").items()}
    assert want and rows_of(table) == want
    assert any("bad topic!" in r.getMessage() and r.levelname == "WARNING" for r in caplog.records)
