"""A log dir opened and closed as LogManager does (SPEC R-RCV-01; LogManager.scala loadLogs/shutdown and
CleanShutdownFileHandler.java @1eb7644).

No Kafka-written ``.kafka_cleanshutdown`` exists in ../shared or golden/; the marker's format is
checked against what CleanShutdownFileHandler writes (Jackson over ``Content(version=0,
brokerEpoch)``: ``{"version":0,"brokerEpoch":N}``) and reads (CleanShutdownFileHandlerTest's
hand-written content with an unknown field).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafkalog import RecordBatchBuilder
from kafkalog.errors import CorruptIndexError
from kafkalog.format.checkpoints import read_offset_checkpoint, write_partition_metadata
from kafkalog.log.logdir import (
    CLEAN_SHUTDOWN_FILE,
    LogDir,
    format_clean_shutdown,
    read_clean_shutdown,
    write_clean_shutdown,
)
from kafkalog.log.unified import Log

CLOCK = 1700000000000


def _batch(n: int = 3) -> bytes:
    b = RecordBatchBuilder(0)
    for i in range(n):
        b.append(CLOCK + i, b"k", b"v%d" % i)
    return b.build()


def _records(lg: Log) -> list[int]:
    out, pos = [], lg.log_start_offset
    while pos < lg.log_end_offset:
        batches = list(lg.read(pos, 1 << 20).batches())
        out += [r.offset for b in batches for r in b.records()]
        pos = batches[-1].next_offset
    return out


@pytest.mark.rule("R-RCV-01")
def test_marker_format(tmp_path: Path) -> None:
    assert format_clean_shutdown(10) == b'{"version":0,"brokerEpoch":10}'
    assert format_clean_shutdown() == b'{"version":0,"brokerEpoch":-1}'
    write_clean_shutdown(tmp_path, 2**40)
    assert json.loads((tmp_path / CLEAN_SHUTDOWN_FILE).read_bytes()) == {"version": 0, "brokerEpoch": 2**40}
    assert read_clean_shutdown(tmp_path) == 2**40
    (tmp_path / CLEAN_SHUTDOWN_FILE).write_text('{"version":0,"brokerEpoch":10,"unknown":123}')  # CleanShutdownFileHandlerTest
    assert read_clean_shutdown(tmp_path) == 10
    for junk in ("", "{", '{"version":0}', '{"brokerEpoch":"x"}'):
        (tmp_path / CLEAN_SHUTDOWN_FILE).write_text(junk)
        assert read_clean_shutdown(tmp_path) is None, junk
    os.unlink(tmp_path / CLEAN_SHUTDOWN_FILE)
    assert read_clean_shutdown(tmp_path) is None


@pytest.mark.rule("R-RCV-01")
def test_clean_close_and_reopen(tmp_path: Path) -> None:
    with LogDir.open(tmp_path, clock=lambda: CLOCK) as d:
        assert not d.had_clean_shutdown and d.logs == {}  # a new dir
    assert read_clean_shutdown(tmp_path) == -1
    for name in ("orders-0", "orders-1"):
        (tmp_path / name).mkdir()
    d = LogDir.open(tmp_path, clock=lambda: CLOCK)
    assert d.had_clean_shutdown and sorted(d.logs) == [("orders", 0), ("orders", 1)]
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # deleted while the dir is in use
    d.logs[("orders", 0)].append(_batch(3))
    d.logs[("orders", 1)].append(_batch(2))
    d.logs[("orders", 1)].append(_batch(2))
    d.close(broker_epoch=7)
    assert read_clean_shutdown(tmp_path) == 7
    assert read_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint") == {("orders", 0): 3, ("orders", 1): 4}
    assert read_offset_checkpoint(tmp_path / "log-start-offset-checkpoint") == {}
    with LogDir.open(tmp_path) as d:
        assert d.had_clean_shutdown
        assert {tp: lg.log_end_offset for tp, lg in d.logs.items()} == {("orders", 0): 3, ("orders", 1): 4}
        assert {tp: lg.recovery_point for tp, lg in d.logs.items()} == {("orders", 0): 3, ("orders", 1): 4}


@pytest.mark.rule("R-RCV-01")
def test_the_marker_is_deleted_before_any_partition_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "t-0").mkdir()
    write_clean_shutdown(tmp_path, 3)
    seen = []
    real_open = Log.open.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Log], directory: str, *a: object, **kw: object) -> Log:
        seen.append(((tmp_path / CLEAN_SHUTDOWN_FILE).exists(), kw["had_clean_shutdown"]))
        return real_open(cls, directory, *a, **kw)

    monkeypatch.setattr(Log, "open", classmethod(spy))
    LogDir.open(tmp_path).close()
    assert seen == [(False, True)]


@pytest.mark.rule("R-RCV-01")
def test_checkpoints_and_closed_logs_come_before_the_marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = LogDir.open(tmp_path / "data")
    d.logs[("t", 0)] = Log.open(tmp_path / "data" / "t-0", writable=True)
    d.logs[("t", 0)].append(_batch())
    import kafkalog.log.logdir as logdir

    real = logdir.write_clean_shutdown
    state = {}

    def spy(path: str, epoch: int = -1, *, sync: bool = True) -> None:
        state["closed"] = all(lg.closed for lg in d.logs.values())
        state["recovery"] = read_offset_checkpoint(tmp_path / "data" / "recovery-point-offset-checkpoint")
        real(path, epoch, sync=sync)

    monkeypatch.setattr(logdir, "write_clean_shutdown", spy)
    d.close()
    assert state == {"closed": True, "recovery": {("t", 0): 3}}


def _torn(lg: Log) -> tuple[Path, int]:
    """Append half a batch to the active .log, as a crash in the middle of a write leaves it."""
    path = Path(lg.active_segment.log_path)
    with open(path, "ab") as f:
        f.write(_batch(5)[:40])
    return path, path.stat().st_size


@pytest.mark.rule("R-RCV-01")
def test_a_crash_leaves_the_dir_unclean_and_the_next_open_recovers(tmp_path: Path) -> None:
    (tmp_path / "t-0").mkdir()
    d = LogDir.open(tmp_path, clock=lambda: CLOCK)
    lg = d.logs[("t", 0)]
    lg.append(_batch())
    lg.flush()
    lg.append(_batch())  # not flushed: beyond the recovery point 3
    path, size = _torn(lg)
    d.abandon()  # the process dies: no close, no marker
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    with LogDir.open(tmp_path, clock=lambda: CLOCK) as d:
        assert not d.had_clean_shutdown
        assert path.stat().st_size < size  # recovery cut the torn tail
        assert _records(d.logs[("t", 0)]) == [0, 1, 2, 3, 4, 5]
    assert read_clean_shutdown(tmp_path) == -1  # all logs loaded: the close marks it clean again


@pytest.mark.rule("R-RCV-01")
def test_with_the_marker_no_segment_is_recovered(tmp_path: Path) -> None:
    (tmp_path / "t-0").mkdir()
    with LogDir.open(tmp_path, clock=lambda: CLOCK) as d:
        d.logs[("t", 0)].append(_batch())
        path, size = _torn(d.logs[("t", 0)])
    with LogDir.open(tmp_path, clock=lambda: CLOCK) as d:
        assert d.had_clean_shutdown
        assert path.stat().st_size == size  # trusted as it is: no recovery after a clean shutdown
        assert _records(d.logs[("t", 0)]) == [0, 1, 2]


@pytest.mark.rule("R-RCV-01")
def test_a_failure_while_loading_leaves_the_dir_unclean(tmp_path: Path) -> None:
    for name in ("a-0", "b-0"):
        (tmp_path / name).mkdir()
    write_clean_shutdown(tmp_path)
    (tmp_path / "b-0" / "partition.metadata").write_text("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA")  # the all-zero id
    with pytest.raises(CorruptIndexError):
        LogDir.open(tmp_path)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    write_partition_metadata(tmp_path / "b-0" / "partition.metadata", "AAAAAAAAAAAAAAAAAAAAAQ")
    with LogDir.open(tmp_path) as d:
        assert not d.had_clean_shutdown and sorted(d.logs) == [("a", 0), ("b", 0)]
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()


@pytest.mark.rule("R-RCV-01")
def test_a_block_that_raises_leaves_no_marker(tmp_path: Path) -> None:
    (tmp_path / "t-0").mkdir()
    write_clean_shutdown(tmp_path)
    with pytest.raises(RuntimeError), LogDir.open(tmp_path) as d:
        d.logs[("t", 0)].append(_batch())
        raise RuntimeError("write failed half-way")
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    with LogDir.open(tmp_path) as d:
        assert not d.had_clean_shutdown and _records(d.logs[("t", 0)]) == [0, 1, 2]


def test_special_directories_are_left_alone(tmp_path: Path) -> None:
    uid = "0123456789abcdef0123456789abcdef"
    for name in ("t-0", f"t-1.{uid}-delete", f"t-2.{uid}-future", "__cluster_metadata-0", "not-a-partition", "remote-log-index-cache"):
        (tmp_path / name).mkdir()
    with LogDir.open(tmp_path) as d:
        assert sorted(d.logs) == [("t", 0)]
    assert sorted(os.listdir(tmp_path / "__cluster_metadata-0")) == []
