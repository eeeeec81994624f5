"""Data loss: offsets a partition directory's own files say existed but no ``.log`` holds (SPEC §6.8).

Expected ranges come from Kafka's own files: the base offsets in the names Kafka gave the segments
of golden/kafka/logdir/golden-0 (0, 51, 102, 146, 190, 234; log end offset 265, the name of its
last producer snapshot), and, for the real backup cp760-flink-on-prem, the producer snapshot names
and the log dir's checkpoint lines Kafka wrote for ``customers`` and ``products``, read here as
plain text. Every other partition directory of ../shared/golden-real and of golden/ was written
whole by Kafka (or is a corrupt-input case with all its ``.log`` files), and must not be flagged.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import fsspec
import pytest

from helpers import GOLDEN, need_shared
from kafkalog.errors import DataLossError, KafkaLogError
from kafkalog.log import gaps
from kafkalog.log.gaps import Gap, LogDirOffsets, find_gaps, gaps_error, raise_on_gaps

GOLDEN0 = GOLDEN / "kafka" / "logdir" / "golden-0"
BASES = [0, 51, 102, 146, 190, 234]
LEO = 265


@pytest.fixture(params=["in one read", "streamed"])
def tail_walk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log end found both ways: a last ``.log``'s rest read at once and walked in memory, and
    walked a batch at a time from the file (a rest longer than ``WHOLE_TAIL``)."""
    if request.param == "streamed":
        monkeypatch.setattr(gaps, "WHOLE_TAIL", 0)


def _copy(tmp_path: Path, src: Path = GOLDEN0, name: str = "golden-0") -> Path:
    dst = tmp_path / "data" / name
    shutil.copytree(src, dst)
    for p in dst.iterdir():
        p.chmod(0o644)
    return dst


def _spans(gaps: list[Gap]) -> list[tuple[int, int]]:
    return [(g.start, g.end) for g in gaps]


def _partition_dirs(root: Path) -> list[Path]:
    out = []
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        if any(n.endswith((".log", ".index", ".timeindex", ".txnindex", ".snapshot")) for n in names):
            out.append(Path(dirpath))
    return out


def _checkpoint_line(path: Path, topic: str, partition: int) -> int:
    """The offset of ``topic partition`` in a checkpoint file, read as text (version, count, lines)."""
    for line in path.read_text().splitlines()[2:]:
        t, p, o = line.split(" ")
        if (t, int(p)) == (topic, partition):
            return int(o)
    raise AssertionError(f"{topic}-{partition} not in {path}")


# ------------------------------------------------------------------------------- real backups
@pytest.mark.rule("R-LOSS-01", "R-LOSS-03")
@pytest.mark.parametrize("topic", ["customers", "products"])
def test_the_real_backup_without_its_logs_is_flagged(topic: str) -> None:
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    pdir = data / f"{topic}-0"
    assert not list(pdir.glob("*.log")) and (pdir / "00000000000000000000.index").exists()
    (snapshot,) = [int(p.name.split(".")[0]) for p in pdir.glob("*.snapshot")]
    assert snapshot == _checkpoint_line(data / "recovery-point-offset-checkpoint", topic, 0)
    gaps = find_gaps(pdir)
    assert _spans(gaps) == [(0, snapshot)]
    with pytest.raises(DataLossError) as info:
        raise_on_gaps(gaps)
    err = info.value
    assert isinstance(err, KafkaLogError) and err.file == str(pdir) and err.offset == 0
    assert f"offsets 0 to {snapshot - 1} are in no .log" in str(err) and f"{topic}-0" in str(err)
    assert "segment 0 has .index, .timeindex but no .log" in str(err)


@pytest.mark.usefixtures("tail_walk")
def test_no_other_real_or_golden_partition_is_flagged() -> None:
    real = need_shared("golden-real")
    dirs = _partition_dirs(real) + _partition_dirs(GOLDEN)
    assert len(dirs) > 600  # every set: the 152 dirs of cp760 alone, and the corpus
    flagged = {str(d.relative_to(d.parents[1])): find_gaps(d) for d in dirs}
    flagged = {k: v for k, v in flagged.items() if v}
    # golden/kafka-<release>/payments-0 holds a producer snapshot alone (a file's test vector): it says
    # the log reached offset 14, and no segment holds offsets 0 to 13
    releases = sorted(d.parent.name for d in GOLDEN.glob("kafka-*/payments-0"))
    assert len(releases) >= 5
    for r in releases:
        (gap,) = flagged.pop(f"{r}/payments-0")
        assert (gap.start, gap.end) == (0, 14), gap
    assert sorted(flagged) == ["data/customers-0", "data/products-0"], flagged


def test_compacted_logs_keep_holes_that_are_not_loss() -> None:
    # Kafka's cleaner output: segment 0 ends before 72 and segment 72 before 126 (records removed)
    for name in ("compacted-0", "compacted-1"):
        pdir = GOLDEN / "kafka" / "logdir" / name
        assert find_gaps(pdir) == []


# ---------------------------------------------------------------------------- one segment lost
@pytest.mark.rule("R-LOSS-01")
def test_a_middle_log_missing_beside_its_indexes_loses_its_range(tmp_path: Path) -> None:
    pdir = _copy(tmp_path)
    (pdir / "00000000000000000102.log").unlink()
    assert _spans(find_gaps(pdir)) == [(102, 146)]


@pytest.mark.rule("R-LOSS-01")
def test_a_log_missing_with_only_its_time_index_left(tmp_path: Path) -> None:
    pdir = _copy(tmp_path)
    for suffix in (".log", ".index"):
        (pdir / f"00000000000000000051{suffix}").unlink()
    (pdir / "00000000000000000051.txnindex").unlink()
    assert _spans(find_gaps(pdir)) == [(51, 102)]


@pytest.mark.rule("R-LOSS-01", "R-LOSS-03")
def test_the_last_log_missing_loses_up_to_the_snapshot(tmp_path: Path) -> None:
    pdir = _copy(tmp_path)
    (pdir / "00000000000000000234.log").unlink()
    gaps = find_gaps(pdir)
    assert _spans(gaps) == [(234, LEO)]
    assert "00000000000000000265.snapshot" in gaps[0].evidence


@pytest.mark.rule("R-LOSS-03")
@pytest.mark.usefixtures("tail_walk")
def test_a_truncated_last_log_loses_its_tail(tmp_path: Path) -> None:
    pdir = _copy(tmp_path)
    log = pdir / "00000000000000000234.log"
    data = log.read_bytes()
    log.write_bytes(data[:100])  # not even the first batch whole
    assert _spans(find_gaps(pdir)) == [(234, LEO)]


@pytest.mark.rule("R-LOSS-03")
@pytest.mark.usefixtures("tail_walk")
def test_a_torn_last_batch_loses_only_its_offsets(tmp_path: Path) -> None:
    from kafka.record.memory_records import MemoryRecords  # kafka-python: an independent reader of the batches

    pdir = _copy(tmp_path)
    log = pdir / "00000000000000000234.log"
    torn = log.read_bytes()[:-1]
    log.write_bytes(torn)
    records, whole = MemoryRecords(torn), []
    while (batch := records.next_batch()) is not None:
        whole.append(batch.base_offset + batch.last_offset_delta + 1)
    assert whole[-1] < LEO
    assert _spans(find_gaps(pdir)) == [(whole[-1], LEO)]


@pytest.mark.rule("R-LOSS-02")
def test_a_pending_deletion_is_not_loss(tmp_path: Path) -> None:
    pdir = _copy(tmp_path)
    # retention renames .log first, then the indexes (R-RET-08): caught between the two renames
    (pdir / "00000000000000000000.log").rename(pdir / "00000000000000000000.log.deleted")
    assert find_gaps(pdir) == []


@pytest.mark.rule("R-LOSS-02")
def test_offsets_below_the_log_start_offset_are_not_loss(tmp_path: Path) -> None:
    pdir = _copy(tmp_path)
    (pdir / "00000000000000000000.log").unlink()
    assert _spans(find_gaps(pdir)) == [(0, 51)]
    (tmp_path / "data" / "log-start-offset-checkpoint").write_text("0\n1\ngolden 0 60\n")
    assert find_gaps(pdir) == []  # DeleteRecords or retention moved the log start past segment 0
    assert find_gaps(pdir, checkpoints=LogDirOffsets()) != []


@pytest.mark.rule("R-LOSS-03")
def test_a_clean_shutdowns_recovery_point_beyond_the_log_end_is_loss(tmp_path: Path) -> None:
    pdir = _copy(tmp_path)
    (pdir / "00000000000000000265.snapshot").unlink()
    assert find_gaps(pdir) == []
    (tmp_path / "data" / "recovery-point-offset-checkpoint").write_text("0\n1\ngolden 0 300\n")
    # a running broker rewrites its checkpoints every minute: a copy may hold newer ones than its segments
    assert find_gaps(pdir) == []
    (tmp_path / "data" / ".kafka_cleanshutdown").write_text('{"version":0,"brokerEpoch":-1}')
    gaps = find_gaps(pdir)
    assert _spans(gaps) == [(LEO, 300)] and "recovery-point-offset-checkpoint" in gaps[0].evidence


def test_only_partition_directories_are_judged(tmp_path: Path) -> None:
    pdir = _copy(tmp_path, name="excerpt")  # not <topic>-<partition>: no broker loads it
    (pdir / "00000000000000000102.log").unlink()
    assert find_gaps(pdir) == []


@pytest.mark.usefixtures("tail_walk")
@pytest.mark.parametrize("segment", ["00000000000000000102", "00000000000000000234"])
def test_an_interrupted_swap_stands_for_its_log(tmp_path: Path, segment: str) -> None:
    """A middle segment's .log, or the last one's, whose end is then read from the .swap (265, the snapshot's offset)."""
    pdir = _copy(tmp_path)
    (pdir / f"{segment}.log").rename(pdir / f"{segment}.log.swap")
    assert find_gaps(pdir) == []
    assert find_gaps(pdir, files={p.name: None for p in pdir.iterdir()}) == []


def test_nothing_known_past_an_empty_last_segment_is_not_loss(tmp_path: Path) -> None:
    pdir = _copy(tmp_path)
    for p in pdir.glob("00000000000000000234.*"):
        p.unlink()
    (pdir / "00000000000000000265.snapshot").unlink()
    (pdir / "00000000000000000190.index").rename(pdir / "00000000000000000234.index")
    (pdir / "00000000000000000234.index").write_bytes(b"")  # an empty index: the segment held nothing known
    assert find_gaps(pdir, checkpoints=LogDirOffsets()) == []


def test_error_lists_every_gap() -> None:
    gaps = [Gap("d/t-0", 0, 10, "why"), Gap("d/t-1", 5, 6, "because")]
    err = gaps_error(gaps)
    assert err.file == "d/t-0" and err.offset == 0 and err.gaps == gaps
    assert str(err) == "d/t-0, offset 0: offsets 0 to 9 are in no .log: why; d/t-1: offset 5 is in no .log: because"


# --------------------------------------------------------------------------------- fsspec
def test_over_an_fsspec_filesystem() -> None:
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    fs = fsspec.filesystem("memory")
    root = "/gaps-test/data"
    try:
        for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint"):
            fs.pipe_file(f"{root}/{name}", (data / name).read_bytes())
        for topic in ("customers-0", "orders-0"):
            for p in (data / topic).iterdir():
                fs.pipe_file(f"{root}/{topic}/{p.name}", p.read_bytes())
        assert _spans(find_gaps(f"memory://{root}/customers-0")) == [(0, 17081)]
        assert _spans(find_gaps(f"{root}/customers-0", fs=fs)) == [(0, 17081)]
        assert find_gaps(f"{root}/orders-0", fs=fs) == []
        listing = {p.name: None for p in (data / "customers-0").iterdir()}
        offsets = LogDirOffsets.read(root, fs)
        assert _spans(find_gaps(f"{root}/customers-0", fs=fs, files=listing, checkpoints=offsets)) == [(0, 17081)]
    finally:
        fs.rm("/gaps-test", recursive=True)


@pytest.mark.rule("R-LOSS-02")
def test_a_segment_rolled_and_cleaned_since_the_listing_is_not_loss(tmp_path: Path) -> None:
    """A live directory: listed while 234 was the last segment, then the writer rolled (265.log) and
    the cleaner shortened 234 (its last records superseded). The old index claims are then inside a
    segment that has a successor, which compaction explains; the same shortening with no successor
    is a lost tail."""
    pdir = _copy(tmp_path)
    listed = [p.name for p in pdir.iterdir()]
    log = pdir / "00000000000000000234.log"
    log.write_bytes(log.read_bytes()[:100])  # what the listing's index claims is gone
    (pdir / "00000000000000000265.snapshot").unlink()
    assert _spans(find_gaps(pdir, files=[n for n in listed if not n.endswith("265.snapshot")])) != []
    (pdir / "00000000000000000265.log").write_bytes(b"")  # the roll
    assert find_gaps(pdir, files=[n for n in listed if not n.endswith("265.snapshot")]) == []


def test_a_listing_that_lost_a_renamed_log_is_checked_again(tmp_path: Path) -> None:
    """fsspec's local listing drops an entry whose stat fails: a .log renamed .deleted between the
    directory read and its stat is in the listing under neither name, while its index still is.
    The orphan is confirmed on disk before it is reported (the concurrency test's Spark reader met it)."""
    pdir = _copy(tmp_path)
    listed = [n.name for n in pdir.iterdir() if n.name != "00000000000000000102.log"]
    assert find_gaps(pdir, files=listed) == []  # the .log is there after all
    (pdir / "00000000000000000102.log").rename(pdir / "00000000000000000102.log.deleted")
    assert find_gaps(pdir, files=listed) == []  # leaving the log (retention, the cleaner)
    (pdir / "00000000000000000102.log.deleted").unlink()
    assert _spans(find_gaps(pdir, files=listed)) == [(102, 146)]
