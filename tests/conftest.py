"""Session-wide test configuration: ../shared detection, the compiled core's check and the
``kernels`` fixture (both implementations in one run), one SparkSession at a time (local[2], or on a
Spark standalone cluster for the tests marked ``cluster``) and an S3 server."""

from __future__ import annotations

import concurrent.futures
import importlib
import os
import sys
import time
from collections.abc import Iterator

import pytest

import spark_cluster
from helpers import REPO, SHARED


def pytest_configure(config):  # noqa: ANN001, ANN201 - pytest hook
    """``@pytest.mark.rule("R-XXX-NN", ...)``: the SPEC.md rules a test exercises (tests/test_spec_rules.py)."""
    config.addinivalue_line("markers", "rule(*ids): SPEC.md rule ids this test exercises")


def pytest_report_header(config):  # noqa: ANN001, ANN201 - pytest hook
    state = "present" if SHARED.exists() else "ABSENT: tests over it are skipped"
    from kafkalog import fast

    core = "disabled by KAFKALOG_NO_EXTENSIONS: pure Python only" if fast.DISABLED else "compiled (c-extension) and pure-python"
    return [f"kafkalog shared data: {SHARED} ({state})", f"kafkalog kernels: {core}"]


def pytest_sessionstart(session):  # noqa: ANN001, ANN201 - pytest hook
    """Fail loudly when a compiled module of the source tree did not load (a build that fell back
    to pure Python, a stale or missing ``.so``): the suite would otherwise test the plain path
    twice and pass. ``KAFKALOG_NO_EXTENSIONS=1`` tests the pure-Python path on purpose."""
    from kafkalog import fast

    if fast.DISABLED:
        return
    problems = []
    for pyx in sorted((REPO / "codec" / "kafkalog" / "fast").glob("*.pyx")):
        try:
            importlib.import_module(f"kafkalog.fast.{pyx.stem}")
        except ImportError as e:
            problems.append(f"kafkalog.fast.{pyx.stem}: {e}")
    if problems:
        raise pytest.UsageError(
            "the compiled core did not load (" + "; ".join(problems) + "). Rebuild it in place with "
            "`pip install -e .` (./run test does when a .pyx changes), or set KAFKALOG_NO_EXTENSIONS=1 "
            "to test the pure-Python path alone."
        )


@pytest.fixture(params=["c-extension", "pure-python"])
def kernels(request, monkeypatch):  # noqa: ANN001, ANN201 - fixture
    """Run the test once with each implementation of the columnar and verify kernels
    (``kafkalog.fast.columnar.kernels``) and of the listing of directories: the compiled ones, then
    the plain Python they must match.
    Commands the test starts follow suit (``KAFKALOG_NO_EXTENSIONS`` set for the pure-Python run)."""
    from kafkalog.fast import columnar

    impl = columnar.COMPILED if request.param == "c-extension" else columnar.PURE
    if impl is None:
        pytest.skip("the compiled core is disabled (KAFKALOG_NO_EXTENSIONS)")
    monkeypatch.setattr(columnar, "kernels", impl)
    if impl is columnar.PURE:
        from kafkalog.format import files

        monkeypatch.setattr(files, "_dir_lister", None)  # the plain listing of directories too
        monkeypatch.setenv("KAFKALOG_NO_EXTENSIONS", "1")
    else:
        monkeypatch.delenv("KAFKALOG_NO_EXTENSIONS", raising=False)
    return impl


#: Whether the run's selected tests include any on the standalone cluster (set after collection).
CLUSTER_TESTS = pytest.StashKey[bool]()


class SparkSessions:
    """The test process's one SparkContext, on ``local[2]`` or on the standalone cluster.

    A process may hold only one SparkContext, so switching mode stops the current session and
    starts the other (about a second: the driver JVM stays). The cluster (tests/spark_cluster.py)
    stops with the test session; tests run on it last, so it switches once. When the run has
    cluster tests, the cluster's master and workers start in the background with the first
    session, while the local tests run: its JVMs' start-up is then off the Spark tests' path (they
    all run on one worker, the run's longest).
    """

    def __init__(self, log_dir_factory, cluster_wanted: bool = False) -> None:  # noqa: ANN001 - pytest's TempPathFactory
        self._log_dir_factory = log_dir_factory
        self._cluster_wanted = cluster_wanted
        self._starting: concurrent.futures.Future | None = None
        self.mode: str | None = None
        self.session = None
        self.cluster = None

    def _start_cluster(self) -> None:
        """Start the cluster in a thread of its own (at most once); :meth:`_cluster` waits for it."""
        if self._starting is None:
            log_dir = self._log_dir_factory.mktemp("spark-cluster")
            pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="spark-cluster")
            self._starting = pool.submit(spark_cluster.start_cluster, log_dir)
            pool.shutdown(wait=False)

    def _cluster(self) -> spark_cluster.StandaloneCluster:
        """The running cluster: started now, or the background start's (its error, when it failed)."""
        if self.cluster is None:
            self._start_cluster()
            assert self._starting is not None
            self.cluster = self._starting.result()
        return self.cluster

    def get(self, mode: str) -> object:
        """The SparkSession for ``mode`` (``local`` or ``cluster``), with kafkalog's source registered."""
        if mode == self.mode:
            return self.session
        pyspark_sql = pytest.importorskip("pyspark.sql", reason="pyspark is not installed (extra [spark])")
        if (why := spark_cluster.java_missing()) is not None:
            pytest.skip(why)
        if self.session is not None:
            self.session.stop()
            self.session = self.mode = None
        # Python workers run this interpreter: executors inherit it from the driver's setting
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        builder = (
            pyspark_sql.SparkSession.builder.appName(f"kafkalog-tests-{mode}")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.memory", "2g")
            .config("spark.sql.session.timeZone", "UTC")
            # read once, by the first session's spark-submit, which starts the driver JVM
            .config("spark.driver.extraJavaOptions", spark_cluster.JVM_OPTIONS)
        )
        if mode == "local":
            builder = builder.master("local[2]")
            if self._cluster_wanted:
                self._start_cluster()
        else:
            builder = (
                builder.master(self._cluster().url)
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.executor.cores", "1")
                .config("spark.executor.memory", "1g")
                .config("spark.executor.extraJavaOptions", spark_cluster.JVM_OPTIONS)
                .config("spark.cores.max", "2")
            )
        session = builder.getOrCreate()
        if mode == "cluster":
            self._await_executors(session, 2)
        import kafkalog_spark

        kafkalog_spark.register(session)
        self.session, self.mode = session, mode
        return session

    def _await_executors(self, session, count: int) -> None:  # noqa: ANN001 - SparkSession
        """Wait until ``count`` executors joined the application: a job would otherwise wait for
        resources without end."""
        deadline = time.monotonic() + spark_cluster.START_TIMEOUT_S
        while session._jsc.sc().getExecutorMemoryStatus().size() < count + 1:  # the driver is listed too
            if time.monotonic() > deadline:
                session.stop()
                self.session = self.mode = None
                raise RuntimeError(f"the cluster's executors did not start; logs in {self.cluster.log_dir}")
            time.sleep(0.2)

    def close(self) -> None:
        """Stop the session, then the cluster's JVMs (once a background start has ended)."""
        if self.session is not None:
            self.session.stop()
        if self.cluster is None and self._starting is not None and self._starting.exception() is None:
            self.cluster = self._starting.result()
        if self.cluster is not None:
            self.cluster.stop()


@pytest.fixture(scope="session")
def spark_sessions(request, tmp_path_factory) -> Iterator[SparkSessions]:  # noqa: ANN001 - fixture
    sessions = SparkSessions(tmp_path_factory, cluster_wanted=request.config.stash.get(CLUSTER_TESTS, False))
    yield sessions
    sessions.close()


@pytest.fixture
def spark(request, spark_sessions: SparkSessions) -> object:  # noqa: ANN001 - fixture
    """A SparkSession with kafkalog's source registered: local[2] (the one session of the whole
    run), or the standalone cluster's for tests marked ``cluster``, which run once on each."""
    return spark_sessions.get(getattr(request, "param", "local"))


def pytest_generate_tests(metafunc):  # noqa: ANN001, ANN201 - pytest hook
    """``@pytest.mark.cluster``: run the test on local[2] and again on the standalone cluster."""
    if "spark" in metafunc.fixturenames and metafunc.definition.get_closest_marker("cluster"):
        metafunc.parametrize("spark", ["local", "cluster"], indirect=True)


def pytest_itemcollected(item):  # noqa: ANN001, ANN201 - pytest hook
    """Run every test that uses Spark on one xdist worker, so that only one driver starts."""
    if "spark" in getattr(item, "fixturenames", ()):
        item.add_marker(pytest.mark.xdist_group("spark"))
        item.add_marker(pytest.mark.spark)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):  # noqa: ANN001, ANN201 - pytest hook
    """Tests on the standalone cluster run last (after pytest's own ordering), so the Spark
    session switches to the cluster once."""
    def on_cluster(item: pytest.Item) -> bool:
        return getattr(item, "callspec", None) is not None and item.callspec.params.get("spark") == "cluster"

    items.sort(key=on_cluster)
    config.stash[CLUSTER_TESTS] = any(map(on_cluster, items))


@pytest.fixture(scope="session")
def s3(tmp_path_factory) -> Iterator[object]:  # noqa: ANN001 - fixture
    """moto's S3 server on 127.0.0.1 (tests/s3_server.py), in a process of its own, logging each
    request so that tests can count the bytes clients fetched; stopped after the session."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed (extra [dev])")
    pytest.importorskip("s3fs", reason="s3fs is not installed (extra [s3])")
    import s3_server

    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"  # no credential lookups beyond 127.0.0.1
    server = s3_server.start(tmp_path_factory.mktemp("s3") / "requests.jsonl")
    yield server
    server.stop()
