"""``kafkalog.scan`` and ``kafkalog export`` on copies of a real broker's data dir, on one core or on several.

    .venv/bin/python bench/export.py [--set DIR] [--copies 16] [--cache DIR] [--formats parquet] [--repeat 3] [--crc-cost]
                                     [--jobs 1,2] [--scan-workers 1,2]

``--copies`` copies (default 16) of the partition dirs holding a ``.log`` of a golden-real set
(default ``../shared/golden-real/cp760-flink-on-prem``) are made once under ``--cache`` (default
``$TMPDIR/kafkalog-bench-export``), each copy's topics renamed ``<topic>_c<k>`` so that they stay
distinct partitions, in one data dir (the same layout as ``bench/spark.py``'s real table). Then,
in this one process, each round reads the whole data dir with ``kafkalog.scan`` (every column,
batches consumed and dropped), and exports it with the code behind ``kafkalog export`` to each
format in a fresh directory (emptied before the clock starts). Printed: rows, the best wall time
of ``--repeat`` rounds after a warm-up round, rows/s on one core, the CPU time of that round
(every thread; an export's fsyncs wait on the disk and show in wall time only), and the peak RSS of a fresh
process that does only the scan, and of one that does only the Parquet export. The export is
checked with pyarrow: the rows read back from the Parquet files (per topic-partition
count and offset sum) must be those ``scan`` returned.

Every read checks each batch's CRC, as Kafka's consumer does (SPEC R-VAL-09). ``--crc-cost`` also
times, in the same rounds (interleaved, so that both see the same machine), the scan and each export
with the check turned off (``verify_crc=False``, the CLI's ``--no-crc``), and prints what the check
costs, from the least CPU time of each over the rounds (steadier than wall time on a shared
machine) and from the best wall times: the target is under 10%.

``--jobs 1,2`` times the export at each ``-j`` (worker processes, ``kafkalog export -j N``) and
checks that every ``-j`` wrote the same files, byte for byte; ``--scan-workers 1,2`` times the scan
at each ``workers=`` (read-ahead threads). The bench runs on one core unless one of them asks for
more than one (then on the CPUs the process is given, e.g. by ``taskset``); ``-j`` rows/s are of the
whole run, wall time, and CPU time is the parent's and its workers' (what the processes cost
together, against one process's: on a loaded machine, where wall time tells little, the ratio says
what an idle one gains).

Run it on an idle machine: figures from a loaded one are not the code's. The export creates two
directories and a file per partition, so the file system's cost of creating them shows in its
figures. On ext4 without a journal that cost grows while inodes freed in the last minutes are still
cached (the allocator checks each one's deletion time; Linux's ``recently_deleted``), as after an
earlier run removed its output or a test suite its temporary files: ``sync; echo 3 >
/proc/sys/vm/drop_caches`` (as root) before the run, or ``--out`` on a tmpfs, measures the export
itself.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KAFKALOG_SHARED", REPO.parent / "shared"))
DEFAULT_SET = SHARED / "golden-real" / "cp760-flink-on-prem"


def data_dirs(set_dir: Path) -> list[Path]:
    """The folders under a set that hold partition dirs with a ``.log``."""
    return sorted({f.parent.parent for f in set_dir.rglob("*.log") if f.parent.name.rpartition("-")[2].isdigit()})


def make_copies(cache: Path, set_dir: Path, copies: int) -> Path:
    """``copies`` copies of the set's partition dirs that hold a ``.log``, topics renamed; reused when made before."""
    out = cache / "data"
    marker = cache / "done.json"
    key = {"set": str(set_dir), "copies": copies}
    if marker.exists() and json.loads(marker.read_text()) == key:
        return out
    shutil.rmtree(cache, ignore_errors=True)
    out.mkdir(parents=True)
    for k in range(copies):
        for d, src in enumerate(data_dirs(set_dir)):
            for part in sorted(p for p in src.iterdir() if p.is_dir() and any(p.glob("*.log"))):
                topic, _, n = part.name.rpartition("-")
                shutil.copytree(part, out / f"{topic}_c{k:02d}{'' if d == 0 else f'_d{d}'}-{n}")
    marker.write_text(json.dumps(key))
    return out


def scan_all(data: Path, verify_crc: bool = True, workers: int = 1) -> tuple[int, dict[tuple[str, int], tuple[int, int]]]:
    """Rows, and per topic-partition (count, offset sum), of a full scan."""
    import pyarrow.compute as pc

    import kafkalog

    rows = 0
    per: dict[tuple[str, int], tuple[int, int]] = {}
    for b in kafkalog.scan(data, verify_crc=verify_crc, workers=workers):
        rows += b.num_rows
        if b.num_rows:
            tp = (b.column("topic")[0].as_py(), b.column("partition")[0].as_py())
            c, s = per.get(tp, (0, 0))
            per[tp] = (c + b.num_rows, s + pc.sum(b.column("offset")).as_py())
    return rows, per


def fresh(out: Path) -> Path:
    """An empty ``out`` (what an earlier round wrote removed, outside the timed part)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    return out


def export_all(data: Path, out: Path, fmt: str, verify_crc: bool = True, jobs: int = 1) -> int:
    from kafkalog.dataset.scan import plan_all
    from kafkalog.log.replicas import discover
    from kafkalog.tools.export import export

    _files, rows = export(plan_all(discover([str(data)])), str(out), fmt=fmt, verify_crc=verify_crc, jobs=jobs)
    return rows


def read_back(out: Path) -> dict[tuple[str, int], tuple[int, int]]:
    import pyarrow.dataset as ds

    t = ds.dataset(out, format="parquet", partitioning="hive").to_table(columns=["topic", "partition", "offset"])
    g = t.group_by(["topic", "partition"]).aggregate([("offset", "count"), ("offset", "sum")])
    return {(tp, p): (c, s) for tp, p, c, s in zip(*(g.column(n).to_pylist() for n in ("topic", "partition", "offset_count", "offset_sum")), strict=True)}


def peak_rss(phase: str, data: Path, out: Path) -> float:
    """The peak RSS (MB) of a fresh process that only scans ``data`` or only exports it to Parquet."""
    import subprocess

    proc = subprocess.run([sys.executable, __file__, "--rss-child", phase, str(data), str(out)], capture_output=True, text=True, check=True)
    return float(proc.stdout.split()[-1])


def _rss_child(phase: str, data: Path, out: Path) -> None:
    if phase == "scan":
        scan_all(data)
    else:
        export_all(data, fresh(out), "parquet")
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main(argv: list[str] | None = None, *, pin: bool = False) -> int:
    """The bench; ``pin`` (when run as a script) keeps it on one core unless ``--jobs`` or ``--scan-workers`` asks for more."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--rss-child"]:
        _rss_child(argv[1], Path(argv[2]), Path(argv[3]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=DEFAULT_SET, help="a golden-real set (default: cp760-flink-on-prem)")
    ap.add_argument("--copies", type=int, default=16, help="copies of the set's partitions (default 16)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kafkalog-bench-export")
    ap.add_argument("--formats", default="parquet", help="comma-separated: parquet,jsonl,csv (default parquet)")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds after the warm-up round (default 3)")
    ap.add_argument("--out", type=Path, help="where the exports go (default: under --cache); e.g. a tmpfs, to time the export without the disk's file system")
    ap.add_argument("--crc-cost", action="store_true", help="also time each read with the CRC check off (verify_crc=False), interleaved, and print the check's cost")
    ap.add_argument("--jobs", type=_numbers, default=[1], help="comma-separated -j values to time the export at (default 1)")
    ap.add_argument("--scan-workers", type=_numbers, default=[1], help="comma-separated workers= values to time the scan at (default 1)")
    args = ap.parse_args(argv)
    if pin and max(args.jobs + args.scan_workers) == 1 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, whatever pyarrow's thread pool would take
    if not args.set.is_dir():
        print(f"bench/export.py: {args.set} is absent", file=sys.stderr)
        return 2
    data = make_copies(args.cache, args.set, args.copies)
    rows, truth = scan_all(data)  # the warm-up round, and what the export must hold
    best: dict[str, float] = {}
    cpu: dict[str, float] = {}
    least_cpu: dict[str, float] = {}  # each one's least CPU time over the rounds: what the CRC cost is read from

    def timed(what: str, run: Callable[[], int]) -> None:
        t0, c0 = time.perf_counter(), time.process_time() + _workers_cpu()
        n = run()
        took, used = time.perf_counter() - t0, time.process_time() + _workers_cpu() - c0
        assert n == rows, (what, n, rows)
        least_cpu[what] = min(used, least_cpu.get(what, used))
        if took < best.get(what, 1e9):
            best[what], cpu[what] = took, used

    # each round exports into a new directory and all are removed at the end: on ext4, files created
    # seconds after others were removed cost more (recently freed inodes are skipped, and a `discard`
    # mount trims the freed blocks in the journal commit the next fsync waits for), which is not the export's cost
    outs = (args.out or args.cache) / "rounds"
    shutil.rmtree(outs, ignore_errors=True)
    checks = (True, False) if args.crc_cost else (True,)
    for k in range(args.repeat):
        for crc in checks if k % 2 == 0 else checks[::-1]:  # alternate which goes first
            tag = "" if crc else " no-crc"
            for w in args.scan_workers:
                timed("scan" + _at("workers", w, args.scan_workers) + tag, lambda crc=crc, w=w: scan_all(data, crc, w)[0])
            for fmt in args.formats.split(","):
                for j in args.jobs:
                    out = fresh(outs / f"{fmt}{tag.replace(' ', '-')}-j{j}-{k}")
                    timed(f"export {fmt}{_at('-j', j, args.jobs)}{tag}", lambda fmt=fmt, out=out, crc=crc, j=j: export_all(data, out, fmt, crc, j))
    ok = True
    if "parquet" in args.formats.split(","):
        ok = read_back(outs / f"parquet-j{args.jobs[0]}-0") == truth
    same = all(_tree(outs / f"{fmt}-j{j}-0") == _tree(outs / f"{fmt}-j{args.jobs[0]}-0") for fmt in args.formats.split(",") for j in args.jobs)
    shutil.rmtree(outs, ignore_errors=True)
    rss_scan = peak_rss("scan", data, args.cache / "out-rss")
    rss_export = peak_rss("export", data, args.cache / "out-rss")
    shutil.rmtree(args.cache / "out-rss", ignore_errors=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{rows:,} rows: {args.copies} copies of {args.set.name} ({sum(f.stat().st_size for f in data.rglob('*.log')) / 1e6:.0f} MB of .log), "
          f"{cores} core{'s' * (cores != 1)}, exported into {outs}")
    print(f"{'what':<23} {'best s':>8} {'rows/s':>12} {'CPU s':>8}")
    for what, s in best.items():
        print(f"{what:<23} {s:8.2f} {rows / s:12,.0f} {cpu[what]:8.2f}")
    for what in [w for w in best if not w.endswith(" no-crc") and w + " no-crc" in best]:
        off = what + " no-crc"
        print(f"CRC check cost, {what}: {100 * (least_cpu[what] / least_cpu[off] - 1):+.1f}% CPU (least of each), "
              f"{100 * (best[what] / best[off] - 1):+.1f}% wall (best of each)")
    print(f"peak RSS: scan {rss_scan:.0f} MB, Parquet export {rss_export:.0f} MB (fresh processes)")
    print(f"Parquet read back with pyarrow: {'same rows' if ok else 'DIFFERENT ROWS'}")
    if len(args.jobs) > 1:
        print(f"files at -j {','.join(map(str, args.jobs))}: {'identical, byte for byte' if same else 'DIFFERENT'}")
    return 0 if ok and same else 1


def _workers_cpu() -> float:
    """The CPU seconds of the ``-j`` worker processes that have ended: they are the children of
    multiprocessing's forkserver, which waits for each, so its ``cutime + cstime`` (``/proc/PID/stat``)
    holds theirs (0 before it starts, or where there is no /proc)."""
    from multiprocessing import forkserver

    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)  # the one forkserver of this process
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def _numbers(text: str) -> list[int]:
    return [int(n) for n in text.split(",")]


def _at(flag: str, n: int, every: list[int]) -> str:
    """`` -j 2`` in a row's name when several values are timed (else nothing: the one-core names as before)."""
    return f" {flag} {n}" if len(every) > 1 or n != 1 else ""


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


if __name__ == "__main__":
    sys.exit(main(pin=True))
