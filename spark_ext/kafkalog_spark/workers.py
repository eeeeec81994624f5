"""Can Spark's Python workers import ``kafkalog_spark``? Checked once by :func:`kafkalog_spark.register`.

Spark runs a Python data source in worker processes it starts itself, with the interpreter named
by ``spark.pyspark.python`` / ``spark.pyspark.driver.python`` or the ``PYSPARK_PYTHON`` /
``PYSPARK_DRIVER_PYTHON`` variables the JVM was started with, else ``python3`` from ``PATH``: not
necessarily the interpreter that runs the job. A job started as ``.venv/bin/python job.py``
without activating the venv therefore has workers that cannot import ``kafkalog_spark``, and the
first read fails deep in Spark with a pickling traceback. :func:`check_workers` finds this before
any read, for a local master, by asking each of those interpreters whether it can find the
modules (no import, so it takes a few milliseconds), and raises one error naming the interpreter
to use. On a cluster the workers' interpreters live on other machines and are not checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

from .errors import WorkerPythonError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["check_workers", "worker_pythons"]

#: what a Python data source's worker imports: this package, the codec and Arrow
NEEDED = ("kafkalog_spark", "kafkalog", "pyarrow")
_FIND = "import importlib.util, sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"


def worker_pythons(spark: SparkSession) -> list[tuple[str, str]]:
    """The interpreters Spark starts Python workers with, each with the setting that names it:
    the executors' (``spark.pyspark.python``, else ``PYSPARK_PYTHON``) and the driver-side
    planner's (``spark.pyspark.driver.python``, else ``PYSPARK_DRIVER_PYTHON``), falling back to
    each other and to ``python3``. The variables are the JVM's, fixed when it started."""
    conf = spark.conf
    env = _jvm_env(spark)
    executor = conf.get("spark.pyspark.python", None)
    driver = conf.get("spark.pyspark.driver.python", None)
    py, dpy = env.get("PYSPARK_PYTHON"), env.get("PYSPARK_DRIVER_PYTHON")
    out: list[tuple[str, str]] = []
    for value, setting in (
        (executor, "spark.pyspark.python"), (None if executor else py, "PYSPARK_PYTHON"),
        (driver, "spark.pyspark.driver.python"), (None if driver else dpy, "PYSPARK_DRIVER_PYTHON"),
    ):
        if value and value not in (v for v, _ in out):
            out.append((value, setting))
    if not out:
        out.append(("python3", "PYSPARK_PYTHON (unset: Spark runs python3 from PATH)"))
    return out


def _jvm_env(spark: SparkSession) -> dict[str, str]:
    """``PYSPARK_PYTHON`` and ``PYSPARK_DRIVER_PYTHON`` as the JVM sees them (it inherited this
    process's environment when it started; later changes to ``os.environ`` do not reach it)."""
    names = ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
    try:
        system = spark.sparkContext._jvm.System  # type: ignore[union-attr]
        return {n: v for n in names if (v := system.getenv(n))}
    except Exception:  # noqa: BLE001 - no JVM gateway here (Spark Connect): this process's environment
        return {n: v for n in names if (v := os.environ.get(n))}


def _is_local(spark: SparkSession) -> bool:
    master = spark.conf.get("spark.master", None) or ""
    return master.startswith("local")


def check_workers(spark: SparkSession) -> None:
    """Raise :class:`~kafkalog_spark.errors.WorkerPythonError` when an interpreter Spark starts
    Python workers with (:func:`worker_pythons`) cannot find ``kafkalog_spark``, ``kafkalog`` or
    ``pyarrow``. Only for a local master (``local``, ``local[N]``); this interpreter is not asked."""
    if not _is_local(spark):
        return
    for python, setting in worker_pythons(spark):
        exe = shutil.which(python)
        if exe is not None and os.path.abspath(exe) == os.path.abspath(sys.executable):
            continue
        missing = _missing(exe) if exe is not None else ["the interpreter itself: not found"]
        if missing:
            shown = python if exe is None or exe == python else f"{python} ({exe})"
            raise WorkerPythonError(
                f"Spark's Python workers run {shown}, named by {setting}, and it cannot import {', '.join(missing)}: "
                f"a kafkalog read would fail in the workers. Start the job with PYSPARK_PYTHON={sys.executable} "
                f"(and PYSPARK_DRIVER_PYTHON={sys.executable}) in the environment, or activate this virtual environment, "
                "before the SparkSession starts, or install kafkalog[spark] into that interpreter"
            )


def _missing(exe: str) -> list[str]:
    """The modules of :data:`NEEDED` that ``exe`` cannot find (its ``PYTHONPATH`` is this
    process's, as Spark passes it on to local workers)."""
    try:
        proc = subprocess.run([exe, "-c", _FIND, *NEEDED], capture_output=True, text=True, timeout=60, check=False)
    except OSError as e:
        return [f"the interpreter itself: {e.strerror or e}"]
    if proc.returncode != 0:
        return [f"the interpreter itself: it exits {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] or ''}"]
    return proc.stdout.split()
