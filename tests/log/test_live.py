"""Reading a directory that a writer changes under the reader (SPEC.md §6.7), one race at a time.

The races are made deterministic here: a file renamed to ``.deleted`` between listing and
opening, an index trimmed between ``fstat`` and ``read``, entries indexed after a log was read.
tests/log/test_concurrency.py runs the same readers against a real writer process.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import struct
from pathlib import Path

import pytest

import kafkalog.format.index as index_mod
import kafkalog.tools.dump as dump_mod
from helpers import GOLDEN
from kafkalog.format.index import OffsetIndex
from kafkalog.format.records.stream import LogReader
from kafkalog.tools.dump import DumpOptions, dump

SRC = GOLDEN / "kafka" / "logdir" / "golden-0"


def _copy(tmp_path: Path) -> Path:
    d = tmp_path / "golden-0"
    shutil.copytree(SRC, d)
    return d


def _kafka_offsets(log: Path) -> list[int]:
    """Offsets of the records in a Kafka-written segment, read with the stream reader."""
    with LogReader(log) as r:
        return [rec.offset for b in r.batches() for rec in b.records()]


@pytest.mark.rule("R-LIVE-03")
def test_dump_reads_a_segment_renamed_to_deleted_after_listing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _copy(tmp_path)
    seg = d / "00000000000000000051.log"
    listing = dump_mod._listed(str(d))
    seg.rename(str(seg) + ".deleted")  # retention ran between the listing and the open
    monkeypatch.setattr(dump_mod, "_listed", lambda _root: listing)
    out, err = io.StringIO(), io.StringIO()
    res = dump([str(d)], DumpOptions(fmt="json"), out=out, err=err)
    assert res.errors == []
    got = [json.loads(x)["offset"] for x in out.getvalue().splitlines() if '"type":"record"' in x and "00000000000000000051.log" in x]
    assert got == _kafka_offsets(SRC / "00000000000000000051.log")


@pytest.mark.rule("R-LIVE-03")
def test_dump_warns_when_a_listed_file_is_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _copy(tmp_path)
    listing = dump_mod._listed(str(d))
    for f in d.glob("00000000000000000051.*"):  # the segment's files deleted for good after file.delete.delay.ms
        f.unlink()
    monkeypatch.setattr(dump_mod, "_listed", lambda _root: listing)
    out, err = io.StringIO(), io.StringIO()
    res = dump([str(d)], DumpOptions(fmt="json"), out=out, err=err)
    assert res.errors == []
    assert "00000000000000000051.log: removed while dumping" in err.getvalue()
    files = {json.loads(x)["file"] for x in out.getvalue().splitlines()}
    assert "00000000000000000051.log" not in files
    assert {"00000000000000000000.log", "00000000000000000102.log"} <= files  # the others are dumped


@pytest.mark.rule("R-LIVE-06")
@pytest.mark.rule("R-LIVE-01")
def test_index_trimmed_while_read_gives_the_shorter_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A size taken before the writer trimmed the file: the read sees fewer bytes and no fault."""
    path = tmp_path / "00000000000000000000.index"
    shutil.copy(SRC / "00000000000000000000.index", path)
    whole = OffsetIndex.read(SRC / "00000000000000000000.index")
    assert len(whole) >= 2
    real_fstat = os.fstat

    class Bigger:
        def __init__(self, st: os.stat_result) -> None:
            self.st_size = st.st_size + 4096

    monkeypatch.setattr(index_mod.os, "fstat", lambda fd: Bigger(real_fstat(fd)))
    with open(path, "r+b") as f:
        f.truncate(8 + 4)  # one whole entry and half of the next
    idx = OffsetIndex.read(path)
    assert list(idx.offsets) == [whole.offsets[0]]
    assert idx.trailing_bytes == 4


@pytest.mark.rule("R-LIVE-02")
def test_verify_reads_indexes_before_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that appends and indexes a batch while verify reads the segment: the index entry
    written after the log was read points past the data verify saw; read first, it is not seen."""
    import kafkalog.tools.validate as v

    d = _copy(tmp_path)
    last = sorted(d.glob("*.log"))[-1]
    idx_path = last.with_suffix(".index")
    entries = OffsetIndex.read(idx_path)
    real_scan = v._scan_log
    written = []

    def scan_then_writer_indexes(path: str, *a: object, **k: object) -> object:
        out = real_scan(path, *a, **k)  # type: ignore[arg-type]
        if path == str(last) and not written:
            rel = int(entries.offsets[-1]) - entries.base_offset + 1000 if len(entries) else 1000
            with open(idx_path, "r+b") as f:  # the writer's next entry, in the first free slot
                f.seek(len(entries) * 8)
                f.write(struct.pack(">ii", rel, last.stat().st_size + 100))
            written.append(True)
        return out

    monkeypatch.setattr(v, "_scan_log", scan_then_writer_indexes)
    assert v.verify(d).errors == []
    assert written
    # read now, after the log, the same entry is a finding: the test can tell the two orders apart
    assert any(f.file == str(idx_path) for f in v.verify(d).errors)
