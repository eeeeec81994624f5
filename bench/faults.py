#!/usr/bin/env python
"""Fault injection under ``kafkalog.Log``: power cuts, torn writes, reordered renames, fsync EIO, ENOSPC.

The file layer of ``tests/faultfs.py`` models what is durable (a file's content at its last
fsync, a directory's entries at its last fsync) while a writer appends leader batches through
:class:`kafkalog.log.unified.Log` (every codec, idempotent producers in half of the directories, small
segments that roll, ``flush()`` every few appends, log dir checkpoints, retention by size that
renames segments ``.deleted`` and removes them, and in half of the directories a compacted topic
whose cleaner passes swap cleaned segments in through ``.cleaned`` and ``.swap`` renames). One fault is injected per cycle:

* ``power cut``: the power goes at a random write, fsync, create, rename or unlink; files revert
  to their durable content, pending directory operations survive as a prefix;
* ``torn write``: the same, and each file keeps a random prefix of its unsynced writes, the next
  one cut short;
* ``reordered renames``: pending directory operations survive as a random subset (renames and
  creations undone out of order), files torn or not;
* ``fsync EIO``: a random fsync fails (its data stays undurable); whether kafkalog raises it or
  not, the power goes soon after, with torn writes;
* ``ENOSPC``: a random write fails, half the time after a short write; then either the process
  dies (everything written survives) or the power goes.

A fault may land in the writer or in the next ``Log.open`` (recovery). After each fault the
directory is reopened as after an unclean shutdown (recovery point and log start offset from the
log dir's checkpoints) and checked: every record whose append returned before a ``flush()`` that
returned is there with its offset, key and value (unless retention had removed it), every record
present is one a writer appended at that offset, offsets are contiguous, and
:func:`kafkalog.tools.validate.verify` finds no error.

    python bench/faults.py                      # 1200 faults
    python bench/faults.py --faults 100 --seed 4 --json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafkalog import RecordBatchBuilder
from kafkalog.format.checkpoints import read_offset_checkpoint
from kafkalog.format.compression import Codec
from kafkalog.log.cleaner import compact
from kafkalog.log.unified import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    Log,
    LogConfig,
    checkpoint_log_dir,
)
from kafkalog.tools.validate import verify

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "tests")]
import durability  # noqa: E402
from faultfs import FaultFS, PowerCut  # noqa: E402

TOPIC = "faults"
T0 = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
KINDS = ("power cut", "torn write", "reordered renames", "fsync EIO", "ENOSPC")
#: distinct keys in a compacted directory (each record supersedes the one COMPACTED_KEYS offsets before)
COMPACTED_KEYS = 40
#: appends per cycle when no fault fires first (the power then goes at the end)
MAX_APPENDS = 120


def record(seed: int, gen: int, offset: int, compacted: bool = False) -> tuple[bytes | None, bytes | None]:
    """The key and value writer generation ``gen`` appends at ``offset`` (see :func:`durability.record`)."""
    return durability.record(seed, gen, offset, large=1500, small=200, keys=COMPACTED_KEYS if compacted else None)


@dataclass
class Row:
    """Figures for one fault kind."""

    faults: int = 0
    in_recovery: int = 0
    raised: int = 0
    acked: int = 0
    checked: int = 0
    lost: int = 0
    bad_records: int = 0
    verify_failures: int = 0
    open_failures: int = 0


@dataclass
class Stats:
    """The run: a row per fault kind and what went wrong."""

    rows: dict[str, Row] = field(default_factory=lambda: {k: Row() for k in KINDS})
    directories: int = 0
    reopens: int = 0
    cleaned_groups: int = 0  # segment groups the cleaner swapped in (compacted directories)
    ops: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def total(self) -> Row:
        """The rows summed."""
        return durability.summed(self.rows, Row)

    @property
    def ok(self) -> bool:
        """No acknowledged record lost, no bad record, every reopened log verified."""
        t = self.total()
        return not (t.lost or t.bad_records or t.verify_failures or t.open_failures)


@dataclass
class Dir:
    """One partition directory under test and what it must hold."""

    root: str
    pdir: str
    config: LogConfig
    idempotent: bool
    flush_every: int
    compacted: bool = False  # cleanup.policy includes compact: the workload runs cleaner passes
    last_fault: str = "power cut"  # the fault the next reopen recovers from
    deleted_below: int = 0  # retention removed every offset below this (a cut may bring some back)
    expected: dict[int, int] = field(default_factory=dict)  # offset -> writer generation, must be present
    written: dict[int, set[int]] = field(default_factory=dict)  # offset -> every generation that wrote it
    gen: int = 0


def new_dir(tmp: str, n: int, rng: random.Random) -> Dir:
    """A fresh directory with a random small configuration."""
    root = os.path.join(tmp, f"dir{n}")
    pdir = os.path.join(root, f"{TOPIC}-0")
    os.makedirs(pdir)
    seg = rng.choice([4096, 8192, 16384])
    policy = rng.choice([("delete",), ("delete",), ("compact",), ("compact", "delete")])
    config = LogConfig(
        segment_bytes=seg, index_interval_bytes=rng.choice([0, 512, 4096]),
        segment_index_bytes=rng.choice([4096, 10 * 1024 * 1024]), retention_bytes=seg * rng.choice([3, 6]),
        retention_ms=-1, file_delete_delay_ms=rng.choice([0, 0, 10**12]), cleanup_policy=policy,
        delete_retention_ms=10**12,  # tombstones stay: a missing record must have a present successor
        min_cleanable_dirty_ratio=rng.choice([0.0, 0.5]),
    )
    return Dir(root, pdir, config, rng.random() < 0.5, rng.choice([1, 2, 4, 8]), compacted="compact" in policy)


def _checkpoint(root: str, name: str) -> int:
    p = os.path.join(root, name)
    return read_offset_checkpoint(p).get((TOPIC, 0), 0) if os.path.exists(p) else 0


def reopen(d: Dir) -> Log:
    """Open after an unclean shutdown, from the log dir's checkpoints, as a broker's log manager would."""
    return Log.open(
        d.pdir, d.config, log_start_offset=_checkpoint(d.root, LOG_START_OFFSET_CHECKPOINT),
        recovery_point=_checkpoint(d.root, RECOVERY_POINT_CHECKPOINT), had_clean_shutdown=False, writable=True,
    )


def check(d: Dir, log: Log, seed: int, row: Row, stats: Stats, where: str) -> bool:
    """Every acknowledged record present and right, nothing else but records written there, verify clean."""
    present: dict[int, tuple[bytes | None, bytes | None]] = {}
    prev = None
    bad = 0
    for batch in log.batches():
        for r in batch.records():
            if prev is not None and r.offset <= prev:  # gaps are allowed: an unflushed tail lost before a new segment
                bad += 1
                stats.problems.append(f"{where}: offset {r.offset} follows {prev}")
            prev = r.offset
            present[r.offset] = (r.key, r.value)
    start = max(log.log_start_offset, d.deleted_below)
    lost = 0
    row.checked += sum(1 for o in d.expected if o >= start)
    latest = {}  # key -> its last present offset: compaction may remove any earlier record of the key
    if d.compacted:
        for o in sorted(present):
            latest[present[o][0]] = o
    for o, g in d.expected.items():
        if d.compacted and o not in present and latest.get(record(seed, g, o, True)[0], -1) > o:
            continue
        if o >= start and present.get(o) != record(seed, g, o, d.compacted):
            lost += 1
            if lost <= 3:
                stats.problems.append(f"{where}: acknowledged offset {o} (writer {g}) is {'missing' if o not in present else 'different'}"
                                      f" (log {start}..{log.log_end_offset})")
    durable: dict[int, int] = {}
    for o, kv in present.items():
        g = next((g for g in sorted(d.written.get(o, ()), reverse=True) if kv == record(seed, g, o, d.compacted)), None)
        if g is None:
            bad += 1
            if bad <= 3:
                stats.problems.append(f"{where}: offset {o} holds a record no writer appended there")
        else:
            durable[o] = g
    report = verify(d.pdir)
    failed = bool(report.errors)
    if failed:
        stats.problems.extend(f"{where}: verify: {f}" for f in report.errors[:3])
    row.lost += lost
    row.bad_records += bad
    row.verify_failures += failed
    d.expected = durable  # what recovery left is on the durable disk now: it must all survive from here on
    return not (lost or bad or failed)


def workload(d: Dir, log: Log, seed: int, rng: random.Random, row: Row, stats: Stats) -> None:
    """Append, flush, checkpoint, roll and apply retention until a fault stops it (or MAX_APPENDS)."""
    gen = d.gen
    producer = {"producer_id": 5000 + gen, "producer_epoch": 0} if d.idempotent else {}
    sequence = 0
    unacked: list[int] = []
    budget = d.config.segment_bytes // 2
    for appends in range(1, MAX_APPENDS + 1):
        first = log.log_end_offset
        seq = {"base_sequence": sequence} if d.idempotent else {}
        b = RecordBatchBuilder(0, compression=Codec.from_name(rng.choice(CODECS)), **producer, **seq)
        size = 0
        for i in range(rng.randint(1, 12)):
            key, value = record(seed, gen, first + i, d.compacted)
            size += 40 + len(key or b"") + len(value or b"")
            if i and size > budget:
                break
            d.written.setdefault(first + i, set()).add(gen)
            b.append(T0 + first + i, key, value)
        sequence += len(b)
        log.append(b.build())
        unacked.extend(range(first, log.log_end_offset))
        if appends % d.flush_every == 0:
            log.flush()
            for o in unacked:
                d.expected[o] = gen
            row.acked += len(unacked)
            unacked.clear()
            if rng.random() < 0.3:
                checkpoint_log_dir(d.root, [log])
        if rng.random() < 0.05:
            log.roll()
        if d.compacted and rng.random() < 0.1:
            cleaned = compact(log, force=rng.random() < 0.5).cleaned  # the cleaner's pass: .cleaned -> .swap -> final renames
            stats.cleaned_groups += len(cleaned.groups) if cleaned is not None else 0
        if rng.random() < 0.1:
            planned = log.delete_old_segments(dry_run=True).log_start_offset  # a cut mid-way may drop any of these
            d.deleted_below = max(d.deleted_below, planned)
            log.delete_old_segments()
            if rng.random() < 0.5:
                checkpoint_log_dir(d.root, [log])
            log.delete_pending_files()


def cycle(d: Dir, fs: FaultFS, seed: int, rng: random.Random, stats: Stats) -> bool:
    """One fault: arm it, reopen and check (the fault may land in recovery), run the writer, cut. False: give up the dir."""
    kind = rng.choice(KINDS)
    row = stats.rows[kind]
    d.gen += 1
    where = f"seed {seed} gen {d.gen} {d.pdir} [after {d.last_fault}]"
    fault, after = {"power cut": ("power", rng.randint(1, 400)), "torn write": ("power", rng.randint(1, 400)),
                    "reordered renames": ("power", rng.randint(1, 400)), "fsync EIO": ("eio", rng.randint(1, 40)),
                    "ENOSPC": ("enospc", rng.randint(1, 200))}[kind]
    fs.arm(fault, after)
    phase = "open"
    healthy = True
    try:
        log = reopen(d)
        stats.reopens += 1
        phase = "check"
        healthy = check(d, log, seed, stats.rows[d.last_fault], stats, where)
        phase = "write"
        workload(d, log, seed, rng, row, stats)  # when no fault came, the power goes at its end
    except PowerCut:
        pass
    except Exception as e:
        if fs.fired in ("eio", "enospc"):
            row.raised += 1
        elif phase == "open":
            row.open_failures += 1
            stats.problems.append(f"{where}: Log.open failed: {e!r}\n{traceback.format_exc(limit=-4)}")
            healthy = False
        else:
            raise
    if phase == "open" and fs.fired:
        row.in_recovery += 1
    row.faults += 1
    d.last_fault = kind
    if kind == "ENOSPC" and rng.random() < 0.5:
        fs.crash(power=False)
    else:
        fs.crash(torn=kind != "power cut" and (kind != "reordered renames" or rng.random() < 0.5), reorder=kind == "reordered renames")
    return healthy


def run(faults: int, seed: int, *, progress: bool = False) -> Stats:
    """Inject ``faults`` faults (and check the directory after each) with a fixed seed."""
    rng = random.Random(seed)
    stats = Stats()
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="kafkalog-faults-")
    try:
        done = 0
        while done < faults:
            stats.directories += 1
            d = new_dir(tmp, stats.directories, rng)
            with FaultFS(d.root, rng) as fs:
                for _ in range(rng.randint(20, 60)):
                    if done >= faults:
                        break
                    done += 1
                    healthy = cycle(d, fs, seed, rng, stats)
                    if progress:
                        t = stats.total()
                        print(f"\r{done}/{faults} faults, {t.acked} acked, {t.lost} lost, {t.verify_failures} verify failures",
                              end="", file=sys.stderr, flush=True)
                    if not healthy:
                        break
                fs.disarm()
                try:  # a last reopen and check after the final fault
                    log = reopen(d)
                    check(d, log, seed, stats.rows[d.last_fault], stats, f"seed {seed} final {d.pdir} [after {d.last_fault}]")
                    log.close()
                except Exception as e:
                    stats.problems.append(f"final reopen of {d.pdir} failed: {e!r}")
                    stats.rows[d.last_fault].open_failures += 1
                for k, v in asdict(fs.counts).items():
                    if isinstance(v, int):
                        stats.ops[k] = stats.ops.get(k, 0) + v
            shutil.rmtree(d.root, ignore_errors=True)
        if progress:
            print(file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stats.seconds = time.monotonic() - started
    return stats


def table(stats: Stats) -> str:
    """The figures as a Markdown table, a row per fault kind and a total."""
    cols = ["fault", "injected", "in recovery", "raised to the writer", "acked after flush", "acked records checked",
            "acked lost", "bad records", "verify failures", "open failures"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for name, r in [*stats.rows.items(), ("total", stats.total())]:
        cells = [name, r.faults, r.in_recovery, r.raised, r.acked, r.checked, r.lost, r.bad_records, r.verify_failures, r.open_failures]
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the table (or JSON); exit 1 if an acknowledged record was lost or a reopened log failed to verify."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--faults", type=int, default=1200, help="faults to inject (default 1200)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = p.parse_args(argv)
    logging.getLogger("kafkalog").setLevel(logging.ERROR)  # recovery's warnings are expected here
    stats = run(a.faults, a.seed, progress=sys.stderr.isatty())
    if a.json:
        print(json.dumps({"rows": {k: asdict(v) for k, v in stats.rows.items()}, "total": asdict(stats.total()),
                          "directories": stats.directories, "reopens": stats.reopens, "cleaned_groups": stats.cleaned_groups, "ops": stats.ops,
                          "seconds": round(stats.seconds, 1), "problems": stats.problems, "ok": stats.ok}, indent=1))
    else:
        print(f"fault injection: {stats.total().faults} faults in {stats.directories} directories, seed {a.seed}, "
              f"{stats.seconds:.0f} s; modelled {stats.ops.get('writes', 0)} writes, {stats.ops.get('fsyncs', 0)} fsyncs, "
              f"{stats.ops.get('dir_fsyncs', 0)} directory fsyncs, {stats.ops.get('dir_ops', 0)} creates/renames/unlinks; "
              f"{stats.cleaned_groups} segment groups cleaned and swapped in")
        print(table(stats))
        for line in stats.problems[:20]:
            print("problem:", line)
    return 0 if stats.ok else 1


if __name__ == "__main__":
    sys.exit(main())
