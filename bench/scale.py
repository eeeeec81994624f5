"""A large, realistic backup made with kafkalog's own writer, and what each reader costs over it.

    .venv/bin/python bench/scale.py [--size 10GB] [--out /work/scale-data] [--seed 0] [--gen-jobs N]
                                    [--commands export,verify,info,scan,cat] [--jobs 1,2,all] [--json]
    .venv/bin/python bench/scale.py --size 100GB --out /big/disk     # the size issue 36 documents
    .venv/bin/python bench/scale.py --size 200MB                     # a quick run
    .venv/bin/python bench/scale.py --memory                         # bounded memory: one 1 GB segment, 100,000 tiny partitions
    .venv/bin/python bench/scale.py --skewed --size 500MB --repeat 3 --commands export,verify --jobs 1,2
                                                                     # one dominant partition: -j cuts it into ranges of segments

**The backup** (:func:`generate`) is a broker's log dir as a broker leaves it after a clean shutdown:
``meta.properties`` (version 1, a KRaft broker), ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``
and one directory per partition, each written by :class:`kafkalog.log.unified.Log` as a leader
appends (offsets, leader epochs, indexes, producer snapshots, ``partition.metadata``, rolled
segments; ``segment.bytes`` is small so every partition of some size has several segments).
Topics cover every codec (none, gzip, snappy, lz4, zstd: each topic's producer uses one), partition
sizes are skewed (Zipf, exponent 1.1, over all partitions), values are 1 KB of text-like bytes (JSON
events that compress about as real ones do), keys are short ids, some records carry headers.
One topic is compacted (``cleanup.policy=compact``, a small key space with tombstones, cleaned by
kafkalog's cleaner, then a dirty tail appended) and one is transactional (transactional producers,
commit and abort markers, so ``.txnindex`` files hold the aborted transactions). A few partitions of
the plain topics had retention move their log start offset, so their first segment does not start at 0.
Everything follows from ``--seed``: the same seed and size give the same files. The data set is
written under ``--out`` (``<out>/<size>-s<seed>/data``) with a ``manifest.json``; a later run with
the same size, seed and generator version reuses it. Generation spreads partitions over every core.

**The measures**: for each command, in a fresh process, timed from outside: wall time, rows/s, CPU
time (user + sys of the process and its children, from ``wait4``), peak RSS (the largest
``ru_maxrss`` of the process tree: the command's own, or of its largest worker). The commands are
``kafkalog export`` to Parquet, ``kafkalog verify``, ``kafkalog info``, ``kafkalog.scan`` (every
column, batches consumed and dropped) and ``kafkalog cat`` over the largest partition. Where a command
takes ``-j/--jobs`` (``scan``: ``workers=``) each is run at 1, 2 and all cores, and the output of
``export -j N`` is compared (a hash of every file) with ``-j 1``'s; a command without the option
is run once and its scaling shown as n/a. Printed as a Markdown table; ``--json`` prints the figures as JSON.

Run it on an idle machine: the figures of a loaded one are not the code's.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = Path(os.environ.get("KAFKALOG_SCALE_DATA", "/work/scale-data"))
#: changes whenever the generator writes other bytes for the same size and seed (a manifest of another version is regenerated)
GENERATOR_VERSION = 2
VALUE_SIZE = 1024
#: the time of the first record (2026-01-01T00:00:00Z); records are 1 to 20 ms apart
BASE_TIME_MS = 1_767_225_600_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
ZIPF_EXPONENT = 1.1
#: ``--skewed``: segment.bytes of its one partition at most (a 10 GB partition has about 300 segments; a small one 8)
SKEWED_SEGMENT_BYTES = 32 << 20
_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4, "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3, "TIB": 1024**4}


def parse_size(text: str) -> int:
    """``10GB``, ``200MB``, ``1.5GiB`` or a number of bytes, as bytes."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*([a-zA-Z]*)\s*", text)
    if m is None or m.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 10GB, 200MB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def size_label(n: int) -> str:
    """A short name for a size in bytes (``10GB``, ``200MB``)."""
    for unit, f in (("TB", 1000**4), ("GB", 1000**3), ("MB", 1000**2), ("KB", 1000)):
        if n >= f and n % (f // 1000 or 1) == 0:
            return f"{n / f:g}{unit}"
    return f"{n}B"


# ------------------------------------------------------------------------------------------ the plan
@dataclass(frozen=True)
class PartitionPlan:
    """What one worker writes: a partition dir of ``records`` records."""

    topic: str
    partition: int
    kind: str  # plain | compact | txn
    codec: str
    records: int
    segment_bytes: int
    topic_id: str
    seed: int
    #: the seed of the text the values are cut from (the backup's seed: one text for all partitions)
    pool_seed: int
    #: records whose segments retention has deleted (the log start offset moves past them); 0: none
    retained_from: int = 0
    value_size: int = VALUE_SIZE
    #: records per batch; 0: as a producer's linger fills them (1 to 64)
    batch_records: int = 0

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def _topic_id(rng: random.Random) -> str:
    import base64

    return base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()


def plan(
    size_bytes: int,
    seed: int,
    *,
    partitions: int | None = None,
    segment_bytes: int | None = None,
    zipf: float = ZIPF_EXPONENT,
    value_size: int = VALUE_SIZE,
    batch_records: int = 0,
) -> list[PartitionPlan]:
    """The partitions of a backup of about ``size_bytes`` (before compression), deterministic in ``seed``.

    By default one partition per 50 MB (at least 24, at most 2,000), in topics of 4 to 32 partitions;
    the topics' codecs cycle through :data:`CODECS`; one topic is compacted and one transactional.
    Sizes follow a Zipf law of exponent ``zipf`` over all partitions (shuffled, so a topic holds large and small ones).
    ``segment.bytes`` is a tenth of the mean partition's size (1 MB to 256 MB) unless given."""
    rng = random.Random(seed)
    n = partitions if partitions is not None else max(24, min(2000, size_bytes // (50 * 1000**2)))
    weights = [1 / (k + 1) ** zipf for k in range(n)]
    rng.shuffle(weights)
    scale = size_bytes / sum(weights)  # bytes on disk per unit of weight
    stored = {c: _stored_record_size(c, seed, value_size) for c in CODECS}
    seg = segment_bytes if segment_bytes is not None else max(1 << 20, min(256 << 20, size_bytes // n // 10))
    topics: list[tuple[str, str, str, int]] = []  # name, kind, codec, partitions
    left = n
    while left > 0:
        k = min(left, rng.choice((4, 6, 8, 12, 16, 24, 32)), max(2, n // 8))
        i = len(topics)
        kind = "compact" if i == 1 else "txn" if i == 2 else "plain"
        codec = CODECS[i % len(CODECS)]
        name = {"compact": f"users-state-{codec}", "txn": f"payments-txn-{codec}"}.get(kind, f"events{i:03d}-{codec}")
        topics.append((name, kind, codec, k))
        left -= k
    out = []
    j = 0
    for name, kind, codec, k in topics:
        tid = _topic_id(rng)
        for p in range(k):
            records = max(1, round(weights[j] * scale / stored[codec]))
            retained = records // 3 if kind == "plain" and rng.random() < 0.1 else 0
            out.append(PartitionPlan(name, p, kind, codec, records, seg, tid, rng.getrandbits(32), seed, retained, value_size, batch_records))
            j += 1
    return out


# --------------------------------------------------------------------------------------- the writer
_WORDS = (
    "order", "payment", "user", "session", "click", "view", "cart", "checkout", "refund", "shipment", "warehouse", "invoice",
    "created", "updated", "deleted", "pending", "accepted", "rejected", "EUR", "USD", "GBP", "mobile", "web", "api", "eu-west-1",
    "us-east-1", "ap-south-1", "true", "false", "null", "premium", "basic", "trial", "sku", "quantity", "price", "currency",
)


_POOLS: dict[int, bytes] = {}


def _text_pool(seed: int, size: int = 1 << 19) -> bytes:
    """Seeded JSON-like text to slice values from: words, numbers and ids, compressing about 3-4x as event JSON does
    (made once per process and seed)."""
    if (pool := _POOLS.get(seed)) is not None:
        return pool
    rng = random.Random(seed ^ 0x5EED)
    parts: list[str] = []
    n = 0
    while n < size:
        fields = ", ".join(
            f'"{rng.choice(_WORDS)}_{rng.randrange(100)}": ' + rng.choice((f'"{rng.choice(_WORDS)}"', str(rng.randrange(10**9)), f'"{rng.getrandbits(64):016x}"', f"{rng.random():.6f}"))
            for _ in range(rng.randrange(3, 9))
        )
        s = "{" + fields + "}\n"
        parts.append(s)
        n += len(s)
    pool = _POOLS[seed] = "".join(parts).encode()[:size]
    return pool


def _stored_record_size(codec: str, seed: int, value_size: int = VALUE_SIZE) -> float:
    """The bytes a record takes on disk in a batch of 32 of ``codec`` (measured once: the codecs are deterministic),
    so that a partition of a compressing topic holds as many bytes as its share of the size says."""
    from kafkalog.format.compression import Codec
    from kafkalog.format.records.v2 import RecordBatchBuilder

    pool = _text_pool(seed)
    b = RecordBatchBuilder(0, compression=Codec[codec.upper()])
    for i in range(32):
        b.append(BASE_TIME_MS + i, b"k-%012d" % i, pool[i * 7919 : i * 7919 + value_size])
    return len(b.build()) / 32


def _write_partition(p: PartitionPlan, log_dir: str) -> dict[str, object]:
    """Write ``p``'s partition dir under ``log_dir`` with kafkalog's Log (as a leader appends), clean it if
    compacted, and close it cleanly; return its checkpoint entries and counts."""
    from kafkalog.format.compression import Codec
    from kafkalog.format.records.control import ControlType
    from kafkalog.format.records.v2 import RecordBatchBuilder
    from kafkalog.log.cleaner import compact
    from kafkalog.log.producer_state import AppendOrigin
    from kafkalog.log.unified import Log, LogConfig

    rng = random.Random(p.seed)
    pool = _text_pool(p.pool_seed)
    codec = Codec[p.codec.upper()]
    clock_now = [BASE_TIME_MS]
    config = LogConfig(
        segment_bytes=p.segment_bytes, cleanup_policy=("compact",) if p.kind == "compact" else ("delete",),
        retention_ms=-1, min_cleanable_dirty_ratio=0.01, max_compaction_lag_ms=1 << 62,
    )
    path = os.path.join(log_dir, p.name)
    lg = Log.open(path, config, topic_id=p.topic_id, clock=lambda: clock_now[0], sync=False, writable=True)
    producer_id = 1000 + (p.seed % 100_000)
    epoch = 0
    sequence = 0
    leader_epoch = 0
    written = 0
    aborted = committed = 0
    keyspace = max(16, p.records // 8) if p.kind == "compact" else 1 << 30
    dirty_tail = p.records - p.records // 10 if p.kind == "compact" else p.records
    cleaned = False
    size = p.value_size
    limit = len(pool) - size
    while written < p.records:
        if p.kind == "compact" and not cleaned and written >= dirty_tail:
            lg.roll()
            compact(lg, clock_now[0], force=True)
            cleaned = True
        if rng.random() < 0.002:  # a leader election now and then
            leader_epoch += 1
        n = min(p.records - written, p.batch_records or rng.choice((1, 4, 8, 16, 16, 32, 32, 64)))
        txn = p.kind == "txn"
        b = RecordBatchBuilder(
            0, compression=codec, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence, is_transactional=txn,
        )
        for _ in range(n):
            clock_now[0] += rng.randrange(1, 20)
            if p.kind == "compact":
                key = b"user-%08d" % rng.randrange(keyspace)
                value = None if rng.random() < 0.05 else pool[(o := rng.randrange(limit)) : o + size]
            else:
                key = b"k-%012d" % rng.getrandbits(40)
                value = pool[(o := rng.randrange(limit)) : o + size]
            headers = [("trace-id", b"%016x" % rng.getrandbits(64))] if rng.random() < 0.2 else ()
            b.append(clock_now[0], key, value, headers)
        lg.append(b.build(), leader_epoch=leader_epoch)
        sequence = (sequence + n) & 0x7FFFFFFF
        written += n
        if txn and (rng.random() < 0.25 or written >= p.records):
            kind = ControlType.ABORT if (aborted + committed) % 8 == 1 else ControlType.COMMIT  # one transaction in 8 aborts
            m = RecordBatchBuilder(0, producer_id=producer_id, producer_epoch=epoch, is_transactional=True, is_control=True)
            m.append_end_txn_marker(kind, 0, clock_now[0])
            lg.append(m.build(), leader_epoch=leader_epoch, origin=AppendOrigin.COORDINATOR)
            aborted += kind is ControlType.ABORT
            committed += kind is ControlType.COMMIT
            if kind is ControlType.ABORT:
                epoch += 1  # an aborting producer re-initialises with a new epoch; its sequences start over
                sequence = 0
    if p.retained_from:
        lg.maybe_increment_log_start_offset(p.retained_from)
        lg.delete_old_segments(clock_now[0])
    lg.flush()
    result = {
        "name": p.name, "topic": p.topic, "partition": p.partition,
        "recovery_point": lg.recovery_point, "log_start_offset": lg.log_start_offset, "first_base": lg.segments[0].base_offset,
        "high_watermark": lg.high_watermark, "log_end_offset": lg.log_end_offset, "segments": len(lg.segments),
        "bytes": lg.size, "aborted": aborted, "committed": committed,
    }
    lg.close()
    for pending in os.listdir(path):  # the .deleted files of retention: a broker deletes them after file.delete.delay.ms
        if pending.endswith(".deleted"):
            os.unlink(os.path.join(path, pending))
    return result


def _write_one(args: tuple[PartitionPlan, str]) -> dict[str, object]:
    """A worker's task: the partition written in a staging log dir of its own (the cleaner keeps its checkpoint
    in the log dir), then moved into the data dir, so that a half-written partition never shows there."""
    p, data = args
    stage = os.path.join(os.path.dirname(data), "staging", p.name)
    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)
    result = _write_partition(p, stage)
    ckpt = os.path.join(stage, "cleaner-offset-checkpoint")
    if os.path.exists(ckpt):
        from kafkalog.format.checkpoints import read_offset_checkpoint

        result["cleaner_offset"] = next(iter(read_offset_checkpoint(ckpt).values()))
    shutil.rmtree(os.path.join(data, p.name), ignore_errors=True)
    os.rename(os.path.join(stage, p.name), os.path.join(data, p.name))
    shutil.rmtree(stage)
    return result


def generate_tiny(path: str | os.PathLike[str], partitions: int, records: int = 3, seed: int = 0) -> Path:
    """A log dir of one topic (``tiny``) with ``partitions`` partitions of ``records`` records each, returned.

    The first partition is written with kafkalog's Log; the others are hard links to its files (a
    partition's files do not name it; ``partition.metadata`` holds the topic id, the same for every
    partition of a topic), so that 100,000 partitions take seconds and few inodes' worth of data.
    Checkpoints list every partition, as a broker's do. Made again only when ``partitions`` or ``records`` changed."""
    from kafkalog.format.checkpoints import write_offset_checkpoint

    root = Path(path)
    data = root / "data"
    key = {"generator": GENERATOR_VERSION, "tiny": partitions, "records": records, "seed": seed}
    manifest_path = root / "manifest.json"
    if manifest_path.exists() and json.loads(manifest_path.read_text()).get("key") == key:
        return data
    shutil.rmtree(root, ignore_errors=True)
    data.mkdir(parents=True)
    rng = random.Random(seed)
    first = PartitionPlan("tiny", 0, "plain", "none", records, 1 << 20, _topic_id(rng), seed, seed, batch_records=records)
    r = _write_partition(first, str(data))
    src = data / first.name
    files = sorted(os.listdir(src))
    for k in range(1, partitions):
        d = data / f"tiny-{k}"
        d.mkdir()
        if k % 60_000 == 0:  # a file system's limit of links to one file (ext4: 65,000): link to a new copy from here on
            for f in files:
                shutil.copy2(src / f, d / f)
            src = d
            continue
        for f in files:
            os.link(src / f, d / f)
    end = int(r["log_end_offset"])  # type: ignore[call-overload]
    offsets = {("tiny", k): end for k in range(partitions)}
    write_offset_checkpoint(data / "recovery-point-offset-checkpoint", offsets, sync=False)
    write_offset_checkpoint(data / "replication-offset-checkpoint", offsets, sync=False)
    write_offset_checkpoint(data / "log-start-offset-checkpoint", {}, sync=False)
    _write_meta_properties(data, rng)
    manifest_path.write_text(json.dumps({"key": key, "partitions": partitions, "offsets": end * partitions}))
    return data


def _write_meta_properties(data: Path, rng: random.Random) -> None:
    """A KRaft broker's ``meta.properties`` (version 1), its cluster and directory ids from ``rng``."""
    cluster = _topic_id(rng)
    (data / "meta.properties").write_text(
        f"#\n#Thu Jan 01 00:00:00 UTC 2026\ncluster.id={cluster}\ndirectory.id={_topic_id(rng)}\nnode.id=1\nversion=1\n"
    )


def _manifest_key(size_bytes: int, seed: int, plans: list[PartitionPlan]) -> dict[str, object]:
    digest = hashlib.sha256(json.dumps([asdict(p) for p in plans]).encode()).hexdigest()
    return {"generator": GENERATOR_VERSION, "size_bytes": size_bytes, "seed": seed, "plan": digest}


def generate(
    path: str | os.PathLike[str],
    size_bytes: int,
    seed: int = 0,
    *,
    jobs: int | None = None,
    partitions: int | None = None,
    segment_bytes: int | None = None,
    value_size: int = VALUE_SIZE,
    batch_records: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Write (or reuse) a backup of about ``size_bytes`` under ``path`` and return its manifest.

    The log dir is ``<path>/data``; ``<path>/manifest.json`` says what it holds (partitions, rows,
    bytes, the plan's hash). A manifest of the same size, seed, plan and generator version means the
    data is there and is reused as it is. ``jobs`` worker processes (default: every CPU available)
    write partitions; ``partitions``, ``segment_bytes``, ``value_size`` and ``batch_records`` override the
    plan's (the memory cases use them);
    ``progress`` is called with each partition's name as it is finished."""
    from multiprocessing import get_context

    from kafkalog.format.checkpoints import write_offset_checkpoint

    root = Path(path)
    plans = plan(size_bytes, seed, partitions=partitions, segment_bytes=segment_bytes, value_size=value_size, batch_records=batch_records)
    key = _manifest_key(size_bytes, seed, plans)
    manifest_path = root / "manifest.json"
    if manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("key") == key and (root / "data").is_dir():
            return manifest
    shutil.rmtree(root, ignore_errors=True)
    data = root / "data"
    data.mkdir(parents=True)
    jobs = jobs or len(os.sched_getaffinity(0))
    order = sorted(plans, key=lambda p: -p.records)  # largest first: the pool ends with small tasks
    results: list[dict[str, object]] = []
    tasks = [(p, str(data)) for p in order]
    if jobs == 1:
        for t in tasks:
            results.append(_write_one(t))
            if progress:
                progress(t[0].name)
    else:
        with get_context("forkserver").Pool(jobs) as pool:
            for r in pool.imap_unordered(_write_one, tasks, chunksize=1 if len(tasks) < 1000 else 16):
                results.append(r)
                if progress:
                    progress(str(r["name"]))
    shutil.rmtree(root / "staging", ignore_errors=True)
    results.sort(key=lambda r: (r["topic"], r["partition"]))
    tp = [(str(r["topic"]), int(r["partition"])) for r in results]  # type: ignore[call-overload]
    write_offset_checkpoint(data / "recovery-point-offset-checkpoint", {t: int(r["recovery_point"]) for t, r in zip(tp, results, strict=True)})  # type: ignore[call-overload]
    write_offset_checkpoint(data / "replication-offset-checkpoint", {t: int(r["high_watermark"]) for t, r in zip(tp, results, strict=True)})  # type: ignore[call-overload]
    # LogManager writes a log start offset only above the first segment's base (as checkpoint_log_dir does)
    write_offset_checkpoint(data / "log-start-offset-checkpoint", {t: int(r["log_start_offset"]) for t, r in zip(tp, results, strict=True) if r["log_start_offset"] > r["first_base"]})  # type: ignore[call-overload,operator]
    write_offset_checkpoint(data / "cleaner-offset-checkpoint", {t: int(r["cleaner_offset"]) for t, r in zip(tp, results, strict=True) if "cleaner_offset" in r})  # type: ignore[call-overload]
    _write_meta_properties(data, random.Random(seed))
    manifest = {
        "key": key,
        "partitions": len(results),
        "topics": len({r["topic"] for r in results}),
        "offsets": sum(int(r["log_end_offset"]) - int(r["log_start_offset"]) for r in results),  # type: ignore[call-overload]
        "bytes": sum(int(r["bytes"]) for r in results),  # type: ignore[call-overload]
        "segments": sum(int(r["segments"]) for r in results),  # type: ignore[call-overload]
        "largest": max(results, key=lambda r: int(r["bytes"]))["name"],  # type: ignore[call-overload]
        "aborted_txns": sum(int(r["aborted"]) for r in results),  # type: ignore[call-overload]
    }
    manifest_path.write_text(json.dumps(manifest, indent=1))
    return manifest


# -------------------------------------------------------------------------------------- the measures
_SCAN = """
import inspect, sys
import kafkalog
path, workers = sys.argv[1], int(sys.argv[2])
kw = {}
if workers:
    kw = {"workers": workers} if "workers" in inspect.signature(kafkalog.scan).parameters else {"threads": workers}
rows = 0
for b in kafkalog.scan(path, **kw):
    rows += b.num_rows
print(rows)
"""


@dataclass
class Run:
    """One command's figures at one ``-j`` (None: the command has no such option)."""

    command: str
    jobs: int | None
    wall_s: float
    cpu_s: float
    peak_rss_mb: float  # the largest process of the tree (ru_maxrss)
    tree_rss_mb: float  # the largest sum over the tree's processes, sampled every 0.1 s
    rows: int
    exit_code: int
    same_as_j1: bool | None = None
    #: the CPU time of its busiest process (the command, or one worker): on a machine shared with other
    #: work, where wall times say little, the busiest process's CPU time is what bounds the wall time on an idle one
    busiest_cpu_s: float | None = None


def _tree(pid: int) -> dict[int, tuple[int, float]]:
    """``pid`` and its descendants (a forkserver's workers too: they are its children, not the command's),
    each with its VmRSS (KB) and its CPU time so far (user + sys, s), read from /proc; those gone are left out."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                rss = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            out[p] = (rss, (int(fields[11]) + int(fields[12])) / tick)  # utime, stime (stat fields 14 and 15)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError, ValueError):
            continue
    return out


def measure(cmd: list[str], *, count_lines: bool = False) -> tuple[float, float, float, float, int, str, str, float]:
    """Run ``cmd``; return wall s, CPU s (user + sys of it and its descendants), peak RSS MB of its largest
    process, the peak summed RSS MB of its tree, the lines it printed (``count_lines``: read as they come,
    else kept in a file), the last 2,000 characters of its stdout and of its stderr (``exit N: ...`` on a failure),
    and the CPU s of its busiest process (the command's own from ``wait4`` and the workers' as sampled).

    ``wait4`` counts the command and the children it waited for; workers a forkserver started are not its
    children, so the tree is also sampled every 0.1 s (RSS, and each process's last CPU time seen), and the
    larger of the two is taken (a worker's last 0.1 s may be missed)."""
    import threading

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if count_lines else out, stderr=err)
        peak = [0, 0]  # summed, largest (KB)
        cpu: dict[int, float] = {}
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                tree = _tree(proc.pid)
                if tree:
                    peak[0] = max(peak[0], sum(r for r, _ in tree.values()))
                    peak[1] = max(peak[1], max(r for r, _ in tree.values()))
                cpu.update((p, c) for p, (_, c) in tree.items())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        lines = 0
        if count_lines:
            assert proc.stdout is not None
            while chunk := proc.stdout.read(1 << 20):
                lines += chunk.count(b"\n")
        _, status, ru = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        code = os.waitstatus_to_exitcode(status)
        tails = []
        for f in (out, err):
            f.seek(max(0, f.seek(0, 2) - 2000))
            tails.append(f.read().decode(errors="replace"))
    if code:
        tails[1] = f"exit {code}: {tails[1]}"
    largest = max(peak[1], ru.ru_maxrss)
    own = ru.ru_utime + ru.ru_stime - sum(c for p, c in cpu.items() if p != proc.pid)  # wait4 counts the children it reaped too
    busiest = max([cpu.get(proc.pid, 0.0), own, *(c for p, c in cpu.items() if p != proc.pid)])
    return (wall, max(ru.ru_utime + ru.ru_stime, sum(cpu.values())), largest / 1024, max(peak[0], largest) / 1024, lines, tails[0], tails[1],
            busiest)


def _kafkalog(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafkalog", *args]


def supports_jobs(command: str) -> bool:
    """Whether ``kafkalog <command>`` takes ``-j/--jobs`` (``scan``: ``workers=`` or ``threads=``), asked of the
    kafkalog this bench runs, so that the bench works before and after the option exists."""
    if command == "scan":
        code = "import inspect, kafkalog; p = inspect.signature(kafkalog.scan).parameters; print('workers' in p or 'threads' in p)"
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "True"
    if command == "cat":
        return False
    text = subprocess.run(_kafkalog(command, "--help"), capture_output=True, text=True).stdout
    return "--jobs" in text


def tree_hash(root: Path) -> dict[str, str]:
    """Every file under ``root`` by its relative path, as a SHA-256."""
    out = {}
    for f in sorted(root.rglob("*")):
        if f.is_file():
            h = hashlib.sha256()
            with open(f, "rb") as fh:
                while chunk := fh.read(1 << 20):
                    h.update(chunk)
            out[str(f.relative_to(root))] = h.hexdigest()
    return out


def run_commands(data: Path, work: Path, commands: list[str], jobs: list[int], largest: str, log: Callable[[str], None] = print) -> list[Run]:
    """Each command over ``data`` at each of ``jobs`` (once when it takes no -j), in fresh processes."""
    runs: list[Run] = []
    rows = 0
    hashes: dict[int, dict[str, str]] = {}
    topic, _, part = largest.rpartition("-")
    for command in commands:
        j_values: list[int | None] = list(jobs) if supports_jobs(command) else [None]
        for j in j_values:
            jarg = [] if j is None else ["-j", str(j)]
            count = False
            out = work / f"export-j{j or 1}"
            if command == "export":
                shutil.rmtree(out, ignore_errors=True)
                cmd = _kafkalog("export", "-o", str(out), *jarg, str(data))
            elif command in ("verify", "info"):
                cmd = _kafkalog(command, *jarg, str(data))
            elif command == "scan":
                cmd = [sys.executable, "-c", _SCAN, str(data), str(j or 0)]
            elif command == "cat":
                cmd, count = _kafkalog("cat", "-t", topic, "-p", part, str(data)), True
            else:
                raise ValueError(f"unknown command {command!r}")
            log(f"  {command} {'' if j is None else f'-j {j}'} ...")
            wall, cpu, rss, tree, lines, stdout, tail, busiest = measure(cmd, count_lines=count)
            n = lines if count else rows
            if command == "scan" and stdout.strip().isdigit():
                n = int(stdout)
                rows = rows or n
            elif command == "export" and (m := re.search(r"exported ([\d,]+) rows", tail)):
                n = int(m.group(1).replace(",", ""))
                rows = rows or n
            code = int(tail.split(":")[0].split()[1]) if tail.startswith("exit ") else 0
            if code and command != "verify":
                log(f"    {tail.strip()[-500:]}")
            r = Run(command, j, wall, cpu, rss, tree, n, code, busiest_cpu_s=busiest)
            if command == "export" and code == 0:
                hashes[j or 1] = tree_hash(out)
                if (j or 1) != 1 and 1 in hashes:
                    r.same_as_j1 = hashes[j or 1] == hashes[1]
                if (j or 1) != 1:
                    shutil.rmtree(out, ignore_errors=True)
            runs.append(r)
    shutil.rmtree(work / "export-j1", ignore_errors=True)
    for r in runs:  # verify and info read every row (info: every partition) but print none: their rate is over the scan's rows
        if r.command in ("verify", "info"):
            r.rows = rows
    return runs


def table(runs: list[Run]) -> str:
    """The figures as a Markdown table, with each -j's speed-up over -j 1."""
    base = {r.command: r.wall_s for r in runs if r.jobs in (None, 1)}
    busiest = {r.command: r.busiest_cpu_s for r in runs if r.jobs in (None, 1)}
    lines = [
        "| command | -j | wall s | rows | rows/s | CPU s | rows per CPU s | peak RSS MB (largest process) | peak RSS MB (all processes) "
        "| speed-up vs -j 1 | CPU s of the busiest process (-j 1's over it) | output = -j 1 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        speed = "n/a" if r.jobs is None else f"{base[r.command] / r.wall_s:.2f}x" if r.command in base and r.wall_s else "?"
        same = "" if r.same_as_j1 is None else "same" if r.same_as_j1 else "DIFFERENT"
        rate = f"{r.rows / r.wall_s:,.0f}" if r.wall_s and r.rows else "-"
        per_cpu = f"{r.rows / r.cpu_s:,.0f}" if r.cpu_s and r.rows else "-"  # steadier than rows/s on a shared machine
        fail = "" if r.exit_code == 0 else f" (exit {r.exit_code})"
        b1 = busiest.get(r.command)
        crit = "-" if not r.busiest_cpu_s else f"{r.busiest_cpu_s:.1f}" + (f" ({b1 / r.busiest_cpu_s:.2f}x)" if b1 and r.jobs else "")
        lines.append(
            f"| {r.command}{fail} | {'n/a' if r.jobs is None else r.jobs} | {r.wall_s:.1f} | {r.rows:,} | {rate} | {r.cpu_s:.1f} | {per_cpu} "
            f"| {r.peak_rss_mb:.0f} | {r.tree_rss_mb:.0f} | {speed} | {crit} | {same} |"
        )
    return "\n".join(lines)


def memory_sets(out: Path, seed: int, log: Callable[[str], None]) -> list[tuple[str, Path, str]]:
    """The bounded-memory cases: a partition with one 1 GB segment (and one of 100 MB to compare), and
    100,000 tiny partitions (and 1,000 to compare); each as (label, data dir, largest partition)."""
    sets = []
    for label, size in (("one 100 MB segment", 100 * 1000**2), ("one 1 GB segment", 1000**3)):
        root = out / f"segment-{size_label(size)}-s{seed}"
        log(f"{label}: {root}")
        generate(root, size, seed, partitions=1, segment_bytes=min(size * 2, 2**31 - 1), value_size=4096, batch_records=64)
        sets.append((label, root / "data", "events000-none-0"))
    for n in (1000, 100_000):
        log(f"{n:,} tiny partitions: {out / f'tiny-{n}'}")
        sets.append((f"{n:,} tiny partitions", generate_tiny(out / f"tiny-{n}", n, seed=seed), "tiny-0"))
    return sets


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=parse_size, default=parse_size("10GB"), help="the backup's size on disk (default 10GB; e.g. 200MB, 100GB)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where generated sets are kept (default {DEFAULT_OUT}, or $KAFKALOG_SCALE_DATA)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gen-jobs", type=int, help="worker processes that generate (default: every CPU available)")
    ap.add_argument("--commands", default="export,verify,info,scan,cat", help="comma-separated (default: export,verify,info,scan,cat)")
    ap.add_argument("--jobs", default="1,2,all", help="the -j values (default 1,2,all; all: the CPUs available)")
    ap.add_argument("--memory", action="store_true", help="instead: peak RSS over one 1 GB segment and over 100,000 tiny partitions (and small sets to compare)")
    ap.add_argument("--skewed", action="store_true", help=(
        "instead: one partition of --size, in segments of 32 MiB at most (<out>/segsplit-<size>-s<seed>): the backup one huge partition "
        "dominates, which -j cuts into ranges of segments"))
    ap.add_argument("--repeat", type=int, default=1, help="run the commands this many times, interleaved (-j 1, -j 2, ..., again): "
                    "on a shared machine, compare ratios within one round")
    ap.add_argument("--generate-only", action="store_true", help="write (or reuse) the set and stop")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    args = ap.parse_args(argv)
    ncpu = len(os.sched_getaffinity(0))
    jobs = sorted({ncpu if j == "all" else int(j) for j in args.jobs.split(",")})
    commands = args.commands.split(",")

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    from kafkalog.tools.command import Progress

    result: dict[str, object] = {"cpus": ncpu, "jobs": jobs}
    if args.memory:
        sets = memory_sets(args.out / "memory", args.seed, log)
        if args.generate_only:
            return 0
        result["sets"] = []
        for label, data, largest in sets:
            log(label)
            runs = run_commands(data, args.out / "memory" / "work", commands, jobs, largest, log)
            result["sets"].append({"set": label, "runs": [asdict(r) for r in runs]})  # type: ignore[attr-defined]
            if not args.json:
                print(f"\n### {label}\n\n{table(runs)}")
    else:
        skew = {"partitions": 1, "segment_bytes": min(SKEWED_SEGMENT_BYTES, args.size // 8)} if args.skewed else {}
        root = args.out / f"{'segsplit-' if args.skewed else ''}{size_label(args.size)}-s{args.seed}"
        progress = Progress(sys.stderr, "generating")
        progress.set_total(len(plan(args.size, args.seed, **skew)))  # type: ignore[arg-type]
        t0 = time.perf_counter()
        manifest = generate(root, args.size, args.seed, jobs=args.gen_jobs, progress=progress, **skew)  # type: ignore[arg-type]
        progress.done()
        log(f"{root}: {manifest['partitions']} partitions, {manifest['bytes']:,} bytes ({time.perf_counter() - t0:.0f} s)")
        result["manifest"] = manifest
        if args.generate_only:
            return 0
        rounds = [run_commands(root / "data", root / "work", commands, jobs, str(manifest["largest"]), log) for _ in range(args.repeat)]
        result["runs"] = [asdict(r) for runs in rounds for r in runs]
        if not args.json:
            print(f"{manifest['bytes'] / 1e9:.2f} GB, {manifest['partitions']} partitions in {manifest['topics']} topics, "
                  f"{manifest['segments']} segments, {ncpu} CPUs, load average {os.getloadavg()[0]:.1f}; cat reads {manifest['largest']}\n")
            for k, runs in enumerate(rounds):
                print(("" if k == 0 else "\n") + (f"round {k + 1} of {len(rounds)}\n\n" if len(rounds) > 1 else "") + table(runs))
    if args.json:
        print(json.dumps(result, indent=1))
    bad = [r for s in ([result.get("runs", [])] + [s["runs"] for s in result.get("sets", [])]) for r in s  # type: ignore[union-attr,operator]
           if r["exit_code"] not in (0,) or r["same_as_j1"] is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
