"""A scratch directory laid out as the README's examples expect, its fingerprint, a read-only
mount of it, and what a consumer must see in it according to Kafka's own dump.

The scratch holds ``00000000000000000000.log`` (Kafka's v2-transactional records: idempotent and
transactional batches, COMMIT and ABORT markers) and ``data/orders-0/``, a copy of Kafka's
``transactional-0`` partition directory after an unclean shutdown: its last segment ends in a torn
batch, and that segment's ``.index``/``.timeindex``, every producer ``.snapshot`` and the
``leader-epoch-checkpoint`` are missing, so a broker-style load would write all of them. It also
holds ``cp760/``: the ``_schemas-0`` and ``promotions-0`` partitions of the bundled real Confluent
backup (values in the Schema Registry's wire format, Avro).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import GOLDEN, dump_batches, read_jsonl

KAFKA = GOLDEN / "kafka"
SEGMENT = "00000000000000000000.log"
ORDERS = Path("data") / "orders-0"
#: bytes cut from the end of the last segment (less than its last batch: a torn tail)
TORN_BYTES = 23


def make_scratch(root: Path) -> Path:
    """Fill ``root`` with the README's files (module docstring); returns ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(KAFKA / "records" / "v2-transactional" / SEGMENT, root / SEGMENT)
    d = root / ORDERS
    shutil.copytree(KAFKA / "logdir" / "transactional-0", d)
    last = sorted(d.glob("*.log"))[-1]
    os.truncate(last, last.stat().st_size - TORN_BYTES)
    for p in [last.with_suffix(".index"), last.with_suffix(".timeindex"), d / "leader-epoch-checkpoint", *d.glob("*.snapshot")]:
        p.unlink(missing_ok=True)
    # a real Confluent backup's sample: Avro values and the Schema Registry's _schemas topic (docs/formats.md)
    cp760 = GOLDEN / "real" / "cp760-flink-on-prem" / "data"
    for part in ("_schemas-0", "promotions-0"):
        shutil.copytree(cp760 / part, root / "cp760" / part)
    return root


def fingerprint(root: Path) -> dict[str, str]:
    """Every directory and file under ``root`` (relative path -> "dir" or SHA-256 of the bytes)."""
    out: dict[str, str] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in dirs:
            out[os.path.relpath(os.path.join(dirpath, name), root)] = "dir"
        for name in files:
            p = os.path.join(dirpath, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = hashlib.sha256(f.read()).hexdigest()
    return out


def consumer_truth(batches: list[dict]) -> tuple[list[int], list[int], int]:
    """(read_committed offsets, read_uncommitted offsets, last stable offset) from Kafka's dump alone:
    a transactional batch belongs to its producer's next control record (COMMIT or ABORT); a
    transaction with no marker yet is open, and the last stable offset is the first offset of the
    earliest open transaction."""
    open_txns: dict[int, list[dict]] = {}
    outcome: dict[int, str] = {}  # batch base offset -> COMMIT / ABORT
    for b in batches:
        if b["isControlBatch"]:
            for t in open_txns.pop(b["producerId"], []):
                outcome[t["baseOffset"]] = b["records"][0]["controlType"]
        elif b["isTransactional"]:
            open_txns.setdefault(b["producerId"], []).append(b)
    leo = batches[-1]["lastOffset"] + 1
    lso = min((txn[0]["baseOffset"] for txn in open_txns.values() if txn), default=leo)
    data = [b for b in batches if not b["isControlBatch"]]
    uncommitted = [r["offset"] for b in data for r in b["records"]]
    committed = [
        r["offset"] for b in data for r in b["records"]
        if r["offset"] < lso and (not b["isTransactional"] or outcome.get(b["baseOffset"]) == "COMMIT")
    ]
    return committed, uncommitted, lso


def orders_batches() -> list[dict]:
    """Kafka's dump of the batches left whole in the scratch's ``data/orders-0`` (the torn one dropped)."""
    batches = dump_batches(read_jsonl(KAFKA / "dump" / "logdir.jsonl"), "transactional-0/")
    last = sorted((KAFKA / "logdir" / "transactional-0").glob("*.log"))[-1]
    cut = last.stat().st_size - TORN_BYTES
    kept = [b for b in batches if b["file"] != f"transactional-0/{last.name}" or b["position"] + b["sizeInBytes"] <= cut]
    assert len(kept) == len(batches) - 1, "the cut must tear exactly the last batch"
    return sorted(kept, key=lambda b: b["baseOffset"])


@contextlib.contextmanager
def read_only_mount(source: Path) -> Iterator[Path]:
    """``source`` bind-mounted read-only at a new mount point (root only: CI runs as root); skips the
    calling test, with the reason, where mounting is not permitted."""
    if shutil.which("mount") is None:
        pytest.skip("read-only bind mount not possible here: no mount command")
    target = Path(tempfile.mkdtemp(prefix="kafkalog-ro-"))
    try:
        bind = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True, text=True, check=False)
        if bind.returncode != 0:
            pytest.skip(f"read-only bind mount not permitted here: {bind.stderr.strip() or bind.returncode}")
        try:
            ro = subprocess.run(["mount", "-o", "remount,ro,bind", str(target)], capture_output=True, text=True, check=False)
            if ro.returncode != 0:
                pytest.skip(f"read-only remount not permitted here: {ro.stderr.strip() or ro.returncode}")
            probe = target / ".probe"
            with pytest.raises(OSError):  # the mount must refuse writes, or the test proves nothing
                probe.touch()
            yield target
        finally:
            subprocess.run(["umount", str(target)], check=True)
    finally:
        target.rmdir()
