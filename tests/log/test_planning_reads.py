"""The quick paths planning takes over many partition dirs, held against the plain readings they stand for.

Planning reads a little of every partition (its listing, a data dir's checkpoints, the last
segment's indexes and ``.log`` end), so those reads have paths of their own for the usual case: a
listing's names parsed once (:func:`kafkalog.log.gaps.segment_file`), a checkpoint as Kafka writes it
read with one pattern, an index of a few entries unpacked without numpy, local files read with the
system calls alone. Each must give what the plain reading gives, for any input.

Expected values: segment file names are Kafka's (LogFileUtils: ``<20-digit offset>.<suffix>``, a
``.swap`` or ``.deleted`` suffix added when a file is being replaced or removed); the checkpoint
and index bytes are made with Kafka's layout (CheckpointFile: version, count, ``topic partition
offset`` lines; OffsetIndex/TimeIndex: big-endian 8- and 12-byte entries).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog.errors import KafkaLogError
from kafkalog.format import checkpoints, index
from kafkalog.format.index import OffsetIndex, TimeIndex, last_offset
from kafkalog.log.gaps import read_local, segment_file
from kafkalog.log.source import Entry, LocalStorage, find_partitions

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("00000000000000000000.log", (0, "log")),
        ("00000000000000000042.index", (42, "index")),
        ("00000000000000000042.timeindex", (42, "timeindex")),
        ("00000000000000000042.txnindex", (42, "txnindex")),
        ("00000000000000000265.snapshot", (265, "snapshot")),
        ("00000000000000000042.log.swap", (42, "log.swap")),
        ("00000000000000000042.log.deleted", (42, "log.deleted")),
        ("00000000000000000042.index.swap", None),  # only a renamed .log stands for its segment
        ("00000000000000000042.log.cleaned", None),
        ("00000000000000000042.snapshot.deleted", None),
        ("0000000000000000042.log", None),  # 19 digits
        ("00000000000000000042-Ax3kLMQ2Rb-mT9nQ8iY5zA.log", None),  # a tiered copy's name
        ("leader-epoch-checkpoint", None),
        ("partition.metadata", None),
        ("00000000000000000042.logx", None),
    ],
)
def test_segment_file_names(name: str, parsed: tuple[int, str] | None) -> None:
    assert segment_file(name) == parsed


def _line_by_line(text: str) -> dict[tuple[str, int], int] | str:
    """The offset checkpoint's entries read a line at a time (the reading the one-pattern path stands for), or the error's message."""
    try:
        return {(t, checkpoints._int(p, None, at, 32)): checkpoints._int(o, None, at)
                for (t, p, o), at in checkpoints._checkpoint_lines(text, None, 3)}
    except KafkaLogError as e:
        return str(e)


def _read(text: str) -> dict[tuple[str, int], int] | str:
    try:
        return checkpoints.read_offset_checkpoint(data=text.encode("utf-8"))
    except KafkaLogError as e:
        return str(e)


_topics = st.one_of(st.text(st.sampled_from("ab-_.7X"), min_size=1, max_size=4), st.text(st.sampled_from("ab7é \t"), max_size=3))
_partitions = st.one_of(st.integers(-3, 300), st.sampled_from([2**31 - 1, 2**31, 10**9 - 1, 10**9, 10**10]))
_offsets = st.one_of(st.integers(-3, 10**6), st.sampled_from([2**63 - 1, 2**63, 10**18 - 1, 10**18, 10**19, 10**20]))
_entries = st.lists(st.tuples(_topics, _partitions, _offsets), max_size=5)


@SETTINGS
@given(_entries, st.sampled_from(["\n", "\n", "\r\n", "\r"]), st.sampled_from([0, 0, 0, -1, 1]), st.booleans(), st.sampled_from(["0", "0", "1", "00"]))
def test_offset_checkpoints_read_as_line_by_line(entries: list, end: str, miscount: int, last_end: bool, version: str) -> None:
    """Whatever the text (well-formed or not), the checkpoint reads as it does a line at a time:
    the same entries, or the same error."""
    lines = [version, str(len(entries) + miscount), *(f"{t} {p} {o}" for t, p, o in entries)]
    text = end.join(lines) + (end if last_end else "")
    assert _read(text) == _line_by_line(text)


@pytest.mark.parametrize(
    "text",
    [
        "0\n1\na 0 9223372036854775807\n",  # Long.MAX_VALUE
        "0\n1\na 0 9223372036854775808\n",  # past it: malformed
        "0\n1\na 0 1000000000000000000\n",  # 19 digits
        "0\n1\na 0 10000000000000000000\n",  # 20 digits
        "0\n1\na 2147483647 5\n",  # Integer.MAX_VALUE
        "0\n1\na 2147483648 5\n",
        "0\n1\na 1000000000 5\n",
        "0\n1\na 10000000000 5\n",
        "0\n2\na 0 5\n",  # fewer entries than declared
        "0\n0\na 0 5\n",  # more
        "0\n1\na 0 5",  # no line end after the last line
        "0\n1\na 0 5\n\n",  # an empty line
        "0\n1\na 0 05\n",
        "00\n1\na 0 5\n",
        "0\r\n1\r\na 0 5\r\n",
        "0\n1\na 0 +5\n",
        "0\n1\na\t0 5\n",
    ],
)
def test_checkpoint_edges_read_as_line_by_line(text: str) -> None:
    assert _read(text) == _line_by_line(text)


def test_a_checkpoint_as_kafka_writes_it_takes_the_one_pattern_path() -> None:
    offsets = {("orders", 0): 42, ("orders", 11): 0, ("_confluent-command", 0): 9_000_000_000_000}
    text = checkpoints.format_offset_checkpoint(offsets).decode()
    assert text == "0\n3\norders 0 42\norders 11 0\n_confluent-command 0 9000000000000\n"  # CheckpointFile's layout
    assert checkpoints._plain_offset_entries(text) == offsets
    assert checkpoints.read_offset_checkpoint(data=text.encode()) == offsets


_SLOTS = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=12)


def _index_bytes(slots: list[tuple[int, int]], time: bool, extra: bytes) -> bytes:
    fmt = ">qi" if time else ">ii"
    return b"".join(struct.pack(fmt, *((b, a) if time else (a, b))) for a, b in slots) + extra


@SETTINGS
@given(_SLOTS, st.booleans(), st.binary(max_size=11), st.integers(0, 2**40))
def test_a_few_entries_read_as_numpy_reads_them(slots: list[tuple[int, int]], time: bool, extra: bytes, base: int) -> None:
    """An index of a few entries (zero-filled tails, trailing bytes) reads the same unpacked in Python
    and through numpy, and its last offset is that reading's last."""
    data = _index_bytes(slots, time, extra)
    cls = TimeIndex if time else OffsetIndex
    small = cls.read(data=data, base_offset=base)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(index, "_SMALL", -1)  # numpy for every size
        big = cls.read(data=data, base_offset=base)
        through_numpy = last_offset(data, base_offset=base, time=time)
    for field in ("offsets", "timestamps" if time else "positions"):
        assert getattr(small, field).tolist() == getattr(big, field).tolist()
        assert getattr(small, field).dtype == getattr(big, field).dtype
    assert (small.slots, small.trailing_bytes, small.base_offset) == (big.slots, big.trailing_bytes, big.base_offset)
    expected = int(big.offsets[-1]) if len(big) else None
    assert last_offset(data, base_offset=base, time=time) == expected == through_numpy


def test_an_index_zero_filled_past_its_entries() -> None:
    """Kafka preallocates an active segment's index and fills it with zeros: the entries end at the
    first slot (after the first) whose relative offset is 0."""
    data = _index_bytes([(3, 100), (7, 900), (0, 0), (0, 0)], False, b"")
    idx = OffsetIndex.read(data=data, base_offset=1000)
    assert idx.offsets.tolist() == [1003, 1007] and idx.positions.tolist() == [100, 900] and idx.slots == 4
    assert last_offset(data, base_offset=1000) == 1007
    assert last_offset(b"\0" * 24, base_offset=5, time=True) is None  # an all-zero first slot: no entry


@pytest.mark.parametrize("size", [0, 1, 12, 65536, 70001])
def test_read_local_reads_the_whole_file(tmp_path: Path, size: int) -> None:
    f = tmp_path / "00000000000000000000.index"
    f.write_bytes(bytes(range(256)) * (size // 256) + bytes(size % 256))
    assert read_local(str(f)) == f.read_bytes()
    assert LocalStorage().read(str(f)) == f.read_bytes()


def test_entries_name_themselves_from_their_path(tmp_path: Path) -> None:
    assert Entry("bucket/data/orders-0/00000000000000000000.log", 5, False).name == "00000000000000000000.log"
    assert Entry("bucket/data/orders-0/", 0, True).name == "orders-0"
    d = tmp_path / "orders-0"
    d.mkdir()
    (d / "00000000000000000000.log").write_bytes(b"")
    (d / "00000000000000000000.index").write_bytes(b"\0" * 8)
    (d / "sub-delete").mkdir()
    listed = sorted(LocalStorage().listdir(str(d)))
    assert listed == [Entry(str(d / "00000000000000000000.index"), None, False), Entry(str(d / "00000000000000000000.log"), 0, False),
                      Entry(str(d / "sub-delete"), 0, True)]  # only a .log is sized
    walked = {directory: sorted(files) for directory, files in LocalStorage().walk(str(tmp_path))}
    assert walked == {str(tmp_path): [], str(d): listed[:2]}  # its files, not the -delete dir's
    (p,) = find_partitions(str(tmp_path))
    assert (p.topic, p.partition, sorted(p.listing)) == ("orders", 0, [("00000000000000000000.index", None), ("00000000000000000000.log", 0)])
