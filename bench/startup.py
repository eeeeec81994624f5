#!/usr/bin/env python
"""The compiled core's figures in one run (issue #29): start-up, import, record decoding, verify.

Rows, all measured in this run:

1. **start-up**: wall time, CPU time and peak RSS (the process's own, read at its exit) of fresh processes: ``python -c pass`` (the interpreter
   alone), ``import kafkalog``, ``import aiokafka.record.default_records`` (a peer's decoder), and
   the small commands: ``kafkalog --version``, ``--help``, ``dump`` and ``dump --json`` of a small
   segment (``golden/kafka/records/v2-none``), ``explain`` of it, ``info``, ``cat`` and ``verify`` of
   ``golden/kafka/logdir/golden-0``. The children run this tree's ``codec`` with bytecode cached, as
   an installed package has its ``.pyc`` files (``PYTHONDONTWRITEBYTECODE`` without a ``__pycache__``
   would time the compiler): an untimed run of each command first writes it to a scratch
   ``PYTHONPYCACHEPREFIX`` (the trees stay untouched), so the first timed run, listed apart, should
   match the others (kafkalog compiles or caches nothing at run time). ``--against DIR`` runs the
   same rows with another checkout's ``codec`` (e.g. the main branch), interleaved with this one's,
   and adds its columns and the ratio of the medians: the comparison to make on a loaded machine.
2. **decode**: records/s of kafkalog's objects, columnar and columnar views paths against
   aiokafka's Cython decoder and kafka-python on the standard workload (200,000 records of 100-byte
   values and 16-byte keys, 1,000 a batch, no codec): :func:`decode.run_workload`, interleaved,
   best of ``--repeat``.
3. **verify**: MB/s of :func:`kafkalog.tools.validate.verify` on a generated partition against the
   floor of reading the file and computing every batch's CRC-32C (:mod:`verify`'s rows).

Which kernels run (compiled or pure Python) is printed first; ``KAFKALOG_NO_EXTENSIONS=1`` measures
the pure-Python path. Take figures from an idle machine: the load average is printed at the end.

    python bench/startup.py                # full run (a few minutes)
    python bench/startup.py --quick        # smoke run
    python bench/startup.py --startup-only --repeat 15 --against /path/to/main   # start-up rows, this tree vs another
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import decode  # noqa: E402  (bench/decode.py: the decode workload and its table)
import records as recbench  # noqa: E402
import verify as verify_bench  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SMALL_LOG = REPO / "golden" / "kafka" / "records" / "v2-none" / "00000000000000000000.log"
LOG_DIR = REPO / "golden" / "kafka" / "logdir" / "golden-0"


#: Run first in each start-up child: at exit it writes the process's peak RSS (KiB) to the file
#: descriptor named by KAFKALOG_BENCH_FD. On Linux that is VmHWM, the high-water mark of the memory
#: the program itself mapped since exec. wait4's ru_maxrss is not: exec keeps the high-water mark of
#: the memory the child inherited from its parent (here, this benchmark with its decoders loaded).
_REPORT_PEAK = """import atexit as _a, os as _o
def _peak():
    try:
        with open('/proc/self/status') as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith('VmHWM:'))
    except (OSError, StopIteration):
        import resource, sys
        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // (1024 if sys.platform == 'darwin' else 1)
    _o.write(int(_o.environ['KAFKALOG_BENCH_FD']), str(kib).encode())
_a.register(_peak)
"""


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", _REPORT_PEAK + code]


def _kafkalog(*args: str) -> list[str]:
    """``python -m kafkalog ARGS``, as runpy runs it for ``-m``, after the peak-RSS hook."""
    return _python("import runpy, sys\nsys.argv[0] = 'kafkalog'\nrunpy.run_module('kafkalog', run_name='__main__', alter_sys=True)") + list(args)


def commands() -> list[tuple[str, list[str]]]:
    """(label, argv) of each start-up row."""
    log, logdir = SMALL_LOG.relative_to(REPO), LOG_DIR.relative_to(REPO)
    return [
        ("python -c pass", _python("pass")),
        ("import kafkalog", _python("import kafkalog")),
        ("import aiokafka.record.default_records", _python("import aiokafka.record.default_records")),
        ("kafkalog --version", _kafkalog("--version")),
        ("kafkalog --help", _kafkalog("--help")),
        (f"kafkalog dump {log}", _kafkalog("dump", str(SMALL_LOG))),
        (f"kafkalog dump --json {log} ({SMALL_LOG.stat().st_size:,} B)", _kafkalog("dump", "--json", str(SMALL_LOG))),
        (f"kafkalog explain {log}", _kafkalog("explain", str(SMALL_LOG))),
        (f"kafkalog info {logdir}", _kafkalog("info", str(LOG_DIR))),
        (f"kafkalog cat -c 5 {logdir}", _kafkalog("cat", "-c", "5", str(LOG_DIR))),
        (f"kafkalog verify {logdir}", _kafkalog("verify", str(LOG_DIR))),
    ]


def child_env(tree: Path, pycache: str) -> dict[str, str]:
    """The environment of a start-up child: ``tree``'s ``codec`` first on the path, bytecode cached
    under ``pycache`` (written there, not into the tree or the interpreter's own caches)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join([str(tree / "codec"), str(tree / "spark_ext")] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    env["PYTHONPYCACHEPREFIX"] = pycache
    return env


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, int, int, float]:
    """(wall seconds, peak RSS in KiB as the process reports it, exit status, CPU seconds: user +
    system) of one fresh process, its output discarded. The CPU time varies less than the wall time
    when other processes compete for the CPUs."""
    read, write = os.pipe()
    try:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO, pass_fds=(write,),
                                env={**env, "KAFKALOG_BENCH_FD": str(write)})
        os.close(write)
        write = -1
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here (wait4 gives its rusage), not by Popen
        reported = os.read(read, 64)
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    return wall, int(reported or 0), code, usage.ru_utime + usage.ru_stime


def startup_rows(repeat: int, envs: list[dict[str, str]]) -> list[list[str]]:
    """Start-up rows: first run, then the best and median of the others (interleaved), with
    ``envs[0]`` (:func:`child_env`); with a second env (``--against``), that checkout's best and
    median too (its runs interleaved with the first's) and the ratio of the medians (first / second)."""
    cmds = commands()
    for _label, argv in cmds:
        for env in envs:
            run_once(argv, env)  # untimed: writes the bytecode of everything the command imports to the cache
    runs: dict[tuple[int, str], list[tuple[float, int, int, float]]] = {(i, label): [] for i in range(len(envs)) for label, _ in cmds}
    for _ in range(repeat):
        for label, argv in cmds:
            for i, env in enumerate(envs):
                runs[i, label].append(run_once(argv, env))
    rows = []
    for label, _argv in cmds:
        got = runs[0, label]
        first, rest = got[0], sorted(got[1:] or got[:1])
        bad = {r[2] for i in range(len(envs)) for r in runs[i, label] if r[2] != 0}
        cpu = _median([r[3] for r in rest])
        row = [label, f"{first[0] * 1e3:.0f}", f"{first[1] / 1024:.0f}", f"{rest[0][0] * 1e3:.0f}", f"{rest[len(rest) // 2][0] * 1e3:.0f}",
               f"{cpu * 1e3:.0f}", f"{max(r[1] for r in rest) / 1024:.0f}"]
        if len(envs) > 1:
            other = sorted(runs[1, label][1:] or runs[1, label][:1])
            other_cpu = _median([r[3] for r in other])
            row += [f"{other[0][0] * 1e3:.0f}", f"{other[len(other) // 2][0] * 1e3:.0f}", f"{other_cpu * 1e3:.0f}",
                    f"{rest[len(rest) // 2][0] / other[len(other) // 2][0]:.2f}x", f"{cpu / other_cpu:.2f}x"]
        rows.append(row + ["" if not bad else f"exit {sorted(bad)}"])
    return rows


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def import_time(repeat: int, env: dict[str, str]) -> float:
    """Best in-process time of ``import kafkalog`` in fresh interpreters (the interpreter's own start-up excluded)."""
    code = "import time; t = time.perf_counter(); import kafkalog; print(time.perf_counter() - t)"
    return min(float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=REPO, env=env).stdout)
               for _ in range(repeat))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smoke run: fewer records and repeats, a small verify log")
    ap.add_argument("--repeat", type=int, default=None, help="runs of each measurement: start-up runs and interleaved decode rounds (default 7; verify: best of 3)")
    ap.add_argument("--verify-mb", type=int, default=None, help="size of the generated log verify reads (default 500, --quick 16)")
    ap.add_argument("--startup-only", action="store_true", help="only the start-up rows (no decode or verify tables)")
    ap.add_argument("--against", type=Path, default=None, metavar="DIR",
                    help="another checkout (its codec/ is run) to time the start-up rows against, interleaved with this tree")
    args = ap.parse_args(argv)
    repeat = args.repeat or (3 if args.quick else 7)
    load_start = os.getloadavg()[0]
    started = time.perf_counter()

    from kafkalog import fast
    from kafkalog.fast import columnar

    print(f"kafkalog start-up and compiled-core benchmark: Python {platform.python_version()}, {os.cpu_count()} CPUs; "
          f"kernels: {columnar.kernels.name} (kafkalog.fast.EXTENSIONS = {fast.EXTENSIONS})")
    print()
    head = ["command", "first run ms", "first run RSS MB", "best ms", "median ms", "median CPU ms", "peak RSS MB"]
    if args.against is not None:
        other = args.against.name
        head += [f"{other}: best ms", f"{other}: median ms", f"{other}: median CPU ms", f"median: this / {other}", f"CPU: this / {other}"]
    with tempfile.TemporaryDirectory(prefix="kafkalog-bench-pycache-") as pycache:
        envs = [child_env(tree, pycache) for tree in [REPO] + ([args.against] if args.against is not None else [])]
        print(decode.table(head + ["note"], startup_rows(repeat, envs), set(range(1, len(head)))))
        print(f"\n`import kafkalog` alone, in-process: {import_time(repeat, envs[0]) * 1e3:.1f} ms (best of {repeat})")
    if args.startup_only:
        _print_load(load_start, started)
        return 0

    dargs = decode.parse_args(["--quick"] if args.quick else [])
    dargs.records = decode.QUICK_RECORDS if args.quick else decode.DEFAULT_RECORDS
    dargs.repeat = repeat  # best of as many interleaved rounds as the start-up rows: the decoders differ by less than one round varies
    peers: dict = {}
    labels = []
    for name, make in (("aiokafka", recbench.make_aiokafka), ("kafka-python", recbench.make_kafka_python)):
        got = make()
        if isinstance(got, str):
            labels.append(f"{name}: {got}")
        else:
            peers[name] = got
            labels.append(got.label)
    rows, _decomp = decode.run_workload("none", 100, 1000, dargs, peers)
    print(f"\nstandard workload ({dargs.records:,} records of 100 B, 1,000 a batch, no codec); " + "; ".join(labels))
    print(decode.render(rows))

    size_mb = args.verify_mb or (16 if args.quick else 500)
    with tempfile.TemporaryDirectory(prefix="kafkalog-bench-startup-") as tmp:
        part = os.path.join(tmp, "bench-0")
        os.mkdir(part)
        log, batches = verify_bench.generate(part, size_mb)
        size = os.path.getsize(log)
        report = verify_bench.verify(part)  # also reads the file into the page cache
        if not report.ok or report.findings:
            print(f"verify found problems in the generated log: {report.findings[:3]}", file=sys.stderr)
            return 1
        floor = verify_bench.best(lambda: verify_bench.crc_floor(log), min(repeat, 3))
        full = verify_bench.best(lambda: verify_bench.verify(part), min(repeat, 3))
    print(f"\nverify: {size / 1e6:.0f} MB, {batches:,} batches of 1,000 records")
    print(decode.table(["what", "seconds", "MB/s", "vs floor"],
                       [["read + CRC-32C of each batch (floor)", f"{floor:.3f}", f"{size / 1e6 / floor:,.0f}", "1.00x"],
                        ["kafkalog verify (all checks)", f"{full:.3f}", f"{size / 1e6 / full:,.0f}", f"{full / floor:.2f}x"]], {1, 2, 3}))
    _print_load(load_start, started)
    return 0


def _print_load(load_start: float, started: float) -> None:
    load_end = os.getloadavg()[0]
    print(f"\nWall time {time.perf_counter() - started:.0f}s; 1-minute load average {load_start:.2f} at start, {load_end:.2f} at end"
          + (" (other processes compete for the CPUs: compare ratios, not absolute figures)." if max(load_start, load_end) > 0.5 else "."))


if __name__ == "__main__":
    sys.exit(main())
