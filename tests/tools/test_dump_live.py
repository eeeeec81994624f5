"""``kafkalog dump`` of a directory that changes while it is read (R-LIVE-04): a segment the cleaner
replaces after the listing is read only up to the next listed segment's base offset, whose records
the dump reads from their own file; a directory at rest is dumped file by file, whole, as
kafka-dump-log dumps it, even where segments overlap."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from kafkalog import RecordBatchBuilder
from kafkalog.tools.dump import DumpOptions, dump


def _segment(offsets: range) -> bytes:
    out = b""
    for off in offsets:
        b = RecordBatchBuilder(off)
        b.append(1_700_000_000_000 + off, b"k%d" % off, b"v%d" % off)
        out += b.build()
    return out


def _record_offsets(text: str) -> list[int]:
    return [o["offset"] for o in map(json.loads, text.splitlines()) if o["type"] == "record"]


@pytest.mark.rule("R-LIVE-04")
def test_a_segment_replaced_after_the_listing_is_read_up_to_the_next_segment(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(_segment(range(0, 10)))
    (d / "00000000000000000010.log").write_bytes(_segment(range(10, 20)))
    cleaned = tmp_path / "cleaned"
    cleaned.write_bytes(_segment(range(0, 20, 2)))  # the cleaner's merge of both segments: every other key kept

    def swap_before_the_first_read(path: str) -> None:
        if path.endswith("00000000000000000000.log") and cleaned.exists():
            os.replace(cleaned, path)  # renamed over the listed file: another inode

    out = io.StringIO()
    dump([str(d)], DumpOptions(fmt="json"), out, io.StringIO(), swap_before_the_first_read)
    # the replaced file's records below offset 10, then the second segment's file whole
    assert _record_offsets(out.getvalue()) == [0, 2, 4, 6, 8, *range(10, 20)]


def test_a_directory_at_rest_is_dumped_whole_where_segments_overlap(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(_segment(range(0, 15)))  # runs past the next base
    (d / "00000000000000000010.log").write_bytes(_segment(range(10, 20)))
    out = io.StringIO()
    dump([str(d)], DumpOptions(fmt="json"), out, io.StringIO())
    assert _record_offsets(out.getvalue()) == [*range(0, 15), *range(10, 20)]


def _merge_fixture(tmp_path: Path) -> tuple[Path, Path]:
    """Two segments, and the cleaner's merge of both (every other key kept) ready to be swapped in."""
    d = tmp_path / "t-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(_segment(range(0, 10)))
    (d / "00000000000000000010.log").write_bytes(_segment(range(10, 20)))
    cleaned = tmp_path / "cleaned"
    cleaned.write_bytes(_segment(range(0, 20, 2)))
    return d, cleaned


def _swap(d: Path, cleaned: Path) -> None:
    """The cleaner's swap (R-CMP-14): the old segments renamed .deleted, the merged one renamed in."""
    first, second = d / "00000000000000000000.log", d / "00000000000000000010.log"
    os.replace(second, str(second) + ".deleted")
    os.replace(first, str(first) + ".deleted")
    os.replace(cleaned, first)


@pytest.mark.rule("R-LIVE-04")
def test_a_swap_right_after_the_listing_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inode a replaced file is judged by is the one the listing read with its name: a stat
    taken after the listing would see the merged file and let the dump read it whole, then the
    second segment from its .deleted name (offset 10 after 18: the concurrency failure of issue 27)."""
    from kafkalog.tools import dump as dump_module

    d, cleaned = _merge_fixture(tmp_path)
    real = dump_module._listed

    def listed_then_swap(root: str) -> list:
        out = real(root)
        if sys._getframe(1).f_code.co_name == "_targets" and cleaned.exists():
            _swap(d, cleaned)
        return out

    monkeypatch.setattr(dump_module, "_listed", listed_then_swap)
    out = io.StringIO()
    dump([str(d)], DumpOptions(fmt="json"), out, io.StringIO())
    assert _record_offsets(out.getvalue()) == [0, 2, 4, 6, 8, *range(10, 20)]


@pytest.mark.rule("R-LIVE-04")
def test_a_swap_between_the_check_and_the_read_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is judged by the inode of the file opened (fstat), so a swap just before the open,
    after any earlier check, still bounds the read."""
    from kafkalog.tools import dump as dump_module

    d, cleaned = _merge_fixture(tmp_path)
    real = dump_module._open_segment

    def swap_then_open(path: str):  # noqa: ANN202 - a file object
        if cleaned.exists():
            _swap(d, cleaned)
        return real(path)

    monkeypatch.setattr(dump_module, "_open_segment", swap_then_open)
    out = io.StringIO()
    dump([str(d)], DumpOptions(fmt="json"), out, io.StringIO())
    assert _record_offsets(out.getvalue()) == [0, 2, 4, 6, 8, *range(10, 20)]
