"""Readers on a log that another process is appending to, rolling, compacting and trimming.

A writer process (tests/concurrent_writer.py) runs append/roll/compact/retention cycles on one
partition; meanwhile ``kafkalog dump --json``, ``kafkalog verify`` and the Spark reader's slice
reader run against the same directory over and over. Every read must be a consistent view:
each record it returns is one the writer appended at that offset (never a torn or half-replaced
batch read as data), offsets strictly increase within one read (never a record twice), and no
reader fails with anything but a clean report. The writer's own log of what it appended is the
truth the reads are checked against.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalog.tools.dump import DumpOptions, dump
from kafkalog.tools.validate import verify

HERE = Path(__file__).resolve().parents[1]
CYCLES = 120


def _truth(path: Path) -> tuple[dict[int, tuple[str, str | None]], int]:
    truth: dict[int, tuple[str, str | None]] = {}
    cycles = 0
    for line in path.read_text().splitlines():
        a, b, *c = line.split()
        if a == "cycles":
            cycles = int(b)
            continue
        truth[int(a)] = (b, None if c[0] == "-" else c[0])
    return truth, cycles


class Reads:
    """What the readers saw: (reader, offsets in the order read, records) per read."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, list[tuple[int, str | None, str | None]]]] = []
        self.failures: list[str] = []


def _dump_once(d: Path, reads: Reads) -> None:
    out, err = io.StringIO(), io.StringIO()
    res = dump([str(d)], DumpOptions(fmt="json"), out=out, err=err)
    if res.errors:
        reads.failures.append(f"dump errors: {res.errors}")
    recs = []
    for line in out.getvalue().splitlines():
        obj = json.loads(line)
        if obj["type"] == "record" and "controlType" not in obj:
            recs.append((obj["offset"], obj["key"], obj["value"]))
    reads.seen.append(("dump", recs))


def _verify_once(d: Path, reads: Reads) -> None:
    rep = verify(d)
    if rep.errors:
        reads.failures.append("verify errors: " + "; ".join(f"{f.code} {f.file}@{f.position}: {f.message}" for f in rep.errors))
    reads.seen.append(("verify", []))


def _spark_slices_once(d: Path, reads: Reads) -> None:
    """The Spark source's driver planning and executor reads, called directly (no JVM)."""
    from kafkalog_spark.source import KafkaLogReader, source_schema

    schema = source_schema()
    # the writer's retention deletes whole segments (their .deleted names too) while a plan is read:
    # with failOnDataLoss=true that is a DataLossError, as in Spark's Kafka source, and correct; this
    # test asks what is read to be consistent, so such a segment is skipped with a warning
    reader = KafkaLogReader({"path": str(d), "failOnDataLoss": "false"}, schema)
    recs = []
    for part in reader.partitions():
        for rb in reader.read(part):
            cols = rb.to_pydict()
            recs.extend(
                (o, None if k is None else k.hex(), None if v is None else v.hex())
                for o, k, v in zip(cols["offset"], cols["key"], cols["value"], strict=True)
            )
    # Spark gives no order across tasks, and packs a task's segments largest first: no offset twice
    reads.seen.append(("spark", sorted(recs, key=lambda r: r[0])))


def _check(reads: Reads, truth: dict[int, tuple[str, str | None]]) -> list[str]:
    problems = list(reads.failures)
    for name, recs in reads.seen:
        last = -1
        for off, key, value in recs:
            if off <= last:
                problems.append(f"{name}: offset {off} after {last} (a record twice or out of order)")
            last = off
            if truth.get(off) != (key, value):
                problems.append(f"{name}: offset {off} holds {key}/{value}, the writer appended {truth.get(off)}")
    return problems


@pytest.mark.rule("R-LIVE-01", "R-LIVE-02", "R-LIVE-03", "R-LIVE-04", "R-LIVE-05")
def test_readers_see_consistent_views_while_the_log_changes(tmp_path: Path) -> None:
    d = tmp_path / "events-0"
    truth_file = tmp_path / "truth.txt"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "codec"), os.environ.get("PYTHONPATH", "")])}
    writer = subprocess.Popen(
        [sys.executable, str(HERE / "concurrent_writer.py"), str(d), str(CYCLES), "7", str(truth_file)],
        env=env, stderr=subprocess.PIPE, text=True,
    )
    reads = Reads()
    readers = [_dump_once, _verify_once, _spark_slices_once]
    rounds = 0
    try:
        while writer.poll() is None and rounds < 10_000:
            if any(d.glob("*.log")):  # the writer has created the directory and its first segment
                readers[rounds % len(readers)](d, reads)
                rounds += 1
            else:
                time.sleep(0.01)
    finally:
        _, err = writer.communicate(timeout=300)
    assert writer.returncode == 0, err
    truth, cycles = _truth(truth_file)
    assert cycles >= 100
    # every reader ran many times while the writer worked, and the reads saw records
    assert rounds >= 30, rounds
    assert sum(len(r) for _, r in reads.seen) > 1000
    problems = _check(reads, truth)
    assert not problems, f"{len(problems)} inconsistencies over {rounds} reads, first: {problems[:5]}"
    # after the writer closed the log, everything verifies and reads back as the truth says
    final = Reads()
    _dump_once(d, final)
    _verify_once(d, final)
    assert not _check(final, truth)
