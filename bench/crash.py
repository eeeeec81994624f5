#!/usr/bin/env python
"""Crash harness: SIGKILL a process appending through ``kafkalog.Log``, tear the unflushed tail, recover, check.

Each kill point forks a writer that opens a partition directory and appends leader batches
(1-20 records, every codec, keys and values of varied sizes, some null; idempotent producer
batches in half of the directories) with a small ``segment.bytes`` so that it rolls, calling
``flush()`` every few appends and now and then writing the log dir's recovery-point checkpoint.
After each ``flush()`` returns it writes the flushed offset range to a pipe. The parent SIGKILLs
it at a random time (some kills land inside ``Log.open``), then may tear the active segment
beyond the last flushed point only (a power cut losing unsynced pages): cut the ``.log`` short,
zero or scramble a range of it, or zero or cut its ``.index``/``.timeindex``. It then reopens
the directory as after an unclean shutdown (``Log.open(..., recovery_point=<checkpoint>,
had_clean_shutdown=False)``) and checks that

* every record whose ``flush()`` returned is there with the same offset, key and value,
* every record there is one a writer appended at that offset (no torn bytes read as data), and
  offsets are contiguous,
* :func:`kafkalog.tools.validate.verify` reports no error on the recovered directory.

The parent then closes the log cleanly (so everything present is durable and must survive the
next kill) and the next writer continues in the same directory; every few kill points a fresh
directory with a new random configuration starts. Record contents derive from (seed, writer
generation, offset), so the check needs nothing but the offsets from the pipe.

    python bench/crash.py                   # 300 kill points
    python bench/crash.py --kills 20 --seed 3 --json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import select
import shutil
import signal
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
from kafkalog.log.unified import RECOVERY_POINT_CHECKPOINT, Log, LogConfig, checkpoint_log_dir
from kafkalog.tools.validate import verify

sys.path.insert(0, str(Path(__file__).resolve().parent))
import durability  # noqa: E402

TOPIC = "crash"
T0 = 1_700_000_000_000
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TEARS = ("none", "truncate", "zero", "garbage", "index")
#: a writer that is never killed stops after this many appends
MAX_APPENDS = 200_000


# ------------------------------------------------------------------------------ what is written
def record(seed: int, gen: int, offset: int) -> tuple[bytes | None, bytes | None]:
    """The key and value writer generation ``gen`` appends at ``offset`` (see :func:`durability.record`)."""
    return durability.record(seed, gen, offset, large=2000, small=300)


@dataclass(frozen=True)
class DirConfig:
    """One directory's topic settings and writer behaviour."""

    segment_bytes: int
    index_interval_bytes: int
    segment_index_bytes: int
    flush_every: int
    idempotent: bool

    @classmethod
    def random(cls, rng: random.Random) -> DirConfig:
        """Small segments and indexes so that writers roll by size and by full index."""
        return cls(
            segment_bytes=rng.choice([8192, 16384, 65536]),
            index_interval_bytes=rng.choice([0, 256, 1024, 4096]),
            segment_index_bytes=rng.choice([64, 256, 4096, 10 * 1024 * 1024]),
            flush_every=rng.choice([1, 2, 4, 8]),
            idempotent=rng.random() < 0.5,
        )

    def log_config(self) -> LogConfig:
        """The LogConfig the writer and the recovering parent use."""
        return LogConfig(segment_bytes=self.segment_bytes, index_interval_bytes=self.index_interval_bytes,
                         segment_index_bytes=self.segment_index_bytes)


def _say(fd: int, line: str) -> None:
    os.write(fd, line.encode() + b"\n")  # one write below PIPE_BUF: atomic, never half a line


def writer(directory: str, seed: int, gen: int, cfg: DirConfig, out_fd: int) -> None:
    """The child: append and flush until killed, reporting each flushed offset range on ``out_fd``."""
    rng = random.Random(f"{seed}/{gen}/writer")
    _say(out_fd, "O")
    log = Log.open(directory, cfg.log_config(), writable=True)
    start = log.log_end_offset
    _say(out_fd, f"R {start}")
    producer = {"producer_id": 1000 + gen, "producer_epoch": 0} if cfg.idempotent else {}
    sequence = 0
    acked_to = start
    budget = cfg.segment_bytes // 2  # keep every batch well below segment.bytes
    for appends in range(1, MAX_APPENDS + 1):
        first = log.log_end_offset
        seq = {"base_sequence": sequence} if cfg.idempotent else {}
        b = RecordBatchBuilder(0, compression=Codec.from_name(rng.choice(CODECS)), **producer, **seq)
        size = 0
        for i in range(rng.randint(1, 20)):
            key, value = record(seed, gen, first + i)
            size += 40 + len(key or b"") + len(value or b"")
            if i and size > budget:
                break
            b.append(T0 + first + i, key, value)
        sequence += len(b)
        log.append(b.build())
        if appends % cfg.flush_every == 0:
            log.flush()
            a = log.active_segment
            _say(out_fd, f"F {acked_to} {log.log_end_offset} {a.base_offset} {a.size} "
                         f"{a.offset_index.entries * 8} {a.time_index.entries * 12}")
            acked_to = log.log_end_offset
            if rng.random() < 0.3:
                checkpoint_log_dir(os.path.dirname(directory), [log])
    log.close()
    _say(out_fd, "E")


# -------------------------------------------------------------------------------- the parent
@dataclass
class Row:
    """Figures for one kind of tear."""

    kill_points: int = 0
    killed_in_open: int = 0
    acked: int = 0
    checked: int = 0
    lost: int = 0
    bad_records: int = 0
    verify_failures: int = 0
    open_failures: int = 0
    torn_bytes_truncated: int = 0


@dataclass
class Stats:
    """The whole run: a row per tear kind, plus what went wrong, for the report."""

    rows: dict[str, Row] = field(default_factory=lambda: {t: Row() for t in TEARS})
    directories: int = 0
    writer_errors: int = 0
    segments_seen: int = 0
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def total(self) -> Row:
        """The rows summed."""
        return durability.summed(self.rows, Row)

    @property
    def ok(self) -> bool:
        """No flushed record lost, no bad record, every reopened log verified, no writer error."""
        t = self.total()
        return not (t.lost or t.bad_records or t.verify_failures or t.open_failures or self.writer_errors)


@dataclass
class Flushed:
    """The active segment's durable sizes at the last flush the parent knows of."""

    base: int
    log: int
    index: int
    timeindex: int


def _log_bytes(pdir: str) -> int:
    return sum(os.path.getsize(os.path.join(pdir, n)) for n in os.listdir(pdir) if n.endswith(".log"))


def _seg_files(pdir: str) -> list[int]:
    return sorted(int(n[:20]) for n in os.listdir(pdir) if n.endswith(".log") and n[:20].isdigit())


def tear(pdir: str, flushed: Flushed, kind: str, rng: random.Random) -> None:
    """Damage the last segment beyond the flushed point only, as a power cut after the kill might."""
    bases = _seg_files(pdir)
    if kind == "none" or not bases:
        return
    base = bases[-1]
    floor = flushed if base == flushed.base else Flushed(base, 0, 0, 0)
    if kind == "index":
        suffix, lo = rng.choice([(".index", floor.index), (".timeindex", floor.timeindex)])
    else:
        suffix, lo = ".log", floor.log
    path = os.path.join(pdir, f"{base:020d}{suffix}")
    if not os.path.exists(path):
        return
    size = os.path.getsize(path)
    if size <= lo:
        return
    start = rng.randint(lo, size)
    with open(path, "r+b") as f:
        if kind == "truncate" or (kind == "index" and rng.random() < 0.3):
            f.truncate(start)
        else:
            end = rng.randint(start, size)
            f.seek(start)
            f.write(bytes(end - start) if kind in ("zero", "index") else rng.randbytes(end - start))


def _run_writer(pdir: str, seed: int, gen: int, cfg: DirConfig, rng: random.Random, max_run_s: float) -> tuple[list[str], bool, int]:
    """Fork a writer, SIGKILL it at a random time; return (its pipe lines, killed in open, exit status)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.close(r)
            writer(pdir, seed, gen, cfg, w)
        except BaseException:
            traceback.print_exc()
            code = 2
        finally:
            os._exit(code)
    os.close(w)
    in_open = rng.random() < 0.1
    lines: list[str] = []
    buf = b""
    deadline = None
    spawned = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            if deadline is None and now - spawned > 60:
                break  # a writer that never reports: kill it and let the checks tell
            ready, _, _ = select.select([r], [], [], 0.005 if deadline is None else max(0.0, deadline - now))
            if not ready:
                continue
            chunk = os.read(r, 65536)
            if not chunk:
                break  # the writer exited by itself
            buf += chunk
            *done, buf = buf.split(b"\n")
            for line in done:
                lines.append(line.decode())
                if deadline is None and line == b"O" and in_open:
                    deadline = time.monotonic() + rng.uniform(0, 0.03)
                elif deadline is None and line.startswith(b"R "):
                    deadline = time.monotonic() + rng.uniform(0, max_run_s)
    finally:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        while chunk := os.read(r, 65536):  # what the writer said before it died still counts
            buf += chunk
        os.close(r)
    lines.extend(line.decode() for line in buf.split(b"\n") if line)
    killed_in_open = not any(line.startswith("R ") for line in lines)
    return lines, killed_in_open, status


def run(kills: int, seed: int, *, max_run_s: float = 0.5, progress: bool = False) -> Stats:
    """Run ``kills`` kill points with a fixed seed and return the figures."""
    rng = random.Random(seed)
    stats = Stats()
    started = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="kafkalog-crash-")
    try:
        done = 0
        while done < kills:
            stats.directories += 1
            root = os.path.join(tmp, f"dir{stats.directories}")
            pdir = os.path.join(root, f"{TOPIC}-0")
            os.makedirs(pdir)
            cfg = DirConfig.random(rng)
            owner: dict[int, int] = {}  # offset -> the generation whose record must be there
            flushed = Flushed(0, 0, 0, 0)
            for gen in range(rng.randint(4, 12)):
                if done >= kills:
                    break
                done += 1
                kind = rng.choice(TEARS)
                row = stats.rows[kind]
                ok, flushed = _kill_point(pdir, seed, gen, cfg, rng, kind, row, owner, flushed, stats, max_run_s)
                if progress:
                    t = stats.total()
                    print(f"\r{done}/{kills} kill points, {t.acked} records acked, {t.lost} lost, "
                          f"{t.verify_failures} verify failures", end="", file=sys.stderr, flush=True)
                if not ok:
                    break  # a broken directory: start a fresh one
            shutil.rmtree(root, ignore_errors=True)
        if progress:
            print(file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stats.seconds = time.monotonic() - started
    return stats


def _kill_point(
    pdir: str, seed: int, gen: int, cfg: DirConfig, rng: random.Random, kind: str, row: Row,
    owner: dict[int, int], flushed: Flushed, stats: Stats, max_run_s: float,
) -> tuple[bool, Flushed]:
    """One kill, tear, recovery and check; False when the directory cannot go on."""
    lines, in_open, status = _run_writer(pdir, seed, gen, cfg, rng, max_run_s)
    row.kill_points += 1
    row.killed_in_open += in_open
    where = f"seed {seed} gen {gen} dir {pdir} tear {kind}"
    if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
        stats.writer_errors += 1
        stats.problems.append(f"{where}: writer ended with status {status} before the kill")
    start = None
    for line in lines:
        parts = line.split()
        if parts[0] == "R":
            start = int(parts[1])
        elif parts[0] == "F":
            lo, hi, base, size, idx, tidx = map(int, parts[1:])
            for o in range(lo, hi):
                owner[o] = gen
            row.acked += hi - lo
            flushed = Flushed(base, size, idx, tidx)
    tear(pdir, flushed, kind, rng)
    root = os.path.dirname(pdir)
    cp = os.path.join(root, RECOVERY_POINT_CHECKPOINT)
    recovery_point = read_offset_checkpoint(cp).get((TOPIC, 0), 0) if os.path.exists(cp) else 0
    before = _log_bytes(pdir)
    try:
        log = Log.open(pdir, cfg.log_config(), recovery_point=recovery_point, had_clean_shutdown=False, writable=True)
    except Exception as e:
        row.open_failures += 1
        stats.problems.append(f"{where}: Log.open failed: {e!r}")
        return False, flushed
    try:
        row.torn_bytes_truncated += before - _log_bytes(pdir)
        present: dict[int, tuple[bytes | None, bytes | None]] = {}
        prev = None
        for batch in log.batches():
            for r in batch.records():
                if prev is not None and r.offset != prev + 1:
                    row.bad_records += 1
                    stats.problems.append(f"{where}: offset {r.offset} follows {prev}")
                prev = r.offset
                present[r.offset] = (r.key, r.value)
        row.checked += len(owner)
        for o, g in owner.items():
            if present.get(o) != record(seed, g, o):
                row.lost += 1
                if row.lost <= 5:
                    stats.problems.append(f"{where}: flushed offset {o} of writer {g} is {'missing' if o not in present else 'different'}")
        durable: dict[int, int] = {}
        for o, kv in present.items():
            g = owner.get(o, gen if start is not None and o >= start else None)
            if g is None or kv != record(seed, g, o):
                row.bad_records += 1
                if row.bad_records <= 5:
                    stats.problems.append(f"{where}: offset {o} holds a record no writer appended there")
            else:
                durable[o] = g
        report = verify(pdir)
        if report.errors:
            row.verify_failures += 1
            stats.problems.extend(f"{where}: verify: {f}" for f in report.errors[:5])
        stats.segments_seen += len(log.segments)
    finally:
        log.close()
    owner.clear()  # after a clean close, everything present is durable
    owner.update(durable)
    bases = _seg_files(pdir)
    last = bases[-1] if bases else 0

    def size(suffix: str) -> int:
        p = os.path.join(pdir, f"{last:020d}{suffix}")
        return os.path.getsize(p) if os.path.exists(p) else 0

    return not row.verify_failures, Flushed(last, size(".log"), size(".index"), size(".timeindex"))


def table(stats: Stats) -> str:
    """The figures as a Markdown table, one row per tear kind and a total."""
    cols = ["tear", "kill points", "killed in open", "acked after flush", "flushed records checked",
            "flushed lost", "bad records", "verify failures", "open failures", "torn bytes truncated"]
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    rows = [*stats.rows.items(), ("total", stats.total())]
    for name, r in rows:
        cells = [name, r.kill_points, r.killed_in_open, r.acked, r.checked, r.lost, r.bad_records,
                 r.verify_failures, r.open_failures, r.torn_bytes_truncated]
        out.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the harness, print the table (or JSON); exit 1 if any flushed record was lost or a log failed to verify."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kills", type=int, default=300, help="kill points (default 300)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--max-run", type=float, default=0.5, help="longest time a writer runs before its kill, s")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    a = p.parse_args(argv)
    logging.getLogger("kafkalog").setLevel(logging.ERROR)  # recovery's warnings are expected here
    stats = run(a.kills, a.seed, max_run_s=a.max_run, progress=sys.stderr.isatty())
    if a.json:
        print(json.dumps({"rows": {k: asdict(v) for k, v in stats.rows.items()}, "total": asdict(stats.total()),
                          "directories": stats.directories, "writer_errors": stats.writer_errors,
                          "seconds": round(stats.seconds, 1), "problems": stats.problems, "ok": stats.ok}, indent=1))
    else:
        print(f"crash harness: {stats.total().kill_points} kill points in {stats.directories} directories, "
              f"seed {a.seed}, {stats.seconds:.0f} s, {stats.segments_seen} segments seen after recovery")
        print(table(stats))
        for line in stats.problems[:20]:
            print("problem:", line)
    return 0 if stats.ok else 1


if __name__ == "__main__":
    sys.exit(main())
