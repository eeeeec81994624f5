"""Torn writes: power cuts, reordered renames, fsync EIO and ENOSPC under ``Log`` lose no acknowledged record.

The layer (tests/faultfs.py) is checked on its own first: what it keeps and drops must be what
a disk keeps and drops, or the harness would prove nothing. Then a short fixed-seed run of
bench/faults.py (the long run is ``python bench/faults.py``).
"""

from __future__ import annotations

import errno
import os
import random
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from faultfs import FaultFS, PowerCut
from helpers import bench_script
from kafkalog.format.files import atomic_write, fsync_dir
from kafkalog.log.unified import Log, LogConfig


@pytest.fixture(scope="module")
def faults() -> Iterator[ModuleType]:
    yield from bench_script("faults")


def _write(path: Path, data: bytes, *, sync: bool) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, os.fstat(fd).st_size)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def test_power_cut_keeps_synced_data_only(tmp_path: Path) -> None:
    p = tmp_path / "f"
    with FaultFS(tmp_path, random.Random(1)) as fs:
        _write(p, b"durable", sync=True)
        fsync_dir(tmp_path)
        _write(p, b"-lost", sync=False)
        assert p.read_bytes() == b"durable-lost"  # the page cache
        fs.crash()
    assert p.read_bytes() == b"durable"


def test_torn_write_keeps_a_prefix(tmp_path: Path) -> None:
    p = tmp_path / "f"
    seen = set()
    for seed in range(30):
        if p.exists():
            p.unlink()
        with FaultFS(tmp_path, random.Random(seed)) as fs:
            _write(p, b"AAAA", sync=True)
            fsync_dir(tmp_path)
            _write(p, b"BBBB", sync=False)
            _write(p, b"CCCC", sync=False)
            fs.crash(torn=True)
        data = p.read_bytes()
        assert (b"AAAABBBBCCCC").startswith(data) and data.startswith(b"AAAA")
        seen.add(len(data))
    assert len(seen) > 3  # whole, none and cut-short writes all happen


def test_unsynced_create_and_rename_can_be_undone(tmp_path: Path) -> None:
    outcomes = set()
    for seed in range(30):
        for n in os.listdir(tmp_path):
            os.unlink(tmp_path / n)
        with FaultFS(tmp_path, random.Random(seed)) as fs:
            atomic_write(tmp_path / "a", b"1")  # fsync + rename + dir fsync: durable
            _write(tmp_path / "b", b"2", sync=True)  # the file synced, its directory entry not
            os.replace(tmp_path / "a", tmp_path / "c")
            fs.crash(reorder=True)
        outcomes.add(tuple(sorted(os.listdir(tmp_path))))
    assert ("a",) in outcomes  # both the creation of b and the rename undone
    assert any("c" in o for o in outcomes) and any("b" in o for o in outcomes)  # each kept in some cuts
    assert all("a" in o or "c" in o for o in outcomes)  # the durable file is never lost


def test_fsync_eio_and_enospc_are_raised(tmp_path: Path) -> None:
    with FaultFS(tmp_path, random.Random(3)) as fs:
        fs.arm("eio", 1)
        with pytest.raises(OSError) as e:
            _write(tmp_path / "f", b"x", sync=True)
        assert e.value.errno == errno.EIO
        fs.disarm()
        fs.arm("enospc", 1)
        with pytest.raises(OSError) as e:
            for _ in range(3):  # a short write first, perhaps; then the error
                _write(tmp_path / "g", b"0123456789", sync=False)
        assert e.value.errno == errno.ENOSPC
        fs.crash()
    assert not (tmp_path / "f").exists() or (tmp_path / "f").read_bytes() == b""


def test_dir_fsync_failure_reaches_the_caller(tmp_path: Path) -> None:
    """A failed directory fsync must not be swallowed: the flush would report renames durable that are not."""
    with FaultFS(tmp_path, random.Random(4)) as fs:
        fs.arm("eio", 1)
        with pytest.raises(OSError):
            fsync_dir(tmp_path)
        fs.crash()


def test_power_cut_in_a_writer_raises_and_the_log_recovers(tmp_path: Path) -> None:
    pdir = tmp_path / "t-0"
    pdir.mkdir()
    cfg = LogConfig(segment_bytes=4096)
    from kafkalog import RecordBatchBuilder

    with FaultFS(tmp_path, random.Random(5)) as fs:
        log = Log.open(pdir, cfg, writable=True)
        for i in range(20):
            b = RecordBatchBuilder(0)
            b.append(1_700_000_000_000 + i, b"k", b"v" * 300)
            log.append(b.build())
        log.flush()
        acked = log.log_end_offset
        fs.arm("power", 3)
        with pytest.raises(PowerCut):
            for i in range(20):
                b = RecordBatchBuilder(0)
                b.append(1_700_000_000_000 + i, b"k", b"w" * 300)
                log.append(b.build())
        fs.crash(torn=True)
        log = Log.open(pdir, cfg, had_clean_shutdown=False, writable=True)
        assert log.log_end_offset >= acked
        assert [r.value for bt in log.batches() for r in bt.records()][:acked] == [b"v" * 300] * acked
        log.close()


@pytest.mark.parametrize(
    ("count", "seed"),
    [
        pytest.param(40, 4, id="40-faults"),  # every fault kind, errors raised to the writer, cleaner swaps: all reached
        pytest.param(120, 3, id="120-faults", marks=pytest.mark.slow),  # the longer run: more of the same, by another seed
    ],
)
def test_injected_faults_lose_no_acknowledged_record(faults: ModuleType, count: int, seed: int) -> None:
    stats = faults.run(count, seed=seed)
    total = stats.total()
    assert total.faults >= count
    assert total.acked > 0 and total.checked > 0
    assert stats.ok, "\n".join([faults.table(stats), *stats.problems])
    for kind in faults.KINDS:
        assert stats.rows[kind].faults > 0, kind
    assert sum(r.raised for r in stats.rows.values()) > 0  # EIO / ENOSPC reached the writer
    assert stats.cleaned_groups > 0  # cleaner passes ran (and swapped segments in) under the faults too


def test_the_fault_check_catches_a_cleaner_that_drops_a_keys_latest_record(faults: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Compaction may remove a record only when a later record with its key is present: a cleaner
    that drops records without that is reported as losing acknowledged data."""
    import kafkalog.log.cleaner as cleaner

    retain = cleaner._Filter.retain

    def buggy(self, batch, record):  # noqa: ANN001, ANN202 - the method's own signature
        return False if record.offset % 5 == 0 and record.offset <= self.omap.latest_offset else retain(self, batch, record)

    monkeypatch.setattr(cleaner._Filter, "retain", buggy)
    # 10 faults of a seed whose first directory is compacted (the schedule follows the file operations): its
    # cleaner passes lose acknowledged records at once, so a longer run (60 faults took 20 s) shows no more
    stats = faults.run(10, seed=0)
    assert stats.cleaned_groups > 0, "no cleaner pass ran: pick a seed whose run makes a compacted directory"
    assert stats.total().lost > 0


def test_io_error_in_recovery_leaves_the_segment_for_a_later_start(tmp_path: Path) -> None:
    """Kafka empties a segment whose recovery hits an IOException; kafkalog raises and keeps the
    bytes (SPEC R-RCV-06), so a later open with a working disk recovers every record."""
    from kafkalog import RecordBatchBuilder

    pdir = tmp_path / "t-0"
    pdir.mkdir()
    with Log.open(pdir, LogConfig(segment_bytes=1 << 20), writable=True) as log:
        for i in range(5):
            b = RecordBatchBuilder(0)
            b.append(1_700_000_000_000 + i, b"k", b"v" * 100)
            log.append(b.build())
    seg = pdir / "00000000000000000000.log"
    before = seg.read_bytes()
    with FaultFS(tmp_path, random.Random(6)) as fs:
        fs.arm("eio", 1)  # the first fsync of the unclean open's recovery fails
        with pytest.raises(OSError):
            Log.open(pdir, LogConfig(segment_bytes=1 << 20), recovery_point=0, had_clean_shutdown=False, writable=True)
        fs.disarm()
    assert seg.read_bytes() == before
    with Log.open(pdir, LogConfig(segment_bytes=1 << 20), recovery_point=0, had_clean_shutdown=False, writable=True) as log:
        assert log.log_end_offset == 5


@pytest.mark.rule("R-CMP-14")
def test_completing_an_interrupted_swap_survives_reordered_renames(tmp_path: Path) -> None:
    """Loading completes a swap by deleting the old segments in the new one's range, then renaming
    the .swap files. A power cut in between, on a file system that may reorder unsynced directory
    operations, must not keep a rename while losing a deletion: the new segment would come back
    beside old segments it covers (found by bench/faults.py)."""
    from kafkalog import RecordBatchBuilder
    from kafkalog.log.cleaner import compact
    from kafkalog.tools.validate import verify

    # indexes preallocated at 4 KiB, not Kafka's 10 MiB: the same zero-filled tails, for records that index none
    small = LogConfig(segment_bytes=1024, cleanup_policy=("compact",), file_delete_delay_ms=10**12, segment_index_bytes=4096)
    cfg = LogConfig(segment_bytes=1 << 20, cleanup_policy=("compact",), file_delete_delay_ms=10**12, segment_index_bytes=4096)
    cut_in_load = 0
    for seed in range(3):
        for after in range(20, 80, 3):  # past the deletions, into the renames
            root = tmp_path / f"{seed}-{after}"
            pdir = root / "c-0"
            with Log.open(pdir, small, writable=True) as log:
                for i in range(60):
                    b = RecordBatchBuilder(0)
                    b.append(1_700_000_000_000 + i, b"k%d" % (i % 5), b"v" * 100)
                    log.append(b.build())
            log = Log.open(pdir, cfg, writable=True)

            def stop(step: str, _path: str) -> None:
                if step == "delete":  # the .swap files are durable, no old file renamed yet
                    raise PowerCut

            with pytest.raises(PowerCut):
                compact(log, now_ms=1_700_000_100_000, force=True, on_step=stop)
            with FaultFS(root, random.Random(seed)) as fs:
                fs.arm("power", after)
                try:
                    Log.open(pdir, cfg, recovery_point=0, had_clean_shutdown=False, writable=True).close()
                except PowerCut:
                    cut_in_load += 1
                fs.crash(reorder=True)
            with Log.open(pdir, cfg, recovery_point=0, had_clean_shutdown=False, writable=True) as log:
                offsets = [r.offset for b in log.batches() for r in b.records()]
            assert offsets == sorted(set(offsets)), (seed, after, offsets)
            assert offsets[-5:] == list(range(55, 60)), (seed, after)
            assert verify(pdir).errors == [], (seed, after)
    assert cut_in_load > 20
