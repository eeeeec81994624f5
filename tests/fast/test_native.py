"""The decompression loop (codec C functions called through kafkalog.fast.native: the extension
kafkalog.fast._native, or cramjam, zstandard and zlib on the pure-Python path) gives the same columns, and
the same errors, as the per-batch path through kafkalog.format.compression; the helpers and the
CRC-32C match the libraries on both paths."""

from __future__ import annotations

import gzip
import json
import os
import random
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path

import lz4.block
import lz4.frame
import numpy as np
import pyarrow as pa
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalog import Codec, ControlType, KafkaLogError, LogReader, RecordBatchBuilder, fast
from kafkalog.fast import columnar, native
from kafkalog.fast.arrow import to_arrow
from kafkalog.format.compression import compress, decompress
from kafkalog.format.primitives import crc32c

NATIVE = {"lz4": native.NATIVE_LZ4, "zstd": native.NATIVE_ZSTD, "gzip": native.NATIVE_GZIP}
#: The codecs the loop decompresses, and the flag of kafkalog.fast.native that turns each on.
LOOP_CODECS = {Codec.LZ4: "LZ4", Codec.ZSTD: "ZSTD", Codec.GZIP: "GZIP"}


def _in_loop(codec: Codec) -> bool:
    """Whether the loop decompresses ``codec`` (on the extension, its library was found)."""
    return codec in LOOP_CODECS and bool(getattr(native, LOOP_CODECS[codec]))


def _batch(base: int, codec: Codec, values: list[bytes], headers: bool = False) -> bytes:
    b = RecordBatchBuilder(base, compression=codec)
    for i, v in enumerate(values):
        b.append(1_700_000_000_000 + i, b"key-%d" % i, v, [("h", b"x" * i)] if headers else [])
    return b.build()


def _rebatch(batch: bytes, payload: bytes, count: int | None = None) -> bytes:
    """``batch`` with its record area replaced (and its record count, if given); size and CRC fixed up."""
    out = bytearray(batch[:61] + payload)
    struct.pack_into(">i", out, 8, len(out) - 12)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
    struct.pack_into(">I", out, 17, crc32c(bytes(out[21:])))
    return bytes(out)


def _outcome(data: bytes, use_loop: bool, monkeypatch: pytest.MonkeyPatch, **kw: int) -> tuple[object, int]:
    """(the Arrow table, or the error's type, text and location; batches the codec module decompressed),
    with the compiled loop on or off."""
    for flag in LOOP_CODECS.values():
        monkeypatch.setattr(native, flag, use_loop and getattr(native, flag))
    calls = []
    inflate_batch = columnar._inflate_batch

    def spy(*args: object) -> object:
        calls.append(args[3])
        return inflate_batch(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(columnar, "_inflate_batch", spy)
    max_size = kw.pop("max_decompressed_size", 1 << 28)
    try:
        with LogReader(data, name="x.log", max_decompressed_size=max_size) as r:
            got: object = pa.Table.from_batches(list(to_arrow(r, include_headers=True, **kw)))
    except KafkaLogError as e:
        got = (type(e).__name__, str(e), e.file, e.position, e.offset)
    finally:
        monkeypatch.undo()
    return got, len(calls)


def _same(data: bytes, monkeypatch: pytest.MonkeyPatch, **kw: int) -> tuple[object, int, int]:
    """Decode ``data`` both ways and check that they agree: (outcome, codec-module calls with the loop, without)."""
    fast, fast_calls = _outcome(data, True, monkeypatch, **kw)
    slow, slow_calls = _outcome(data, False, monkeypatch, **kw)
    if isinstance(fast, pa.Table):
        assert isinstance(slow, pa.Table) and fast.equals(slow)
    else:
        assert fast == slow
    return fast, fast_calls, slow_calls


def _values(rnd: random.Random, n: int, size: int) -> list[bytes]:
    """Text-like values (compressible) with some random ones (incompressible: stored lz4 blocks)."""
    words = [b"alpha", b"beta", b"gamma", b"delta", b"%d" % rnd.randint(0, 99)]
    return [rnd.randbytes(size) if rnd.random() < 0.3 else b" ".join(rnd.choice(words) for _ in range(size // 5))[:size] for _ in range(n)]


def _log(codec: Codec, seed: int = 0) -> tuple[bytes, list[bytes]]:
    """A log of Kafka-framed batches: small, multi-block (over 64 KiB, incompressible parts stored), one emptied."""
    rnd = random.Random(seed)
    batches = [
        _batch(0, codec, _values(rnd, 100, 100)),
        _batch(100, codec, _values(rnd, 40, 5000), headers=True),  # ~200 KB: several lz4 blocks, some stored
        _rebatch(_batch(140, codec, [b"v"]), b"", count=0),  # a batch the cleaner emptied
        _batch(141, codec, _values(rnd, 1000, 100)),
        _batch(1141, codec, [rnd.randbytes(70_000)]),  # one incompressible record: stored blocks only
    ]
    return b"".join(batches), batches


@pytest.mark.parametrize("codec", list(LOOP_CODECS))
@pytest.mark.parametrize("max_bytes", [1 << 10, 300_000, 8 << 20])
def test_loop_matches_per_batch_path(codec: Codec, max_bytes: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data, batches = _log(codec)
    got, fast_calls, slow_calls = _same(data, monkeypatch, max_bytes=max_bytes, max_rows=700)
    assert isinstance(got, pa.Table) and got.num_rows == 100 + 40 + 1000 + 1
    with LogReader(data) as r:
        want = [(rec.offset, rec.key, rec.value) for b in r.batches() for rec in b]
    assert list(zip(got.column("offset").to_pylist(), got.column("key").to_pylist(), got.column("value").to_pylist(), strict=True)) == want
    assert slow_calls == len(batches) - 1  # the emptied batch is not decompressed on either path
    assert fast_calls == (0 if _in_loop(codec) else slow_calls)  # every batch decompressed by the loop (test_bound_... checks it is on)


def test_lz4_frame_is_walked_in_the_loop() -> None:
    """The payloads of the test log do hold multiple, compressed and stored lz4 blocks."""
    _, batches = _log(Codec.LZ4)
    kinds = []
    for b in batches[1:2] + batches[4:]:
        pos = 61 + 7
        while (size := struct.unpack_from("<I", b, pos)[0]) != 0:
            kinds.append(bool(size & 0x80000000))
            pos += 4 + (size & 0x7FFFFFFF)
    assert len(kinds) >= 4 and True in kinds and False in kinds


def _other_lz4_frames(plain: bytes) -> list[bytes]:
    """Valid lz4 frames that Kafka does not write (the codec module reads or refuses them)."""
    return [
        lz4.frame.compress(plain, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, store_size=True),
        lz4.frame.compress(plain, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=True),
        lz4.frame.compress(plain, block_size=lz4.frame.BLOCKSIZE_MAX256KB, block_linked=False, store_size=False),
        lz4.frame.compress(plain, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=True, store_size=False),
    ]


def test_other_lz4_headers_take_the_codec_module(monkeypatch: pytest.MonkeyPatch) -> None:
    rnd = random.Random(1)
    kafka = _batch(0, Codec.LZ4, _values(rnd, 300, 1000))
    plain = decompress(Codec.LZ4, kafka[61:])
    for i, frame in enumerate(_other_lz4_frames(plain)):
        data = _batch(0, Codec.LZ4, [b"a"]) + _rebatch(kafka, frame) + _batch(0, Codec.LZ4, [b"b"])
        got, fast_calls, slow_calls = _same(data, monkeypatch)
        assert fast_calls == 1 and slow_calls == (3 if i < 3 else 2), i
        if i < 3:
            assert isinstance(got, pa.Table) and got.num_rows == 302
        else:
            assert "linked" in str(got)


def test_zstd_frames_of_every_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Concatenated frames, frames with and without content size, a skippable frame, a checksum."""
    rnd = random.Random(2)
    kafka = _batch(0, Codec.ZSTD, _values(rnd, 300, 1000))
    plain = decompress(Codec.ZSTD, kafka[61:])
    half = len(plain) // 2
    with_size = zstandard.ZstdCompressor(write_content_size=True, write_checksum=True)
    skippable = struct.pack("<II", 0x184D2A50, 5) + b"12345"
    frames = [
        compress(Codec.ZSTD, plain[:half]) + compress(Codec.ZSTD, plain[half:]),
        with_size.compress(plain),
        with_size.compress(plain[:10]) + compress(Codec.ZSTD, plain[10:]),
        skippable + compress(Codec.ZSTD, plain),
    ]
    for i, frame in enumerate(frames):
        data = _batch(0, Codec.ZSTD, [b"a"]) + _rebatch(kafka, frame)
        got, fast_calls, _ = _same(data, monkeypatch)
        assert isinstance(got, pa.Table) and got.num_rows == 301, (i, got)
        if native.ZSTD:
            assert fast_calls == 0, i


def _lz4_variants(kafka: bytes) -> list[bytes]:
    """Damaged Kafka lz4 frames: every kind of irregularity the loop checks for."""
    p = kafka[61:]
    first = struct.unpack_from("<I", p, 7)[0] & 0x7FFFFFFF
    out = [
        p[:7] + struct.pack("<I", 0x10001) + p[11:],  # block larger than 64 KiB
        p[:7] + struct.pack("<I", len(p)) + p[11:],  # block past the payload
        p[:7] + struct.pack("<I", 0x80000000 | len(p)) + p[11:],  # stored block past the payload
        p[:-4],  # no end mark
        p[: 11 + first] + b"\x00\x00",  # block size cut
        p[:7] + struct.pack("<I", 0x80000000 | first) + p[11:],  # a compressed block declared stored
        p[:7] + struct.pack("<I", 5) + b"\xff" * 5 + struct.pack("<I", 0),  # a bad block
        p[:3],
        b"",
    ]
    return out


def _gzip_variants(p: bytes) -> list[bytes]:
    """Kafka's gzip payload ``p`` framed otherwise: members the codec module reads (several, with a
    name, with a right header CRC) and ones it refuses (bytes after a member, a wrong header CRC,
    a cut trailer, a wrong ISIZE or CRC-32)."""
    plain = decompress(Codec.GZIP, p)
    named = gzip.compress(plain[:100], mtime=0)
    named = named[:3] + b"\x08" + named[4:10] + b"name\x00" + named[10:]  # FLG.FNAME
    header = bytearray(p[:10])
    header[3] = 0x02  # FLG.FHCRC: the low 16 bits of the header's CRC-32 follow it
    right = bytes(header) + struct.pack("<H", zlib.crc32(bytes(header)) & 0xFFFF) + p[10:]
    wrong = bytes(header) + struct.pack("<H", ~zlib.crc32(bytes(header)) & 0xFFFF) + p[10:]
    return [
        compress(Codec.GZIP, plain[:1000]) + compress(Codec.GZIP, plain[1000:]),
        named + compress(Codec.GZIP, plain[100:]),
        right,
        wrong,
        p + b"\x00",
        p + b"\x1f\x8b\x08",
        p[:-8] + struct.pack("<II", zlib.crc32(plain), len(plain) + 1),
        p[:-8] + struct.pack("<II", zlib.crc32(plain) ^ 1, len(plain)),
    ]


def _damaged(codec: Codec, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    kafka = _batch(10, codec, _values(rnd, 60, 2500))  # ~150 KB: several lz4 blocks
    p = kafka[61:]
    payloads = [p[:k] for k in sorted({0, 1, 4, 6, 7, 10, 11, 20, len(p) // 2, len(p) - 5, len(p) - 1})]
    for _ in range(25):
        q = bytearray(p)
        k = rnd.randrange(len(q)) if rnd.random() < 0.5 else rnd.randrange(min(len(q), 40))
        q[k] ^= 1 << rnd.randrange(8)
        payloads.append(bytes(q))
    if codec is Codec.LZ4:
        payloads += _lz4_variants(kafka)
    elif codec is Codec.ZSTD:
        payloads += [b"\x28\xb5\x2f\xfd garbage", p + b"\x00", p + p[:5], p + b"\x28\xb5\x2f\xfd"]
    else:
        payloads += _gzip_variants(p)
    out = [_rebatch(kafka, q) for q in payloads]
    out += [_rebatch(kafka, p, count=c) for c in (61, 1 << 20, 2**31 - 1)]  # count over the records, over the bytes
    return out


@pytest.mark.parametrize("codec", list(LOOP_CODECS))
@pytest.mark.parametrize("seed", range(3))
def test_damaged_payloads_raise_the_same_errors(codec: Codec, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    good = _batch(0, codec, [b"first"] * 10)
    errors = 0
    for i, bad in enumerate(_damaged(codec, seed)):
        got, _, _ = _same(good + bad + good, monkeypatch)
        errors += not isinstance(got, pa.Table)
        if not isinstance(got, pa.Table):
            assert got[2:4] == ("x.log", len(good)), (i, got)
    assert errors >= 15


@pytest.mark.parametrize("codec", list(LOOP_CODECS))
def test_decompressed_size_bound_is_the_same(codec: Codec, monkeypatch: pytest.MonkeyPatch) -> None:
    data, batches = _log(codec)
    plain = [len(decompress(codec, b[61:])) for b in batches if len(b) > 61]
    for limit in (min(plain) - 1, plain[1] - 1, plain[1], 1 << 16, max(plain)):
        got, _, _ = _same(data, monkeypatch, max_decompressed_size=limit)
        if limit < max(plain):
            assert "more than" in got[1], (limit, got)  # type: ignore[index]
        else:
            assert isinstance(got, pa.Table)


@pytest.mark.parametrize("codec", list(LOOP_CODECS))
def test_buffer_growth_resumes(codec: Codec, monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches larger than the chunk's buffer (a fresh thread starts with none) grow it and resume."""
    rnd = random.Random(3)
    data = b"".join(_batch(i * 10, codec, _values(rnd, 10, 300_000)) for i in range(4))
    result: list[tuple[object, int, int]] = []
    t = threading.Thread(target=lambda: result.append(_same(data, monkeypatch, max_bytes=1 << 30)))
    t.start()
    t.join()
    got, fast_calls, _ = result[0]
    assert isinstance(got, pa.Table) and got.num_rows == 40 and fast_calls == 0


def test_every_codec_and_a_marker_in_one_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of every codec, and an uncompressed one (as a transaction marker sits between a
    transactional topic's compressed batches), decompressed by one call of the loop."""
    rnd = random.Random(4)
    codecs = [Codec.LZ4, Codec.GZIP, Codec.ZSTD, Codec.SNAPPY, Codec.LZ4]
    batches = [_batch(i * 100 + (i == 4), c, _values(rnd, 100, 100)) for i, c in enumerate(codecs)]
    marker = RecordBatchBuilder(400, producer_id=7, producer_epoch=0, is_transactional=True, is_control=True)
    marker.append_end_txn_marker(ControlType.COMMIT, 0, 2000)
    batches.insert(4, marker.build())
    got, fast_calls, slow_calls = _same(b"".join(batches), monkeypatch, include_control=True)
    assert isinstance(got, pa.Table) and got.num_rows == 501
    assert fast_calls == sum(not _in_loop(c) for c in codecs) and slow_calls == 5  # the marker is copied by the loop either way


@pytest.mark.parametrize("loop", [True, False])
def test_threads_decode_zstd_each_with_its_context(loop: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Threads decoding at once (as the Spark source does) each use their own zstd context, in the
    loop and in the codec module (a shared zstandard decompressor reports corruption in good data)."""
    monkeypatch.setattr(native, "ZSTD", loop and native.ZSTD)
    data, _ = _log(Codec.ZSTD)
    with LogReader(data) as r:
        want = pa.Table.from_batches(list(to_arrow(r)))
    got: list[pa.Table] = []
    contexts: set[int] = set()
    alive = threading.Barrier(4)  # all threads hold their context at once (a freed one's address may be reused)

    def run() -> None:
        try:
            for _ in range(5):
                with LogReader(data) as r:
                    got.append(pa.Table.from_batches(list(to_arrow(r))))
        finally:
            contexts.add(native.zstd_dctx().address)
            alive.wait(timeout=60)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 20 and all(t.equals(want) for t in got)
    if native.ZSTD and native.NATIVE_ZSTD:
        assert len(contexts) == 4 and 0 not in contexts


@pytest.fixture(params=["c-extension", "pure-python"])
def helpers(request: pytest.FixtureRequest) -> tuple:
    """(lz4_block, zstd_frames, crc32c, a zstd context) of one path: the extension's (which must be
    built unless KAFKALOG_NO_EXTENSIONS turns it off) or the plain Python twins."""
    if request.param == "pure-python":
        return native._plain_lz4_block, native._plain_zstd_frames, native._plain_crc32c, native._PlainDCtx()
    if native._native is None:
        if fast.DISABLED:
            pytest.skip("KAFKALOG_NO_EXTENSIONS is set")
        pytest.fail("kafkalog.fast._native is not built (pip install -e . builds it)")
    return native._native.lz4_block, native._native.zstd_frames, native._native.crc32c, native._native.DCtx()


def test_helpers_match_the_codec_libraries(helpers: tuple) -> None:
    """lz4_block and zstd_frames against lz4.block and zstandard, on both paths."""
    lz4_block, zstd_frames, _crc, ctx = helpers
    if zstd_frames is not native._plain_zstd_frames and not native.NATIVE_ZSTD:
        pytest.skip("no system libzstd: the zstd loop is off, by design")
    plain = b"".join(b"record %d of many; " % i for i in range(3000))
    block = lz4.block.compress(plain[:60000], store_size=False)
    src = np.frombuffer(b"..." + block, np.uint8)
    dst = np.zeros(70000, np.uint8)
    assert lz4_block(src, 3, len(block), dst, 5, 65536) == 60000
    assert dst[5:60005].tobytes() == plain[:60000]
    assert lz4_block(src, 3, len(block), dst, 5, 1000) == native.BAD  # too little room is a bad block
    assert lz4_block(src, 3, len(block) - 9, dst, 5, 65536) == native.BAD
    frames = compress(Codec.ZSTD, plain[:7]) + zstandard.ZstdCompressor().compress(plain[7:])
    src = np.frombuffer(frames, np.uint8)
    dst = np.zeros(len(plain) + 10, np.uint8)
    assert zstd_frames(ctx, src, 0, len(frames), dst, 10, len(plain)) == len(plain)
    assert dst[10:].tobytes() == plain
    assert zstd_frames(ctx, src, 0, len(frames), dst, 10, len(plain) - 1) == native.ROOM
    # a payload ending inside a frame: bad for libzstd, and for the plain helper, which checks that
    # the last frame is complete as the codec module does
    cut = zstd_frames(ctx, src, 0, len(frames) - 1, dst, 10, len(plain))
    assert cut == native.BAD
    assert zstd_frames(ctx, src, 0, 0, dst, 10, len(plain)) == 0


@pytest.mark.parametrize("path", ["c-extension", "pure-python"])
def test_gzip_helper_matches_the_codec_module(path: str) -> None:
    """gzip_members against the codec module on two members as Kafka writes them: the size and
    bytes, ROOM for one byte too little room, BAD for a cut payload or a span outside dst."""
    if path == "pure-python":
        gzip_members, ctx = native._plain_gzip_members, native._PlainDCtx()
    elif native._native is None:
        pytest.skip("the extension is not built or is off")
    else:
        gzip_members, ctx = native._native.gzip_members, native.zstd_dctx()
        if not native.NATIVE_GZIP:
            pytest.fail("the deflate package's libdeflate was not found (it is a base dependency)")
    plain = b"".join(b"record %d of many; " % i for i in range(5000))
    payload = compress(Codec.GZIP, plain[:40_000]) + compress(Codec.GZIP, plain[40_000:])
    want = decompress(Codec.GZIP, payload)
    src = np.frombuffer(b"..." + payload, np.uint8)
    dst = np.zeros(len(want) + 10, np.uint8)
    assert gzip_members(ctx, src, 3, len(payload), dst, 10, len(want)) == len(want)
    assert dst[10:].tobytes() == want
    assert gzip_members(ctx, src, 3, len(payload), dst, 10, len(want) - 1) == native.ROOM
    # a cut member fills what room it is given (libdeflate reads zeros past the end): ROOM while the
    # room is below the size its last 4 bytes declare; the loop grows, then hands it over
    assert gzip_members(ctx, src, 3, len(payload) - 1, dst, 10, len(want)) in (native.BAD, native.ROOM)
    assert gzip_members(ctx, src, 3, len(payload) - 9, dst, 10, len(want)) == native.BAD
    assert gzip_members(ctx, src, 3, len(payload), dst, 11, len(want)) == native.BAD  # past dst
    assert gzip_members(ctx, src, 3, 0, dst, 10, len(want)) == native.BAD


def test_helpers_check_every_span(helpers: tuple) -> None:
    """A span outside its buffer is a bad block (decompression) or a ValueError (CRC), never a read
    or write past the buffer."""
    lz4_block, zstd_frames, crc, ctx = helpers
    block = lz4.block.compress(b"x" * 1000, store_size=False)
    src = np.frombuffer(block, np.uint8)
    dst = np.zeros(1000, np.uint8)
    assert lz4_block(src, 0, len(block), dst, 0, 1000) == 1000
    for args in ((0, len(block) + 1, 0, 1000), (-1, len(block), 0, 1000), (0, len(block), 1, 1000), (0, len(block), 0, 1001), (0, -1, 0, 10)):
        assert lz4_block(src, args[0], args[1], dst, args[2], args[3]) == native.BAD, args
    frame = np.frombuffer(zstandard.ZstdCompressor().compress(b"y" * 100), np.uint8)
    assert zstd_frames(ctx, frame, 0, len(frame) + 1, dst, 0, 100) == native.BAD
    assert zstd_frames(ctx, frame, 0, len(frame), dst, 950, 100) == native.BAD
    data = np.frombuffer(b"123456789", np.uint8)
    assert crc(data, 0, 9) == 0xE3069283  # CRC-32C's check value (RFC 3720, appendix B.4)
    for pos, size in ((0, 10), (-1, 3), (5, -1)):
        with pytest.raises(ValueError):
            crc(data, pos, size)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=0, max_value=20))
def test_own_crc32c_matches_the_crc32c_package(data: bytes, cut: int) -> None:
    """The compiled core's CRC-32C (small batches' CRCs in the format layer) against the crc32c
    package, at every alignment; and the format layer's crc32c whichever it uses."""
    import crc32c as package

    from kafkalog.format import primitives

    if native._native is None:
        pytest.skip("the extension is not built or is off")
    view = memoryview(data)[min(cut, len(data)) :]
    assert native._native.crc32c_of(view) == package.crc32c(bytes(view)) == primitives.crc32c(view)


def test_format_crc32c_takes_large_buffers_to_the_package() -> None:
    """Buffers of 64 KiB and more go to the crc32c package (faster there); both give Kafka's CRC."""
    import crc32c as package

    from kafkalog.format import primitives

    data = bytes(range(256)) * 1024
    assert primitives.crc32c(data) == package.crc32c(data)
    if native._native is not None:
        assert native._native.crc32c_of(data) == package.crc32c(data)


def test_bound_when_the_libraries_export_them() -> None:
    """With the extension, both C functions are found here (python-lz4 exports LZ4_decompress_safe; libzstd is installed)."""
    if native._native is None:
        assert not (native.NATIVE_LZ4 or native.NATIVE_ZSTD) and native.LZ4 and native.ZSTD
        return
    import ctypes.util

    if ctypes.util.find_library("zstd") is None:
        pytest.skip("no system libzstd: the zstd loop is off, by design")
    assert native.NATIVE_LZ4 and native.NATIVE_ZSTD and native.LZ4 and native.ZSTD and native.NATIVE_CRC


_PLAIN = """
import json, sys
sys.path.insert(0, sys.argv[2])
import pytest
from kafkalog import fast
from kafkalog.fast import columnar, native
import test_native as t
assert native._native is None and not native.NATIVE_LZ4 and native.LZ4
mp = pytest.MonkeyPatch()
out = []
for codec in (t.Codec.LZ4, t.Codec.ZSTD):
    good = t._batch(0, codec, [b"first"] * 10)
    for bad in t._damaged(codec, 0)[::3] + [t._log(codec)[0]]:
        got, fast, slow = t._same(good + bad, mp)
        out.append(got.to_pylist() if hasattr(got, "to_pylist") else list(got))
json.dump(out, open(sys.argv[1], "w"), default=repr)
"""


def test_plain_python_loop_matches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop run as plain Python (KAFKALOG_NO_EXTENSIONS=1: cramjam and zstandard in place of the C calls) agrees too."""
    env = dict(os.environ, KAFKALOG_NO_EXTENSIONS="1")
    subprocess.run([sys.executable, "-c", _PLAIN, str(tmp_path / "plain.json"), str(Path(__file__).parent)], check=True, env=env)
    plain = json.loads((tmp_path / "plain.json").read_text())
    ours = []
    for codec in (Codec.LZ4, Codec.ZSTD):
        good = _batch(0, codec, [b"first"] * 10)
        for bad in _damaged(codec, 0)[::3] + [_log(codec)[0]]:
            got, _, _ = _same(good + bad, monkeypatch)
            ours.append(got.to_pylist() if isinstance(got, pa.Table) else list(got))
    assert plain == json.loads(json.dumps(ours, default=repr))
    assert len(plain) > 20


_MISSING = """
import ctypes, sys
real = ctypes.CDLL

class Hidden(real):
    def __init__(self, name, *args, **kwargs):
        if "zstd" in str(name) or "_block" in str(name):
            raise OSError("hidden for the test")
        super().__init__(name, *args, **kwargs)

ctypes.CDLL = Hidden
import pyarrow as pa
from kafkalog import LogReader
from kafkalog import fast
from kafkalog.fast import columnar, native
from kafkalog.fast.arrow import to_arrow
assert native._native is not None and not (native.NATIVE_LZ4 or native.NATIVE_ZSTD or native.LZ4 or native.ZSTD)
with LogReader(open(sys.argv[1], "rb").read()) as r:
    rows = pa.Table.from_batches(list(to_arrow(r, include_headers=True))).to_pylist()
print(len(rows), sum(len(x["value"] or b"") for x in rows))
"""


def test_missing_libraries_leave_the_per_batch_path(tmp_path: Path) -> None:
    """Without the C functions (hidden here), nothing is bound and every batch goes through the
    codec module: same rows."""
    if native._native is None:
        pytest.skip("the extension is not built or is off: nothing is bound in the first place")
    data = _log(Codec.LZ4)[0] + _log(Codec.ZSTD, seed=1)[0]
    (tmp_path / "x.log").write_bytes(data)
    out = subprocess.run([sys.executable, "-c", _MISSING, str(tmp_path / "x.log")], check=True, capture_output=True, text=True).stdout.split()
    with LogReader(data) as r:
        rows = [rec for b in r.batches() for rec in b]
    assert out == [str(len(rows)), str(sum(len(x.value or b"") for x in rows))]
