"""Reading never writes: ``Log.open(path)`` loads in memory, opens every file read-only and creates
nothing; a broker-style load that recovers and appends is ``Log.open(path, writable=True)``.

What a reader returns is checked against Kafka's dump (the consumer's view worked out from the
batches alone, tests/scratch.py) and against a writable load of another copy; "unchanged" is a
SHA-256 of every file plus the set of files and directories, before and after.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, REPO, dump_batches, read_jsonl
from kafkalog.errors import KafkaLogError, LogNotFoundError, ReadOnlyLogError
from kafkalog.format.index import OffsetIndex
from kafkalog.format.records.v2 import RecordBatchBuilder
from kafkalog.log.isolation import consume
from kafkalog.log.unified import Log
from scratch import ORDERS, consumer_truth, fingerprint, make_scratch, orders_batches, read_only_mount

LOGDIRS = sorted(p.name for p in (GOLDEN / "kafka" / "logdir").iterdir() if p.is_dir())


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    return make_scratch(tmp_path / "scratch")


def _read_everything(lg: Log) -> tuple[list[int], list[int], int, int]:
    committed = [r.offset for r in consume(lg)]
    uncommitted = [r.offset for r in consume(lg, read_committed=False)]
    for ts in (-2, -1, -3, 0, 1700000000000):  # ListOffsets paths: indexes and time indexes
        lg.offset_for_timestamp(ts)
    return committed, uncommitted, lg.last_stable_offset, lg.log_end_offset


@pytest.mark.rule("R-NAME-14")
def test_torn_partition_read_in_memory(scratch: Path) -> None:
    """The README's partition (torn tail, missing indexes, snapshots and epoch checkpoint): a consumer's
    records exactly as Kafka's dump says, and not one byte or file changed."""
    before = fingerprint(scratch)
    committed, uncommitted, lso = consumer_truth(orders_batches())
    with Log.open(scratch / ORDERS) as lg:
        got = _read_everything(lg)
        assert not lg.writable
    assert got[:3] == (committed, uncommitted, lso)
    assert got[3] == orders_batches()[-1]["lastOffset"] + 1
    assert fingerprint(scratch) == before


def test_read_only_load_equals_broker_recovery(scratch: Path, tmp_path: Path) -> None:
    """The in-memory load sees what a broker's recovery leaves on disk (a writable load of a copy)."""
    copy = tmp_path / "copy"
    shutil.copytree(scratch / ORDERS, copy)
    for clean in (True, False):
        with Log.open(scratch / ORDERS, had_clean_shutdown=clean, recovery_point=0) as ro:
            ro_view = _read_everything(ro), [(s.base_offset, s.size) for s in ro.segments]
        with Log.open(copy, had_clean_shutdown=clean, recovery_point=0, writable=True) as rw:
            rw_view = _read_everything(rw), [(s.base_offset, s.size) for s in rw.segments]
        assert ro_view == rw_view
    torn = sorted((scratch / ORDERS).glob("*.log"))[-1].name
    assert (copy / torn).stat().st_size < (scratch / ORDERS / torn).stat().st_size  # recovery did cut the copy


@pytest.mark.parametrize("name", LOGDIRS)
def test_kafka_logdirs_unchanged(name: str, tmp_path: Path) -> None:
    """Every Kafka-written partition dir, whole and with every index and state file removed."""
    d = tmp_path / name
    shutil.copytree(GOLDEN / "kafka" / "logdir" / name, d)
    before = fingerprint(tmp_path)
    with Log.open(d) as lg:
        whole = _read_everything(lg)
    assert fingerprint(tmp_path) == before
    for p in d.iterdir():
        if not p.name.endswith(".log"):
            p.unlink()
    before = fingerprint(tmp_path)
    with Log.open(d) as lg:
        bare = _read_everything(lg)
    assert fingerprint(tmp_path) == before
    assert bare[1] == whole[1] and bare[3] == whole[3]  # the same records without any index


def test_stale_index_is_read_around(tmp_path: Path) -> None:
    """An active segment whose index points past a shortened .log (a crash after the index was
    written) has its indexes rebuilt in memory: the log end and the records are Kafka's up to the
    cut, and nothing is written."""
    d = tmp_path / "transactional-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "transactional-0", d)
    seg = sorted(d.glob("*.log"))[-1]
    batches = sorted(dump_batches(read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"), "transactional-0/"), key=lambda b: b["baseOffset"])
    in_seg = [b for b in batches if b["file"].endswith(seg.name)]
    keep = in_seg[len(in_seg) // 2]["position"]  # cut at a batch boundary in the middle
    assert OffsetIndex.read(seg.with_suffix(".index")).positions[-1] >= keep  # the index now points past the end
    os.truncate(seg, keep)
    before = fingerprint(tmp_path)
    survivors = [b for b in batches if b not in in_seg or b["position"] < keep]
    with Log.open(d) as lg:
        assert lg.log_end_offset == survivors[-1]["lastOffset"] + 1
        got = [r.offset for r in consume(lg, read_committed=False)]
    assert got == [r["offset"] for b in survivors if not b["isControlBatch"] for r in b["records"]]
    assert fingerprint(tmp_path) == before


@pytest.mark.rule("R-NAME-14")
def test_files_are_opened_read_only(scratch: Path) -> None:
    """While a read-only log is open, every descriptor it holds on the scratch dir is O_RDONLY."""
    with Log.open(scratch / ORDERS) as lg:
        list(consume(lg))
        held = []
        for fd in os.listdir("/proc/self/fd"):
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith(str(scratch)):
                with open(f"/proc/self/fdinfo/{fd}") as f:
                    flags = int(next(line for line in f if line.startswith("flags:")).split()[1], 8)
                held.append((target, flags & os.O_ACCMODE))
        assert held, "the log holds its .log files open"
        assert all(mode == os.O_RDONLY for _t, mode in held), held


@pytest.mark.rule("R-NAME-14")
def test_missing_directory_raises_and_creates_nothing(tmp_path: Path) -> None:
    before = fingerprint(tmp_path)
    typo = tmp_path / "data" / "ordrs-0"
    with pytest.raises(LogNotFoundError, match="ordrs-0") as err:
        Log.open(typo)
    assert isinstance(err.value, KafkaLogError) and isinstance(err.value, FileNotFoundError)
    assert err.value.filename == str(typo)
    (tmp_path / "a-file").write_bytes(b"")
    before = fingerprint(tmp_path)
    with pytest.raises(LogNotFoundError, match="not a directory"):
        Log.open(tmp_path / "a-file")
    assert fingerprint(tmp_path) == before
    assert not typo.exists() and not typo.parent.exists()


def test_a_log_dir_is_not_a_partition(scratch: Path) -> None:
    """Log.open("data") (the log dir, not data/orders-0) says so rather than reading an empty partition."""
    before = fingerprint(scratch)
    with pytest.raises(KafkaLogError, match=r"log dir holding partition directories \(orders-0\)"):
        Log.open(scratch / "data")
    assert fingerprint(scratch) == before


def test_writes_to_a_read_only_log_raise(scratch: Path) -> None:
    before = fingerprint(scratch)
    batch = RecordBatchBuilder(0)
    batch.append(1700000000000, b"k", b"v")
    with Log.open(scratch / ORDERS) as lg:
        end = lg.log_end_offset
        for write in (
            lambda: lg.append(batch.build()),
            lambda: lg.append(batch.build(), assign_offsets=False),
            lg.roll,
            lg.flush,
            lambda: lg.delete_old_segments(0),
            lambda: lg.maybe_increment_log_start_offset(5),
            lambda: lg.assign_topic_id("AAAAAAAAAAAAAAAAAAAAAQ"),
        ):
            with pytest.raises(ReadOnlyLogError, match="read-only"):
                write()
        assert lg.log_end_offset == end
    assert fingerprint(scratch) == before


@pytest.mark.rule("R-NAME-14")
def test_read_only_file_system(scratch: Path) -> None:
    """On a read-only bind mount: the library and every reading command work, and a writable
    load is refused by the file system (so the mount does protect the files)."""
    committed, uncommitted, lso = consumer_truth(orders_batches())
    before = fingerprint(scratch)
    with read_only_mount(scratch) as ro:
        with Log.open(ro / ORDERS) as lg:
            assert _read_everything(lg)[:3] == (committed, uncommitted, lso)
        with pytest.raises(OSError, match="Read-only file system"):
            Log.open(ro / ORDERS, writable=True)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "codec"), str(REPO / "spark_ext"), os.environ.get("PYTHONPATH", "")]))
        for args, ok in (
            (["dump", str(ro)], (0,)),
            (["dump", "--json", "--isolation", "read_committed", str(ro / ORDERS)], (0,)),
            (["verify", str(ro / ORDERS)], (0, 1)),
            (["groups", str(ro / "data")], (0, 1)),
            (["explain", str(ro / "00000000000000000000.log")], (0,)),
        ):
            proc = subprocess.run([sys.executable, "-m", "kafkalog", *args], capture_output=True, text=True, env=env, check=False)
            assert proc.returncode in ok, (args, proc.stderr[-2000:])
            assert "Read-only file system" not in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr[-2000:])
    assert fingerprint(scratch) == before


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_dump_isolation_prints_what_a_consumer_receives(scratch: Path, isolation: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``dump --json --isolation``: Kafka's own batch and record objects, for exactly the records the
    consumer receives (worked out from Kafka's dump), and the directory unchanged."""
    from kafkalog.tools.cli import main

    before = fingerprint(scratch)
    assert main(["dump", "--json", "--isolation", isolation, str(scratch / "data")]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    committed, uncommitted, _lso = consumer_truth(orders_batches())
    want_offsets = committed if isolation == "read_committed" else uncommitted
    assert [o["offset"] for o in lines if o["type"] == "record"] == want_offsets
    kafka = {b["baseOffset"]: b for b in orders_batches()}
    kafka_records = {r["offset"]: r for b in orders_batches() for r in b["records"]}
    for o in lines:
        assert o["file"].startswith("orders-0/")
        theirs = kafka[o["baseOffset"]] if o["type"] == "batch" else kafka_records[o["offset"]]
        theirs = {k: v for k, v in theirs.items() if k != "records"}
        assert dict(o, file=theirs["file"]) == theirs
    assert fingerprint(scratch) == before


def test_dump_isolation_refuses_files(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalog.tools.cli import main

    assert main(["dump", "--isolation", "read_committed", str(scratch / "00000000000000000000.log")]) == 2
    assert "partition directories" in capsys.readouterr().err
    (scratch / "empty").mkdir()
    assert main(["dump", "--isolation", "read_committed", str(scratch / "empty")]) == 3
    assert "holds none" in capsys.readouterr().err


def test_dump_isolation_refuses_urls(capsys: pytest.CaptureFixture[str]) -> None:
    """A URL with ``--isolation`` is a usage error naming it (it printed nothing and exited 0)."""
    from kafkalog.tools.cli import main

    assert main(["dump", "--isolation", "read_committed", "s3://bucket/data"]) == 2
    err = capsys.readouterr().err
    assert "not URLs such as s3://bucket/data" in err and "Traceback" not in err
