"""Fuzz every kafkalog reader: mutations of Kafka-written files, optionally coverage-guided (atheris).

Every input must decode or raise a KafkaLogError subclass that carries a position; any other
exception, an input taking over a second, or an allocation past a bound is a finding. Run:

    python bench/fuzz.py --inputs 1000000           # seeded mutation run, prints a table
    KAFKALOG_NO_EXTENSIONS=1 python bench/fuzz.py --atheris --seconds 600   # coverage-guided (`pip install atheris`)

Crashing inputs are written to bench/out/fuzz-crashes/ for the golden bad-data corpus.
"""

from __future__ import annotations

import argparse
import random
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "codec"))

from kafkalog import KafkaLogError, LogReader  # noqa: E402
from kafkalog.fast.columnar import iter_columns  # noqa: E402
from kafkalog.format.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint, read_partition_metadata  # noqa: E402
from kafkalog.format.index import OffsetIndex, TimeIndex  # noqa: E402
from kafkalog.format.records.v2 import RecordBatch  # noqa: E402
from kafkalog.format.snapshot import read_producer_snapshot  # noqa: E402
from kafkalog.format.txnindex import read_txn_index  # noqa: E402
from kafkalog.internal import decode_record  # noqa: E402
from kafkalog.tools.canonical import log_lines  # noqa: E402

GOLDEN = REPO / "golden"
#: Bound on decompressed bytes per batch during fuzzing (a bomb must be refused, not allocated).
MAX_DECOMPRESSED = 8 << 20


def _log(data: bytes) -> None:
    with LogReader(data, max_decompressed_size=MAX_DECOMPRESSED) as r:
        batches = list(r.batches())
    for b in batches:
        _ = (b.is_valid, b.compression, b.timestamp_type, b.last_offset)
        recs = b.records()
        if isinstance(b, RecordBatch):
            assert [x.offset for x in b.records_plain()] == [x.offset for x in recs]
    list(iter_columns(batches))
    list(log_lines(batches, "fuzz"))


def _internal(data: bytes) -> None:
    with LogReader(data, max_decompressed_size=MAX_DECOMPRESSED) as r:
        for b in r.batches():
            for rec in b.records():
                for topic in ("__consumer_offsets", "__transaction_state", "__cluster_metadata"):
                    try:
                        decode_record(topic, rec, control=isinstance(b, RecordBatch) and b.is_control)
                    except KafkaLogError as e:
                        _check(e)


def _index(data: bytes) -> None:
    idx = OffsetIndex.read(data=data, base_offset=100)
    idx.lookup(150)


def _time_index(data: bytes) -> None:
    TimeIndex.read(data=data, base_offset=100).lookup(1700000000000)


#: reader name -> (function, seed files)
TARGETS: dict[str, tuple[Callable[[bytes], object], list[Path]]] = {
    "log": (_log, sorted(p for p in (GOLDEN / "kafka").rglob("*.log") if 0 < p.stat().st_size < 5000)),
    "internal": (_internal, sorted(p for p in (GOLDEN / "kafka" / "logdir" / "txnstate-0").glob("*.log") if p.stat().st_size)),
    "index": (_index, sorted(p for p in (GOLDEN / "kafka" / "logdir").rglob("*.index") if p.stat().st_size)),
    "timeindex": (_time_index, sorted(p for p in (GOLDEN / "kafka" / "logdir").rglob("*.timeindex") if p.stat().st_size)),
    "txnindex": (lambda d: read_txn_index(data=d), sorted((GOLDEN / "kafka" / "logdir").rglob("*.txnindex"))),
    "snapshot": (lambda d: read_producer_snapshot(data=d), sorted((GOLDEN / "kafka" / "logdir").rglob("*.snapshot"))),
    "leader-epoch-checkpoint": (lambda d: read_leader_epoch_checkpoint(data=d), sorted((GOLDEN / "kafka" / "logdir").rglob("leader-epoch-checkpoint"))),
    "offset-checkpoint": (lambda d: read_offset_checkpoint(data=d), sorted((GOLDEN / "real").rglob("recovery-point-offset-checkpoint"))[:3]),
    "partition.metadata": (lambda d: read_partition_metadata(data=d), sorted((GOLDEN / "kafka" / "logdir").rglob("partition.metadata"))),
}


def _check(e: KafkaLogError) -> None:
    if e.position is None and e.file is None and e.offset is None:
        raise AssertionError(f"{type(e).__name__} without a location: {e}")


def mutate(rnd: random.Random, data: bytes, pool: list[bytes]) -> bytes:
    """One to four mutations: bit flips, interesting integers, truncation, splices, duplication."""
    b = bytearray(data)
    for _ in range(rnd.randint(1, 4)):
        op = rnd.randrange(7)
        if not b:
            b = bytearray(rnd.randbytes(rnd.randint(1, 64)))
        i = rnd.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rnd.randrange(8)
        elif op == 1:
            b[i] = rnd.randrange(256)
        elif op == 2:
            width = rnd.choice([1, 2, 4, 8])
            val = rnd.choice([0, 1, 0x7F, 0x80, 0xFF, 2**31 - 1, 2**31, 2**32 - 1, 2**63 - 1, 2**64 - 1, rnd.getrandbits(64)])
            b[i : i + width] = (val & (2 ** (8 * width) - 1)).to_bytes(width, "big")
        elif op == 3:
            del b[rnd.randrange(len(b) + 1) :]
        elif op == 4:
            other = rnd.choice(pool)
            j = rnd.randrange(len(other) + 1)
            b[i:] = other[j : j + rnd.randint(0, 200)]
        elif op == 5:
            j = rnd.randrange(i, len(b) + 1)
            b[j:j] = b[i:j]
        else:
            b[i:i] = bytes([0x80] * rnd.randint(1, 12))  # overlong varint runs
    return bytes(b)


class Outcome:
    """Counts per target and the findings (inputs that broke a rule)."""

    def __init__(self) -> None:
        self.tried: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.crashes: list[tuple[str, bytes, str]] = []
        self.hangs: list[tuple[str, bytes, float]] = []
        self.slowest = 0.0


def run_one(name: str, fn: Callable[[bytes], object], data: bytes, out: Outcome, time_limit: float = 1.0) -> None:
    """Feed one input to one reader and record what happened."""
    out.tried[name] = out.tried.get(name, 0) + 1
    t = time.perf_counter()
    try:
        fn(data)
    except KafkaLogError as e:
        out.errors[name] = out.errors.get(name, 0) + 1
        try:
            _check(e)
        except AssertionError as a:
            out.crashes.append((name, data, str(a)))
    except Exception as e:  # noqa: BLE001 - any other exception is exactly what we look for
        out.crashes.append((name, data, f"{type(e).__name__}: {e}"))
    dt = time.perf_counter() - t
    out.slowest = max(out.slowest, dt)
    if dt > time_limit:
        out.hangs.append((name, data, dt))


def fuzz(inputs: int, seed: int, targets: list[str] | None = None, progress: bool = False) -> Outcome:
    """Run ``inputs`` mutated inputs spread over the targets, deterministically for ``seed``."""
    rnd = random.Random(seed)
    names = targets or list(TARGETS)
    seeds = {n: [p.read_bytes() for p in TARGETS[n][1]] for n in names}
    pool = [d for v in seeds.values() for d in v]
    out = Outcome()
    start = time.time()
    for k in range(inputs):
        name = names[k % len(names)]
        fn, _ = TARGETS[name]
        base = rnd.choice(seeds[name]) if seeds[name] else b""
        run_one(name, fn, mutate(rnd, base, pool), out)
        if progress and k % 10000 == 0 and sys.stderr.isatty():
            sys.stderr.write(f"\r{k:,} inputs, {len(out.crashes)} crashes, {time.time() - start:.0f}s")
    return out


def _report(out: Outcome, seconds: float) -> None:
    print("| reader | inputs | rejected (KafkaLogError) | crashes | hangs (>1 s) |")
    print("|---|--:|--:|--:|--:|")
    for name in out.tried:
        c = sum(1 for n, _, _ in out.crashes if n == name)
        h = sum(1 for n, _, _ in out.hangs if n == name)
        print(f"| {name} | {out.tried[name]:,} | {out.errors.get(name, 0):,} | {c} | {h} |")
    total = sum(out.tried.values())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\n{total:,} inputs in {seconds:.0f} s; {len(out.crashes)} crashes, {len(out.hangs)} hangs; "
          f"slowest input {out.slowest * 1000:.0f} ms; peak RSS {rss:.0f} MB")


def _atheris(seconds: int, names: list[str]) -> int:
    """Coverage-guided run (libFuzzer via atheris) over kafkalog's Python code: the first byte of
    an input picks the reader, the rest is its input; Kafka-written files seed the corpus. Set
    KAFKALOG_NO_EXTENSIONS=1 so that the compiled walkers run as (instrumented) Python too."""
    import tempfile

    import atheris

    atheris.instrument_all()
    corpus = Path(tempfile.mkdtemp(prefix="kafkalog-fuzz-corpus-"))
    for i, name in enumerate(names):
        for j, path in enumerate(TARGETS[name][1]):
            (corpus / f"{name}-{j}").write_bytes(bytes([i]) + path.read_bytes())

    def one(data: bytes) -> None:
        if not data:
            return
        name = names[data[0] % len(names)]
        out = Outcome()
        run_one(name, TARGETS[name][0], data[1:], out)
        if out.crashes:
            raise RuntimeError(f"{name}: {out.crashes[0][2]}")

    argv = [sys.argv[0], f"-max_total_time={seconds}", "-timeout=1", "-rss_limit_mb=2048", "-max_len=65536", str(corpus)]
    atheris.Setup(argv, one)
    atheris.Fuzz()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--inputs", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=20261122)
    p.add_argument("--targets", help="comma-separated subset of: " + ", ".join(TARGETS))
    p.add_argument("--atheris", action="store_true", help="coverage-guided with atheris (libFuzzer) over every reader")
    p.add_argument("--seconds", type=int, default=600, help="with --atheris: how long to run")
    args = p.parse_args(argv)
    if args.atheris:
        return _atheris(args.seconds, args.targets.split(",") if args.targets else list(TARGETS))
    t = time.time()
    out = fuzz(args.inputs, args.seed, args.targets.split(",") if args.targets else None, progress=True)
    _report(out, time.time() - t)
    if out.crashes or out.hangs:
        crash_dir = REPO / "bench" / "out" / "fuzz-crashes"
        crash_dir.mkdir(parents=True, exist_ok=True)
        for i, (name, data, why) in enumerate(out.crashes + [(n, d, f"hang {s:.1f}s") for n, d, s in out.hangs]):
            (crash_dir / f"{name}-{i}.bin").write_bytes(data)
            print(f"{name}-{i}.bin: {why}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
