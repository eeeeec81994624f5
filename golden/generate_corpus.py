#!/usr/bin/env python3
"""Build the conformance corpus golden/corpus/ from the Kafka-written files in golden/kafka and golden/real.

Good cases copy one Kafka-written folder (or one partition of a real broker's data dir) and take
``expected.jsonl`` from Kafka's own dumps (golden/kafka/dump, golden/real/expected), with only the
``file`` paths made relative to the case folder. Bad cases apply one deliberate corruption to a
golden file; ``expected.json`` states the finding a conforming reader or validator must report,
with the byte position and offset taken from the corruption applied here and from Kafka's dump of
the original file. Nothing here imports kafkalog: CRCs are recomputed with the ``crc32c`` package
and the lz4 header checksum with the small xxHash32 below.

Writer cases (``writer/``, SPEC §8.3) are copied from ``--writer-from`` (Kafka's own writer cases,
../shared/golden-kafka/writer; by default the copies already in golden/corpus/writer are kept) and two
are made from the cleaner's input and output directories in golden/kafka/logdir.

Usage: python golden/generate_corpus.py [--out DIR] [--writer-from DIR]   (default: golden/corpus, replaced whole)
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

GOLDEN = Path(__file__).resolve().parent
KAFKA = GOLDEN / "kafka"
REAL = GOLDEN / "real"

# R-JSON-03: the files a canonical dump covers (tiered-storage ids are not used in golden/)
DUMPED = re.compile(r"^(\d{20}\.(log|index|timeindex|txnindex|snapshot)|leader-epoch-checkpoint|partition\.metadata)$")

SEG0 = "00000000000000000000"


# ------------------------------------------------------------------------------------ helpers
def dumps(obj: dict) -> str:
    """One canonical JSON line (R-JSON-01): no whitespace, non-ASCII as itself, key order kept."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def kafka_lines(source: Path, prefix: str) -> list[dict]:
    """Kafka's dump lines for the files under ``prefix`` (a folder name), with ``file`` made relative to it."""
    opener = gzip.open if source.suffix == ".gz" else open
    out = []
    with opener(source, "rt", encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            obj = json.loads(line)
            if dumps(obj) != line:  # the re-encoding must not change anything but the path
                raise SystemExit(f"{source}: a line does not survive re-encoding: {line[:80]}")
            if obj["file"].startswith(prefix + "/"):
                obj["file"] = obj["file"][len(prefix) + 1 :]
                out.append(obj)
    if not out:
        raise SystemExit(f"{source}: no lines for {prefix}/")
    return out


def write_jsonl(path: Path, objs: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for o in objs:
            f.write(dumps(o) + "\n")


def write_json(path: Path, obj: dict) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def batch_at(lines: list[dict], file: str, position: int) -> dict:
    """The ``batch`` object Kafka's dump gives for the entry at ``position`` of ``file``."""
    for o in lines:
        if o["file"] == file and o["type"] == "batch" and o["position"] == position:
            return o
    raise SystemExit(f"no batch at {file}:{position} in Kafka's dump")


def batches_of(lines: list[dict], file: str) -> list[dict]:
    return [o for o in lines if o["file"] == file and o["type"] == "batch"]


def lines_before(lines: list[dict], file: str, position: int) -> list[dict]:
    """Kafka's lines of ``file`` for the entries that start before ``position`` (batch and its records)."""
    out, keep = [], True
    for o in lines:
        if o["file"] != file:
            out.append(o)
            continue
        if o["type"] == "batch":
            keep = o["position"] < position
        if keep:
            out.append(o)
    return out


def recrc_v2(data: bytearray, pos: int) -> None:
    """Store the CRC-32C of a magic 2 batch at ``pos`` over its bytes from ``attributes`` on (R-PRIM-07)."""
    size = int.from_bytes(data[pos + 8 : pos + 12], "big", signed=True)
    end = pos + 12 + size
    data[pos + 17 : pos + 21] = crc32c.crc32c(bytes(data[pos + 21 : end])).to_bytes(4, "big")


def xxh32_small(data: bytes, seed: int = 0) -> int:
    """xxHash32 of fewer than 16 bytes (enough for an lz4 frame descriptor, R-LZ4-03)."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    m = 0xFFFFFFFF
    assert len(data) < 16

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & m

    h = (seed + p5 + len(data)) & m
    i = 0
    while i + 4 <= len(data):
        h = rotl((h + int.from_bytes(data[i : i + 4], "little") * p3) & m, 17) * p4 & m
        i += 4
    while i < len(data):
        h = rotl((h + data[i] * p5) & m, 11) * p1 & m
        i += 1
    h ^= h >> 15
    h = h * p2 & m
    h ^= h >> 13
    h = h * p3 & m
    h ^= h >> 16
    return h


def zstd_rle_frame(total: int, byte: int = 0) -> bytes:
    """A Zstandard frame (RFC 8878) of RLE blocks that decompresses to ``total`` copies of ``byte``.

    No content size (as Kafka writes, R-ZSTD-01), window 128 KiB, 4 bytes per 128 KiB block."""
    block = 128 * 1024
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")  # magic, descriptor (no FCS, no checksum), window 2^17
    left = total
    while left > 0:
        n = min(block, left)
        left -= n
        header = (1 if left == 0 else 0) | (1 << 1) | (n << 3)  # last-block bit, type RLE, size
        out += header.to_bytes(3, "little") + bytes([byte])
    return bytes(out)


# -------------------------------------------------------------------------------- good cases
@dataclass
class Good:
    name: str
    source: Path  # folder whose dumped files are copied
    dump: Path  # Kafka's dump holding the expected lines
    prefix: str  # the folder's name in that dump
    exercises: str
    spec: str
    max_log_bytes: int | None = None  # keep only the whole batches of the .log within this many bytes; drop its indexes


RECORDS = {
    "v0-none": ("magic 0 messages, uncompressed: no timestamps, null key", "§3.3, §3.4; R-V01-01, R-V01-03, R-V01-04"),
    "v0-gzip": ("magic 0 gzip wrapper, absolute inner offsets", "§3.5, A.1; R-V01-06, R-V01-07, R-V01-08, R-GZIP-01"),
    "v0-snappy": ("magic 0 snappy wrapper in xerial framing", "§3.5, A.2; R-V01-07, R-SNAPPY-01"),
    "v0-lz4": ("magic 0 lz4 wrapper with Kafka's legacy (wrong) frame header checksum", "§3.5, A.3; R-LZ4-03, R-LZ4-04, R-VAL-03"),
    "v1-none": ("magic 1 messages, CreateTime and LogAppendTime", "§3.3, §3.4, §3.10; R-V01-01, R-PRIM-06"),
    "v1-gzip": ("magic 1 gzip wrappers, relative inner offsets, LogAppendTime wrapper", "§3.5, A.1; R-V01-08, R-V01-12"),
    "v1-snappy": ("magic 1 snappy wrappers", "§3.5, A.2; R-V01-08, R-SNAPPY-01"),
    "v1-lz4": ("magic 1 lz4 wrappers with a correct header checksum", "§3.5, A.3; R-LZ4-01, R-LZ4-04"),
    "v2-none": ("magic 2: headers with empty and null values, null key, tombstone, LogAppendTime batch, max timestamp not last", "§3.6-§3.10; R-PRIM-07, R-PRIM-08, R-REC-01, R-V2-10, R-V2-11, R-V2-12"),
    "v2-gzip": ("magic 2 gzip batches", "§3.6, A.1; R-GZIP-01, R-GZIP-03"),
    "v2-snappy": ("magic 2 snappy batches", "§3.6, A.2; R-SNAPPY-01"),
    "v2-lz4": ("magic 2 lz4 batches", "§3.6, A.3; R-LZ4-01, R-LZ4-02"),
    "v2-zstd": ("magic 2 zstd batches (frames without content size)", "§3.6, A.4; R-ZSTD-01"),
    "v2-transactional": ("idempotent and transactional batches, COMMIT and ABORT control batches", "§3.11, §3.12; R-V2-15, R-CTRL-01, R-CTRL-04, R-CTRL-05"),
    "mixed-magic": ("magic 0, 1 and 2 entries back to back in one file", "§3.2; R-LOG-01, R-LOG-02, R-VAL-03"),
}

LOGDIRS = {
    "golden-0": ("6 segments, every codec, aborted and committed transactions, leader epochs 0/1/4, snapshots, partition.metadata", "§2, §4.2-§4.6, §5.1, §5.3, §5.5; R-IDX-05, R-IDX-06, R-TIDX-03, R-TIDX-04, R-IDX-11, R-TXN-01, R-SNAP-03, R-SNAP-05, R-ROLL-01"),
    "transactional-0": ("12 segments of interleaved transactions of three producers, an epoch bump, open transactions", "§4.6, §5.1, §6.5; R-TXN-01, R-TXN-02, R-SNAP-04, R-ISO-01"),
    "logappendtime-0": ("message.timestamp.type=LogAppendTime, one batch per codec", "§3.10; R-V2-12, R-WR-06"),
    "recompressed-0": ("compression.type=zstd: every producer batch recompressed by the broker", "§3.15, A.4; R-WR-06, R-ZSTD-01"),
    "compacted-0": ("after one cleaner pass: tombstones with deleteHorizonMs, aborted data removed, an empty batch", "§6.4; R-V2-08, R-V2-13, R-REC-07"),
    "compacted-1": ("after a second cleaner pass: tombstones removed", "§6.4; R-V2-08, R-V2-13"),
    "compacted-input-0": ("the partition as the cleaner found it before the first pass", "§6.4"),
    "compacted-input-1": ("the partition as the cleaner found it before the second pass", "§6.4"),
    "txnstate-0": ("a __transaction_state-style partition written by Kafka's transaction log serializers", "§3.6, §7.4"),
    "legacy-0": ("magic 0/1 message sets then a v2 batch appended as a follower: one index entry per append", "§4.3; R-IDX-05, R-IDX-06, R-LOG-02"),
}

#: golden/kafka/internal: Kafka 4.0's newer internal topics, keys and values from Kafka's serializers
INTERNALS = {
    "remotelogmetadata-0": ("a __remote_log_metadata-style partition (tiered storage, KIP-405): RemoteLogMetadataSerde values, "
                            "2 segments; `golden/kafka/internal/dump/remotelogmetadata-0-decoded.txt` is Kafka's "
                            "--remote-log-metadata-decoder text", "§3.6, §7.8"),
    "sharegroupstate-0": ("a __share_group_state-style partition (share groups, KIP-932): ShareSnapshot and ShareUpdate records, "
                          "a tombstone; `golden/kafka/internal/dump/sharegroupstate-0-decoded.txt` is Kafka's "
                          "--share-group-state-decoder text", "§3.6, §7.8"),
}

# (case, set, partition path inside the set, what, spec)
REALS = [
    ("real-kraft-cluster-metadata", "kraft-metadata-christseng89", "kafka-logs/__cluster_metadata-0",
     "KRaft metadata log: LEADER_CHANGE control batches, leader epochs 1-5", "§2.2, §3.12, §5.3; R-NAME-06, R-CTRL-01, R-CTRL-03"),
    ("real-cp760-schemas", "cp760-flink-on-prem", "data/_schemas-0",
     "Confluent 7.6 (Kafka 3.6) _schemas: tombstones, trimmed indexes, empty snapshot", "§3.8, §4.2, §4.4, §5.1; R-PRIM-08, R-IDX-11"),
    ("real-cp760-command", "cp760-flink-on-prem", "data/_confluent-command-0",
     "Kafka 3.6: a non-empty producer snapshot, an empty .index", "§5.1; R-SNAP-03, R-JSON-04"),
    ("real-cp760-promotions", "cp760-flink-on-prem", "data/promotions-0",
     "Kafka 3.6: idempotent producer, tombstones", "§3.11, §5.1; R-V2-15"),
    ("real-cp760-monitoring", "cp760-flink-on-prem", "data/_confluent-monitoring-0",
     "Kafka 3.6: lz4 batches under LogAppendTime (the segment's first 16 KB of whole batches; its indexes left out)",
     "§3.10, A.3; R-V2-12, R-LZ4-01, R-LZ4-04"),
    ("real-weebee-headers", "cp-latest-weebee", "kafka/data/clustering_userRank-0",
     "Kafka 3.9 (cp latest): records with headers, idempotent producer", "§3.8; R-REC-05"),
    ("real-kafka271-offsets-28", "kafka271-donaldy", "kafka-logs/__consumer_offsets-28",
     "Kafka 2.7.1 __consumer_offsets: two segments, empty .index, empty snapshots", "§2.3, §4.5; R-NAME-07, R-IDX-12, R-JSON-04"),
    ("real-kafka271-mytopic", "kafka271-donaldy", "kafka-logs/myTopic-0",
     "Kafka 2.7.1: an empty .log with a non-empty producer snapshot", "§5.1; R-JSON-04, R-SNAP-03"),
    ("real-kafka310-cities", "kafka310-bheem", "kafka-logs/cities-0",
     "Kafka 3.1: a plain topic, partition.metadata", "§3.6, §5.5; R-CKPT-07"),
    ("real-zk-first", "zk-danielmorales9-kafkafun", "data/kafka/first-0",
     "ZooKeeper-era broker (2020): single-record batches, empty snapshot", "§3.6, §5.1"),
]


def good_cases() -> list[Good]:
    cases = []
    for name, (what, spec) in RECORDS.items():
        cases.append(Good(f"kafka-records-{name}", KAFKA / "records" / name, KAFKA / "dump" / "records.jsonl", name, what, spec))
    for name, (what, spec) in LOGDIRS.items():
        cases.append(Good(f"kafka-logdir-{name}", KAFKA / "logdir" / name, KAFKA / "dump" / "logdir.jsonl", name, what, spec))
    for name, (what, spec) in INTERNALS.items():
        src = KAFKA / "internal"
        cases.append(Good(f"kafka-internal-{name}", src / name, src / "dump" / f"{name}.jsonl", name, what, spec))
    for case, set_name, part, what, spec in REALS:
        src = REAL / set_name / part
        limit = 16384 if case == "real-cp760-monitoring" else None
        cases.append(Good(case, src, REAL / "expected" / f"{set_name}.jsonl.gz", src.name, what, spec, limit))
    return cases


# ------------------------------------------------------------------------- tiered-storage cases
TIERED = GOLDEN / "tiered" / "aiven"
#: the four modes Aiven's plug-in wrote golden-0's first four segments in (golden/tiered/README.md)
TIERED_MODES = {
    "plain": ("no compression, no encryption: the .log objects are the segments' bytes; a fixed chunk index", "App. D; R-TIER-03, R-TIER-06"),
    "compression": ("every 512-byte chunk a zstd frame; a variable chunk index", "App. D; R-TIER-03, R-TIER-04, R-TIER-06"),
    "encryption": ("every chunk and index part AES-256-GCM encrypted, the data key RSA-OAEP(SHA3-512) wrapped for key pair key1", "App. D; R-TIER-03, R-TIER-04, R-TIER-05, R-TIER-06"),
    "compression-encryption": ("zstd, then AES-256-GCM; a variable chunk index", "App. D; R-TIER-03, R-TIER-04, R-TIER-05, R-TIER-06"),
}
#: the parts of ``.indexes`` in stored order: the golden-0 file each was (by the segment's base offset
#: and the next one's) and the line type of Kafka's dump of that file
TIERED_PARTS = (
    (lambda base, nxt: f"{base:020d}.index", "offsetIndexEntry"),
    (lambda base, nxt: f"{base:020d}.timeindex", "timeIndexEntry"),
    (lambda base, nxt: f"{nxt:020d}.snapshot", "producerSnapshotEntry"),
    (lambda base, nxt: "leader-epoch-checkpoint", "leaderEpochEntry"),
    (lambda base, nxt: f"{base:020d}.txnindex", "abortedTxn"),
)


#: where an encrypted case keeps the private key of the key pair its data keys are wrapped for (``key1``)
TIERED_KEY = "keys/key1.pem"


def tiered_case_json(mode: str) -> dict:
    """``case.json`` of ``aiven-<mode>``: what an implementation needs to read the case. Its objects are
    one input, the folder: the ``.log`` and ``.indexes`` objects are read through the ``.rsm-manifest``
    beside them and the manifest alone holds no lines (SPEC D.5). An encrypted mode also needs the
    private key of key pair ``key1`` (a copy of ``golden/tiered/aiven/keys/private.pem``)."""
    case: dict = {
        "description": "Aiven's tiered-storage objects of golden-0's segments 0-146: read the folder, not each object "
                       "(the .log and .indexes objects are read through the .rsm-manifest beside them)",
        "input": "folder",
    }
    if "encryption" in mode:
        case["privateKeys"] = {"key1": TIERED_KEY}
    return case


def build_tiered(mode: str, out: Path) -> str:
    """``aiven-<mode>``: the plug-in's objects for golden-0's segments 0, 51, 102 and 146, flat, and
    as expected lines Kafka's dump of those segments with ``file`` naming the object that holds each
    file: the ``.log`` lines under the ``.log`` object, and under ``.indexes`` the lines of the files
    it concatenates (SPEC D.5), in stored order. The leader-epoch part holds the checkpoint's
    entries that start below the next segment's base offset (RemoteLogManager's cut). ``case.json``
    says what reading the case needs (:func:`tiered_case_json`), with the key it names."""
    name = f"aiven-{mode}"
    dest = out / name
    dest.mkdir(parents=True)
    objects = sorted(p for p in (TIERED / mode).rglob("*") if p.is_file())
    for p in objects:
        shutil.copyfile(p, dest / p.name)
    case = tiered_case_json(mode)
    write_json(dest / "case.json", case)
    for key_file in case.get("privateKeys", {}).values():
        (dest / key_file).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(TIERED / "keys" / "private.pem", dest / key_file)
    logs = sorted(p.name for p in objects if p.name.endswith(".log"))
    bases = [int(n[:20]) for n in logs]
    lines = _logdir_lines("golden-0")
    expected: list[dict] = []
    for i, (log_name, base) in enumerate(zip(logs, bases, strict=True)):
        nxt = bases[i + 1] if i + 1 < len(bases) else 190  # golden-0's fifth segment
        stem = log_name[: -len(".log")]
        for file_of, kind in TIERED_PARTS:
            src = file_of(base, nxt)
            part = [o for o in lines if o["file"] == src and o["type"] == kind]
            if kind == "leaderEpochEntry":
                part = [o for o in part if o["startOffset"] < nxt]
            expected += [{**o, "file": f"{stem}.indexes"} for o in part]
        expected += [{**o, "file": log_name} for o in lines if o["file"] == f"{base:020d}.log"]
    write_jsonl(dest / "expected.jsonl", expected)
    return name


def build_good(case: Good, out: Path) -> None:
    dest = out / case.name
    dest.mkdir(parents=True)
    for f in sorted(os.listdir(case.source)):
        if DUMPED.match(f) and (case.source / f).is_file():
            shutil.copyfile(case.source / f, dest / f)
    lines = kafka_lines(case.dump, case.prefix)
    if case.max_log_bytes is not None:
        lines = _cut_log(dest, lines, case.max_log_bytes)
    missing = {o["file"] for o in lines} - set(os.listdir(dest))
    if missing:
        raise SystemExit(f"{case.name}: Kafka's dump names files that are not there: {sorted(missing)}")
    write_jsonl(dest / "expected.jsonl", lines)


def _cut_log(dest: Path, lines: list[dict], limit: int) -> list[dict]:
    """Keep the single .log's whole batches that end within ``limit`` bytes (a batch boundary, so
    still a file Kafka wrote up to that point), drop the segment's indexes, and Kafka's lines to match."""
    (log,) = [f for f in os.listdir(dest) if f.endswith(".log")]
    end = max(b["position"] + b["sizeInBytes"] for b in batches_of(lines, log) if b["position"] + b["sizeInBytes"] <= limit)
    data = (dest / log).read_bytes()
    (dest / log).write_bytes(data[:end])
    stem = log[: -len(".log")]
    for suffix in (".index", ".timeindex", ".txnindex"):
        if (dest / f"{stem}{suffix}").exists():
            os.unlink(dest / f"{stem}{suffix}")
    dropped = {f"{stem}.index", f"{stem}.timeindex", f"{stem}.txnindex"}
    return [o for o in lines_before(lines, log, end) if o["file"] not in dropped]


# --------------------------------------------------------------------------------- bad cases
@dataclass
class Bad:
    """One corruption. ``make`` writes the case's input files into the folder and returns the
    expected finding and, when a conforming dumper still prints lines, those lines."""

    name: str
    exercises: str
    rules: list[str]
    make: Callable[[Path], tuple[dict, list[dict] | None]]
    reader: str  # "reject" | "lines"
    severity: str = "error"
    corruption: str = ""
    extra: dict = field(default_factory=dict)


def _read(p: Path) -> bytearray:
    return bytearray(p.read_bytes())


def _logdir_lines(part: str) -> list[dict]:
    return kafka_lines(KAFKA / "dump" / "logdir.jsonl", part)


def _records_lines(name: str) -> list[dict]:
    return kafka_lines(KAFKA / "dump" / "records.jsonl", name)


def _finding(code: str, file: str, position: int, offset: int | None, error: str, kafka: str, entry: int | None = None) -> dict:
    """The expected finding: ``position`` is the corrupted byte (or the entry it breaks); ``entryPosition``,
    when given, the start of the batch, entry or line holding it, which a reader may report instead."""
    f = {"code": code, "file": file, "position": position, "offset": offset, "error": error, "kafkaError": kafka}
    if entry is not None and entry != position:
        f["entryPosition"] = entry
    return f


LOG = f"{SEG0}.log"
G0 = KAFKA / "logdir" / "golden-0"


def crc_flip(src: str, which: int) -> Callable[[Path], tuple[dict, list[dict] | None]]:
    """Flip every bit of the first CRC byte of entry ``which`` of records/<src>."""

    def make(d: Path) -> tuple[dict, list[dict] | None]:
        data = _read(KAFKA / "records" / src / LOG)
        lines = _records_lines(src)
        b = batches_of(lines, LOG)[which]
        pos = b["position"]
        crc_at = pos + (17 if b["magic"] == 2 else 12)
        data[crc_at] ^= 0xFF
        (d / LOG).write_bytes(data)
        stored = int.from_bytes(data[crc_at : crc_at + 4], "big")
        assert stored == b["crc"] ^ 0xFF000000
        b["crc"], b["isValid"] = stored, False
        if b["magic"] < 2 and b["compression"] == "none":
            # an uncompressed legacy entry is its own (only) record: same checksum, same validity
            for o in lines:
                if o["type"] == "record" and o.get("batchBaseOffset") == b["baseOffset"]:
                    o["checksum"], o["isValid"] = stored, False
        offset = b["baseOffset"] if b["magic"] == 2 else b["lastOffset"]  # a legacy entry's offset field is its last offset
        return _finding("batch-crc", LOG, pos, offset, "CrcMismatchError", "CorruptRecordException"), lines

    return make


def truncated(d: Path) -> tuple[dict, list[dict] | None]:
    data = _read(G0 / LOG)
    lines = [o for o in _logdir_lines("golden-0") if o["file"] == LOG]
    last = batches_of(lines, LOG)[-1]
    assert last["position"] + last["sizeInBytes"] == len(data)
    cut = last["position"] + last["sizeInBytes"] // 2
    (d / LOG).write_bytes(data[:cut])
    return (_finding("truncated-batch", LOG, last["position"], last["baseOffset"], "TruncatedError", "(torn tail: iteration ends)"),
            lines_before(lines, LOG, last["position"]))


def _set_size(which: int, size: int, code: str, error: str, kafka: str, stops: bool) -> Callable[[Path], tuple[dict, list[dict] | None]]:
    """Overwrite the ``size`` field of entry ``which`` of golden-0's first segment."""

    def make(d: Path) -> tuple[dict, list[dict] | None]:
        data = _read(G0 / LOG)
        lines = [o for o in _logdir_lines("golden-0") if o["file"] == LOG]
        b = batches_of(lines, LOG)[which]
        pos = b["position"]
        data[pos + 8 : pos + 12] = size.to_bytes(4, "big", signed=True)
        (d / LOG).write_bytes(data)
        return _finding(code, LOG, pos, b["baseOffset"], error, kafka), (lines_before(lines, LOG, pos) if stops else None)

    return make


def bad_magic(d: Path) -> tuple[dict, list[dict] | None]:
    data = _read(G0 / LOG)
    lines = [o for o in _logdir_lines("golden-0") if o["file"] == LOG]
    b = batches_of(lines, LOG)[2]
    assert data[b["position"] + 16] == 2
    data[b["position"] + 16] = 3  # magic is outside the CRC's coverage (R-PRIM-07)
    (d / LOG).write_bytes(data)
    return _finding("batch-magic", LOG, b["position"], b["baseOffset"], "UnsupportedMagicError", "CorruptRecordException"), None


def _v2_edit(src: str, edit: Callable[[bytearray, int, dict], int], code: str, error: str, kafka: str) -> Callable[[Path], tuple[dict, list[dict] | None]]:
    """Apply ``edit`` to the first batch of records/<src> and recompute its CRC, so the batch stays valid (R-VAL-01).

    ``edit`` returns the byte position (relative to the batch) where a reader meets the problem."""

    def make(d: Path) -> tuple[dict, list[dict] | None]:
        data = _read(KAFKA / "records" / src / LOG)
        b = batches_of(_records_lines(src), LOG)[0]
        at = edit(data, b["position"], b)
        recrc_v2(data, b["position"])
        (d / LOG).write_bytes(data)
        return _finding(code, LOG, b["position"] + at, b["baseOffset"], error, kafka, entry=b["position"]), None

    return make


def _overlong_varint(data: bytearray, pos: int, b: dict) -> int:
    data[pos + 61 : pos + 66] = b"\xff" * 5  # the first record's length: fifth byte has the high bit (R-PRIM-03)
    return 61


def _count_plus_one(data: bytearray, pos: int, b: dict) -> int:
    data[pos + 57 : pos + 61] = (b["count"] + 1).to_bytes(4, "big")
    return b["sizeInBytes"]  # the missing record would start where the batch ends


def _undefined_codec(data: bytearray, pos: int, b: dict) -> int:
    data[pos + 22] = (data[pos + 22] & ~0x07) | 5
    return 0


def _linked_lz4(data: bytearray, pos: int, b: dict) -> int:
    frame = pos + 61
    assert data[frame : frame + 4] == b"\x04\x22\x4d\x18" and data[frame + 4] == 0x60 and data[frame + 5] == 0x40
    assert data[frame + 6] == (xxh32_small(bytes(data[frame + 4 : frame + 6])) >> 8) & 0xFF  # our HC agrees with Kafka's
    data[frame + 4] = 0x40  # FLG: version 1, block independence bit cleared
    data[frame + 6] = (xxh32_small(bytes(data[frame + 4 : frame + 6])) >> 8) & 0xFF
    return 0


BOMB_BYTES = 1 << 30


def zstd_truncated(d: Path) -> tuple[dict, list[dict] | None]:
    """The first zstd batch without its frame's last (empty) block: every record still decodes,
    but the frame never ends (zstd-jni: "Truncated source")."""
    data = _read(KAFKA / "records" / "v2-zstd" / LOG)
    b = batches_of(_records_lines("v2-zstd"), LOG)[0]
    pos = b["position"]
    end = pos + 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    batch = bytearray(data[pos:end])
    assert batch[-3:] == b"\x01\x00\x00"  # the empty last block zstd-jni's stream writes at close
    del batch[-3:]
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    recrc_v2(batch, 0)
    (d / LOG).write_bytes(batch)
    return _finding("record-invalid", LOG, 0, b["baseOffset"], "DecompressionError", "KafkaException (zstd-jni ZstdIOException: Truncated source)"), None


def bomb(d: Path) -> tuple[dict, list[dict] | None]:
    data = _read(KAFKA / "records" / "v2-zstd" / LOG)
    b = batches_of(_records_lines("v2-zstd"), LOG)[0]
    pos = b["position"]
    header = bytearray(data[pos : pos + 61])
    payload = zstd_rle_frame(BOMB_BYTES)
    batch = header + payload
    batch[8:12] = (len(batch) - 12).to_bytes(4, "big")
    recrc_v2(batch, 0)
    (d / LOG).write_bytes(batch)
    return _finding("record-invalid", LOG, 0, b["baseOffset"], "DecompressionError", "(bounded by max.message.bytes)"), None


def _segment_copy(d: Path, base: str, names: list[str]) -> list[dict]:
    for n in names:
        shutil.copyfile(G0 / f"{base}{n}", d / f"{base}{n}")
    files = {f"{base}{n}" for n in names}
    return [o for o in _logdir_lines("golden-0") if o["file"] in files]


def index_position(d: Path) -> tuple[dict, list[dict] | None]:
    lines = _segment_copy(d, SEG0, [".log", ".index", ".timeindex"])
    p = d / f"{SEG0}.index"
    data = _read(p)
    i = 1
    e = next(o for o in lines if o["type"] == "offsetIndexEntry" and o["i"] == i)
    assert int.from_bytes(data[8 * i + 4 : 8 * i + 8], "big") == e["position"]
    e["position"] += 1
    data[8 * i + 4 : 8 * i + 8] = e["position"].to_bytes(4, "big")
    p.write_bytes(data)
    return _finding("index-position", p.name, 8 * i, e["offset"], "CorruptIndexError", "CorruptIndexException"), lines


def timeindex_order(d: Path) -> tuple[dict, list[dict] | None]:
    lines = _segment_copy(d, SEG0, [".log", ".index", ".timeindex"])
    p = d / f"{SEG0}.timeindex"
    data = _read(p)
    ents = [o for o in lines if o["type"] == "timeIndexEntry"]
    data[12:24], data[24:36] = data[24:36], data[12:24]  # swap entries 1 and 2
    p.write_bytes(data)
    ents[1]["timestamp"], ents[2]["timestamp"] = ents[2]["timestamp"], ents[1]["timestamp"]
    ents[1]["offset"], ents[2]["offset"] = ents[2]["offset"], ents[1]["offset"]
    return _finding("timeindex-order", p.name, 24, ents[2]["offset"], "CorruptIndexError", "CorruptIndexException"), lines


def timeindex_not_max(d: Path) -> tuple[dict, list[dict] | None]:
    lines = _segment_copy(d, SEG0, [".log", ".index", ".timeindex"])
    p = d / f"{SEG0}.timeindex"
    data = _read(p)
    ents = [o for o in lines if o["type"] == "timeIndexEntry"]
    last = ents[-1]
    at = 12 * last["i"]
    assert int.from_bytes(data[at : at + 8], "big") == last["timestamp"]
    last["timestamp"] -= 5
    assert last["timestamp"] > ents[-2]["timestamp"]  # still increasing: only R-TIDX-04 is broken
    data[at : at + 8] = last["timestamp"].to_bytes(8, "big")
    p.write_bytes(data)
    return _finding("timeindex-not-max", p.name, at, last["offset"], "CorruptIndexError", "(recovery rebuilds the index)"), lines


def txnindex_missing(d: Path) -> tuple[dict, list[dict] | None]:
    base = "00000000000000000051"
    lines = _segment_copy(d, base, [".log", ".index", ".timeindex", ".txnindex"])
    txn = next(o for o in lines if o["type"] == "abortedTxn")
    (d / f"{base}.txnindex").write_bytes(b"")
    lines = [o for o in lines if o["type"] != "abortedTxn"]
    marker = next(
        o for o in lines
        if o["type"] == "batch" and o.get("isControlBatch") and o["baseOffset"] == txn["lastOffset"]
    )
    ctl = next(o for o in lines if o["type"] == "record" and o["offset"] == txn["lastOffset"])
    assert ctl["controlType"] == "ABORT" and marker["producerId"] == txn["producerId"]
    return _finding("txnindex-missing-abort", f"{base}.log", marker["position"], txn["lastOffset"], "CorruptIndexError",
                    "(recovery rebuilds the index)"), lines


def snapshot_crc(d: Path) -> tuple[dict, list[dict] | None]:
    name = "00000000000000000051.snapshot"
    data = _read(G0 / name)
    data[2] ^= 0xFF
    (d / name).write_bytes(data)
    return _finding("snapshot-crc", name, 2, None, "CorruptIndexError", "CorruptSnapshotException"), None


def checkpoint_version(d: Path) -> tuple[dict, list[dict] | None]:
    name = "leader-epoch-checkpoint"
    data = _read(G0 / name)
    assert data[:2] == b"0\n"
    data[0:1] = b"1"
    (d / name).write_bytes(data)
    return _finding("checkpoint", name, 0, None, "CorruptIndexError", "IOException"), None


def partition_metadata(d: Path) -> tuple[dict, list[dict] | None]:
    name = "partition.metadata"
    text = (G0 / name).read_text(encoding="utf-8")
    first, second = text.split("\n", 1)
    key, _ = second.split(": ", 1)
    (d / name).write_text(f"{first}\n{key}: AAAAAAAAAAAAAAAAAAAAAA", encoding="utf-8")
    line = len(first) + 1
    return _finding("checkpoint", name, line + len(key) + 2, None, "CorruptIndexError", "InconsistentTopicIdException", entry=line), None


BAD = [
    Bad("crc-v2", "the first byte of a magic 2 batch's CRC flipped: reported with isValid false, not refused", ["R-VAL-01", "R-VAL-02", "R-VAL-05", "R-PRIM-07", "R-VFY-02"],
        crc_flip("v2-none", 0), "lines", corruption="records/v2-none: byte 17 of the batch at position 0 xor 0xff"),
    Bad("crc-v1-wrapper", "a magic 1 gzip wrapper's CRC flipped: the wrapper is invalid, its inner messages are not", ["R-VAL-01", "R-VAL-05", "R-PRIM-06", "R-VFY-02"],
        crc_flip("v1-gzip", 0), "lines", corruption="records/v1-gzip: byte 12 of the wrapper at position 0 xor 0xff"),
    Bad("truncated-batch", "the last batch of a segment cut in half: a torn tail, every batch before it is read", ["R-LOG-05", "R-LOG-06", "R-JSON-05", "R-VFY-02"],
        truncated, "lines", severity="warning", corruption="golden-0 segment 0 cut in the middle of its last batch"),
    Bad("length-past-eof", "a batch's size field points past the end of the file and above max.message.bytes: a reader's iteration "
        "ends there (torn tail), a validator reports corruption (no broker writes such a batch)", ["R-LOG-05", "R-LOG-06", "R-VFY-02"],
        _set_size(2, 0x7FFFFFF0, "batch-size", "TruncatedError", "(torn tail: iteration ends)", True), "lines",
        corruption="golden-0 segment 0: size of the third batch set to 0x7ffffff0"),
    Bad("negative-length", "a batch's size field is -1: corrupt, the reader stops with an error", ["R-LOG-04", "R-VAL-04"],
        _set_size(2, -1, "batch-size", "CorruptRecordError", "CorruptRecordException", False), "reject",
        corruption="golden-0 segment 0: size of the third batch set to -1"),
    Bad("batch-too-small", "a magic 2 entry of 32 bytes (under the 61-byte header)", ["R-V2-01", "R-VAL-04"],
        _set_size(2, 20, "batch-size", "CorruptRecordError", "CorruptRecordException", False), "reject",
        corruption="golden-0 segment 0: size of the third batch set to 20"),
    Bad("bad-magic", "an entry with magic 3", ["R-LOG-07", "R-VAL-04"],
        bad_magic, "reject", corruption="golden-0 segment 0: byte 16 of the third batch set to 3"),
    Bad("bad-varint", "a record length varint whose fifth byte has the high bit set (CRC recomputed)", ["R-PRIM-03", "R-VAL-04"],
        _v2_edit("v2-none", _overlong_varint, "record-invalid", "CorruptRecordError", "InvalidRecordException"), "reject",
        corruption="records/v2-none: bytes 61-65 of the first batch set to ff, CRC-32C recomputed"),
    Bad("record-count", "recordsCount one more than the records present (CRC recomputed)", ["R-REC-06", "R-VAL-04"],
        _v2_edit("v2-none", _count_plus_one, "record-invalid", "InvalidRecordError", "InvalidRecordException"), "reject",
        corruption="records/v2-none: recordsCount of the first batch + 1, CRC-32C recomputed"),
    Bad("undefined-codec", "compression codec id 5 in a magic 2 batch (CRC recomputed)", ["R-V2-05", "R-VAL-04"],
        _v2_edit("v2-none", _undefined_codec, "record-invalid", "UnsupportedCompressionError", "IllegalArgumentException"), "reject",
        corruption="records/v2-none: attributes codec bits of the first batch set to 5, CRC-32C recomputed"),
    Bad("lz4-linked-blocks", "an lz4 frame declaring dependent blocks (FLG 0x40, header checksum and CRC recomputed)", ["R-LZ4-05", "R-VAL-04"],
        _v2_edit("v2-lz4", _linked_lz4, "record-invalid", "DecompressionError", "IOException"), "reject",
        corruption="records/v2-lz4: FLG of the first batch's frame 0x60 -> 0x40, HC and CRC-32C recomputed"),
    Bad("decompression-bomb", "a 32 KB zstd batch that decompresses to 1 GiB of zeros", ["R-VAL-06", "R-VAL-07", "R-ZSTD-01"],
        bomb, "reject", corruption="records/v2-zstd first batch header with a zstd frame of 8192 RLE blocks of 128 KiB, CRC-32C recomputed"),
    Bad("zstd-truncated-frame", "a zstd batch whose frame lacks its last block: all records decode, the frame never ends", ["R-ZSTD-03", "R-VAL-04"],
        zstd_truncated, "reject", corruption="records/v2-zstd first batch with the empty last block (01 00 00) removed, size and CRC-32C recomputed"),
    Bad("index-position", "an offset index entry whose position is one byte off the batch it names", ["R-IDX-03", "R-IDX-06", "R-VFY-03"],
        index_position, "lines", corruption="golden-0 segment 0 .index: position of entry 1 + 1"),
    Bad("timeindex-order", "two time index entries swapped: timestamps and offsets out of order", ["R-TIDX-01", "R-VFY-04"],
        timeindex_order, "lines", corruption="golden-0 segment 0 .timeindex: entries 1 and 2 swapped"),
    Bad("timeindex-not-max", "the last time index entry of a closed segment is not the segment's max timestamp", ["R-TIDX-03", "R-TIDX-04", "R-VFY-04"],
        timeindex_not_max, "lines", corruption="golden-0 segment 0 .timeindex: timestamp of the last entry - 5"),
    Bad("txnindex-missing-abort", "an ABORT marker whose aborted transaction is missing from the .txnindex", ["R-TXN-01", "R-VFY-05"],
        txnindex_missing, "lines", corruption="golden-0 segment 51 .txnindex emptied"),
    Bad("snapshot-crc", "a producer snapshot with its CRC changed", ["R-SNAP-01", "R-VFY-06"],
        snapshot_crc, "reject", corruption="golden-0 00000000000000000051.snapshot: byte 2 xor 0xff"),
    Bad("checkpoint-version", "a leader-epoch-checkpoint with version 1", ["R-CKPT-02", "R-VFY-06"],
        checkpoint_version, "reject", corruption="golden-0 leader-epoch-checkpoint: version line 0 -> 1"),
    Bad("partition-metadata", "a partition.metadata with the all-zero topic id", ["R-CKPT-07", "R-VFY-06"],
        partition_metadata, "reject", corruption="golden-0 partition.metadata: topic id -> AAAAAAAAAAAAAAAAAAAAAA"),
]


def build_bad(case: Bad, out: Path) -> dict:
    dest = out / "bad" / case.name
    dest.mkdir(parents=True)
    finding, lines = case.make(dest)
    finding["severity"] = case.severity
    if (case.reader == "lines") != (lines is not None):
        raise SystemExit(f"{case.name}: reader outcome {case.reader} but lines {'given' if lines is not None else 'missing'}")
    write_json(dest / "expected.json", {
        "description": case.exercises,
        "corruption": case.corruption,
        "rules": case.rules,
        "reader": case.reader,
        "finding": finding,
    })
    if lines is not None:
        write_jsonl(dest / "expected.jsonl", lines)
    return finding


# -------------------------------------------------------------------------------------- README
README_HEAD = """\
# The kafkalog conformance corpus

Generated by `golden/generate_corpus.py` from `golden/kafka`, `golden/real` and `golden/tiered`; do not edit by hand
(`tests/tools/test_corpus.py` regenerates it and fails on any difference). SPEC.md §8 describes the layout
and the rules a conforming implementation follows; `kafkalog conformance --impl "COMMAND {file}"` runs
another implementation over it, and `kafkalog conformance --writer "COMMAND {case} {dir}"` another
writer over the writer cases in [`writer/`](writer/README.md) (SPEC.md §8.3).

* **Good cases** (`<case>/`): files written by Apache Kafka (kafka-clients and the broker's log layer)
  or by real brokers, and `expected.jsonl`, Kafka's own reading of them in canonical JSON (SPEC §7),
  taken from `golden/kafka/dump` and `golden/real/expected` with `file` made relative to the case.
* **Tiered-storage cases** (`aiven-<mode>/`): the objects Aiven's tiered-storage plug-in wrote for
  golden-0's first four segments (SPEC.md Appendix D), flat, with `expected.jsonl` made of Kafka's
  dump of those segments, `file` naming the object holding each file (the `.indexes` object for the
  index files it concatenates). Their `case.json` says what reading them needs: `"input": "folder"`
  (the objects are read through the `.rsm-manifest` beside them, so the case is one input, its
  folder), and for the encrypted modes `privateKeys`, the private key of each key pair by id, as a
  path in the case (`keys/key1.pem`, a copy of `golden/tiered/aiven/keys/private.pem`).
* **Case metadata** (`case.json`, only where a case needs it): `kafkalog conformance` gives a
  `"input": "folder"` case's folder where a command has `{file}` (and compares with all of
  `expected.jsonl`), and puts `--private-key ID=FILE` for each of its `privateKeys` where the
  command has the word `{keys}`, or at its end when it has none. So
  `kafkalog conformance --impl "kafkalog dump --json {file}"` runs every case; a tool that takes
  keys another way places `{keys}` itself, or wraps its command in a script.
* **Bad cases** (`bad/<case>/`): one deliberate corruption of a golden file each, and `expected.json`
  with the finding a conforming reader or validator must report (`code`, `file`, byte `position`,
  `offset`, `severity`) and the reader's outcome: `reject` (a dumper must fail) or `lines` (a dumper
  must print exactly `expected.jsonl`, which is Kafka's dump of the original adjusted for the
  corruption, and a validator must still report the finding).

"""


def readme(good: list[Good], findings: dict[str, dict]) -> str:
    rows = ["## Good cases", "", "| case | what it exercises | SPEC |", "|---|---|---|"]
    for c in good:
        src = os.path.relpath(c.source, GOLDEN)
        rows.append(f"| `{c.name}` | {c.exercises} (from `golden/{src}`) | {c.spec} |")
    for mode, (what, spec) in TIERED_MODES.items():
        rows.append(f"| `aiven-{mode}` | Aiven's tiered-storage plug-in's objects for golden-0's segments 0-146: {what} "
                    f"(from `golden/tiered/aiven/{mode}`; read as a folder{', with the private key `keys/key1.pem`' if 'encryption' in mode else ''}) | {spec} |")
    rows += ["", "## Bad cases", "", "| case | what it exercises | reader | finding | SPEC |", "|---|---|---|---|---|"]
    for b in BAD:
        f = findings[b.name]
        where = f"`{f['code']}` ({f['severity']}) in `{f['file']}` at {f['position']}"
        rows.append(f"| `bad/{b.name}` | {b.exercises} | {b.reader} | {where} | {', '.join(b.rules)} |")
    return README_HEAD + "\n".join(rows) + "\n"


# ------------------------------------------------------------------------------------- writer
#: The writer cases written by Kafka's broker log layer (../shared/golden-kafka/writer): what each shows, SPEC rules
WRITER_KAFKA = {
    "roll-by-size": ("segment.bytes=2048, every codec, one batch per append: size rolls, index entries every > 256 bytes", "R-ROLL-01, R-IDX-05, R-IDX-06, R-TIDX-03, R-TIDX-04, R-IDX-11, R-ROLL-05, R-IDX-09"),
    "roll-by-time": ("segment.ms=60000: batches without timestamps roll by the clock, CreateTime batches by their timestamps", "R-ROLL-01, R-ROLL-02"),
    "roll-by-offset-index-full": ("segment.index.bytes=96, index.interval.bytes=1: roll when the offset index has 12 entries", "R-ROLL-01, R-IDX-10"),
    "roll-by-time-index-full": ("the same with increasing timestamps: roll when the time index has 7 entries", "R-ROLL-01, R-IDX-10, R-TIDX-04"),
    "roll-compacted-max-lag": ("cleanup.policy=compact, max.compaction.lag.ms=25000 < segment.ms: time roll at the smaller", "R-ROLL-01, R-ROLL-02"),
    "transactions-aborts": ("3 transactional producers, an idempotent and a plain one; 14 aborted transactions in 8 .txnindex files", "R-TXN-01, R-TXN-02, R-SNAP-03, R-SNAP-05, R-ROLL-08"),
    "transactions-open-at-end": ("an abort two segments after its transaction began; two transactions open at close", "R-TXN-01, R-SNAP-04, R-ROLL-05"),
    "logappendtime": ("message.timestamp.type=LogAppendTime: batches stamped with the broker clock", "R-WR-06, R-V2-12"),
    "recompress-zstd": ("compression.type=zstd: producer batches rebuilt by the leader", "R-WR-06, A.4"),
    "recompress-gzip": ("compression.type=gzip: producer batches rebuilt by the leader", "R-WR-06, A.1"),
    "recompress-lz4": ("compression.type=lz4 (compression.lz4.level 9): producer batches rebuilt by the leader with lz4-java's fast compressor",
                       "R-WR-06, R-WR-12, R-LZ4-01, R-LZ4-07"),
    "recompress-snappy": ("compression.type=snappy: producer batches rebuilt by the leader with snappy-java's stream over libsnappy",
                          "R-WR-06, R-WR-11, R-SNAPPY-01, R-SNAPPY-05"),
    "retention-bytes": ("retention.bytes=2500: the 3 oldest segments deleted, epoch checkpoint trimmed", "R-RET-01, R-RET-03, R-RET-07"),
    "retention-time": ("retention.ms=600000: the 3 oldest segments deleted", "R-RET-01, R-RET-02, R-RET-04"),
    "retention-time-all-expired": ("every segment expired: an empty segment rolled at the log end, the rest deleted", "R-RET-04, R-RET-06"),
    "recovery-torn-tail": ("crash, a partial batch appended, indexes deleted, unclean open: the tail dropped", "R-RCV-05, R-RCV-06, R-RCV-07, R-RCV-09"),
    "recovery-bad-crc": ("crash, a byte flipped: recovery truncates at the bad batch", "R-RCV-06, R-RCV-07, R-RCV-08, R-SNAP-08"),
    "follower-legacy": ("follower appends of magic 0/1 message sets (several batches per call), then magic 2", "R-IDX-05, R-IDX-06, R-CKPT-05, R-CKPT-11"),
    "leader-epochs": ("leader appends at epochs 0, 1, 3, follower appends of 5 and 8", "R-CKPT-05, R-CKPT-11, R-WR-06, R-ROLL-08"),
}
_WRITER_FILES = ("case.json", "input.log")
_WRITER_DIRS = ("expected", "before-open")


def _cleaner_case(n: int, dest: Path) -> None:
    """A writer case from golden/kafka/logdir/compacted-input-N(.json) -> compacted-N: Kafka's Cleaner.clean on the live log."""
    p = json.loads((KAFKA / "logdir" / f"compacted-input-{n}.json").read_text(encoding="utf-8"))
    shutil.copytree(KAFKA / "logdir" / p["input"], dest / "before-open")
    shutil.copytree(KAFKA / "logdir" / p["output"], dest / "expected")
    config = {k: p[k] for k in ("delete.retention.ms", "file.delete.delay.ms", "index.interval.bytes", "max.compaction.lag.ms",
                                "max.message.bytes", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "segment.bytes", "segment.index.bytes")}
    clean = {k: p[k] for k in ("firstDirtyOffset", "firstUncleanableOffset", "offsetMap", "ioBufferSize", "maxIoBufferSize",
                               "dupBufferLoadFactor", "lastRecordsOfActiveProducers")}
    case = {
        "case": dest.name,
        "description": f"Kafka's cleaner pass {n + 1} over the partition of golden/kafka/logdir/{p['input']}: "
                       f"before-open/ is that directory, expected/ is golden/kafka/logdir/{p['output']}.",
        "writtenBy": f"Apache Kafka 4.0.0 {p['call']} on the log that wrote before-open/ (still open); parameters from "
                     f"golden/kafka/logdir/compacted-input-{n}.json",
        "partitionDir": p["topicPartition"],
        "topicId": None,
        "topicConfig": {"cleanup.policy": [p["cleanup.policy"]], **config},
        "broker": {"producer.id.expiration.ms": p["producer.id.expiration.ms"]},
        "initialClockMs": p["clockMs"],
        "ops": [
            {"op": "attach", "logStartOffset": p["logStartOffset"], "clockMs": p["clockMs"]},
            {"op": "clean", **clean, "clockMs": p["clockMs"], "result": {"endOffset": p["cleanerResultEndOffset"]}},
        ],
    }
    write_json(dest / "case.json", case)


WRITER_CLEANER = {
    "cleaner-pass-0": (0, "Kafka's first cleaner pass: tombstones stamped with deleteHorizonMs, aborted data removed, an empty batch kept; "
                          "the empty active segment has only its .log (lazy indexes)", "R-CMP-05 to R-CMP-12, R-IDX-09"),
    "cleaner-pass-1": (1, "the second pass: expired tombstones removed, segments regrouped", "R-CMP-05 to R-CMP-12, R-IDX-09"),
}

WRITER_README = """\
# Writer conformance cases

`kafkalog conformance --writer "COMMAND {case} {dir}"` runs a writer over each case here (SPEC.md §8.3):
`{case}` is the case folder, `{dir}` an empty partition directory the writer fills by replaying
`case.json`'s operations over `input.log` (from `before-open/` when the first operation is not
`create`). The directory must then equal `expected/` file by file, byte for byte. `kafkalog write-case
--kafka-version 4.0.0 {case} {dir}` is kafkalog's own writer (these cases are Kafka 4.0.0's).

* Cases from `../shared/golden-kafka/writer` (its README defines the operations): written by Apache
  Kafka 4.0.0's broker log layer with a frozen clock; copied unchanged (`case.json`, `input.log`,
  `expected/`, `before-open/`) by `golden/generate_corpus.py --writer-from DIR`.
* The same cases as each later release's log layer writes them (4.0.2 to 4.4.0, with two more cases showing
  what changed) are in `golden/kafka-<release>/writer/` (golden/jvm/README.md); `kafkalog write-case
  --kafka-version <release>` follows each.
* `cleaner-pass-*`: Kafka's log cleaner (`Cleaner.clean`) over `golden/kafka/logdir/compacted-input-N`,
  giving `compacted-N`, with the parameters of `compacted-input-N.json`. The operations are `attach`
  (take over the log that wrote `before-open/`, which Kafka still held open: load it without
  recovering, creating or rewriting any file) and `clean` (one pass over `[firstDirtyOffset,
  firstUncleanableOffset)` at the clock, keeping the last batch of each producer in
  `lastRecordsOfActiveProducers`, with the offset map's size, hash and the I/O buffer sizes given).

| case | what it shows | SPEC |
|---|---|---|
"""


def build_writer(out: Path, source: Path | None) -> None:
    """Copy the Kafka writer cases from ``source`` and make the cleaner cases, with a README."""
    dest = out / "writer"
    dest.mkdir()
    rows = []
    for name, (what, spec) in WRITER_KAFKA.items():
        if source is None or not (source / name).is_dir():
            raise SystemExit(f"writer case {name}: not in {source} (give --writer-from ../shared/golden-kafka/writer)")
        (dest / name).mkdir()
        for f in _WRITER_FILES:
            shutil.copyfile(source / name / f, dest / name / f)
        for sub in _WRITER_DIRS:
            if (source / name / sub).is_dir():
                shutil.copytree(source / name / sub, dest / name / sub)
        rows.append(f"| `{name}` | {what} | {spec} |")
    for name, (n, what, spec) in WRITER_CLEANER.items():
        _cleaner_case(n, dest / name)
        rows.append(f"| `{name}` | {what} | {spec} |")
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    (dest / "README.md").write_text(WRITER_README + "\n".join(rows) + "\n", encoding="utf-8")


def generate(out: Path, writer_from: Path | None = None) -> None:
    """Write the whole corpus into ``out`` (which must not exist yet)."""
    out.mkdir(parents=True)
    good = good_cases()
    for c in good:
        build_good(c, out)
    for mode in TIERED_MODES:
        build_tiered(mode, out)
    findings = {b.name: build_bad(b, out) for b in BAD}
    build_writer(out, writer_from)
    (out / "README.md").write_text(readme(good, findings), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=GOLDEN / "corpus")
    ap.add_argument("--writer-from", type=Path, default=GOLDEN / "corpus" / "writer",
                    help="the Kafka-written writer cases (../shared/golden-kafka/writer; default: keep golden/corpus/writer's)")
    args = ap.parse_args(argv)
    tmp = args.out.with_name(args.out.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    generate(tmp, args.writer_from)
    if args.out.exists():
        shutil.rmtree(args.out)
    tmp.rename(args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
