"""The compiled kernels (kafkalog.fast._columnar) against their pure-Python twins in
kafkalog.fast.columnar on the same inputs, malformed ones above all: the same columns, and the same
exception (class, message, file, position, offset) at the same point; and the compiled CRC-32C
against the crc32c package."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog import Codec, KafkaLogError, LogReader, RecordBatchBuilder
from kafkalog.fast import columnar
from kafkalog.fast.arrow import to_arrow
from kafkalog.fast.columnar import decode_columns, iter_chunks

pytestmark = pytest.mark.skipif(columnar.COMPILED is None, reason="the compiled core is disabled (KAFKALOG_NO_EXTENSIONS)")


@pytest.fixture
def use(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201 - returns a setter
    def set_kernels(impl: columnar.Kernels) -> None:
        monkeypatch.setattr(columnar, "kernels", impl)

    return set_kernels


def _batches(rnd: random.Random) -> bytes:
    out, base = [], 0
    for codec in (Codec.NONE, Codec.NONE, Codec.LZ4, Codec.ZSTD, Codec.GZIP):
        b = RecordBatchBuilder(base, compression=codec)
        for _ in range(rnd.randint(1, 12)):
            key = None if rnd.random() < 0.2 else rnd.randbytes(rnd.choice([0, 3, 13, 200]))
            value = None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([0, 1, 12, 13, 150]))
            headers = [("h", None if rnd.random() < 0.3 else rnd.randbytes(rnd.randint(0, 20))) for _ in range(rnd.choice([0, 0, 2]))]
            b.append(1_700_000_000_000 + rnd.randint(-1000, 1000), key, value, headers, offset=base)
            base += rnd.choice([1, 2])
        out.append(b.build())
    return b"".join(out)


def _outcome(call) -> object:  # noqa: ANN001 - a function of no arguments
    """What ``call`` returned, or the exception it raised, as comparable values."""
    try:
        return ("ok", call())
    except KafkaLogError as e:
        return ("error", type(e).__name__, str(e), e.file, e.position, e.offset)


def _columns(data: bytes) -> list[tuple]:
    with LogReader(data) as r:
        return [(c.offsets.tolist(), c.timestamps.tolist(), c.key_start.tolist(), c.key_len.tolist(), c.val_start.tolist(), c.val_len.tolist(),
                 c.hdr_count.tolist(), c.headers.tolist(), None if c.rec_start is None else c.rec_start.tolist(),
                 None if c.attrs is None else c.attrs.tolist()) for b in r.batches() if hasattr(b, "records_buffer")
                for c in [decode_columns(b)]]


def _chunks(data: bytes, views: bool, verify_crc: bool, max_rows: int) -> list[tuple]:
    out = []
    with LogReader(data) as r:
        for c in iter_chunks(r, max_rows=max_rows, max_bytes=300, views=views, verify_crc=verify_crc):
            row = (type(c).__name__, c.offsets.tolist(), c.timestamps.tolist(), c.key_len.tolist(), c.val_len.tolist(), c.headers.tolist())
            if hasattr(c, "key_data"):
                row += (c.key_offsets.tolist(), c.key_data.tobytes(), c.value_offsets.tolist(), c.value_data.tobytes())
            if getattr(c, "key_views", None) is not None:
                row += (c.key_views.tolist(), c.value_views.tolist())
            out.append(row)
    return out


def _both(use, fn) -> tuple[object, object]:  # noqa: ANN001
    use(columnar.COMPILED)
    compiled = _outcome(fn)
    use(columnar.PURE)
    return compiled, _outcome(fn)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), flips=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.one_of(st.none(), st.floats(0, 1)))
def test_mutated_logs_decode_alike(use, seed: int, flips: list[tuple[float, int]], cut: float | None) -> None:  # noqa: ANN001
    """Bytes changed or cut anywhere (lengths, varints, counts, headers, CRCs): per-batch columns,
    chunks (copied and views, CRC checked or not) and Arrow tables are the same on both paths, or
    both raise the same error at the same place."""
    data = bytearray(_batches(random.Random(seed)))
    for where, value in flips:
        data[int(where * len(data))] = value
    if cut is not None:
        del data[int(cut * len(data)) :]
    data = bytes(data)
    compiled, plain = _both(use, lambda: _columns(data))
    assert compiled == plain
    for views, verify_crc, max_rows in ((False, False, 7), (True, True, 32768), (False, True, 3)):
        compiled, plain = _both(use, lambda views=views, verify_crc=verify_crc, max_rows=max_rows: _chunks(data, views, verify_crc, max_rows))
        assert compiled == plain, (views, verify_crc)


@pytest.mark.parametrize("seed", range(3))
def test_arrow_tables_alike(use, seed: int) -> None:  # noqa: ANN001
    data = _batches(random.Random(seed))

    def table() -> list[dict]:
        with LogReader(data) as r:
            return [b.to_pylist() for b in to_arrow(r, include_headers=True, max_rows=5)]

    compiled, plain = _both(use, table)
    assert compiled == plain and compiled[0] == "ok"


@pytest.mark.parametrize("hardware", [True, False], ids=["instruction", "table"])
def test_crc32c_matches_the_crc32c_package(hardware: bool) -> None:
    """The compiled core's one CRC-32C (R-PRIM-07; the framing's, cimported from ``_native``), with
    the CPU's instruction and with the tables, against the crc32c package (Kafka's check value for
    "123456789" is 0xe3069283, SPEC's table); and the framing finds a batch whose CRC it breaks."""
    import crc32c

    from kafkalog.fast import _columnar, _native

    was = _native._hardware_crc(hardware)
    try:
        assert _native.crc32c_of(b"123456789") == 0xE3069283
        rnd = random.Random(5)
        for n in [*range(0, 70), 1000, 4096 + 5, 65536 + 7]:
            data = rnd.randbytes(n + 3)
            assert _native.crc32c_of(data[3:]) == crc32c.crc32c(data[3:]), n
            assert _native.crc32c_of(memoryview(data)[3:]) == crc32c.crc32c(data[3:]), n  # unaligned
            assert _native.crc32c(data, 3, n) == crc32c.crc32c(data[3:]), n
        assert _native.crc32c_of(np.frombuffer(data, np.uint8)) == crc32c.crc32c(data)
        first, second = RecordBatchBuilder(0), RecordBatchBuilder(3)
        for i in range(3):
            first.append(1_700_000_000_000, None, b"v%d" % i, offset=i)
        for i in range(2):
            second.append(1_700_000_000_000, None, b"w%d" % i, offset=3 + i)
        log = bytearray(first.build() + second.build())
        meta = np.zeros((8, 12), np.int64)
        buf = np.frombuffer(bytes(log), np.uint8)
        assert _columnar._frame_chunk(buf, 0, len(buf), False, 1 << 20, 1 << 20, meta, True)[2] == 2
        log[-1] ^= 1  # the second batch's last byte: its CRC no longer matches
        buf = np.frombuffer(bytes(log), np.uint8)
        assert _columnar._frame_chunk(buf, 0, len(buf), False, 1 << 20, 1 << 20, meta, True)[2] == 1
    finally:
        _native._hardware_crc(was)


def test_kernels_refuse_arrays_they_cannot_hold() -> None:
    """Wrong shapes or types are a ValueError, never a read outside an array."""
    from kafkalog.fast import _columnar

    buf = np.zeros(10, np.uint8)
    cols = np.zeros((9, 2), np.int64)
    with pytest.raises(ValueError):
        _columnar._walk(buf, 3, cols, np.zeros((0, 4), np.int64), np.zeros((2, 0), np.uint64))  # more records than columns
    with pytest.raises(ValueError):
        _columnar._walk(buf, 1, np.zeros((9, 2), np.int32), np.zeros((0, 4), np.int64), np.zeros((2, 0), np.uint64))
    with pytest.raises(ValueError):
        _columnar._frame_chunk(buf, 0, 11, False, 100, 100, np.zeros((4, 12), np.int64), False)  # end past the buffer
    with pytest.raises(IndexError):
        _columnar.gather(buf, np.array([8], np.int64), np.array([5], np.int64), np.zeros(2, np.int64), np.zeros(10, np.uint8), 0)
