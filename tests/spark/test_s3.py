"""Spark reading an object store: a real broker data dir and a tiered-storage copy uploaded to an
S3 server (moto's, on 127.0.0.1) read through ``fs.*`` options exactly as Kafka dumped them, and
an offset-filtered query fetching only a small part of the data (counted by the server)."""

from __future__ import annotations

import json

import pytest

from helpers import GOLDEN, read_jsonl, real_set_root

from ._support import assert_same_rows, dump_batches, expected_rows, rows_of, segment_uuid, tiered_copy

pytestmark = pytest.mark.s3

CP760 = "cp760-flink-on-prem"
BUCKET = "kafkalog-spark"


@pytest.fixture(scope="module")
def cp760() -> tuple:
    """(log dir, Kafka's dump lines) of the bundled real set cp760-flink-on-prem."""
    lines = read_jsonl(GOLDEN / "real" / "expected" / f"{CP760}.jsonl.gz")
    return real_set_root(GOLDEN / "real" / CP760, lines), lines


@pytest.fixture(scope="module")
def store(s3, cp760, tmp_path_factory):  # noqa: ANN001, ANN201 - fixtures
    """The server with ``cp760/`` (the broker dir) and ``tiered/`` (golden-0 as Kafka's
    LocalTieredStorage lays it out) in the bucket."""
    import s3_server

    storage = tmp_path_factory.mktemp("tiered")
    tiered_copy(GOLDEN / "kafka" / "logdir" / "golden-0", storage, segment_uuid())
    s3_server.upload(s3, BUCKET, [*s3_server.tree(cp760[0], "cp760"), *s3_server.tree(storage, "tiered")])
    return s3


def _fs_options(server) -> dict[str, str]:  # noqa: ANN001 - S3Server
    """The server's endpoint and credentials as the source's ``fs.*`` options (JSON values decoded)."""
    return {f"fs.{k}": v if isinstance(v, str) else json.dumps(v) for k, v in server.storage_options().items()}


@pytest.mark.cluster
def test_broker_dir_and_tiered_copy_read_from_s3_equal_kafkas_dumps(spark, store, cp760) -> None:  # noqa: ANN001 - fixtures
    read = spark.read.format("kafkalog").options(**_fs_options(store)).option("includeHeaders", "true").option("includeInternalTopics", "true")
    table = read.load(f"s3://{BUCKET}/cp760").unionByName(read.load(f"s3://{BUCKET}/tiered")).toArrow()
    got = rows_of(table)
    want_broker = expected_rows(dump_batches(cp760[1]))
    want_tiered = expected_rows(dump_batches(read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"), "golden-0/"))
    assert len(want_broker) > 2000 and len(want_tiered) > 200
    assert_same_rows({k: v for k, v in got.items() if k[0] != "golden"}, want_broker)
    assert_same_rows({k: v for k, v in got.items() if k[0] == "golden"}, want_tiered)


def test_an_offset_filtered_query_fetches_a_small_part_of_the_data(spark, store, cp760) -> None:  # noqa: ANN001 - fixtures
    """Segments outside the offsets are not fetched, and the one holding them is read from the
    position its .index gives, with ranged requests."""
    root = cp760[0]
    total = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
    seen = len(store.requests())
    table = (
        spark.read.format("kafkalog").options(**_fs_options(store)).load(f"s3://{BUCKET}/cp760")
        .where("topic = '_confluent-monitoring' AND offset >= 2800").toArrow()
    )
    fetched = store.bytes_fetched(f"{BUCKET}/cp760/", since=seen)
    want = {k: v for k, v in expected_rows(dump_batches(cp760[1])).items() if k[0] == "_confluent-monitoring" and k[2] >= 2800}
    assert len(want) == 27
    assert_same_rows(rows_of(table), want)
    assert 0 < fetched < total / 20, (fetched, total)


def test_a_data_dir_is_discovered_with_one_recursive_listing(store, cp760) -> None:  # noqa: ANN001 - fixtures
    """Discovery on S3 finds what it finds on the local copy (the same partitions, segments and
    sizes) with a few listing requests, not one per partition directory."""
    import fsspec

    from kafkalog_spark.layout import discover

    def shape(replicas: list) -> list:
        return [(r.topic, r.partition, [(s.base_offset, s.size, bool(s.index), bool(s.timeindex)) for s in r.segments]) for r in replicas]

    local = discover(fsspec.filesystem("file"), [str(cp760[0])])
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **store.storage_options())
    seen = len(store.requests())
    remote = discover(fs, [f"{BUCKET}/cp760"])
    lists = [r for r in store.requests()[seen:] if r["method"] == "GET" and r["path"].rstrip("/") == f"/{BUCKET}"]
    assert len(local) >= 4
    assert shape(remote) == shape(local)
    assert 1 <= len(lists) <= 2, lists  # the _expand check of the root, and the listing


def test_values_decoded_with_the_schemas_topic_on_s3(spark, store, cp760) -> None:  # noqa: ANN001 - fixtures
    """valueFormat reads the _schemas topic from the same store, through the fs.* options, as the data is read."""
    pytest.importorskip("fastavro")
    read = (spark.read.format("kafkalog").options(**_fs_options(store)).option("subscribe", "promotions")
            .option("valueFormat", "avro").option("keyFormat", "string"))
    remote = read.load(f"s3://{BUCKET}/cp760").select("offset", "keyDecoded", "valueDecoded").orderBy("offset").collect()
    local = read.load(str(cp760[0])).select("offset", "keyDecoded", "valueDecoded").orderBy("offset").collect()
    assert len(remote) == 29 and remote == local
    assert sum(r.valueDecoded is not None for r in remote) > 0


def test_executors_open_segments_as_kafkalogs_readers_do(store, cp760) -> None:  # noqa: ANN001 - fixtures
    """A planned segment on S3 opens as every kafkalog reader opens objects (a UrlFile of ranged
    GETs of what is read, from the position read), not as an s3fs file with its own block cache;
    one deleted since planning raises FileNotFoundError at the open (reported as data loss), and one
    renamed ``.deleted`` since is read under that name."""
    import fsspec

    from kafkalog.format.files import UrlFile
    from kafkalog_spark.reader import _open_segment

    local = max(cp760[0].rglob("*.log"), key=lambda p: p.stat().st_size)
    data = local.read_bytes()
    key = f"{BUCKET}/cp760/{local.relative_to(cp760[0]).as_posix()}"
    fs = fsspec.filesystem("s3", skip_instance_cache=True, **store.storage_options())
    seen = len(store.requests())
    with _open_segment(fs, key) as f:
        assert isinstance(f, UrlFile)
        f.seek(len(data) // 2)
        assert f.read(1000) == data[len(data) // 2 : len(data) // 2 + 1000]
    gets = [r for r in store.requests()[seen:] if r["method"] == "GET"]
    assert len(gets) == 1 and gets[0]["range"].startswith(f"bytes={len(data) // 2}-") and gets[0]["bytes"] <= 1000 + UrlFile.MIN_BLOCK
    with pytest.raises(FileNotFoundError):
        _open_segment(fs, f"{BUCKET}/cp760/gone-0/00000000000000000000.log")
    fs.pipe_file(f"{BUCKET}/renamed/t-0/00000000000000000000.log.deleted", data[:5000])
    with _open_segment(fs, f"{BUCKET}/renamed/t-0/00000000000000000000.log") as f:
        assert f.read() == data[:5000]
