"""Where the used entries of a read ``.index`` / ``.timeindex`` end (SPEC R-IDX-12, R-IDX-14).

Reading stops looking at slots once it finds the end of the entries, so these tests place that end
everywhere the search could misjudge it: before, on and after the edges of its chunks and reads,
behind garbage, in files with a partial last slot, in empty and all-zero files, read from a path
and from bytes. The expected entries are Kafka's: its own dump of Kafka-written index files padded
the way Kafka preallocates an active segment's (``golden/kafka/dump/logdir.jsonl``), and for made-up
files the loop of DumpLogSegments.dumpIndex / dumpTimeIndex (stop at the first slot ``i > 0`` whose
relative offset is 0), written here with ``struct`` over every slot, with R-IDX-12's one difference
(a zero slot 0 is no entry, R-IDX-13).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.format.index import DEFAULT_MAX_INDEX_SIZE, OffsetIndex, TimeIndex

LOGDIR = GOLDEN / "kafka" / "logdir"
KIND = {".index": (OffsetIndex, struct.Struct(">ii"), 0), ".timeindex": (TimeIndex, struct.Struct(">qi"), 1)}


def _kafka_dump() -> dict[str, list[tuple[int, int]]]:
    """Kafka's entries of every golden index file, in file order, as (field 0, field 1) of the slot."""
    out: dict[str, list[tuple[int, int]]] = {}
    for line in (GOLDEN / "kafka" / "dump" / "logdir.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["type"] == "offsetIndexEntry":
            out.setdefault(e["file"], []).append((e["offset"], e["position"]))
        elif e["type"] == "timeIndexEntry":
            out.setdefault(e["file"], []).append((e["timestamp"], e["offset"]))
    return out


DUMP = _kafka_dump()
FILES = sorted(p for p in LOGDIR.rglob("*") if p.suffix in KIND)


def _entries(idx: OffsetIndex | TimeIndex) -> list[tuple[int, int]]:
    if isinstance(idx, OffsetIndex):
        return list(zip(idx.offsets.tolist(), idx.positions.tolist(), strict=True))
    return list(zip(idx.timestamps.tolist(), idx.offsets.tolist(), strict=True))


def _read_both(path: Path, data: bytes, base: int) -> list[OffsetIndex | TimeIndex]:
    """The index read from its path and from its bytes."""
    cls = KIND[path.suffix][0]
    return [cls.read(path), cls.read(data=data, base_offset=base)]


def test_every_golden_index_is_covered() -> None:
    assert len(FILES) > 50
    assert all(p.stat().st_size % KIND[p.suffix][1].size == 0 for p in FILES)
    assert sum(1 for p in FILES if p.stat().st_size == 0) >= 3


@pytest.mark.rule("R-IDX-12", "R-IDX-14")
@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(LOGDIR)))
def test_kafka_written_index_preallocated_to_the_default_size(path: Path, tmp_path: Path) -> None:
    """A Kafka-written (trimmed) index followed by the zero slots Kafka preallocates for an active
    segment (segment.index.bytes rounded down to a whole entry) reads as Kafka's dump of it."""
    size = KIND[path.suffix][1].size
    data = path.read_bytes()
    length = DEFAULT_MAX_INDEX_SIZE - DEFAULT_MAX_INDEX_SIZE % size
    padded = data + bytes(length - len(data))
    target = tmp_path / path.name
    target.write_bytes(data)
    with open(target, "r+b") as f:
        f.truncate(length)
    base = int(path.name.split(".")[0])
    for idx in _read_both(target, padded, base):
        assert _entries(idx) == DUMP.get(f"{path.parent.name}/{path.name}", [])
        assert (idx.slots, idx.trailing_bytes) == (length // size, 0)


def _kafka_rule(data: bytes, suffix: str, base: int) -> tuple[list[tuple[int, int]], int, int]:
    """DumpLogSegments' loop over every whole slot of ``data`` (R-IDX-12 for slot 0), the slot count
    and the bytes of a partial last slot."""
    entry, rel_field = KIND[suffix][1], KIND[suffix][2]
    n = len(data) // entry.size
    out: list[tuple[int, int]] = []
    for i in range(n):
        row = entry.unpack_from(data, i * entry.size)
        if (i == 0 and row == (0, 0)) or (i > 0 and row[rel_field] == 0):
            break
        out.append((row[0], row[1] + base) if rel_field else (row[0] + base, row[1]))
    return out, n, len(data) - n * entry.size


def _slots(suffix: str, count: int, first: int = 1) -> bytes:
    """``count`` valid entries (R-IDX-03), relative offsets ``first``, ``first + 3``, ..."""
    entry = KIND[suffix][1]
    if suffix == ".index":
        return b"".join(entry.pack(first + 3 * i, 100 + 4096 * i) for i in range(count))
    return b"".join(entry.pack(1_700_000_000_000 + 7 * i, first + 3 * i) for i in range(count))


def _cases(suffix: str) -> dict[str, bytes]:
    """Index bytes whose used/unused boundary falls where a search or a read could misjudge it."""
    size = KIND[suffix][1].size
    pre = 32768 * size  # a preallocated file of 32768 slots (4 reads, searches past several chunks)
    cases = {
        "empty file": b"",
        "less than a slot": b"\x00\x00\x00\x07\x00",
        "all zeros": bytes(pre),
        "all zeros, 10 MiB": bytes(DEFAULT_MAX_INDEX_SIZE - DEFAULT_MAX_INDEX_SIZE % size),
        "all zeros, partial last slot": bytes(pre + 5),
        "one entry then zeros": _slots(suffix, 1) + bytes(pre),
    }
    # counts around the first search chunk (512 slots after slot 0), the doubled ones, and the
    # first read (64 KiB: 8192 offset slots, 5461 time slots) and the later ones
    for k in (2, 511, 512, 513, 514, 1535, 1536, 1537, 3584, 5461, 5462, 8191, 8192, 8193, 20000, 32767):
        cases[f"{k} entries then zeros"] = _slots(suffix, k) + bytes(pre - k * size)
    for k in (600, 8192, 40000):
        cases[f"{k} entries, no zero slot"] = _slots(suffix, k)
        cases[f"{k} entries, partial last slot"] = _slots(suffix, k) + b"\x01\x02\x03"
    cases["entries, zeros, partial last slot"] = _slots(suffix, 10) + bytes(pre + size - 1)
    # garbage after the zeros: the entries still end at the first zero slot
    for at in (11, 600, 9000, 32000):
        garbage = bytearray(_slots(suffix, 10) + bytes(pre))
        garbage[at * size : (at + 1) * size] = _slots(suffix, 1, first=77777)
        cases[f"entries, zeros, garbage in slot {at}"] = bytes(garbage)
    cases["zeros, then garbage"] = bytes(4000 * size) + _slots(suffix, 5, first=9)
    # entries out of order (not increasing, R-IDX-03) are still entries up to the first zero
    backwards = b"".join(_slots(suffix, 1, first=f) for f in range(900, 0, -1))
    cases["decreasing entries then zeros"] = backwards + bytes(pre)
    # a relative offset of 0 past slot 0 ends the entries even if the rest of the slot is not zero
    ends = bytearray(_slots(suffix, 1000) + bytes(pre))
    field = slice(1000 * size, 1000 * size + 4) if suffix == ".index" else slice(1000 * size + 8, 1000 * size + 12)
    ends[1000 * size : 1001 * size] = _slots(suffix, 1, first=4242)
    ends[field] = bytes(4)
    cases["slot 1000 with a zero relative offset only"] = bytes(ends)
    # slot 0 at the base offset with a non-zero other field is an entry; all-zero slot 0 is none
    zero_rel = bytearray(_slots(suffix, 700, first=0))
    cases["slot 0 at the base offset"] = bytes(zero_rel) + bytes(pre)
    zero_first = bytes(size) + _slots(suffix, 700)
    cases["slot 0 zero, entries after it"] = zero_first + bytes(pre)
    return cases


@pytest.mark.rule("R-IDX-02", "R-IDX-12", "R-IDX-14")
@pytest.mark.parametrize("suffix", sorted(KIND))
def test_used_entries_end_where_kafka_stops(suffix: str, tmp_path: Path) -> None:
    base = 1000
    target = tmp_path / f"{base:020d}{suffix}"
    failures = []
    for name, data in _cases(suffix).items():
        want = _kafka_rule(data, suffix, base)
        target.write_bytes(data)
        for how, idx in zip(("path", "bytes"), _read_both(target, data, base), strict=True):
            got = (_entries(idx), idx.slots, idx.trailing_bytes)
            if got != want:
                failures.append(
                    f"{name} ({how}): {len(got[0])} entries, {got[1:]} != {len(want[0])} entries, {want[1:]}"
                )
    assert not failures, "\n".join(failures)


def test_the_cases_do_place_the_boundary_everywhere() -> None:
    """The made-up cases are what their names say (so the test above can fail)."""
    for suffix in KIND:
        cases = _cases(suffix)
        counts = {name: len(_kafka_rule(data, suffix, 0)[0]) for name, data in cases.items()}
        assert counts["8192 entries then zeros"] == 8192 and counts["40000 entries, no zero slot"] == 40000
        assert counts["entries, zeros, garbage in slot 9000"] == 10 and counts["zeros, then garbage"] == 0
        assert counts["slot 1000 with a zero relative offset only"] == 1000
        assert counts["slot 0 at the base offset"] == 700 and counts["slot 0 zero, entries after it"] == 0
        assert counts["decreasing entries then zeros"] == 900
