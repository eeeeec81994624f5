"""Spark's ``kafkalog`` source against Spark's own Parquet reader on the same records, in one run.

    .venv/bin/python bench/spark.py [--gigabytes 2] [--cache DIR] [--repeat 2] [--tables synthetic,real]
                                    [--real-set DIR|all] [--copies 16] [--data DIR] [--no-parquet]
                                    [--master URL | --cluster]

A partition dir of at least ``--gigabytes`` of uncompressed v2 batches (1,000 records each,
16-byte keys, 100-byte random values: the workload of ``../shared/notes/measurements.md``) is
generated once under ``--cache`` (default ``$TMPDIR/kafkalog-bench-spark``) through kafkalog's
``Log``, and the same records are written once to Parquet (snappy, as Spark writes it by default)
beside it; later runs reuse both. Then, in one ``local[N]`` session, ``count()`` and
``sum(length(value))`` run through ``format("kafkalog")`` (the full Kafka schema, and with the
schema narrowed to the columns the query uses, which is how a Python source is pruned: none for
``count()``, ``value`` for the sum) and
through ``format("parquet")``, over two layouts of the same rows: the files written above (one per
segment) and the files Spark writes itself with ``df.write.parquet`` from a ``kafkalog`` read (one
per input partition, Spark's row groups: the layout a user converting a topic gets, and the faster
one to read). A third source, ``floor``, is a Python data source that decodes
nothing: it returns prebuilt Arrow columns of the same shape, one input partition per kafkalog
partition and the same number of rows, so its time is what Spark's Python Data Source API costs
before any decoding (the ratio kafkalog can reach at best). Each figure is the best of
``--repeat`` rounds that take the sources in turn, after a warm-up round (see :func:`best`).
Records/s per core divides by Spark's default parallelism; the ratio is kafkalog's time over
Parquet's for the same query (1.0 = as fast, 3.0 = three times slower).

The second table is real broker data: ``--copies`` copies (default 16) of a golden-real set
(default ``../shared/golden-real/cp760-flink-on-prem``; ``all`` merges every set), each copy's
topics renamed (``<topic>_c03``) so that they stay distinct partitions, in one log dir. Its
query is ``select count(*), sum(length(value))`` with the default schema (and with the schema
narrowed to ``value``), against Parquet holding the same rows (one file per partition, snappy, and
as ``df.write.parquet`` lays it out) and against the floor source serving exactly the Arrow batches kafkalog returns, per input
partition (written once to Arrow IPC files and memory-mapped by the floor's ``read``: no
decoding). ``--master`` runs on another master (a standalone cluster: ``spark://host:port``);
``--cluster`` starts one for the run, as the tests do (a master and two 1-core workers from
pyspark's own ``spark-class`` on 127.0.0.1, stopped at the end).

``--data DIR`` runs the real table over a log dir as it is instead of copies (a ``bench/scale.py``
set: ``--cluster --data /work/scale-data/10GB-s0/data``), its Parquet copies and floor files kept
under ``--cache``; ``--no-parquet`` leaves Parquet out (the answers are then checked against the
floor files' own count and value bytes). The real table also gives each source's CPU seconds
(:func:`tree_cpu`: the driver's JVM and, with ``--cluster``, the cluster's JVMs and Python workers)
and their ratio to the floor's: on a machine other jobs load, wall time grows with their load,
CPU time much less.

``--planning 10000,100000`` measures planning alone, no Spark session: ``kafkalog.scan``'s (which
lists, reads the checkpoints and checks each partition's files for lost offsets before it returns)
and the Spark source's ``partitions()`` (what the driver runs before any task), each in a fresh
process reporting wall time, CPU time and peak RSS, over that many partition dirs in one log dir
(hard links to a copy of the smallest non-internal partition of the real set, each its own
``t<k>-<p>`` topic-partition, 100 partitions a topic, with the three offset checkpoints naming
them all); ``--planning-s3 N`` also over the first N of them uploaded to moto's S3 on 127.0.0.1
(``tests/s3_server.py``; an upload of 100,000 dirs, 600,000 objects, takes long there).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

REPO = Path(__file__).resolve().parents[1]
RECORDS_PER_BATCH = 1000
KEY_BYTES = 16
VALUE_BYTES = 100
TOPIC = "bench"
#: Segment size of the generated log (Kafka's default is 1 GiB; smaller segments give Spark more input partitions).
SEGMENT_BYTES = 256 * 1024 * 1024
GOLDEN_REAL = Path(os.environ.get("KAFKALOG_SHARED", REPO.parent / "shared")) / "golden-real"


def generate_log(root: Path, gigabytes: float, segment_bytes: int = SEGMENT_BYTES) -> tuple[Path, int]:
    """Write ``<root>/bench-0`` through kafkalog's Log (as a leader appends, ``segment_bytes`` a
    segment) until it holds at least ``gigabytes`` GB; returns (partition dir, records). Reused
    when ``done.json`` says so."""
    from kafkalog import RecordBatchBuilder
    from kafkalog.log.unified import Log, LogConfig

    part = root / "log" / f"{TOPIC}-0"
    marker = root / "log" / "done.json"
    want = int(gigabytes * 1e9)
    if marker.exists():
        info = json.loads(marker.read_text())
        if info["bytes"] >= want and info.get("segment_bytes", SEGMENT_BYTES) == segment_bytes:
            return part, info["records"]
    shutil.rmtree(root / "log", ignore_errors=True)
    part.parent.mkdir(parents=True)
    config = LogConfig.from_properties({"segment.bytes": str(segment_bytes)})
    written = records = 0
    with Log.open(str(part), config, sync=False, writable=True) as lg:
        while written < want:
            values = os.urandom(VALUE_BYTES * RECORDS_PER_BATCH)
            b = RecordBatchBuilder(0)
            for i in range(RECORDS_PER_BATCH):
                n = records + i
                b.append(1_700_000_000_000 + n, n.to_bytes(KEY_BYTES, "big"), values[i * VALUE_BYTES : (i + 1) * VALUE_BYTES])
            batch = b.build()
            lg.append(batch)  # one batch per append, as a leader takes a produce request
            records += RECORDS_PER_BATCH
            written += len(batch)
            if records % 1_000_000 == 0:
                print(f"\rgenerating: {written / 1e9:.2f} / {want / 1e9:.2f} GB", end="", file=sys.stderr)
        lg.flush()
    print(file=sys.stderr)
    marker.write_text(json.dumps({"bytes": written, "records": records, "segment_bytes": segment_bytes}))
    return part, records


def generate_parquet(root: Path, part: Path) -> Path:
    """The log's records (the Kafka schema's columns) as Parquet, one file per segment. Reused when present."""
    import pyarrow.parquet as pq

    from kafkalog import LogReader
    from kafkalog.fast.arrow import to_arrow

    out = root / "parquet"
    marker = root / "parquet.done"
    if marker.exists() and marker.read_text() == (root / "log" / "done.json").read_text():
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    for log_file in sorted(part.glob("*.log")):
        with open(log_file, "rb") as f, LogReader(f, name=str(log_file)) as reader:
            writer = None
            for rb in to_arrow(reader.batches(), topic=TOPIC, partition=0, columns=columns, max_rows=1 << 20):
                if writer is None:
                    writer = pq.ParquetWriter(out / f"{log_file.stem}.parquet", rb.schema, compression="snappy")
                writer.write_batch(rb, row_group_size=1 << 20)
            if writer is not None:
                writer.close()
        print(f"\rparquet: {log_file.name}", end="", file=sys.stderr)
    print(file=sys.stderr)
    marker.write_text((root / "log" / "done.json").read_text())
    return out


def _log_dirs(set_dir: Path) -> list[Path]:
    """The folders under a golden-real set that hold partition dirs (``<topic>-<n>/*.log``)."""
    found = {f.parent.parent for f in set_dir.rglob("*.log") if f.parent.name.rpartition("-")[2].isdigit()}
    return sorted(found)


def copy_real(root: Path, sets: list[Path], copies: int) -> tuple[Path, int]:
    """``copies`` copies of the partition dirs of ``sets`` in one log dir ``<root>/real/log``,
    topics renamed ``<topic>_c<k>`` (``_s<set>`` and ``_d<dir>`` added when several sets or log dirs are merged). Kafka's
    internal topics are not copied: a default read leaves them out (SPEC R-VAL-11), and renamed they would be ordinary topics.
    Returns (log dir, rows the default read returns). Reused when ``done.json`` matches."""
    from kafkalog.log.reads import is_internal_topic

    out = root / "real" / "log"
    marker = root / "real" / "done.json"
    key = {"sets": [str(s) for s in sets], "copies": copies, "internal": "not copied"}
    if marker.exists() and json.loads(marker.read_text()).get("key") == key:
        return out, json.loads(marker.read_text())["rows"]
    shutil.rmtree(root / "real", ignore_errors=True)
    out.mkdir(parents=True)
    for k in range(copies):
        for j, s in enumerate(sets):
            for d, log_dir in enumerate(_log_dirs(s)):
                for part in sorted(p for p in log_dir.iterdir() if p.is_dir() and any(p.glob("*.log"))):
                    topic, _, p = part.name.rpartition("-")
                    if is_internal_topic(topic):
                        continue
                    shutil.copytree(part, out / f"{topic}_c{k:02d}{'' if len(sets) == 1 else f'_s{j}'}{'' if d == 0 else f'_d{d}'}-{p}")
    from pyspark.sql.types import StructType

    from kafkalog_spark.source import KafkaLogReader

    reader = KafkaLogReader({"path": str(out)}, StructType([]))
    rows = sum(b.num_rows for p in reader.partitions() for b in reader.read(p))
    marker.write_text(json.dumps({"key": key, "rows": rows}))
    return out, rows


def real_parquet(work: Path, log: Path) -> Path:
    """The default read's rows of ``log`` as Parquet in ``<work>/parquet``, one snappy file per
    partition dir, written a batch at a time. Reused when present for the same ``log``."""
    import pyarrow.parquet as pq

    from kafkalog_spark.source import KafkaLogReader, source_schema

    out = work / "parquet"
    marker = work / "parquet-v2.done"
    if marker.exists() and marker.read_text() == str(log):
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for part in sorted(p for p in log.iterdir() if p.is_dir()):
        reader = KafkaLogReader({"path": str(part)}, source_schema())
        writer = None
        for b in (b for p in reader.partitions() for b in reader.read(p)):
            if writer is None:  # "p-": a "_topic" file Spark would skip as hidden
                writer = pq.ParquetWriter(out / f"p-{part.name}.parquet", b.schema, compression="snappy")
            writer.write_batch(b)
        if writer is not None:
            writer.close()
    marker.write_text(str(log))
    return out


def spark_parquet(spark: SparkSession, log: Path, out: Path) -> Path:
    """The default read's rows of ``log`` written by Spark itself, ``df.write.parquet(out)``: one
    file per input partition of the read, Spark's row groups and snappy, the layout a Spark user
    gets when converting the topic (read back faster than one file per partition dir). Reused
    when present (Spark's ``_SUCCESS`` marker)."""
    if (out / "_SUCCESS").exists():
        return out
    spark.read.format("kafkalog").load(str(log)).write.mode("overwrite").parquet(str(out))
    return out


def floor_files(work: Path, log: Path, columns: list[str]) -> tuple[str, int]:
    """kafkalog's own Arrow batches of each input partition of ``log`` (read in this process),
    one Arrow IPC file per partition under ``<work>/floor-<columns>``, for the floor source to
    serve; returns their dir and the rows they hold. Rewritten on every run: the planning of the
    code under test decides the partitions."""
    import pyarrow as pa
    from pyspark.sql.types import StructType

    from kafkalog_spark.source import KafkaLogReader, source_schema

    out = work / ("floor-" + ("-".join(columns) or "none"))
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    schema = StructType([f for f in source_schema().fields if f.name in columns])
    reader = KafkaLogReader({"path": str(log)}, schema)
    rows = 0
    for i, p in enumerate(reader.partitions()):
        with pa.OSFile(str(out / f"part-{i:05d}.arrow"), "wb") as f:
            writer = None
            for b in reader.read(p):
                if writer is None:
                    writer = pa.ipc.new_file(f, b.schema)
                writer.write_batch(b)
                rows += b.num_rows
            (writer or pa.ipc.new_file(f, pa.schema([]))).close()
    return str(out), rows


#: hard links a file may have (ext4 allows 65,000): a fresh copy of the template after as many partition dirs
LINKS_PER_TEMPLATE = 50_000


def planning_dirs(root: Path, dirs: int, set_dir: Path) -> Path:
    """A log dir of ``dirs`` partition dirs (see ``--planning``), made once under ``root`` and reused."""
    from kafkalog.log.reads import is_internal_topic

    out = root / f"planning-{dirs}" / "log"
    marker = out.parent / "done.json"
    if marker.exists() and json.loads(marker.read_text()).get("set") == str(set_dir):
        return out
    shutil.rmtree(out.parent, ignore_errors=True)
    out.mkdir(parents=True)
    log_dir = _log_dirs(set_dir)[0]
    candidates = [(sum(f.stat().st_size for f in p.iterdir()), p) for p in log_dir.iterdir()
                  if p.is_dir() and not is_internal_topic(p.name.rpartition("-")[0]) and any(f.stat().st_size for f in p.glob("*.log"))]
    source = min(candidates)[1]
    entries = []
    template: list[Path] = []
    for i in range(dirs):
        if i % LINKS_PER_TEMPLATE == 0:
            copy = out.parent / f"template-{i // LINKS_PER_TEMPLATE}"
            shutil.copytree(source, copy)
            template = sorted(copy.iterdir())
        topic, p = f"t{i // 100:05d}", i % 100
        d = out / f"{topic}-{p}"
        d.mkdir()
        for f in template:
            os.link(f, d / f.name)
        entries.append(f"{topic} {p} 0")
        if i % 10_000 == 0:
            print(f"\rplanning dirs: {i:,} / {dirs:,}", end="", file=sys.stderr)
    print(file=sys.stderr)
    for name in ("log-start-offset-checkpoint", "recovery-point-offset-checkpoint", "replication-offset-checkpoint"):
        (out / name).write_text(f"0\n{len(entries)}\n" + "\n".join(entries) + "\n")
    marker.write_text(json.dumps({"set": str(set_dir), "source": str(source)}))
    return out


def plan_once(which: str, path: str, options: dict[str, str]) -> dict[str, float]:
    """One planning in this process (run in a fresh one: peak RSS is the process's): wall and CPU
    seconds after the imports, peak RSS, and the partitions (scan) or input partitions (Spark) planned."""
    import resource

    import kafkalog
    from kafkalog_spark.source import KafkaLogReader, source_schema

    wall, cpu = time.perf_counter(), time.process_time()
    if which == "scan":
        kafkalog.scan(path)  # plans every partition before it returns; nothing is read until the reader is consumed
        planned = 0
    else:
        planned = len(KafkaLogReader({"path": path, **options}, source_schema()).partitions())
    seconds, cpu = time.perf_counter() - wall, time.process_time() - cpu
    # worker processes (planning many partitions) are forked by multiprocessing's server: stopped, it
    # and the workers it waited for count in this process's children
    from multiprocessing import forkserver

    if forkserver._forkserver._forkserver_pid is not None:
        forkserver._forkserver._stop()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"seconds": seconds, "cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "planned": planned,
            "workers_cpu": children.ru_utime + children.ru_stime, "worker_rss_mb": children.ru_maxrss / 1024}


def _plan_in_child(which: str, path: str, options: dict[str, str], env: dict[str, str]) -> dict[str, float]:
    import subprocess

    code = (f"import json, sys; sys.path.insert(0, {str(REPO / 'bench')!r}); import spark; "
            f"print(json.dumps(spark.plan_once({which!r}, {path!r}, {options!r})))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, check=False)
    if done.returncode:
        raise RuntimeError(f"planning {which} of {path} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def planning_table(args: argparse.Namespace) -> bool:
    """Planning time and peak RSS of scan and of the Spark source over many partition dirs, locally and on S3."""
    sizes = [int(n) for n in args.planning.split(",") if n.strip()]
    print(f"\nplanning only (no Spark session), each in a fresh process; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| partition dirs | storage | planner | seconds | CPU seconds (planning process + workers) | peak RSS MB (largest worker's) | planned |")
    print("|---|---|---|---|---|---|---|")
    runs: list[tuple[int, str, str, dict[str, str], dict[str, str]]] = []
    for n in sizes:
        runs.append((n, "local", str(planning_dirs(args.cache, n, args.real_set)), {}, {}))
    server = None
    if args.planning_s3:
        sys.path.insert(0, str(REPO / "tests"))
        import s3_server  # the tests' moto server on 127.0.0.1

        n = args.planning_s3
        log = planning_dirs(args.cache, n, args.real_set)
        server = s3_server.start(Path(tempfile.mkdtemp(prefix="kafkalog-bench-s3-")) / "requests.jsonl")
        _upload(server, log, f"planning-{n}")
        options = {f"fs.{k}": v if isinstance(v, str) else json.dumps(v) for k, v in server.storage_options().items()}
        runs.append((n, "s3 (moto, 127.0.0.1)", f"s3://bench/planning-{n}/log", options, server.env()))
    try:
        for n, where, path, options, env in runs:
            for which in ("scan", "spark"):
                r = _plan_in_child(which, path, options, env)
                name = "kafkalog.scan" if which == "scan" else "Spark source partitions()"
                planned = f"{r['planned']:,} input partitions" if which == "spark" else "every partition"
                print(f"| {n:,} | {where} | {name} | {r['seconds']:.2f} | {r['cpu']:.2f} + {r['workers_cpu']:.2f} | {r['rss_mb']:.0f} "
                      f"({r['worker_rss_mb']:.0f}) | {planned} |", flush=True)
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server.log.parent, ignore_errors=True)
    return True


def _upload(server: object, log: Path, prefix: str) -> None:
    """``log``'s files into bucket ``bench`` under ``prefix/log``, 16 puts at a time."""
    from concurrent.futures import ThreadPoolExecutor

    import boto3

    import s3_server

    s3 = boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=s3_server.ACCESS_KEY,  # type: ignore[attr-defined]
                      aws_secret_access_key=s3_server.SECRET_KEY, region_name=s3_server.REGION)
    s3.create_bucket(Bucket="bench")
    files = list(s3_server.tree(log, f"{prefix}/log"))
    with ThreadPoolExecutor(16) as pool:
        for k, _ in enumerate(pool.map(lambda f: s3.put_object(Bucket="bench", Key=f[1], Body=f[0].read_bytes()), files)):
            if k % 10_000 == 0:
                print(f"\rupload: {k:,} / {len(files):,} objects", end="", file=sys.stderr)
    print(file=sys.stderr)


#: kafkalog's source -> the no-decoding source with the same columns
FLOOR_OF = {"kafkalog": "floor (Python data source, no decoding)", "kafkalog, schema narrowed": "floor, schema narrowed"}


def floor_source(rows_per_partition: list[int]) -> type:
    """A Python data source that decodes nothing: each input partition yields its share of the
    rows as prebuilt Arrow batches of the requested kafkalog columns (32,768 rows at most)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from kafkalog_spark.arrow import arrow_schema

    class FloorReader(DataSourceReader):
        def __init__(self, schema: object) -> None:
            self.columns = [f.name for f in schema.fields]  # type: ignore[attr-defined]

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(n) for n in rows_per_partition]

        def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
            import numpy as np
            import pyarrow as pa

            step = 32_768
            full = {
                "key": pa.array([bytes(KEY_BYTES)] * step, pa.binary()),
                "value": pa.array([bytes(VALUE_BYTES)] * step, pa.binary()),
                "topic": pa.array([TOPIC] * step, pa.string()),
                "partition": pa.array(np.zeros(step, np.int32)),
                "offset": pa.array(np.arange(step, dtype=np.int64)),
                "timestamp": pa.array(np.arange(step, dtype=np.int64)).cast(pa.timestamp("us", tz="UTC")),
                "timestampType": pa.array(np.zeros(step, np.int32)),
            }
            template = pa.RecordBatch.from_arrays(
                [full[c] for c in self.columns] or [pa.nulls(step)], schema=arrow_schema(self.columns) if self.columns else None,
                names=None if self.columns else ["rows"],
            )
            if not self.columns:
                template = template.select([])
            left = partition.value
            while left > 0:
                n = min(step, left)
                left -= n
                yield template.slice(0, n)

    class FloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kafkalog_floor"

        def schema(self) -> str:
            return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in source_schema().fields)

        def reader(self, schema: object) -> DataSourceReader:
            return FloorReader(schema)

    from kafkalog_spark.source import source_schema

    return FloorSource


def ipc_floor_source() -> type:
    """A Python data source that decodes nothing and serves Arrow IPC files (option ``dir``: one
    file per input partition, memory-mapped), written by :func:`floor_files`."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class IpcFloorReader(DataSourceReader):
        def __init__(self, directory: str) -> None:
            self.directory = directory

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(str(p)) for p in sorted(Path(self.directory).glob("*.arrow"))]

        def read(self, partition: InputPartition):  # type: ignore[no-untyped-def]
            import pyarrow as pa

            f = pa.ipc.open_file(pa.memory_map(partition.value))
            for i in range(f.num_record_batches):
                yield f.get_batch(i)

    class IpcFloorSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "kafkalog_floor_ipc"

        def schema(self) -> str:
            return ", ".join(f"{f.name} {f.dataType.simpleString()}" for f in source_schema().fields)

        def reader(self, schema: object) -> DataSourceReader:
            return IpcFloorReader(self.options["dir"])

    from kafkalog_spark.source import source_schema

    return IpcFloorSource


def tree_cpu(pid: int | None = None) -> float:
    """CPU seconds (user and system) used so far by the descendants of ``pid`` (default: this
    process): the driver's JVM and, with ``--cluster``, the cluster's JVMs, their executors and
    their Python workers. A descendant that exited counts in its parent's ``cutime + cstime``
    once waited for (``/proc/PID/stat``); 0 where there is no /proc. Unlike wall time, this
    does not grow with the load other jobs put on the machine."""
    tick = os.sysconf("SC_CLK_TCK")
    parent_of: dict[int, int] = {}
    used: dict[int, float] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        parent_of[int(entry)] = int(fields[1])
        used[int(entry)] = sum(int(x) for x in fields[11:15]) / tick  # utime, stime, cutime, cstime
    root = os.getpid() if pid is None else pid

    def below(p: int) -> bool:
        while p > 1:
            p = parent_of.get(p, 0)
            if p == root:
                return True
        return False

    return sum(cpu for p, cpu in used.items() if below(p))


def best(fns: dict[str, Callable[[], object]], repeat: int, cpu: dict[str, float] | None = None) -> dict[str, tuple[float, object]]:
    """Per source: (best seconds of ``repeat`` runs, the last result). A warm-up round runs
    every source first, then the rounds take the sources in turn: run back to back, the first
    source measured met a JVM still compiling its own code (the same query was 20% slower in
    the session's second round than in its fourth). ``cpu`` gets each source's fewest CPU
    seconds of a run (:func:`tree_cpu`)."""
    results = {name: (float("inf"), fn()) for name, fn in fns.items()}
    for _ in range(repeat):
        for name, fn in fns.items():
            c, t = tree_cpu(), time.perf_counter()
            result = fn()
            results[name] = (min(results[name][0], time.perf_counter() - t), result)
            if cpu is not None:
                cpu[name] = min(cpu.get(name, float("inf")), tree_cpu() - c)
    return results


def print_rows(title: str, rows: int, cores: int, results: dict[str, tuple[float, object]], floor_of: dict[str, str],
               expected: object = None, cpu: dict[str, float] | None = None) -> bool:
    """One Markdown table row per source (with ``cpu``, the CPU seconds of :func:`tree_cpu` and
    their ratio to the floor's too); False when a source's answer differs from Parquet's (or,
    without Parquet, from ``expected``)."""
    ok = True
    parquet = results.get("parquet")
    if parquet is not None:
        expected = parquet[1]
    for sname, (secs, value) in results.items():
        if value != expected:
            print(f"MISMATCH: {sname} {title} = {value}, {'parquet' if parquet else 'expected'} = {expected}", file=sys.stderr)
            ok = False
        floor = floor_of.get(sname)
        vs_floor = f"{secs / results[floor][0]:.2f}" if floor else ""
        vs_parquet = f"{secs / parquet[0]:.2f}" if parquet else ""
        cells = [title, sname, f"{secs:.2f}", f"{rows / secs:,.0f}", f"{rows / secs / cores:,.0f}", vs_parquet, vs_floor]
        if cpu is not None:
            cells += [f"{cpu[sname]:.1f}", f"{cpu[sname] / cpu[floor]:.2f}" if floor and cpu[floor] else ""]
        print("| " + " | ".join(cells) + " |")
    return ok


#: Parquet as ``df.write.parquet`` lays it out (beside ``parquet``: one file per partition or segment)
SPARK_PARQUET = "parquet as df.write.parquet lays it out"
#: The default read's columns (what the real-data table's floor serves), and the narrowed schema's.
DEFAULT_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
NARROW_COLUMNS = ("value",)


def data_work_dir(cache: Path, data: Path) -> Path:
    """Where the Parquet copies and floor files of a ``--data`` dir go: ``<cache>/data-<name>-<hash of its path>``."""
    import hashlib

    resolved = data.resolve()
    return cache / f"data-{resolved.parent.name}-{resolved.name}-{hashlib.sha1(str(resolved).encode()).hexdigest()[:8]}"


def real_table(spark: SparkSession, args: argparse.Namespace, cores: int) -> bool:
    """The real-data table: ``select count(*), sum(length(value))`` over copies of golden-real sets,
    or over the log dir ``--data`` as it is."""
    from pyspark.sql.types import StructType

    from kafkalog_spark.source import source_schema

    if args.data is not None:
        log, work = args.data, data_work_dir(args.cache, args.data)
        what = f"{log}"
    else:
        if args.real_set.name == "all":
            sets = [p for p in sorted(args.real_set.parent.iterdir()) if p.is_dir() and p.name not in ("expected", "expected-decoded")]
        else:
            sets = [args.real_set]
        log, work = copy_real(args.cache, sets, args.copies)[0], args.cache / "real"
        what = f"{args.copies} copies of {', '.join(s.name for s in sets)}"
    files = [f for f in log.glob("*/*.log") if f.stat().st_size]
    floors = {cols: floor_files(work, log, list(cols)) for cols in (DEFAULT_COLUMNS, NARROW_COLUMNS)}
    rows = floors[DEFAULT_COLUMNS][1]
    narrow = StructType([f for f in source_schema().fields if f.name in NARROW_COLUMNS])
    floor, floor_narrow = "floor (the same Arrow batches, no decoding)", "floor, schema narrowed"
    sources: dict[str, Callable[[], DataFrame]] = {
        "kafkalog": lambda: spark.read.format("kafkalog").load(str(log)),
        "kafkalog, schema narrowed": lambda: spark.read.format("kafkalog").schema(narrow).load(str(log)),
        floor: lambda: spark.read.format("kafkalog_floor_ipc").option("dir", floors[DEFAULT_COLUMNS][0]).load(),
        floor_narrow: lambda: spark.read.format("kafkalog_floor_ipc").schema(narrow).option("dir", floors[NARROW_COLUMNS][0]).load(),
    }
    if args.parquet:
        parquet = real_parquet(work, log)
        spark_written = spark_parquet(spark, log, work / "parquet-spark")
        sources["parquet"] = lambda: spark.read.parquet(str(parquet))
        sources[SPARK_PARQUET] = lambda: spark.read.parquet(str(spark_written))
    print(f"\n{rows:,} rows (the default read) in {len(files)} non-empty .log files ({sum(f.stat().st_size for f in files) / 1e9:.2f} GB): "
          f"{what}; {cores} cores ({spark.sparkContext.master}); best of {args.repeat} rounds after a warm-up round; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| query | source | seconds | rows/s | rows/s per core | time / Parquet's | time / floor's | CPU s | CPU / floor's |")
    print("|---|---|---|---|---|---|---|---|---|")
    frames = {sname: make() for sname, make in sources.items()}
    cpu: dict[str, float] = {}
    results = best({sname: (lambda df=df: tuple(df.selectExpr("count(*)", "sum(length(value))").first())) for sname, df in frames.items()},
                   args.repeat, cpu)
    return print_rows("count(*), sum(length(value))", rows, cores, results, {"kafkalog": floor, "kafkalog, schema narrowed": floor_narrow},
                      expected=(rows, floor_value_bytes(floors[NARROW_COLUMNS][0])), cpu=cpu)


def floor_value_bytes(directory: str) -> int:
    """``sum(length(value))`` over the floor files of ``directory``, computed here with pyarrow
    (the answer every source must give when Parquet is not read)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    total = 0
    for path in sorted(Path(directory).glob("*.arrow")):
        f = pa.ipc.open_file(pa.memory_map(str(path)))
        for i in range(f.num_record_batches):
            values = f.get_batch(i).column("value")
            total += pc.sum(pc.binary_length(values)).as_py() or 0
    return total


def synthetic_table(spark: SparkSession, args: argparse.Namespace, cores: int) -> bool:
    """The synthetic table: ``count()`` and ``sum(length(value))`` over 1,000-record batches."""
    from pyspark.sql.types import StructType

    from kafkalog_spark.source import KafkaLogReader

    part, records = generate_log(args.cache, args.gigabytes)
    parquet = generate_parquet(args.cache, part)
    spark_written = spark_parquet(spark, part, args.cache / "parquet-spark")
    log_bytes = sum(f.stat().st_size for f in part.glob("*.log"))
    reader = KafkaLogReader({"path": str(part)}, StructType([]))
    spark.dataSource.register(floor_source([sum(b.num_rows for b in reader.read(p)) for p in reader.partitions()]))
    sources: dict[str, Callable[[str | StructType], DataFrame]] = {
        "kafkalog": lambda _narrow: spark.read.format("kafkalog").load(str(part)),
        "kafkalog, schema narrowed": lambda narrow: spark.read.format("kafkalog").schema(narrow).load(str(part)),
        "floor (Python data source, no decoding)": lambda _narrow: spark.read.format("kafkalog_floor").load(),
        "floor, schema narrowed": lambda narrow: spark.read.format("kafkalog_floor").schema(narrow).load(),
        "parquet": lambda _narrow: spark.read.parquet(str(parquet)),
        SPARK_PARQUET: lambda _narrow: spark.read.parquet(str(spark_written)),
    }
    #: query -> (the columns it needs, as a schema; the query)
    queries: dict[str, tuple[str | StructType, Callable[[DataFrame], object]]] = {
        "count()": (StructType([]), lambda df: df.count()),
        "sum(length(value))": ("value binary", lambda df: df.selectExpr("sum(length(value))").first()[0]),
    }
    print(f"{records:,} records, {log_bytes / 1e9:.2f} GB of .log, {cores} cores ({spark.sparkContext.master}); "
          f"best of {args.repeat} rounds after a warm-up round\n")
    print("| query | source | seconds | records/s | records/s per core | time / Parquet's | time / floor's |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for qname, (narrow, q) in queries.items():
        frames = {sname: make(narrow) for sname, make in sources.items()}
        results = best({sname: (lambda df=df, q=q: q(df)) for sname, df in frames.items()}, args.repeat)
        ok &= print_rows(qname, records, cores, results, FLOOR_OF)
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gigabytes", type=float, default=2.0, help="size of the generated log (default 2)")
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kafkalog-bench-spark")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2, help="local[N] (default 2)")
    ap.add_argument("--master", help="a Spark master URL instead of local[N] (a standalone cluster: spark://host:port)")
    ap.add_argument("--cluster", action="store_true", help="start a standalone cluster on 127.0.0.1 (two 1-core workers) and run on it")
    ap.add_argument("--tables", help="which tables: synthetic, real or both (default: both; real alone with --data)")
    ap.add_argument("--real-set", type=Path, default=GOLDEN_REAL / "cp760-flink-on-prem",
                    help="a golden-real set dir, or <golden-real>/all for every set (default cp760-flink-on-prem)")
    ap.add_argument("--copies", type=int, default=16, help="copies of the real set (default 16)")
    ap.add_argument("--data", type=Path, help="a log dir to read as it is in the real table (a bench/scale.py set's data dir) instead of copies of --real-set")
    ap.add_argument("--parquet", action=argparse.BooleanOptionalAction, default=True,
                    help="also read the rows as Parquet (default); --no-parquet checks the answers against the floor files instead")
    ap.add_argument("--planning", default="", help="N[,N...]: time planning alone over N partition dirs (e.g. 10000,100000), then stop")
    ap.add_argument("--planning-s3", type=int, default=0, help="also (or only) time planning over N partition dirs on moto's S3 (default none)")
    args = ap.parse_args(argv)
    if args.planning or args.planning_s3:
        return 0 if planning_table(args) else 1
    args.tables = args.tables or ("real" if args.data is not None else "synthetic,real")
    tables = {t.strip() for t in args.tables.split(",") if t.strip()}
    if not tables <= {"synthetic", "real"}:
        ap.error(f"unknown table in --tables {args.tables!r}")
    if args.data is not None and not args.data.is_dir():
        ap.error(f"--data {args.data} is not a directory")
    if "real" in tables and args.data is None and not (args.real_set.is_dir() or args.real_set.parent.is_dir()):
        ap.error(f"{args.real_set} is absent (the real-data table reads ../shared/golden-real)")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    args.cache.mkdir(parents=True, exist_ok=True)
    cluster = None
    if args.cluster:
        if args.master:
            ap.error("--cluster starts its own master: give --master or --cluster, not both")
        sys.path.insert(0, str(REPO / "tests"))
        from spark_cluster import start_cluster  # the tests' standalone cluster

        cluster = start_cluster(Path(tempfile.mkdtemp(prefix="kafkalog-bench-cluster-")))
        args.master = cluster.url
    try:
        return _run(args, tables)
    finally:
        if cluster is not None:
            cluster.stop()
            shutil.rmtree(cluster.log_dir, ignore_errors=True)


def _run(args: argparse.Namespace, tables: set[str]) -> int:
    """The tables asked for, in one session on ``args.master`` (else local[``args.cores``])."""
    from pyspark.sql import SparkSession

    import kafkalog_spark

    owned = SparkSession.getActiveSession() is None  # a caller's session (the smoke test's) is left running
    spark = (
        SparkSession.builder.master(args.master or f"local[{args.cores}]").config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "2g")
        .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    kafkalog_spark.register(spark)
    spark.dataSource.register(ipc_floor_source())
    cores = spark.sparkContext.defaultParallelism
    ok = True
    if "synthetic" in tables:
        ok &= synthetic_table(spark, args, cores)
    if "real" in tables:
        ok &= real_table(spark, args, cores)
    if owned:
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
