"""``-j N`` (export, verify, info) and ``kafkalog.scan(workers=N)``: the output is the one process's,
byte for byte and line for line, whatever N; a failing or killed worker stops the run naming its
partition and leaves no file under a final name and no temporary file.

Every run here is compared with the same command at ``-j 1`` (today's serial reader, whose output
the other tests check against Kafka's dumps), so that a difference made by the workers fails. The
size below which a run stays in one process is set to 0, so that the small golden sets are spread
over worker processes too."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import GOLDEN, SHARED
from kafkalog.tools.cli import main

LOGDIR = GOLDEN / "kafka" / "logdir"
CP760 = SHARED / "golden-real" / "cp760-flink-on-prem" / "data"
SETS = [pytest.param(LOGDIR, id="golden-logdir"), pytest.param(CP760, id="cp760")]


@pytest.fixture(autouse=True)
def _always_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog.tools import info, jobs

    monkeypatch.setattr(jobs, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(info, "MIN_PARALLEL_PARTITIONS", 0)


def _need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path} is absent: tests over ../shared run only where it is checked out beside the repo")
    return path


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (hidden ones too), by relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, list[str]]:
    """(exit code, stdout, stderr lines), the output directory (after ``-o``) and the run's timing left out."""
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    if "-o" in argv:
        err = err.replace(argv[argv.index("-o") + 1], "OUT")
    return code, out, [line.rsplit(" in ", 1)[0] if line.startswith("exported ") else line for line in err.splitlines()]


@pytest.mark.parametrize(("data", "fmt"), [
    pytest.param(LOGDIR, "parquet", id="golden-logdir-parquet"), pytest.param(LOGDIR, "jsonl", id="golden-logdir-jsonl"),
    pytest.param(LOGDIR, "csv", id="golden-logdir-csv"), pytest.param(CP760, "parquet", id="cp760-parquet"),
])
def test_export_writes_the_same_files_whatever_the_jobs(data: Path, fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _need(data)
    runs = {j: _run(capsys, "export", str(data), "-o", str(tmp_path / f"j{j}"), "--format", fmt, "--allow-gaps", "-j", str(j)) for j in (1, 2, 3)}
    files = {j: _files(tmp_path / f"j{j}") for j in runs}
    assert runs[1][0] == 0 and len(files[1]) > 1
    assert runs[2] == runs[1] and runs[3] == runs[1]  # exit code, stdout and every stderr line (warnings in the same order)
    assert files[2] == files[1] and files[3] == files[1]  # the same names, byte for byte; no temporary file left


def test_export_is_the_same_on_both_kernel_paths(kernels: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The workers read with the parent's kernels: the compiled ones, or the plain-Python twins."""
    one = _run(capsys, "export", str(LOGDIR), "-o", str(tmp_path / "j1"), "--format", "jsonl", "-j", "1")
    two = _run(capsys, "export", str(LOGDIR), "-o", str(tmp_path / "j2"), "--format", "jsonl", "-j", "2")
    assert one == two and one[0] == 0
    assert _files(tmp_path / "j1") == _files(tmp_path / "j2")


@pytest.mark.parametrize("data", SETS)
def test_verify_reports_the_same_findings_in_the_same_order(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _need(data)
    for flags in ([], ["--json", "--notes"]):
        one = _run(capsys, "verify", str(data), *flags, "-j", "1")
        assert one[1]  # findings to compare (the golden sets have a warning, cp760 a data loss)
        for j in ("2", "3"):
            assert _run(capsys, "verify", str(data), *flags, "-j", j) == one


@pytest.mark.parametrize("data", SETS)
def test_info_prints_the_same_lines(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _need(data)
    for flags in ([], ["--json"], ["--by", "topic"]):
        one = _run(capsys, "info", str(data), *flags, "-j", "1")
        assert one[0] == 0 and one[1].count("\n") > 2
        for j in ("2", "3"):
            assert _run(capsys, "info", str(data), *flags, "-j", j) == one


@pytest.mark.parametrize("data", SETS)
def test_scan_workers_give_the_same_table(data: Path, kernels: object) -> None:
    import kafkalog
    from kafkalog.fast import columnar

    _need(data)
    if data == CP760 and kernels is columnar.PURE:
        pytest.skip("the plain-Python path is held to the same result on the golden set (cp760 takes it minutes)")
    one = kafkalog.scan(data, allow_gaps=True, batch_rows=1000).read_all()
    assert one.num_rows > 0
    for workers in (2, 3):
        got = kafkalog.scan(data, allow_gaps=True, batch_rows=1000, workers=workers)
        batches = list(got)
        assert [b.num_rows for b in batches] == [b.num_rows for b in one.to_batches()]  # batch for batch
        assert got.schema.equals(one.schema) and one.equals(type(one).from_batches(batches, schema=one.schema))


def test_scan_workers_raise_a_corrupt_batch_in_its_turn(tmp_path: Path) -> None:
    """A corrupt batch read ahead by a thread is raised after every row before it, as one thread raises it."""
    import kafkalog
    from corrupt_copy import corrupt_copy
    from kafkalog.errors import CrcMismatchError

    c = corrupt_copy(tmp_path)
    shutil.copytree(CP760 / "customers_keyed-0", c.data / "customers_keyed-0")  # read before orders-0
    shutil.copytree(CP760 / "products_keyed-0", c.data / "products_keyed-0")  # read after it
    for workers in (1, 3):
        rows = 0
        with pytest.raises(CrcMismatchError) as e:
            for b in kafkalog.scan(c.data, workers=workers):
                rows += b.num_rows
        assert e.value.file == str(c.log) and e.value.position == c.position
        assert rows == kafkalog.scan(c.data, topics="customers_keyed").read_all().num_rows + c.before


def test_a_failing_worker_names_its_partition_and_leaves_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One byte flipped in a batch of cp760's orders-0 (corrupt_copy): every -j fails with the same
    one line naming the file, position and offset; orders-0 has no file under its final name, and
    no temporary file is left; the partitions written are whole (the same bytes as from -j 1)."""
    from corrupt_copy import corrupt_copy

    c = corrupt_copy(tmp_path)
    for other in ("customers_keyed-0", "products_keyed-0", "order_customer_product-0"):
        shutil.copytree(CP760 / other, c.data / other)
    where = f"{c.log}, position {c.position}, offset {c.base_offset}: record batch is corrupt"
    runs = {j: _run(capsys, "export", str(c.data), "-o", str(tmp_path / f"j{j}"), "-j", str(j)) for j in (1, 2, 3)}
    for code, out, err in runs.values():
        assert code == 1 and not out and len(err) == 1 and where in err[0], err
    assert runs[2] == runs[1] == runs[3]
    serial = _files(tmp_path / "j1")
    for j in (1, 2, 3):
        files = _files(tmp_path / f"j{j}")
        assert not [f for f in files if f.startswith("topic=orders/") or os.path.basename(f).startswith(".")], files
        assert all(files[f] == serial[f] for f in files if f in serial)  # whatever was written is whole
        assert set(serial) <= set(files)  # the partitions before the failing one are written at any -j


def test_a_killed_worker_stops_the_run_naming_its_task() -> None:
    from kafkalog.tools.jobs import WorkerDied, ordered_map

    with pytest.raises(WorkerDied) as e:
        list(ordered_map(signal.raise_signal, [signal.SIGKILL, signal.SIGKILL], 2, names=lambda i: f"task-{i}"))
    assert "worker process died" in str(e.value) and "task-" in str(e.value)


def _dies_late(kill: bool) -> None:
    """A task, run by a worker process: one that is told to is killed, after a moment."""
    if kill:
        import time

        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)


def test_a_worker_killed_between_results_stops_the_run_as_a_killed_worker() -> None:
    """The pool broke while the caller held a result: the next task's submission finds it broken,
    and the run stops with :class:`WorkerDied` (not the executor's own error), naming the task."""
    import time

    from kafkalog.tools.jobs import WorkerDied, ordered_map

    results = ordered_map(_dies_late, [False, True, False, False, False, False], 2, names=lambda i: f"task-{i}")
    assert next(results) is None
    time.sleep(1.5)  # task-1's worker is killed meanwhile
    with pytest.raises(WorkerDied) as e:
        next(results)
    assert "worker process died" in str(e.value) and "task-1" in str(e.value)


def _killed_at_9(i: int) -> int:
    """A task, run by a worker process: the ninth is killed, after a moment (its neighbours run meanwhile)."""
    if i == 9:
        import time

        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    return i


def test_items_that_come_one_by_one_are_taken_as_tasks_are_sent() -> None:
    """An iterator of items (a walk's): each is taken when its task is sent, at most two per worker
    ahead of the result given; the results come in item order; what taking an item raises is raised
    in its turn, after the results of the items before it."""
    from kafkalog.tools.jobs import ordered_map

    taken: list[int] = []

    def items() -> object:
        for i in range(8):
            taken.append(i)
            yield -i
        raise ValueError("the walk failed")

    results = ordered_map(abs, items(), 2, names=lambda i: f"task-{i}")
    assert next(results) == 0 and taken == [0, 1, 2, 3]
    got = [0]
    with pytest.raises(ValueError, match="the walk failed"):
        got.extend(results)
    assert got == list(range(8))


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_item_that_fails_to_come_second_is_raised_after_the_first_result(jobs: int) -> None:
    """The first two items are taken to know whether workers are worth starting: the second's
    error, too, comes after the first item's result, with one worker as with two."""
    from kafkalog.tools.jobs import ordered_map

    def items() -> object:
        yield -5
        raise ValueError("the walk failed")

    results = ordered_map(abs, items(), jobs, names=lambda i: f"task-{i}")
    assert next(results) == 5
    with pytest.raises(ValueError, match="the walk failed"):
        next(results)


def test_a_killed_worker_is_named_with_its_pid_however_many_tasks_came_before() -> None:
    """The table of tasks under way holds one slot per task that may be under way, reused: a worker
    killed at the tenth task of an iterator's is named, with its pid, in :attr:`WorkerDied.running`."""
    from kafkalog.tools.jobs import WorkerDied, ordered_map

    with pytest.raises(WorkerDied) as e:
        list(ordered_map(_killed_at_9, iter(range(12)), 2, names=lambda i: f"task-{i}"))
    assert "task-9" in str(e.value) and e.value.running.get(9, 0) > 0 and set(e.value.running) <= {9, 10, 11}, e.value.running


def test_a_pool_that_cannot_start_raises_no_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """No worker process can be started (too many open files): :class:`NoWorkers`, a WorkerDied,
    which the CLI reports as a worker's death (exit 3, one line), at the first result asked for."""
    import multiprocessing.process

    from kafkalog.dataset.processes import NoWorkers

    def failing(self: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", failing)
    from kafkalog.tools.jobs import WorkerDied, ordered_map

    with pytest.raises(NoWorkers) as e:
        next(ordered_map(abs, [1, 2, 3], 2, names=lambda i: f"task-{i}"))
    assert isinstance(e.value, WorkerDied) and "Too many open files" in str(e.value)


def test_a_killed_export_worker_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """What a killed worker was writing (its hidden temporary file, named after its pid, or its part
    of a large partition's file) is removed, and the run exits 3 with one line naming the partition."""
    from kafkalog.tools import jobs

    def dying(fn, items, n, *, names, preload=()):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202 - ordered_map's stand-in
        assert {t[0] for t in items} == {"run", "part"}  # transactional-0, the largest, is cut into ranges of segments
        for t in items:  # every task under way when the pool broke
            p = t[1][0] if t[0] == "run" else t[1]
            d = Path(t[-2]) / f"topic={p.topic}" / f"partition={p.partition}"
            d.mkdir(parents=True, exist_ok=True)
            name = ".part-00000.parquet.4242.tmp" if t[0] == "run" else f".part-00000.parquet.from-{t[2][0]}.tmp"
            (d / name).write_bytes(b"PAR1 half")
        raise jobs.WorkerDied(f"a worker process died while reading {names(1)}", dict.fromkeys(range(len(items)), 4242))
        yield  # a generator, as ordered_map

    monkeypatch.setattr(jobs, "ordered_map", dying)
    code, _out, err = _run(capsys, "export", str(LOGDIR), "-o", str(tmp_path / "o"), "-j", "2")
    assert code == 3 and len(err) == 1 and "worker process died" in err[0] and "logdir/" in err[0]
    assert not [p for p in (tmp_path / "o").rglob("*") if p.is_file()]


@pytest.mark.parametrize("argv", [["-j", "0"], ["--jobs", "x"]])
def test_jobs_must_be_a_positive_number(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["export", str(LOGDIR), "-o", str(tmp_path)], ["verify", str(LOGDIR)], ["info", str(LOGDIR)]):
        with pytest.raises(SystemExit) as e:
            main([*command, *argv])
        assert e.value.code == 2


def test_runs_keep_the_order_and_cut_by_weight() -> None:
    from kafkalog.tools.jobs import RUNS_PER_JOB, runs

    weights = [1] * 100 + [10_000] + [1] * 50
    got = runs(list(range(len(weights))), weights, 2)
    assert [i for run in got for i in run] == list(range(len(weights)))  # every item once, in order
    assert [100] in got  # the heavy one alone
    assert len(got) <= 2 * RUNS_PER_JOB + 2 and max(len(run) for run in got) <= 100


# ------------------------------------------------------------------ a large partition cut into ranges of segments
TXN = LOGDIR / "transactional-0"  # Kafka's: 12 segments, transactions open across segment ends, aborted ones in .txnindex files


def _recording(monkeypatch: pytest.MonkeyPatch, module: object) -> list[list[str]]:
    """The kinds of the tasks each run of ``module.ordered_map`` is given (the real one runs them)."""
    from kafkalog.tools import jobs

    seen: list[list[str]] = []
    real = jobs.ordered_map

    def recording(fn, items, n, **kw):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, ANN003 - ordered_map's stand-in
        seen.append([t[0] for t in items])
        return real(fn, items, n, **kw)

    monkeypatch.setattr(module, "ordered_map", recording)
    return seen


def _logdir_copy(dest: Path, *partitions: str) -> Path:
    """golden/kafka/logdir's own files (checkpoints) and the partitions named, copied under ``dest``."""
    dest.mkdir(parents=True)
    for f in LOGDIR.iterdir():
        if f.is_file():
            shutil.copyfile(f, dest / f.name)
    for p in partitions:
        shutil.copytree(LOGDIR / p, dest / p)
    return dest


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_a_partition_of_many_segments_is_read_by_several_workers_into_the_same_file(
        fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """One partition of 12 segments: at -j 2 and 3 its segments are read by several workers (ranges
    of segments), and the file is the one -j 1 writes, byte for byte (Parquet: the same row groups)."""
    from kafkalog.tools import jobs

    seen = _recording(monkeypatch, jobs)
    for flags in ([], ["--isolation", "read_committed"]):  # read_committed: cut too, each part starting from its .txnindex state
        seen.clear()
        runs = {j: _run(capsys, "export", str(TXN), "-o", str(tmp_path / f"{len(flags)}j{j}"), "--format", fmt, *flags, "-j", str(j))
                for j in (1, 2, 3)}
        files = {j: _files(tmp_path / f"{len(flags)}j{j}") for j in runs}
        assert runs[1][0] == 0 and list(files[1]) == [f"topic=transactional/partition=0/part-00000.{fmt}"]
        assert runs[2] == runs[1] and runs[3] == runs[1]
        assert files[2] == files[1] and files[3] == files[1]  # nothing else left: no part, no temporary file
        assert [kinds.count("part") > 1 for kinds in seen] == [True, True], seen


def _corrupt_middle_segment(tmp_path: Path) -> tuple[Path, Path, int, int]:
    """A copy of transactional-0 whose 6th segment (of 12) has its first batch's last byte flipped
    (a byte its CRC covers); the batch's position and base offset are Kafka's (its dump of the file)."""
    import json

    data = _logdir_copy(tmp_path / "data", "transactional-0")
    log = data / "transactional-0" / "00000000000000000068.log"
    with open(GOLDEN / "kafka" / "dump" / "logdir.jsonl") as f:
        batch = next(o for o in map(json.loads, f) if o["file"] == "transactional-0/00000000000000000068.log" and o["type"] == "batch")
    raw = bytearray(log.read_bytes())
    raw[batch["position"] + batch["sizeInBytes"] - 1] ^= 0x01
    log.write_bytes(bytes(raw))
    return data, log, batch["position"], batch["baseOffset"]


def test_a_corrupt_segment_inside_a_split_partition_names_it_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A corrupt batch in the 6th of 12 segments, read by a worker: every -j fails with the line -j 1
    gives (file, position, offset), read_committed too, writes no file for the partition, and leaves no part or temporary
    file (hidden or not); verify reports it the same at every -j."""
    from kafkalog.tools import jobs

    seen = _recording(monkeypatch, jobs)
    data, log, position, offset = _corrupt_middle_segment(tmp_path)
    where = f"{log}, position {position}, offset {offset}: record batch is corrupt"
    for fmt, flags in (("parquet", []), ("csv", []), ("parquet", ["--isolation", "read_committed"])):
        runs = {j: _run(capsys, "export", str(data), "-o", str(tmp_path / f"{fmt}{len(flags)}{j}"), "--format", fmt, *flags, "-j", str(j))
                for j in (1, 2, 3)}
        for code, out, err in runs.values():
            assert code == 1 and not out and len(err) == 1 and where in err[0], err
        assert runs[2] == runs[1] == runs[3]
        for j in (1, 2, 3):
            assert not [p for p in (tmp_path / f"{fmt}{len(flags)}{j}").rglob("*") if p.is_file()]
    assert all(kinds.count("part") > 1 for kinds in seen) and len(seen) == 6
    one = _run(capsys, "verify", str(data), "-j", "1")
    assert one[0] == 1 and f"{log}:{position}: offset {offset}: error: " in one[1] and "[batch-crc]" in one[1]
    for j in ("2", "3"):
        assert _run(capsys, "verify", str(data), "-j", j) == one


def _parts_read_here(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The parts of a split partition this process reads again (a worker's start state was not the
    state the parts before it end in); the workers' own reads are in other processes."""
    from kafkalog.tools import export

    again: list[tuple[int, int]] = []
    real = export._export_part

    def recording(p, part, *args):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202 - _export_part's stand-in
        again.append(part)
        return real(p, part, *args)

    monkeypatch.setattr(export, "_export_part", recording)
    return again


@pytest.mark.parametrize("tamper", [False, True], ids=["kafkas-txnindex", "txnindex-disagrees"])
def test_read_committed_parts_start_from_the_aborted_transactions_under_way(
        tamper: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Producer 5001's transaction runs from offset 31 (segment 16) to its ABORT marker at 76
    (segment 68), so the parts between read its batches without the marker: each starts from the
    state the .txnindex files give for its first offset, and the rows are -j 1's. With that entry's
    last offset changed to 40 (a .txnindex that disagrees with the log), the parts that start
    from it are read again from the state the parts before end in: still -j 1's rows."""
    from kafkalog.tools import jobs

    data = _logdir_copy(tmp_path / "data", "transactional-0")
    if tamper:
        txnindex = data / "transactional-0" / "00000000000000000068.txnindex"
        raw = bytearray(txnindex.read_bytes())
        assert int.from_bytes(raw[10:18], "big") == 31 and int.from_bytes(raw[18:26], "big") == 76  # first and last offset
        raw[18:26] = (40).to_bytes(8, "big")
        txnindex.write_bytes(bytes(raw))
    seen: list[list[tuple[int, int]]] = []
    real = jobs.ordered_map

    def recording(fn, items, n, **kw):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, ANN003 - ordered_map's stand-in
        seen.append([t[2] for t in items if t[0] == "part"])
        return real(fn, items, n, **kw)

    monkeypatch.setattr(jobs, "ordered_map", recording)
    again = _parts_read_here(monkeypatch)
    for fmt in ("parquet", "jsonl"):
        runs = {j: _run(capsys, "export", str(data), "-t", "transactional", "-o", str(tmp_path / f"{fmt}{j}"), "--format", fmt,
                        "--isolation", "read_committed", "-j", str(j)) for j in (1, 2, 3)}
        files = {j: _files(tmp_path / f"{fmt}{j}") for j in runs}
        assert runs[1][0] == 0 and list(files[1]) == [f"topic=transactional/partition=0/part-00000.{fmt}"]
        assert runs[2] == runs[1] == runs[3] and files[2] == files[1] == files[3]
    # one part per segment: the transaction's batches (segments 16, 35, 53) and its marker (68) in four parts
    assert len(seen) == 4 and all(len(parts) > 4 and all(hi - lo == 1 for lo, hi in parts) for parts in seen), seen
    assert bool(again) is tamper, again


READING = {"type": "record", "name": "Reading", "fields": [{"name": "n", "type": "long"}, {"name": "where", "type": "string"}]}


def _avro_partition(root: Path) -> Path:
    """``root`` holding a Schema Registry's ``_schemas`` topic (READING as id 1) and ``readings-0``:
    six segments of ten Avro values each, written with fastavro, offsets 25 and 47 naming a schema
    id (99) the registry does not hold."""
    import io
    import json

    fastavro = pytest.importorskip("fastavro")
    from helpers import write_partition
    from kafkalog.format.records.v2 import RecordBatchBuilder

    key = json.dumps({"keytype": "SCHEMA", "subject": "readings-value", "version": 1, "magic": 1}).encode()
    write_partition(root, "_schemas-0", [(key, json.dumps({"subject": "readings-value", "version": 1, "id": 1, "schema": json.dumps(READING),
                                                           "deleted": False}).encode())])
    parsed = fastavro.parse_schema(READING)
    d = root / "readings-0"
    d.mkdir()
    for base in range(0, 60, 10):
        b = RecordBatchBuilder(base)
        for offset in range(base, base + 10):
            out = io.BytesIO()
            fastavro.schemaless_writer(out, parsed, {"n": offset * 1_000_003, "where": f"sensor {offset % 7}"})
            sid = 99 if offset in (25, 47) else 1
            b.append(1_713_533_390_000 + offset, f"k{offset}".encode(), b"\0" + sid.to_bytes(4, "big") + out.getvalue())
        (d / f"{base:020d}.log").write_bytes(b.build())
    return root


def test_decoded_values_are_split_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Typed columns (--value-format) are decoded value by value, so a partition of six segments is
    read by several workers: -j 2 and 3 write -j 1's file, and print the warnings of the values
    that do not decode (--on-undecodable null) in -j 1's order. A corrupt batch in the fourth
    segment gives -j 1's one line at every -j, and no file."""
    from kafkalog.tools import jobs

    seen = _recording(monkeypatch, jobs)
    data = _avro_partition(tmp_path / "data")
    argv = ["export", str(data), "-t", "readings", "--value-format", "avro", "--on-undecodable", "null"]
    runs = {j: _run(capsys, *argv, "-o", str(tmp_path / f"j{j}"), "-j", str(j)) for j in (1, 2, 3)}
    files = {j: _files(tmp_path / f"j{j}") for j in runs}
    assert runs[1][0] == 0 and list(files[1]) == ["topic=readings/partition=0/part-00000.parquet"]
    assert [line.split(":")[1] for line in runs[1][2][:2]] == [" warning"] * 2 and "offset 25 schema id 99" in runs[1][2][0]
    assert "offset 47 schema id 99" in runs[1][2][1]
    assert runs[2] == runs[1] == runs[3] and files[2] == files[1] == files[3]
    assert len(seen) == 2 and all(kinds.count("part") > 1 for kinds in seen), seen

    log = data / "readings-0" / "00000000000000000030.log"
    raw = bytearray(log.read_bytes())
    raw[-1] ^= 0x01  # the last byte of its one batch, which the CRC covers
    log.write_bytes(bytes(raw))
    runs = {j: _run(capsys, *argv, "-o", str(tmp_path / f"bad{j}"), "-j", str(j)) for j in (1, 2, 3)}
    for code, out, err in runs.values():
        assert code == 1 and not out and f"{log}, position 0, offset 30: record batch is corrupt" in err[-1], err
    assert runs[2] == runs[1] == runs[3]
    for j in (1, 2, 3):
        assert not [p for p in (tmp_path / f"bad{j}").rglob("*") if p.is_file()]


def test_verify_carries_open_transactions_from_one_range_of_segments_to_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Producer 5001's transaction begins at offset 31 (segment 16) and is aborted at 76 (segment 68),
    as Kafka's .txnindex of segment 68 says. With that entry's first offset changed to 30, verify
    reports the difference, which it can only see by carrying the open transaction across the
    segments: at -j 2 and 3, checked by several workers, the findings are -j 1's."""
    from kafkalog.tools import validate

    seen = _recording(monkeypatch, validate)
    data = _logdir_copy(tmp_path / "data", "transactional-0")
    txnindex = data / "transactional-0" / "00000000000000000068.txnindex"
    raw = bytearray(txnindex.read_bytes())
    assert int.from_bytes(raw[2:10], "big") == 5001 and int.from_bytes(raw[10:18], "big") == 31  # version, producer id, first offset
    raw[10:18] = (30).to_bytes(8, "big")
    txnindex.write_bytes(bytes(raw))
    for flags in ([], ["--json", "--notes"]):
        one = _run(capsys, "verify", str(data), *flags, "-j", "1")
        assert one[0] == 1 and "differs from the transaction's first offset 31" in one[1], one
        for j in ("2", "3"):
            assert _run(capsys, "verify", str(data), *flags, "-j", j) == one
    assert all(kinds.count("segments") > 1 for kinds in seen) and len(seen) == 4, seen


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=40), st.lists(st.integers(0, 40), max_size=5),
       st.dictionaries(st.integers(0, 3), st.integers(0, 9)))
def test_open_transactions_carried_across_ranges_are_the_ones_of_one_pass(
        events: list[tuple[int, bool]], cuts: list[int], before: dict[int, int]) -> None:
    """Transactional data (setdefault) and markers (pop; get: the transaction a marker ends) of a
    producer seen in one pass over a dict, and in ranges each seen without the ones before it and
    resolved in order (_OpenTxns): the same transactions ended, and the same left open."""
    from kafkalog.tools.validate import _OpenTxns

    one = dict(before)
    expected = []
    for offset, (pid, marker) in enumerate(events):
        if marker:
            expected.append(one.get(pid))
            one.pop(pid, None)
        else:
            one.setdefault(pid, offset)
    state = dict(before)
    got = []
    bounds = sorted({0, len(events), *(c for c in cuts if c <= len(events))})
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        txns = _OpenTxns()
        ended = []
        for offset in range(lo, hi):
            pid, marker = events[offset]
            if marker:
                ended.append(txns.get(pid))
                txns.pop(pid, None)
            else:
                txns.setdefault(pid, offset)
        got += [txns.resolve(v, state) for v in ended]
        txns.apply(state)
    assert got == expected and state == one


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from(["data", "data", "commit", "abort", "plain"])), max_size=50),
       st.lists(st.integers(1, 49), max_size=5), st.lists(st.tuples(st.integers(0, 9), st.integers(-3, 3), st.integers(-3, 3)), max_size=2))
def test_read_committed_ranges_started_from_the_txnindex_decide_as_one_pass(
        events: list[tuple[int, str]], cuts: list[int], tamper: list[tuple[int, int, int]]) -> None:
    """Transactional batches and markers of three producers, and plain batches (which the filter is
    not asked about, as _Selection does not ask), the aborted transactions listed as
    Kafka's .txnindex lists them (tamper: some first and last offsets moved). One read_committed filter over
    all of them, and ranges each started from the .txnindex's state for its first offset
    (CommittedState.at), or, where the range before ends elsewhere (CommittedState.until), from
    that end: the same batches skipped. With the true .txnindex no range starts over."""
    from kafkalog.fast.arrow import CommittedState, _Committed
    from kafkalog.format.txnindex import AbortedTxn

    batches: list[tuple[int, bool, bool] | None] = []  # producer, transactional data, ABORT marker; None: a plain batch
    open_txns: dict[int, int] = {}
    aborted = []
    for pid, kind in events:
        if kind == "plain":
            batches.append(None)
            continue
        if kind == "data":
            open_txns.setdefault(pid, len(batches))
        elif pid not in open_txns:
            continue  # a coordinator writes a marker only for a transaction under way
        elif kind == "abort":
            aborted.append(AbortedTxn(0, pid, open_txns.pop(pid), len(batches), 0))
        else:
            del open_txns[pid]
        batches.append((pid, kind == "data", kind == "abort"))
    for i, first, last in tamper:
        if i < len(aborted):
            t = aborted[i]
            aborted[i] = AbortedTxn(0, t.producer_id, t.first_offset + first, t.last_offset + last, 0)

    def decide(f: _Committed, lo: int, hi: int) -> list[bool]:
        return [b is not None and f.skips(b[0], offset, b[1], b[2]) for offset, b in enumerate(batches[lo:hi], lo)]

    expected = decide(_Committed(aborted), 0, len(batches))
    bounds = sorted({0, len(batches), *(c for c in cuts if c < len(batches))})
    got: list[bool] = []
    ended = None
    again = 0
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        start = CommittedState.at(aborted, lo) if lo else None
        if ended is not None and start is not None and ended.until(aborted, lo) != start:
            start, again = ended, again + 1
        f = _Committed(aborted, start)
        got += decide(f, lo, hi)
        ended = f.state
    assert got == expected
    assert again == 0 or any(i < len(aborted) and (first or last) for i, first, last in tamper)


def test_sigterm_while_workers_run_ends_the_run_as_an_exception_does() -> None:
    """SIGTERM (a worker sends it to this process) raises SystemExit(143) in the waiting process, so
    that its cleanup runs (temporary files, the forkserver's /tmp/pymp-* directory at exit); the
    handler before the run is put back."""
    import functools

    from kafkalog.tools.jobs import ordered_map

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as e:
        list(ordered_map(functools.partial(os.kill, os.getpid()), [signal.SIGTERM, 0], 2, names=lambda i: f"task-{i}"))
    assert e.value.code == 128 + signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) == before


def _lists_plainly(_item: int) -> bool:
    """A task, run by a worker process: whether it lists directories with the plain Python listing."""
    from kafkalog.format import files

    return files.dir_lister() is None


@pytest.mark.skipif(not __import__("kafkalog.fast", fromlist=["compiled"]).compiled("_dirs"),
                    reason="the compiled listing is not built, or KAFKALOG_NO_EXTENSIONS is set")
@pytest.mark.parametrize("plain", [False, True], ids=["compiled", "plain"])
def test_workers_list_directories_as_the_process_that_started_them(plain: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers come from a server that imported the package afresh (the compiled listing plugged in):
    a process using the plain listing has its workers use it too, as it has them use the plain columnar kernels."""
    from kafkalog.format import files
    from kafkalog.tools.jobs import ordered_map

    if plain:
        monkeypatch.setattr(files, "_dir_lister", None)
    assert list(ordered_map(_lists_plainly, [0, 1, 2], 2, names=str)) == [plain] * 3
