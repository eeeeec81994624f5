"""Malformed input: every outcome is a located KafkaLogError or a valid prefix plus a torn tail.

Never another exception type, never a hang, never an allocation driven by a hostile length field.
Hostile inputs are assembled here byte by byte (struct, zlib.crc32 and the ``crc32c`` package for the
checksums), so that the reader gets past the CRC and structural checks up to the field under test.
"""

from __future__ import annotations

import gzip
import os
import random
import signal
import struct
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cramjam
import crc32c
import lz4.frame
import pytest
import zstandard

from kafkalog import (
    Codec,
    ControlType,
    CorruptRecordError,
    CrcMismatchError,
    DecompressionError,
    KafkaLogError,
    LegacyBatchBuilder,
    LogReader,
    RecordBatchBuilder,
    TimestampType,
    UnsupportedCompressionError,
    UnsupportedMagicError,
)

#: Wall-clock bound for reading one (small) input completely.
TIME_LIMIT = 1.0
T0 = 1_700_000_000_000
MAGIC_CODECS = [(m, c) for m in (0, 1, 2) for c in Codec if not (c is Codec.ZSTD and m < 2)]


# =============================================================================== the explorer
class Hang(Exception):  # noqa: N818 - raised by the alarm, never by kafkalog
    """Reading one input took longer than TIME_LIMIT."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt a hang with SIGALRM where possible (main thread, POSIX); always measure."""
    use_alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()

    def _raise(signum: int, frame: object) -> None:
        raise Hang(f"still reading after {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise) if use_alarm else None
    if use_alarm:
        signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


@dataclass
class BatchOutcome:
    position: int
    magic: int
    is_valid: bool | None = None
    crc_error: KafkaLogError | None = None
    records: list | None = None
    errors: list[KafkaLogError] = field(default_factory=list)


@dataclass
class Outcome:
    batches: list[BatchOutcome] = field(default_factory=list)
    tail: Any = None
    error: KafkaLogError | None = None
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def errors(self) -> list[KafkaLogError]:
        out = [e for b in self.batches for e in b.errors]
        return out + ([self.error] if self.error else [])

    def ok(self) -> bool:
        return not self.errors

    def __str__(self) -> str:
        return (
            f"batches at {[b.position for b in self.batches]}, tail={self.tail}, "
            f"errors={[f'{type(e).__name__}@{e.position}: {e.message}' for e in self.errors]}"
        )


def explore(source: bytes | Path, *, name: str = "", **reader_kwargs: Any) -> Outcome:
    """Read ``source`` completely: every batch, its CRC check, its header properties and records().

    KafkaLogErrors are collected (and must carry a position, and the file when read from a path);
    any other exception, or a read over TIME_LIMIT, is recorded as a problem.
    """
    out = Outcome()
    size = source.stat().st_size if isinstance(source, Path) else len(source)
    expect_file = str(source) if isinstance(source, Path) else None

    def located(e: KafkaLogError, what: str) -> KafkaLogError:
        if e.position is None:
            out.problems.append(f"{name}{what}: {type(e).__name__} without a position: {e.message}")
        elif not 0 <= e.position <= size:
            out.problems.append(f"{name}{what}: {type(e).__name__} position {e.position} outside the input (size {size})")
        if expect_file is not None and e.file != expect_file:
            out.problems.append(f"{name}{what}: {type(e).__name__} names file {e.file!r}, read from {expect_file!r}")
        return e

    start = time.monotonic()
    try:
        with time_limit(TIME_LIMIT), LogReader(source, **reader_kwargs) as reader:
            try:
                for batch in reader.batches():
                    b = BatchOutcome(batch.position, batch.magic)
                    out.batches.append(b)
                    b.is_valid = batch.is_valid
                    try:
                        batch.ensure_valid()
                    except CrcMismatchError as e:
                        b.crc_error = located(e, f"batch {batch.position} ensure_valid")
                    except KafkaLogError as e:
                        b.errors.append(located(e, f"batch {batch.position} ensure_valid"))
                    for prop in ("compression", "timestamp_type", "base_offset", "last_offset", "next_offset", "max_timestamp"):
                        try:
                            getattr(batch, prop)
                        except KafkaLogError as e:
                            b.errors.append(located(e, f"batch {batch.position} .{prop}"))
                    try:
                        b.records = batch.records()
                    except KafkaLogError as e:
                        b.errors.append(located(e, f"batch {batch.position} records()"))
                out.tail = reader.tail
            except KafkaLogError as e:
                out.error = located(e, "reader")
    except Hang as e:
        out.problems.append(f"{name}hang: {e}")
    except Exception as e:  # noqa: BLE001 - the point: anything but KafkaLogError is a bug
        out.problems.append(f"{name}{type(e).__name__} (not a KafkaLogError): {e}")
    out.seconds = time.monotonic() - start
    if out.seconds > TIME_LIMIT:
        out.problems.append(f"{name}took {out.seconds:.2f} s")
    return out


def explore_both(data: bytes, tmp_path: Path, *, name: str = "", **kw: Any) -> tuple[Outcome, Outcome]:
    """The same input from memory and from a file (whose errors must name the file)."""
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return explore(data, name=name, **kw), explore(path, name=name + "[file] ", **kw)


# ============================================================================ hand-made bytes
def zz(value: int) -> bytes:
    """Kafka's zig-zag varint/varlong encoding."""
    u = ((value << 1) ^ (value >> 63)) & (2**64 - 1)
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def overlong(value: int, nbytes: int) -> bytes:
    """``value`` as a varint padded with continuation bytes to ``nbytes`` bytes."""
    u = ((value << 1) ^ (value >> 63)) & (2**64 - 1)
    out = bytearray()
    for _ in range(nbytes - 1):
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u & 0x7F)
    return bytes(out)


def field_bytes(b: bytes | None) -> bytes:
    return zz(-1) if b is None else zz(len(b)) + b


def record_body(
    *, ts_delta: bytes = b"\x00", off_delta: bytes = b"\x00", key: bytes = zz(1) + b"k", value: bytes = zz(1) + b"v",
    headers: bytes = b"\x00",
) -> bytes:
    """One v2 record body (attributes first) from already-encoded fields."""
    return b"\x00" + ts_delta + off_delta + key + value + headers


def record(body: bytes, length: bytes | None = None) -> bytes:
    return (zz(len(body)) if length is None else length) + body


V2_HEADER = struct.Struct(">qiibIhiqqqhii")


def v2_batch(
    records_area: bytes, *, count: int, base_offset: int = 0, attributes: int = 0, length: int | None = None,
    magic: int = 2, last_offset_delta: int | None = None,
) -> bytes:
    """A v2 batch around ``records_area`` with a correct CRC-32C (whatever the other fields say)."""
    lod = max(count - 1, 0) if last_offset_delta is None else last_offset_delta
    data = bytearray(V2_HEADER.pack(base_offset, 0, -1, magic - 256 if magic > 127 else magic, 0, attributes, lod, T0, T0, -1, -1, -1, count))
    data += records_area
    struct.pack_into(">i", data, 8, len(data) - 12 if length is None else length)
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def legacy_message(
    offset: int, magic: int, *, attributes: int = 0, timestamp: int = T0, key: bytes | None = b"k",
    value: bytes | None = b"v", key_len: int | None = None, value_len: int | None = None, size: int | None = None,
) -> bytes:
    """A v0/v1 message with its log prefix and a correct CRC-32 (whatever the length fields say)."""
    body = bytearray([magic, attributes & 0xFF])
    if magic == 1:
        body += struct.pack(">q", timestamp)
    body += struct.pack(">i", (-1 if key is None else len(key)) if key_len is None else key_len) + (key or b"")
    body += struct.pack(">i", (-1 if value is None else len(value)) if value_len is None else value_len) + (value or b"")
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4 if size is None else size, crc) + bytes(body)


def fix_crc(data: bytearray, start: int = 0) -> bytes:
    """Recompute the checksum of the entry at ``start`` after an edit (CRC-32C for v2, CRC-32 else)."""
    (size,) = struct.unpack_from(">i", data, start + 8)
    end = start + 12 + size
    if data[start + 16] == 2:
        struct.pack_into(">I", data, start + 17, crc32c.crc32c(bytes(data[start + 21 : end])))
    else:
        struct.pack_into(">I", data, start + 12, zlib.crc32(bytes(data[start + 16 : end])))
    return bytes(data)


def entry_bounds(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each log entry of a valid input, by its 12-byte prefix."""
    out, pos = [], 0
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos + 8)
        out.append((pos, pos + 12 + size))
        pos += 12 + size
    assert pos == len(data)
    return out


def small_batches(magic: int, codec: Codec, base: int = 10) -> bytes:
    """A few records of each kind (null key, tombstone, empty value, headers) in kafkalog's builders."""
    recs = [(T0, b"k0", b"v0", [("h", b"x"), ("n", None)]), (T0 + 2, None, b"", []), (T0 + 1, b"k2", None, [])]
    if magic == 2:
        b = RecordBatchBuilder(base, compression=codec, producer_id=7, producer_epoch=1, base_sequence=0)
        for ts, k, v, h in recs:
            b.append(ts, k, v, h)
        return b.build()
    lb = LegacyBatchBuilder(magic, base, compression=codec)
    for ts, k, v, _h in recs:
        lb.append(ts, k, v)
    return lb.build()


def _fail_on(problems: list[str]) -> None:
    if problems:
        shown = "\n  ".join(problems[:40])
        more = f"\n  ... and {len(problems) - 40} more" if len(problems) > 40 else ""
        pytest.fail(f"{len(problems)} problem(s):\n  {shown}{more}")


# ================================================================================ flipped bytes
def _crc_covered(magic: int, rel: int) -> bool:
    """Is byte ``rel`` of an entry checked by its CRC (or the CRC field itself)?

    v2: the CRC (17..20) and attributes..end (21..). v0/v1: the CRC (12..15) and magic..end, minus
    the magic byte (16) itself, since a changed magic changes which format, and which CRC, applies.
    """
    if magic == 2:
        return rel >= 17
    return 12 <= rel < 16 or rel >= 17


@pytest.mark.parametrize("magic,codec", MAGIC_CODECS, ids=[f"v{m}-{c.label}" for m, c in MAGIC_CODECS])
def test_flipped_byte_at_every_position(magic: int, codec: Codec, tmp_path: Path) -> None:
    prefix = small_batches(2, Codec.NONE, base=0)  # a valid batch in front: errors must point past it
    data = prefix + small_batches(magic, codec, base=10)
    bounds = [(s, e) for s, e in entry_bounds(data) if s >= len(prefix)]
    original = explore(data)
    assert original.ok() and not original.problems and original.tail is None
    problems: list[str] = []
    path = tmp_path / "00000000000000000000.log"
    for i in range(len(prefix), len(data)):
        start, end = next((s, e) for s, e in bounds if s <= i < e)
        rel = i - start
        for mask, from_file in ((0xFF, True), (0x01, False), (0x80, False)):
            flipped = bytearray(data)
            flipped[i] ^= mask
            if from_file:
                path.write_bytes(flipped)
                out = explore(path, name=f"byte {i} ^{mask:#x}: ")
            else:
                out = explore(bytes(flipped), name=f"byte {i} ^{mask:#x}: ")
            problems += out.problems
            for e in out.errors:
                if e.position is not None and e.position < len(prefix):
                    problems.append(f"byte {i}: {type(e).__name__} at {e.position}, inside the intact batch before it")
            if not out.batches or out.batches[0].position != 0 or out.batches[0].records is None:
                problems.append(f"byte {i}: the intact first batch was not read ({out})")
            if 8 <= rel < 12 or rel == 16:
                continue  # length or magic: the entry is framed differently, no CRC claim applies
            mine = next((b for b in out.batches if b.position == start), None)
            if _crc_covered(magic, rel):
                if mine is None:
                    if not out.errors:
                        problems.append(f"byte {i} (entry byte {rel}): batch vanished without an error ({out})")
                elif not isinstance(mine.crc_error, CrcMismatchError) or mine.is_valid:
                    problems.append(f"byte {i} (entry byte {rel}): no CrcMismatchError from ensure_valid (is_valid={mine.is_valid})")
            elif magic == 2 and 12 <= rel < 16 and mine is not None and (not mine.is_valid or mine.records is None):
                # partitionLeaderEpoch sits outside the CRC by design: the batch stays valid and whole
                problems.append(f"byte {i}: a changed partitionLeaderEpoch made the batch invalid or unreadable")
    _fail_on(problems)


def test_flipped_byte_in_compressed_payload_with_recomputed_crc() -> None:
    """Corrupt compressed data that passes the CRC reaches the decompressors: errors only, located."""
    problems: list[str] = []
    for magic, codec in MAGIC_CODECS:
        if codec is Codec.NONE:
            continue
        data = small_batches(magic, codec)
        payload_start = 61 if magic == 2 else 12 + 4 + 2 + (8 if magic == 1 else 0) + 4 + 4
        for i in range(payload_start, len(data)):
            for mask in (0x01, 0x80, 0xFF):
                flipped = bytearray(data)
                flipped[i] ^= mask
                out = explore(fix_crc(flipped), name=f"v{magic} {codec.label} payload byte {i} ^{mask:#x}: ")
                problems += out.problems
                for b in out.batches:
                    if not b.is_valid:
                        problems.append(f"v{magic} {codec.label} byte {i}: CRC not recomputed correctly by the test")
    _fail_on(problems)


# ================================================================================== truncation
def _mixed_log() -> tuple[bytes, list[tuple[int, int | None, bytes | None, bytes | None]]]:
    """A log of several magics and codecs, with the records it holds (from the inputs)."""
    parts: list[bytes] = []
    expected: list[tuple[int, int | None, bytes | None, bytes | None]] = []
    offset = 0

    def add(magic: int, codec: Codec, n: int, **kw: Any) -> None:
        nonlocal offset
        if magic == 2:
            b: Any = RecordBatchBuilder(offset, compression=codec, **kw)
        else:
            b = LegacyBatchBuilder(magic, offset, compression=codec, **kw)
        for i in range(n):
            key = None if i == 1 else b"key-%d" % offset
            value = b"" if i == 2 else b"value-%d" % offset * 3
            b.append(T0 + offset, key, value, [("h", b"%d" % i)] if magic == 2 else ())
            ts = -1 if magic == 0 else (kw["log_append_time"] if "log_append_time" in kw else T0 + offset)
            expected.append((offset, ts, key, value))
            offset += 1
        parts.append(b.build())

    add(2, Codec.NONE, 3)
    add(0, Codec.NONE, 1)
    add(1, Codec.GZIP, 3)
    add(2, Codec.GZIP, 2)
    add(1, Codec.NONE, 1)
    add(0, Codec.LZ4, 2)
    add(2, Codec.ZSTD, 3, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 999)
    add(1, Codec.SNAPPY, 2)
    add(2, Codec.LZ4, 1)
    ctl = RecordBatchBuilder(offset, producer_id=3, producer_epoch=0, is_transactional=True, is_control=True)
    ctl.append_end_txn_marker(ControlType.ABORT, 4, T0)
    parts.append(ctl.build())
    expected.append((offset, T0, struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 4)))
    return b"".join(parts), expected


def test_truncation_at_every_length_is_valid_prefix_plus_torn_tail(tmp_path: Path) -> None:
    data, expected = _mixed_log()
    ends = [e for _s, e in entry_bounds(data)]
    full = explore(data)
    assert full.ok() and not full.problems and full.tail is None
    assert [(r.offset, r.timestamp, r.key, r.value) for b in full.batches for r in b.records] == expected
    path = tmp_path / "00000000000000000000.log"
    problems: list[str] = []
    for n in range(len(data) + 1):
        cut = data[:n]
        path.write_bytes(cut)
        complete = [e for e in ends if e <= n]
        last = complete[-1] if complete else 0
        for source, file in ((cut, None), (path, str(path))):
            where = f"length {n}{' [file]' if file else ''}: "
            out = explore(source, name=where)
            problems += out.problems
            if out.errors:
                problems.append(f"{where}errors on a cleanly truncated log: {out}")
                continue
            if [b.records for b in out.batches] != [b.records for b in full.batches[: len(complete)]]:
                problems.append(f"{where}the prefix batches differ from the untruncated log's")
            tail = out.tail
            if n == last:
                if tail is not None:
                    problems.append(f"{where}unexpected torn tail {tail}")
            elif tail is None or (tail.position, tail.size, tail.file) != (last, n - last, file):
                problems.append(f"{where}tail {tail}, expected position {last}, size {n - last}, file {file}")
        with LogReader(cut) as reader:
            list(reader.batches())
            if reader.valid_bytes != last:
                problems.append(f"length {n}: valid_bytes {reader.valid_bytes}, expected {last}")
    _fail_on(problems)


# ========================================================================= hostile length fields
PREFIX = v2_batch(record(record_body()), count=1)  # one valid batch in front of every hostile entry
GOOD = record(record_body())


@dataclass(frozen=True)
class Hostile:
    name: str
    make: Callable[[], bytes]
    #: "error": some KafkaLogError must be raised; "tail": a torn tail at the hostile entry;
    #: "any": an error or a clean read are both acceptable (e.g. a negative length Kafka reads as null)
    expect: str = "error"


def _v2(records_area: bytes, **kw: Any) -> Callable[[], bytes]:
    return lambda: v2_batch(records_area, **kw)


def _with_length(length: int) -> Callable[[], bytes]:
    def make() -> bytes:
        d = bytearray(v2_batch(GOOD, count=1))
        struct.pack_into(">i", d, 8, length)
        return bytes(d)

    return make


def _gzip_v2(records_area: bytes, count: int) -> Callable[[], bytes]:
    return lambda: v2_batch(gzip.compress(records_area), count=count, attributes=int(Codec.GZIP))


def _zstd_v2(records_area: bytes, count: int) -> Callable[[], bytes]:
    return lambda: v2_batch(zstandard.ZstdCompressor().compress(records_area), count=count, attributes=int(Codec.ZSTD))


def _v1_wrapper(inner: bytes) -> Callable[[], bytes]:
    return lambda: legacy_message(5, 1, attributes=int(Codec.GZIP), key=None, value=gzip.compress(inner))


BIG = 2**31 - 1
HOSTILE = [
    # batch length (the log entry's size field)
    Hostile("batch length 2^31-1", _with_length(BIG), "tail"),
    Hostile("batch length -1", _with_length(-1)),
    Hostile("batch length -2^31", _with_length(-(2**31))),
    Hostile("batch length 0", _with_length(0)),
    Hostile("batch length 13", _with_length(13)),
    Hostile("batch length 14 (v2 header needs 49)", _with_length(14)),
    Hostile("batch length 48", _with_length(48)),
    # record count
    Hostile("record count 2^31-1", _v2(GOOD, count=BIG)),
    Hostile("record count 2^31-1, gzip", _gzip_v2(GOOD, BIG)),
    Hostile("record count 2^31-1, zstd", _zstd_v2(GOOD, BIG)),
    Hostile("record count -1", _v2(GOOD, count=-1)),
    Hostile("record count -2^31", _v2(GOOD, count=-(2**31))),
    # Kafka iterates `count` records and never looks at the rest: a count of 0 reads as no records
    Hostile("record count 0 with a record", _v2(GOOD, count=0), "any"),
    Hostile("record count 2 with one record", _v2(GOOD, count=2)),
    # record length varint
    Hostile("record length 2^31-1", _v2(record(record_body(), zz(BIG)), count=1)),
    Hostile("record length -1", _v2(record(record_body(), zz(-1)), count=1)),
    Hostile("record length -2^31", _v2(record(record_body(), zz(-(2**31))), count=1)),
    Hostile("record length 0", _v2(record(record_body(), zz(0)), count=1)),
    Hostile("record length too long by one", _v2(record(record_body(), zz(len(record_body()) + 1)), count=1)),
    Hostile("record length 2^31-1, gzip", _gzip_v2(record(record_body(), zz(BIG)), 1)),
    # key, value, header lengths
    Hostile("key length 2^31-1", _v2(record(record_body(key=zz(BIG) + b"k")), count=1)),
    Hostile("key length -2^31", _v2(record(record_body(key=zz(-(2**31)))), count=1), "any"),
    Hostile("key length -2", _v2(record(record_body(key=zz(-2))), count=1), "any"),
    Hostile("value length 2^31-1", _v2(record(record_body(value=zz(BIG) + b"v")), count=1)),
    Hostile("value length -7", _v2(record(record_body(value=zz(-7))), count=1), "any"),
    Hostile("header count 2^31-1", _v2(record(record_body(headers=zz(BIG))), count=1)),
    Hostile("header count 2^31-1, zstd", _zstd_v2(record(record_body(headers=zz(BIG))), 1)),
    Hostile("header count -1", _v2(record(record_body(headers=zz(-1))), count=1)),
    Hostile("header key length 2^31-1", _v2(record(record_body(headers=zz(1) + zz(BIG) + b"h" + zz(-1))), count=1)),
    Hostile("header key length -1", _v2(record(record_body(headers=zz(1) + zz(-1) + zz(-1))), count=1)),
    Hostile("header value length 2^31-1", _v2(record(record_body(headers=zz(1) + field_bytes(b"h") + zz(BIG))), count=1)),
    Hostile("header value length -9", _v2(record(record_body(headers=zz(1) + field_bytes(b"h") + zz(-9))), count=1), "any"),
    # overlong varints (Kafka reads at most 5 bytes for a varint, 10 for a varlong)
    Hostile("overlong record length (6 bytes)", _v2(overlong(len(record_body()), 6) + record_body(), count=1)),
    Hostile("overlong record length (20 bytes)", _v2(overlong(len(record_body()), 20) + record_body(), count=1)),
    Hostile("overlong timestamp delta (11 bytes)", _v2(record(record_body(ts_delta=overlong(0, 11))), count=1)),
    Hostile("overlong offset delta (6 bytes)", _v2(record(record_body(off_delta=overlong(0, 6))), count=1)),
    Hostile("overlong key length (6 bytes)", _v2(record(record_body(key=overlong(1, 6) + b"k")), count=1)),
    Hostile("overlong value length (7 bytes)", _v2(record(record_body(value=overlong(1, 7) + b"v")), count=1)),
    Hostile("overlong header count (6 bytes)", _v2(record(record_body(headers=overlong(0, 6))), count=1)),
    Hostile("5-byte varint beyond int32", _v2(b"\xff\xff\xff\xff\x7f" + record_body(), count=1)),
    Hostile("varint cut by the end of the batch", _v2(b"\x80\x80", count=1)),
    # v0/v1 messages
    Hostile("v0 message size 2^31-1", lambda: legacy_message(5, 0, size=BIG), "tail"),
    Hostile("v1 message size -1", lambda: legacy_message(5, 1, size=-1)),
    Hostile("v1 message size 13", lambda: legacy_message(5, 1, size=13)),
    Hostile("v1 message size 14 (v1 needs 22)", lambda: legacy_message(5, 1, size=14)),
    Hostile("v0 key length 2^31-1", lambda: legacy_message(5, 0, key_len=BIG)),
    Hostile("v1 key length -2", lambda: legacy_message(5, 1, key=None, key_len=-2), "any"),
    Hostile("v1 value length 2^31-1", lambda: legacy_message(5, 1, value_len=BIG)),
    Hostile("v1 value length -2^31", lambda: legacy_message(5, 1, value=None, value_len=-(2**31)), "any"),
    Hostile("v1 wrapper, inner size 2^31-1", _v1_wrapper(legacy_message(0, 1, size=BIG))),
    Hostile("v1 wrapper, inner size -1", _v1_wrapper(legacy_message(0, 1, size=-1))),
    Hostile("v1 wrapper, inner key length 2^31-1", _v1_wrapper(legacy_message(0, 1, key_len=BIG))),
    Hostile("v1 wrapper, inner offset past the wrapper's", _v1_wrapper(legacy_message(9, 1))),
    Hostile("v1 wrapper, no inner messages", _v1_wrapper(b"")),
    Hostile("v1 wrapper, null value", lambda: legacy_message(5, 1, attributes=int(Codec.GZIP), key=None, value=None)),
    Hostile("v1 wrapper, nested compression", _v1_wrapper(legacy_message(0, 1, attributes=1, key=None, value=gzip.compress(b"")))),
]


@pytest.mark.rule("R-PRIM-04", "R-PRIM-05", "R-PRIM-10", "R-REC-02", "R-REC-03", "R-V01-09", "R-V01-10", "R-V01-11")
@pytest.mark.parametrize("case", HOSTILE, ids=lambda c: c.name)
def test_hostile_length_fields(case: Hostile, tmp_path: Path) -> None:
    hostile = case.make()
    data = PREFIX + hostile
    start = len(PREFIX)
    explore(PREFIX)  # warm up caches so that the peak below is this input's
    tracemalloc.start()
    try:
        mem = explore(data, name="[memory] ")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    from_file = explore(path, name="[file] ")
    problems = mem.problems + from_file.problems
    # 50x the input, plus a fixed allowance for Python objects; zstd batches also get the 1 MiB
    # read buffer kafkalog's streaming zstd decompression allocates whatever the frame's size
    budget = 50 * len(data) + 64 * 1024 + ((1 << 20) + 4096 if "zstd" in case.name else 0)
    if peak > budget:
        problems.append(f"peak allocation {peak} bytes for a {len(data)}-byte input (budget {budget})")
    for out in (mem, from_file):
        if not out.batches or out.batches[0].position != 0 or out.batches[0].records is None:
            problems.append(f"the valid batch in front was not read: {out}")
        for e in out.errors:
            if e.position is not None and e.position < start:
                problems.append(f"{type(e).__name__} at {e.position}, before the hostile entry at {start}: {e.message}")
        if case.expect == "error" and out.ok():
            problems.append(f"no error: {out}")
        if case.expect == "tail":
            if not out.ok():
                problems.append(f"expected a torn tail, got {out}")
            elif out.tail is None or (out.tail.position, out.tail.size) != (start, len(hostile)):
                problems.append(f"tail {out.tail}, expected position {start} size {len(hostile)}")
    _fail_on(problems)


def _filler_batch(size: int) -> bytes:
    """A valid one-record v2 batch of exactly ``size`` bytes (empty for size 0)."""
    if size == 0:
        return b""
    for n in range(max(size - 80, 0), size):
        b = v2_batch(record(record_body(value=field_bytes(b"x" * n))), count=1)
        if len(b) == size:
            return b
    raise AssertionError(size)


def test_record_error_positions_point_into_the_bad_record() -> None:
    """A structural error in a later record of an uncompressed batch names a position inside that
    record (records are located at batch position + 61 + their place in the record area)."""
    problems: list[str] = []
    for batch_position in (0, 200, 5000):
        records = [record(record_body(off_delta=zz(i), value=field_bytes(b"value-%03d" % i))) for i in range(12)]
        for bad in (0, 1, 5, 11):
            broken = list(records)
            # an overlong (6-byte) key length in record `bad`
            body = record_body(off_delta=zz(bad), key=overlong(1, 6) + b"k", value=field_bytes(b"value-%03d" % bad))
            broken[bad] = record(body)
            rec_start = batch_position + 61 + sum(len(r) for r in broken[:bad])
            rec_end = rec_start + len(broken[bad])
            filler = _filler_batch(batch_position)
            data = filler + v2_batch(b"".join(broken), count=12, base_offset=100)
            out = explore(data)
            problems += out.problems
            errs = out.errors
            if not errs:
                problems.append(f"batch at {batch_position}, record {bad}: no error")
            for e in errs:
                if not rec_start <= (e.position or -1) < rec_end:
                    problems.append(
                        f"batch at {batch_position}, record {bad} (bytes {rec_start}..{rec_end - 1}): "
                        f"{type(e).__name__} reported at position {e.position}"
                    )
    _fail_on(problems)


# =================================================================== unknown magic and codecs
@pytest.mark.parametrize("magic", [3, 4, 127, 128, 255])
def test_unknown_magic(magic: int, tmp_path: Path) -> None:
    hostile = v2_batch(GOOD, count=1, magic=magic)
    data = PREFIX + hostile + PREFIX
    problems: list[str] = []
    for out in explore_both(data, tmp_path):
        problems += out.problems
        if not isinstance(out.error, UnsupportedMagicError) or out.error.position != len(PREFIX):
            problems.append(f"expected UnsupportedMagicError at {len(PREFIX)}, got {out}")
    _fail_on(problems)


def test_unknown_magic_inside_a_v1_wrapper(tmp_path: Path) -> None:
    inner = bytearray(legacy_message(0, 1))
    inner[16] = 3
    data = PREFIX + legacy_message(0, 1, attributes=int(Codec.GZIP), key=None, value=gzip.compress(fix_crc(inner)))
    problems: list[str] = []
    for out in explore_both(data, tmp_path):
        problems += out.problems
        if out.ok():
            problems.append(f"an inner message of magic 3 was accepted: {out}")
    _fail_on(problems)


CODEC_ID_CASES = [
    pytest.param(magic, cid, id=f"v{magic}-codec{cid}") for magic in (0, 1, 2) for cid in (5, 6, 7) + ((4,) if magic < 2 else ())
]


@pytest.mark.rule("R-V01-05", "R-ZSTD-02")
@pytest.mark.parametrize("magic,codec_id", CODEC_ID_CASES)
def test_unknown_codec_ids(magic: int, codec_id: int, tmp_path: Path) -> None:
    """Codec ids 5-7 (and zstd below magic 2) are UnsupportedCompressionError, located at the batch."""
    if magic == 2:
        hostile = v2_batch(GOOD, count=1, attributes=codec_id)
    else:
        hostile = legacy_message(0, magic, attributes=codec_id, key=None, value=b"\x00" * 20)
    data = PREFIX + hostile
    problems: list[str] = []
    for out in explore_both(data, tmp_path):
        problems += out.problems
        if not any(isinstance(e, UnsupportedCompressionError) for e in out.errors):
            problems.append(f"no UnsupportedCompressionError: {out}")
        for e in out.errors:
            if e.position != len(PREFIX):
                problems.append(f"{type(e).__name__} at {e.position}, the batch is at {len(PREFIX)}: {e.message}")
    _fail_on(problems)


# ==================================================================== garbage compressed data
_G = b"\x00garbage\xff" * 4
GARBAGE = {
    Codec.GZIP: [_G, b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + _G, gzip.compress(b"x" * 100)[:-9]],
    Codec.SNAPPY: [
        _G,
        b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01" + _G,
        b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01" + struct.pack(">i", len(_G)) + _G,
        b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01" + struct.pack(">i", -5) + _G,
    ],
    Codec.LZ4: [
        _G,
        b"\x04\x22\x4d\x18\x60\x40\x82" + struct.pack("<I", len(_G)) + _G + b"\0\0\0\0",
        b"\x04\x22\x4d\x18\x60\x40\x82" + struct.pack("<I", 2**31 - 1) + _G,
        lz4.frame.compress(b"x" * 100, block_linked=False)[:-6],
    ],
    Codec.ZSTD: [_G, b"\x28\xb5\x2f\xfd" + _G],
}
GARBAGE_CASES = [
    pytest.param(magic, codec, i, id=f"v{magic}-{codec.label}-{i}")
    for magic in (0, 1, 2)
    for codec, payloads in GARBAGE.items()
    if not (codec is Codec.ZSTD and magic < 2)
    for i in range(len(payloads))
]


@pytest.mark.rule("R-SNAPPY-03")
@pytest.mark.parametrize("magic,codec,index", GARBAGE_CASES)
def test_garbage_compressed_payload_is_a_decompression_error(magic: int, codec: Codec, index: int, tmp_path: Path) -> None:
    payload = GARBAGE[codec][index]
    if magic == 2:
        hostile = v2_batch(payload, count=1, attributes=int(codec))
    else:
        hostile = legacy_message(0, magic, attributes=int(codec), key=None, value=payload)
    data = PREFIX + hostile
    problems: list[str] = []
    for out in explore_both(data, tmp_path):
        problems += out.problems
        batch = next((b for b in out.batches if b.position == len(PREFIX)), None)
        if batch is None or batch.is_valid is not True:
            problems.append(f"the CRC-correct batch was not read as valid: {out}")
        if not any(isinstance(e, DecompressionError) and e.position == len(PREFIX) for e in out.errors):
            problems.append(f"no DecompressionError at {len(PREFIX)}: {out}")
    _fail_on(problems)


def test_random_garbage_files(tmp_path: Path) -> None:
    """Random bytes, and random bytes behind plausible headers: errors or tails only.

    (Only the defined codec ids here: ids 5-7 have their own test above.)"""
    rnd = random.Random(20261122)
    problems: list[str] = []
    for n in range(300):
        size = rnd.choice([0, 1, 16, 17, 18, 61, 62, 100, 500])
        junk = bytes(rnd.getrandbits(8) for _ in range(size))
        if n % 3 == 1:  # a plausible v2 header in front (sane length, magic 2, some codec)
            junk = v2_batch(junk, count=rnd.choice([0, 1, 5, BIG]), attributes=rnd.randrange(0, 5))
        elif n % 3 == 2:  # a plausible legacy message
            junk = legacy_message(rnd.randrange(0, 100), rnd.randrange(0, 2), attributes=rnd.randrange(0, 4), key=None, value=junk)
        problems += explore(junk, name=f"input {n}: ").problems
    _fail_on(problems)


# ========================================================================= decompression bombs
ZEROS_MB = bytes(1 << 20)


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    """Small payloads that decompress to 100 MB (gzip, zstd) or 16 MB (lz4, snappy) of zeros."""
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    zs = zstandard.ZstdCompressor(level=1).compressobj()
    lz = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
    snappy_block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    return {
        "gzip": b"".join(gz.compress(ZEROS_MB) for _ in range(100)) + gz.flush(),
        "zstd": b"".join(zs.compress(ZEROS_MB) for _ in range(100)) + zs.flush(),
        "lz4": lz.begin() + b"".join(lz.compress(ZEROS_MB) for _ in range(16)) + lz.flush(),
        "snappy": b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(snappy_block)) + snappy_block) * 512,
        "snappy-raw": bytes(cramjam.snappy.compress_raw(bytes(16 << 20))),
    }


BOMB_CASES = [
    pytest.param(2, "gzip", id="v2-gzip-100MB"),
    pytest.param(2, "zstd", id="v2-zstd-100MB"),
    pytest.param(2, "lz4", id="v2-lz4-16MB"),
    pytest.param(2, "snappy", id="v2-snappy-16MB"),
    pytest.param(2, "snappy-raw", id="v2-snappy-raw-16MB"),
    pytest.param(1, "gzip", id="v1-gzip-100MB"),
    pytest.param(0, "gzip", id="v0-gzip-100MB"),
    pytest.param(1, "lz4", id="v1-lz4-16MB"),
]


@pytest.mark.parametrize("magic,kind", BOMB_CASES)
def test_decompression_bomb_is_refused_within_bounds(magic: int, kind: str, bombs: dict[str, bytes]) -> None:
    codec = Codec.from_name(kind.split("-")[0])
    payload = bombs[kind]
    if magic == 2:
        hostile = v2_batch(payload, count=1, attributes=int(codec))
    else:
        hostile = legacy_message(0, magic, attributes=int(codec), key=None, value=payload)
    data = PREFIX + hostile
    limit = 1 << 20
    explore(PREFIX, max_decompressed_size=limit)
    tracemalloc.start()
    try:
        out = explore(data, max_decompressed_size=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    problems = list(out.problems)
    if not any(isinstance(e, DecompressionError) and e.position == len(PREFIX) for e in out.errors):
        problems.append(f"no DecompressionError at {len(PREFIX)}: {out}")
    if peak > 8 * limit + 2 * len(data):
        problems.append(f"peak allocation {peak} bytes with max_decompressed_size={limit} (input {len(data)} bytes)")
    _fail_on(problems)


def test_limit_is_not_hit_by_a_batch_just_under_it() -> None:
    """The bound refuses only what is over it: records totalling just under 1 MiB still decode."""
    b = RecordBatchBuilder(0, compression=Codec.GZIP)
    for i in range(15):
        b.append(T0, b"%d" % i, os.urandom(64 * 1024))
    data = b.build()
    out = explore(data, max_decompressed_size=1 << 20)
    assert out.ok() and not out.problems, out
    assert len(out.batches[0].records) == 15


def test_corrupt_record_error_is_the_base_of_format_errors() -> None:
    """The hierarchy the assertions above rely on (Kafka's CorruptRecordException family)."""
    for cls in (CrcMismatchError, DecompressionError, UnsupportedCompressionError, UnsupportedMagicError):
        assert issubclass(cls, CorruptRecordError) and issubclass(cls, KafkaLogError)
