"""``kafkalog dump`` of a directory that changes while it is read (R-LIVE-04): a segment the cleaner
replaces after the listing is read only up to the next listed segment's base offset, whose records
the dump reads from their own file; a directory at rest is dumped file by file, whole, as
kafka-dump-log dumps it, even where segments overlap."""

from __future__ import annotations

import io
import json
import os
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
