"""``kafkalog.scan`` over ``s3://`` against the same read from local disk, and against what the S3
server gives a client that only fetches, in one run.

    .venv/bin/python bench/s3.py [--data real,generated] [--set DIR] [--copies 16] [--gigabytes 1]
                                 [--segment-mb 64] [--cache DIR] [--repeat 3]

Two data sets (``--data``, both by default), each made once under ``--cache`` (default
``$TMPDIR/kafkalog-bench-s3``) and reused: ``real`` is bench/export.py's, ``--copies`` copies
(default 16) of the partition dirs of a golden-real set (default
``../shared/golden-real/cp760-flink-on-prem``: about 150 partitions a copy, most of them small),
topics renamed, in one data dir; ``generated`` is bench/spark.py's partition of 100-byte random
values in 1,000-record batches, ``--gigabytes`` of it (default 1) in segments of ``--segment-mb``
(default 64). An S3 server (moto's, as the tests run it: ``tests/s3_server.py``, a process of its
own on 127.0.0.1, werkzeug's threaded server, that logs every request) is started and each data dir
uploaded to it. Each round then reads, in turn (the order alternating), after a warm-up round:

- ``local``: ``kafkalog.scan`` of the local dir (every column, CRCs checked, batches consumed and dropped);
- ``s3``: the same of the ``s3://`` prefix;
- ``fetch``: the server's ceiling for this client: every ``.log`` byte the scan reads, fetched
  through the scan's read-ahead (:class:`kafkalog.log.ranges.ReadAhead`) into one reused buffer and
  dropped, nothing decoded;
- ``s3fs``: every ``.log`` object fetched whole with plain s3fs ``cat_file``, 4 at a time, dropped;

each with a fresh S3 client (no listing cached from an earlier round). Printed for each: the best
wall time, MB/s of ``.log``, rows/s, the CPU time of this process and of the server; for the
scan's best round the requests by kind (listings, HEADs, GETs of objects), the ``.log`` bytes
fetched against those needed (the byte ranges of the ``.log`` files the plans read) and every GET's
bytes; and the ratios of the S3 scan's rows/s to the local read's (the target is 0.5 or more) and
of its MB/s to ``fetch``'s. Both scans must give the same rows (per topic-partition count and
offset sum), or the run fails.

The server and this process share the machine's cores, and moto is Python: for each GET it reads
the object whole from its store and slices the range out, so its CPU grows with the object's size
times the requests for it (the read-ahead asks for a segment of up to 64 MiB in one request).
The server is moto as the tests run it, configured as nothing else: its threaded werkzeug server,
the request log, and no checksum headers on ranged GETs (S3 sends none for a part of an object).
Profiled with py-spy, the server's CPU (1.2-1.4 s per GB) is mostly the kernel's sending of the
bodies, and its whole-object reads under a tenth of it; the client's, beyond the decoding, was
memory: fresh bytes objects for each piece and s3fs's joining of the body's chunks, until the
read-ahead fetched into reused buffers (:mod:`kafkalog.log.ranges`), then aiohttp's receiving of
the body as new chunks to copy in, until the socket wrote it into those buffers
(:mod:`kafkalog.log.s3get`). With other work on the
machine, wall times follow CPU times (compare the CPU columns); run it on an idle machine for
wall times.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests")]

from export import DEFAULT_SET, make_copies, scan_all  # noqa: E402 - bench/export.py's data set and full scan

BUCKET = "kafkalog-bench"


def kinds(requests: list[dict]) -> dict[str, int]:
    """Requests by kind: ``list`` (a GET of the bucket: a listing), ``head``, ``get`` (an object's bytes)."""
    out = {"list": 0, "head": 0, "get": 0, "other": 0}
    for r in requests:
        if r["method"] == "HEAD":
            out["head"] += 1
        elif r["method"] == "GET":
            out["get" if r["path"].strip("/").count("/") else "list"] += 1
        else:
            out["other"] += 1
    return out


def needed(url: str) -> int:
    """The ``.log`` bytes a full scan of ``url`` reads: the byte ranges of its plans."""
    from kafkalog.dataset.scan import plan_all
    from kafkalog.log.replicas import discover

    return sum((sl.end if sl.end is not None else sl.segment.size) - sl.start for p in plan_all(discover([url])) for sl in p.slices)


def fetch_only(url: str) -> tuple[int, dict]:
    """Every ``.log`` byte a scan of ``url`` reads, through the scan's read-ahead, dropped: the
    scan's requests without its decoding."""
    from kafkalog.dataset.scan import plan_all, read_ahead
    from kafkalog.log.replicas import discover

    plans = plan_all(discover([url]))
    buffer = memoryview(bytearray(8 << 20))  # one, reused: the reading costs a copy, no new memory
    with read_ahead(plans) as ahead:
        for p in plans:
            for sl in p.slices:
                end = sl.end if sl.end is not None else sl.segment.size
                with ahead.open(p.files.storage, sl.segment.log, sl.start, end, sl.segment.size) as f:  # type: ignore[arg-type]
                    f.seek(sl.start)
                    left = end - sl.start
                    while left > 0 and (got := f.readinto(buffer[: min(left, len(buffer))])):  # type: ignore[attr-defined]
                        left -= got
    return 0, {}


def fetch_whole(url: str) -> tuple[int, dict]:
    """Every ``.log`` object under ``url`` fetched whole with plain s3fs, 4 at a time, dropped."""
    from concurrent.futures import ThreadPoolExecutor

    import s3fs

    fs = s3fs.S3FileSystem()
    logs = [p for p in fs.find(url) if p.endswith(".log")]
    with ThreadPoolExecutor(4) as pool:
        for _ in pool.map(lambda p: len(fs.cat_file(p)), logs):
            pass
    return 0, {}


def cpu_of(pid: int) -> float:
    """CPU seconds (user and system) a process used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def compare(server: object, name: str, data: Path, repeat: int) -> bool:
    """Scan ``data`` and its upload in turn, ``repeat`` rounds after a warm-up; print the figures."""
    import s3fs

    import s3_server

    s3_server.upload(server, BUCKET, [])  # the bucket
    fs = s3fs.S3FileSystem(skip_instance_cache=True)  # this server's, not one a caller made earlier
    fs.put(str(data), f"{BUCKET}/{name}", recursive=True)  # concurrent uploads
    url = f"s3://{BUCKET}/{name}"
    log_bytes = sum(f.stat().st_size for f in data.rglob("*.log"))
    best: dict[str, tuple[float, float, float, list[dict]]] = {}
    result: dict[str, tuple[int, dict]] = {}

    def timed(what: str, run: Callable[[], tuple[int, dict]]) -> None:
        s3fs.S3FileSystem.clear_instance_cache()  # a new client: nothing listed before
        before, server_cpu = len(server.requests()), cpu_of(server.proc.pid)  # type: ignore[attr-defined]
        t0, c0 = time.perf_counter(), time.process_time()
        result[what] = run()
        took, used = time.perf_counter() - t0, time.process_time() - c0
        if took < best.get(what, (1e9,))[0]:
            best[what] = (took, used, cpu_of(server.proc.pid) - server_cpu, server.requests()[before:])  # type: ignore[attr-defined]

    reads: dict[str, Callable[[], tuple[int, dict]]] = {
        "local": lambda: scan_all(data), "s3": lambda: scan_all(url), "fetch": lambda: fetch_only(url), "s3fs": lambda: fetch_whole(url)}
    for k in range(repeat + 1):
        for what in list(reads) if k % 2 == 0 else list(reads)[::-1]:
            timed(what, reads[what])
        if k == 0:
            best.clear()
    rows = result["local"][0]
    print(f"\n{name}: {rows:,} rows, {log_bytes / 1e6:.0f} MB of .log, best of {repeat} rounds")
    print(f"{'read':<6} {'best s':>8} {'MB/s':>8} {'rows/s':>12} {'CPU s':>8} {'server CPU s':>13}")
    for what in reads:
        took, used, server_used = best[what][:3]
        rate = f"{rows / took:12,.0f}" if what in ("local", "s3") else f"{'-':>12}"
        print(f"{what:<6} {took:8.2f} {log_bytes / 1e6 / took:8.1f} {rate} {used:8.2f} {server_used if what != 'local' else 0:13.2f}")
    reqs = best["s3"][3]
    gets = [r for r in reqs if r["method"] == "GET" and r["path"].strip("/").count("/")]
    logs = sum(r["bytes"] for r in gets if r["path"].endswith(".log"))
    want = needed(url)
    print("s3 requests: " + ", ".join(f"{n} {k}" for k, n in kinds(reqs).items()))
    print(f"s3 .log bytes fetched {logs:,} / needed {want:,} = {logs / want:.3f}x; every GET {sum(r['bytes'] for r in gets):,} bytes")
    print(f"s3/local rows/s: {best['local'][0] / best['s3'][0]:.2f}x (target 0.5x or more); s3 scan/fetch only: "
          f"{best['fetch'][0] / best['s3'][0]:.2f}x; CPU s per GB of .log: local {best['local'][1] / log_bytes * 1e9:.2f}, "
          f"s3 {best['s3'][1] / log_bytes * 1e9:.2f} (+ server {best['s3'][2] / log_bytes * 1e9:.2f})")
    same = result["s3"] == result["local"]
    print(f"rows: {'same' if same else 'DIFFERENT'}")
    return same


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="real,generated", help="data sets, comma-separated: real, generated (default both)")
    ap.add_argument("--set", type=Path, default=DEFAULT_SET, help="the golden-real set of --data real (default: cp760-flink-on-prem)")
    ap.add_argument("--copies", type=int, default=16, help="copies of the set's partitions (default 16)")
    ap.add_argument("--gigabytes", type=float, default=1.0, help="size of --data generated (default 1)")
    ap.add_argument("--segment-mb", type=int, default=64, help="segment size of --data generated (default 64)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kafkalog-bench-s3")
    ap.add_argument("--repeat", type=int, default=3, help="timed rounds after the warm-up round (default 3)")
    args = ap.parse_args(argv)
    sets = args.data.split(",")
    if "real" in sets and not args.set.is_dir():
        print(f"bench/s3.py: {args.set} is absent", file=sys.stderr)
        return 2
    import s3_server

    dirs = {}
    if "real" in sets:
        dirs["real"] = make_copies(args.cache / "real", args.set, args.copies)
    if "generated" in sets:
        import importlib.util

        # bench/spark.py's generated partition, loaded by its path: "spark" may name another module (tests/spark)
        spec = importlib.util.spec_from_file_location("kafkalog_bench_spark_for_s3", HERE / "spark.py")
        spark_bench = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[spec.name] = spark_bench  # type: ignore[union-attr] - dataclasses look their module up
        spec.loader.exec_module(spark_bench)  # type: ignore[union-attr]
        dirs["generated"] = spark_bench.generate_log(args.cache / "generated", args.gigabytes, args.segment_mb << 20)[0].parent
    args.cache.mkdir(parents=True, exist_ok=True)
    (args.cache / "requests.jsonl").unlink(missing_ok=True)
    server = s3_server.start(args.cache / "requests.jsonl")
    saved = dict(os.environ)
    try:
        os.environ.update(server.env())
        ok = all([compare(server, name, d, args.repeat) for name, d in dirs.items()])
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
