"""A Spark standalone cluster on 127.0.0.1 for the tests: one master and two 1-core workers,
started from pyspark's own ``bin/spark-class`` (the same jars the driver uses), each a JVM of its
own, so executors and their Python workers share nothing in memory with the test process."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

#: How long the master and both workers get to come up (JVM start-up on a loaded 2-core machine).
START_TIMEOUT_S = 120.0

#: Options of every JVM the tests start: the suite's driver, the cluster's master, workers and
#: executors, and the Spark jobs tests run in processes of their own (``SPARK_SUBMIT_OPTS``). The
#: client compiler (C1) alone: these JVMs live seconds to minutes over little data, and C2's
#: compilations cost them more CPU than its faster code saves (the demo's Spark step took 44
#: CPU-seconds, 28 with C1 alone). What Spark computes does not depend on the JIT. bench/spark.py's
#: ``--cluster`` gets C1 masters and workers too: they only schedule, its executors keep C2.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1"


def submit_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` for a process that starts a Spark driver itself (``spark-submit`` reads
    ``SPARK_SUBMIT_OPTS``), with :data:`JVM_OPTIONS` after the options it names already."""
    return {**env, "SPARK_SUBMIT_OPTS": f"{env.get('SPARK_SUBMIT_OPTS', '')} {JVM_OPTIONS}".strip()}


def spark_home() -> Path:
    """The directory of the installed pyspark, which holds ``bin/spark-class`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def java_missing() -> str | None:
    """Why the cluster cannot start here (no ``java``), or None."""
    if os.environ.get("JAVA_HOME") and Path(os.environ["JAVA_HOME"], "bin", "java").exists():
        return None
    return None if shutil.which("java") else "no Java: the Spark tests need a JDK 17 (java on PATH or JAVA_HOME)"


def _wait_for(log: Path, pattern: str, proc: subprocess.Popen, what: str, deadline: float) -> re.Match[str]:
    """The first match of ``pattern`` in the growing ``log`` of ``proc``; fails with the log's tail
    when the process exits or the deadline passes."""
    rx = re.compile(pattern)
    while True:
        text = log.read_text(errors="replace") if log.exists() else ""
        m = rx.search(text)
        if m:
            return m
        if proc.poll() is not None or time.monotonic() > deadline:
            state = f"exited with {proc.returncode}" if proc.returncode is not None else "did not start in time"
            raise RuntimeError(f"Spark {what} {state}; last lines of {log}:\n" + "\n".join(text.splitlines()[-30:]))
        time.sleep(0.2)


@dataclass
class StandaloneCluster:
    """A running master and its workers; :meth:`stop` ends every JVM it started."""

    url: str
    log_dir: Path
    procs: list[subprocess.Popen] = field(default_factory=list)

    def stop(self) -> None:
        """Workers first, then the master: SIGTERM to each process group, SIGKILL after 20 s."""
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def start_cluster(log_dir: Path, workers: int = 2, cores: int = 1, worker_memory: str = "2g") -> StandaloneCluster:
    """Start a master and ``workers`` workers of ``cores`` cores on 127.0.0.1, on free ports (port
    0: each JVM binds what the kernel gives and logs it), with their logs and work dirs in
    ``log_dir``. Returns once every worker has registered with the master."""
    home = spark_home()
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
               SPARK_DAEMON_JAVA_OPTS=JVM_OPTIONS, SPARK_LOG_DIR=str(log_dir), SPARK_CONF_DIR=str(log_dir / "conf"))
    env.pop("SPARK_MASTER_HOST", None)
    (log_dir / "conf").mkdir(parents=True, exist_ok=True)
    spark_class = str(home / "bin" / "spark-class")
    cluster = StandaloneCluster("", log_dir)
    deadline = time.monotonic() + START_TIMEOUT_S

    def launch(name: str, *args: str) -> tuple[subprocess.Popen, Path]:
        log = log_dir / f"{name}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(["bash", spark_class, *args], env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        cluster.procs.append(proc)
        return proc, log

    try:
        master, master_log = launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0")
        cluster.url = _wait_for(master_log, r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", master, "master", deadline)[1]
        for i in range(workers):
            work = log_dir / f"work-{i}"
            work.mkdir()
            launch(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--port", "0", "--webui-port", "0",
                   "--cores", str(cores), "--memory", worker_memory, "--work-dir", str(work), cluster.url)
        for i in range(workers):
            _wait_for(log_dir / f"worker-{i}.log", r"Successfully registered with master", cluster.procs[1 + i], f"worker {i}", deadline)
    except BaseException:
        cluster.stop()
        raise
    return cluster
