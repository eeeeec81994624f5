"""The compiled object path (kafkalog.objects) against the plain decoder ``records_plain``:
same records, same errors, compiled (numba) and plain, and a pickle stream that can only build data."""

from __future__ import annotations

import os
import pickle
import pickletools
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kafkalog import Codec, KafkaLogError, LogReader, Record, RecordBatch, RecordBatchBuilder, TimestampType, objects
from kafkalog.columnar import ACCELERATED

#: Every opcode objects._emit may write; nothing that imports, calls or sets attributes.
ALLOWED_OPCODES = {
    "PROTO", "EMPTY_LIST", "MARK", "APPENDS", "STOP", "BININT1", "BININT", "LONG1", "SHORT_BINBYTES",
    "BINBYTES", "NONE", "EMPTY_TUPLE", "TUPLE", "TUPLE2", "SHORT_BINUNICODE", "BINUNICODE", "BINPUT",
    "BINGET", "POP",
}
I64_MAX = 2**63 - 1


def _batch(rnd: random.Random, codec: Codec, *, ascii_headers: bool, lat: bool = False) -> RecordBatch:
    base = rnd.choice([0, 5, 2**31 + 7, I64_MAX - 10_000])
    seq = rnd.choice([-1, 0, 2**31 - 3])
    b = RecordBatchBuilder(
        base,
        compression=codec,
        producer_id=-1 if seq < 0 else 5,
        producer_epoch=-1 if seq < 0 else 1,
        base_sequence=seq,
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
        log_append_time=1_700_000_999_999 if lat else None,
    )
    off = base
    ts0 = rnd.choice([1_700_000_000_000, -5, 0, 2**62])
    keys = ["a", "", "x" * 300] + ([] if ascii_headers else ["ü", "\u20ac" * 90])
    for _ in range(rnd.randint(1, 40)):
        key = None if rnd.random() < 0.2 else rnd.randbytes(rnd.choice([0, 3, 70, 255, 256, 300]))
        val = None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([0, 1, 100, 9000]))
        hdrs = [
            (rnd.choice(keys), None if rnd.random() < 0.3 else rnd.randbytes(rnd.choice([0, 5, 300])))
            for _ in range(rnd.choice([0, 0, 1, 3]))
        ]
        ts = ts0 + rnd.choice([0, 0, 1, -1, 10**6, -(10**6)])
        b.append(ts, key, val, hdrs, offset=off, attributes=rnd.choice([0, 0, 0, 7]))
        off += rnd.choice([1, 1, 2, 1000])
        if off > I64_MAX - 1:
            break
    return RecordBatch(b.build())


def _batches(seed: int, **kw: bool) -> list[RecordBatch]:
    rnd = random.Random(seed)
    return [_batch(rnd, codec, **kw) for codec in Codec for _ in range(3)]


def _stream(batch: RecordBatch) -> bytes:
    raw = batch.records_buffer()
    out = np.empty(7 * len(raw) + 80 * batch.count + 64, np.uint8)
    lat = bool(batch.attributes & 0x08)
    status, end = objects._emit(
        np.frombuffer(raw, np.uint8), batch.count, batch.base_offset, batch.base_timestamp, batch.max_timestamp,
        lat, batch.base_sequence, out,
    )
    assert status == objects._OK
    return out[:end].tobytes()


@pytest.mark.skipif(not ACCELERATED, reason="numba is not installed: the object path is records_plain itself")
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lat", [False, True])
def test_records_equal_plain_decoder(seed: int, lat: bool) -> None:
    for batch in _batches(seed, ascii_headers=seed % 2 == 0, lat=lat):
        want = batch.records_plain()
        assert objects.records(batch) == want
        assert list(objects.iter_records(batch)) == want
        assert batch.records() == want and list(batch) == want


@pytest.mark.skipif(not ACCELERATED, reason="numba is not installed")
def test_fast_path_taken_for_ascii_headers_and_not_otherwise() -> None:
    """The equality tests above must exercise the stream, not only the fallback."""
    ascii_batches = _batches(1, ascii_headers=True)
    assert all(objects._fields(b) is not None for b in ascii_batches)
    b = RecordBatchBuilder(0)
    b.append(1, b"k", b"v", [("ü", b"x")])
    assert objects._fields(RecordBatch(b.build())) is None  # non-ASCII header key: the plain decoder


@pytest.mark.skipif(not ACCELERATED, reason="numba is not installed")
def test_stream_holds_only_data_opcodes() -> None:
    for batch in _batches(3, ascii_headers=True, lat=True) + _batches(4, ascii_headers=True):
        ops = {op.name for op, _arg, _pos in pickletools.genops(_stream(batch))}
        assert ops <= ALLOWED_OPCODES, ops - ALLOWED_OPCODES


@pytest.mark.skipif(not ACCELERATED, reason="numba is not installed")
@pytest.mark.parametrize("seed", range(4))
def test_malformed_record_areas_same_outcome(seed: int) -> None:
    """Flip, drop or add bytes in the record area: the object path returns what the plain decoder
    returns, or raises the same error at the same position."""
    rnd = random.Random(seed)
    base = _batch(rnd, Codec.NONE, ascii_headers=True).data
    for _ in range(300):
        data = bytearray(base)
        pos = rnd.randrange(61, len(data))
        how = rnd.random()
        if how < 0.6:
            data[pos] = rnd.randrange(256)
        elif how < 0.8:
            del data[pos]
        else:
            data[pos:pos] = bytes([rnd.randrange(256)])
        batch = RecordBatch(bytes(data))
        try:
            want: object = batch.records_plain()
        except KafkaLogError as e:
            want = (type(e), str(e), e.position, e.offset)
        try:
            got: object = objects.records(batch)
        except KafkaLogError as e:
            got = (type(e), str(e), e.position, e.offset)
        assert got == want


@pytest.mark.skipif(not ACCELERATED, reason="numba is not installed")
def test_plain_python_emitter_writes_the_same_stream(tmp_path: Path) -> None:
    """The emitter's source run without numba (KAFKALOG_NO_NUMBA=1) writes the same bytes."""
    batches = _batches(5, ascii_headers=True) + _batches(6, ascii_headers=True, lat=True)
    log = tmp_path / "x.log"
    log.write_bytes(b"".join(b.data for b in batches))
    code = (
        "import sys, pickle, warnings; warnings.simplefilter('ignore');"
        "from kafkalog import LogReader; from kafkalog import objects; from kafkalog.columnar import ACCELERATED;"
        "assert not ACCELERATED;"
        f"r = LogReader({str(log)!r});"
        "out = [objects._fields(b) for b in r.batches()];"
        "assert all(f is not None for f in out);"
        "open(sys.argv[1], 'wb').write(pickle.dumps(out))"
    )
    env = dict(os.environ, KAFKALOG_NO_NUMBA="1")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "plain.pickle")], check=True, env=env)
    plain = pickle.loads((tmp_path / "plain.pickle").read_bytes())
    with LogReader(log) as r:
        compiled = [objects._fields(b) for b in r.batches()]
    assert plain == compiled
    assert [b.records_plain() for b in batches] == [
        [Record(*f[i : i + objects.FIELDS]) for i in range(0, len(f), objects.FIELDS)] for f in plain
    ]
