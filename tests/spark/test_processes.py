"""A batch read's planning in worker processes (``kafkalog_spark.processes``) plans what the serial
planning plans: the same input partitions down to their pickles, the same warnings in the same
order, the same first error, on data dirs of many partitions with copies in two data dirs, lost
offsets, topic names Kafka would refuse, segments cut and not cut (by the workers or by the
planning process, between the others), a partition the planning process plans itself between the
workers' (a tiered copy's dir), and the subscription, offset and filter options; and it runs inside a real Spark session's Python worker. The threshold is lowered
so that a few dozen partition dirs are planned in processes."""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import signal
from pathlib import Path

import pytest

from helpers import GOLDEN, GOLDEN_0, many_partitions
from kafkalog_spark import DataLossError, processes
from kafkalog_spark.errors import LayoutError
from kafkalog_spark.source import KafkaLogReader, source_schema

from ._support import tiered_copy

COUNT = 40
NO_LOG = 7  # many-7 lost a .log in d1 (its copy in d2 holds it)
LOST_TAIL = 23  # only in d1: its offsets 264 on are lost
NO_LOG_ALONE = 31  # only in d1: offsets 102 to 145 lost
TRANSACTIONAL_0 = GOLDEN_0.parent / "transactional-0"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two data dirs: d1 of ``COUNT`` partitions with lost offsets, d2 with copies of the first ten,
    in both a topic name Kafka would refuse, and in d1 dirs that hold no partition."""
    root = tmp_path_factory.mktemp("processes")
    d1 = many_partitions(root / "d1", COUNT, no_log=NO_LOG, lost_tail=LOST_TAIL)
    (d1 / f"many-{NO_LOG_ALONE}" / "00000000000000000102.log").unlink()
    for k in range(10):
        shutil.copytree(GOLDEN_0, root / "d2" / f"many-{k}", copy_function=os.link)
    for d in (d1, root / "d2"):
        shutil.copytree(GOLDEN_0, d / "bad topic!-0", copy_function=os.link)
    shutil.copytree(GOLDEN_0, d1 / "junk", copy_function=os.link)  # segment files under a name that is no partition's: skipped, logged
    (d1 / "notes").mkdir()
    # smaller segments than golden-0's (not cut where golden-0's are), in partitions planned by the workers
    # and in a tiered copy's dir, planned by the planning process between them (its name says two partitions)
    for k in range(3):
        shutil.copytree(TRANSACTIONAL_0, d1 / f"kay-{k}", copy_function=os.link)
    lone = tmp_path_factory.mktemp("lone") / "lone-0"
    shutil.copytree(TRANSACTIONAL_0, lone, copy_function=os.link)
    tiered_copy(lone, d1, "AAAAAAAAAAAAAAAAAAAAAQ")
    return root


@pytest.fixture(autouse=True)
def few(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(processes, "PARALLEL_PLANNING", 8)


def _planned(options: dict[str, str], parallel: bool, caplog: pytest.LogCaptureFixture, filters: list | None = None) -> tuple[object, list]:
    """The input partitions (or the error raised) and the records logged, planned serially or in processes."""
    caplog.clear()
    reader = KafkaLogReader({**options, "planningJobs": "2" if parallel else "1"}, source_schema())
    if filters:
        reader.pushFilters(filters)
    try:
        with caplog.at_level(logging.INFO):
            if parallel:
                out: object = processes.plan_in_processes(reader._planner)
                assert out is not None, "planned serially"
            else:
                out = reader.partitions()
    except Exception as e:  # noqa: BLE001 - compared with the other planning's
        out = (type(e), str(e))
    return out, [(r.name, r.levelno, r.getMessage()) for r in caplog.records]


def _assert_same(options: dict[str, str], caplog: pytest.LogCaptureFixture, filters: list | None = None) -> object:
    serial, serial_log = _planned(options, False, caplog, filters)
    parallel, parallel_log = _planned(options, True, caplog, filters)
    assert parallel_log == serial_log
    if isinstance(serial, tuple):
        assert parallel == serial
    else:
        assert pickle.dumps(parallel) == pickle.dumps(serial)  # the same input partitions, down to their bytes
        assert [pickle.dumps(p) for p in parallel] == [pickle.dumps(p) for p in serial]  # type: ignore[attr-defined]
    return serial


def test_data_loss_fails_both_plannings_at_the_first_partition(data: Path, caplog: pytest.LogCaptureFixture) -> None:
    err = _assert_same({"path": str(data)}, caplog)
    # the first partition whose offsets planning finds lost (many-23's lost tail is found as its last segment is read)
    assert err[0] is DataLossError and f"many-{NO_LOG_ALONE}: offsets 102 to 145" in err[1]  # type: ignore[index]


@pytest.mark.parametrize(
    "options",
    [
        {"failOnDataLoss": "false"},
        # a split of 1,950 bytes: segments of 2 KB cut here, of 1.8 KB (at most openCostInBytes) by the workers
        {"failOnDataLoss": "false", "openCostInBytes": "1900", "maxBytesPerPartition": "1950", "minPartitions": "1"},
        # a split of 3,000 bytes: no segment cut, but those above openCostInBytes cut here
        {"failOnDataLoss": "false", "openCostInBytes": "1000", "maxBytesPerPartition": "3000", "minPartitions": "1"},
        {"failOnDataLoss": "false", "maxBytesPerPartition": "700"},  # the least split below openCostInBytes: every segment cut
        # many-12 starts beyond its log end (a warning)
        {"subscribe": "many", "startingOffsets": '{"many": {"3": 60, "12": 400}}', "endingOffsets": '{"many": {"5": 120}}', "failOnDataLoss": "false"},
        {"assign": '{"many": [1, 2, 77]}', "failOnDataLoss": "false"},  # many-77 is named but absent
        {"failOnDataLoss": "false", "isolationLevel": "read_committed"},
        {"subscribePattern": "bad.*"},
    ],
)
def test_planning_in_processes_plans_as_the_serial_planning(data: Path, options: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    out = _assert_same({"path": f"{data}/d1,{data}/d2", **options}, caplog)
    assert isinstance(out, list) and out


def test_workers_from_the_server_of_a_process_that_runs_threads(data: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    # a process that runs another thread is not forked: its workers come from ordered_map's server
    monkeypatch.setattr(processes, "_forkable", lambda: False)
    _assert_same({"path": f"{data}/d1,{data}/d2", "failOnDataLoss": "false", "openCostInBytes": "1900", "maxBytesPerPartition": "1950"}, caplog)
    err = _assert_same({"path": str(data)}, caplog)
    assert err[0] is DataLossError  # type: ignore[index]


def test_pushed_filters_and_a_named_partition_missing(data: Path, caplog: pytest.LogCaptureFixture) -> None:
    from pyspark.sql.datasource import EqualTo, GreaterThan, In

    filters = [In(("partition",), (1, 2, 3, 23, 31)), GreaterThan(("offset",), 100), EqualTo(("topic",), "many")]
    _assert_same({"path": str(data), "failOnDataLoss": "false"}, caplog, filters)
    err = _assert_same({"path": str(data), "assign": '{"many": [3, 90]}'}, caplog)
    assert err[0] is DataLossError and "many-90" in err[1]  # type: ignore[index]


def test_a_later_path_that_is_missing_is_met_after_the_earlier_paths_are_planned(data: Path, caplog: pytest.LogCaptureFixture) -> None:
    # the serial planning logs what the first path holds (a refused topic name), then fails on the second
    options = {"path": f"{data}/d1,{data}/no-such-dir", "failOnDataLoss": "false"}
    assert processes.plan_in_processes(KafkaLogReader({**options, "planningJobs": "2"}, source_schema())._planner) is None
    caplog.clear()
    with caplog.at_level(logging.INFO), pytest.raises(LayoutError, match="no-such-dir"):
        KafkaLogReader({**options, "planningJobs": "2"}, source_schema()).partitions()
    assert any("bad topic!" in r.getMessage() for r in caplog.records)


def test_a_logger_that_does_not_propagate_gets_the_workers_records_in_order(data: Path, caplog: pytest.LogCaptureFixture,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            got.append(record.getMessage())

    logger = logging.getLogger("kafkalog_spark")
    monkeypatch.setattr(logger, "propagate", False)
    monkeypatch.setattr(logger, "handlers", [Keep()])
    logged = []
    for jobs in ("1", "2"):
        got.clear()
        with caplog.at_level(logging.INFO, logger="kafkalog_spark"):
            KafkaLogReader({"path": f"{data}/d1,{data}/d2", "failOnDataLoss": "false", "planningJobs": jobs}, source_schema()).partitions()
        logged.append(list(got))
    assert logged[0] and logged[1] == logged[0]


def test_tiered_objects_on_one_path_and_the_broker_dirs_of_their_partition_on_another_are_merged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    # the plug-in's objects of golden-0 (offsets 0 to 189) under one path, a data dir holding golden-0
    # from offset 146 and other partitions under the other: both copies of golden-0 are read, once each offset
    broker = many_partitions(tmp_path / "broker", 10)
    shutil.copytree(GOLDEN_0, broker / "golden-0", copy_function=os.link)
    for f in (broker / "golden-0").iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) <= 102:
            f.unlink()
    options = {"path": f"{GOLDEN / 'tiered' / 'aiven' / 'plain'},{broker}", "failOnDataLoss": "false"}
    planned = []
    for jobs in ("1", "2"):
        caplog.clear()
        with caplog.at_level(logging.INFO):
            packs = KafkaLogReader({**options, "planningJobs": jobs}, source_schema()).partitions()
        planned.append((pickle.dumps(packs), [(r.name, r.levelno, r.getMessage()) for r in caplog.records]))
    assert planned[1] == planned[0]
    golden0 = [sl for p in pickle.loads(planned[0][0]) for sl in p.slices if sl.topic == "golden"]
    assert {sl.tiered for sl in golden0} == {True, False}


def test_a_logged_exception_keeps_its_traceback(data: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkalog_spark import layout

    listed = layout._replica

    def failing(fs: object, dir_path: str, *args: object) -> object:
        if dir_path.endswith("d1/many-3"):
            try:
                int("not a number")
            except ValueError:
                logging.getLogger("kafkalog_spark.probe").exception("while listing %s", dir_path)
        return listed(fs, dir_path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(layout, "_replica", failing)  # inherited by the forked workers
    monkeypatch.setattr(processes, "_forkable", lambda: True)
    texts = []
    for parallel in (False, True):
        _planned({"path": f"{data}/d1,{data}/d2", "failOnDataLoss": "false"}, parallel, caplog)
        texts.append([logging.Formatter().format(r) for r in caplog.records if r.name == "kafkalog_spark.probe"])
    assert len(texts[0]) == 1 and "Traceback" in texts[0][0] and "ValueError: invalid literal" in texts[0][0]
    assert texts[1] == texts[0]


def test_a_worker_killed_leaves_the_planning_to_one_process(data: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    planned = processes._planned_run

    def killed(task: tuple) -> object:
        if any(d.endswith("many-3") for _, d in task[1]):
            os.kill(os.getpid(), signal.SIGKILL)
        return planned(task)

    monkeypatch.setattr(processes, "_planned_run", killed)  # inherited by the forked workers
    monkeypatch.setattr(processes, "_forkable", lambda: True)  # forked even beside pytest-xdist's thread: a server's workers would not inherit the patch
    options = {"path": f"{data}/d1,{data}/d2", "failOnDataLoss": "false"}
    assert processes.plan_in_processes(KafkaLogReader({**options, "planningJobs": "2"}, source_schema())._planner) is None
    serial = KafkaLogReader({**options, "planningJobs": "1"}, source_schema()).partitions()
    assert pickle.dumps(KafkaLogReader({**options, "planningJobs": "2"}, source_schema()).partitions()) == pickle.dumps(serial)


def test_few_dirs_a_root_that_is_a_partition_or_a_dir_inside_one_are_planned_serially(
    data: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def parallel(path: str) -> object:
        return processes.plan_in_processes(KafkaLogReader({"path": path, "planningJobs": "2", "failOnDataLoss": "false"}, source_schema())._planner)

    monkeypatch.setattr(processes, "PARALLEL_PLANNING", 12)
    assert parallel(f"{data}/d2") is None  # 11 partition dirs: too few
    monkeypatch.setattr(processes, "PARALLEL_PLANNING", 8)
    assert parallel(f"{data}/d2") is not None
    assert parallel(f"{data}/d1/many-3") is None  # a partition dir
    nested = tmp_path / "nested"
    shutil.copytree(data / "d1", nested, copy_function=os.link)
    shutil.copytree(GOLDEN_0, nested / "many-5" / "inner-0", copy_function=os.link)  # discovery reads inner-0 too
    assert parallel(str(nested)) is None
    monkeypatch.setattr(processes, "PARALLEL_PLANNING", 1 << 30)
    serial = KafkaLogReader({"path": str(nested), "failOnDataLoss": "false"}, source_schema()).partitions()
    monkeypatch.setattr(processes, "PARALLEL_PLANNING", 8)
    assert KafkaLogReader({"path": str(nested), "failOnDataLoss": "false", "planningJobs": "2"}, source_schema()).partitions() == serial
    assert any(sl.topic == "inner" for p in serial for sl in p.slices)  # type: ignore[attr-defined]


def test_planning_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    from kafkalog.dataset.processes import default_jobs
    from kafkalog_spark.options import parse_options

    opts = parse_options({"path": "/x"})
    script = types.ModuleType("__main__")
    script.__file__ = "/tmp/job.py"  # a script that starting a worker process runs again
    monkeypatch.setitem(sys.modules, "__main__", script)
    assert processes.planning_jobs(opts) == 1
    assert processes.planning_jobs(parse_options({"path": "/x", "planningJobs": "3"})) == 3
    script.__spec__ = types.SimpleNamespace(name="pyspark.daemon")  # type: ignore[assignment] - Spark's Python worker
    assert processes.planning_jobs(opts) == default_jobs()


@pytest.mark.spark
def test_planning_in_processes_inside_a_spark_session(spark, data: Path) -> None:  # noqa: ANN001 - fixture
    # Spark plans a Python source in a Python worker of its own (pyspark.daemon's): the probe plans
    # there, in processes and serially, and returns what it found as a row
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class ProbeReader(DataSourceReader):
        def __init__(self, options: dict[str, str]) -> None:
            self.options = options

        def partitions(self) -> list[InputPartition]:
            import sys

            from kafkalog_spark import processes
            from kafkalog_spark.source import KafkaLogReader, source_schema

            processes.PARALLEL_PLANNING = 8
            options = {**self.options, "failOnDataLoss": "false"}
            parallel = processes.plan_in_processes(KafkaLogReader(options, source_schema())._planner)
            serial = KafkaLogReader({**options, "planningJobs": "1"}, source_schema()).partitions()
            main = sys.modules["__main__"].__spec__.name
            return [InputPartition((parallel is not None, parallel == serial, len(serial), main))]

        def read(self, partition: InputPartition):  # noqa: ANN201 - rows
            yield partition.value

    class Probe(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kafkalogprobe"

        def schema(self) -> str:
            return "processes boolean, same boolean, packs int, main string"

        def reader(self, schema: object) -> DataSourceReader:
            return ProbeReader(dict(self.options))

    spark.dataSource.register(Probe)
    row = spark.read.format("kafkalogprobe").load(str(data)).collect()[0]
    assert (row.processes, row.same, row.main) == (True, True, "pyspark.daemon")
    assert row.packs > 0
