#!/usr/bin/env python
"""Encode/decode throughput of Kafka v2 record batches: kafkalog vs kafka-python vs aiokafka.

One run measures, for each workload (16-byte keys; 100-byte and 1 KiB values by default) and each
codec (none, gzip, snappy, lz4, zstd):

* encode: build ``--batch-records``-record v2 batches from pre-generated Python lists of keys,
  values and timestamps (kafkalog ``RecordBatchBuilder.append``/``build``; kafka-python and
  aiokafka ``DefaultRecordBatchBuilder.append``/``build``, the builders their producers use).
  Compression and the batch CRC-32C are part of building.
* decode: iterate every record of the log bytes kafkalog encoded, touching key, value, offset and
  timestamp (kafkalog ``LogReader(bytes).batches()`` then ``batch.records()``; the peers iterate
  their ``MemoryRecords`` batches and records). The batch CRC is checked where the library checks
  it by default: the kafka-python and aiokafka consumers call ``batch.validate_crc()``
  (``check_crcs=True``), kafkalog's ``batch.records()`` does not (``verify_crc=False``);
  ``--crc on|off`` forces one choice for all.

Data is generated from ``--seed`` and shared by all implementations; every peer's first encoded
batch is decoded by kafkalog and compared with the source (and, uncompressed, compared byte for
byte), and every peer's decode is checked against the source (record count and last record).

A measurement whose projected time exceeds ``--budget`` seconds (estimated from a short pilot
run) is timed on a prefix of the batches instead; records/s then come from that prefix and the
``note`` column says so (JSON: ``timed_records`` and ``projected_seconds``). Decoding uses the
batches kafkalog encoded, so a budget-limited kafkalog encode also limits the decode set.
The implementations run interleaved (round robin, best of up to ``--repeat`` runs each), so load
from other processes hits them alike; compare ratios, absolute figures drift between runs.

    python bench/records.py                 # full run: 1,000,000 records per workload
    python bench/records.py --quick         # 100,000 records, a smoke run
    python bench/records.py --codecs none,lz4 --value-size 100 --json
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import kafkalog
from kafkalog import Codec, LogReader, RecordBatch, RecordBatchBuilder

DEFAULT_RECORDS = 1_000_000
QUICK_RECORDS = 100_000
DEFAULT_VALUE_SIZES = (100, 1024)
KEY_SIZE = 16
BATCH_RECORDS = 1000
BASE_TIMESTAMP = 1_700_000_000_000
DEFAULT_SEED = 20261122
DEFAULT_BUDGET = 6.0
DEFAULT_REPEAT = 3
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
IMPLEMENTATIONS = ("kafkalog", "kafka-python", "aiokafka")
#: Big enough that the peers' builders never refuse a record (they return None past batch_size).
PEER_BATCH_SIZE = 1 << 30
NO_HEADERS: list[tuple[str, bytes | None]] = []

#: Default compression settings of each library's batch builder (for the notes under the table).
COMPRESSION_SETTINGS = {
    "kafkalog": "Kafka's bytes: gzip level 6, snappy as libsnappy 1.1.10, lz4 as lz4-java's fast compressor "
                "(kafkalog.fast._compress, or plain Python when not built), zstd level 3",
    "kafka-python": "gzip level 9, lz4 lz4.frame default, zstd level 3",
    "aiokafka": "gzip level 9, lz4 level 9 (cramjam), zstd level 3",
}

Record4 = tuple[int, int, bytes | None, bytes | None]  # offset, timestamp, key, value


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------- data
@dataclass
class Workload:
    name: str
    value_size: int
    keys: list[bytes]
    values: list[bytes]
    timestamps: list[int]
    batch_records: int

    @property
    def records(self) -> int:
        return len(self.keys)

    def batch_bounds(self, nbatches: int) -> list[tuple[int, int]]:
        n, size = self.records, self.batch_records
        return [(s, min(s + size, n)) for s in range(0, min(n, nbatches * size), size)]

    @property
    def total_batches(self) -> int:
        return -(-self.records // self.batch_records)

    def expected(self, i: int) -> Record4:
        return (i, self.timestamps[i], self.keys[i], self.values[i])


def make_corpus(rng: random.Random, size: int) -> bytes:
    """Text-like bytes (words from a seeded vocabulary): values compress about 2x, like logs."""
    letters = b"abcdefghijklmnopqrstuvwxyz"
    vocab = [bytes(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(4000)]
    words = rng.choices(vocab, k=size // 5)
    corpus = b" ".join(words)
    while len(corpus) < size:
        corpus += corpus
    return corpus[:size]


@functools.cache
def seeded_corpus(seed: int) -> bytes:
    """The 4 MiB corpus values are cut from: the same bytes for a seed, so made once per process
    (decode.py builds a workload per codec x value size x batch size from it)."""
    return make_corpus(random.Random(seed + 1), 4 << 20)


def make_workload(records: int, value_size: int, seed: int, batch_records: int) -> Workload:
    rng = random.Random(seed)
    keys = [b"user-%011d" % rng.randrange(10**11) for _ in range(records)]
    assert all(len(k) == KEY_SIZE for k in keys[:10])
    corpus = seeded_corpus(seed)
    span = len(corpus) - value_size
    vrng = random.Random(seed + 2)
    offsets = [vrng.randrange(span) for _ in range(records)]
    values = [corpus[o : o + value_size] for o in offsets]
    # About 3 records per millisecond: timestamp deltas stay small varints, as a producer's do.
    timestamps = [BASE_TIMESTAMP + (i * 3) // 8 for i in range(records)]
    name = f"k{KEY_SIZE}/v{value_size}"
    return Workload(name, value_size, keys, values, timestamps, batch_records)


# ---------------------------------------------------------------------------- implementations
class Impl:
    """One library: encode a prefix of a workload into batches, decode log bytes."""

    name = ""
    label = ""
    #: Does this library's consumer path check the batch CRC by default?
    default_crc = False
    crc_how = ""

    def unavailable(self, codec: str) -> str | None:
        """None when ``codec`` can be used, else why not."""
        return None

    def encode(self, w: Workload, nbatches: int, codec: str) -> list[bytes | bytearray]:
        raise NotImplementedError

    def decode(self, data: bytes, crc: bool) -> tuple[int, Record4 | None]:
        """Iterate every record, touching key/value/offset/timestamp; return (count, last record)."""
        raise NotImplementedError

    def records_of(self, data: bytes) -> list[Record4]:
        """Every record of ``data`` as tuples (for the untimed correctness checks)."""
        raise NotImplementedError


class KafkalogImpl(Impl):
    name = "kafkalog"
    default_crc = False
    crc_how = "batch.records(verify_crc=True)"

    def __init__(self) -> None:
        self.label = f"kafkalog {kafkalog.__version__}"

    def encode(self, w: Workload, nbatches: int, codec: str) -> list[bytes | bytearray]:
        c = Codec.from_name(codec)
        keys, values, tss = w.keys, w.values, w.timestamps
        out: list[bytes | bytearray] = []
        for start, end in w.batch_bounds(nbatches):
            builder = RecordBatchBuilder(start, compression=c, partition_leader_epoch=0)
            append = builder.append
            for t, k, v in zip(tss[start:end], keys[start:end], values[start:end], strict=True):
                append(t, k, v)
            out.append(builder.build())
        return out

    def decode(self, data: bytes, crc: bool) -> tuple[int, Record4 | None]:
        n = 0
        key = value = None
        offset = timestamp = -1
        for batch in LogReader(data).batches():
            if crc:
                batch.ensure_valid()
            for r in batch:  # as the peers iterate: records made one at a time
                key = r.key
                value = r.value
                offset = r.offset
                timestamp = r.timestamp
                n += 1
        return n, (offset, timestamp, key, value) if n else None

    def records_of(self, data: bytes) -> list[Record4]:
        return [(r.offset, r.timestamp, r.key, r.value) for b in LogReader(data).batches() for r in b.records(True)]


class PeerImpl(Impl):
    """kafka-python and aiokafka share the record-layer API (MemoryRecords, DefaultRecordBatchBuilder)."""

    default_crc = True
    crc_how = "batch.validate_crc(), as the consumer does (check_crcs=True)"
    codec_ids = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

    def __init__(self, memory_records: type, builder: type, codec_checks: dict[str, Callable[[], bool]]) -> None:
        self.memory_records = memory_records
        self.builder = builder
        self.codec_checks = codec_checks

    def unavailable(self, codec: str) -> str | None:
        check = self.codec_checks.get(codec)
        if check is not None and not check():
            return f"{codec} codec library missing"
        return None

    def encode(self, w: Workload, nbatches: int, codec: str) -> list[bytes | bytearray]:
        cid = self.codec_ids[codec]
        keys, values, tss = w.keys, w.values, w.timestamps
        make = self.builder
        headers = NO_HEADERS
        out: list[bytes | bytearray] = []
        for start, end in w.batch_bounds(nbatches):
            # Producer-side batches: base offset 0, offsets are deltas (the broker assigns offsets).
            builder = make(2, cid, 0, -1, -1, -1, PEER_BATCH_SIZE)
            append = builder.append
            for d, (t, k, v) in enumerate(zip(tss[start:end], keys[start:end], values[start:end], strict=True)):
                append(d, t, k, v, headers)
            out.append(builder.build())
        return out

    def decode(self, data: bytes, crc: bool) -> tuple[int, Record4 | None]:
        n = 0
        key = value = None
        offset = timestamp = -1
        records = self.memory_records(data)
        while records.has_next():
            batch = records.next_batch()
            if crc and not batch.validate_crc():
                raise ValueError(f"{self.name}: CRC mismatch in batch at offset {batch.base_offset}")
            for r in batch:
                key = r.key
                value = r.value
                offset = r.offset
                timestamp = r.timestamp
                n += 1
        return n, (offset, timestamp, key, value) if n else None

    def records_of(self, data: bytes) -> list[Record4]:
        out = []
        records = self.memory_records(data)
        while records.has_next():
            batch = records.next_batch()
            if not batch.validate_crc():
                raise ValueError(f"{self.name}: CRC mismatch in batch at offset {batch.base_offset}")
            out.extend((r.offset, r.timestamp, r.key, r.value) for r in batch)
        return out


def make_kafka_python() -> Impl | str:
    try:
        import kafka
        import kafka.codec as codec
        from kafka.record.default_records import DefaultRecordBatchBuilder
        from kafka.record.memory_records import MemoryRecords
    except ImportError as e:
        return f"kafka-python is not installed ({e})"
    impl = PeerImpl(
        MemoryRecords,
        DefaultRecordBatchBuilder,
        {"gzip": codec.has_gzip, "snappy": codec.has_snappy, "lz4": codec.has_lz4, "zstd": codec.has_zstd},
    )
    impl.name = "kafka-python"
    impl.label = f"kafka-python {kafka.__version__} (pure Python)"
    return impl


def make_aiokafka() -> Impl | str:
    try:
        import aiokafka
        import aiokafka.codec as codec
        from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
        from aiokafka.record.memory_records import MemoryRecords
    except ImportError as e:
        return f"aiokafka is not installed ({e})"
    cython = "_crecords" in DefaultRecordBatch.__module__ and "_crecords" in MemoryRecords.__module__
    impl = PeerImpl(
        MemoryRecords,
        DefaultRecordBatchBuilder,
        {"gzip": codec.has_gzip, "snappy": codec.has_snappy, "lz4": codec.has_lz4, "zstd": codec.has_zstd},
    )
    impl.name = "aiokafka"
    variant = "Cython extension" if cython else "pure-Python fallback (no Cython extension)"
    impl.label = f"aiokafka {aiokafka.__version__} ({variant})"
    return impl


# ------------------------------------------------------------------------------------ timing
@dataclass
class Timing:
    records: int  # records timed
    seconds: float  # best of the repeats
    total_records: int  # records in the full workload
    runs: int = 1  # timed runs (the best counts)

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else float("inf")

    @property
    def scaled(self) -> bool:
        return self.records < self.total_records

    @property
    def projected_seconds(self) -> float:
        return self.seconds * self.total_records / self.records if self.records else 0.0


def _timed(fn: Callable[..., Any], args: tuple) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    result = fn(*args)
    return time.perf_counter() - t0, result


@dataclass
class Task:
    """One implementation's side of a measurement, for :func:`measure_group`."""

    name: str
    #: Untimed: the arguments of ``fn`` covering the first ``nb`` batches.
    prepare: Callable[[int], tuple]
    fn: Callable[..., Any]
    #: Untimed: what to keep of ``fn``'s result (the peers' encodes keep only their first batch).
    keep: Callable[[Any], Any] = lambda result: result
    nb: int = 0
    runs: int = 0
    spent: float = 0.0
    best: float = float("inf")
    result: Any = None
    error: str | None = None


def measure_group(tasks: list[Task], available: int, budget: float, repeat: int) -> None:
    """Time each task on as many of ``available`` batches as fit ``budget`` seconds, interleaved.

    A pilot on about 1% of the batches (at least 2), run twice, warms each task up (the first call
    may compile or load code) and then estimates its cost per batch; the timed runs cover every
    batch, or a prefix that fits the budget. Runs go round
    robin over the tasks (up to ``repeat`` rounds, a task dropping out once another run would take
    it past the budget) and each task's best run counts: on a shared 2-core box single runs vary by
    up to 2x, and interleaving exposes every implementation to the same load swings.
    """
    pilot = min(available, max(2, available // 100))
    for t in tasks:
        try:
            args = t.prepare(pilot)
            _timed(t.fn, args)
            dt, _ = _timed(t.fn, args)
        except Exception as e:  # a peer failing is reported in its row, not fatal
            t.error = f"{type(e).__name__}: {e}"
            continue
        per_batch = dt / pilot
        t.nb = available if per_batch * available <= budget else max(pilot, min(available, int(budget / per_batch)))
        t.spent = dt
    prepared: dict[str, tuple] = {}
    for rnd in range(repeat):
        ran = False
        for t in tasks:
            if t.error or (rnd > 0 and t.spent + t.best > budget):
                prepared.pop(t.name, None)
                continue
            args = prepared.get(t.name)
            if args is None:
                args = prepared[t.name] = t.prepare(t.nb)
            try:
                dt, result = _timed(t.fn, args)
            except Exception as e:
                t.error = f"{type(e).__name__}: {e}"
                continue
            t.result = t.keep(result)
            del result
            t.runs += 1
            t.spent += dt
            t.best = min(t.best, dt)
            ran = True
        if not ran:
            break


# ------------------------------------------------------------------------------------- rows
@dataclass
class Row:
    workload: str
    codec: str
    implementation: str
    label: str
    crc_checked: bool | None = None
    encode: Timing | None = None
    decode: Timing | None = None
    encode_ratio: float | None = None  # kafkalog rate / this implementation's rate
    decode_ratio: float | None = None
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        d = {k: v for k, v in asdict(self).items() if k not in ("encode", "decode")}
        for op in ("encode", "decode"):
            t: Timing | None = getattr(self, op)
            d[op] = (
                None
                if t is None
                else {
                    "records_per_s": t.rate,
                    "timed_records": t.records,
                    "seconds": t.seconds,
                    "scaled": t.scaled,
                    "projected_seconds": t.projected_seconds,
                    "runs": t.runs,
                }
            )
        return d


def check_encoded(name: str, w: Workload, batches: list[bytes | bytearray], reference: bytes) -> str | None:
    """Decode implementation ``name``'s first batch with kafkalog and compare it with the source data."""
    first = bytes(batches[0])
    batch = RecordBatch(first)
    batch.ensure_valid()
    got = [(r.offset, r.timestamp, r.key, r.value) for r in batch.records()]
    end = min(w.records, w.batch_records)
    if got != [w.expected(i) for i in range(end)]:
        return f"{name}'s first encoded batch does not decode to the source records"
    # Byte for byte, except the partition leader epoch (bytes 12-15: the broker sets it, no CRC covers it).
    if batch.compression is Codec.NONE and (first[:12], first[16:]) != (reference[:12], reference[16:]):
        return f"{name}'s first uncompressed batch is not byte-identical to kafkalog's"
    return None


def run_codec(
    w: Workload, codec: str, impls: list[Impl], args: argparse.Namespace, missing: dict[str, str]
) -> list[Row]:
    rows = {impl.name: Row(w.name, codec, impl.name, impl.label) for impl in impls}
    for name, why in missing.items():
        rows[name] = Row(w.name, codec, name, name, notes=[f"n/a: {why}"])
    kl = impls[0]
    runnable = [kl]
    for impl in impls[1:]:
        why = impl.unavailable(codec)
        if why:
            rows[impl.name].notes.append(f"n/a: {why}")
        else:
            runnable.append(impl)

    def count(nb: int) -> int:
        return min(w.records, nb * w.batch_records)

    def timing(t: Task) -> Timing:
        return Timing(count(t.nb), t.best, w.records, t.runs)

    # encode; kafkalog's batches become the log every implementation decodes.
    log(f"  {w.name} {codec}: encode ({', '.join(i.name for i in runnable)})")
    enc = [
        Task(
            impl.name,
            lambda nb: (w, nb, codec),
            impl.encode,
            keep=(lambda out: out) if impl is kl else (lambda out: out[:1]),
        )
        for impl in runnable
    ]
    measure_group(enc, w.total_batches, args.budget, args.repeat)
    if enc[0].error:
        raise RuntimeError(f"kafkalog failed to encode {w.name} {codec}: {enc[0].error}")
    encoded: list[bytes] = enc[0].result
    enc[0].result = None
    rows[kl.name].encode = timing(enc[0])
    data = b"".join(encoded)
    ends: list[int] = []
    pos = 0
    for b in encoded:
        pos += len(b)
        ends.append(pos)
    reference = bytes(encoded[0])
    del encoded
    for t in enc[1:]:
        row = rows[t.name]
        if t.error:
            row.errors.append(f"encode failed: {t.error}")
            continue
        row.encode = timing(t)
        problem = check_encoded(t.name, w, t.result, reference)
        t.result = None
        if problem:
            row.errors.append(problem)

    # decode, after checking every implementation reads kafkalog's first batch right (CRC included)
    available = len(ends)
    head = data[: ends[0]]
    want_head = [w.expected(i) for i in range(count(1))]
    dec: list[Task] = []
    for impl in runnable:
        row = rows[impl.name]
        try:
            ok = impl.records_of(head) == want_head
        except Exception as e:
            ok = False
            row.errors.append(f"reading kafkalog's first batch failed: {type(e).__name__}: {e}")
        if not ok:
            row.errors.append(f"{impl.name} misreads kafkalog's first batch")
            continue
        crc = impl.default_crc if args.crc == "default" else args.crc == "on"
        row.crc_checked = crc

        def prepare(nb: int, crc: bool = crc) -> tuple:
            return (data if nb == available else data[: ends[nb - 1]], crc)

        dec.append(Task(impl.name, prepare, impl.decode))
    log(f"  {w.name} {codec}: decode ({', '.join(t.name for t in dec)})")
    measure_group(dec, available, args.budget, args.repeat)
    for t in dec:
        row = rows[t.name]
        if t.error:
            row.errors.append(f"decode failed: {t.error}")
            continue
        row.decode = timing(t)
        n, last = t.result
        want = count(t.nb)
        if n != want or last != w.expected(want - 1):
            row.errors.append(f"decoded {n} records (expected {want}) or a wrong last record")

    klrow = rows[kl.name]
    for row in rows.values():
        if klrow.encode and row.encode:
            row.encode_ratio = klrow.encode.rate / row.encode.rate
        if klrow.decode and row.decode:
            row.decode_ratio = klrow.decode.rate / row.decode.rate
        for op in ("encode", "decode"):
            t = getattr(row, op)
            if t is not None and t.scaled:
                row.notes.append(f"{op} timed on {t.records:,} of {t.total_records:,} records")
    return [rows[name] for name in IMPLEMENTATIONS if name in rows]


# ------------------------------------------------------------------------------------ output
def fmt_rate(t: Timing | None) -> str:
    if t is None:
        return "n/a"
    mark = "*" if t.scaled else ""
    return f"{t.rate / 1e6:.3f} M{mark}"


def fmt_ratio(r: float | None, is_self: bool) -> str:
    if is_self:
        return "-"
    return "n/a" if r is None else f"{r:.2f}x"


def render_table(rows: list[Row]) -> str:
    header = [
        "workload",
        "codec",
        "implementation",
        "CRC checked (decode)",
        "encode rec/s",
        "decode rec/s",
        "kafkalog/impl encode",
        "kafkalog/impl decode",
        "note",
    ]
    body = []
    for r in rows:
        is_self = r.implementation == "kafkalog"
        crc = "n/a" if r.crc_checked is None else ("yes" if r.crc_checked else "no")
        note = "; ".join(r.errors + r.notes)
        body.append(
            [
                r.workload,
                r.codec,
                r.implementation,
                crc,
                fmt_rate(r.encode),
                fmt_rate(r.decode),
                fmt_ratio(r.encode_ratio, is_self),
                fmt_ratio(r.decode_ratio, is_self),
                note,
            ]
        )
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body, strict=True)]
    right = {4, 5, 6, 7}

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(wd) if i in right else c.ljust(wd) for i, (c, wd) in enumerate(zip(cells, widths, strict=True))
        ]
        return "| " + " | ".join(parts) + " |"

    sep = (
        "|" + "|".join(("-" * (wd + 1) + ":") if i in right else ("-" * (wd + 2)) for i, wd in enumerate(widths)) + "|"
    )
    return "\n".join([line(header), sep, *(line(b) for b in body)])


# -------------------------------------------------------------------------------------- main
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--records", type=int, default=None, help=f"records per workload (default {DEFAULT_RECORDS:,})")
    p.add_argument("--quick", action="store_true", help=f"smoke run: {QUICK_RECORDS:,} records")
    p.add_argument("--codecs", default=",".join(CODECS), help="comma-separated codecs (default: all five)")
    p.add_argument(
        "--value-size",
        default=",".join(map(str, DEFAULT_VALUE_SIZES)),
        help="comma-separated value sizes in bytes, one workload each (default 100,1024)",
    )
    p.add_argument("--batch-records", type=int, default=BATCH_RECORDS, help="records per v2 batch (default 1000)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed of the generated data")
    p.add_argument(
        "--budget",
        type=float,
        default=DEFAULT_BUDGET,
        help="seconds one measurement may take before it is timed on a prefix (default %(default)s)",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=DEFAULT_REPEAT,
        help="time each measurement up to N times while within --budget, keep the best (default %(default)s)",
    )
    p.add_argument(
        "--crc",
        choices=("default", "on", "off"),
        default="default",
        help="check batch CRCs when decoding: as each library's consumer does by default, or always/never",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    a = p.parse_args(argv)
    if a.records is None:
        a.records = QUICK_RECORDS if a.quick else DEFAULT_RECORDS
    a.codecs = [c.strip().lower() for c in a.codecs.split(",") if c.strip()]
    for c in a.codecs:
        if c not in CODECS:
            p.error(f"unknown codec {c!r} (choose from {', '.join(CODECS)})")
    try:
        a.value_sizes = [int(v) for v in str(a.value_size).split(",") if v.strip()]
    except ValueError:
        p.error("--value-size takes comma-separated integers")
    if a.records < 1 or a.batch_records < 1 or a.repeat < 1 or a.budget <= 0 or not a.value_sizes:
        p.error("--records, --batch-records, --repeat, --budget and --value-size must be positive")
    return a


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    impls: list[Impl] = [KafkalogImpl()]
    missing: dict[str, str] = {}
    for name, make in (("kafka-python", make_kafka_python), ("aiokafka", make_aiokafka)):
        got = make()
        if isinstance(got, str):
            missing[name] = got
        else:
            impls.append(got)

    rows: list[Row] = []
    for size in args.value_sizes:
        t0 = time.perf_counter()
        w = make_workload(args.records, size, args.seed, args.batch_records)
        log(f"{w.name}: generated {w.records:,} records in {time.perf_counter() - t0:.1f}s")
        # The source lists (3 x N entries) would otherwise be traversed by every full collection
        # the decoders' allocations trigger, a cost that grows with --records and is the harness's,
        # not the libraries'. Freezing them leaves each library's own GC cost in the figures.
        gc.collect()
        gc.freeze()
        try:
            for codec in args.codecs:
                rows.extend(run_codec(w, codec, impls, args, missing))
        finally:
            gc.unfreeze()
        del w
        gc.collect()
    wall = time.perf_counter() - started
    load_end = os.getloadavg()[0]

    failed = [r for r in rows if r.errors]
    if args.json:
        doc = {
            "config": {
                "records": args.records,
                "key_size": KEY_SIZE,
                "value_sizes": args.value_sizes,
                "batch_records": args.batch_records,
                "codecs": args.codecs,
                "seed": args.seed,
                "budget_seconds": args.budget,
                "repeat": args.repeat,
                "crc": args.crc,
            },
            "machine": {
                "python": platform.python_version(),
                "platform": platform.platform(),
                "cpus": os.cpu_count(),
                "load_average_1min": {"start": load_start, "end": load_end},
            },
            "implementations": {
                i.name: {
                    "label": i.label,
                    "crc_by_default": i.default_crc,
                    "crc_check": i.crc_how,
                    "compression": COMPRESSION_SETTINGS[i.name],
                }
                for i in impls
            },
            "missing": missing,
            "results": [r.to_json() for r in rows],
            "wall_seconds": wall,
        }
        print(json.dumps(doc, indent=2))
    else:
        print(
            f"kafkalog record benchmark: {args.records:,} records per workload, {KEY_SIZE}-byte keys, "
            f"{args.batch_records} records per v2 batch, seed {args.seed}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs"
        )
        for i in impls:
            crc = "checks the batch CRC by default" if i.default_crc else "does not check the batch CRC by default"
            print(f"  {i.name}: {i.label}; decode {crc} ({i.crc_how}); {COMPRESSION_SETTINGS[i.name]}")
        for name, why in missing.items():
            print(f"  {name}: {why}")
        print()
        print(render_table(rows))
        print()
        print(
            "rec/s in millions of records per second; * = timed on a prefix of the batches (see note) "
            f"because the whole run was projected past --budget {args.budget:g}s. "
            "kafkalog/impl > 1 means kafkalog is faster. Encode includes compression and the CRC; "
            "compression levels differ between libraries (listed above). The generated source data is "
            "frozen out of the cyclic GC (gc.freeze) so that its size does not weigh on the decoders' collections."
        )
        print(
            f"CRC checking: --crc {args.crc}. Implementations run interleaved, best of up to {args.repeat} runs each. "
            f"Wall time {wall:.0f}s; 1-minute load average {load_start:.2f} at start, {load_end:.2f} at end"
            + (
                " (other processes compete for the CPUs: compare ratios, not absolute figures)."
                if max(load_start, load_end) > 0.5
                else "."
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
