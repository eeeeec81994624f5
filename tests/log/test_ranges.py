"""The read-ahead of object storage (kafkalog.log.ranges), on fsspec's in-memory filesystem with
the filesystem's ranged reads counted: a scan of ``memory://`` gives the local scan's rows, fetches
each byte it reads once and nothing else of the ``.log`` files, keeps several requests in flight
within its bounds, and reports a failing request as the file's error. The same over S3 (moto's
server, request by request): tests/dataset/test_scan_s3.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import kafkalog
from helpers import GOLDEN
from kafkalog.dataset.scan import plan_all
from kafkalog.log import ranges
from kafkalog.log.replicas import discover

fsspec = pytest.importorskip("fsspec")

CP760 = GOLDEN / "real" / "cp760-flink-on-prem" / "data"
WEEBEE = GOLDEN / "real" / "cp-latest-weebee" / "kafka" / "data"


class Counted:
    """The ranged reads of the memory filesystem: (path, start, end) of each, and the most at once."""

    def __init__(self, fs: object, delay: float = 0.0) -> None:
        self.calls: list[tuple[str, int | None, int | None]] = []
        self.running = self.most = 0
        self.lock = threading.Lock()
        self.delay = delay
        self.cat_file = fs.cat_file  # type: ignore[attr-defined]

    def __call__(self, path: str, start: int | None = None, end: int | None = None, **kw: object) -> bytes:
        with self.lock:
            self.calls.append((path, start, end))
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(self.delay)
            return self.cat_file(path, start=start, end=end, **kw)
        finally:
            with self.lock:
                self.running -= 1

    def log_bytes(self) -> int:
        return sum(e - s for p, s, e in self.calls if p.endswith(".log") and s is not None and e is not None)


@pytest.fixture
def memfs() -> Iterator[object]:
    fs = fsspec.filesystem("memory")
    fs.put(str(CP760), "/kl/cp760", recursive=True)
    fs.put(str(WEEBEE), "/kl/weebee", recursive=True)
    yield fs
    fs.rm("/kl", recursive=True)


def _needed(url: str) -> int:
    """The ``.log`` bytes a full scan reads: the byte ranges of its plans."""
    return sum((sl.end if sl.end is not None else sl.segment.size) - sl.start for p in plan_all(discover([url])) for sl in p.slices)


@pytest.mark.parametrize("piece", [4096, 1 << 20])
def test_a_scan_of_memory_fetches_each_byte_it_reads_once_and_gives_the_local_rows(memfs, monkeypatch, piece: int) -> None:  # noqa: ANN001
    """Small pieces cut batches in two across requests: the rows are still the local read's."""
    monkeypatch.setattr(ranges, "PIECE_BYTES", piece)
    counted = Counted(memfs)
    monkeypatch.setattr(memfs, "cat_file", counted)
    for name, local in (("cp760", CP760), ("weebee", WEEBEE)):
        counted.calls.clear()
        remote = kafkalog.scan(f"memory://kl/{name}", include_internal=True).read_all()
        assert remote.num_rows > 1000
        assert remote.equals(kafkalog.scan(local, include_internal=True).read_all())
        logs = [c for c in counted.calls if c[0].endswith(".log")]
        if name == "cp760":  # (weebee's .log files are read whole by the data-loss check, below)
            big = [f for f in local.rglob("*.log") if f.stat().st_size > piece]
            assert len(logs) >= len({p for p, _s, _e in logs}) + len(big)  # files larger than a piece: several requests
        # each byte once, nothing else of a .log (the data-loss check's read of a last segment's
        # end included: the scan is given those bytes, not fetched them again)
        assert counted.log_bytes() == _needed(f"memory://kl/{name}")
    assert memfs.find("/kl/cp760") == sorted(str(p).replace(str(CP760), "/kl/cp760") for p in CP760.rglob("*") if p.is_file())  # nothing written


def test_several_requests_are_in_flight_within_the_bounds(memfs, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(ranges, "MAX_REQUESTS", 3)
    monkeypatch.setattr(ranges, "PIECE_BYTES", 64 << 10)
    monkeypatch.setattr(ranges, "BUDGET_BYTES", 160 << 10)
    counted = Counted(memfs, delay=0.02)
    monkeypatch.setattr(memfs, "cat_file", counted)
    held: list[int] = []
    fill = ranges.ReadAhead._fill

    def watched(self: ranges.ReadAhead) -> None:
        fill(self)
        held.append(self._held)
        assert self._count <= 3

    monkeypatch.setattr(ranges.ReadAhead, "_fill", watched)
    rows = sum(b.num_rows for b in kafkalog.scan("memory://kl/cp760"))
    assert rows == kafkalog.scan(CP760).read_all().num_rows
    assert 1 < counted.most <= 3
    assert max(held) <= 160 << 10


def test_pieces_are_fetched_into_the_buffers_of_pieces_read(memfs, monkeypatch) -> None:  # noqa: ANN001
    """Fresh memory costs a page fault per page: the read-ahead fetches each piece into the buffer of
    one already read, so a scan of many pieces allocates a few buffers, and still gives the local rows."""
    monkeypatch.setattr(ranges, "PIECE_BYTES", 4096)
    monkeypatch.setattr(ranges, "BUDGET_BYTES", 32 << 20)
    made: list[int] = []
    sent: list[int] = []
    buffer, send = ranges.ReadAhead._buffer, ranges.ReadAhead._send

    def counted(self: ranges.ReadAhead, size: int) -> bytearray:
        free = len(ranges._free)
        b = buffer(self, size)
        if len(ranges._free) == free:  # none was taken from the free ones
            made.append(len(b))
        return b

    def counted_send(self: ranges.ReadAhead, r: object) -> None:
        sent.append(1)
        send(self, r)  # type: ignore[arg-type]

    monkeypatch.setattr(ranges.ReadAhead, "_buffer", counted)
    monkeypatch.setattr(ranges.ReadAhead, "_send", counted_send)
    assert kafkalog.scan("memory://kl/cp760").read_all().equals(kafkalog.scan(CP760).read_all())
    assert len(sent) > 40 and len(made) <= ranges.MAX_REQUESTS + 1


def test_planning_reads_several_partitions_at_a_time(memfs, monkeypatch) -> None:  # noqa: ANN001
    """The data-loss check's reads of each partition (its last segment's indexes and end) overlap,
    and the plans are the local plans, in the same order."""
    files = discover(["memory://kl/cp760"])
    counted = Counted(memfs, delay=0.02)
    monkeypatch.setattr(memfs, "cat_file", counted)
    plans = plan_all(files)
    assert len({path.rsplit("/", 2)[-2] for path, *_ in counted.calls}) == len(files) > 1 and counted.most > 1
    local = plan_all(discover([str(CP760)]))
    assert [(p.topic, p.partition, p.start, [(sl.start, sl.end) for sl in p.slices]) for p in plans] == [
        (p.topic, p.partition, p.start, [(sl.start, sl.end) for sl in p.slices]) for p in local]


def test_an_end_offset_fetches_only_its_ranges(memfs, monkeypatch) -> None:  # noqa: ANN001
    url = "memory://kl/cp760/_confluent-monitoring-0"
    [p] = plan_all(discover([url]), start_offset=2800, end_offset=2900)
    [sl] = p.slices
    size = (CP760 / "_confluent-monitoring-0" / "00000000000000000000.log").stat().st_size
    end = size if sl.end is None else sl.end
    assert 0 < end - sl.start < size / 10  # the offset index sends the read near its end
    counted = Counted(memfs)
    monkeypatch.setattr(memfs, "cat_file", counted)
    t = kafkalog.scan(url, start_offset=2800, end_offset=2900, columns=["offset"]).read_all()
    local = kafkalog.scan(CP760 / "_confluent-monitoring-0", start_offset=2800, end_offset=2900, columns=["offset"]).read_all()
    assert t.num_rows > 10 and t.equals(local)
    # the data-loss check reads the segment's end, the scan the rest of the slice: each byte once
    got = sorted((s, e) for path, s, e in counted.calls if path.endswith(".log"))
    assert got[0][0] == sl.start and got[-1][1] == end and all(a[1] == b[0] for a, b in zip(got, got[1:], strict=False))


def test_a_failing_request_is_the_files_error(memfs, monkeypatch) -> None:  # noqa: ANN001
    """A library's own error (botocore's, say) in a request made ahead is raised to the reader as
    the file's OSError (what the CLI reports as an unreadable path, exit 3), not lost in a thread."""
    def refused(path: str, start: int | None = None, end: int | None = None, **kw: object) -> bytes:
        if path.endswith(".log"):
            raise RuntimeError("the connection was reset")
        return memfs.__class__.cat_file(memfs, path, start=start, end=end, **kw)

    monkeypatch.setattr(memfs, "cat_file", refused)
    with pytest.raises(OSError, match=r"^memory:///?kl/cp760/[^ ]*\.log: RuntimeError: the connection was reset$"):
        kafkalog.scan("memory://kl/cp760").read_all()


def test_a_piece_is_read_as_it_arrives(memfs, monkeypatch) -> None:  # noqa: ANN001
    """A piece's bytes are read as its fetch says they have arrived (S3's body is received in steps:
    kafkalog.log.s3get), not once the whole piece is in: the reader is given the first half while
    the fetch still holds back the second, and then the rest."""
    from kafkalog.log.source import UrlStorage

    storage = UrlStorage(memfs)
    path = "/kl/cp760/_schemas-0/00000000000000000000.log"
    data = memfs.cat_file(path)
    half = len(data) // 2
    first_read = threading.Event()

    def arriving(path: str, start: int, view: memoryview, progress=None) -> int:  # noqa: ANN001
        view[:half] = data[start : start + half]
        progress(half)
        assert first_read.wait(30), "the reader waited for the whole piece"
        view[half : len(data) - start] = data[start + half :]
        return len(data) - start

    monkeypatch.setattr(storage, "read_range_into", arriving)
    with ranges.ReadAhead([(storage, path, 0, len(data))]) as ahead, ahead.open(storage, path, 0, len(data), len(data)) as f:
        assert f.read(half) == data[:half]
        first_read.set()
        assert f.read() == data[half:]
