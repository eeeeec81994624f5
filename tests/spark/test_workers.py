"""``kafkalog_spark.register`` checks that Spark's Python workers can import ``kafkalog_spark``
(issue 27: a job run as ``.venv/bin/python job.py``, venv not activated, failed at its first read
with a pickling traceback, because Spark's workers ran ``python3`` from PATH)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from helpers import GOLDEN
from kafkalog_spark import WorkerPythonError
from kafkalog_spark.workers import check_workers, worker_pythons


def _python_without_kafkalog() -> str:
    """An interpreter on this machine that cannot find kafkalog_spark (the system's python3)."""
    for name in ("python3", "/usr/bin/python3"):
        exe = shutil.which(name, path=os.defpath + os.pathsep + os.environ.get("PATH", ""))
        if exe is None or os.path.abspath(exe) == os.path.abspath(sys.executable):
            continue
        probe = subprocess.run([exe, "-c", "import importlib.util as u; print(u.find_spec('kafkalog_spark') is None)"],
                               capture_output=True, text=True, check=False, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        if probe.stdout.strip() == "True":
            return exe
    pytest.skip("no interpreter without kafkalog_spark on this machine")


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.values.get(key, default)


class _Session:
    """What check_workers reads of a SparkSession: its conf (no JVM: the process environment)."""

    def __init__(self, **conf: str) -> None:
        self.conf = _Conf({"spark.master": "local[2]", **conf})

    @property
    def sparkContext(self):  # noqa: ANN201, N802 - pyspark's name
        raise RuntimeError("no JVM")


def test_which_interpreters_spark_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    assert worker_pythons(_Session()) == [("python3", "PYSPARK_PYTHON (unset: Spark runs python3 from PATH)")]
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/a/python")
    assert worker_pythons(_Session()) == [("/opt/a/python", "PYSPARK_PYTHON")]
    assert worker_pythons(_Session(**{"spark.pyspark.python": "/opt/b/python", "spark.pyspark.driver.python": "/opt/a/python"})) == [
        ("/opt/b/python", "spark.pyspark.python"), ("/opt/a/python", "spark.pyspark.driver.python")]


def test_this_interpreter_passes_and_another_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", sys.executable)
    check_workers(_Session())
    other = _python_without_kafkalog()
    monkeypatch.setenv("PYSPARK_PYTHON", other)
    # as _python_without_kafkalog asked it: a PYTHONPATH another test left naming spark_ext would let it find kafkalog_spark
    monkeypatch.delenv("PYTHONPATH", raising=False)
    with pytest.raises(WorkerPythonError) as info:
        check_workers(_Session())
    msg = str(info.value)
    assert f"run {other}, named by PYSPARK_PYTHON, and it cannot import kafkalog_spark" in msg
    assert f"PYSPARK_PYTHON={sys.executable}" in msg
    check_workers(_Session(**{"spark.master": "spark://elsewhere:7077"}))  # a cluster's workers are not checked here


JOB = textwrap.dedent('''
    import sys
    from pyspark.sql import SparkSession
    import kafkalog_spark
    spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        kafkalog_spark.register(spark)
        print("REGISTERED")
    except kafkalog_spark.WorkerPythonError as e:
        print("ERROR", e)
    kafkalog_spark.register(spark, check_workers=False)  # what the check spares the user:
    try:
        spark.read.format("kafkalog").load(sys.argv[1]).count()
        print("READ OK")
    except Exception as e:
        print("READ FAILED", "No module named" in str(e))
    spark.stop()
''')


def test_a_real_session_with_workers_on_another_python(tmp_path) -> None:  # noqa: ANN001 - fixture
    """A SparkSession of its own (a process of its own: the suite's session runs this interpreter's
    workers) whose PYSPARK_PYTHON has no kafkalog_spark: register names it, and a read fails."""
    pytest.importorskip("pyspark.sql")
    import spark_cluster

    if (why := spark_cluster.java_missing()) is not None:
        pytest.skip(why)
    other = _python_without_kafkalog()
    env = spark_cluster.submit_env({**os.environ, "PYSPARK_PYTHON": other, "PYSPARK_DRIVER_PYTHON": other})
    job = tmp_path / "job.py"
    job.write_text(JOB)
    proc = subprocess.run([sys.executable, str(job), str(GOLDEN / "kafka" / "logdir" / "golden-0")],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert any(line.startswith("ERROR Spark's Python workers run") and f"PYSPARK_PYTHON={sys.executable}" in line for line in lines), lines
    assert "READ FAILED True" in lines, (lines, proc.stderr[-3000:])
