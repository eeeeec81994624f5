"""Leftovers of an interrupted cleaner or split (``.cleaned``, ``.swap``, ``.deleted``) read as Kafka loads them.

LogLoader.removeTempFilesAndCollectSwapFiles (KAFKA-6264) and the swap passes of LogLoader.load decide
what survives a crash in the middle of a swap (SPEC R-RCV-04): a ``.swap`` at or above the smallest
``.cleaned`` base offset is an incomplete swap and is deleted with the ``.cleaned`` files (the old
segments stay); otherwise the swap is completed (the files it covers are deleted, the ``.swap`` files
renamed). The tests stop the log layer's own cleaner and split before each rename of their swap, as a
crash would, and check that every reader gives what the broker serves after loading the directory:
the records the test wrote (a swap to be deleted), or those records as compaction keeps them, or the
same records split into segments (a swap to be completed), computed here from what was written.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import pytest

import kafkalog
from kafkalog.format.records.v2 import RecordBatchBuilder
from kafkalog.log import split as split_module
from kafkalog.log.cleaner import compact
from kafkalog.log.leftovers import COMPLETE, DELETE, load_plan
from kafkalog.log.split import split_overflowed_segment
from kafkalog.log.unified import Log, LogConfig
from kafkalog.tools.cli import main
from scratch import fingerprint

NOW = 1_700_000_100_000
INT32_MAX = (1 << 31) - 1
FAR = INT32_MAX + 10  # an offset that does not fit an index of a segment based at 0


class _Crash(Exception):
    pass


Record = tuple[int, bytes, bytes]


def _batch(base: int, *records: tuple[bytes, bytes]) -> bytes:
    b = RecordBatchBuilder(base)
    for i, (k, v) in enumerate(records):
        b.append(1_700_000_000_000 + base + i, k, v)
    return b.build()


def _config() -> LogConfig:
    """Compaction's settings; index files preallocated at 4 KiB (512 entries, far more than these
    few records index) rather than Kafka's 10 MiB: a crash leaves them zero-filled past their
    entries either way, and reading 10 MiB of zeros at each of the ~30 crash points by every reader
    was most of this module's time."""
    return LogConfig(
        cleanup_policy=("compact",), file_delete_delay_ms=60_000, min_cleanable_dirty_ratio=0.01, segment_index_bytes=4096
    )


# ------------------------------------------------------------------------------- the cases
def _compacted_dir(root: Path) -> tuple[Path, list[Record], list[Record]]:
    """Three closed segments (keys repeat across them) and an active one, written as a follower
    writes them; returns (dir, the records written, the records compaction keeps: in the closed
    segments, the last record of each key; the active segment as written)."""
    d = root / "logdir" / "orders-0"
    written: list[Record] = []
    with Log.open(d, _config(), writable=True, sync=False, clock=lambda: NOW) as lg:
        offset = 0
        for _segment in range(3):
            for _ in range(4):
                recs = [(f"k{offset % 5}".encode(), f"v{offset}".encode()), (f"k{(offset + 1) % 5}".encode(), f"v{offset + 1}".encode())]
                lg.append(_batch(offset, *recs), assign_offsets=False)
                written += [(offset + i, k, v) for i, (k, v) in enumerate(recs)]
                offset += len(recs)
            lg.roll()
        active_base = offset
        lg.append(_batch(offset, (b"a", b"active")), assign_offsets=False)
        written.append((offset, b"a", b"active"))
    last_of = {k: o for o, k, _v in written if o < active_base}
    kept = [r for r in written if r[0] >= active_base or last_of[r[1]] == r[0]]
    return d, written, kept


def _overflowed_dir(root: Path) -> tuple[Path, list[Record], list[int]]:
    """Segment 0 holding offsets past 2^31 - 1 from its base (as brokers before 0.10.2 wrote), then
    an active segment; returns (dir, the records written, the segment bases after a split: a new
    segment starts where offsets stop fitting, R-RCV-06)."""
    d = root / "logdir" / "legacy-0"
    d.mkdir(parents=True)
    first = [_batch(0, (b"a", b"1")), _batch(1, (b"b", b"2")), _batch(FAR, (b"c", b"3"))]
    (d / f"{0:020d}.log").write_bytes(b"".join(first))
    (d / f"{FAR + 1:020d}.log").write_bytes(_batch(FAR + 1, (b"d", b"4")))
    for base in (0, FAR + 1):
        (d / f"{base:020d}.index").write_bytes(b"")
        (d / f"{base:020d}.timeindex").write_bytes(b"")
    written = [(0, b"a", b"1"), (1, b"b", b"2"), (FAR, b"c", b"3"), (FAR + 1, b"d", b"4")]
    return d, written, [0, FAR, FAR + 1]


def _compact(d: Path, hook) -> None:  # noqa: ANN001
    lg = Log.open(d, _config(), writable=True, sync=False, clock=lambda: NOW)
    try:
        compact(lg, NOW, force=True, on_step=hook)
    finally:
        for seg in lg.segments:  # a crash: nothing flushed or closed on the way out
            seg.close_handlers()


def _split(d: Path, hook, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    real = split_module.replace_segments
    monkeypatch.setattr(split_module, "replace_segments", lambda lg, new, old, now, _on_step: real(lg, new, old, now, hook))
    lg = Log.open(d, _config(), writable=True, sync=False, clock=lambda: NOW)
    try:
        split_overflowed_segment(lg, lg.segments[0], now_ms=NOW)
    finally:
        for seg in lg.segments:
            seg.close_handlers()
        monkeypatch.setattr(split_module, "replace_segments", real)


def _steps(make, run, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # noqa: ANN001
    seen: list[str] = []
    d, *_ = make(tmp / "steps")
    run(d, lambda step, _path: seen.append(step), monkeypatch)
    return seen


def _crashed(make, run, k: int, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:  # noqa: ANN001
    """The directory after a crash before the swap's k-th rename."""
    d, *_ = make(tmp / f"crash-{k}")
    calls = iter(range(10_000))

    def hook(step: str, path: str) -> None:
        if next(calls) == k:
            raise _Crash(f"{step} {path}")

    with contextlib.suppress(_Crash):
        run(d, hook, monkeypatch)
    return d


CASES = {
    "cleaner": (_compacted_dir, lambda d, hook, _mp: _compact(d, hook)),
    "split": (_overflowed_dir, _split),
}


# ------------------------------------------------------------------------------- the readers
def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _read_all(d: Path, capsys: pytest.CaptureFixture[str], tmp: Path) -> dict[str, list[Record]]:
    """The records each reader gives for the partition directory ``d``."""
    got: dict[str, list[Record]] = {}
    with Log.open(d) as lg:
        got["Log.open"] = [(r.offset, r.key, r.value) for b in lg.batches() for r in b.records()]
    table = kafkalog.scan(str(d.parent), columns=["offset", "key", "value"]).read_all().to_pylist()
    got["scan"] = [(r["offset"], r["key"], r["value"]) for r in table]
    code, out, err = _cli(capsys, "cat", str(d.parent), "-f", "%o %k %s\\n")
    assert code == 0, err
    got["cat"] = [(int(o), k.encode(), v.encode()) for o, k, v in (line.split(" ") for line in out.splitlines())]
    code, _out, err = _cli(capsys, "export", str(d.parent), "-o", str(tmp / "export"), "--format", "jsonl", "--binary", "text")
    assert code == 0, err
    lines = [json.loads(line) for f in sorted((tmp / "export").rglob("*.jsonl")) for line in f.read_text().splitlines()]
    got["export"] = [(r["offset"], r["key"].encode(), r["value"].encode()) for r in lines]
    shutil.rmtree(tmp / "export")
    source = pytest.importorskip("kafkalog_spark.source")  # the Spark source, run in this process as Spark runs it
    ds = source.KafkaLogDataSource({"path": str(d.parent)})
    reader = ds.reader(ds.schema())
    rows = [r for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    got["spark"] = [(r["offset"], r["key"], r["value"]) for r in sorted(rows, key=lambda r: r["offset"])]
    code, out, err = _cli(capsys, "dump", "--json", str(d))
    assert code == 0, err
    got["dump"] = [(r["offset"], bytes.fromhex(r["key"]), bytes.fromhex(r["value"])) for r in map(json.loads, out.splitlines()) if "key" in r]
    return got


def _check_readers(d: Path, expected: list[Record], capsys: pytest.CaptureFixture[str], tmp: Path, what: str) -> None:
    before = fingerprint(d.parent)
    for reader, records in _read_all(d, capsys, tmp).items():
        assert records == expected, f"{what}: {reader}"
    code, out, _err = _cli(capsys, "info", "--json", str(d.parent))
    assert code == 0
    info = json.loads(out.splitlines()[0])
    assert (info["lastOffset"], info["endOffset"]) == (expected[-1][0], expected[-1][0] + 1), what
    assert fingerprint(d.parent) == before, f"{what}: reading wrote"  # reading never writes


# ------------------------------------------------------------------------------- the tests
@pytest.mark.rule("R-RCV-03", "R-RCV-04", "R-RCV-11", "R-CMP-14")
@pytest.mark.parametrize("case", ["cleaner", "split"])
def test_every_reader_serves_what_the_broker_loads_after_a_crash_at_each_step(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash before each rename of the swap: while a new file is still .cleaned the swap is
    incomplete (the renames to .swap go highest base offset first, so that .cleaned file is at or
    below every .swap) and the broker keeps the old segments; once none is, it completes the swap."""
    make, run = CASES[case]
    steps = _steps(make, run, tmp_path, monkeypatch)
    assert {"swap", "delete", "final"} <= set(steps)
    _d, written, after = make(tmp_path / "expected")
    outcomes = set()
    for k in range(len(steps) + 1):
        d = _crashed(make, run, k, tmp_path, monkeypatch)
        names = [p.name for p in d.iterdir()]
        # LogLoader: a .cleaned file left means the renames to .swap (highest base offset first) did not all happen
        completes = not any(n.endswith(".cleaned") for n in names)
        if k == 0:
            assert not completes  # nothing renamed yet: every new file is still .cleaned
        if k == len(steps) or steps[k] != "swap":
            assert completes  # every new file is .swap or final: old files are being renamed .deleted
        if k < len(steps):
            assert any(n.endswith((".cleaned", ".swap", ".deleted")) for n in names), k
        # a split keeps every byte (only the segments differ); compaction keeps the last record of each key
        expected = after if case == "cleaner" and completes else written
        _check_readers(d, expected, capsys, tmp_path, f"{case}: crash before step {k} ({steps[k] if k < len(steps) else 'none'})")
        # verify notes each leftover and what Kafka does with it, and reports no other error (but an
        # overflowed segment's own, which the split is there to remove)
        _code, out, err = _cli(capsys, "verify", str(d.parent))
        assert all("[leftover]" in line or "[offset-overflow]" in line for line in out.splitlines()), out
        notes = [line for line in out.splitlines() if "[leftover]" in line]
        leftovers = [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
        for n in leftovers:
            mine = [line for line in notes if f"/{n}:" in line]
            assert len(mine) == 1, (n, notes)
            if n.endswith(".swap"):
                assert ("completes the interrupted swap" in mine[0]) == completes, mine
            else:
                assert "Kafka deletes it" in mine[0], mine
        # recover is the broker's load: it writes what the readers showed
        code, out, err = _cli(capsys, "recover", "--dry-run", str(d))
        assert code == 0 and "dry run: nothing changed" in out, out
        code, out, err = _cli(capsys, "recover", str(d))
        assert code == 0, err
        if any(n.endswith(".swap") for n in leftovers):
            assert ("completed an interrupted swap" in out) == completes, out
        assert not [p.name for p in d.iterdir() if p.name.endswith((".cleaned", ".swap"))]
        with Log.open(d) as lg:
            assert [(r.offset, r.key, r.value) for b in lg.batches() for r in b.records()] == expected
            if case == "split":  # an overflowed segment left is split by the recovery itself (retryOnOffsetOverflow)
                assert [s.base_offset for s in lg.segments] == after
        outcomes.add(completes)
    assert outcomes == {True, False}


def test_load_plan_follows_logloader() -> None:
    """The rule on listings alone, case by case (LogLoader.removeTempFilesAndCollectSwapFiles and the swap passes)."""
    ends = {"00000000000000000000.log.swap": 50, "00000000000000000100.log.swap": 150}
    # an incomplete swap: the .swap at or above the smallest .cleaned base offset goes, the old segment stays
    plan = load_plan(["00000000000000000000.log", "00000000000000000000.log.swap", "00000000000000000000.index.swap",
                      "00000000000000000000.timeindex.cleaned", "00000000000000000007.log.deleted"], ends.__getitem__)
    assert {a.name: a.action for a in plan.actions} == {
        "00000000000000000007.log.deleted": DELETE, "00000000000000000000.log.swap": DELETE,
        "00000000000000000000.index.swap": DELETE, "00000000000000000000.timeindex.cleaned": DELETE}
    assert plan.served == {"00000000000000000000.log": "00000000000000000000.log"}
    assert plan.swap_range is None
    # a swap below every .cleaned file is complete: the files in its range go (snapshots too), the .swap files are renamed
    plan = load_plan(["00000000000000000000.log", "00000000000000000000.index", "00000000000000000030.log", "00000000000000000030.snapshot",
                      "00000000000000000050.log", "00000000000000000000.log.swap", "00000000000000000000.index.swap",
                      "00000000000000000100.log.cleaned", "00000000000000000100.log.swap", "leader-epoch-checkpoint",
                      "00000000000000000060.checkpoint.deleted"], ends.__getitem__)
    assert plan.swap_range == (0, 50)
    assert plan.served == {
        "00000000000000000000.index": "00000000000000000000.index.swap", "00000000000000000000.log": "00000000000000000000.log.swap",
        "00000000000000000060.checkpoint.deleted": "00000000000000000060.checkpoint.deleted",  # KafkaMetadataLog's, not LogLoader's
        "00000000000000000050.log": "00000000000000000050.log", "leader-epoch-checkpoint": "leader-epoch-checkpoint"}
    assert [a.target for a in plan.actions if a.action == COMPLETE] == ["00000000000000000000.index", "00000000000000000000.log"]
