"""`./run demo`: without Java the Spark step says in one line why it is skipped, and the demo goes on;
with Java it prints Spark's table and nothing of Spark's logging."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import spark_cluster
from helpers import REPO

SAMPLE = "golden/real/cp-latest-weebee/kafka/data"


def _path_without_java(tmp_path: Path) -> str:
    """A PATH with every command of the current one except ``java`` (links in one folder)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            target = os.path.join(d, name)
            if name != "java" and not (bin_dir / name).exists() and os.access(target, os.X_OK) and os.path.isfile(target):
                (bin_dir / name).symlink_to(target)
    return str(bin_dir)


def _spark_step(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # the Python given is never run when Java is missing: the step stops before it
    return subprocess.run(["bash", str(REPO / "run"), "demo-spark", "/nonexistent/python", SAMPLE],
                          capture_output=True, text=True, env=env, check=False, timeout=60)


def test_spark_step_without_java_is_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = _path_without_java(tmp_path)
    proc = _spark_step(env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr == "== Spark step skipped: no Java: java is not on PATH and JAVA_HOME is unset (the rest of the demo needs no Java)\n"


def test_spark_step_with_an_old_java_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "jdk11"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text('#!/bin/sh\necho \'openjdk version "11.0.22" 2024-01-16\' >&2\n')
    java.chmod(0o755)
    env = {**os.environ, "JAVA_HOME": str(home), "PATH": _path_without_java(tmp_path)}
    proc = _spark_step(env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"== Spark step skipped: {java} is Java 11, and pyspark needs 17 or later (the rest of the demo needs no Java)\n"



@pytest.mark.spark
def test_spark_step_prints_only_the_table() -> None:
    """With Java and pyspark: no log4j lines, JVM warnings or progress bar, only the step's header
    line on stderr and Spark's table on stdout (the sample's two topics, 3 records each). Its JVM
    runs with the suite's options (``spark_cluster.JVM_OPTIONS``, which print nothing)."""
    import sys

    try:
        import pyspark  # noqa: F401
    except ImportError:
        pytest.skip("pyspark is not installed")
    proc = subprocess.run(["bash", str(REPO / "run"), "demo-spark", sys.executable, SAMPLE],
                          capture_output=True, text=True, check=False, timeout=900, cwd=REPO, env=spark_cluster.submit_env(dict(os.environ)))
    if proc.stderr.startswith("== Spark step skipped:"):
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == '== the same data dir read with Spark: spark.read.format("kafkalog")\n'
    assert proc.stdout.splitlines() == [
        "+-------------------+-----+",
        "|topic              |count|",
        "+-------------------+-----+",
        "|clustering_results |3    |",
        "|clustering_userRank|3    |",
        "+-------------------+-----+",
        "",
    ]
