"""Planning a data dir of many partitions checks every one of them for lost offsets (SPEC §6.8),
however the listing is taken: a gap deep in the dir is reported as in a dir of one partition.

The damage and its offsets follow from Kafka's golden-0 (:func:`helpers.many_partitions`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import kafkalog
from helpers import many_partitions
from kafkalog.errors import DataLossError

COUNT = 600
NO_LOG = 430
LOST_TAIL = 570


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return many_partitions(tmp_path_factory.mktemp("many") / "data", COUNT, no_log=NO_LOG, lost_tail=LOST_TAIL)


@pytest.mark.rule("R-LOSS-04")
def test_gaps_deep_in_many_partitions_fail_the_scan_before_any_read(many: Path) -> None:
    with pytest.raises(DataLossError) as info:
        kafkalog.scan(str(many), columns=["offset"])
    text = str(info.value)
    assert f"many-{NO_LOG}, offset 102: offsets 102 to 145 are in no .log" in text  # R-LOSS-01: the next segment starts at 146
    # R-LOSS-03: found by reading the last segment's .timeindex, which the listing did not size
    assert (f"many-{LOST_TAIL}: offset 264 is in no .log: the last segment 00000000000000000234.log ends at offset 264, "
            "and 00000000000000000234.timeindex has an entry for offset 264") in text
    assert [(g.directory.rsplit("/", 1)[-1], g.start, g.end) for g in info.value.gaps] == [
        (f"many-{NO_LOG}", 102, 146), (f"many-{LOST_TAIL}", 264, 265)]


def test_allowing_gaps_reads_every_other_offset_of_every_partition(many: Path) -> None:
    table = kafkalog.scan(str(many), columns=["partition", "offset"], allow_gaps=True).read_all()
    partition = table.column("partition").to_numpy()
    offset = table.column("offset").to_numpy()
    order = np.lexsort((offset, partition))
    partition, offset = partition[order], offset[order]

    def of(p: int) -> set[int]:
        lo, hi = np.searchsorted(partition, [p, p + 1])
        return set(offset[lo:hi].tolist())

    assert np.unique(partition).tolist() == list(range(COUNT))
    whole = of(0)
    assert of(NO_LOG) == whole - set(range(102, 146))
    assert of(LOST_TAIL) == whole - {264}
    undamaged = ~np.isin(partition, [NO_LOG, LOST_TAIL])
    rows = offset[undamaged].reshape(COUNT - 2, -1)  # raises unless every other partition has as many rows as partition 0
    assert (rows == np.array(sorted(whole))).all()


@pytest.mark.parametrize("enabled", [True, False])
def test_planning_leaves_the_garbage_collector_as_it_found_it(many: Path, enabled: bool) -> None:
    # planning holds the collector off (full collections over 100,000 partitions' objects cost more
    # than the planning), and gives it back as it was whether the planning ends or fails
    import gc

    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with pytest.raises(DataLossError):
            kafkalog.scan(str(many), columns=["offset"])
        assert gc.isenabled() is enabled
        kafkalog.scan(str(many), columns=["offset"], allow_gaps=True)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def _planned_by_processes(monkeypatch: pytest.MonkeyPatch) -> list[int | None]:
    """Planning of any number of partitions finds their data loss in worker processes; the task
    counts of each run of the pool are recorded (none: planned in one process; None: a run whose
    tasks come as the walk makes them)."""
    from kafkalog.dataset import processes, scan

    monkeypatch.setattr(scan, "PARALLEL_PLANNING", 1)
    runs: list[int | None] = []
    real = processes.ordered_map

    def recording(fn, items, jobs, **kw):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, ANN003 - ordered_map's stand-in
        runs.append(len(items) if isinstance(items, list) else None)
        return real(fn, items, jobs, **kw)

    monkeypatch.setattr(processes, "ordered_map", recording)
    return runs


@pytest.mark.rule("R-LOSS-04")
def test_planning_in_worker_processes_gives_one_process_plans_warnings_and_error(many: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The data loss of many partitions found by two worker processes: the same DataLossError (its
    message, file, offset and gaps), and with gaps allowed the same plans and warnings in the same
    order, as one process gives; a plan that ends before a partition's loss does not report it."""
    from kafkalog.dataset.scan import plan_all
    from kafkalog.log.replicas import discover

    runs = _planned_by_processes(monkeypatch)
    files = discover(str(many))
    errors = {}
    for jobs in (1, 2):
        with pytest.raises(DataLossError) as info:
            plan_all(files, jobs=jobs)
        errors[jobs] = info.value
    assert len(runs) == 1 and runs[0] > 2, runs  # the 600 partitions in runs over the two processes
    assert (str(errors[2]), errors[2].file, errors[2].offset, errors[2].gaps) == (str(errors[1]), errors[1].file, errors[1].offset, errors[1].gaps)
    assert [(g.directory.rsplit("/", 1)[-1], g.start, g.end) for g in errors[2].gaps] == [(f"many-{NO_LOG}", 102, 146), (f"many-{LOST_TAIL}", 264, 265)]
    with pytest.raises(DataLossError) as info:  # scan's plan_jobs is plan_all's jobs
        kafkalog.scan(str(many), columns=["offset"], plan_jobs=2)
    assert str(info.value) == str(errors[1]) and len(runs) == 2
    for kw in ({}, {"end_offset": 200}):
        planned = {}
        for jobs in (1, 2):
            warned: list[object] = []
            planned[jobs] = (plan_all(files, allow_gaps=True, on_gap=warned.append, jobs=jobs, **kw), warned)  # type: ignore[arg-type]
        assert planned[2] == planned[1] and len(planned[1][0]) == COUNT
        assert [g.start for g in planned[1][1]] == ([102] if kw else [102, 264])


def test_a_partition_that_fails_in_a_worker_fails_the_planning_as_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A partition dir removed after it was listed: finding its data loss fails (its last .log says
    less than its snapshot's name, and the dir cannot be listed again to see why), and the planning
    raises that error, as one process raises it, whichever process met it first."""
    import shutil

    from kafkalog.dataset.scan import plan_all
    from kafkalog.log.replicas import discover

    runs = _planned_by_processes(monkeypatch)
    root = many_partitions(tmp_path / "data", 40)
    files = discover(str(root))
    shutil.rmtree(root / "many-25")
    errors = []
    for jobs in (1, 2):
        with pytest.raises(OSError) as info:
            plan_all(files, jobs=jobs)
        errors.append((type(info.value), str(info.value)))
    assert runs and errors[0] == errors[1] and "many-25" in errors[0][1], errors


# ----------------------------------------------------------------------------- listing in worker processes
# Worker processes list the partition dirs of a data dir, make partitions of them and find their data
# loss (kafkalog.log.source.list_candidates); what one process finds is the truth they are held to.
BROKER_1 = 40  # partition dirs many-0 ... of the first data dir
NO_LOG_1, LOST_TAIL_1 = 13, 27
START_AT = {2: 50, NO_LOG_1: 120}  # log-start-offset-checkpoint entries of the first data dir


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two brokers' data dirs: broker-1's of many partitions (one that lost a .log, one a tail, two
    with a log start offset in the checkpoint, one holding a partition dir of its own and one a
    ``-delete`` dir, beside a ``-delete`` partition dir), and broker-2's with copies of three of
    them, one of those the copy that lost its tail."""
    root = tmp_path_factory.mktemp("cluster")
    one = many_partitions(root / "broker-1" / "data", BROKER_1, no_log=NO_LOG_1, lost_tail=LOST_TAIL_1)
    (one / "log-start-offset-checkpoint").write_text(f"0\n{len(START_AT)}\n" + "".join(f"many {p} {o}\n" for p, o in START_AT.items()))
    _link_copy(one / "many-0", one / "many-3" / "nested-0")  # a partition dir under a partition dir
    _link_copy(one / "many-0", one / "many-5" / "many-5.0123456789abcdef-delete")  # Kafka reads no -delete dir
    _link_copy(one / "many-0", one / "many-9.0123456789abcdef-delete")
    two = root / "broker-2" / "data"
    for p in (4, 7, LOST_TAIL_1):
        _link_copy(one / f"many-{p if p != LOST_TAIL_1 else 0}", two / f"many-{p}")
    return root


def _link_copy(src: Path, dst: Path) -> None:
    import os

    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file():
            os.link(f, dst / f.name)


def _outcome(run: object) -> tuple:
    """What a planning gives: its result, or its error's type, message, file, offset and gaps."""
    try:
        return ("result", run())  # type: ignore[operator]
    except Exception as e:  # noqa: BLE001 - compared whole
        return ("error", type(e), str(e), getattr(e, "file", None), getattr(e, "offset", None), getattr(e, "gaps", None))


def _both(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, plan: object, *, start_at: int = 1) -> tuple[tuple, tuple]:
    """``plan(plan_jobs)`` in one process and with two worker processes listing every data dir's
    partition dirs (the threshold lowered to ``start_at``: from the first one met, or from a later
    one, the walk going on beside their listing), each with the warnings logged; the second asserts
    that the workers listed them."""
    import logging

    from kafkalog.dataset import processes, scan

    monkeypatch.setattr(scan, "PARALLEL_PLANNING", start_at)
    used: list[str] = []
    real = processes.ordered_map

    def recording(fn, items, jobs, **kw):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, ANN003 - ordered_map's stand-in
        used.append(fn.__name__)
        return real(fn, items, jobs, **kw)

    monkeypatch.setattr(processes, "ordered_map", recording)
    out = []
    for jobs in (1, 2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="kafkalog"):
            got = _outcome(lambda: plan(jobs))  # type: ignore[operator]  # noqa: B023 - called at once
        out.append((got, [r.getMessage() for r in caplog.records]))
        assert ("list_candidates" in used) is (jobs == 2), used
    return out[0], out[1]


def _scan_plans(monkeypatch: pytest.MonkeyPatch, paths: list[str], *, died: bool = False, no_workers: bool = False, **kw: object) -> object:
    """scan's plans: plan_all's result as scan makes it (scan_files is given them). ``died``: a worker
    died part-way; ``no_workers``: none could be started (every partition dir listed here)."""
    from kafkalog.dataset import scan
    from kafkalog.log.source import PartitionFiles

    planned: list[list] = []
    real = scan.plan_all

    def keep(files, **options):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, ANN003 - plan_all's stand-in
        planned.append(plans := real(files, **options))
        return plans

    monkeypatch.setattr(scan, "plan_all", keep)

    def run(jobs: int) -> object:
        kafkalog.scan(paths, plan_jobs=jobs, columns=["offset"], **kw)  # type: ignore[arg-type]
        # with workers, each copy's data loss was found by the worker that listed it, but under a
        # partition dir holding directories (many-3), which this process walked as one process walks it
        plain = [p.files for p in planned[-1] if type(p.files) is PartitionFiles]
        here = {f.dir.rsplit("/", 1)[-1] for f in plain if f.found_gaps is None}
        if no_workers:
            # (nested-0, alone under many-3, is listed by ordered_map's one-item run in this process)
            assert len(here) == len(plain) - 1 and "nested-0" not in here, here
        elif died:  # a worker died: those of its run and after were listed here (all of them when it died
            # before any result came in: the walk's order, the directory's, may give it many-20 first)
            assert 0 < len(here) <= len(plain), here
        else:
            assert here <= {"many-3", "nested-0"} if jobs > 1 else all(f.found_gaps is None for f in plain), here
        return planned[-1]
    return run


@pytest.mark.rule("R-LOSS-04")
@pytest.mark.parametrize("kw", [{}, {"allow_gaps": True}, {"allow_gaps": True, "start_offset": 0}, {"allow_gaps": True, "start_offset": 0,
                                 "include_deleted": True}, {"allow_gaps": True, "topics": "nested"}, {"allow_gaps": True, "partitions": [3, 13, 27]}],
                         ids=["lost", "allow-gaps", "deleted-warned", "include-deleted", "topics", "partitions"])
def test_listing_in_worker_processes_plans_and_warns_as_one_process(cluster: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture, kw: dict) -> None:
    """Two data dirs of many partitions, copies of some in both, a lost .log, lost tails, log start
    offsets, partition and ``-delete`` dirs under partition dirs, filters: the plans (every one's
    data loss found by the workers), the DataLossError or the warnings, in order, are one process's."""
    paths = [str(cluster / "broker-1"), str(cluster / "broker-2")]
    serial, parallel = _both(monkeypatch, caplog, _scan_plans(monkeypatch, paths, **kw))
    assert parallel == serial
    (kind, *result), warnings = serial
    if not kw:
        assert kind == "error" and result[0] is DataLossError
        # many-13's log starts at 120 (the checkpoint): its lost .log from there; many-27's copy in broker-2 holds its lost tail
        assert [(g.directory.rsplit("/", 1)[-1], g.start, g.end) for g in result[4]] == [(f"many-{NO_LOG_1}", 120, 146)]
        return
    assert kind == "result"
    plans = {(p.topic, p.partition): p for p in result[0]}
    if "topics" in kw:
        assert list(plans) == [("nested", 0)] and not warnings
    elif "partitions" in kw:
        assert list(plans) == [("many", 3), ("many", 13), ("many", 27)]
    else:
        assert len(plans) == BROKER_1 + 1 and ("many", 9) in plans and plans["many", 4].files.copies  # type: ignore[attr-defined]
    deleted = [w for w in warnings if "below the log start offset" in w]
    assert len(deleted) == (2 if kw.get("start_offset") == 0 and not kw.get("include_deleted") else 0), warnings
    if "partitions" not in kw and "topics" not in kw:
        assert [w.split(": ", 1)[0].rsplit("/", 1)[-1] for w in warnings if "in no .log" in w] == [f"many-{NO_LOG_1}"]


@pytest.mark.rule("R-REP-04")
def test_a_divergence_between_copies_listed_by_workers_is_one_process_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                            caplog: pytest.LogCaptureFixture) -> None:
    from kafkalog.errors import ReplicaDivergenceError
    from replica_backup import UNCLEAN_AT, build_backup

    backup = build_backup(tmp_path / "replicas")
    paths = [str(backup.backup), str(backup.root / "unclean")]
    serial, parallel = _both(monkeypatch, caplog, _scan_plans(monkeypatch, paths))
    assert parallel == serial
    assert serial[0][1] is ReplicaDivergenceError and serial[0][4] == UNCLEAN_AT
    serial, parallel = _both(monkeypatch, caplog, _scan_plans(monkeypatch, paths, allow_gaps=True))
    assert parallel == serial and any("replica divergence" in w for w in serial[1])


def test_a_directory_a_worker_cannot_list_fails_as_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    """A partition dir holding a symbolic link to itself cannot be walked (ELOOP): the worker leaves
    it to the planning process, which raises what one process raises."""
    import os

    root = many_partitions(tmp_path / "data", 30)
    os.symlink("loop", root / "many-21" / "loop")
    serial, parallel = _both(monkeypatch, caplog, _scan_plans(monkeypatch, [str(root)]))
    assert parallel == serial
    assert serial[0][1] is OSError or issubclass(serial[0][1], OSError), serial
    assert "many-21" in serial[0][2]


def test_a_corrupt_index_fails_the_plan_naming_it_as_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    """A read_committed plan of a partition whose ``.txnindex`` is torn: the error names the file
    and position, as one process's does."""
    from kafkalog.errors import CorruptIndexError

    root = many_partitions(tmp_path / "data", 30)
    index = root / "many-17" / "00000000000000000051.txnindex"
    data = index.read_bytes()
    index.unlink()  # a hard link: the other partitions keep theirs
    index.write_bytes(data[:-5])
    serial, parallel = _both(monkeypatch, caplog, _scan_plans(monkeypatch, [str(root)], read_committed=True))
    assert parallel == serial
    assert serial[0][:2] == ("error", CorruptIndexError) and serial[0][3:5] == (str(index), None), serial
    assert str(serial[0][2]).startswith(f"{index}, position 0: "), serial


def _dies_listing_many_20(candidates: list) -> list:  # noqa: ANN001 - list_candidates's stand-in, run by a worker process
    """:func:`kafkalog.log.source.list_candidates`, but a worker given ``many-20`` is killed."""
    import os
    import signal

    from kafkalog.log.source import list_candidates

    if any(c[0].endswith("many-20") for c in candidates):
        os.kill(os.getpid(), signal.SIGKILL)
    return list_candidates(candidates)


@pytest.mark.parametrize("start_at", [1, 8])
def test_a_worker_killed_mid_run_leaves_the_rest_to_the_planning_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                         caplog: pytest.LogCaptureFixture, start_at: int) -> None:
    """A worker dies while the walk goes on (the workers given partition dirs from the first one met,
    or from the eighth): those of its run and after are listed by the planning process, with one
    process's plans."""
    from kafkalog.dataset import scan

    root = many_partitions(tmp_path / "data", 40, no_log=35, lost_tail=5)
    serial, _ = _both(monkeypatch, caplog, _scan_plans(monkeypatch, [str(root)], allow_gaps=True), start_at=start_at)
    monkeypatch.setattr(scan, "list_candidates", _dies_listing_many_20)
    got = _outcome(lambda: _scan_plans(monkeypatch, [str(root)], died=True, allow_gaps=True)(2))  # type: ignore[operator]
    assert got == serial[0]


def test_planning_leaves_its_objects_uncollected_in_the_oldest_generation(many: Path) -> None:
    """What planning made is long-lived: it goes to the collector's oldest generation without being
    walked at the pause's end (the youngest generation holds next to nothing after it); objects the
    program froze itself stay frozen."""
    import gc

    from kafkalog.log.source import PartitionFiles

    assert gc.isenabled()
    gc.collect()
    reader = kafkalog.scan(str(many), columns=["offset"], allow_gaps=True)
    assert [sum(type(o) is PartitionFiles for o in gc.get_objects(g)) for g in (0, 1, 2)] == [0, 0, COUNT]
    del reader
    kept = [[k] for k in range(1000)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        kafkalog.scan(str(many), columns=["offset"], allow_gaps=True)
        # the program's frozen objects are not in the collected generations (the permanent one is
        # not listed), and planning froze none of its own; the count alone is not compared: a cache
        # the scan evicts (an LRU filled by earlier tests) may free objects frozen with the rest
        listed = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in listed for o in [kept, *kept])
        assert gc.get_freeze_count() < frozen + COUNT
    finally:
        gc.unfreeze()


def _no_process_starts(monkeypatch: pytest.MonkeyPatch, error: OSError) -> list[int]:
    """Starting a worker process fails with ``error`` (as with too many open files, or a refused
    fork); the attempts are counted."""
    import multiprocessing.process

    tried: list[int] = []

    def failing(self: object) -> None:
        tried.append(1)
        raise error

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", failing)
    return tried


_START_FAILURES = [OSError(24, "Too many open files"), BlockingIOError(11, "Resource temporarily unavailable")]


@pytest.mark.parametrize("error", _START_FAILURES, ids=["EMFILE", "fork-refused"])
def test_a_pool_that_cannot_start_leaves_the_listing_to_the_planning_process(cluster: Path, monkeypatch: pytest.MonkeyPatch,
                                                                              caplog: pytest.LogCaptureFixture, error: OSError) -> None:
    """No worker process can be started: scan lists and plans every partition dir itself, with one
    process's plans, warnings and errors, as when a worker dies."""
    paths = [str(cluster / "broker-1"), str(cluster / "broker-2")]
    for kw in ({}, {"allow_gaps": True, "start_offset": 0}):
        serial, _ = _both(monkeypatch, caplog, _scan_plans(monkeypatch, paths, **kw))
        tried = _no_process_starts(monkeypatch, error)
        got = _outcome(lambda: _scan_plans(monkeypatch, paths, no_workers=True, **kw)(2))  # noqa: B023 - called at once
        assert tried and got == serial[0]
        monkeypatch.undo()


@pytest.mark.parametrize("error", _START_FAILURES, ids=["EMFILE", "fork-refused"])
def test_a_pool_that_cannot_start_leaves_finding_the_data_loss_to_the_planning_process(many: Path, monkeypatch: pytest.MonkeyPatch,
                                                                                       error: OSError) -> None:
    from kafkalog.dataset.scan import plan_all
    from kafkalog.log.replicas import discover

    files = discover(str(many))
    runs = _planned_by_processes(monkeypatch)
    warned: dict[int, list[object]] = {1: [], 2: []}
    serial = plan_all(files, allow_gaps=True, on_gap=warned[1].append, jobs=1)  # type: ignore[arg-type]
    tried = _no_process_starts(monkeypatch, error)
    assert plan_all(files, allow_gaps=True, on_gap=warned[2].append, jobs=2) == serial  # type: ignore[arg-type]
    assert runs and tried and warned[2] == warned[1] and len(warned[1]) == 2


def _listing_timeline(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What the planning process does, in order: ``met`` for each partition dir the walk meets (and
    leaves for the workers), ``sent`` for each run of them sent to the listing workers (not the
    data-loss workers of partitions found here)."""
    from kafkalog.dataset import processes
    from kafkalog.log import source

    events: list[str] = []
    real_candidate, real_map = source._Walk.candidate, processes.ordered_map

    def candidate(self, d, topic, partition):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202 - _Walk.candidate's stand-in
        events.append("met")
        return real_candidate(self, d, topic, partition)

    def mapped(fn, items, jobs, **kw):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, ANN003 - ordered_map's stand-in
        def sent():  # type: ignore[no-untyped-def]  # noqa: ANN202
            for item in items:
                events.append("sent")
                yield item
        return real_map(fn, sent() if fn is source.list_candidates else items, jobs, **kw)

    monkeypatch.setattr(source._Walk, "candidate", candidate)
    monkeypatch.setattr(processes, "ordered_map", mapped)
    return events


def test_listing_workers_are_given_partition_dirs_while_the_walk_goes_on(many: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the walk has met as many partition dirs as make the listing go to workers, the workers'
    server is started, and runs of them are sent to the workers while the walk goes on (not once it
    has ended), two per worker first; below that number, none is sent: this process lists them."""
    from kafkalog.dataset import processes, scan

    events = _listing_timeline(monkeypatch)
    real_start = processes.start_server
    monkeypatch.setattr(processes, "start_server", lambda preload=(): (events.append("server"), real_start(preload)))
    kafkalog.scan(str(many), plan_jobs=2, allow_gaps=True)  # 600 dirs: fewer than PARALLEL_PLANNING
    assert "sent" not in events and "server" not in events and events.count("met") == COUNT
    events.clear()
    monkeypatch.setattr(scan, "PARALLEL_PLANNING", COUNT // 8)
    kafkalog.scan(str(many), plan_jobs=2, allow_gaps=True)
    first = events.index("sent")
    assert events.index("server") == COUNT // 8 and set(events[:first]) == {"met", "server"} and events.count("met") == COUNT, events
    last = len(events) - 1 - events[::-1].index("sent")
    assert events[first : first + 4] == ["sent"] * 4 and "met" in events[first:last], events  # the walk went on between the runs sent


def test_the_walk_takes_partition_dirs_given_as_paths_as_its_own(many: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What counts toward the workers' listing is the partition dirs they would list, not the
    partitions this process finds itself after the first of them (a partition dir given as a path):
    one such dir, then many given one by one, send none."""
    from kafkalog.dataset import scan

    events = _listing_timeline(monkeypatch)
    monkeypatch.setattr(scan, "PARALLEL_PLANNING", 10)
    _link_copy(many / "many-0", tmp_path / "data" / "many-0")
    paths = [str(tmp_path / "data"), *(str(many / f"many-{p}") for p in range(1, 31))]
    kafkalog.scan(paths, plan_jobs=2, allow_gaps=True)
    assert events == ["met"]


@pytest.mark.parametrize("start_at", [1, 8])
def test_an_error_of_the_walk_after_the_workers_started_is_raised_in_its_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                               caplog: pytest.LogCaptureFixture, start_at: int) -> None:
    """The walk fails (a path that is no directory) after the workers were given the partition dirs of
    the one before it: one process's error, raised after those of the directories met before it (a
    partition dir that cannot be walked), as one process raises it."""
    import os

    from kafkalog.errors import LogNotFoundError

    root = many_partitions(tmp_path / "data", 30)
    paths = [str(root), str(tmp_path / "nowhere")]
    serial, parallel = _both(monkeypatch, caplog, _scan_plans(monkeypatch, paths, allow_gaps=True), start_at=start_at)
    assert parallel == serial and serial[0][1] is LogNotFoundError and "nowhere" in serial[0][3], serial
    os.symlink("loop", root / "many-21" / "loop")
    serial, parallel = _both(monkeypatch, caplog, _scan_plans(monkeypatch, paths, allow_gaps=True), start_at=start_at)
    assert parallel == serial and issubclass(serial[0][1], OSError) and "many-21" in serial[0][2], serial


def test_an_error_asking_wants_of_a_dir_the_workers_list_is_raised_in_its_turn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``wants`` fails for one partition dir while the walk goes on beside the listing workers: the
    walk ends there, and its error, or that of a dir met before it (one that cannot be walked), is
    raised as one process raises it."""
    import os

    from kafkalog.dataset import scan
    from kafkalog.log.source import find_partitions

    def wants(topic: str, partition: int) -> bool:
        if partition == 20:
            raise ValueError("wants failed for many-20")
        return True

    root = many_partitions(tmp_path / "data", 40)
    monkeypatch.setattr(scan, "PARALLEL_PLANNING", 8)
    for loop in (False, True):
        if loop:
            os.symlink("loop", root / "many-12" / "loop")
        outcomes = [_outcome(lambda: find_partitions(str(root), wants=wants, list_many=lister)) for lister in (None, scan._lister(2))]  # noqa: B023
        assert outcomes[1] == outcomes[0] and outcomes[0][0] == "error", outcomes


@pytest.mark.rule("R-LOSS-04")
def test_data_loss_workers_are_given_each_partitions_log_start_offset(cluster: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The data-loss workers of partitions found by one process are given each one's own checkpoint
    entries (:func:`kafkalog.log.source.own_offsets`, as the listing workers are): many-13's lost
    .log is reported from its log start offset, 120, not from the segment's 102, as one process does."""
    from kafkalog.dataset.scan import plan_all
    from kafkalog.log.replicas import discover

    runs = _planned_by_processes(monkeypatch)
    files = discover(str(cluster / "broker-1"))
    lost = {}
    for jobs in (1, 2):
        warned: list = []
        plan_all(files, allow_gaps=True, on_gap=warned.append, jobs=jobs)
        lost[jobs] = [(g.directory.rsplit("/", 1)[-1], g.start, g.end) for g in warned]
    assert runs and lost[2] == lost[1] and (f"many-{NO_LOG_1}", 120, 146) in lost[1], lost


@pytest.mark.rule("R-VAL-10")
def test_the_start_floor_is_the_log_start_offset(cluster: Path) -> None:
    """A read starts at the partition's log start offset (its checkpoint entry above the first
    segment: many-2's 50, many-13's 120, both written above), else at the first segment; with
    ``include_deleted`` at the first segment; the same whether found by one process or planned."""
    from kafkalog.dataset.scan import plan, start_floor
    from kafkalog.log.replicas import discover

    files = {p.partition: p for p in discover(str(cluster / "broker-1"), wants=lambda t, p: p in (0, 2, NO_LOG_1))}
    assert {k: start_floor(pf) for k, pf in files.items()} == {0: 0, 2: START_AT[2], NO_LOG_1: START_AT[NO_LOG_1]}
    assert {k: start_floor(pf, include_deleted=True) for k, pf in files.items()} == {0: 0, 2: 0, NO_LOG_1: 0}
    assert {k: plan(pf).start for k, pf in files.items()} == {0: 0, 2: START_AT[2], NO_LOG_1: START_AT[NO_LOG_1]}
