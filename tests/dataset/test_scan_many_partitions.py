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


def _planned_by_processes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Planning of any number of partitions finds their data loss in worker processes; the task
    counts of each run of the pool are recorded (none: planned in one process)."""
    from kafkalog.dataset import processes, scan

    monkeypatch.setattr(scan, "PARALLEL_PLANNING", 1)
    runs: list[int] = []
    real = processes.ordered_map

    def recording(fn, items, jobs, **kw):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, ANN003 - ordered_map's stand-in
        runs.append(len(items))
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
