"""The lz4 and snappy compressors give the JVM libraries' bytes (R-LZ4-07, R-SNAPPY-05, R-WR-11, R-WR-12).

Expected bytes are lz4-java's and snappy-java's own output for the inputs of
``tests/format/jdk/compress.in`` (``lz4.out``, ``snappy-write.out``; README.md there says how they
were made) and Kafka's own batches (golden/kafka/records). Both implementations of the block
compressors are held to them: the plain Python of :mod:`kafkalog.format.compressors` and the compiled
twin when it is built.
"""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from helpers import GOLDEN
from kafkalog import Codec, LogReader, fast
from kafkalog.format import compression, compressors
from kafkalog.format.compression import compress, decompress

JDK = Path(__file__).parent / "jdk"
RECORDS = GOLDEN / "kafka" / "records"
LZ4_LEVELS = [9, 1, 2, 5, 12, 17]  # the columns of lz4.out (JdkOracle.LZ4_LEVELS)


def _table(outputs: str) -> list[tuple[bytes, list[str]]]:
    ins = (JDK / "compress.in").read_text(encoding="ascii").split("\n")[:-1]
    outs = (JDK / outputs).read_text(encoding="ascii").split("\n")[:-1]
    assert len(ins) == len(outs) > 150
    rows = []
    for i, o in zip(ins, outs, strict=True):
        fields = o.split(" ")
        assert fields[0] == "ok", o[:80]
        rows.append((bytes.fromhex(i), fields[1:]))
    return rows


LZ4 = _table("lz4.out")
SNAPPY = _table("snappy-write.out")


def _implementations() -> Iterator[ModuleType]:
    yield compressors
    compiled = fast.compiled("_compress")  # None under KAFKALOG_NO_EXTENSIONS (conftest checks it loads otherwise)
    if compiled is not None:
        yield compiled


IMPLS = list(_implementations())


@pytest.fixture(params=IMPLS, ids=lambda m: "c-extension" if m is not compressors else "pure-python")
def impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """Each implementation of the block compressors, also plugged into :func:`compress`."""
    monkeypatch.setattr(compression, "_block", request.param)
    yield request.param


def _frame_blocks(frame: bytes) -> list[bytes]:
    """The stored bytes of each block of a Kafka lz4 frame (7-byte header, no checksums)."""
    out, pos = [], 7
    while True:
        (size,) = struct.unpack_from("<I", frame, pos)
        pos += 4
        if size == 0:
            assert pos == len(frame)
            return out
        out.append(frame[pos : pos + (size & 0x7FFFFFFF)])
        pos += size & 0x7FFFFFFF


@pytest.mark.rule("R-LZ4-07")
def test_lz4_blocks_are_lz4_javas(impl: ModuleType) -> None:
    for data, fields in LZ4:
        want = fields[0].split(":")
        got = [impl.lz4_block(data[i : i + 65536]).hex() for i in range(0, max(len(data), 1), 65536)]
        assert got == want, len(data)


@pytest.mark.rule("R-LZ4-01", "R-LZ4-02", "R-LZ4-07", "R-WR-12")
@pytest.mark.parametrize("level", LZ4_LEVELS)
def test_lz4_frames_carry_lz4_javas_blocks_at_each_level(impl: ModuleType, level: int) -> None:
    """Kafka's Lz4BlockOutputStream: the fast compressor at exactly 9, HC at every other level,
    a piece stored raw when its block is not smaller."""
    column = LZ4_LEVELS.index(level)
    checked = 0
    for data, fields in LZ4:
        if fields[column] == "-" or not data:
            continue
        want = [bytes.fromhex(b) for b in fields[column].split(":")]
        pieces = [data[i : i + 65536] for i in range(0, len(data), 65536)]
        want = [w if len(w) < len(p) else p for w, p in zip(want, pieces, strict=True)]
        assert _frame_blocks(compress(Codec.LZ4, data, level=level)) == want, len(data)
        checked += 1
    assert checked > 100


@pytest.mark.rule("R-SNAPPY-01", "R-SNAPPY-05")
def test_snappy_streams_are_snappy_javas(impl: ModuleType) -> None:
    for data, (stream, raw) in SNAPPY:
        assert compress(Codec.SNAPPY, data).hex() == stream, len(data)
        if raw != "-":  # over one 64 KiB fragment
            assert impl.snappy_raw(data).hex() == raw, len(data)


@pytest.mark.rule("R-WR-11", "R-LZ4-07", "R-SNAPPY-05")
@pytest.mark.parametrize("folder", sorted(p.name for p in RECORDS.iterdir() if "lz4" in p.name or "snappy" in p.name))
def test_kafkas_own_payloads_compress_to_kafkas_bytes(impl: ModuleType, folder: str) -> None:
    with LogReader(RECORDS / folder / "00000000000000000000.log") as r:
        payloads = [(b.magic, b.compression, b.data[61:] if b.magic == 2 else b.msg.value) for b in r.batches() if b.compression is not Codec.NONE]
    assert payloads
    for magic, codec, raw in payloads:
        assert compress(codec, decompress(codec, raw, magic=magic), magic=magic) == raw


@pytest.mark.rule("R-LZ4-07")
def test_lz4_refuses_what_kafka_never_compresses_in_one_block(impl: ModuleType) -> None:
    with pytest.raises(ValueError, match="65547"):
        impl.lz4_block(bytes(compressors.LZ4_64K_LIMIT))


@pytest.mark.parametrize("name", ["lz4_block", "snappy_raw"])
def test_compiled_and_plain_agree_on_odd_inputs(name: str) -> None:
    """Both paths agree beyond the tables: every length up to 300 of a few patterns, and buffers
    that are not bytes."""
    fns: list[Callable[[bytes], bytes]] = [getattr(m, name) for m in IMPLS]
    for n in range(300):
        for data in (bytes(n), bytes(range(256))[:n] * 2, (b"abcab" * 100)[:n], bytes((i * 7919) % 251 for i in range(n))):
            assert len({f(data) for f in fns}) == 1, (name, n)
    for f in fns:
        assert f(bytearray(b"xyzxyzxyzxyzxyzxyz")) == fns[0](b"xyzxyzxyzxyzxyzxyz")


def test_compress_runs_the_compiled_compressors_unless_disabled() -> None:
    """``import kafkalog`` plugs the compiled twins in (loaded on the first compression); with
    KAFKALOG_NO_EXTENSIONS set, or without the extension, the plain ones run."""
    code = (
        "import kafkalog; from kafkalog.format import compression as c; "
        "c.compress(kafkalog.Codec.SNAPPY, b'x' * 100); print(c._block.__name__)"
    )
    env = {k: v for k, v in os.environ.items() if k != "KAFKALOG_NO_EXTENSIONS"}
    plain = subprocess.run([sys.executable, "-c", code], env={**env, "KAFKALOG_NO_EXTENSIONS": "1"}, capture_output=True, text=True, check=True)
    assert plain.stdout.split() == ["kafkalog.format.compressors"]
    default = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    built = _built()
    assert default.stdout.split() == ["kafkalog.fast._compress" if built else "kafkalog.format.compressors"]


def _built() -> bool:
    """Whether the extension is importable, whatever this process's KAFKALOG_NO_EXTENSIONS says."""
    return importlib.util.find_spec("kafkalog.fast._compress") is not None
