#!/usr/bin/env python
"""Partition-level reads through ``Log``: open, random offset and timestamp lookups vs full scans.

A partition directory of ``--size-mb`` MB in ``--segments`` segments is written through
:class:`kafkalog.Log` as a follower appends (one batch per append, bytes unchanged), so the
``.index`` and ``.timeindex`` files are the ones Kafka's broker writes (an entry per
``index.interval.bytes``, 4096 by default, i.e. one per batch here). The batches are copies of one
batch of ``--batch-records`` records (16-byte keys, ``--value-size``-byte values) with base offset
and timestamps patched and the CRC recomputed; record ``i`` has timestamp ``T0 + i`` ms. The log
is then closed and measured, each row the best of ``--repeat`` runs:

* ``open``: ``Log.open`` after a clean shutdown (segments listed, indexes loaded lazily or not,
  as kafkalog does it);
* ``offset lookup``: ``Log.read(offset, 1, min_one_message=True)`` at uniformly random offsets
  (segment floor search, index floor lookup, scan from the index entry to the batch) and a check
  that the batch returned holds the offset;
* ``timestamp lookup``: ``Log.offset_for_timestamp`` at random timestamps (time index, then
  offset index, then the batches), checked against the known answer;
* ``header scan``: every batch header of every segment (``Segment.batches``), the cheapest scan;
* ``decode scan``: every record of the log to Arrow (``kafkalog.fast.arrow.to_arrow``).

A lookup by scanning reads half of the log on average: the ``vs`` columns divide half of each
scan's time by one lookup's time.

    python bench/segments.py                    # 1 GB, 10 segments
    python bench/segments.py --size-mb 16 --quick
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

import crc32c

from kafkalog import RecordBatchBuilder
from kafkalog.fast.arrow import to_arrow
from kafkalog.format.records.v2 import CRC_OFFSET, CRC_START
from kafkalog.log.unified import Log, LogConfig

T0 = 1_700_000_000_000


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def generate(directory: str, size: int, segments: int, batch_records: int, value_size: int) -> tuple[int, int]:
    """Append batches to a new ``Log`` in ``directory`` until about ``size`` bytes; return
    (batches, records). segment.bytes is size / segments, so the log rolls into about that many."""
    rng = random.Random(7)
    b = RecordBatchBuilder(0, partition_leader_epoch=0)
    for i in range(batch_records):
        b.append(T0 + i, b"user-%011d" % rng.randrange(10**11), rng.randbytes(value_size))
    tpl = bytearray(b.build())
    n = max(segments, size // len(tpl))
    config = LogConfig(segment_bytes=max(len(tpl), -(-n // segments) * len(tpl)))
    lg = Log.open(directory, config, sync=False, writable=True)
    try:
        for k in range(n):
            base = k * batch_records
            struct.pack_into(">q", tpl, 0, base)
            struct.pack_into(">q", tpl, 27, T0 + base)  # baseTimestamp
            struct.pack_into(">q", tpl, 35, T0 + base + batch_records - 1)  # maxTimestamp
            struct.pack_into(">I", tpl, CRC_OFFSET, crc32c.crc32c(memoryview(tpl)[CRC_START:]))
            lg.append(bytes(tpl), assign_offsets=False)
    finally:
        lg.close()
    return n, n * batch_records


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best = float("inf")
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def measure(directory: str, records: int, args: argparse.Namespace) -> list[list[str]]:
    rng = random.Random(args.seed)
    end = records
    offsets = [rng.randrange(end) for _ in range(args.lookups)]
    stamps = [T0 + rng.randrange(end) for _ in range(args.lookups)]

    t_open = float("inf")
    for i in range(args.repeat):
        t0 = time.perf_counter()
        lg = Log.open(directory, sync=False, recovery_point=end, had_clean_shutdown=True, writable=True)
        t_open = min(t_open, time.perf_counter() - t0)
        if i < args.repeat - 1:
            lg.close(flush=False)
    try:
        nseg = len(lg.segments)
        size = lg.size
        assert lg.log_end_offset == end, (lg.log_end_offset, end)

        def offset_lookups() -> int:
            bad = 0
            for o in offsets:
                batch = next(lg.read(o, 1, min_one_message=True).batches())
                bad += not batch.base_offset <= o <= batch.last_offset
            return bad

        def timestamp_lookups() -> int:
            bad = 0
            for ts in stamps:
                found = lg.offset_for_timestamp(ts)
                bad += found is None or found.offset != ts - T0
            return bad

        def header_scan() -> int:
            return sum(b.count for s in lg.segments for b in s.batches())

        def decode_scan() -> int:
            return sum(rb.num_rows for rb in to_arrow(lg.batches(), columns=("key", "value", "offset", "timestamp")))

        t_off, bad_off = best_of(args.repeat, offset_lookups)
        t_ts, bad_ts = best_of(args.repeat, timestamp_lookups)
        t_hdr, n_hdr = best_of(args.repeat, header_scan)
        t_dec, n_dec = best_of(min(args.repeat, 2), decode_scan)
    finally:
        lg.close(flush=False)
    assert n_hdr == records and n_dec == records, (n_hdr, n_dec, records)
    per_off = t_off / len(offsets)
    per_ts = t_ts / len(stamps)
    mb = size / 1e6

    def vs(per: float) -> list[str]:
        # a scan-based lookup reads half of the log on average
        return [f"{t_hdr / 2 / per:,.0f}x", f"{t_dec / 2 / per:,.0f}x"]

    return [
        ["open (Log.open, clean shutdown)", f"{nseg} segments, {mb:,.0f} MB", f"{t_open * 1e3:,.1f} ms", "", "", "", ""],
        ["offset lookup (Log.read)", f"{len(offsets):,} random", f"{per_off * 1e6:,.0f} µs", f"{1 / per_off:,.0f}/s",
         *vs(per_off), f"{bad_off} wrong"],
        ["timestamp lookup (offset_for_timestamp)", f"{len(stamps):,} random", f"{per_ts * 1e6:,.0f} µs", f"{1 / per_ts:,.0f}/s",
         *vs(per_ts), f"{bad_ts} wrong"],
        ["header scan (every batch header)", f"{records:,} records", f"{t_hdr * 1e3:,.0f} ms", f"{mb / t_hdr:,.0f} MB/s", "", "", ""],
        ["decode scan (every record to Arrow)", f"{records:,} records", f"{t_dec * 1e3:,.0f} ms",
         f"{records / t_dec / 1e6:,.2f} M rec/s", "", "", ""],
    ]


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    widths = [max(len(x) for x in col) for col in zip(header, *body, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    return "\n".join([line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *(line(b) for b in body)])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size-mb", type=int, default=None, help="log size in MB (default 1024; --quick: 16)")
    p.add_argument("--segments", type=int, default=10, help="segments to roll into (default 10)")
    p.add_argument("--batch-records", type=int, default=100, help="records per batch (default 100)")
    p.add_argument("--value-size", type=int, default=1000, help="value bytes (default 1000)")
    p.add_argument("--lookups", type=int, default=None, help="random lookups per kind (default 2000; --quick: 100)")
    p.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--dir", default=None, help="where to write the partition (default: a temporary directory, removed after)")
    p.add_argument("--quick", action="store_true", help="smoke run: a small log, few lookups")
    a = p.parse_args(argv)
    if a.size_mb is None:
        a.size_mb = 16 if a.quick else 1024
    if a.lookups is None:
        a.lookups = 100 if a.quick else 2000
    if min(a.size_mb, a.segments, a.batch_records, a.value_size, a.lookups, a.repeat) < 1:
        p.error("sizes, counts and --repeat must be positive")
    return a


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    parent = tempfile.mkdtemp(prefix="kafkalog-segments-", dir=args.dir)
    directory = os.path.join(parent, "bench-0")
    load_start = os.getloadavg()[0]
    try:
        t0 = time.perf_counter()
        nb, records = generate(directory, args.size_mb * 1_000_000, args.segments, args.batch_records, args.value_size)
        log(f"appended {nb:,} batches ({records:,} records) through Log in {time.perf_counter() - t0:.1f}s")
        body = measure(directory, records, args)
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    print(
        f"kafkalog segment benchmark: {args.size_mb:,} MB in {args.segments} segments, {args.batch_records} records of "
        f"{args.value_size} B per batch, Python {platform.python_version()}, {os.cpu_count()} CPUs"
    )
    print()
    print(table(["operation", "work", "time (each)", "rate", "vs header-scan lookup", "vs decode-scan lookup", "check"], body))
    load_end = os.getloadavg()[0]
    print()
    print(
        "vs ...-scan lookup: the mean time of a lookup by scanning (half of that scan) over the time of one lookup. Best of "
        f"{args.repeat} runs; 1-minute load average {load_start:.2f} at start, {load_end:.2f} at end"
        + (" (other processes compete for the CPUs)." if max(load_start, load_end) > 0.5 else ".")
    )
    return 1 if any(row[-1] not in ("", "0 wrong") for row in body) else 0


if __name__ == "__main__":
    sys.exit(main())
