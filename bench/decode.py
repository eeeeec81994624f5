#!/usr/bin/env python
"""Decode throughput: kafkalog columnar and objects vs aiokafka and kafka-python, plus the limits.

One run prints four tables:

1. **decode**: for each codec x value size (100 B, 1 KiB; 16-byte keys) x records per batch (100,
   1,000), the records/s and MB/s (log bytes) of
   * ``kafkalog columnar``: ``kafkalog.fast.arrow.to_arrow(LogReader(bytes))`` (Arrow record batches:
     key, value, offset, timestamp; decoded a chunk of batches at a time, no Python object per record),
   * ``kafkalog columnar views``: the same with ``views=True`` (key and value as Arrow binary
     views into each chunk's decompressed records: no key or value is copied),
   * ``kafkalog objects``: ``for r in batch`` over ``LogReader(bytes).batches()``, touching key,
     value, offset and timestamp of each :class:`kafkalog.Record`,
   * ``aiokafka`` and ``kafka-python``: their ``MemoryRecords`` batches and records, touching the
     same fields,
   and each one's ratio to aiokafka, all measured in the same run, interleaved (round robin, best
   of ``--repeat``). The CRC is checked as each library's consumer does by default (aiokafka and
   kafka-python: ``check_crcs=True``; kafkalog's readers do not check it unless asked).
2. **decompression**: for lz4, zstd, gzip and snappy, the time to decompress every batch payload
   with the codec library alone, the fastest way measured (each way decompresses every payload, in
   the same interleaved rounds; the table names the winner): lz4 frame blocks with
   ``cramjam.lz4.decompress_block_into`` or ``lz4.block.decompress``; zstd with ``zstandard``
   streaming into a reused buffer or to bytes; gzip with libdeflate (``deflate.gzip_decompress``)
   or zlib; snappy's 32 KiB blocks with ``cramjam.snappy.decompress_raw_into``; vs kafkalog's full
   columnar decode of the same batches (which decompresses them through :mod:`kafkalog.fast.native`:
   the codec libraries' C functions, and its own snappy decoder): the ratio is what decoding adds
   on top of decompression.
3. **index open**: ``OffsetIndex.read`` and ``TimeIndex.read`` of a 10 MiB file (Kafka's
   default ``segment.index.bytes``), all entries and preallocated with 20 entries, best of 20,
   file in the page cache.
4. **memory**: peak RSS (VmHWM, or ``ru_maxrss`` without /proc) of a fresh process reading a 2 GiB log (1 KiB values,
   1,000-record batches, made by copying one batch with its base offset patched; the CRC does not
   cover it) through both kafkalog paths, beside the RSS of the same process before reading.

Data comes from bench/records.py's generator (same seed, text-like values); kafkalog encodes the
log every decoder reads, after checking every decoder reads its first batch right.

    python bench/decode.py            # full run (several minutes on 2 cores)
    python bench/decode.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cramjam
import lz4.block
import numpy as np
import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kafkalog  # noqa: E402
import records as recbench  # noqa: E402  (bench/records.py: data generator, peers, timing harness)
from kafkalog import LogReader, RecordBatch, RecordBatchBuilder  # noqa: E402
from kafkalog.fast.arrow import to_arrow  # noqa: E402
from kafkalog.format.compression import _lz4_blocks  # noqa: E402 - the frame walk Kafka-checked, shared with the decoder
from kafkalog.format.index import OFFSET_INDEX_DTYPE, TIME_INDEX_DTYPE, OffsetIndex, TimeIndex  # noqa: E402

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
VALUE_SIZES = (100, 1024)
BATCH_SIZES = (100, 1000)
DEFAULT_RECORDS = 200_000
QUICK_RECORDS = 4_000
#: Cap on one workload's uncompressed data, so that 1 KiB workloads stay within memory.
MAX_WORKLOAD_BYTES = 64 << 20
ARROW_COLUMNS = ("key", "value", "offset", "timestamp")
INDEX_BYTES = 10 << 20
RSS_LOG_BYTES = 2 << 30
QUICK_RSS_LOG_BYTES = 32 << 20
#: Rows per Arrow batch in the memory row (an Arrow batch of 1 KiB values holds ~1 MiB per 1,000 rows).
RSS_ARROW_ROWS = 8192
Record4 = tuple[int, int, bytes | None, bytes | None]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------ decoders
def decode_columnar(data: bytes, crc: bool, views: bool = False) -> tuple[int, Record4 | None]:
    """Arrow batches of every record: count them and read back the last one."""
    n = 0
    last = None
    for rb in to_arrow(LogReader(data), columns=ARROW_COLUMNS, max_rows=32768, views=views):
        n += rb.num_rows
        last = rb
    if last is None:
        return 0, None
    i = last.num_rows - 1
    ts_us = last.column("timestamp").cast("int64")[i].as_py()
    return n, (last.column("offset")[i].as_py(), ts_us // 1000, last.column("key")[i].as_py(), last.column("value")[i].as_py())


def decode_columnar_views(data: bytes, crc: bool) -> tuple[int, Record4 | None]:
    return decode_columnar(data, crc, views=True)


def decode_objects(data: bytes, crc: bool) -> tuple[int, Record4 | None]:
    n = 0
    key = value = None
    offset = timestamp = -1
    for batch in LogReader(data).batches():
        if crc:
            batch.ensure_valid()
        for r in batch:
            key = r.key
            value = r.value
            offset = r.offset
            timestamp = r.timestamp
            n += 1
    return n, (offset, timestamp, key, value) if n else None


_ZSTD = zstandard.ZstdDecompressor()


def lz4_frame_blocks(frame: bytes) -> int:
    """Decompress an lz4 frame as Kafka writes it (independent blocks; the frame walked by
    kafkalog's checked block reader) with lz4.block alone."""
    total = 0
    mv = memoryview(frame)
    for pos, size, stored, block_max in _lz4_blocks(frame, 2):
        total += size if stored else len(lz4.block.decompress(mv[pos : pos + size], uncompressed_size=block_max))
    return total


#: One reused output buffer for the "into" ways (as big as one batch's records can be here).
_OUT = np.empty(8 << 20, np.uint8)


def lz4_frame_blocks_into(frame: bytes) -> int:
    """The same frame walk, each block decompressed by cramjam into the reused buffer."""
    d = 0
    mv = memoryview(frame)
    for pos, size, stored, block_max in _lz4_blocks(frame, 2):
        if stored:
            _OUT[d : d + size] = np.frombuffer(frame, np.uint8, size, pos)
            d += size
        else:
            d += cramjam.lz4.decompress_block_into(mv[pos : pos + size], _OUT[d : d + block_max])
    return d


def zstd_stream(frame: bytes) -> int:
    """Decompress a zstd frame without content size (as Kafka writes it) with zstandard alone."""
    return len(_ZSTD.decompressobj().decompress(frame))


def zstd_stream_into(frame: bytes) -> int:
    """The same, streamed into the reused buffer."""
    d = 0
    with _ZSTD.stream_reader(frame) as reader:
        while got := reader.readinto(_OUT[d:]):
            d += got
    return d


def gzip_libdeflate(payload: bytes) -> int:
    """Inflate Kafka's one gzip member with libdeflate (its output size read from the trailer)."""
    import deflate

    return len(deflate.gzip_decompress(payload))


def gzip_zlib(payload: bytes) -> int:
    """The same with zlib (what the codec module reads any gzip payload with)."""
    return len(zlib.decompress(payload, 31))


def snappy_blocks_into(payload: bytes) -> int:
    """Kafka's snappy-java stream, each 32 KiB block decompressed by cramjam into the reused buffer."""
    d, pos, mv = 0, 16, memoryview(payload)
    while pos < len(payload):
        (n,) = struct.unpack_from(">i", payload, pos)
        d += cramjam.snappy.decompress_raw_into(mv[pos + 4 : pos + 4 + n], _OUT[d:])
        pos += 4 + n
    return d


#: Ways to decompress a batch payload with the codec library alone: the fastest counts.
DECOMPRESS_ONLY: dict[str, dict[str, Callable[[bytes], int]]] = {
    "lz4": {"cramjam lz4 block_into": lz4_frame_blocks_into, "lz4.block": lz4_frame_blocks},
    "zstd": {"zstandard readinto": zstd_stream_into, "zstandard decompressobj": zstd_stream},
    "gzip": {"libdeflate": gzip_libdeflate, "zlib": gzip_zlib},
    "snappy": {"cramjam snappy raw_into": snappy_blocks_into},
}


# ------------------------------------------------------------------------------------- rows
@dataclass
class Row:
    codec: str
    value_size: int
    batch_records: int
    implementation: str
    records: int = 0  # records timed
    log_bytes: int = 0  # log bytes timed
    seconds: float = 0.0
    crc: bool | None = None
    ratio: float | None = None  # records/s over aiokafka's
    note: str = ""

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    @property
    def mbps(self) -> float:
        return self.log_bytes / self.seconds / 1e6 if self.seconds else 0.0


@dataclass
class DecompRow:
    codec: str
    value_size: int
    batch_records: int
    decompress_s: float
    columnar_s: float
    views_s: float
    objects_s: float
    way: str  # the fastest way to decompress, which decompress_s measures
    ways: tuple[tuple[str, float], ...] = ()  # every way and its seconds per batch

    @property
    def ratio(self) -> float:
        return self.columnar_s / self.decompress_s


def run_workload(
    codec: str, value_size: int, batch_records: int, args: argparse.Namespace, peers: dict[str, recbench.Impl]
) -> tuple[list[Row], DecompRow | None]:
    records = min(args.records, max(batch_records, MAX_WORKLOAD_BYTES // (value_size + recbench.KEY_SIZE)))
    w = recbench.make_workload(records, value_size, args.seed, batch_records)
    batches = recbench.KafkalogImpl().encode(w, w.total_batches, codec)
    data = b"".join(batches)
    ends = np.cumsum([len(b) for b in batches]).tolist()
    payloads = [bytes(b[61:]) for b in batches]
    head = data[: ends[0]]
    want_head = [w.expected(i) for i in range(min(records, batch_records))]
    log(f"  {codec} v{value_size} x{batch_records}: {records:,} records, {len(data) / 1e6:.1f} MB")

    impls: dict[str, Callable[[bytes, bool], tuple[int, Record4 | None]]] = {
        "kafkalog columnar": decode_columnar,
        "kafkalog columnar views": decode_columnar_views,
        "kafkalog objects": decode_objects,
    }
    crcs = {"kafkalog columnar": False, "kafkalog columnar views": False, "kafkalog objects": False}
    rows: dict[str, Row] = {}
    for name, peer in peers.items():
        why = peer.unavailable(codec)
        if why:
            rows[name] = Row(codec, value_size, batch_records, name, note=f"n/a: {why}")
            continue
        impls[name] = peer.decode
        crcs[name] = peer.default_crc
    tasks = []
    for name, fn in impls.items():
        row = rows[name] = Row(codec, value_size, batch_records, name, crc=crcs[name])
        n, last = fn(head, crcs[name])
        if n != len(want_head) or last != want_head[-1]:
            row.note = "misreads the first batch"
            continue

        def prepare(nb: int, crc: bool = crcs[name]) -> tuple:
            return (data if nb == len(ends) else data[: ends[nb - 1]], crc)

        tasks.append(recbench.Task(name, prepare, fn))
    for way, only in DECOMPRESS_ONLY.get(codec, {}).items():

        def decompress_all(chunk: list[bytes], only: Callable[[bytes], int] = only) -> int:
            return sum(map(only, chunk))

        tasks.append(recbench.Task(f"decompress only: {way}", lambda nb: (payloads[:nb],), decompress_all))
    recbench.measure_group(tasks, len(ends), args.budget, args.repeat)

    by_name = {t.name: t for t in tasks}
    for t in tasks:
        if t.name not in rows:
            continue
        row = rows[t.name]
        if t.error:
            row.note = f"failed: {t.error}"
            continue
        want = min(records, t.nb * batch_records)
        n, last = t.result
        if n != want or last != w.expected(want - 1):
            row.note = f"decoded {n} records (expected {want}) or a wrong last record"
        row.records = want
        row.log_bytes = ends[t.nb - 1]
        row.seconds = t.best
        if t.nb < len(ends):
            row.note = (row.note + "; " if row.note else "") + f"timed on {want:,} of {records:,} records"
    base = rows.get("aiokafka")
    for row in rows.values():
        if base is not None and base.rate and row.rate:
            row.ratio = row.rate / base.rate
    decomp = None
    ways = [t for t in tasks if t.name.startswith("decompress only") and not t.error and t.nb]
    d = min(ways, key=lambda t: t.best / t.nb, default=None)  # per batch: tasks may cover different prefixes
    c = by_name.get("kafkalog columnar")
    v = by_name.get("kafkalog columnar views")
    o = by_name.get("kafkalog objects")
    if d is not None and c is not None and v is not None and o is not None and not (c.error or v.error or o.error):
        way = d.name.split(": ", 1)[1]
        every = tuple((t.name.split(": ", 1)[1], t.best / t.nb) for t in ways)
        decomp = DecompRow(codec, value_size, batch_records, d.best / d.nb, c.best / c.nb, v.best / v.nb, o.best / o.nb, way, every)
    order = ["kafkalog columnar", "kafkalog columnar views", "kafkalog objects", "aiokafka", "kafka-python"]
    return [rows[k] for k in order if k in rows], decomp


# ------------------------------------------------------------------------------- index, memory
def index_open_times(directory: str, size: int, repeat: int) -> list[tuple[str, int, float]]:
    """Best time to read an ``.index`` and a ``.timeindex`` of ``size`` bytes: full (every slot an
    entry, a closed segment whose index filled up) and preallocated (20 entries then zero slots, an
    active segment's: the open costs what the entries do, not the file's size)."""
    out = []
    for suffix, dtype, reader in ((".index", OFFSET_INDEX_DTYPE, OffsetIndex), (".timeindex", TIME_INDEX_DTYPE, TimeIndex)):
        n = size // dtype.itemsize
        for label, entries in (("", n), (" (20 entries, preallocated)", 20)):
            arr = np.zeros(n, dtype)
            if suffix == ".index":
                arr["relativeOffset"][:entries] = np.arange(1, entries + 1) * 7
                arr["position"][:entries] = np.arange(1, entries + 1) * 4096
            else:
                arr["timestamp"][:entries] = 1_700_000_000_000 + np.arange(entries)
                arr["relativeOffset"][:entries] = np.arange(1, entries + 1) * 7
            path = os.path.join(directory, "00000000000000000000" + suffix)
            with open(path, "wb") as f:
                f.write(arr.tobytes())
            del arr
            best = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                ix = reader.read(path)
                best = min(best, time.perf_counter() - t0)
                assert len(ix) == entries
                del ix
            out.append((suffix + label, n * dtype.itemsize, best))
            os.remove(path)
    return out


def write_big_log(path: str, size: int) -> tuple[int, int]:
    """A log of about ``size`` bytes: one 1,000-record batch (1 KiB values) copied with its base
    offset patched (the CRC starts after it). Returns (batches, records)."""
    b = RecordBatchBuilder(0)
    rng = np.random.default_rng(1)
    for i in range(1000):
        b.append(1_700_000_000_000 + i, b"user-%011d" % i, rng.integers(97, 123, 1024, dtype=np.uint8).tobytes())
    tpl = bytearray(b.build())
    n = max(1, size // len(tpl))
    with open(path, "wb", buffering=16 << 20) as f:
        for i in range(n):
            struct.pack_into(">q", tpl, 0, i * 1000)
            f.write(tpl)
    RecordBatch(bytes(tpl)).ensure_valid()
    return n, n * 1000


def _peak_kib() -> int:
    """This process's peak RSS in KiB: VmHWM where /proc has it, else ru_maxrss. (On Linux,
    ru_maxrss carries the parent's peak across fork/vfork + exec, so a child started by this
    large benchmark process would report the parent's size; VmHWM belongs to the new image.)"""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def rss_child(path: str, mode: str) -> None:
    """(Child process) read ``path`` with one kafkalog path and print: before-KiB after-KiB records."""
    before = _peak_kib()
    n = 0
    with LogReader(path) as reader:
        if mode == "objects":
            for batch in reader.batches():
                for r in batch:
                    n += r.value is not None
        else:
            for rb in to_arrow(reader, columns=ARROW_COLUMNS, max_rows=RSS_ARROW_ROWS, views=mode == "views"):
                n += rb.num_rows
    after = _peak_kib()
    print(before, after, n)


def peak_rss(path: str, mode: str) -> tuple[int, int, int, float]:
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--rss-child", path, mode], check=True, capture_output=True, text=True
    ).stdout.split()
    before, after, n = map(int, out)
    return before, after, n, time.perf_counter() - t0


# -------------------------------------------------------------------------------------- output
def table(header: Sequence[str], body: Sequence[Sequence[str]], right: set[int]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *body, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.rjust(wd) if i in right else c.ljust(wd) for i, (c, wd) in enumerate(zip(cells, widths, strict=True))) + " |"

    sep = "|" + "|".join(("-" * (wd + 1) + ":") if i in right else ("-" * (wd + 2)) for i, wd in enumerate(widths)) + "|"
    return "\n".join([line(header), sep, *(line(b) for b in body)])


def render(rows: list[Row]) -> str:
    body = []
    for r in rows:
        crc = "n/a" if r.crc is None else ("yes" if r.crc else "no")
        body.append([
            r.codec, f"{r.value_size} B", str(r.batch_records), r.implementation, crc,
            f"{r.rate / 1e6:.3f} M" if r.seconds else "n/a", f"{r.mbps:.0f}" if r.seconds else "n/a",
            "-" if r.implementation == "aiokafka" else ("n/a" if r.ratio is None else f"{r.ratio:.2f}x"), r.note,
        ])
    return table(["codec", "value", "rec/batch", "implementation", "CRC", "records/s", "MB/s", "vs aiokafka", "note"], body, {5, 6, 7})


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: few records, a small log for the memory row")
    p.add_argument("--records", type=int, default=None, help=f"records per workload (default {DEFAULT_RECORDS:,}, capped at {MAX_WORKLOAD_BYTES >> 20} MiB of data)")
    p.add_argument("--codecs", default=",".join(CODECS), help="comma-separated codecs (default: all five)")
    p.add_argument("--value-size", default=",".join(map(str, VALUE_SIZES)), help="comma-separated value sizes (default 100,1024)")
    p.add_argument("--batch-records", default=",".join(map(str, BATCH_SIZES)), help="comma-separated records per batch (default 100,1000)")
    p.add_argument("--seed", type=int, default=recbench.DEFAULT_SEED)
    p.add_argument("--budget", type=float, default=3.0, help="seconds one measurement may take before it is timed on a prefix")
    p.add_argument("--repeat", type=int, default=3, help="best of N interleaved runs (default 3)")
    p.add_argument("--rss-log-mb", type=int, default=None, help=f"size of the log for the memory row (default {RSS_LOG_BYTES >> 20} MiB; 0 skips it)")
    p.add_argument("--index-mb", type=int, default=INDEX_BYTES >> 20, help="index size for the open-time row (default 10)")
    p.add_argument("--rss-child", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.records is None:
        a.records = QUICK_RECORDS if a.quick else DEFAULT_RECORDS
    if a.rss_log_mb is None:
        a.rss_log_mb = (QUICK_RSS_LOG_BYTES if a.quick else RSS_LOG_BYTES) >> 20
    a.codecs = [c.strip() for c in a.codecs.split(",") if c.strip()]
    for c in a.codecs:
        if c not in CODECS:
            p.error(f"unknown codec {c!r}")
    try:
        a.value_sizes = [int(v) for v in a.value_size.split(",")]
        a.batch_sizes = [int(v) for v in a.batch_records.split(",")]
    except ValueError:
        p.error("--value-size and --batch-records take comma-separated integers")
    if a.records < 1 or a.repeat < 1 or a.budget <= 0 or min(a.value_sizes + a.batch_sizes) < 1:
        p.error("sizes, --records, --repeat and --budget must be positive")
    return a


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.rss_child:
        rss_child(*args.rss_child)
        return 0
    started = time.perf_counter()
    load_start = os.getloadavg()[0]
    peers: dict[str, Any] = {}
    labels = [f"kafkalog {kafkalog.__version__} (kernels: {kafkalog.fast.columnar.kernels.name})"]
    for name, make in (("aiokafka", recbench.make_aiokafka), ("kafka-python", recbench.make_kafka_python)):
        got = make()
        if isinstance(got, str):
            labels.append(f"{name}: {got}")
        else:
            peers[name] = got
            labels.append(got.label)

    rows: list[Row] = []
    decomp: list[DecompRow] = []
    gc.collect()
    gc.freeze()
    try:
        for codec in args.codecs:
            for vs in args.value_sizes:
                for br in args.batch_sizes:
                    got_rows, d = run_workload(codec, vs, br, args, peers)
                    rows.extend(got_rows)
                    if d is not None:
                        decomp.append(d)
    finally:
        gc.unfreeze()

    with tempfile.TemporaryDirectory(prefix="kafkalog-bench-") as tmp:
        log("index open times")
        index_rows = index_open_times(tmp, args.index_mb << 20, 5 if args.quick else 20) if args.index_mb > 0 else []
        rss_rows = []
        if args.rss_log_mb > 0:
            path = os.path.join(tmp, "00000000000000000000.log")
            t0 = time.perf_counter()
            nb, nr = write_big_log(path, args.rss_log_mb << 20)
            size = os.path.getsize(path)
            log(f"wrote a {size / 2**20:,.0f} MiB log ({nb:,} batches) in {time.perf_counter() - t0:.1f}s")
            for mode in ("objects", "columnar", "views"):
                before, after, n, secs = peak_rss(path, mode)
                ok = "" if n == nr else f"read {n:,} of {nr:,} records!"
                rss_rows.append((mode, size, before, after, n, secs, ok))
            os.remove(path)

    wall = time.perf_counter() - started
    print(f"kafkalog decode benchmark: Python {platform.python_version()}, {os.cpu_count()} CPUs; " + "; ".join(labels))
    print()
    print(render(rows))
    print()
    print(
        "records/s in millions; MB/s counts log bytes (compressed size for compressed codecs); vs aiokafka = "
        "records/s over aiokafka's in the same run. CRC: whether the decoder checked batch CRCs (each library's default)."
    )
    if decomp:
        print()
        body = [
            [d.codec, f"{d.value_size} B", str(d.batch_records), f"{d.decompress_s * 1e6:.1f} ({d.way})", f"{d.columnar_s * 1e6:.1f}",
             f"{d.ratio:.2f}x", f"{d.views_s * 1e6:.1f}", f"{d.views_s / d.decompress_s:.2f}x", f"{d.objects_s * 1e6:.1f}",
             f"{d.objects_s / d.decompress_s:.2f}x"]
            for d in decomp
        ]
        print(table(["codec", "value", "rec/batch", "decompress only µs/batch (fastest way)", "columnar µs/batch",
                     "columnar / decompress", "views µs/batch", "views / decompress", "objects µs/batch", "objects / decompress"],
                    body, {3, 4, 5, 6, 7, 8, 9}))
        print(
            "decompress only: the codec library alone on each batch payload, the fastest of the ways tried (named; see the "
            "module docstring); kafkalog decompresses lz4, zstd, gzip and snappy through kafkalog.fast.native, a chunk of batches a call."
        )
        print()
        body = [[d.codec, f"{d.value_size} B", str(d.batch_records), way, f"{s * 1e6:.1f}"] for d in decomp for way, s in d.ways]
        print(table(["codec", "value", "rec/batch", "decompress-only way", "µs/batch"], body, {4}))
    if index_rows:
        print()
        print(table(["file", "size", "open (read) ms"], [[s, f"{b / 2**20:.1f} MiB", f"{t * 1e3:.2f}"] for s, b, t in index_rows], {1, 2}))
    if rss_rows:
        print()
        body = [[m, f"{sz / 2**30:.2f} GiB", f"{b / 1024:.0f}", f"{a / 1024:.0f}", f"{a / 1024 - b / 1024:.0f}", f"{n:,}", f"{s:.1f}", ok]
                for m, sz, b, a, n, s, ok in rss_rows]
        print(table(["path", "log", "RSS before read MB", "peak RSS MB", "growth MB", "records", "seconds", "note"], body, {1, 2, 3, 4, 5, 6}))
        print(
            "Peak RSS of a fresh process (VmHWM) reading the log with LogReader(path): objects = for r in batch; columnar = "
            f"to_arrow(reader, max_rows={RSS_ARROW_ROWS}); views = the same with views=True. 'before' = after imports (numpy, pyarrow), before reading."
        )
    load_end = os.getloadavg()[0]
    print()
    print(
        f"Wall time {wall:.0f}s; 1-minute load average {load_start:.2f} at start, {load_end:.2f} at end"
        + (" (other processes compete for the CPUs: compare ratios, not absolute figures)." if max(load_start, load_end) > 0.5 else ".")
    )
    bad = [r for r in rows if r.note and not r.note.startswith(("n/a", "timed on"))] + [r for r in rss_rows if r[-1]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
