"""Damage reported so that a person can act on it: a ``.log`` cut short gives one data-loss finding and
one finding per index file (not one per index entry), ``recover`` says what it cuts (bytes, records,
offsets) and ``--dry-run`` says it without changing anything, and ``info`` takes the last time from
the records that are there.

The directories are written here batch by batch, so the positions, offsets, record counts and
timestamps every expectation uses are those of the batches written, not read back by the code
under test; the index files are read with the format layer's readers only to count their entries.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafkalog.format.index import OffsetIndex, TimeIndex
from kafkalog.format.records.v2 import RecordBatchBuilder
from kafkalog.log.unified import Log, LogConfig
from kafkalog.tools.cli import main
from scratch import fingerprint

T0 = 1_700_000_000_000
RECORDS_PER_BATCH = 3


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _batch(base: int) -> bytes:
    b = RecordBatchBuilder(base)
    for i in range(RECORDS_PER_BATCH):
        b.append(T0 + 1000 * (base + i), f"k{base + i}".encode(), b"v" * 40)
    return b.build()


def _write(root: Path, segments: int, batches_per_segment: int) -> tuple[Path, list[list[tuple[int, int, int]]]]:
    """A partition dir of ``segments`` segments written as a follower writes them, every batch
    indexed; returns (dir, per segment: (position, base offset, size) of each batch)."""
    d = root / "data" / "orders-0"
    layout: list[list[tuple[int, int, int]]] = []
    offset = 0
    with Log.open(d, LogConfig(index_interval_bytes=1), writable=True, sync=False, clock=lambda: T0) as lg:
        for s in range(segments):
            if s:
                lg.roll()
            pos, seg = 0, []
            for _ in range(batches_per_segment):
                data = _batch(offset)
                lg.append(data, assign_offsets=False)
                seg.append((pos, offset, len(data)))
                pos += len(data)
                offset += RECORDS_PER_BATCH
            layout.append(seg)
    return d, layout


def test_a_log_cut_short_gives_one_data_loss_and_one_finding_per_index_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d, layout = _write(tmp_path, 1, 40)
    log = d / f"{0:020d}.log"
    pos, base, size = layout[0][10]
    os.truncate(log, pos + size // 2)  # mid-batch: batches 0..9 stay whole
    idx = OffsetIndex.read(str(d / f"{0:020d}.index"))
    tidx = TimeIndex.read(str(d / f"{0:020d}.timeindex"))
    past_index = [(int(o), int(p)) for o, p in zip(idx.offsets, idx.positions, strict=True) if p >= pos]  # from the torn batch on
    past_time = [int(o) for o in tidx.offsets if o >= base]
    assert len(past_index) > 20 and len(past_time) > 20  # what used to be one error each
    code, out, _err = _cli(capsys, "verify", "--json", str(d.parent))
    assert code == 1
    errors = [f for f in map(json.loads, out.splitlines()) if f["severity"] == "error"]
    assert [f["code"] for f in errors].count("data-loss") == 1
    assert next(f for f in errors if f["code"] == "data-loss")["offset"] == base
    grouped = {Path(f["file"]).suffix: f for f in errors if f["code"] == "index-past-end"}
    assert set(grouped) == {".index", ".timeindex"}
    assert len(errors) == 3, errors
    first_off, first_pos = past_index[0]
    assert grouped[".index"]["offset"] == first_off
    assert grouped[".index"]["message"].startswith(f"{len(past_index)} entries from offset {first_off} (position {first_pos}) on")
    assert grouped[".timeindex"]["offset"] == past_time[0]
    assert grouped[".timeindex"]["message"].startswith(f"{len(past_time)} entries from offset {past_time[0]} ")


def test_info_takes_the_last_time_from_the_records_that_are_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The time index of a .log cut short still names the times of the records it lost."""
    d, layout = _write(tmp_path, 1, 40)
    pos, base, size = layout[0][10]
    os.truncate(d / f"{0:020d}.log", pos + size // 2)
    code, out, _err = _cli(capsys, "info", "--json", str(d))
    assert code == 0
    info = json.loads(out)
    assert info["endOffset"] == base
    assert info["lastTimestamp"] == T0 + 1000 * (base - 1)  # the last record kept: offset base - 1


@pytest.mark.parametrize("json_out", [False, True])
def test_recover_says_what_it_cuts_and_dry_run_changes_nothing(json_out: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One flipped byte in the middle segment: Kafka cuts that segment at the corrupt batch
    (LogSegment.recover) and deletes the segment after it (LogLoader.recoverLog)."""
    d, layout = _write(tmp_path, 3, 8)
    seg = d / f"{layout[1][0][1]:020d}.log"
    pos, base, size = layout[1][5]
    with open(seg, "r+b") as f:  # a byte of the records, past the batch header: the CRC no longer matches
        f.seek(pos + size - 3)
        b = f.read(1)
        f.seek(pos + size - 3)
        f.write(bytes([b[0] ^ 0xFF]))
    mid_bytes = sum(s for _p, _b, s in layout[1][5:])
    last_bytes = sum(s for _p, _b, s in layout[2])
    last_offset = layout[2][-1][1] + RECORDS_PER_BATCH - 1
    expected = [
        {"file": seg.name, "position": pos, "bytes": mid_bytes, "fromOffset": base, "batches": 3, "records": 3 * RECORDS_PER_BATCH,
         "lastOffset": layout[1][-1][1] + RECORDS_PER_BATCH - 1, "deleted": False},
        {"file": f"{layout[2][0][1]:020d}.log", "position": 0, "bytes": last_bytes, "fromOffset": layout[2][0][1], "batches": 8,
         "records": 8 * RECORDS_PER_BATCH, "lastOffset": last_offset, "deleted": True},
    ]
    before = fingerprint(tmp_path)
    flags = ["--json"] if json_out else []
    code, dry, _err = _cli(capsys, "recover", "--dry-run", *flags, str(d))
    assert code == 0
    assert fingerprint(tmp_path) == before  # a dry run reads only
    code, done, _err = _cli(capsys, "recover", *flags, str(d))
    assert code == 0
    if json_out:
        dry_json, done_json = json.loads(dry), json.loads(done)
        assert dry_json["cuts"] == expected and done_json["cuts"] == expected
        assert dry_json["dryRun"] and not done_json["dryRun"]
        assert dry_json["logEndOffset"] == done_json["logEndOffset"] == base
    else:
        total = f"cut {mid_bytes + last_bytes} bytes, {11 * RECORDS_PER_BATCH} records, offsets {base}..{last_offset}"
        assert f"would {total}" in dry and "dry run: nothing changed" in dry
        assert f": {total} (as Kafka recovers" in done
        assert (f"truncated {seg.name} at offset {base}, position {pos}: {mid_bytes} bytes, {3 * RECORDS_PER_BATCH} records in 3 batches, "
                f"offsets {base}..{layout[1][-1][1] + RECORDS_PER_BATCH - 1}") in done
        assert f"deleted {layout[2][0][1]:020d}.log: {last_bytes} bytes" in done
    assert seg.stat().st_size == pos and not (d / f"{layout[2][0][1]:020d}.log").exists()
