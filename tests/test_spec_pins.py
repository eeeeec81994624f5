"""Points SPEC.md 1.0 pins (issue #21), each checked on Kafka-written files changed as the rule describes.

The expected lines are always Kafka's own dump of the unchanged file (golden/kafka/dump), adjusted
only where the change itself moves a byte position, a size or a CRC.
"""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
import zstandard

from helpers import GOLDEN, read_jsonl
from kafkalog.format.primitives import crc32c
from kafkalog.tools.dump import DumpOptions, dump

RECORDS = GOLDEN / "kafka" / "records"
KAFKA_DUMP = read_jsonl(GOLDEN / "kafka" / "dump" / "records.jsonl")


def _kafka(folder: str) -> list[dict]:
    """Kafka's objects for records/<folder>/00000000000000000000.log, with ``file`` as a lone dump names it."""
    out = []
    for o in KAFKA_DUMP:
        if o["file"] == f"{folder}/00000000000000000000.log":
            out.append({**o, "file": "00000000000000000000.log"})
    return out


def _entries(data: bytes) -> list[tuple[int, int]]:
    """(position, size) of every entry of a Kafka-written .log (12-byte header: offset, size)."""
    out, p = [], 0
    while p + 12 <= len(data):
        (size,) = struct.unpack_from(">i", data, p + 8)
        out.append((p, 12 + size))
        p += 12 + size
    return out


def _dump(path: Path) -> tuple[list[dict], list[str], str]:
    import json

    out, err = io.StringIO(), io.StringIO()
    result = dump([str(path)], DumpOptions(fmt="json"), out, err)
    return [json.loads(line) for line in out.getvalue().splitlines()], result.errors, err.getvalue()


def _v2_with_payload(batch: bytes, payload: bytes) -> bytes:
    """A magic 2 batch with its records area replaced, batchLength and CRC-32C made right again."""
    d = bytearray(batch[:61] + payload)
    struct.pack_into(">i", d, 8, len(d) - 12)
    struct.pack_into(">I", d, 17, crc32c(memoryview(d)[21:]))
    return bytes(d)


def _write(tmp_path: Path, data: bytes) -> Path:
    p = tmp_path / "00000000000000000000.log"
    p.write_bytes(data)
    return p


# ------------------------------------------------------------------------------ R-JSON-12, R-LOG-07
@pytest.mark.rule("R-JSON-12", "R-LOG-07")
def test_a_rejected_entry_keeps_the_lines_before_it_and_exits_1(tmp_path: Path) -> None:
    src = (RECORDS / "v2-none" / "00000000000000000000.log").read_bytes()
    (_p0, _s0), (p1, _s1) = _entries(src)[:2]
    bad = bytearray(src)
    bad[p1 + 16] = 3  # the second entry's magic
    path = _write(tmp_path, bytes(bad))
    kafka = _kafka("v2-none")
    before = kafka[: next(i for i, o in enumerate(kafka) if o["type"] == "batch" and o["position"] == p1)]
    got, errors, err = _dump(path)
    assert got == before, "only the entries before the bad magic are printed, exactly as Kafka reads them"
    assert errors and f"position {p1}" in err
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", str(path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and len(proc.stdout.splitlines()) == len(before)


# ---------------------------------------------------------------------------------------- R-LOG-08
@pytest.mark.rule("R-LOG-08")
def test_a_zero_filled_tail_is_a_corruption_not_a_torn_tail(tmp_path: Path) -> None:
    src = (RECORDS / "v2-none" / "00000000000000000000.log").read_bytes()
    path = _write(tmp_path, src + bytes(100))
    got, errors, err = _dump(path)
    assert got == _kafka("v2-none")
    assert errors and f"position {len(src)}" in err
    path.write_bytes(src + bytes(17))  # fewer than 18 bytes: R-LOG-03's torn tail
    got, errors, err = _dump(path)
    assert got == _kafka("v2-none") and not errors and "17 invalid bytes" in err


# ---------------------------------------------------------------------------------------- R-VAL-08
@pytest.mark.rule("R-VAL-08")
def test_offsets_are_reported_as_stored(tmp_path: Path) -> None:
    src = (RECORDS / "v2-none" / "00000000000000000000.log").read_bytes()
    (p0, s0), (p1, s1) = _entries(src)[:2]
    first = bytearray(src[p0 : p0 + s0])
    struct.pack_into(">i", first, 23, -1)  # lastOffsetDelta -1: last offset below the base offset
    struct.pack_into(">I", first, 17, crc32c(memoryview(first)[21:]))
    second = src[p1 : p1 + s1]
    path = _write(tmp_path, second + bytes(first))  # and the batches out of offset order
    got, errors, _err = _dump(path)
    assert not errors
    kafka = _kafka("v2-none")
    k0 = [o for o in kafka if o["type"] == "batch" and o["position"] == p0] + [
        o for o in kafka if o["type"] == "record" and o["batchBaseOffset"] == kafka[0]["baseOffset"]
    ]
    k1 = [o for o in kafka if o["type"] == "batch" and o["position"] == p1]
    k1 += [o for o in kafka if o["type"] == "record" and o["batchBaseOffset"] == k1[0]["baseOffset"]]
    want = [{**k1[0], "position": 0}, *k1[1:]]
    assert k0[0]["baseSequence"] == -1  # so the last sequence stays -1 (R-V2-17)
    want.append({**k0[0], "position": s1, "lastOffset": k0[0]["baseOffset"] - 1, "lastOffsetDelta": -1,
                 "crc": struct.unpack_from(">I", first, 17)[0]})
    want += k0[1:]
    assert got == want
    part = tmp_path / "t-0"  # ...while a validator reports the same data as errors (R-VFY-02)
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(path.read_bytes())
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "verify", str(part)], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "offsets-not-increasing" in proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------- R-V01-15
@pytest.mark.rule("R-V01-15")
def test_a_wrapper_key_is_ignored(tmp_path: Path) -> None:
    src = (RECORDS / "v1-gzip" / "00000000000000000000.log").read_bytes()
    p0, s0 = _entries(src)[0]
    msg = src[p0 : p0 + s0]
    assert msg[16] == 1 and msg[26:30] == b"\xff\xff\xff\xff"  # magic 1: keyLength at byte 26 of the entry, null
    body = msg[16:26] + struct.pack(">i", 3) + b"KEY" + msg[30:]
    keyed = msg[:8] + struct.pack(">i", len(body) + 4) + struct.pack(">I", zlib.crc32(body)) + body
    path = _write(tmp_path, keyed + src[p0 + s0 :])
    got, errors, _err = _dump(path)
    assert not errors
    kafka = _kafka("v1-gzip")
    assert len(got) == len(kafka)
    for g, k in zip(got, kafka, strict=True):
        if k["type"] == "record":
            assert g == k
        elif k["position"] == p0:
            assert g == {**k, "sizeInBytes": k["sizeInBytes"] + 3, "crc": zlib.crc32(body)}
        else:
            assert g == {**k, "position": k["position"] + 3}


# --------------------------------------------------------------------------------------- R-ZSTD-04
def _first_zstd_batch() -> tuple[bytes, bytes]:
    src = (RECORDS / "v2-zstd" / "00000000000000000000.log").read_bytes()
    p0, s0 = _entries(src)[0]
    batch = src[p0 : p0 + s0]
    return batch, zstandard.ZstdDecompressor().decompressobj().decompress(batch[61:])


@pytest.mark.rule("R-ZSTD-04")
def test_zstd_checksums_are_verified_and_bytes_after_a_frame_rejected(tmp_path: Path) -> None:
    batch, plain = _first_zstd_batch()
    kafka = _kafka("v2-zstd")
    kafka_first = [kafka[0]] + [o for o in kafka[1:] if o["type"] == "record" and o["batchBaseOffset"] == kafka[0]["baseOffset"]]
    with_sum = zstandard.ZstdCompressor(write_checksum=True).compress(plain)
    good = _v2_with_payload(batch, with_sum)
    got, errors, _ = _dump(_write(tmp_path, good))
    assert not errors and got[1:] == kafka_first[1:]
    broken = bytearray(with_sum)
    broken[-1] ^= 0xFF
    _, errors, _ = _dump(_write(tmp_path, _v2_with_payload(batch, bytes(broken))))
    assert errors, "a wrong content checksum must be rejected"
    skippable = struct.pack("<II", 0x184D2A50, 4) + b"skip"
    got, errors, _ = _dump(_write(tmp_path, _v2_with_payload(batch, batch[61:] + skippable)))
    assert not errors and got[1:] == kafka_first[1:]
    _, errors, _ = _dump(_write(tmp_path, _v2_with_payload(batch, batch[61:] + b"junk")))
    assert errors, "bytes after the frame that are no frame must be rejected"
