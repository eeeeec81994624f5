"""Log compaction (kafkalog.log.cleaner) against Kafka's cleaner output, Kafka's cleaning rules, and crashes mid-swap.

Expected values come from Kafka: the golden compacted-0/compacted-1 directories and their dumps
(written and read by Kafka's own cleaner and readers), the parameters in their ``.json``, and
rules of LogCleaner.scala / LogCleanerManager.scala @1eb7644 worked out by hand below.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from helpers import GOLDEN, need_shared, read_jsonl
from kafkalog.format.checkpoints import read_offset_checkpoint
from kafkalog.format.records.control import ControlType
from kafkalog.format.records.v2 import RecordBatchBuilder
from kafkalog.log.cleaner import (
    CLEANER_OFFSET_CHECKPOINT,
    CleanerConfig,
    LastRecord,
    LogToClean,
    OffsetMap,
    clean,
    cleanable_offsets,
    compact,
    group_segments_by_size,
    log_to_clean,
    max_compaction_delay,
)
from kafkalog.log.unified import Log, LogConfig
from kafkalog.tools.dump import DumpOptions, dump
from kafkalog.tools.validate import verify
from scratch import fingerprint

GOLDEN_LOGDIR = GOLDEN / "kafka" / "logdir"
KINDS = (".log", ".index", ".timeindex", ".txnindex")


# ------------------------------------------------------------------------------- helpers
#: golden/kafka/logdir's compacted-N were written by Kafka 4.0.0's cleaner (one index entry per appended chunk)
KAFKA_400 = (4, 0, 0)


def _params(base: Path, n: int) -> dict:
    return json.loads((base / f"compacted-input-{n}.json").read_text())


def _config(p: dict) -> LogConfig:
    return LogConfig(
        segment_bytes=p["segment.bytes"], segment_index_bytes=p["segment.index.bytes"], index_interval_bytes=p["index.interval.bytes"],
        delete_retention_ms=p["delete.retention.ms"], file_delete_delay_ms=p["file.delete.delay.ms"], cleanup_policy=("compact",),
        max_message_bytes=p["max.message.bytes"], min_cleanable_dirty_ratio=p["min.cleanable.dirty.ratio"],
        min_compaction_lag_ms=p["min.compaction.lag.ms"], max_compaction_lag_ms=p["max.compaction.lag.ms"],
        producer_id_expiration_ms=p["producer.id.expiration.ms"], kafka_version=KAFKA_400,
    )


def _cleaner_config(p: dict) -> CleanerConfig:
    return CleanerConfig(
        dedupe_buffer_size=p["offsetMap"]["memoryBytes"], dedupe_buffer_load_factor=p["dupBufferLoadFactor"],
        io_buffer_size=p["ioBufferSize"], max_io_buffer_size=p["maxIoBufferSize"], hash_algorithm=p["offsetMap"]["hashAlgorithm"],
    )


def _active(p: dict) -> dict[int, LastRecord]:
    return {a["producerId"]: LastRecord(a["lastDataOffset"], a["producerEpoch"]) for a in p["lastRecordsOfActiveProducers"]}


def _copy_input(base: Path, n: int, tmp: Path) -> Path:
    """A writable copy of compacted-input-N named as its topic partition (compacted-0) inside a log dir."""
    d = tmp / "logdir" / _params(base, n)["topicPartition"]
    shutil.copytree(base / f"compacted-input-{n}", d)
    for f in d.iterdir():
        f.chmod(0o644)
    return d


def _open(d: Path, p: dict, **kw: object) -> Log:
    kw.setdefault("writable", True)
    return Log.open(d, _config(p), clock=lambda: p["clockMs"], sync=False, **kw)  # type: ignore[arg-type]


def _read_only_view(d: Path, p: dict, **kw: object) -> tuple[list[int], list[tuple[int, bytes | None, bytes | None]]]:
    """(segment base offsets, records) of a read-only load of ``d``, which must leave every file as it was."""
    before = fingerprint(d)
    with _open(d, p, writable=False, **kw) as lg:
        view = [s.base_offset for s in lg.segments], [(r.offset, r.key, r.value) for b in lg.batches() for r in b.records()]
    assert fingerprint(d) == before
    return view


def _run_pass(base: Path, n: int, tmp: Path) -> Path:
    p = _params(base, n)
    d = _copy_input(base, n, tmp)
    lg = _open(d, p)
    res = clean(lg, p["firstDirtyOffset"], p["firstUncleanableOffset"], p["clockMs"], cleaner_config=_cleaner_config(p), active_producers=_active(p))
    assert res.end_offset == p["cleanerResultEndOffset"]
    lg.close()
    return d


def _dump(path: Path) -> list[dict]:
    out, err = io.StringIO(), io.StringIO()
    result = dump([str(path)], DumpOptions(fmt="json"), out, err)
    assert not result.errors, result.errors
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _assert_same_as_kafka(ours: Path, kafka: Path, kafka_dump: list[dict]) -> None:
    """Every segment file Kafka has is byte-identical; ours has no other non-empty segment file; the dumps agree."""
    theirs = {f.name for f in kafka.iterdir()}
    for name in sorted(theirs):
        if name.endswith(KINDS) or name.endswith(".snapshot") or name == "leader-epoch-checkpoint":
            assert (ours / name).exists(), f"{name} missing"
            assert (ours / name).read_bytes() == (kafka / name).read_bytes(), f"{name} differs from Kafka's"
    for f in ours.iterdir():
        if f.name not in theirs:
            # only the empty indexes of the empty active segment, which the loader creates as Kafka's does on load
            assert f.name.endswith((".index", ".timeindex")) and f.stat().st_size == 0, f"unexpected file {f.name}"
    prefix = kafka.name + "/"
    expected = [e for e in kafka_dump if e["file"].startswith(prefix)]
    got = [g for g in _dump(ours) if g["file"].split("/")[0] in theirs]
    for g in got:
        g["file"] = prefix + g["file"]
    assert got == expected


# ------------------------------------------------------------------------- byte identity
@pytest.mark.rule("R-CMP-01", "R-CMP-05", "R-CMP-06", "R-CMP-07", "R-CMP-08", "R-CMP-09", "R-CMP-10", "R-CMP-11", "R-CMP-12")
@pytest.mark.parametrize("n", [0, 1])
def test_golden_pass_is_byte_identical(n: int, tmp_path: Path) -> None:
    d = _run_pass(GOLDEN_LOGDIR, n, tmp_path)
    _assert_same_as_kafka(d, GOLDEN_LOGDIR / f"compacted-{n}", read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"))
    assert not verify(d).errors


@pytest.mark.parametrize("n", [0, 1])
def test_shared_golden_pass_is_byte_identical(n: int, tmp_path: Path) -> None:
    base = need_shared("golden-kafka")
    d = _run_pass(base / "logdir", n, tmp_path)
    _assert_same_as_kafka(d, base / "logdir" / f"compacted-{n}", read_jsonl(base / "dump" / "logdir.jsonl"))


@pytest.mark.rule("R-CMP-02", "R-CMP-13")
def test_compact_pass_finds_the_range_and_writes_the_checkpoint(tmp_path: Path) -> None:
    """compact() derives the range Kafka used (first dirty 0, first uncleanable = active base 126), takes the active
    producers from the loaded producer state (not expired at the pass's clock), and checkpoints the next dirty offset."""
    p = _params(GOLDEN_LOGDIR, 0)
    d = _copy_input(GOLDEN_LOGDIR, 0, tmp_path)
    with _open(d, p) as lg:
        res = compact(lg, p["clockMs"], cleaner_config=_cleaner_config(p))
    assert (res.to_clean.first_dirty_offset, res.to_clean.first_uncleanable_offset) == (p["firstDirtyOffset"], p["firstUncleanableOffset"])
    assert res.cleaned is not None and res.cleaned.end_offset == p["cleanerResultEndOffset"]
    assert read_offset_checkpoint(d.parent / CLEANER_OFFSET_CHECKPOINT) == {("compacted", 0): p["cleanerResultEndOffset"]}
    _assert_same_as_kafka(d, GOLDEN_LOGDIR / "compacted-0", read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"))
    # a second pass right away: nothing is dirty any more (first dirty = first uncleanable = 126)
    with _open(d, p) as lg:
        again = compact(lg, p["clockMs"], cleaner_config=_cleaner_config(p))
    assert again.cleaned is None and again.to_clean.cleanable_bytes == 0
    # a log whose cleanup.policy does not include compact is never cleaned, even when forced
    e = _copy_input(GOLDEN_LOGDIR, 0, tmp_path / "delete-policy")
    with Log.open(e, LogConfig(cleanup_policy=("delete",)), clock=lambda: p["clockMs"], sync=False, writable=True) as lg:
        assert compact(lg, p["clockMs"], force=True).cleaned is None
    assert _logs(e) == _logs(GOLDEN_LOGDIR / "compacted-input-0")


# ------------------------------------------------------------------------------ the rules
def _batch(base: int, ts: int, *records: tuple[bytes, bytes | None], **kw: object) -> bytes:
    b = RecordBatchBuilder(base, **kw)  # type: ignore[arg-type]
    for i, (k, v) in enumerate(records):
        b.append(ts + i, k, v, offset=base + i)
    return b.build()


def _log(tmp: Path, batches: list[bytes], **cfg: object) -> Log:
    config = LogConfig(cleanup_policy=("compact",), **cfg)  # type: ignore[arg-type]
    lg = Log.open(tmp / "logdir" / "t-0", config, clock=lambda: 10_000_000, sync=False, writable=True)
    for b in batches:
        lg.append(b, assign_offsets=False)
    return lg


@pytest.mark.rule("R-CMP-03")
def test_dirty_ratio_must_be_exceeded() -> None:
    """grabFilthiestCompactedLog: cleanableRatio > min.cleanable.dirty.ratio (strictly), or forced by the max lag with bytes to clean."""
    half = LogToClean(0, 100, clean_bytes=500, cleanable_bytes=500, need_compaction_now=False)
    assert half.cleanable_ratio == 0.5
    assert not half.should_clean(0.5)
    assert half.should_clean(0.49)
    forced = LogToClean(0, 100, clean_bytes=990, cleanable_bytes=10, need_compaction_now=True)
    assert forced.should_clean(0.99)
    assert not LogToClean(0, 0, 500, 0, need_compaction_now=True).should_clean(0.0)
    assert not LogToClean(0, 0, 0, 0, need_compaction_now=False).should_clean(0.0)


@pytest.mark.rule("R-CMP-02", "R-CMP-04")
def test_min_compaction_lag_and_active_segment_bound_the_range(tmp_path: Path) -> None:
    # one batch per segment (segment.bytes fits one), timestamps 1000, 2000, 3000; active segment at 3
    batches = [_batch(i, 1000 * (i + 1), (b"k%d" % i, b"v")) for i in range(3)]
    lg = _log(tmp_path, batches, segment_bytes=len(batches[0]) + 10)
    lg.roll()
    assert [s.base_offset for s in lg.segments] == [0, 1, 2, 3]
    # no lag: bounded by the active segment (and the last stable offset, 3)
    assert cleanable_offsets(lg, None, 5000) == (0, 3, False)
    # lag 2500 at now 5000: segment 1 (largest timestamp 2000) is not older than now - lag = 2500? 2000 <= 2500 -> cleanable;
    # segment 2 (3000 > 2500) is the first uncleanable one
    lg_cfg = LogConfig(cleanup_policy=("compact",), segment_bytes=lg.config.segment_bytes, min_compaction_lag_ms=2500)
    lg.config = lg_cfg
    assert cleanable_offsets(lg, None, 5000) == (0, 2, False)
    # the comparison is strict: with now - lag == 2000, segment 1 (largest timestamp 2000) is still cleanable
    lg.config = LogConfig(cleanup_policy=("compact",), segment_bytes=lg.config.segment_bytes, min_compaction_lag_ms=3000)
    assert cleanable_offsets(lg, None, 5000) == (0, 2, False)
    lg.config = LogConfig(cleanup_policy=("compact",), segment_bytes=lg.config.segment_bytes, min_compaction_lag_ms=3001)
    assert cleanable_offsets(lg, None, 5000) == (0, 1, False)
    lg.config = lg_cfg
    # a checkpoint below the log start or past the log end resets to the log start and asks for a checkpoint rewrite
    assert cleanable_offsets(lg, 99, 5000) == (0, 2, True)
    # a checkpoint past the first uncleanable offset: the range is empty at the checkpoint
    assert cleanable_offsets(lg, 3, 5000) == (3, 3, False)
    ltc = log_to_clean(lg, 1, 5000)
    sizes = [s.size for s in lg.segments]
    assert (ltc.clean_bytes, ltc.cleanable_bytes) == (sizes[0], sizes[1])
    lg.close()


@pytest.mark.rule("R-CMP-04")
def test_max_compaction_lag_forces_cleaning(tmp_path: Path) -> None:
    batches = [_batch(i, 1000 * (i + 1), (b"k", b"v")) for i in range(3)]
    lg = _log(tmp_path, batches, segment_bytes=len(batches[0]) + 10, max_compaction_lag_ms=1500)
    lg.roll()
    # earliest dirty first-batch timestamp 1000; now 5000 - lag 1500 = 3500 -> 2500 ms overdue
    assert max_compaction_delay(lg, 0, 5000) == 2500
    assert max_compaction_delay(lg, 0, 2000) == 0
    lg.close()


@pytest.mark.rule("R-CMP-02")
def test_open_transaction_bounds_the_range(tmp_path: Path) -> None:
    """The last stable offset is an upper bound: an undecided transaction's data is never cleaned."""
    txn = dict(producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    batches = [_batch(0, 1000, (b"a", b"1")), _batch(1, 2000, (b"b", b"2"), **txn)]
    lg = _log(tmp_path, batches, segment_bytes=len(batches[0]) + 10)
    lg.append(_batch(2, 3000, (b"c", b"3")), assign_offsets=False)
    lg.roll()
    assert lg.last_stable_offset == 1
    assert cleanable_offsets(lg, None, 5000)[1] == 1
    lg.close()


@pytest.mark.rule("R-CMP-07", "R-CMP-08")
def test_tombstone_horizon_is_stamped_then_reached(tmp_path: Path) -> None:
    """Pass 1 keeps the latest tombstone and stamps its batch deleteHorizonMs = now + delete.retention.ms (base timestamp =
    horizon, attribute bit 6); a pass before the horizon keeps it; a pass at the horizon removes it."""
    batches = [
        _batch(0, 1000, (b"a", b"1"), (b"b", b"1")),
        _batch(2, 2000, (b"a", None), (b"c", b"1")),
        _batch(4, 3000, (b"c", b"2")),
    ]
    lg = _log(tmp_path, batches, segment_bytes=1 << 20, delete_retention_ms=500)
    lg.roll()
    clean(lg, 0, 5, now_ms=10_000, active_producers={})
    got = [(b.base_offset, b.last_offset, b.delete_horizon_ms, b.base_timestamp, [(r.offset, r.key, r.value) for r in b.records()]) for b in lg.batches()]
    assert got == [
        (0, 1, None, 1001, [(1, b"b", b"1")]),
        (2, 3, 10_500, 10_500, [(2, b"a", None)]),
        (4, 4, None, 3000, [(4, b"c", b"2")]),
    ]
    assert next(b for b in lg.batches() if b.base_offset == 2).attributes & 0x40
    clean(lg, 0, 5, now_ms=10_499, active_producers={})
    assert [r.offset for b in lg.batches() for r in b.records()] == [1, 2, 4]
    clean(lg, 0, 5, now_ms=10_500, active_producers={})
    assert [(b.base_offset, [r.offset for r in b.records()]) for b in lg.batches()] == [(0, [1]), (4, [4])]
    lg.close()


@pytest.mark.rule("R-CMP-08", "R-CMP-11")
def test_last_batch_of_the_round_is_kept_empty(tmp_path: Path) -> None:
    """A tombstone past its horizon goes, but the batch ending the cleaning round stays as an empty header so the
    round's last offset is not lost; the superseded value before it goes with its batch."""
    batches = [_batch(0, 1000, (b"a", b"1")), _batch(1, 2000, (b"a", None))]
    lg = _log(tmp_path, batches, delete_retention_ms=500)
    lg.roll()
    clean(lg, 0, 2, now_ms=10_000, active_producers={})
    assert [(b.base_offset, b.delete_horizon_ms, b.count) for b in lg.batches()] == [(1, 10_500, 1)]
    clean(lg, 0, 2, now_ms=10_500, active_producers={})
    got = [(b.base_offset, b.last_offset, b.count, b.size_in_bytes, b.max_timestamp, b.delete_horizon_ms) for b in lg.batches()]
    assert got == [(1, 1, 0, 61, 2000, None)]
    lg.close()


@pytest.mark.rule("R-CMP-09", "R-CMP-10")
def test_aborted_data_goes_and_commit_marker_follows_its_data(tmp_path: Path) -> None:
    """Aborted batches are dropped (an emptied batch is kept only for an active producer or the round's end); a COMMIT
    marker whose transaction kept data is retained, and once the data is gone the marker gets a horizon, then goes."""
    p1 = dict(producer_id=5, producer_epoch=0, is_transactional=True)
    ctrl = dict(producer_id=5, producer_epoch=0, is_transactional=True, is_control=True)

    def marker(off: int, ctype: ControlType, ts: int) -> bytes:
        b = RecordBatchBuilder(off, **ctrl)  # type: ignore[arg-type]
        b.append_end_txn_marker(ctype, 0, ts)
        return b.build()

    batches = [
        _batch(0, 1000, (b"x", b"aborted"), base_sequence=0, **p1),
        marker(1, ControlType.ABORT, 1001),
        _batch(2, 1002, (b"y", b"committed"), base_sequence=1, **p1),
        marker(3, ControlType.COMMIT, 1003),
        _batch(4, 1004, (b"y", b"newer")),
    ]
    lg = _log(tmp_path, batches, delete_retention_ms=100)
    lg.roll()
    assert lg.collect_aborted_transactions(0, 5)
    clean(lg, 0, 5, now_ms=5000, active_producers={})
    # aborted batch 0 dropped; its ABORT marker stays (data was seen in this pass) and is indexed;
    # y@2 is superseded by y@4 -> batch 2 emptied and dropped; COMMIT marker kept (its transaction had a batch)
    assert [(b.base_offset, b.count) for b in lg.batches()] == [(1, 1), (3, 1), (4, 1)]
    assert [(t.first_offset, t.last_offset) for t in lg.segments[0].txn_index.all_aborted_txns()] == [(0, 1)]
    clean(lg, 0, 5, now_ms=5000, active_producers={})
    # now both markers belong to transactions with no data left: stamped with horizon 5100, kept
    assert [(b.base_offset, b.delete_horizon_ms) for b in lg.batches()] == [(1, 5100), (3, 5100), (4, None)]
    clean(lg, 0, 5, now_ms=5100, active_producers={})
    assert [b.base_offset for b in lg.batches()] == [4]
    lg.close()


@pytest.mark.rule("R-CMP-11")
def test_emptied_batch_kept_for_active_producer_and_round_end(tmp_path: Path) -> None:
    idem = dict(producer_id=9, producer_epoch=2, base_sequence=0)
    batches = [_batch(0, 1000, (b"a", b"1"), (b"b", b"1"), **idem), _batch(2, 2000, (b"a", b"2"), (b"b", b"2"))]
    lg = _log(tmp_path, batches)
    lg.append(_batch(4, 3000, (b"a", b"3"), (b"b", b"3")), assign_offsets=False)
    lg.roll()
    clean(lg, 0, 6, now_ms=10_000, active_producers={9: LastRecord(1, 2)})
    got = [(b.base_offset, b.last_offset, b.count, b.producer_id, b.base_sequence) for b in lg.batches()]
    # batch 0 holds producer 9's last sequence: kept as an empty 61-byte header with its offsets; batch 2 emptied and gone
    assert got == [(0, 1, 0, 9, 0), (4, 5, 2, -1, -1)]
    assert next(lg.batches()).size_in_bytes == 61
    lg.close()


@pytest.mark.rule("R-CMP-06")
def test_offset_map_capacity_and_fullness() -> None:
    # SkimpyOffsetMap: memory / (MD5 size 16 + 8); Kafka's run of the golden passes reports 43690 slots for 1 MiB
    p = _params(GOLDEN_LOGDIR, 0)
    assert OffsetMap(p["offsetMap"]["memoryBytes"]).slots == p["offsetMap"]["slots"]
    m = OffsetMap(48)
    m.put(b"k", 3)
    m.put(b"k", 5)
    assert (len(m), m.get(b"k"), m.get(b"other"), m.latest_offset) == (1, 5, -1, 5)


@pytest.mark.rule("R-CMP-06")
def test_full_offset_map_ends_the_pass_early(tmp_path: Path) -> None:
    """With room for 2 keys (3 slots x 0.75), the map stops at the third key: the pass ends after offset 1, and records
    past the map's latest offset are all kept."""
    batches = [_batch(i, 1000 + i, (b"k%d" % (i % 3), b"v%d" % i)) for i in range(6)]
    lg = _log(tmp_path, batches)
    lg.roll()
    res = clean(lg, 0, 6, now_ms=10_000, cleaner_config=CleanerConfig(dedupe_buffer_size=72, dedupe_buffer_load_factor=0.75), active_producers={})
    assert res.end_offset == 2
    assert [r.offset for b in lg.batches() for r in b.records()] == [0, 1, 2, 3, 4, 5]
    lg.close()


@pytest.mark.rule("R-CMP-05")
def test_group_segments_by_size() -> None:
    def seg(base: int, size: int, idx: int = 0, tidx: int = 0) -> SimpleNamespace:
        return SimpleNamespace(base_offset=base, size=size, offset_index=SimpleNamespace(size_in_bytes=idx), time_index=SimpleNamespace(size_in_bytes=tidx))

    s = [seg(0, 600), seg(10, 400), seg(20, 1), seg(30, 500)]
    names = lambda groups: [[x.base_offset for x in g] for g in groups]  # noqa: E731
    assert names(group_segments_by_size(s, 1000, 100, 40)) == [[0, 10], [20, 30]]
    assert names(group_segments_by_size(s, 1001, 100, 40)) == [[0, 10, 20], [30]]
    # index limits are checked separately for the offset and the time index
    t = [seg(0, 1, 60, 0), seg(10, 1, 50, 0), seg(20, 1, 0, 90), seg(30, 1, 0, 20)]
    assert names(group_segments_by_size(t, 1000, 100, 40)) == [[0], [10, 20], [30]]
    # offsets must fit a relative offset of the group's first segment (an empty segment is exempt)
    big = [seg(0, 1), seg(2**31, 1), seg(2**31 + 5, 0)]
    assert names(group_segments_by_size(big, 1000, 100, 2**31 + 10)) == [[0], [2**31, 2**31 + 5]]


# ------------------------------------------------------------------------------ crash states
class _Crash(Exception):
    pass


def _steps(base: Path, n: int, tmp: Path) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    p = _params(base, n)
    d = _copy_input(base, n, tmp / "count")
    lg = _open(d, p)
    clean(lg, p["firstDirtyOffset"], p["firstUncleanableOffset"], p["clockMs"], cleaner_config=_cleaner_config(p),
          active_producers=_active(p), on_step=lambda step, path: seen.append((step, os.path.basename(path))))
    lg.close()
    return seen


def _logs(d: Path) -> dict[str, bytes]:
    return {f.name: f.read_bytes() for f in d.iterdir() if f.name.endswith(".log") and f.stat().st_size}


@pytest.mark.rule("R-CMP-12", "R-CMP-14", "R-RCV-03", "R-RCV-04")
@pytest.mark.parametrize("n", [0, 1])
def test_crash_between_each_rename_recovers_old_or_new(n: int, tmp_path: Path) -> None:
    """Stop the cleaner before each rename of the swap, as a crash would, and reopen: no .cleaned/.swap/.deleted file is
    left, and each segment is either the input's or Kafka's cleaned one (never both, never neither)."""
    p = _params(GOLDEN_LOGDIR, n)
    steps = _steps(GOLDEN_LOGDIR, n, tmp_path)
    assert {s for s, _ in steps} == ({"swap", "delete", "final", "snapshot"} if n == 1 else {"swap", "delete", "final"})
    before = _logs(GOLDEN_LOGDIR / f"compacted-input-{n}")
    after = _logs(GOLDEN_LOGDIR / f"compacted-{n}")
    outcomes = set()
    for k in range(len(steps) + 1):
        d = _copy_input(GOLDEN_LOGDIR, n, tmp_path / str(k))
        lg = _open(d, p)
        calls = iter(range(len(steps) + 1))

        def hook(step: str, path: str, k: int = k, calls=calls) -> None:  # noqa: ANN001
            if next(calls) == k:
                raise _Crash(f"{step} {path}")

        with contextlib.suppress(_Crash):
            clean(lg, p["firstDirtyOffset"], p["firstUncleanableOffset"], p["clockMs"], cleaner_config=_cleaner_config(p), active_producers=_active(p), on_step=hook)
        for seg in lg.segments:  # a crash: nothing flushed or trimmed on the way out
            seg.close_handlers()
        read_only = _read_only_view(d, p, had_clean_shutdown=False)  # R-NAME-14: the same view, in memory
        reopened = _open(d, p, had_clean_shutdown=False)
        assert read_only == ([s.base_offset for s in reopened.segments], [(r.offset, r.key, r.value) for b in reopened.batches() for r in b.records()]), k
        assert not [f.name for f in d.iterdir() if f.name.endswith((".cleaned", ".swap", ".deleted"))], k
        got = _logs(d)
        for name, data in got.items():
            assert data in (before.get(name), after.get(name)), f"crash at step {k}: {name} is neither the input's nor Kafka's"
        records = [(r.offset, r.key, r.value) for b in reopened.batches() for r in b.records()]
        reopened.close()
        state = "new" if got == after else "old" if got == before else "mixed"
        if n == 1:
            assert state in ("old", "new"), (k, steps[k] if k < len(steps) else "end", sorted(got))
        outcomes.add(state)
        assert records == sorted(records)
    assert {"old", "new"} <= outcomes


@pytest.mark.rule("R-CMP-14", "R-RCV-03")
def test_swap_at_or_above_a_cleaned_file_is_an_incomplete_swap(tmp_path: Path) -> None:
    """LogLoader: .cleaned files are deleted, and so is every .swap whose base offset is >= the lowest .cleaned one
    (the renames to .swap go highest offset first, so such a swap set is incomplete); the log stays as it was."""
    p = _params(GOLDEN_LOGDIR, 1)
    d = _copy_input(GOLDEN_LOGDIR, 1, tmp_path)
    before = _logs(d)
    shutil.copy(d / "00000000000000000000.log", d / "00000000000000000000.log.cleaned")
    shutil.copy(d / "00000000000000000126.log", d / "00000000000000000072.log.swap")
    shutil.copy(d / "00000000000000000126.log", d / "00000000000000000072.timeindex.swap")
    read_only = _read_only_view(d, p)
    with _open(d, p) as lg:
        assert [s.base_offset for s in lg.segments] == [0, 72, 126, 128]
        assert read_only == ([0, 72, 126, 128], [(r.offset, r.key, r.value) for b in lg.batches() for r in b.records()])
    assert not [f.name for f in d.iterdir() if f.name.endswith((".cleaned", ".swap"))]
    assert _logs(d) == before


@pytest.mark.rule("R-CMP-14", "R-RCV-04")
def test_complete_swap_replaces_the_segments_it_covers(tmp_path: Path) -> None:
    """A complete .swap set (no .cleaned left) is finished on load: files of any base offset in [swap base, swap end)
    (old segments and their snapshots) are deleted and the .swap files renamed."""
    p = _params(GOLDEN_LOGDIR, 1)
    d = _copy_input(GOLDEN_LOGDIR, 1, tmp_path)
    kafka = GOLDEN_LOGDIR / "compacted-1"
    for kind in (".log", ".index", ".timeindex", ".txnindex"):
        shutil.copy(kafka / f"00000000000000000000{kind}", d / f"00000000000000000000{kind}.swap")
    read_only = _read_only_view(d, p)
    with _open(d, p) as lg:
        assert [s.base_offset for s in lg.segments] == [0, 128]
        assert read_only == ([0, 128], [(r.offset, r.key, r.value) for b in lg.batches() for r in b.records()])
    assert _logs(d) == _logs(kafka)
    assert not (d / "00000000000000000072.snapshot").exists() and not (d / "00000000000000000126.snapshot").exists()


# ------------------------------------------------------------------------------------- CLI
def _cli(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from kafkalog.tools.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_compact_matches_kafka_and_checkpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = _params(GOLDEN_LOGDIR, 0)
    d = _copy_input(GOLDEN_LOGDIR, 0, tmp_path)
    opts = ["--now-ms", str(p["clockMs"]), "--min-cleanable-dirty-ratio", "0.01", "--segment-bytes", "4096", "--segment-index-bytes", "4096",
            "--index-interval-bytes", "256", "--file-delete-delay-ms", "0", "--dedupe-buffer-size", str(p["offsetMap"]["memoryBytes"]),
            "--kafka-version", "4.0.0"]
    before = fingerprint(d.parent)
    code, out, _err = _cli("compact", str(d.parent), "--dry-run", *opts, capsys=capsys)
    assert code == 0 and "would be cleaned" in out
    assert fingerprint(d.parent) == before  # a dry run reads only (R-NAME-14): no recovery, no checkpoint
    code, out, _err = _cli("compact", str(d.parent), "--json", *opts, capsys=capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["cleaned"] and doc["result"]["endOffset"] == p["cleanerResultEndOffset"]
    assert [g["replacedSegments"] for g in doc["result"]["groups"]] == [[0], [72]]
    _assert_same_as_kafka(d, GOLDEN_LOGDIR / "compacted-0", read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"))
    assert read_offset_checkpoint(d.parent / CLEANER_OFFSET_CHECKPOINT) == {("compacted", 0): 126}
    code, out, _err = _cli("compact", str(d), *opts, capsys=capsys)
    assert code == 0 and "not cleaned" in out and "[126, 126)" in out


@pytest.mark.rule("R-CMP-15")
def test_cli_compact_then_retention_as_the_cleaner_thread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """LogCleaner runs deleteOldSegments on each compacted log after a pass: with compact,delete and
    retention.ms=0 every segment goes (an empty one rolled at the log end first); with the policy
    left unnamed it is compact alone, retention.ms is ignored and the result is Kafka's compacted-0."""
    from kafkalog import LogReader

    p = _params(GOLDEN_LOGDIR, 0)
    opts = ["--now-ms", str(p["clockMs"]), "--min-cleanable-dirty-ratio", "0.01", "--segment-bytes", "4096", "--segment-index-bytes", "4096",
            "--index-interval-bytes", "256", "--file-delete-delay-ms", "0", "--dedupe-buffer-size", str(p["offsetMap"]["memoryBytes"]),
            "--config", "retention.ms=0", "--kafka-version", "4.0.0"]
    d = _copy_input(GOLDEN_LOGDIR, 0, tmp_path / "a")
    leo = int(sorted(d.glob("*.log"))[-1].stem)  # the active segment's base, unless it holds batches
    for f in d.glob("*.log"):
        with LogReader(f) as r:
            leo = max([leo, *(b.last_offset + 1 for b in r.batches())])
    code, out, _err = _cli("compact", str(d), "--json", *opts, "--config", "cleanup.policy=compact,delete", capsys=capsys)
    doc = json.loads(out)
    assert code == 0 and doc["cleaned"]
    assert doc["retention"]["logStartOffset"] == leo
    assert [f.name for f in sorted(d.glob("*.log"))] == [f"{leo:020d}.log"] and (d / f"{leo:020d}.log").stat().st_size == 0
    d = _copy_input(GOLDEN_LOGDIR, 0, tmp_path / "b")
    code, out, _err = _cli("compact", str(d), *opts, capsys=capsys)
    assert code == 0 and "deleted" not in out
    _assert_same_as_kafka(d, GOLDEN_LOGDIR / "compacted-0", read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"))


def test_cli_compact_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = _cli("compact", str(tmp_path / "absent"), capsys=capsys)
    assert code == 3 and "no such directory" in err
    d = _copy_input(GOLDEN_LOGDIR, 0, tmp_path)
    code, _out, err = _cli("compact", str(d), "--min-cleanable-dirty-ratio", "1.5", capsys=capsys)
    assert code == 2 and "min.cleanable.dirty.ratio" in err
    (d / "00000000000000000072.log").write_bytes(b"\0" * 8 + b"\x7f\xff\xff\xff" + b"\0" * 60)  # a batch length past the file
    code, _out, err = _cli("compact", str(d), "--now-ms", "1700010000000", "--force", capsys=capsys)
    assert code == 1 and "00000000000000000072.log" in err and "Traceback" not in err


@pytest.mark.rule("R-CMP-12")
def test_one_append_per_read_chunk(tmp_path: Path) -> None:
    """The cleaned segment is appended one read chunk at a time, so its offset index follows the chunks: with a read
    buffer holding two batches and index.interval.bytes 0, the 2nd and 3rd appends (at 2S and 4S) are indexed with
    their chunk's last offset. A buffer smaller than one batch grows until the batch fits."""
    batches = [_batch(i, 1000 + i, (b"k%d" % i, b"v")) for i in range(6)]
    size = len(batches[0])
    assert all(len(b) == size for b in batches)
    lg = _log(tmp_path / "a", batches, index_interval_bytes=0, kafka_version=KAFKA_400)
    lg.roll()
    clean(lg, 0, 6, now_ms=10_000, cleaner_config=CleanerConfig(io_buffer_size=2 * size + 1), active_producers={})
    seg = lg.segments[0]
    assert [seg.offset_index.entry(i) for i in range(len(seg.offset_index))] == [(3, 2 * size), (5, 4 * size)]
    lg.close()
    # from 4.0.1 (KAFKA-806) each batch of a chunk is considered: every batch after the segment's first is indexed
    lg = _log(tmp_path / "newest", batches, index_interval_bytes=0)
    lg.roll()
    clean(lg, 0, 6, now_ms=10_000, cleaner_config=CleanerConfig(io_buffer_size=2 * size + 1), active_producers={})
    seg = lg.segments[0]
    assert [seg.offset_index.entry(i) for i in range(len(seg.offset_index))] == [(i, i * size) for i in range(1, 6)]
    lg.close()
    lg = _log(tmp_path / "b", batches, index_interval_bytes=0)
    lg.roll()
    clean(lg, 0, 6, now_ms=10_000, cleaner_config=CleanerConfig(io_buffer_size=size // 4), active_producers={})
    assert b"".join(b.data for b in lg.batches()) == b"".join(batches)
    lg.close()
