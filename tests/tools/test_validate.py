"""`kafkalog verify`: clean on every Kafka-written dir, and precise findings for each kind of corruption.

Expected positions are computed from the files' raw bytes with ``struct`` (SPEC's layouts), never
taken from verify's own output. The tests marked with the ``kernels`` fixture run twice: with the
compiled record walk and with its pure-Python twin.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, SHARED, lost_partitions, need_shared, read_jsonl, real_set_root, real_sets
from kafkalog.log.unified import Log
from kafkalog.tools.validate import Finding, VerifyReport, verify

GOLDEN_LOGDIRS = sorted(p for p in (GOLDEN / "kafka" / "logdir").iterdir() if p.is_dir())
BUNDLED_REAL = [pytest.param(n, s, e, id=f"bundled-{n}") for n, s, e in real_sets(GOLDEN / "real")]
SHARED_REAL_NAMES = sorted(p.name[: -len(".jsonl.gz")] for p in (SHARED / "golden-real" / "expected").glob("*.jsonl.gz"))
SHARED_KAFKA_NAMES = sorted(p.name for p in (SHARED / "golden-kafka" / "logdir").glob("*") if p.is_dir())
_NONE = [pytest.param("<none>", marks=pytest.mark.skip(reason=f"{SHARED} is absent"))]


def _errors(report: VerifyReport) -> list[str]:
    return [str(f) for f in report.errors]


def _errors_but_lost_logs(report: VerifyReport, set_dir: Path) -> list[str]:
    """The errors other than data loss, after checking that data loss is reported for exactly the
    partitions whose ``.log`` the copy lacks (cp760-flink-on-prem: customers-0 and products-0)."""
    lost = {os.path.basename(f.file) for f in report.errors if f.code == "data-loss"}
    assert lost == lost_partitions(set_dir)
    return [str(f) for f in report.errors if f.code != "data-loss"]


# ------------------------------------------------------------------------------- clean inputs
@pytest.mark.parametrize("logdir", GOLDEN_LOGDIRS, ids=lambda p: p.name)
@pytest.mark.usefixtures("kernels")
def test_golden_kafka_logdirs_verify_clean(logdir: Path) -> None:
    report = verify(logdir)
    assert report.ok, _errors(report)
    assert report.files > 0


@pytest.mark.parametrize("name,set_dir,expected_file", BUNDLED_REAL)
@pytest.mark.usefixtures("kernels")
def test_bundled_real_sets_verify_clean(name: str, set_dir: Path, expected_file: Path) -> None:
    report = verify(set_dir)
    assert report.ok, _errors(report)


@pytest.mark.parametrize("name", SHARED_KAFKA_NAMES or _NONE)
@pytest.mark.usefixtures("kernels")
def test_shared_golden_kafka_verify_clean(name: str) -> None:
    report = verify(need_shared("golden-kafka/logdir") / name)
    assert report.ok, _errors(report)


@pytest.mark.parametrize("name", SHARED_REAL_NAMES or _NONE)
def test_shared_golden_real_verify_clean(name: str) -> None:
    report = verify(need_shared("golden-real") / name)
    assert not _errors_but_lost_logs(report, SHARED / "golden-real" / name)


def test_legacy_multi_message_append_is_a_warning_as_kafkas_dump_reports_it() -> None:
    """R-IDX-05: legacy-0's index maps offset 34 to the message with offset 28 (one append of
    offsets 28-34); DumpLogSegments reports it as a mismatch, lookups are still right."""
    path = GOLDEN / "kafka" / "logdir" / "legacy-0" / "00000000000000000000.index"
    report = verify(path)
    assert report.ok
    raw = path.read_bytes()
    slot = next(i for i in range(len(raw) // 8) if struct.unpack_from(">ii", raw, 8 * i) == (34, 1203))
    assert [(f.code, f.position, f.offset) for f in report.warnings] == [("index-offset-mismatch", 8 * slot, 34)]


# --------------------------------------------------------------------- layout helpers (struct)
def _batches(log: Path) -> list[dict]:
    """Every entry of a .log: position, size, base/last offset, magic, attributes (v2 header)."""
    data = log.read_bytes()
    out, pos = [], 0
    while pos + 17 <= len(data):
        base, size = struct.unpack_from(">qi", data, pos)
        if pos + 12 + size > len(data):
            break
        magic = data[pos + 16]
        b = {"position": pos, "size": 12 + size, "base": base, "magic": magic}
        if magic == 2:
            b["attributes"], lod = struct.unpack_from(">hi", data, pos + 21)
            b["last"] = base + lod
            b["pid"] = struct.unpack_from(">q", data, pos + 43)[0]
        out.append(b)
        pos += 12 + size
    return out


def _entries(path: Path, fmt: str) -> list[tuple]:
    raw = path.read_bytes()
    size = struct.calcsize(fmt)
    return [struct.unpack_from(fmt, raw, i) for i in range(0, len(raw) - len(raw) % size, size)]


def _patch(path: Path, position: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        f.write(data)


def _find(report: VerifyReport, code: str, file: Path) -> list[Finding]:
    return [f for f in report.findings if f.code == code and Path(f.file).resolve() == file.resolve()]


@pytest.fixture
def g0(tmp_path: Path) -> Path:
    d = tmp_path / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    assert verify(d).ok
    return d


# ------------------------------------------------------------------------- the seven corruptions
def corrupt_flipped_byte(d: Path) -> tuple[str, Path, int, int]:
    log = d / "00000000000000000000.log"
    b = _batches(log)[2]
    _patch(log, b["position"] + b["size"] - 3, bytes([log.read_bytes()[b["position"] + b["size"] - 3] ^ 0xFF]))
    return "batch-crc", log, b["position"], b["base"]


def corrupt_truncated_batch(d: Path) -> tuple[str, Path, int, None]:
    log = d / "00000000000000000102.log"  # not the last segment: an error
    last = _batches(log)[-1]
    os.truncate(log, last["position"] + last["size"] // 2)
    return "truncated-batch", log, last["position"], None


def corrupt_index_position(d: Path) -> tuple[str, Path, int, int]:
    idx = d / "00000000000000000051.index"
    off_rel, pos = _entries(idx, ">ii")[1]
    _patch(idx, 8 + 4, struct.pack(">i", pos + 1))  # entry 1 now points inside a batch
    return "index-position", idx, 8, 51 + off_rel


def corrupt_timeindex_not_max(d: Path) -> tuple[str, Path, int, int]:
    tidx = d / "00000000000000000190.timeindex"
    entries = _entries(tidx, ">qi")
    ts, rel = entries[2]
    assert entries[1][0] < ts - 1  # still in order after the change
    _patch(tidx, 24, struct.pack(">q", ts - 1))
    return "timeindex-not-max", tidx, 24, 190 + rel


def corrupt_timeindex_order(d: Path) -> tuple[str, Path, int, int]:
    tidx = d / "00000000000000000000.timeindex"
    entries = _entries(tidx, ">qi")
    _patch(tidx, 12 * 3, struct.pack(">q", entries[1][0] - 5))  # entry 3 older than entry 1
    return "timeindex-order", tidx, 36, entries[3][1]


def corrupt_txnindex_missing_abort(d: Path) -> tuple[str, Path, int, int]:
    tx = d / "00000000000000000146.txnindex"
    (_v, pid, _first, last, _lso), = _entries(tx, ">hqqqq")
    tx.write_bytes(b"")
    log = d / "00000000000000000146.log"
    marker = next(b for b in _batches(log) if b["base"] == last)
    assert marker["attributes"] & 0x30 == 0x30 and marker["pid"] == pid  # a transactional control batch
    return "txnindex-missing-abort", log, marker["position"], last


def corrupt_snapshot_byte(d: Path) -> tuple[str, Path, int, None]:
    snap = d / "00000000000000000234.snapshot"
    raw = snap.read_bytes()
    version, _crc, count = struct.unpack_from(">hIi", raw, 0)
    assert version == 1 and count >= 1
    _patch(snap, len(raw) - 1, bytes([raw[-1] ^ 0x01]))
    return "snapshot-crc", snap, 2, None  # the CRC field follows the int16 version


CORRUPTIONS = [
    corrupt_flipped_byte, corrupt_truncated_batch, corrupt_index_position, corrupt_timeindex_not_max,
    corrupt_timeindex_order, corrupt_txnindex_missing_abort, corrupt_snapshot_byte,
]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__[len("corrupt_"):])
@pytest.mark.usefixtures("kernels")
def test_each_corruption_gives_a_precise_finding(g0: Path, corrupt) -> None:  # noqa: ANN001 - a test case function
    code, file, position, offset = corrupt(g0)
    report = verify(g0)
    hits = _find(report, code, file)
    assert [(f.severity, f.position, f.offset) for f in hits] == [("error", position, offset)], [str(f) for f in report.findings]
    assert not report.ok


@pytest.mark.rule("R-VFY-01")
@pytest.mark.usefixtures("kernels")
def test_all_corruptions_in_one_dir_are_all_reported(g0: Path) -> None:
    expected = [corrupt(g0) for corrupt in CORRUPTIONS]
    report = verify(g0)
    for code, file, position, offset in expected:
        assert [(f.position, f.offset) for f in _find(report, code, file)] == [(position, offset)], (code, [str(f) for f in report.errors])


def test_truncated_tail_of_the_active_segment_is_a_warning(g0: Path) -> None:
    log = g0 / "00000000000000000234.log"
    last = _batches(log)[-1]
    os.truncate(log, last["position"] + 20)
    report = verify(log)
    assert [(f.severity, f.code, f.position) for f in report.findings] == [("warning", "truncated-batch", last["position"])]


def test_index_entry_pointing_at_a_later_batch_is_an_error(g0: Path) -> None:
    idx = g0 / "00000000000000000000.index"
    log = g0 / "00000000000000000000.log"
    rel, pos = _entries(idx, ">ii")[0]
    later = next(b for b in _batches(log) if b["position"] > pos)
    _patch(idx, 4, struct.pack(">i", later["position"]))
    report = verify(idx)
    assert [(f.code, f.position, f.offset) for f in report.errors] == [("index-offset", 0, rel)]


def test_flipped_byte_in_a_legacy_message(tmp_path: Path) -> None:
    d = tmp_path / "legacy-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "legacy-0", d)
    log = d / "00000000000000000000.log"
    b = next(x for x in _batches(log) if x["magic"] == 0)
    _patch(log, b["position"] + b["size"] - 1, bytes([log.read_bytes()[b["position"] + b["size"] - 1] ^ 0x40]))
    report = verify(log)
    assert [(f.code, f.position) for f in report.errors] == [("batch-crc", b["position"])]


@pytest.mark.rule("R-IDX-02", "R-TXN-04", "R-VFY-01")
@pytest.mark.usefixtures("kernels")
def test_bad_input_never_raises(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"\x00" * 11 + b"\x05" + b"\xff" * 40)  # size 5 < 14
    (d / "00000000000000000000.index").write_bytes(b"\x01" * 13)
    (d / "00000000000000000000.timeindex").write_bytes(b"\xff" * 30)
    (d / "00000000000000000000.txnindex").write_bytes(b"\x07" * 40)
    (d / "00000000000000000000.snapshot").write_bytes(b"\x00\x01\x02")
    (d / "leader-epoch-checkpoint").write_bytes(b"0\n2\n0 0\n")
    (d / "partition.metadata").write_bytes(b"\xff\xfe")
    report = verify([d, tmp_path / "missing"])
    codes = {f.code for f in report.errors}
    assert {"batch-size", "index-size", "timeindex-size", "txnindex-size", "snapshot-structure", "checkpoint", "unreadable"} <= codes
    assert "verify-failed" not in codes
    assert all(f.file for f in report.findings)


# ---------------------------------------------- real sets with their preallocated files rebuilt
def _rebuild_absent(set_dir: Path, expected: list[dict], tmp: Path) -> Path:
    root = real_set_root(set_dir, expected)
    copy = tmp / set_dir.name
    shutil.copytree(root, copy)
    absent = copy / "ABSENT_FILES.json"
    rebuilt = 0
    if absent.exists():
        for entry in json.loads(absent.read_text())["files"]:
            if entry.get("all_zero_size") is not None:
                target = copy / entry["path"]
                subprocess.run(["truncate", "-s", str(entry["all_zero_size"]), str(target)], check=True)
                rebuilt += 1
    return copy


def _check_rebuilt_set(set_dir: Path, expected_file: Path, tmp: Path) -> None:
    expected = read_jsonl(expected_file)
    copy = _rebuild_absent(set_dir, expected, tmp)
    report = verify(copy)
    assert not _errors_but_lost_logs(report, set_dir)
    want: dict[str, list[tuple]] = {}
    for e in expected:
        if e["type"] == "record" and e["file"].endswith(".log"):
            want.setdefault(os.path.dirname(e["file"]), []).append((e["offset"], e["timestamp"], e.get("key"), e.get("value")))
    for part, records in sorted(want.items()):
        with Log.open(copy / part, sync=False, writable=True) as log:
            got = [
                (r.offset, r.timestamp, None if r.key is None else r.key.hex(), None if r.value is None else r.value.hex())
                for batch in log.batches() for r in batch.records()
            ]
        assert got == records, part
    after = verify(copy)
    assert not _errors_but_lost_logs(after, set_dir)


@pytest.mark.parametrize("name,set_dir,expected_file", BUNDLED_REAL)
def test_bundled_real_set_with_preallocated_indexes(name: str, set_dir: Path, expected_file: Path, tmp_path: Path) -> None:
    _check_rebuilt_set(set_dir, expected_file, tmp_path)


@pytest.mark.parametrize("name", SHARED_REAL_NAMES or _NONE)
def test_shared_real_set_with_preallocated_indexes(name: str, tmp_path: Path) -> None:
    base = need_shared("golden-real")
    _check_rebuilt_set(base / name, base / "expected" / f"{name}.jsonl.gz", tmp_path)


@pytest.mark.rule("R-IDX-14")
def test_a_rebuilt_zero_index_is_really_preallocated(tmp_path: Path) -> None:
    """The rebuild above does produce 10 MiB zero-filled index files (so the acceptance is exercised)."""
    name, set_dir, expected_file = next((n, s, e) for n, s, e in real_sets(GOLDEN / "real") if n == "kafka310-bheem")
    copy = _rebuild_absent(set_dir, read_jsonl(expected_file), tmp_path)
    idx = copy / "__consumer_offsets-0" / "00000000000000000000.index"
    assert idx.stat().st_size == 10485760
    assert verify(idx).findings == []


# -------------------------------------------------------------------------------------- CLI
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkalog", "verify", *args], capture_output=True, text=True, check=False)


def test_cli_clean_dir_exits_0() -> None:
    proc = _cli(str(GOLDEN / "kafka" / "logdir" / "golden-0"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert "0 errors" in proc.stderr


def test_cli_warnings_alone_exit_0() -> None:
    proc = _cli(str(GOLDEN / "kafka" / "logdir" / "legacy-0"))
    assert proc.returncode == 0
    assert "[index-offset-mismatch]" in proc.stdout


def test_cli_findings_exit_1_with_text_and_json(g0: Path) -> None:
    code, file, position, offset = corrupt_flipped_byte(g0)
    proc = _cli(str(g0))
    assert proc.returncode == 1
    assert f"{file}:{position}: offset {offset}: error:" in proc.stdout
    proc = _cli("--json", str(g0))
    assert proc.returncode == 1
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {"severity": "error", "code": code, "file": str(file), "position": position, "offset": offset} in [
        {k: r[k] for k in ("severity", "code", "file", "position", "offset")} for r in rows
    ]


@pytest.mark.rule("R-LOSS-04")
def test_cli_data_loss_is_an_error(tmp_path: Path) -> None:
    """A .log missing beside its indexes: the offsets of its segment (to the next segment's base
    offset, from the names Kafka gave golden-0's files) are an error, exit 1."""
    d = tmp_path / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    (d / "00000000000000000102.log").unlink()
    proc = _cli(str(d))
    assert proc.returncode == 1
    assert f"{d}: offset 102: error: offsets 102 to 145 are in no .log" in proc.stdout and "[data-loss]" in proc.stdout
    rows = [json.loads(line) for line in _cli("--json", str(d)).stdout.splitlines()]
    assert [(r["severity"], r["file"], r["offset"]) for r in rows if r["code"] == "data-loss"] == [("error", str(d), 102)]


def test_cli_usage_and_missing_path() -> None:
    assert _cli().returncode == 2
    proc = _cli(str(GOLDEN / "no-such-dir"))
    assert proc.returncode == 3
    assert "no such file" in proc.stderr


@pytest.mark.usefixtures("kernels")
def test_golden_records_verify_clean() -> None:
    """Kafka's record classes wrote these lone .log files (no indexes): nothing to report."""
    report = verify(GOLDEN / "kafka" / "records")
    assert report.findings == [], [str(f) for f in report.findings]


def test_deleted_txnindex_is_reported_at_the_marker(g0: Path) -> None:
    code, log, position, offset = corrupt_txnindex_missing_abort(g0)
    (g0 / "00000000000000000146.txnindex").unlink()
    report = verify(g0)
    assert [(f.code, Path(f.file), f.position, f.offset) for f in report.errors] == [(code, log, position, offset)]


@pytest.mark.usefixtures("kernels")
def test_invalid_record_with_a_valid_crc(g0: Path) -> None:
    """A record length varint that runs past the batch, under a recomputed CRC-32C: reported at the record."""
    import crc32c

    log = g0 / "00000000000000000000.log"
    b = next(x for x in _batches(log) if x["attributes"] & 0x27 == 0)  # uncompressed, not control
    first_record = b["position"] + 61
    data = bytearray(log.read_bytes())
    data[first_record] = 0xFE
    data[first_record + 1] = 0x7F  # varint 16383 -> 8191 bytes: past the end of the batch
    struct.pack_into(">I", data, b["position"] + 17, crc32c.crc32c(bytes(data[b["position"] + 21 : b["position"] + b["size"]])))
    log.write_bytes(bytes(data))
    report = verify(log)
    assert [(f.code, f.position, f.offset) for f in report.errors] == [("record-invalid", first_record, b["base"])]


def test_corrupt_inner_message_of_a_v1_gzip_wrapper(tmp_path: Path) -> None:
    """The wrapper's own CRC-32 is right, one inner message's is not: reported at the wrapper."""
    import gzip
    import zlib

    src = (GOLDEN / "kafka" / "records" / "v1-gzip" / "00000000000000000000.log").read_bytes()
    offset, size, _crc, magic, attrs, ts, klen = struct.unpack_from(">qiIbbqi", src, 0)
    assert magic == 1 and attrs & 0x07 == 1 and klen == -1
    (vlen,) = struct.unpack_from(">i", src, 30)
    inner = bytearray(gzip.decompress(src[34 : 34 + vlen]))
    rels, pos = [], 0
    while pos < len(inner):
        rel, isize = struct.unpack_from(">qi", inner, pos)
        rels.append(rel)
        pos += 12 + isize
    (first_size,) = struct.unpack_from(">i", inner, 8)
    inner[12 + first_size - 1] ^= 0x01  # last value byte of the first inner message
    value = gzip.compress(bytes(inner))
    body = struct.pack(">bbqi", magic, attrs, ts, -1) + struct.pack(">i", len(value)) + value
    wrapper = struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body
    d = tmp_path / "v1-0"
    d.mkdir()
    log = d / "00000000000000000000.log"
    log.write_bytes(wrapper + src[12 + size :])
    report = verify(log)
    first_abs = offset - rels[-1] + rels[0]
    assert [(f.code, f.position, f.offset) for f in report.errors] == [("inner-crc", 0, first_abs)]


# ------------------------------------------------------------------------ reading in chunks
@pytest.mark.parametrize("chunk", [100, 5000])
def test_findings_do_not_depend_on_the_read_chunk(g0: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """verify reads a .log in chunks of whole batches (SCAN_CHUNK); with chunks smaller than one
    batch or holding a few, every corruption is still found at its own position, and nothing else."""
    import kafkalog.tools.validate as v

    expected = [corrupt(g0) for corrupt in CORRUPTIONS]
    whole = verify(g0)
    monkeypatch.setattr(v, "SCAN_CHUNK", chunk)
    report = verify(g0)
    for code, file, position, offset in expected:
        assert [(f.position, f.offset) for f in _find(report, code, file)] == [(position, offset)], (code, _errors(report))
    assert [str(f) for f in report.findings] == [str(f) for f in whole.findings]


@pytest.mark.parametrize("case", sorted(p.name for p in (GOLDEN / "corpus" / "bad").iterdir() if p.is_dir()))
@pytest.mark.usefixtures("kernels")
def test_bad_corpus_findings_do_not_depend_on_the_read_chunk(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import kafkalog.tools.validate as v

    d = GOLDEN / "corpus" / "bad" / case
    whole = [str(f) for f in verify(d).findings]
    monkeypatch.setattr(v, "SCAN_CHUNK", 64)
    assert [str(f) for f in verify(d).findings] == whole


@pytest.mark.rule("R-LIVE-06")
def test_a_segment_truncated_while_verify_reads_it(g0: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker truncating a segment under verify (a follower's truncation) shortens its read:
    the bytes that are gone are a torn tail, never a crash (a memory-mapped read dies of SIGBUS)."""
    import kafkalog.tools.validate as v

    log = g0 / "00000000000000000234.log"
    second = _batches(log)[1]["position"]
    cut = second + 30
    real_pread = os.pread

    def truncating_pread(fd: int, n: int, offset: int) -> bytes:
        if os.fstat(fd).st_size > cut and os.path.samestat(os.fstat(fd), os.stat(log)):
            os.truncate(log, cut)
        return real_pread(fd, n, offset)

    monkeypatch.setattr(v.os, "pread", truncating_pread)
    report = verify(log)
    assert [(f.severity, f.code, f.position) for f in report.findings] == [("warning", "truncated-batch", second)]


# ------------------------------------------------------- torn tail or garbage (R-LOG-05, R-VFY-02)
@pytest.mark.usefixtures("kernels")
def test_random_files_named_as_segments_never_pass(tmp_path: Path) -> None:
    """1,000 seeded random files, each alone as the active segment of a partition dir: none
    verifies without an error. Half start with a plausible offset (0) so that the size, magic and
    codec checks of a trailing entry are reached too (those are 17 bytes or more, so that the size
    and magic are there to check). Files under 8 bytes are left out: a header cut within its offset
    field is indistinguishable from random bytes."""
    import random

    rng = random.Random(19)
    log = tmp_path / "t-0" / "00000000000000000000.log"
    log.parent.mkdir()
    passed = []
    for i in range(1000):
        n = rng.choice([rng.randint(8 + 9 * (i % 2), 64), rng.randint(65, 4096), rng.randint(4097, 65536)])
        data = bytearray(rng.randbytes(n))
        if i % 2:
            data[:8] = bytes(8)
        log.write_bytes(data)
        report = verify(log)
        if report.ok:
            passed.append((i, n, [str(f) for f in report.findings]))
    assert passed == []


def _active_copy(tmp_path: Path) -> tuple[Path, list[dict]]:
    """golden-0's last segment alone in a partition dir (so it is the active segment), with its batches."""
    d = tmp_path / "golden-0"
    d.mkdir()
    shutil.copy(GOLDEN / "kafka" / "logdir" / "golden-0" / "00000000000000000000.log", d)
    log = d / "00000000000000000000.log"
    return log, _batches(log)


def test_cut_last_batch_of_the_active_segment_is_a_torn_tail_warning(tmp_path: Path) -> None:
    log, batches = _active_copy(tmp_path)
    last = batches[-1]
    os.truncate(log, last["position"] + last["size"] // 2)
    proc = _cli(str(log))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == [
        f"{log}:{last['position']}: warning: {last['size'] // 2} bytes at the end do not form a whole batch (a torn tail: normal "
        "at the end of the active segment after an unclean shutdown; recovery truncates it) [truncated-batch]"
    ]
    assert "0 errors, 1 warnings" in proc.stderr


@pytest.mark.parametrize("cut", [8, 12, 17, 23, 61])
def test_a_header_cut_anywhere_is_still_a_torn_tail(tmp_path: Path, cut: int) -> None:
    log, batches = _active_copy(tmp_path)
    os.truncate(log, batches[-1]["position"] + cut)
    report = verify(log)
    assert [(f.severity, f.code, f.position) for f in report.findings] == [("warning", "truncated-batch", batches[-1]["position"])]


def test_mid_file_batch_length_past_the_file_is_an_error(tmp_path: Path) -> None:
    """A batch in the middle whose size field now runs past the end (by less than
    max.message.bytes): the whole batches after it show the size is corrupt, not a torn tail."""
    log, batches = _active_copy(tmp_path)
    b = batches[2]
    past = log.stat().st_size - b["position"] - 12 + 100
    _patch(log, b["position"] + 8, struct.pack(">i", past))
    proc = _cli(str(log))
    assert proc.returncode == 1, proc.stdout
    assert proc.stdout.startswith(f"{log}:{b['position']}: error: ")
    assert f"a whole entry with a valid CRC starts at position {batches[3]['position']}" in proc.stdout
    assert "[batch-length-past-end]" in proc.stdout


@pytest.mark.parametrize("chunk", [100, 700])
@pytest.mark.usefixtures("kernels")
def test_torn_tail_findings_do_not_depend_on_the_read_chunk(tmp_path: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The torn-tail checks read the offset before the tail and quote file positions: the same
    findings whatever the read chunk (a tail found in a later chunk than the batches before it)."""
    import kafkalog.tools.validate as v

    log, batches = _active_copy(tmp_path)
    b = batches[2]
    _patch(log, b["position"] + 8, struct.pack(">i", log.stat().st_size - b["position"] - 12 + 100))
    whole = [str(f) for f in verify(log).findings]
    monkeypatch.setattr(v, "SCAN_CHUNK", chunk)
    assert [str(f) for f in verify(log).findings] == whole
    assert f"starts at position {batches[3]['position']} inside it" in whole[0]
    monkeypatch.undo()
    shutil.copy(GOLDEN / "kafka" / "logdir" / "golden-0" / "00000000000000000000.log", log)
    os.truncate(log, batches[-1]["position"] + 30)
    _patch(log, batches[-1]["position"], struct.pack(">q", batches[-2]["base"]))  # an offset already used
    whole = [(f.code, f.position) for f in verify(log).findings]
    assert whole == [("offsets-not-increasing", batches[-1]["position"])]
    monkeypatch.setattr(v, "SCAN_CHUNK", chunk)
    assert [(f.code, f.position) for f in verify(log).findings] == whole


@pytest.mark.parametrize(
    ("field", "at", "value", "code"),
    [
        ("size over max.message.bytes", 8, struct.pack(">i", 1048588 - 11), "batch-size"),
        ("magic 3", 16, b"\x03", "batch-magic"),
        ("offset before the previous batch's", 0, struct.pack(">q", 1), "offsets-not-increasing"),
        ("offset below the segment", 0, struct.pack(">q", -5), "segment-base-offset"),
        ("codec 7", 22, b"\x07", "batch-attributes"),
    ],
)
def test_a_cut_last_entry_that_no_broker_writes_is_an_error(tmp_path: Path, field: str, at: int, value: bytes, code: str) -> None:
    log, batches = _active_copy(tmp_path)
    last = batches[-1]
    os.truncate(log, last["position"] + last["size"] // 2)
    _patch(log, last["position"] + at, value)
    report = verify(log)
    assert [(f.severity, f.code, f.position) for f in report.findings] == [("error", code, last["position"])], field


def test_max_message_bytes_is_the_topics(tmp_path: Path) -> None:
    log, batches = _active_copy(tmp_path)
    last = batches[-1]
    os.truncate(log, last["position"] + last["size"] // 2)
    assert verify(log, max_message_bytes=last["size"]).ok
    assert [f.code for f in verify(log, max_message_bytes=last["size"] - 1).errors] == ["batch-size"]
    assert _cli("--max-message-bytes", str(last["size"] - 1), str(log)).returncode == 1


def test_a_torn_tail_after_a_clean_shutdown_is_an_error(tmp_path: Path) -> None:
    """The broker writes .kafka_cleanshutdown in its log dir on a clean shutdown: no segment was
    being written, so a cut batch is damage, not a torn tail (CleanShutdownFileHandler.java @1eb7644)."""
    log, batches = _active_copy(tmp_path)
    last = batches[-1]
    os.truncate(log, last["position"] + last["size"] // 2)
    (tmp_path / ".kafka_cleanshutdown").write_text("{}")
    report = verify(log.parent)
    assert [(f.severity, f.code, f.position) for f in report.findings] == [("error", "truncated-batch", last["position"])]
    assert ".kafka_cleanshutdown" in report.findings[0].message


def test_findings_are_sorted_and_the_summary_counts_files(g0: Path) -> None:
    for corrupt in CORRUPTIONS:
        corrupt(g0)
    report = verify(g0)
    keys = [(f.file, -1 if f.position is None else f.position) for f in report.findings]
    assert keys == sorted(keys) and len(keys) >= len(CORRUPTIONS)
    proc = _cli(str(g0))
    files = sum(1 for p in g0.iterdir() if p.is_file())
    assert re.search(rf"^verified {files} files \(\d+ bytes\): {len(report.errors)} errors, {len(report.warnings)} warnings, 0 notes$",
                     proc.stderr, re.M), proc.stderr


def test_total_is_announced_before_progress(g0: Path) -> None:
    totals: list[int] = []
    seen: list[str] = []
    verify(g0, progress=seen.append, total=totals.append)
    assert totals == [sum(1 for p in g0.iterdir() if p.is_file())] == [len(seen)]


@pytest.mark.shared
@pytest.mark.parametrize("name", SHARED_REAL_NAMES or _NONE)
def test_healthy_broker_dirs_have_no_warnings_but_absent_files(name: str) -> None:
    """Every golden-real set: no error, and no warning except for files left out of the copy
    (log-missing); behaviours of older brokers are notes (cp760-flink-on-prem: Kafka 3.6's time
    index entries inside their batch)."""
    report = verify(need_shared("golden-real") / name)
    assert not _errors_but_lost_logs(report, SHARED / "golden-real" / name)
    assert [str(f) for f in report.warnings if f.code != "log-missing"] == []
    if name == "cp760-flink-on-prem":
        assert {f.code for f in report.notes} == {"timeindex-offset-mismatch"}


def test_notes_are_listed_only_on_request(tmp_path: Path) -> None:
    """A time index entry naming an offset inside its batch (brokers before 3.8) is a note:
    not a warning, counted, listed with --notes."""
    d = tmp_path / "t-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    tidx = d / "00000000000000000000.timeindex"
    ts, rel = _entries(tidx, ">qi")[0]
    b = next(x for x in _batches(d / "00000000000000000000.log") if x.get("last") == rel)
    assert b["last"] > b["base"]
    _patch(tidx, 8, struct.pack(">i", b["base"] + 1 if b["base"] + 1 < b["last"] else b["base"]))
    report = verify(tidx)
    assert [(f.severity, f.code) for f in report.findings if f.severity != "error"] == [("note", "timeindex-offset-mismatch")]
    proc = _cli(str(tidx))
    assert "[timeindex-offset-mismatch]" not in proc.stdout and "1 notes (--notes lists them)" in proc.stderr
    assert "note: " in _cli("--notes", str(tidx)).stdout
