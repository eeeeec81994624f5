"""Where the golden data lives, for every test module.

``golden/`` (bundled) always exists; ``../shared`` exists in CI and on developer machines, and
tests over it skip with a message naming the missing path when it is absent.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "golden"
SHARED = Path(os.environ.get("KAFKALOG_SHARED", REPO.parent / "shared"))


def need_shared(sub: str = "") -> Path:
    """The path ``../shared/<sub>``, skipping the calling test when it is not there."""
    p = SHARED / sub
    if not p.exists():
        pytest.skip(f"{p} is absent: tests over ../shared run only where it is checked out beside the repo")
    return p


def lost_partitions(set_dir: Path) -> set[str]:
    """The partition directories of a golden-real set whose ``.log`` was left out of the copy with
    its content unknown (ABSENT_FILES.json entries without ``all_zero_size``): their offsets are
    lost (SPEC §6.8); cp760-flink-on-prem: customers-0 and products-0."""
    out: set[str] = set()
    for absent in set_dir.rglob("ABSENT_FILES.json"):
        for entry in json.loads(absent.read_text())["files"]:
            if entry["path"].endswith(".log") and entry.get("all_zero_size") is None and (absent.parent / entry["path"]).parent.is_dir():
                out.add(entry["path"].split("/")[-2])
    return out


class _ReadOnlyLine(dict):
    """A line of a cached dump (:func:`read_jsonl`): other tests get the same object, so changing it
    raises; ``dict(line)`` is a copy to change."""

    def _refuse(self, *_args: object, **_kwargs: object) -> None:
        raise TypeError("a line of a cached Kafka dump (helpers.read_jsonl) is shared: change dict(line), a copy")

    __setitem__ = __delitem__ = pop = popitem = clear = update = setdefault = __ior__ = _refuse  # type: ignore[assignment]


#: Parsed gzipped dumps by (path, mtime, size): Kafka's dumps of the golden-real sets (cp760's is
#: 220,000 lines, 3 CPU seconds to parse) are read by a score of test modules, once per worker now.
_DUMPS: dict[tuple[str, int, int], list[dict]] = {}


def read_jsonl(path: Path) -> list[dict]:
    """All objects of a (possibly gzipped) JSON-lines file: a new list, whose objects are read-only
    when the file is gzipped (a dump parsed once per test process and shared)."""
    if path.suffix != ".gz":
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _DUMPS:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
        # one JSON array, parsed in one call: cp760's 220,000 lines 13% faster than a json.loads each
        _DUMPS[key] = [_ReadOnlyLine(o) for o in json.loads("[" + ",".join(lines) + "]")]
    return list(_DUMPS[key])


def dump_batches(lines: Iterable[dict], prefix: str = "") -> list[dict]:
    """Kafka's dump lines grouped: its batches (each with its records under ``"records"``) of the
    files whose name starts with ``prefix``, in dump order."""
    out: list[dict] = []
    for o in lines:
        if not o["file"].startswith(prefix):
            continue
        if o["type"] == "batch":
            out.append(dict(o, records=[]))
        elif o["type"] == "record":
            out[-1]["records"].append(o)
    return out


def real_set_root(set_dir: Path, expected: list[dict]) -> Path:
    """The log dir inside a golden-real set: the folder Kafka's dump paths are relative to."""
    first = expected[0]["file"]
    for dirpath, _dirs, files in os.walk(set_dir):
        cand = Path(dirpath)
        if (cand / first).is_file():
            return cand
        del files
    raise AssertionError(f"no folder under {set_dir} holds {first}")


def real_sets(base: Path) -> Iterator[tuple[str, Path, Path]]:
    """(name, set folder, expected dump) for every set with an expected dump under ``base``."""
    exp = base / "expected"
    if not exp.is_dir():
        return
    for f in sorted(exp.glob("*.jsonl.gz")):
        name = f.name[: -len(".jsonl.gz")]
        yield name, base / name, f


def bench_script(name: str) -> Iterator[ModuleType]:
    """Import ``bench/<name>.py`` for a module-scoped fixture (``yield from bench_script("crash")``),
    registered in ``sys.modules`` while in use because dataclasses look their module up there."""
    mod_name = f"kafkalog_bench_{name}"
    spec = importlib.util.spec_from_file_location(mod_name, REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(mod_name, None)


#: Kafka's own topics, which a consumer's pattern subscription leaves out (exclude.internal.topics=true):
#: Topic.isInternal's three (org.apache.kafka.common.internals.Topic), KRaft's metadata log and the
#: tiered-storage metadata topic; Confluent's ``_schemas`` and ``_confluent-*`` are ordinary topics.
KAFKA_INTERNAL_TOPICS = frozenset({
    "__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata", "__remote_log_metadata",
})


def log_starts(root: Path) -> dict[tuple[str, int], int]:
    """A data dir's ``log-start-offset-checkpoint`` as Kafka wrote it (version, count, then
    ``topic partition offset`` lines): where a consumer's "earliest" starts, when above the first segment."""
    f = root / "log-start-offset-checkpoint"
    if not f.exists():
        return {}
    lines = f.read_text().splitlines()[2:]
    return {(t, int(p)): int(o) for t, p, o in (line.rsplit(" ", 2) for line in lines if line.strip())}


def lossless_dump(path: Path) -> tuple[list[str], list[str]]:
    """``kafkalog dump --json --lossless PATH`` in this process, through the command's own code: its
    lines and the errors it reported."""
    import io

    from kafkalog.tools.dump import DumpOptions, dump

    out = io.StringIO()
    result = dump([str(path)], DumpOptions(fmt="json", lossless=True), out=out, err=io.StringIO())
    return out.getvalue().splitlines(), result.errors


def lossless_copy(path: Path) -> tuple[bytes, list[str]]:
    """``kafkalog dump --json --lossless PATH | kafkalog build -o COPY.log`` in this process: the
    copy's bytes and the errors the dump reported."""
    from kafkalog.tools.canonical import build_log

    lines, errors = lossless_dump(path)
    return b"".join(build_log(lines)), errors


def write_partition(root: Path, name: str, records: list[tuple[bytes | None, bytes | None]]) -> Path:
    """``root/name/00000000000000000000.log``: one batch of ``(key, value)`` records, as a producer
    with no idempotence writes them (tests that need a topic of their own values)."""
    from kafkalog.format.records.v2 import RecordBatchBuilder

    d = root / name
    d.mkdir(parents=True)
    b = RecordBatchBuilder(0)
    for i, (k, v) in enumerate(records):
        b.append(1_713_533_390_000 + i, k, v)
    (d / "00000000000000000000.log").write_bytes(b.build())
    return d


#: A record as the scan tests compare it: topic, partition, offset, key, value, timestamp
KafkaRow = tuple[str, int, int, bytes | None, bytes | None, int]


def hex_bytes(v: str | None) -> bytes | None:
    return None if v is None else bytes.fromhex(v)


def _partition_of(file: str) -> tuple[str, int]:
    d = file.rsplit("/", 2)[-2]
    topic, _, part = d.rpartition("-")
    return topic, int(part)


def kafka_rows(expected: list[dict], starts: dict[tuple[str, int], int] | None = None, *, internal: bool = False) -> list[KafkaRow]:
    """What a consumer of every partition receives, by Kafka's dump: each ``.log``'s records in
    order from the partition's log start offset (``starts``), control batches left out (Kafka's
    dump marks them), partitions sorted; Kafka's internal topics only with ``internal``."""
    out: dict[tuple[str, int], list[KafkaRow]] = defaultdict(list)
    control = False
    for o in expected:
        if not o["file"].endswith(".log"):
            continue
        if o["type"] == "batch":
            control = bool(o.get("isControlBatch"))
        elif o["type"] == "record" and not control:
            tp = _partition_of(o["file"])
            if o["offset"] >= (starts or {}).get(tp, 0) and (internal or tp[0] not in KAFKA_INTERNAL_TOPICS):
                out[tp].append((*tp, o["offset"], hex_bytes(o["key"]), hex_bytes(o["value"]), o["timestamp"]))
    return [r for tp in sorted(out) for r in out[tp]]


#: Kafka's golden-0 (``golden/kafka/logdir``): segments 0, 51, 102, 146, 190 and 234; its last batch,
#: offset 264, starts at byte 1277 of 00000000000000000234.log, and 00000000000000000265.snapshot
#: names its log end (Kafka's dump, ``golden/kafka/dump/logdir.jsonl``)
GOLDEN_0 = GOLDEN / "kafka" / "logdir" / "golden-0"


def many_partitions(root: Path, count: int, *, no_log: int | None = None, lost_tail: int | None = None) -> Path:
    """A data dir ``root`` of ``count`` partition dirs ``many-0`` ... (hard links to golden-0's files),
    with two kinds of damage deep in it: partition ``no_log`` lost ``00000000000000000102.log``
    (offsets 102 to 145, by the next segment's name), and partition ``lost_tail`` lost its last
    batch (its last ``.log`` cut before byte 1277, its ``265.snapshot`` gone, so that only the
    last segment's ``.timeindex``, whose last entry is for offset 264, says the log reached 265)."""
    root.mkdir(parents=True)
    files = sorted(GOLDEN_0.iterdir())
    for k in range(count):
        d = root / f"many-{k}"
        d.mkdir()
        for f in files:
            os.link(f, d / f.name)
    if no_log is not None:
        (root / f"many-{no_log}" / "00000000000000000102.log").unlink()
    if lost_tail is not None:
        d = root / f"many-{lost_tail}"
        (d / "00000000000000000265.snapshot").unlink()
        last = d / "00000000000000000234.log"
        data = last.read_bytes()[:1277]
        last.unlink()  # a hard link: the other partitions keep the whole file
        last.write_bytes(data)
    return root
