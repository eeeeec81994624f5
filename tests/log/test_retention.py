"""Retention as Kafka's UnifiedLog.deleteOldSegments applies it (SPEC.md §6.3, R-RET-*).

Expected values come from Kafka's own files: the segment sizes of golden/kafka/logdir/golden-0 (as
Kafka's broker wrote them), the segments' largest timestamps from Kafka's dump of that directory
(golden/kafka/dump/logdir.jsonl), its leader-epoch-checkpoint and producer snapshots, and Kafka's
rules (UnifiedLog.scala @1eb7644) applied by hand to those numbers in each test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.errors import OffsetOutOfRangeError
from kafkalog.format.checkpoints import (
    EpochEntry,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from kafkalog.format.records import RecordBatchBuilder
from kafkalog.log.retention import (
    DeletionReason,
    SegmentInfo,
    plan_retention,
    segment_infos,
    segment_infos_of_dir,
)
from kafkalog.log.unified import Log, LogConfig, checkpoint_log_dir
from kafkalog.tools.validate import verify

SRC = GOLDEN / "kafka" / "logdir" / "golden-0"
DUMP = GOLDEN / "kafka" / "dump" / "logdir.jsonl"
BASES = [0, 51, 102, 146, 190, 234]  # golden-0's segments (file names Kafka gave them)
LEO = 265  # golden-0's log end offset: its last batch ends at 264 (Kafka's dump)
NO_RETENTION = {"retention.ms": -1, "retention.bytes": -1}


def _kafka_sizes() -> dict[int, int]:
    return {b: (SRC / f"{b:020d}.log").stat().st_size for b in BASES}


KAFKA_DUMP = [json.loads(line) for line in DUMP.read_text().splitlines()]


def _kafka_records() -> list[dict]:
    return [o for o in KAFKA_DUMP if o["file"].startswith("golden-0/")]


def _kafka_largest_timestamps() -> dict[int, int]:
    out: dict[int, int] = {}
    for o in _kafka_records():
        if o["type"] == "batch":
            base = int(Path(o["file"]).stem)
            out[base] = max(out.get(base, -1), o["maxTimestamp"])
    return out


def _kafka_offsets_from(offset: int) -> list[int]:
    """Offsets of golden-0's data records at or after ``offset``, from Kafka's dump."""
    return [o["offset"] for o in _kafka_records() if o["type"] == "record" and "controlType" not in o and o["offset"] >= offset]


def _open(d: Path, **props: object) -> Log:
    cfg = {"segment.bytes": 2048, "index.interval.bytes": 256, "segment.index.bytes": 4096, "file.delete.delay.ms": 0, **props}
    return Log.open(d, LogConfig.from_properties(cfg), sync=False, writable=True)


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    d = tmp_path / "golden-0"
    shutil.copytree(SRC, d)
    return d


def _segment_files(d: Path) -> list[int]:
    return sorted(int(n[:20]) for n in os.listdir(d) if n.endswith(".log"))


def _check_reopens_and_verifies(d: Path, log_start_offset: int) -> None:
    """R-RET-10: what retention leaves verifies, and reopening reads Kafka's records from the new start."""
    report = verify([str(d)])
    assert report.errors == [], [str(f) for f in report.errors]
    with Log.open(d, LogConfig(segment_bytes=2048, index_interval_bytes=256, segment_index_bytes=4096), log_start_offset=log_start_offset, sync=False, writable=True) as log:
        assert log.log_start_offset == max(log_start_offset, _segment_files(d)[0])
        got = [r.offset for b in log.batches() if not getattr(b, "is_control", False) for r in b.records() if r.offset >= log.log_start_offset]
        assert got == _kafka_offsets_from(log.log_start_offset)


# ------------------------------------------------------------------------------ retention.bytes
TOTAL = 2045 + 2039 + 1787 * 3 + 1360


def test_golden_sizes_are_what_the_tests_assume() -> None:
    assert _kafka_sizes() == {0: 2045, 51: 2039, 102: 1787, 146: 1787, 190: 1787, 234: 1360}
    assert sum(_kafka_sizes().values()) == TOTAL == 10805


@pytest.mark.parametrize(
    ("retention_bytes", "deleted"),
    [
        (-1, []),  # disabled
        (TOTAL + 1, []),  # log smaller than the limit
        (TOTAL, []),  # at the limit: the excess is 0, only empty segments could go
        (TOTAL - 2045 + 1, []),  # one byte short of covering the first segment
        (TOTAL - 2045, [0]),  # exactly the first segment: size - segment >= 0 deletes it
        (TOTAL - 2045 - 2039 - 1, [0, 51]),  # a third would leave the log under the limit
        (1360, [0, 51, 102, 146, 190]),  # everything but the active segment fits exactly
        (1359, [0, 51, 102, 146, 190]),  # the active segment (1360 bytes) would overshoot
    ],
)
def test_retention_bytes(golden: Path, retention_bytes: int, deleted: list[int]) -> None:
    """R-RET-03: excess = size - retention.bytes; oldest segments go while each fits in the remaining excess."""
    log = _open(golden, **{"retention.ms": -1, "retention.bytes": retention_bytes})
    r = log.delete_old_segments(0)
    assert [s.base_offset for s in r.deleted_segments] == deleted
    assert all(p.reason is DeletionReason.RETENTION_BYTES for p in r.passes)
    remaining = [b for b in BASES if b not in deleted]
    assert [s.base_offset for s in log.segments] == remaining == _segment_files(golden)
    assert log.log_start_offset == remaining[0]
    log.close()
    _check_reopens_and_verifies(golden, remaining[0])


def test_retention_bytes_zero_rolls_then_deletes_everything(golden: Path) -> None:
    """R-RET-06: every segment is due and the active one is not empty: an empty segment is rolled at the
    log end offset first, then all the old ones go; the log starts at the log end offset."""
    log = _open(golden, **{"retention.ms": -1, "retention.bytes": 0})
    r = log.delete_old_segments(0)
    assert [s.base_offset for s in r.deleted_segments] == BASES
    assert r.passes[0].rolled == LEO
    assert [s.base_offset for s in log.segments] == [LEO] and log.active_segment.size == 0
    assert log.log_start_offset == log.log_end_offset == LEO
    # leader epochs: every entry starts at or below 265, the latest (epoch 4) is kept, moved to 265
    assert read_leader_epoch_checkpoint(golden / "leader-epoch-checkpoint") == [EpochEntry(4, LEO)]
    # Kafka's snapshot at 265 is the rolled segment's; the others were deleted with their segments
    assert sorted(n for n in os.listdir(golden) if n.endswith(".snapshot")) == [f"{LEO:020d}.snapshot"]
    # an empty last segment is never deleted, however old
    assert log.delete_old_segments(10**15).passes == []
    log.close()
    assert verify([str(golden)]).errors == []
    with _open(golden, **NO_RETENTION) as log:
        assert log.log_start_offset == LEO and list(log.batches()) == []
        b = RecordBatchBuilder(0, partition_leader_epoch=4)
        b.append(1700000001000, b"k", b"v")
        assert log.append(b.build()).first_offset == LEO


# ----------------------------------------------------------------------------------- retention.ms
def test_golden_largest_timestamps_are_what_the_tests_assume(golden: Path) -> None:
    ts = _kafka_largest_timestamps()
    assert ts == {0: 1700000000075, 51: 1700000000155, 102: 1700000000225, 146: 1700000000295, 190: 1700000000365, 234: 1700000000420}
    with _open(golden, **NO_RETENTION) as log:  # R-RET-02: a segment's largest timestamp is its batches' largest
        assert {s.base_offset: s.largest_timestamp for s in segment_infos(log)} == ts


@pytest.mark.parametrize(
    ("now", "retention_ms", "deleted"),
    [
        (1700000000300, -1, []),
        (1700000000300, 100, [0, 51]),  # 300-155 = 145 > 100; 300-225 = 75 is not
        (1700000000300, 145, [0]),  # 300-155 = 145 is not > 145
        (1700000000300, 144, [0, 51]),
        (1700000000300, 226, []),  # 300-75 = 225 is not > 226
        (1700000000400, 100, [0, 51, 102, 146]),  # 400-295 = 105 > 100; 400-365 = 35 is not
    ],
)
def test_retention_ms(golden: Path, now: int, retention_ms: int, deleted: list[int]) -> None:
    """R-RET-04: a segment goes when now - largest timestamp > retention.ms, oldest first, stopping at the first kept."""
    log = _open(golden, **{"retention.ms": retention_ms, "retention.bytes": -1})
    r = log.delete_old_segments(now)
    assert [s.base_offset for s in r.deleted_segments] == deleted
    assert all(p.reason is DeletionReason.RETENTION_MS for p in r.passes)
    remaining = [b for b in BASES if b not in deleted]
    assert _segment_files(golden) == remaining
    log.close()
    _check_reopens_and_verifies(golden, remaining[0])


def test_retention_ms_stops_at_the_first_segment_kept() -> None:
    """R-RET-01: a run from the oldest segment; a younger segment in front protects older ones behind it."""
    segs = [SegmentInfo(0, 10, 500), SegmentInfo(10, 10, 100), SegmentInfo(20, 10, 50)]
    cfg = LogConfig(retention_ms=200, retention_bytes=-1)
    assert plan_retention(segs, log_start_offset=0, log_end_offset=30, high_watermark=30, config=cfg, now_ms=600) == []


def test_retention_ms_uses_mtime_when_a_segment_has_no_timestamp(tmp_path: Path) -> None:
    """R-RET-02: batches without timestamps (-1): the .log file's modification time stands in."""
    d = tmp_path / "t-0"
    log = Log.open(d, LogConfig(segment_bytes=200, retention_ms=1000, retention_bytes=-1, file_delete_delay_ms=0), sync=False, writable=True)
    for _ in range(4):
        b = RecordBatchBuilder(0)
        b.append(-1, b"k", b"v" * 100)
        log.append(b.build())
    bases = [s.base_offset for s in log.segments]
    assert bases == [0, 1, 2, 3]
    for base, mtime_s in zip(bases, (100, 200, 300, 400), strict=True):
        os.utime(d / f"{base:020d}.log", (mtime_s, mtime_s))
    infos = segment_infos(log)
    assert [(i.largest_timestamp, i.timestamp_from_mtime) for i in infos] == [(100_000, True), (200_000, True), (300_000, True), (400_000, True)]
    assert infos == segment_infos_of_dir(d)
    r = log.delete_old_segments(250_000)  # 250000 - 200000 = 50000 > 1000: the second goes too
    assert [s.base_offset for s in r.deleted_segments] == [0, 1]
    assert r.passes[0].segments[0].timestamp_from_mtime
    log.close()


# ------------------------------------------------------------------------------- log start offset
@pytest.mark.parametrize(
    ("start", "deleted"),
    [
        (50, []),  # inside the first segment: nothing wholly below it
        (51, [0]),  # the next segment starts at the log start offset
        (130, [0, 51]),
        (146, [0, 51, 102]),
        (LEO, [0, 51, 102, 146, 190]),  # the active segment stays: it has no next segment
    ],
)
def test_log_start_offset(golden: Path, start: int, deleted: list[int]) -> None:
    """R-RET-05: a segment goes when the next one starts at or below the log start offset, whatever
    cleanup.policy says; the log start offset does not move back to a segment boundary."""
    log = _open(golden, **{"cleanup.policy": "compact"})  # retention.ms/bytes do not apply to compact-only logs
    assert log.maybe_increment_log_start_offset(start) == (start > 0)
    r = log.delete_old_segments(10**15)
    assert [s.base_offset for s in r.deleted_segments] == deleted
    assert all(p.reason is DeletionReason.LOG_START_OFFSET for p in r.passes)
    assert log.log_start_offset == start
    with pytest.raises(OffsetOutOfRangeError):
        log.read(start - 1, 100)
    if start < LEO:
        assert log.read(start, 10**6).records
    log.close()
    _check_reopens_and_verifies(golden, start)


def test_log_start_offset_truncates_leader_epochs_and_is_checkpointed(golden: Path) -> None:
    """R-RET-07/R-RET-09: golden-0's epochs 0@0, 1@88, 4@176; at 130 the entries at or below it go and the
    last of them (epoch 1) restarts at 130. log-start-offset-checkpoint holds 130 (above the first
    segment's base 102), and no entry once the start is a segment boundary."""
    assert read_leader_epoch_checkpoint(SRC / "leader-epoch-checkpoint") == [EpochEntry(0, 0), EpochEntry(1, 88), EpochEntry(4, 176)]
    write_offset_checkpoint(golden.parent / "log-start-offset-checkpoint", {("other", 3): 7})
    log = _open(golden)
    log.maybe_increment_log_start_offset(130)
    log.delete_old_segments(0)
    assert read_leader_epoch_checkpoint(golden / "leader-epoch-checkpoint") == [EpochEntry(1, 130), EpochEntry(4, 176)]
    assert log.recovery_point >= 130
    checkpoint_log_dir(golden.parent, [log], sync=False)
    assert read_offset_checkpoint(golden.parent / "log-start-offset-checkpoint") == {("other", 3): 7, ("golden", 0): 130}
    log.maybe_increment_log_start_offset(146)
    log.delete_old_segments(0)
    checkpoint_log_dir(golden.parent, [log], sync=False)
    assert read_offset_checkpoint(golden.parent / "log-start-offset-checkpoint") == {("other", 3): 7}
    log.close()


def test_log_start_offset_above_the_high_watermark_is_refused(golden: Path) -> None:
    with _open(golden) as log:
        with pytest.raises(OffsetOutOfRangeError):
            log.maybe_increment_log_start_offset(LEO + 1)
        assert not log.maybe_increment_log_start_offset(0)


def test_segments_at_or_above_the_high_watermark_are_kept() -> None:
    """R-RET-01: a segment whose next base offset (or the log end) is above the high watermark stays."""
    segs = [SegmentInfo(b, 100, 0) for b in BASES]
    cfg = LogConfig(retention_ms=1, retention_bytes=-1)
    passes = plan_retention(segs, log_start_offset=0, log_end_offset=LEO, high_watermark=102, config=cfg, now_ms=10**6)
    assert [s.base_offset for p in passes for s in p.segments] == [0, 51]


def test_passes_run_in_kafkas_order(golden: Path) -> None:
    """R-RET-01: log start offset, then retention.bytes, then retention.ms, each over what is left."""
    log = _open(golden, **{"retention.bytes": TOTAL - 2045 - 2039, "retention.ms": 1700000000400 - 1700000000225 - 1})
    log.maybe_increment_log_start_offset(51)
    r = log.delete_old_segments(1700000000400)
    assert [(p.reason, [s.base_offset for s in p.segments]) for p in r.passes] == [
        (DeletionReason.LOG_START_OFFSET, [0]),
        (DeletionReason.RETENTION_BYTES, [51]),  # excess 2045+2039-2045 = 2039 after the first pass
        (DeletionReason.RETENTION_MS, [102]),  # 400-225 = 175 > 174; 400-295 = 105 is not
    ]
    log.close()


# ------------------------------------------------------------------------------ .deleted files
def test_deleted_files_wait_for_file_delete_delay(golden: Path) -> None:
    """R-RET-08: files and snapshots renamed .deleted at once, removed file.delete.delay.ms later."""
    log = _open(golden, **{"retention.ms": -1, "retention.bytes": TOTAL - 2045, "file.delete.delay.ms": 60_000})
    r = log.delete_old_segments(1_000)
    names = sorted(os.path.basename(p) for p in r.renamed)
    # golden-0's first segment has no .txnindex and no snapshot (Kafka wrote none at offset 0)
    assert names == ["00000000000000000000.index.deleted", "00000000000000000000.log.deleted", "00000000000000000000.timeindex.deleted"]
    assert all((golden / n).exists() for n in names) and not (golden / "00000000000000000000.log").exists()
    assert log.delete_pending_files(60_999) == []
    assert sorted(os.path.basename(p) for p in log.delete_pending_files(61_000)) == names
    assert not any(n.endswith(".deleted") for n in os.listdir(golden))
    log.close()


def test_deleted_snapshot_goes_with_its_segment(golden: Path) -> None:
    log = _open(golden, **{"retention.ms": -1, "retention.bytes": TOTAL - 2045 - 2039, "file.delete.delay.ms": 10})
    r = log.delete_old_segments(0)
    assert "00000000000000000051.snapshot.deleted" in {os.path.basename(p) for p in r.renamed}
    assert "00000000000000000051.txnindex.deleted" in {os.path.basename(p) for p in r.renamed}
    assert 51 not in log.producer_state.snapshot_offsets
    log.close()


def test_deleted_files_found_at_open_are_removed(golden: Path) -> None:
    """R-RET-08 crash state: the process stops before the delay passes; opening removes the .deleted files."""
    log = _open(golden, **{"retention.ms": -1, "retention.bytes": 0, "file.delete.delay.ms": 60_000})
    log.delete_old_segments(0)
    log.close()
    assert any(n.endswith(".deleted") for n in os.listdir(golden))
    _open(golden, **NO_RETENTION).close()
    assert not any(n.endswith(".deleted") for n in os.listdir(golden))


def test_zero_delay_removes_at_once(golden: Path) -> None:
    log = _open(golden, **{"retention.ms": -1, "retention.bytes": TOTAL - 2045})
    r = log.delete_old_segments(0)
    assert sorted(r.removed) == sorted(r.renamed) and r.pending == []
    log.close()


# ------------------------------------------------------------------------------------- dry runs
def test_dry_run_changes_nothing_and_reads_the_directory_as_the_log_does(golden: Path) -> None:
    before = {n: (golden / n).read_bytes() for n in os.listdir(golden)}
    with _open(golden, **NO_RETENTION) as log:
        assert segment_infos(log) == segment_infos_of_dir(golden)
    log = _open(golden, **{"retention.ms": -1, "retention.bytes": 0})
    r = log.delete_old_segments(0, dry_run=True)
    assert [s.base_offset for s in r.deleted_segments] == BASES and r.renamed == []
    log.close()
    assert {n: (golden / n).read_bytes() for n in os.listdir(golden)} == before


# ------------------------------------------------------------------------------ the command line
GOLDEN_CONFIG = ["--config", "index.interval.bytes=256", "--config", "segment.index.bytes=4096", "--config", "segment.bytes=2048"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalog", *args], capture_output=True, text=True, check=False)


def _kafka_batches(segment: str) -> list[dict]:
    return [o for o in _kafka_records() if o["type"] == "batch" and o["file"] == f"golden-0/{segment}"]


def test_cli_retention_bytes_json_and_checkpoints(golden: Path) -> None:
    res = _cli("retention", str(golden), "--retention-ms", "-1", "--retention-bytes", str(TOTAL - 2045 - 2039), "--file-delete-delay-ms", "0", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert [s["baseOffset"] for p in out["passes"] for s in p["segments"]] == [0, 51]
    assert out["logStartOffset"] == 102 and out["deletedBytes"] == 2045 + 2039 and out["pending"] == []
    assert _segment_files(golden) == [102, 146, 190, 234]
    assert not any(n.endswith(".deleted") for n in os.listdir(golden))
    # the log starts at a segment boundary: no log-start-offset entry (LogManager's rule); the recovery point is the log end
    assert read_offset_checkpoint(golden.parent / "log-start-offset-checkpoint") == {}
    assert read_offset_checkpoint(golden.parent / "recovery-point-offset-checkpoint") == {("golden", 0): LEO}
    assert verify([str(golden)]).errors == []


def test_cli_retention_log_start_offset_and_dry_run(golden: Path) -> None:
    before = {n: (golden / n).read_bytes() for n in os.listdir(golden)}
    res = _cli("retention", str(golden), "--retention-ms", "-1", "--log-start-offset", "130", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert "would delete 2 segment(s)" in res.stdout and "log start offset 0 -> 130" in res.stdout
    assert {n: (golden / n).read_bytes() for n in os.listdir(golden)} == before
    assert not (golden.parent / "log-start-offset-checkpoint").exists()
    res = _cli("retention", str(golden), "--retention-ms", "-1", "--log-start-offset", "130", "--file-delete-delay-ms", "60000")
    assert res.returncode == 0, res.stderr
    assert "deleted 2 segment(s)" in res.stdout and "log start offset 0 -> 130" in res.stdout and ".deleted file(s) wait" in res.stdout
    assert read_offset_checkpoint(golden.parent / "log-start-offset-checkpoint") == {("golden", 0): 130}
    # the next run reads the checkpoint back, and opening removes the .deleted files left by the last one
    res = _cli("retention", str(golden), "--retention-ms", "-1", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["logStartOffset"] == 130
    assert not any(n.endswith(".deleted") for n in os.listdir(golden))


def test_cli_retention_whole_data_dir_rolls_when_everything_is_due(tmp_path: Path) -> None:
    for name in ("golden-0", "transactional-0"):
        shutil.copytree(GOLDEN / "kafka" / "logdir" / name, tmp_path / name)
    (tmp_path / "golden-0.abc-delete").mkdir()  # a directory queued for deletion is not a partition
    res = _cli("retention", str(tmp_path), "--now-ms", str(1700000000000 + 7 * 24 * 3600 * 1000 + 10**6), "--file-delete-delay-ms", "0", "--json")
    assert res.returncode == 0, res.stderr
    outs = [json.loads(line) for line in res.stdout.splitlines()]
    # default retention.ms (7 days) has passed for every record: each log rolls at its end offset and keeps only that
    ends = {n: 1 + max(o["lastOffset"] for o in KAFKA_DUMP if o["type"] == "batch" and o["file"].startswith(n + "/")) for n in ("golden-0", "transactional-0")}
    assert ends["golden-0"] == LEO
    assert [(Path(o["dir"]).name, o["passes"][0]["rolled"], o["logStartOffset"]) for o in outs] == [(n, e, e) for n, e in ends.items()]
    for name, end in ends.items():
        assert _segment_files(tmp_path / name) == [end]
    assert verify([str(tmp_path / n) for n in ends]).errors == []


def test_cli_recover_changes_nothing_on_a_clean_kafka_directory(golden: Path) -> None:
    res = _cli("recover", str(golden), *GOLDEN_CONFIG, "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["truncatedBytes"] == 0 and out["rebuiltIndexes"] == [] and out["deletedTempFiles"] == []
    assert out["logEndOffset"] == LEO
    for n in os.listdir(SRC):
        assert (golden / n).read_bytes() == (SRC / n).read_bytes(), n


def test_cli_recover_reports_torn_tail_rebuilt_index_and_temp_files(golden: Path) -> None:
    last = _kafka_batches("00000000000000000234.log")[-1]  # Kafka's dump: position 1277, 83 bytes, offset 264
    log_file = golden / "00000000000000000234.log"
    os.truncate(log_file, log_file.stat().st_size - 10)
    (golden / "00000000000000000102.index").unlink()
    (golden / "00000000000000000007.log.deleted").write_bytes(b"x")
    (golden / "00000000000000000007.log.cleaned").write_bytes(b"x")
    res = _cli("recover", str(golden), *GOLDEN_CONFIG, "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["truncated"] == [{"file": "00000000000000000234.log", "sizeBefore": 1360 - 10, "sizeAfter": last["position"]}]
    assert out["truncatedBytes"] == 1360 - 10 - last["position"]
    assert out["logEndOffset"] == last["baseOffset"]
    assert "00000000000000000102.index" in out["rebuiltIndexes"]
    assert (golden / "00000000000000000102.index").read_bytes() == (SRC / "00000000000000000102.index").read_bytes()
    assert out["deletedTempFiles"] == ["00000000000000000007.log.cleaned", "00000000000000000007.log.deleted"]
    assert read_offset_checkpoint(golden.parent / "recovery-point-offset-checkpoint") == {("golden", 0): last["baseOffset"]}
    assert verify([str(golden)]).errors == []
    res = _cli("recover", str(golden), *GOLDEN_CONFIG)
    assert res.returncode == 0 and "nothing to repair" in res.stdout


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["retention", "/nonexistent/x-0"], 3, "no such directory"),
        (["recover", "/nonexistent/x-0"], 3, "no such directory"),
        (["retention", "{golden}", "--log-start-offset", str(LEO + 1)], 2, "above the high watermark"),
        (["retention", "{golden}", "--log-start-offset", str(LEO + 1), "--dry-run"], 2, "the log ends at 265"),
        (["retention", "{parent}", "--log-start-offset", "5"], 2, "exactly one partition"),
        (["retention", "{golden}", "--config", "no.such.config=1"], 2, "unknown"),
        (["recover", "{golden}", "--config", "index.interval.bytes"], 2, "KEY=VALUE"),
        (["retention", "{empty}"], 3, "neither a partition directory"),
        (["recover", "{empty}"], 3, "neither a partition directory"),
        (["compact", "{empty}"], 3, "neither a partition directory"),
    ],
)
def test_cli_errors(golden: Path, tmp_path: Path, args: list[str], code: int, message: str) -> None:
    shutil.copytree(SRC, tmp_path / "other-1")
    (tmp_path / "empty").mkdir()
    argv = [a.format(golden=golden, parent=tmp_path, empty=tmp_path / "empty") for a in args]
    res = _cli(*argv)
    assert res.returncode == code, res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr


def test_cli_corrupt_checkpoint_is_bad_data(golden: Path) -> None:
    (golden.parent / "log-start-offset-checkpoint").write_text("0\n1\ngolden 0\n")
    res = _cli("retention", str(golden))
    assert res.returncode == 1 and "log-start-offset-checkpoint" in res.stderr and "Traceback" not in res.stderr
