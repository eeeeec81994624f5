"""Property tests: kafkalog's builders -> LogReader, and -> canonical JSON -> build_log.

The expected records are the generated inputs, with Kafka's rules applied by the test itself
(magic 0 has no timestamp, LogAppendTime replaces record timestamps, v2 sequences wrap at
Int32.MAX_VALUE); kafkalog's output is only ever compared with those inputs or, for the JSON round
trip, with kafkalog's own first reading of the same bytes.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalog import Codec, ControlType, LegacyBatchBuilder, LogReader, RecordBatchBuilder, TimestampType
from kafkalog.tools.canonical import build_log, dumps, log_lines

INT32_MAX = 2**31 - 1
T0 = 1_700_000_000_000

#: Sized so that the whole module runs in about 10 s on 2 cores (measured: about 1-5 ms per example).
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ------------------------------------------------------------------------------- strategies
byte_fields = st.one_of(st.none(), st.just(b""), st.binary(min_size=1, max_size=40))
#: -1 (no timestamp) and anything up to 2**62, so that any two differ by less than 2**63 (the
#: timestamp delta is an int64); the full int64 range is tested on its own below.
timestamps = st.one_of(st.just(-1), st.integers(0, 2**62), st.sampled_from([0, T0, 2**62]))
header_keys = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=10)
headers = st.lists(st.tuples(header_keys, st.one_of(st.none(), st.just(b""), st.binary(max_size=12))), max_size=3)
v2_records = st.lists(st.tuples(timestamps, byte_fields, byte_fields, headers), min_size=1, max_size=50)
legacy_records = st.lists(st.tuples(timestamps, byte_fields, byte_fields), min_size=1, max_size=50)


@st.composite
def v2_batch_specs(draw: Any) -> dict[str, Any]:
    recs = draw(v2_records)
    gaps = draw(st.lists(st.integers(1, 5), min_size=len(recs), max_size=len(recs)))
    deltas, d = [], 0
    for i, g in enumerate(gaps):
        d = 0 if i == 0 else d + g
        deltas.append(d)
    if not draw(st.booleans()):  # half of the batches are dense (no compaction gaps)
        deltas = list(range(len(recs)))
    producer = draw(st.sampled_from(["none", "idempotent", "transactional"]))
    lat = draw(st.booleans())
    return {
        "records": recs,
        "deltas": deltas,
        "extra_last_delta": draw(st.one_of(st.just(0), st.integers(1, 1000))),
        "base_offset": draw(st.one_of(st.just(0), st.integers(0, 2**40))),
        "producer_id": -1 if producer == "none" else draw(st.integers(0, 2**63 - 1)),
        "producer_epoch": -1 if producer == "none" else draw(st.integers(0, 2**15 - 1)),
        "base_sequence": -1 if producer == "none" else draw(st.one_of(st.integers(0, INT32_MAX), st.just(INT32_MAX - 2))),
        "transactional": producer == "transactional",
        "log_append_time": draw(st.integers(0, 2**62)) if lat else None,
        "delete_horizon": draw(st.one_of(st.none(), st.integers(0, 2**62))),
        "leader_epoch": draw(st.one_of(st.just(-1), st.integers(0, INT32_MAX))),
    }


# ---------------------------------------------------------------------------------- helpers
def _build_v2(spec: dict[str, Any], codec: Codec) -> bytes:
    lat = spec["log_append_time"]
    b = RecordBatchBuilder(
        spec["base_offset"],
        compression=codec,
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat is not None else TimestampType.CREATE_TIME,
        log_append_time=lat,
        producer_id=spec["producer_id"],
        producer_epoch=spec["producer_epoch"],
        base_sequence=spec["base_sequence"],
        is_transactional=spec["transactional"],
        partition_leader_epoch=spec["leader_epoch"],
        delete_horizon_ms=spec["delete_horizon"],
    )
    for (ts, k, v, h), d in zip(spec["records"], spec["deltas"], strict=True):
        assert b.append(ts, k, v, h, offset=spec["base_offset"] + d) == spec["base_offset"] + d
    last = spec["deltas"][-1] + spec["extra_last_delta"]
    return b.build(last_offset_delta=last if spec["extra_last_delta"] else None)


def _expected_sequence(base_sequence: int, delta: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: wraps past Int32.MAX_VALUE to 0."""
    return -1 if base_sequence < 0 else (base_sequence + delta) % (INT32_MAX + 1)


def _check_v2(data: bytes, spec: dict[str, Any], codec: Codec) -> None:
    reader = LogReader(data)
    (batch,) = list(reader.batches())
    assert reader.tail is None
    assert batch.is_valid
    base = spec["base_offset"]
    lat = spec["log_append_time"]
    recs = spec["records"]
    assert batch.magic == 2
    assert batch.compression is codec
    assert batch.base_offset == base
    assert batch.count == len(recs)
    assert batch.last_offset == base + spec["deltas"][-1] + spec["extra_last_delta"]
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        spec["producer_id"], spec["producer_epoch"], spec["base_sequence"],
    )
    assert batch.is_transactional is spec["transactional"]
    assert batch.is_control is False
    assert batch.partition_leader_epoch == spec["leader_epoch"]
    assert batch.timestamp_type is (TimestampType.LOG_APPEND_TIME if lat is not None else TimestampType.CREATE_TIME)
    assert batch.max_timestamp == (lat if lat is not None else max(r[0] for r in recs))
    assert batch.delete_horizon_ms == spec["delete_horizon"]
    if spec["delete_horizon"] is not None:
        assert batch.base_timestamp == spec["delete_horizon"]
    else:
        assert batch.base_timestamp == recs[0][0]
    got = batch.records(verify_crc=True)
    assert len(got) == len(recs)
    for r, (ts, k, v, h), d in zip(got, recs, spec["deltas"], strict=True):
        assert r.offset == base + d
        assert r.timestamp == (lat if lat is not None else ts)
        assert r.create_timestamp == ts
        assert (r.key, r.value, list(r.headers)) == (k, v, list(h))
        assert r.sequence == _expected_sequence(spec["base_sequence"], d)


def _via_json(data: bytes, *, lossless: bool) -> bytes:
    lines = [dumps(obj) for obj in log_lines(LogReader(data).batches(), "00000000000000000000.log", lossless=lossless)]
    return b"".join(build_log(lines))


def _batch_view(data: bytes) -> list[tuple[dict[str, Any], list]]:
    """Every header field and every record (Record.__eq__ compares all of its fields)."""
    out = []
    for b in LogReader(data).batches():
        fields = {
            name: getattr(b, name)
            for name in (
                "position", "base_offset", "last_offset", "magic", "attributes", "max_timestamp",
                "timestamp_type", "compression", "is_valid", "size_in_bytes",
            )
        }
        if b.magic == 2:
            for name in (
                "partition_leader_epoch", "last_offset_delta", "base_timestamp", "producer_id", "producer_epoch",
                "base_sequence", "count", "is_transactional", "is_control", "delete_horizon_ms",
            ):
                fields[name] = getattr(b, name)
        else:
            del fields["size_in_bytes"]  # a recompressed wrapper may differ in size
        if b.compression is not Codec.NONE:
            fields.pop("size_in_bytes", None)
        out.append((fields, b.records()))
    return out


def _check_json_roundtrip(data: bytes, codec: Codec, *, lossless: bool) -> None:
    rebuilt = _via_json(data, lossless=lossless)
    if codec is Codec.NONE:
        assert rebuilt == data
    else:
        assert _batch_view(rebuilt) == _batch_view(data)


V2_CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]


# ------------------------------------------------------------------------------------ magic 2
@pytest.mark.rule("R-REC-08", "R-V2-07")
@pytest.mark.parametrize("codec", V2_CODECS, ids=lambda c: c.label)
@SETTINGS
@given(spec=v2_batch_specs(), lossless=st.booleans())
def test_v2_build_read_and_json_roundtrip(codec: Codec, spec: dict[str, Any], lossless: bool) -> None:
    data = _build_v2(spec, codec)
    _check_v2(data, spec, codec)
    # Kafka's (non-lossless) view replaces LogAppendTime record timestamps: only the lossless form
    # can give those bytes back.
    _check_json_roundtrip(data, codec, lossless=lossless or spec["log_append_time"] is not None)


@pytest.mark.rule("R-PRIM-01")
@pytest.mark.parametrize("codec", V2_CODECS, ids=lambda c: c.label)
@settings(max_examples=40, deadline=None)
@given(
    markers=st.lists(
        st.tuples(st.sampled_from([ControlType.ABORT, ControlType.COMMIT]), st.integers(-(2**31), INT32_MAX), timestamps),
        min_size=1,
        max_size=4,
    ),
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(0, 2**15 - 1),
    base_offset=st.integers(0, 2**40),
)
def test_v2_control_batches_roundtrip(
    codec: Codec, markers: list, producer_id: int, producer_epoch: int, base_offset: int
) -> None:
    parts = []
    for i, (ctype, epoch, ts) in enumerate(markers):
        b = RecordBatchBuilder(
            base_offset + i, compression=codec, producer_id=producer_id, producer_epoch=producer_epoch,
            is_transactional=True, is_control=True,
        )
        assert b.append_end_txn_marker(ctype, epoch, ts) == base_offset + i
        parts.append(b.build())
    data = b"".join(parts)
    batches = list(LogReader(data).batches())
    assert len(batches) == len(markers)
    for b, (ctype, epoch, ts) in zip(batches, markers, strict=True):
        assert b.is_control and b.is_transactional and b.is_valid
        assert (b.producer_id, b.producer_epoch, b.base_sequence) == (producer_id, producer_epoch, -1)
        (r,) = b.records(verify_crc=True)
        # Kafka's layouts: key = version int16 0, type int16; value = version int16 0, coordinator epoch int32
        assert r.key == struct.pack(">hh", 0, 0 if ctype is ControlType.ABORT else 1)
        assert r.value == struct.pack(">hi", 0, epoch)
        assert r.timestamp == ts and r.headers == ()
        assert b.control_type(r) is ctype
    lines = list(log_lines(LogReader(data).batches(), "x.log"))
    assert [(o["controlType"], o["coordinatorEpoch"]) for o in lines if o["type"] == "record"] == [
        (c.name, e) for c, e, _ in markers
    ]
    _check_json_roundtrip(data, codec, lossless=False)


@pytest.mark.parametrize("codec", V2_CODECS, ids=lambda c: c.label)
@settings(max_examples=25, deadline=None)
@given(
    base_offset=st.integers(0, 2**40),
    last_offset_delta=st.integers(0, INT32_MAX),
    base_ts=timestamps,
    max_ts=timestamps,
    producer_id=st.integers(0, 2**40),
)
def test_v2_empty_batch_kept_by_the_cleaner_roundtrips(
    codec: Codec, base_offset: int, last_offset_delta: int, base_ts: int, max_ts: int, producer_id: int
) -> None:
    """Kafka's cleaner keeps an emptied batch (its header only) while its producer is active."""
    b = RecordBatchBuilder(base_offset, compression=codec, producer_id=producer_id, producer_epoch=0, base_sequence=0)
    data = b.build(last_offset_delta=last_offset_delta, base_timestamp=base_ts, max_timestamp=max_ts)
    (batch,) = list(LogReader(data).batches())
    assert batch.is_valid and batch.count == 0 and batch.records() == []
    assert (batch.base_offset, batch.last_offset) == (base_offset, base_offset + last_offset_delta)
    assert (batch.base_timestamp, batch.max_timestamp) == (base_ts, max_ts)
    assert batch.last_sequence == last_offset_delta  # base sequence 0
    _check_json_roundtrip(data, codec, lossless=False)


@pytest.mark.rule("R-PRIM-01")
@pytest.mark.parametrize("first,second", [(-1, 2**63 - 1), (2**63 - 1, -1), (-(2**63), 2**63 - 1)])
def test_v2_timestamp_delta_wraps_like_kafka(first: int, second: int) -> None:
    """Kafka computes timestampDelta = timestamp - baseTimestamp in Java longs (wrapping) and reads
    baseTimestamp + delta the same way, so every int64 timestamp survives a round trip."""
    b = RecordBatchBuilder(0)
    b.append(first, b"a", b"1")
    b.append(second, b"b", b"2")
    data = b.build()
    java_delta = (second - first + 2**63) % 2**64 - 2**63  # Java long subtraction
    zig = ((java_delta << 1) ^ (java_delta >> 63)) & (2**64 - 1)
    varlong = bytearray()
    while zig >= 0x80:
        varlong.append((zig & 0x7F) | 0x80)
        zig >>= 7
    varlong.append(zig)
    # the second record: length varint, attributes (0), then the timestamp delta varlong
    second_rec = data[61 + 1 + data[61] // 2 :]
    assert second_rec[2 : 2 + len(varlong)] == bytes(varlong), "timestampDelta is not the Java-wrapped varlong"
    assert [r.timestamp for r in LogReader(data).records()] == [first, second]


# ---------------------------------------------------------------------------------- magic 0/1
LEGACY_CASES = [
    pytest.param(magic, codec, lat, id=f"v{magic}-{codec.label}{'-lat' if lat else ''}")
    for magic in (0, 1)
    for codec in (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4)
    for lat in ((False, True) if magic == 1 else (False,))
]


@pytest.mark.rule("R-V2-09", "R-WR-04")
@pytest.mark.parametrize("magic,codec,lat", LEGACY_CASES)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    recs=legacy_records,
    gaps=st.lists(st.integers(1, 4), min_size=50, max_size=50),
    dense=st.booleans(),
    base_offset=st.integers(0, 2**40),
    log_append_time=st.integers(0, 2**62),
)
def test_legacy_build_read_and_json_roundtrip(
    magic: int, codec: Codec, lat: bool, recs: list, gaps: list[int], dense: bool, base_offset: int, log_append_time: int
) -> None:
    offsets, off = [], base_offset
    for i in range(len(recs)):
        off = base_offset if i == 0 else off + (1 if dense else gaps[i])
        offsets.append(off)
    b = LegacyBatchBuilder(
        magic, base_offset, compression=codec,
        timestamp_type=TimestampType.LOG_APPEND_TIME if lat else None,
        log_append_time=log_append_time if lat else None,
    )
    for (ts, k, v), o in zip(recs, offsets, strict=True):
        assert b.append(ts, k, v, offset=o) == o
    data = b.build()
    reader = LogReader(data)
    batches = list(reader.batches())
    assert reader.tail is None
    assert len(batches) == (len(recs) if codec is Codec.NONE else 1)
    got = []
    for batch in batches:
        assert batch.magic == magic and batch.is_valid and batch.compression is codec
        batch.ensure_valid()
        got.extend(batch.records(verify_crc=True))
    assert [r.offset for r in got] == offsets
    if magic == 0:
        expected_ts = [-1] * len(recs)
    elif lat:
        expected_ts = [log_append_time] * len(recs)
    else:
        expected_ts = [ts for ts, _, _ in recs]
    assert [r.timestamp for r in got] == expected_ts
    assert [(r.key, r.value, r.headers) for r in got] == [(k, v, ()) for _, k, v in recs]
    assert all(r.is_valid for r in got)
    if codec is not Codec.NONE:
        (batch,) = batches
        assert batch.last_offset == offsets[-1] and batch.base_offset == offsets[0]
        if magic == 1:
            assert batch.max_timestamp == (log_append_time if lat else max(ts for ts, _, _ in recs))
    _check_json_roundtrip(data, codec, lossless=False)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4], ids=lambda c: c.label)
@settings(max_examples=40, deadline=None)
@given(recs=legacy_records, log_append_time=st.integers(0, 2**62))
def test_v1_wrapper_stamped_with_log_append_time(codec: Codec, recs: list, log_append_time: int) -> None:
    """A broker validating a v1 wrapper in place sets only the wrapper's LogAppendTime bit and
    timestamp; Kafka then reports the wrapper's timestamp for every inner message."""
    b = LegacyBatchBuilder(1, 0, compression=codec)
    for ts, k, v in recs:
        b.append(ts, k, v)
    data = b.build(wrapper_timestamp=log_append_time, wrapper_attributes=int(codec) | 0x08)
    (batch,) = list(LogReader(data).batches())
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME and batch.max_timestamp == log_append_time
    got = batch.records(verify_crc=True)
    assert [r.timestamp for r in got] == [log_append_time] * len(recs)
    assert [r.create_timestamp for r in got] == [ts for ts, _, _ in recs]
    assert [(r.offset, r.key, r.value) for r in got] == [(i, k, v) for i, (_, k, v) in enumerate(recs)]


@pytest.mark.rule("R-JSON-10")
@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4], ids=lambda c: c.label)
@settings(max_examples=20, deadline=None)
@given(recs=legacy_records, log_append_time=st.integers(0, 2**62))
def test_v1_stamped_wrapper_survives_lossless_json(codec: Codec, recs: list, log_append_time: int) -> None:
    """The lossless canonical JSON must keep what the bytes hold: here the inner messages' own
    (create) timestamps, which Kafka's view replaces by the wrapper's LogAppendTime."""
    b = LegacyBatchBuilder(1, 0, compression=codec)
    for ts, k, v in recs:
        b.append(ts, k, v)
    data = b.build(wrapper_timestamp=log_append_time, wrapper_attributes=int(codec) | 0x08)
    _check_json_roundtrip(data, codec, lossless=True)


@settings(max_examples=60, deadline=None)
@given(
    parts=st.lists(
        st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from(list(Codec)), legacy_records),
        min_size=2,
        max_size=4,
    )
)
def test_mixed_magic_log_json_roundtrip(parts: list) -> None:
    """A log with v0, v1 and v2 batches back to back (as after a message format upgrade)."""
    out, offset, expected = [], 0, []
    for magic, codec, recs in parts:
        if magic < 2 and codec is Codec.ZSTD:
            codec = Codec.GZIP
        if magic == 2:
            b = RecordBatchBuilder(offset, compression=codec)
        else:
            b = LegacyBatchBuilder(magic, offset, compression=codec)
        for ts, k, v in recs:
            b.append(ts, k, v)
            expected.append((offset, -1 if magic == 0 else ts, k, v))
            offset += 1
        out.append(b.build())
    data = b"".join(out)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in LogReader(data).records(verify_crc=True)] == expected
    rebuilt = _via_json(data, lossless=True)
    if all(codec is Codec.NONE for _, codec, _ in parts):
        assert rebuilt == data
    assert [(r.offset, r.timestamp, r.key, r.value) for r in LogReader(rebuilt).records(verify_crc=True)] == expected
