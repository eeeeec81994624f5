"""The object path (kafkalog.fast.objects) against the plain decoder ``records_plain``: same records,
same errors, on both paths (the C walker ``kafkalog.fast._objects``, ids ``c-extension``, and the
plain decoder alone, ``pure-python``), records made one at a time by iteration, and no reference
left over or missing."""

from __future__ import annotations

import gc
import pickle
import random
import struct
import sys
import tracemalloc
from collections.abc import Iterator

import crc32c
import pytest

from kafkalog import Codec, KafkaLogError, RecordBatch, RecordBatchBuilder, TimestampType, fast
from kafkalog.fast import objects

I64_MAX = 2**63 - 1
#: Records per batch in the long-batch tests (iteration used to make records 128 at a time: the edges stay covered).
GROUP = 128

compiled_only = pytest.mark.skipif(not objects.COMPILED, reason="the C walker is not built or is off (KAFKALOG_NO_EXTENSIONS)")


@pytest.fixture(params=["c-extension", "pure-python"])
def impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run a test on both paths: the C walker (which must be built unless KAFKALOG_NO_EXTENSIONS
    turns it off) and the plain decoder alone."""
    if request.param == "c-extension":
        if not objects.COMPILED:
            if fast.DISABLED:
                pytest.skip("KAFKALOG_NO_EXTENSIONS is set")
            pytest.fail("kafkalog.fast._objects is not built (pip install -e . builds it)")
    else:
        monkeypatch.setattr(objects, "COMPILED", False)
    yield request.param


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


def _regular_batches() -> list[RecordBatch]:
    """Batches of what producers write: consecutive offsets, no headers, zero attributes (with
    and without a producer, CreateTime and LogAppendTime, every codec)."""
    out = []
    for codec in Codec:
        for seq in (-1, 0, 2**31 - 3):
            for lat in (False, True):
                b = RecordBatchBuilder(
                    7, compression=codec, producer_id=-1 if seq < 0 else 5, producer_epoch=-1 if seq < 0 else 1,
                    base_sequence=seq, timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
                    log_append_time=1_700_000_999_999 if lat else None,
                )
                for i in range(50):
                    b.append(1_700_000_000_000 + i // 7, None if i % 9 == 0 else b"k%d" % i, None if i % 11 == 0 else b"v" * i)
                out.append(RecordBatch(b.build()))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lat", [False, True])
def test_records_equal_plain_decoder(seed: int, lat: bool, impl: str) -> None:
    for batch in _batches(seed, ascii_headers=seed % 2 == 0, lat=lat):
        want = batch.records_plain()
        assert objects.records(batch) == want
        assert list(objects.iter_records(batch)) == want
        assert batch.records() == want and list(batch) == want


def _walker_ok(batch: RecordBatch) -> bool:
    """Whether the walker made every record of ``batch`` itself (no hand-over to the plain decoder)."""
    area, start = objects._area(batch)
    _out, pos = objects._walk(batch, area, start, batch.count)
    return pos == len(area)


@compiled_only
def test_walker_taken_for_ascii_headers_and_not_otherwise() -> None:
    """The equality tests above must exercise the walker, not only the fallback."""
    for batch in _batches(1, ascii_headers=True) + _regular_batches():
        assert _walker_ok(batch), batch
    b = RecordBatchBuilder(0)
    b.append(1, b"k", b"v", [("\u00fc", b"x")])
    batch = RecordBatch(b.build())
    assert _walker_ok(batch)  # well-formed UTF-8: decoded in C as Java decodes it
    assert objects.records(batch)[0].headers == (("\u00fc", b"x"),)
    data = bytearray(batch.data)
    at = data.index("\u00fc".encode())
    data[at : at + 2] = b"\xed\xa0"  # a UTF-16 surrogate's encoding: Java's replacement, by the plain decoder (R-REC-09)
    data[17:21] = crc32c.crc32c(bytes(data[21:])).to_bytes(4, "big")
    bad_key = RecordBatch(bytes(data))
    assert not _walker_ok(bad_key)
    assert objects.records(bad_key) == bad_key.records_plain() and bad_key.records_plain()[0].headers[0][0] == "\ufffd"


def _long_batch(n: int, *, lat: bool = False, seq: int = -1, codec: Codec = Codec.NONE) -> RecordBatch:
    b = RecordBatchBuilder(
        1000, compression=codec, producer_id=-1 if seq < 0 else 5, producer_epoch=-1 if seq < 0 else 1, base_sequence=seq,
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
        log_append_time=1_700_000_999_999 if lat else None,
    )
    for i in range(n):
        b.append(1_700_000_000_000 + i // 3, b"key-%d" % i, b"v" * (i % 300), [("h", b"%d" % i)] if i % 5 == 0 else [])
    return RecordBatch(b.build())


def test_iteration_joins_up_to_the_plain_records(impl: str) -> None:
    """Iteration makes one record at a time; shared timestamps, sequences wrapping past
    Int32.MAX_VALUE and LogAppendTime come out as the plain decoder's."""
    for n in (1, GROUP - 1, GROUP, GROUP + 1, 3 * GROUP + 7):
        for batch in (_long_batch(n), _long_batch(n, lat=True, seq=2**31 - 200, codec=Codec.ZSTD)):
            want = batch.records_plain()
            assert list(objects.iter_records(batch)) == want and list(batch) == want
            assert objects.records(batch) == want


@compiled_only
def test_iteration_raises_where_the_bad_record_is() -> None:
    """As Kafka's record iterator does, iteration yields the records before a malformed one, then
    raises the plain decoder's error; ``records()`` raises it before any record. The bad record
    sits inside a group (not at its start) and, in a second case, in a batch of one group."""
    batch = _long_batch(3 * GROUP)
    plain = batch.records_plain()
    bad_index = 2 * GROUP + 5
    at = sum(r.size_in_bytes for r in plain[:bad_index])  # the bad record's first byte in the record area
    data = bytearray(batch.data)
    data[61 + at] = 0x7F  # its length varint now claims 63 bytes: the records no longer line up
    bad = RecordBatch(bytes(data))
    with pytest.raises(KafkaLogError) as plain_error:
        bad.records_plain()
    with pytest.raises(KafkaLogError) as list_error:
        objects.records(bad)
    assert (type(list_error.value), str(list_error.value)) == (type(plain_error.value), str(plain_error.value))
    got = []
    with pytest.raises(KafkaLogError) as iter_error:
        for r in bad:
            got.append(r)
    assert (type(iter_error.value), str(iter_error.value)) == (type(plain_error.value), str(plain_error.value))
    assert got == plain[:bad_index]  # every record before the bad one, as Kafka's iterator returns them
    small = _long_batch(GROUP - 8)
    plain = small.records_plain()
    at = sum(r.size_in_bytes for r in plain[:100])
    data = bytearray(small.data)
    data[61 + at] = 0x7F
    got = []
    with pytest.raises(KafkaLogError):
        for r in RecordBatch(bytes(data)):
            got.append(r)
    assert got == plain[:100]


@compiled_only
def test_references_are_counted_right() -> None:
    """The walker takes one reference per slot it fills: no object outlives its records, none is
    freed while a record holds it (the shared timestamp of a LogAppendTime batch included)."""
    batch = _long_batch(300, lat=True, seq=4)
    ts = batch.max_timestamp
    before = sys.getrefcount(ts)
    recs = objects.records(batch)
    assert all(r.timestamp is ts for r in recs)
    assert sys.getrefcount(ts) == before + len(recs)
    r = recs[7]
    assert sys.getrefcount(r.key) == sys.getrefcount(batch.records_plain()[7].key)  # held by its record alone
    create = r.create_timestamp
    holders = sum(1 for x in recs if x.create_timestamp is create)
    assert holders > 1 and sys.getrefcount(create) == holders + 2  # each holder, ``create``, the argument
    del recs, r, create
    gc.collect()
    assert sys.getrefcount(ts) == before
    for batch in (_long_batch(500), _long_batch(500, lat=True, seq=9, codec=Codec.LZ4)):
        list(batch)
        tracemalloc.start()
        try:
            start = tracemalloc.get_traced_memory()[0]
            for _ in range(40):
                for _r in batch:
                    pass
                objects.records(batch)
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - start
        finally:
            tracemalloc.stop()
        assert grown < 64 * 1024, grown  # a leaked key or value per record would be megabytes


@compiled_only
def test_bytes_left_after_the_last_record_raise_after_the_records() -> None:
    """Bytes after the last record: iteration yields every record, then raises the plain decoder's
    error; ``records()`` raises it at once."""
    batch = _long_batch(5)
    data = bytearray(batch.data + b"\x00\x00")
    struct.pack_into(">i", data, 8, len(data) - 12)
    bad = RecordBatch(bytes(data))
    with pytest.raises(KafkaLogError) as plain_error:
        bad.records_plain()
    with pytest.raises(KafkaLogError) as list_error:
        objects.records(bad)
    got = []
    with pytest.raises(KafkaLogError) as iter_error:
        for r in bad:
            got.append(r)
    assert got == batch.records_plain()
    want = (type(plain_error.value), str(plain_error.value))
    assert (type(list_error.value), str(list_error.value)) == want == (type(iter_error.value), str(iter_error.value))


@compiled_only
def test_walker_reads_any_buffer_and_refuses_what_is_not_a_record_type() -> None:
    """The walker reads the record area through the buffer protocol (bytes, memoryview, bytearray
    alike) and builds only tuple subclasses."""
    from kafkalog.fast import _objects
    from kafkalog.format.records.record import Record

    batch = _long_batch(40, lat=True, seq=3)
    want = batch.records_plain()
    lat = batch.max_timestamp
    for area in (batch.data, memoryview(batch.data), bytearray(batch.data)):
        out, pos = _objects.walk(area, 61, batch.count, batch.base_offset, batch.base_timestamp, lat, batch.base_sequence, Record)
        assert (out, pos) == (want, len(batch.data))
        assert list(_objects.Records(area, 61, batch.count, batch.base_offset, batch.base_timestamp, lat,
                                     batch.base_sequence, Record, batch.records_plain)) == want
    with pytest.raises(TypeError):
        _objects.walk(batch.data, 61, 1, 0, 0, None, -1, dict)
    assert _objects.walk(batch.data, len(batch.data) + 1, 1, 0, 0, None, -1, Record) == ([], -1)
    assert _objects.walk(batch.data, 61, -1, 0, 0, None, -1, Record) == ([], -1)


def _one_record_batch(record_body: bytes, base_offset: int = 100, base_timestamp: int = 5, base_sequence: int = -1) -> RecordBatch:
    """A v2 batch holding one record with the given body (attributes byte first)."""
    body = bytearray()
    u = len(record_body) << 1
    while u >= 0x80:
        body.append((u & 0x7F) | 0x80)
        u >>= 7
    body.append(u)
    body += record_body
    data = bytearray(struct.pack(">qiibIhiqqqhii", base_offset, 0, -1, 2, 0, 0, 0, base_timestamp, base_timestamp,
                                  -1 if base_sequence < 0 else 7, -1 if base_sequence < 0 else 0, base_sequence, 1))
    data += body
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return RecordBatch(bytes(data))


def test_varints_read_as_kafka_reads_them(impl: str) -> None:
    """Kafka's ByteUtils (commit 1eb7644): readUnsignedVarlong ORs the 10th byte shifted left by 63
    into a Java long, so only that byte's low bit survives; readUnsignedVarint ORs the 5th byte
    shifted left by 28 into a Java int, so only its low 4 bits survive. Zig-zag decoding follows."""
    # timestamp delta: nine 0xff bytes then 0x7f. Bits 0..62 come from the nine bytes and bit 63 from
    # the 10th byte's low bit: all 64 bits set, i.e. zig-zag -2^63 (Long.MIN_VALUE); 5 + that wraps.
    for tenth in (0x7F, 0x01):
        batch = _one_record_batch(b"\x00" + b"\xff" * 9 + bytes([tenth]) + b"\x00\x02k\x02v\x00")
        (r,) = objects.records(batch)
        assert (r.timestamp, r.key, r.value, r.offset) == (5 - 2**63, b"k", b"v", 100)
    # offset delta: 80 80 80 80 12: the 5th byte 0x12 adds 0x2 << 28 (0x10 << 28 overflows the int):
    # unsigned 0x20000000, zig-zag 0x10000000 = 268435456.
    batch = _one_record_batch(b"\x00\x00" + b"\x80\x80\x80\x80\x12" + b"\x02k\x02v\x00")
    (r,) = objects.records(batch)
    assert (r.offset, r.key, r.value) == (100 + 268435456, b"k", b"v")
    # an 11th varlong byte, a 6th varint byte: too long, the plain decoder's error
    for body in (b"\x00" + b"\xff" * 10 + b"\x01\x00\x02k\x02v\x00", b"\x00\x00" + b"\x80" * 5 + b"\x01\x02k\x02v\x00"):
        batch = _one_record_batch(body)
        with pytest.raises(KafkaLogError):
            batch.records_plain()
        with pytest.raises(KafkaLogError):
            objects.records(batch)


@pytest.mark.rule("R-PRIM-04")
def test_every_decoder_reads_over_long_varints_as_kafka() -> None:
    """The plain decoder, the object walker and the columnar walker (verify's too) agree with Kafka's
    ByteUtils on encodings that carry bits past 32/64 (values worked out in the test above)."""
    from kafkalog.fast.columnar import decode_columns

    cases = [
        (b"\x00" + b"\xff" * 9 + b"\x7f" + b"\x00\x02k\x02v\x00", 100, 5 - 2**63),  # timestamp delta
        (b"\x00\x00" + b"\x80\x80\x80\x80\x12" + b"\x02k\x02v\x00", 100 + 268435456, 5),  # offset delta
    ]
    for body, offset, timestamp in cases:
        batch = _one_record_batch(body)
        (plain,) = batch.records_plain()
        assert (plain.offset, plain.timestamp, plain.key, plain.value) == (offset, timestamp, b"k", b"v")
        assert list(objects.records(batch)) == [plain]
        cols = decode_columns(batch)
        assert (cols.offsets.tolist(), cols.timestamps.tolist()) == ([offset], [timestamp])


@pytest.mark.parametrize("seed", range(4))
def test_malformed_record_areas_same_outcome(seed: int, impl: str) -> None:
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
        made: list = []
        try:
            for r in batch:
                made.append(r)
            iterated: object = made
        except KafkaLogError as e:
            iterated = (type(e), str(e), e.position, e.offset)
        assert iterated == want


def test_record_is_an_immutable_tuple_of_its_fields() -> None:
    """The fast path builds records with tuple.__new__; the constructor, equality, pickling and
    the attribute names stay those of the record model."""
    import copy

    from kafkalog import LegacyRecord, Record

    r = Record(3, 10, b"k", None, (("h", b"x"),))
    assert (r.offset, r.timestamp, r.key, r.value, r.headers, r.sequence, r.size_in_bytes, r.attributes, r.create_timestamp) == (
        3, 10, b"k", None, (("h", b"x"),), -1, 0, 0, 10,
    )
    assert (r.key_size, r.value_size) == (1, -1)
    assert repr(r) == "Record(offset=3, timestamp=10, key=b'k', value=None, headers=(('h', b'x'),))"
    same = Record(*tuple(r))
    assert r == same and (r != same) is False and r != Record(4, 10, b"k", None, ())
    assert r != tuple(r) and tuple(r) != r  # never equal to a plain tuple
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(r, protocol)) == r
    legacy = LegacyRecord(1, 2, b"k", b"v", magic=1, checksum=7, is_valid=False, size_in_bytes=40, attributes=0)
    back = copy.deepcopy(legacy)
    assert type(back) is LegacyRecord and (back.magic, back.checksum, back.is_valid, back.headers) == (1, 7, False, ())
    with pytest.raises(AttributeError):
        r.offset = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        hash(r)
    with pytest.raises(TypeError):
        _ = r < r  # type: ignore[operator]


@compiled_only
def test_compiled_field_reads_are_member_descriptors_over_the_items() -> None:
    """With the extension, Record's fields are the compiled module's member descriptors (reads
    CPython specializes), each reading its own item, read-only and documented as before; the
    descriptors are made once and only for tuple subtypes."""
    from kafkalog import LegacyRecord, Record
    from kafkalog.format.records.record import RECORD_FIELDS

    assert {type(Record.__dict__[name]).__name__ for name in RECORD_FIELDS} == {"member_descriptor"}
    assert Record.__dict__["key"].__doc__ == "Key bytes, or None."
    r = Record(2**40, -7, b"k", None, (("h", None),), 9, 33, 1, 5)
    assert [getattr(r, name) for name in RECORD_FIELDS] == list(r) == [2**40, -7, b"k", None, (("h", None),), 9, 33, 1, 5]
    legacy = LegacyRecord(1, 2, b"k", b"v", magic=1, checksum=7, is_valid=False, size_in_bytes=40, attributes=0)
    assert (legacy.offset, legacy.key, legacy.value, legacy.checksum) == (1, b"k", b"v", 7)
    with pytest.raises(AttributeError):
        r.value = b"x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Record.__dict__["key"].__get__((1, 2, 3))  # a plain tuple is not a record
    with pytest.raises(ValueError):
        objects._objects.item_members(Record, RECORD_FIELDS, RECORD_FIELDS)  # once per process
    with pytest.raises(ValueError):
        objects._objects.item_members(dict, ("a",), ("b",))


@pytest.mark.rule("R-V2-16")
def test_sequence_wraps_in_java_int_arithmetic(impl: str) -> None:
    """DefaultRecordBatch.incrementSequence (commit 1eb7644) compares ``sequence > Integer.MAX_VALUE -
    increment`` in Java ints. For a negative offset delta (a crafted batch) that difference
    overflows: base sequence 5 and delta -1 give -1 - (2147483647 - 5) - 1 = -2147483644, not 4.
    A delta of 3 past base sequence 2147483646 wraps to 3 - (2147483647 - 2147483646) - 1 = 1."""
    for base_sequence, delta_varint, want in ((5, b"\x01", -2147483644), (2147483646, b"\x06", 1), (5, b"\x06", 8)):
        batch = _one_record_batch(b"\x00\x00" + delta_varint + b"\x02k\x02v\x00", base_sequence=base_sequence)
        (plain,) = batch.records_plain()
        assert plain.sequence == want
        assert [r.sequence for r in objects.records(batch)] == [want] and [r.sequence for r in batch] == [want]


def test_a_count_past_the_bytes_allocates_nothing_for_it(impl: str) -> None:
    """A record count the bytes cannot hold (each record takes at least 7) goes to the plain
    decoder before any per-record list is made: no allocation in proportion to the count."""
    b = RecordBatchBuilder(0)
    b.append(1, b"k", bytes(1 << 20))
    data = bytearray(b.build())
    struct.pack_into(">i", data, 57, 2_000_000)  # recordsCount; the CRC does not matter here
    batch = RecordBatch(bytes(data))
    tracemalloc.start()
    try:
        with pytest.raises(KafkaLogError):
            objects.records(batch)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak  # a list of two million slots alone is 16 MB
