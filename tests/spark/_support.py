"""Shared helpers for the Spark source tests: expected rows from Kafka's dumps, rows from Arrow,
in-process reads through the DataSource API, and builders of alternative layouts."""

from __future__ import annotations

import base64
import pickle
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
from pyspark import cloudpickle

from helpers import dump_batches  # noqa: F401 - re-exported for the Spark tests
from kafkalog_spark.source import KafkaLogDataSource

#: Row = (topic, partition, offset) -> (key hex, value hex, timestamp ms, timestampType, headers)
Row = tuple[str | None, str | None, int, int, tuple | None]
TIMESTAMP_TYPES = {"CreateTime": 0, "LogAppendTime": 1, "NoTimestampType": -1}


def split_tp(dirname: str) -> tuple[str, int]:
    topic, _, part = dirname.rpartition("-")
    return topic, int(part)


def expected_rows(batches: Iterable[dict], keep=None) -> dict[tuple[str, int, int], Row]:  # noqa: ANN001 - predicate
    """What Spark's Kafka source would return for the dumped batches: every record of every
    non-control batch (``keep(batch, record)`` may exclude more); headers null when there are none."""
    out: dict[tuple[str, int, int], Row] = {}
    for b in batches:
        if b.get("isControlBatch"):
            continue
        topic, part = split_tp(b["file"].split("/")[0])
        for r in b["records"]:
            if keep is not None and not keep(b, r):
                continue
            headers = tuple((h["key"], h["value"]) for h in r["headers"]) or None
            out[(topic, part, r["offset"])] = (r["key"], r["value"], r["timestamp"], TIMESTAMP_TYPES[b["timestampType"]], headers)
    return out


def rows_of(table: pa.Table | None) -> dict[tuple[str, int, int], Row]:
    """The rows of an Arrow table in the form of :func:`expected_rows`; duplicates fail."""
    if table is None:
        return {}
    d = table.to_pydict()
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    has_headers = "headers" in d
    out: dict[tuple[str, int, int], Row] = {}
    for i in range(table.num_rows):
        k = (d["topic"][i], d["partition"][i], d["offset"][i])
        assert k not in out, f"offset read twice: {k}"
        hdrs = d["headers"][i] if has_headers else None
        out[k] = (
            None if d["key"][i] is None else d["key"][i].hex(),
            None if d["value"][i] is None else d["value"][i].hex(),
            ts[i] // 1000,
            d["timestampType"][i],
            None if hdrs is None else tuple((h["key"], None if h["value"] is None else h["value"].hex()) for h in hdrs),
        )
    return out


def assert_same_rows(actual: dict, expected: dict) -> None:
    """Equal row sets, with a short report of the first differences."""
    missing = sorted(expected.keys() - actual.keys())
    extra = sorted(actual.keys() - expected.keys())
    wrong = sorted(k for k in expected.keys() & actual.keys() if expected[k] != actual[k])
    assert not (missing or extra or wrong), (
        f"{len(missing)} missing (first {missing[:3]}), {len(extra)} unexpected (first {extra[:3]}), "
        f"{len(wrong)} differ (first: {[(k, expected[k], actual[k]) for k in wrong[:2]]})"
    )


def read_in_process(options: dict[str, str], filters: list | None = None) -> tuple[pa.Table | None, list, list]:
    """Run the source as Spark does, in this process: reader, pushFilters, partitions, then a
    pickle round trip of the reader and every partition before read(). Returns (table, the
    segment slices of every input partition in log order, rejected filters). Used where Spark's
    separate Python workers cannot see this process's state (an in-memory filesystem, counters of
    opened files)."""
    ds = KafkaLogDataSource({k.lower(): v for k, v in options.items()})
    reader = ds.reader(ds.schema())
    rejected = list(reader.pushFilters(filters)) if filters is not None else []
    parts = reader.partitions()
    shipped = cloudpickle.loads(cloudpickle.dumps(reader))
    batches = [b for p in parts for b in shipped.read(pickle.loads(pickle.dumps(p)))]
    slices = sorted((s for p in parts for s in p.slices), key=lambda s: (s.topic, s.partition, s.log, s.start))
    return (pa.Table.from_batches(batches) if batches else None), slices, rejected


def segment_uuid() -> str:
    """A random 22-character url-safe base64 uuid, as Kafka prints Uuid."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def tiered_copy(partition_dir: Path, storage: Path, topic_id: str) -> Path:
    """Copy a partition dir as Kafka's LocalTieredStorage lays out offloaded segments:
    ``<topic>-<partition>-<topic id>/<offset>-<segment uuid>.{log,index,timeindex,txnindex,snapshot}``."""
    target = storage / f"{partition_dir.name}-{topic_id}"
    target.mkdir(parents=True)
    ids: dict[str, str] = {}
    for f in sorted(partition_dir.iterdir()):
        stem, dot, suffix = f.name.partition(".")
        if not stem.isdigit() or suffix not in ("log", "index", "timeindex", "txnindex", "snapshot"):
            continue
        seg = ids.setdefault(stem, segment_uuid())
        shutil.copy(f, target / f"{stem}-{seg}{dot}{suffix}")
    return target


def copy_segments(src: Path, dst: Path, bases: Iterable[int]) -> None:
    """Copy the files of the segments with the given base offsets (all suffixes) from ``src`` to ``dst``."""
    dst.mkdir(parents=True, exist_ok=True)
    wanted = {f"{b:020d}" for b in bases}
    for f in src.iterdir():
        if f.name.split(".")[0] in wanted:
            shutil.copy(f, dst / f.name)
