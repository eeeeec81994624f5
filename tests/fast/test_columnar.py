"""The columnar decoder and the Arrow conversion agree with Kafka's dumps and the object decoder,
with the compiled kernels and with the pure-Python ones (the ``kernels`` fixture runs each test on both)."""

from __future__ import annotations

import io
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import GOLDEN, read_jsonl
from kafkalog import Codec, CrcMismatchError, InvalidRecordError, KafkaLogError, LogReader, RecordBatchBuilder
from kafkalog.fast import columnar
from kafkalog.fast.arrow import KAFKA_SCHEMA, KAFKA_VIEW_SCHEMA, to_arrow
from kafkalog.fast.columnar import decode_columns, iter_columns

pytestmark = pytest.mark.usefixtures("kernels")

KAFKA = GOLDEN / "kafka"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _span(c, starts, lens, i):  # noqa: ANN001, ANN202
    n = int(lens[i])
    return None if n < 0 else c.buf[int(starts[i]) : int(starts[i]) + n].tobytes()


def _kafka_records(folder: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for d in read_jsonl(KAFKA / "dump" / f"{folder}.jsonl"):
        if d["type"] == "record":
            out.setdefault(d["file"], []).append(d)
    return out


@pytest.mark.parametrize("folder", ["records", "logdir"])
def test_arrow_rows_equal_kafkas_dump(folder: str) -> None:
    for rel, expected in _kafka_records(folder).items():
        with LogReader(KAFKA / folder / rel) as reader:
            table = pa.Table.from_batches(list(to_arrow(reader.batches(), topic="t", include_headers=True, include_control=True)), schema=KAFKA_SCHEMA)
        rows = table.to_pylist()
        assert len(rows) == len(expected), rel
        for got, exp in zip(rows, expected, strict=True):
            assert got["offset"] == exp["offset"]
            assert got["key"] == (None if exp["key"] is None else bytes.fromhex(exp["key"]))
            assert got["value"] == (None if exp["value"] is None else bytes.fromhex(exp["value"]))
            assert (got["timestamp"] - EPOCH) // timedelta(milliseconds=1) == exp["timestamp"]
            hdrs = [(h["key"], None if h["value"] is None else bytes.fromhex(h["value"])) for h in exp["headers"]]
            assert (got["headers"] or []) == [{"key": k, "value": v} for k, v in hdrs]
            assert got["headers"] is None or len(got["headers"]) > 0


def _random_batches(seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    out = []
    base = 0
    for codec in Codec:
        b = RecordBatchBuilder(base, compression=codec, producer_id=5, producer_epoch=1, base_sequence=2**31 - 3)
        off = base
        for _ in range(rnd.randint(1, 60)):
            key = None if rnd.random() < 0.2 else rnd.randbytes(rnd.choice([0, 3, 70, 300]))
            val = None if rnd.random() < 0.1 else rnd.randbytes(rnd.choice([0, 1, 100, 9000]))
            hdrs = [(rnd.choice(["a", "ü", "x" * 70]), None if rnd.random() < 0.3 else rnd.randbytes(rnd.randint(0, 200))) for _ in range(rnd.choice([0, 0, 1, 3]))]
            b.append(1700000000000 + rnd.randint(-10**6, 10**6), key, val, hdrs, offset=off)
            off += rnd.choice([1, 1, 2])  # gaps, as compaction leaves them
        out.append(b.build())
        base += 10_000
    return out


@pytest.mark.parametrize("seed", range(5))
def test_columns_equal_object_decoder(seed: int) -> None:
    data = b"".join(_random_batches(seed))
    with LogReader(data) as reader:
        batches = list(reader.batches())
    for batch, cols in zip(batches, iter_columns(batches), strict=True):
        recs = batch.records()
        assert cols.offsets.tolist() == [r.offset for r in recs]
        assert cols.timestamps.tolist() == [r.timestamp for r in recs]
        first = 0
        for i, r in enumerate(recs):
            assert _span(cols, cols.key_start, cols.key_len, i) == r.key
            assert _span(cols, cols.val_start, cols.val_len, i) == r.value
            n = int(cols.hdr_count[i])
            h = cols.headers[first : first + n]
            got = [(cols.buf[k : k + kl].tobytes().decode(), None if vl < 0 else cols.buf[v : v + vl].tobytes()) for k, kl, v, vl in h]
            assert tuple(got) == r.headers
            first += n


def test_plain_python_path_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pure-Python kernels give the compiled ones' columns, array for array."""
    data = b"".join(_random_batches(7))

    def columns(impl: columnar.Kernels) -> list[np.ndarray]:
        monkeypatch.setattr(columnar, "kernels", impl)
        with LogReader(data) as r:
            return [np.concatenate([c.offsets, c.timestamps, c.key_start, c.key_len, c.val_start, c.val_len, c.hdr_count, c.headers.ravel()])
                    for c in iter_columns(r.batches())]

    if columnar.COMPILED is None:
        pytest.skip("the compiled core is disabled (KAFKALOG_NO_EXTENSIONS)")
    compiled, plain = columns(columnar.COMPILED), columns(columnar.PURE)
    assert len(compiled) == len(plain) > 0
    for c, p in zip(compiled, plain, strict=True):
        assert np.array_equal(c, p)


def test_malformed_record_area_raises_with_position() -> None:
    b = RecordBatchBuilder(0)
    b.append(1, b"k", b"v")
    data = bytearray(b.build())
    data[61] = 0x7E  # record length varint: 63, past the end of the batch
    with LogReader(bytes(data)) as r:
        batch = next(r.batches())
    with pytest.raises(InvalidRecordError) as e:
        decode_columns(batch)
    assert e.value.position == 61 and e.value.offset == 0


# ------------------------------------------------------------------ chunked decoding (to_arrow(LogReader))
def _table(source: object, **kw: object) -> pa.Table:
    schema = KAFKA_VIEW_SCHEMA if kw.get("views") else KAFKA_SCHEMA
    return pa.Table.from_batches(list(to_arrow(source, topic="t", include_headers=True, **kw)), schema=schema)  # type: ignore[arg-type]


@pytest.mark.parametrize("views", [False, True])
@pytest.mark.parametrize("folder", ["records", "logdir"])
def test_chunked_rows_equal_kafkas_dump(folder: str, views: bool) -> None:
    """Whole files through the chunked path (from a path, a small window forcing re-reads) match
    Kafka's dump, keys and values copied out or as views into each chunk's bytes."""
    for rel, expected in _kafka_records(folder).items():
        with LogReader(KAFKA / folder / rel) as reader:
            rows = _table(reader, max_bytes=256, max_rows=7, views=views, include_control=True).to_pylist()
        assert [r["offset"] for r in rows] == [e["offset"] for e in expected], rel
        for got, exp in zip(rows, expected, strict=True):
            assert got["key"] == (None if exp["key"] is None else bytes.fromhex(exp["key"]))
            assert got["value"] == (None if exp["value"] is None else bytes.fromhex(exp["value"]))
            assert (got["timestamp"] - EPOCH) // timedelta(milliseconds=1) == exp["timestamp"]
            hdrs = [{"key": h["key"], "value": None if h["value"] is None else bytes.fromhex(h["value"])} for h in exp["headers"]]
            assert (got["headers"] or []) == hdrs


@pytest.mark.parametrize("views", [False, True])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("max_rows", "max_bytes"), [(32768, 8 << 20), (50, 4096), (1, 1)])
def test_chunked_equals_per_batch(seed: int, max_rows: int, max_bytes: int, views: bool, tmp_path: Path) -> None:
    """Every codec, nulls, headers, offset gaps, LogAppendTime, long keys: the chunked path gives the
    per-batch path's rows, from bytes, a path and a file object, whatever the chunk budget. With
    views, every batch is read only after the whole log was (a reused buffer would show)."""
    data = b"".join(_random_batches(seed)) + _log_append_batch() + _long_keys_batch()
    with LogReader(data) as r:
        want = _table(r.batches())
    (tmp_path / "x.log").write_bytes(data)
    for source in (LogReader(data), LogReader(tmp_path / "x.log"), LogReader(io.BytesIO(data))):
        with source:
            got = _table(source, max_rows=max_rows, max_bytes=max_bytes, views=views)
        if views:
            assert got.schema.field("value").type == pa.binary_view()
            for b in got.to_batches():
                b.validate(full=True)
        assert got.to_pylist() == want.to_pylist()
        assert all(b.num_rows <= max(max_rows, 100) for b in to_arrow(LogReader(data), max_rows=max_rows, max_bytes=max_bytes))


def _transactions(codec: Codec) -> bytes:
    """Transactions of ``codec`` batches of a producer, each closed by its (uncompressed) marker."""
    from kafkalog.format.records.control import ControlType

    out, offset = [], 0
    for t in range(6):
        for _ in range(3):
            b = RecordBatchBuilder(offset, compression=codec, producer_id=9, producer_epoch=0, is_transactional=True)
            for i in range(4):
                b.append(1000 + offset + i, b"k%d" % (offset + i), b"v" * (offset + i))
            out.append(b.build())
            offset += 4
        m = RecordBatchBuilder(offset, producer_id=9, producer_epoch=0, is_transactional=True, is_control=True)
        m.append_end_txn_marker(ControlType.ABORT if t == 2 else ControlType.COMMIT, 0, 2000 + offset)
        out.append(m.build())
        offset += 1
    return b"".join(out)


@pytest.mark.parametrize("impl", ["compiled", "plain"])
@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.LZ4])
def test_transaction_markers_stay_in_a_compressed_chunk(codec: Codec, impl: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transactional topic's uncompressed markers, one after every few compressed batches, do not
    end the chunk (Python runs once a chunk): one chunk holds them all, and its rows, markers
    included, are the per-batch path's."""
    if impl == "compiled" and columnar.COMPILED is None:
        pytest.skip("the compiled core is disabled (KAFKALOG_NO_EXTENSIONS)")
    monkeypatch.setattr(columnar, "kernels", columnar.COMPILED if impl == "compiled" else columnar.PURE)
    data = _transactions(codec)
    with LogReader(data) as r:
        chunks = list(columnar.iter_chunks(r))
    assert [type(c).__name__ for c in chunks] == ["ChunkColumns"]
    assert len(chunks[0].batches) == 24 and int(np.count_nonzero(chunks[0].batches.attributes & 0x20)) == 6  # control bit
    with LogReader(data) as r:
        want = _table(r.batches(), include_control=True).to_pylist()
    with LogReader(data) as r:
        assert _table(r, include_control=True).to_pylist() == want
    assert len(want) == 6 * 13 and sum(len(row["key"]) == 4 for row in want) == 6  # the markers' keys: version and type


def _long_keys_batch() -> bytes:
    """More key bytes than the chunk walk first makes room for (it grows the key array)."""
    b = RecordBatchBuilder(100_000, compression=Codec.LZ4)
    for i in range(100):
        b.append(1_700_000_000_000 + i, bytes([i]) * 1500, b"v")
    return b.build()


def _log_append_batch() -> bytes:
    from kafkalog.format.records.record import TimestampType

    b = RecordBatchBuilder(90_000, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=1_800_000_000_000)
    for i in range(5):
        b.append(1_700_000_000_000 + i, b"k%d" % i, b"v" * i)
    return b.build()


def test_chunked_mixed_magic_and_torn_tail() -> None:
    """Legacy batches go through the per-batch path in order; a torn tail stops reading and is reported."""
    folder = KAFKA / "records" / "mixed-magic"
    whole = next(p for p in sorted(folder.iterdir()) if p.suffix == ".log").read_bytes()
    with LogReader(whole) as r:
        want = _table(r.batches()).to_pylist()
    assert want
    b = RecordBatchBuilder(10**6)
    b.append(1, b"k", b"v" * 50)
    torn = whole + b.build()[:40]
    with LogReader(torn) as r:
        got = _table(r, max_rows=3).to_pylist()
        assert r.tail is not None and r.tail.position == len(whole) and r.tail.size == 40
        assert r.valid_bytes == len(whole)
    assert got == want


def test_chunked_errors_locate_the_record() -> None:
    """A bad record area raises the per-batch path's InvalidRecordError: file, byte and offset (CRCs
    not checked: the damage here is the decoder's to find)."""
    good = RecordBatchBuilder(0)
    good.append(1, b"k", b"v")
    b = RecordBatchBuilder(1)
    b.append(1, b"k", b"v")
    bad = bytearray(b.build())
    bad[61] = 0x7E  # record length varint: 63, past the end of the batch
    data = good.build() + bytes(bad)
    with LogReader(data, name="x.log") as r, pytest.raises(InvalidRecordError) as e:
        list(to_arrow(r, verify_crc=False))
    assert e.value.position == len(good.build()) + 61 and e.value.offset == 1 and e.value.file == "x.log"
    # compressed: position is the batch, the message says where in the decompressed records
    c = RecordBatchBuilder(5, compression=Codec.ZSTD)
    c.append(1, b"k", b"v")
    raw = c.build()
    from kafkalog.format.compression import compress, decompress

    area = bytearray(decompress(Codec.ZSTD, raw[61:]))
    area[0] = 0x7E
    bad_c = _rebatch(raw, compress(Codec.ZSTD, bytes(area)))
    with LogReader(data[: len(good.build())] + bad_c) as r, pytest.raises(InvalidRecordError) as e:
        list(to_arrow(r, verify_crc=False))
    assert e.value.position == len(good.build()) and e.value.offset == 5 and "decompressed records" in e.value.message
    # a corrupt compressed payload: the codec's DecompressionError, located at the batch
    from kafkalog.errors import DecompressionError

    with LogReader(_rebatch(raw, b"\x28\xb5\x2f\xfd garbage"), name="y.log") as r, pytest.raises(DecompressionError) as e2:
        list(to_arrow(r, verify_crc=False))
    assert e2.value.position == 0 and e2.value.offset == 5 and e2.value.file == "y.log"


def _rebatch(batch: bytes, payload: bytes) -> bytes:
    """``batch`` with its record area replaced (size and CRC fixed up)."""
    import struct

    from kafkalog.format.primitives import crc32c

    out = bytearray(batch[:61] + payload)
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def test_plain_python_chunked_path_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The chunk framing and walk run as plain Python give the compiled rows, with and without views."""
    if columnar.COMPILED is None:
        pytest.skip("the compiled core is disabled (KAFKALOG_NO_EXTENSIONS)")
    data = b"".join(_random_batches(3)) + _log_append_batch()

    def table(impl: columnar.Kernels, views: bool) -> pa.Table:
        monkeypatch.setattr(columnar, "kernels", impl)
        with LogReader(data) as r:
            return pa.Table.from_batches(list(to_arrow(r, include_headers=True, max_rows=13, max_bytes=2000, views=views)))

    plain, ours = table(columnar.PURE, False), table(columnar.COMPILED, False)
    assert plain.num_rows == ours.num_rows > 0
    assert plain.equals(ours)
    # views: the same view words (both walks point into the same buffers)
    plain_views, our_views = table(columnar.PURE, True), table(columnar.COMPILED, True)
    assert plain_views.schema.field("value").type == pa.binary_view()
    assert plain_views.equals(our_views)
    assert plain_views.to_pylist() == ours.to_pylist()


_RECORD = st.tuples(
    st.integers(-(2**40), 2**40),  # timestamp delta from the batch's first
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=300)),
    st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=20))), max_size=3),
    st.integers(1, 3),  # offset step (gaps as compaction leaves them)
)


def test_views_point_into_the_chunk() -> None:
    """With views, keys and values are not copied: each value buffer is the chunk's own bytes
    (the decompressed record areas), with the framing between values, and short spans inline."""
    b = RecordBatchBuilder(0, compression=Codec.LZ4)
    for i in range(50):
        b.append(i, None if i % 5 == 0 else b"k%d" % i, b"v" * (i * 3))
    data = b.build()
    (rb,) = to_arrow(LogReader(data), views=True)
    rb.validate(full=True)
    values = rb.column("value")
    assert values.type == pa.binary_view()
    assert values.to_pylist() == [b"v" * (i * 3) for i in range(50)]
    assert rb.column("key").to_pylist() == [None if i % 5 == 0 else b"k%d" % i for i in range(50)]
    from kafkalog.format.compression import decompress

    area = decompress(Codec.LZ4, data[61:])
    assert values.buffers()[2].to_pybytes() == area  # the decompressed records themselves
    views = np.frombuffer(values.buffers()[1], np.uint32).reshape(-1, 4)
    assert views[1].tolist() == [3, int.from_bytes(b"vvv\0", "little"), 0, 0]  # 3 bytes: inline
    assert views[49, 0] == 147 and views[49, 2] == 0  # a long one: length, prefix, buffer 0, offset
    assert area[views[49, 3] : views[49, 3] + 147] == b"v" * 147


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4])
def test_chunk_buffers_are_reused_only_once_released(codec: Codec, tmp_path: Path) -> None:
    """Buffers a chunk's views point into come back for later chunks once the caller drops its
    batches (memory stays faulted in), never while a batch still refers to them."""
    parts = []
    for i in range(40):
        b = RecordBatchBuilder(i * 50, compression=codec)
        for j in range(50):
            b.append(j, b"key-%012d" % j, bytes([i]) * 200)
        parts.append(b.build())
    (tmp_path / "x.log").write_bytes(b"".join(parts))

    def value_buffers(keep: list) -> list[int]:
        out = []
        with LogReader(tmp_path / "x.log") as r:
            for rb in to_arrow(r, views=True, max_rows=100, max_bytes=20_000):
                out.append(rb.column("value").buffers()[2].address)
                keep.append(rb)
                if len(keep) > 1:
                    keep.pop(0)
        return out

    kept: list = []
    dropped = value_buffers(kept)
    assert len(dropped) >= 20 and len(set(dropped)) <= 5  # reused
    held: list = []
    with LogReader(tmp_path / "x.log") as r:
        for rb in to_arrow(r, views=True, max_rows=100, max_bytes=20_000):
            held.append(rb)
    assert len({rb.column("value").buffers()[2].address for rb in held}) == len(held) >= 20  # all still distinct
    assert [v for rb in held for v in rb.column("value").to_pylist()] == [bytes([i]) * 200 for i in range(40) for _ in range(50)]


def test_views_past_the_offset_limit_are_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk whose bytes span more than view offsets hold gets copied keys and values, still typed as views."""
    from kafkalog.fast import columnar

    data = b"".join(_random_batches(1))
    with LogReader(data) as r:
        want = _table(r.batches()).to_pylist()
    monkeypatch.setattr(columnar, "_VIEW_LIMIT", 0)
    with LogReader(data) as r:
        chunks = list(columnar.iter_chunks(r, views=True))
    assert chunks and all(c.view_data is None for c in chunks if isinstance(c, columnar.ChunkColumns))
    with LogReader(data) as r:
        got = _table(r, views=True)
    assert got.schema.field("key").type == pa.binary_view()
    assert got.to_pylist() == want


@settings(max_examples=60, deadline=None)
@given(
    batches=st.lists(st.tuples(st.sampled_from(list(Codec)), st.lists(_RECORD, min_size=1, max_size=12)), min_size=1, max_size=5),
    max_rows=st.integers(1, 40),
    views=st.booleans(),
)
def test_chunked_equals_plain_reference_decoder(batches: list, max_rows: int, views: bool) -> None:
    """Hypothesis-made batches: the chunked Arrow rows equal the plain reference decoder's records."""
    parts = []
    base = 0
    for codec, recs in batches:
        b = RecordBatchBuilder(base, compression=codec)
        off = base
        for ts, key, value, hdrs, step in recs:
            b.append(1_700_000_000_000 + ts, key, value, hdrs, offset=off)
            off += step
        parts.append(b.build())
        base = off + 5
    data = b"".join(parts)
    with LogReader(data) as r:
        want = [(x.offset, x.timestamp, x.key, x.value, list(x.headers)) for batch in r.batches() for x in batch.records_plain()]
    with LogReader(data) as r:
        rows = _table(r, max_rows=max_rows, max_bytes=max_rows * 40, views=views).to_pylist()
    got = [
        (g["offset"], (g["timestamp"] - EPOCH) // timedelta(milliseconds=1), g["key"], g["value"], [(h["key"], h["value"]) for h in g["headers"] or []])
        for g in rows
    ]
    assert got == want


@settings(max_examples=300, deadline=None)
@given(
    recs=st.lists(_RECORD, min_size=1, max_size=6),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=3),
    cut=st.integers(0, 3),
)
def test_damaged_record_areas_agree_with_plain_reference(recs: list, flips: list, cut: int) -> None:
    """Bytes of an uncompressed record area changed (and the area shortened): the compiled walk
    (its straight-line path and its field-by-field path) accepts exactly what the plain
    reference decoder accepts, with the same records."""
    b = RecordBatchBuilder(0)
    off = 0
    for ts, key, value, hdrs, step in recs:
        b.append(1_700_000_000_000 + ts, key, value, hdrs, offset=off)
        off += step
    data = bytearray(b.build())
    for where, byte in flips:
        data[61 + where % (len(data) - 61)] = byte
    if cut:
        data = data[: max(61, len(data) - cut)]
        data[8:12] = (len(data) - 12).to_bytes(4, "big")
    with LogReader(bytes(data)) as r:
        batch = next(r.batches())
    try:  # header keys are compared by count: damage can leave them invalid UTF-8
        want = [(x.offset, x.timestamp, x.key, x.value, len(x.headers)) for x in batch.records_plain()]
    except KafkaLogError:
        want = None
    try:
        with LogReader(bytes(data)) as r:
            table = _table(r, verify_crc=False)  # the walk's checks, not the CRC's
        counts = pc.fill_null(pc.list_value_length(table["headers"]), 0).to_pylist()
        got = [
            (g["offset"], (g["timestamp"] - EPOCH) // timedelta(milliseconds=1), g["key"], g["value"], c)
            for g, c in zip(table.select(["offset", "timestamp", "key", "value"]).to_pylist(), counts, strict=True)
        ]
    except KafkaLogError:
        got = None
    assert got == want



def _header_fields(batches: list) -> list[tuple]:
    return [(b.position, b.size_in_bytes, b.attributes, b.count, b.base_offset, b.last_offset, b.max_timestamp, b.partition_leader_epoch,
             b.producer_id, b.producer_epoch, b.base_sequence) for b in batches]


def _chunk_fields(pieces: list) -> list[tuple]:
    from kafkalog.fast.columnar import ChunkBatches, ChunkColumns

    out = []
    for p in pieces:
        b = p.batches if isinstance(p, ChunkColumns) else p
        assert isinstance(b, ChunkBatches)
        out.extend(zip(b.positions.tolist(), b.sizes.tolist(), b.attributes.tolist(), b.counts.tolist(), b.base_offsets.tolist(),
                       b.last_offsets.tolist(), b.max_timestamps.tolist(), b.leader_epochs.tolist(), b.producer_ids.tolist(),
                       b.producer_epochs.tolist(), b.base_sequences.tolist(), strict=True))
    return out


@pytest.mark.parametrize("records", [True, False])
@pytest.mark.parametrize("max_rows", [32768, 7, 1])
def test_chunks_carry_each_batchs_header_fields(records: bool, max_rows: int) -> None:
    """The compiled framing reads every batch's header fields (producer id and epoch, base sequence,
    leader epoch, attributes, last offset) as the batch objects do, with and without decoding the records."""
    from kafkalog.fast.columnar import iter_chunks

    batches = []
    for i, codec in enumerate([Codec.NONE, Codec.LZ4, Codec.NONE, Codec.ZSTD, Codec.NONE]):
        b = RecordBatchBuilder(100 * i, compression=codec, producer_id=7 + i, producer_epoch=[0, 32767, -1, 5, 300][i], base_sequence=2**31 - 2 - i,
                               partition_leader_epoch=5 * i - 1, is_transactional=i % 2 == 1)
        for j in range(3 + i):
            b.append(1_700_000_000_000 + j, b"k", b"v" * j, offset=100 * i + 2 * j)
        batches.append(b.build())
    data = b"".join(batches)
    with LogReader(data) as r:
        want = _header_fields(list(r.batches()))
    assert {w[9] for w in want} == {0, 32767, -1, 5, 300} and {w[7] for w in want} >= {-1, 19}  # signed 16 and 32 bits
    with LogReader(data) as r:
        got = [f for piece in iter_chunks(r, max_rows=max_rows, records=records, verify_crc=True) for f in _chunk_fields([piece])]  # valid until the next chunk
    assert got == want


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.LZ4])
def test_verify_crc_yields_the_batches_before_a_corrupt_one_then_raises(codec: Codec) -> None:
    """``verify_crc``: the records before the first batch whose CRC fails, then the CrcMismatchError
    Kafka's check (RecordBatch.ensure_valid) raises at that batch; without it the bytes decode on."""
    from kafkalog.fast.columnar import iter_chunks
    from kafkalog.format.records.v2 import RecordBatch

    batches = []
    for i in range(6):
        b = RecordBatchBuilder(10 * i, compression=codec)
        for j in range(4):
            b.append(1_700_000_000_000 + j, b"key", b"value %d" % j)
        batches.append(b.build())
    bad = 3
    at = sum(len(b) for b in batches[:bad])
    data = bytearray(b"".join(batches))
    data[at + 35] ^= 0x01  # the max timestamp: the batch still frames and decodes, only its CRC fails
    with pytest.raises(CrcMismatchError) as want:
        RecordBatch(bytes(data[at : at + len(batches[bad])]), at).ensure_valid()
    for max_rows in (32768, 5):
        offsets: list[int] = []
        with LogReader(bytes(data)) as r, pytest.raises(CrcMismatchError) as got:
            for c in iter_chunks(r, max_rows=max_rows, verify_crc=True):
                offsets.extend(c.offsets.tolist())
        assert offsets == [10 * i + j for i in range(bad) for j in range(4)]
        assert (got.value.position, got.value.offset, str(got.value)) == (at, 10 * bad, str(want.value))
    with LogReader(bytes(data)) as r:
        assert sum(len(c) for c in iter_chunks(r, verify_crc=False)) == 24
    for max_rows in (32768, 5):  # skipping: every batch but the bad one, which the callback is given once
        seen: list[CrcMismatchError] = []
        with LogReader(bytes(data)) as r:
            offsets = [o for c in iter_chunks(r, max_rows=max_rows, on_corrupt=seen.append) for o in c.offsets.tolist()]
        assert offsets == [10 * i + j for i in range(6) if i != bad for j in range(4)]
        assert [str(e) for e in seen] == [str(want.value)]


@pytest.mark.rule("R-VAL-09")
def test_a_legacy_inner_message_with_a_bad_crc_fails_the_read() -> None:
    """A magic 1 gzip wrapper whose own CRC matches but one of whose inner messages' does not: Kafka's
    consumer checks each record it returns (Record.ensureValid), so to_arrow fails at that inner
    message's offset, skips the whole wrapper with on_corrupt, and decodes it without the check."""
    import gzip

    from kafkalog.format.records.legacy import encode_message

    inner = bytearray(encode_message(0, 1, 0, 5, b"k0", b"v0") + encode_message(1, 1, 0, 6, b"k1", b"v1"))
    inner[-1] ^= 0x01  # the second inner message's value: its CRC no longer matches
    wrapper = encode_message(11, 1, 1, 6, None, gzip.compress(bytes(inner)))  # offset 11: inner offsets 10 and 11
    plain = encode_message(12, 1, 0, 7, b"k2", b"v2")
    with LogReader(wrapper + plain, name="v1.log") as r, pytest.raises(CrcMismatchError) as e:
        list(to_arrow(r))
    assert (e.value.file, e.value.position, e.value.offset) == ("v1.log", 0, 11) and "inner message 1" in e.value.message
    with LogReader(wrapper + plain) as r:
        assert pa.Table.from_batches(list(to_arrow(r, on_corrupt=lambda err: None)))["offset"].to_pylist() == [12]
    with LogReader(wrapper + plain) as r:
        assert pa.Table.from_batches(list(to_arrow(r, verify_crc=False)))["value"].to_pylist() == [b"v0", b"v0", b"v2"]  # v1, flipped


@pytest.mark.rule("R-VAL-09")
def test_to_arrow_checks_crcs_of_a_reader_a_log_and_batches(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """One byte flipped inside a batch of a real orders-0 (figures from Kafka's dump of the intact
    file): to_arrow of the segment's LogReader, of the partition's Log and of its batch objects
    fails naming the file, position and offset; on_corrupt="skip" gives every other record with one
    warning; verify_crc=False gives the corrupted value."""
    from corrupt_copy import corrupt_copy
    from kafkalog.log.unified import Log

    c = corrupt_copy(tmp_path)
    for source in ("reader", "log", "batches"):
        with LogReader(c.log) as r, Log.open(c.data / "orders-0") as log:
            src = {"reader": r, "log": log, "batches": r.batches()}[source]
            with pytest.raises(CrcMismatchError) as e:
                list(to_arrow(src, columns=["offset"]))  # type: ignore[arg-type]
            assert (e.value.file, e.value.position, e.value.offset) == (str(c.log), c.position, c.base_offset), source
    with LogReader(c.log) as r, caplog.at_level("WARNING"):
        got = pa.Table.from_batches(list(to_arrow(r, columns=["offset"], on_corrupt="skip")))
    assert got.num_rows == c.rows_when_skipped == 17212 - c.records
    assert [m for m in caplog.messages if f"position {c.position}, offset {c.base_offset}" in m] == caplog.messages and len(caplog.messages) == 1
    with LogReader(c.log, start=c.position, end=c.position + 1000) as r:
        rows = pa.Table.from_batches(list(to_arrow(r, columns=["offset", "value"], verify_crc=False))).to_pylist()
    assert {"offset": c.offset, "value": c.flipped} in rows
