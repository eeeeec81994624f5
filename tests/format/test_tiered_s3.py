"""The Aiven plug-in's objects read from an S3 server (moto's, on 127.0.0.1): ``kafkalog dump
--json s3://...`` prints what the dump of the local objects prints (which equals Kafka's dump of
the segments, test_tiered_aiven.py), and a narrow offset read fetches only the chunks that hold
the offsets asked for, plus that segment's manifest and ``.indexes`` (the server counts the bytes)."""

from __future__ import annotations

import base64
import io
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from helpers import GOLDEN, REPO, read_jsonl
from kafkalog.format.tiered_aiven import read_private_keys
from kafkalog.log.tiered import open_tiered
from kafkalog.tools.dump import DumpOptions, dump

pytestmark = pytest.mark.s3
pytest.importorskip("Crypto", reason="the tiered extra (pycryptodome) decrypts the encrypted modes")

AIVEN = GOLDEN / "tiered" / "aiven"
BUCKET = "kafkalog-tiered"
MODES = ("plain", "compression", "encryption", "compression-encryption")
KEY = AIVEN / "keys" / "private.pem"
PARTITION = "tiered/golden-AAAAAAAAAAAAAAAAAAAAAQ/0"


@pytest.fixture(scope="module")
def store(s3):  # noqa: ANN001, ANN201 - fixture
    import s3_server

    s3_server.upload(s3, BUCKET, [f for mode in MODES for f in s3_server.tree(AIVEN / mode, f"aiven/{mode}")])
    return s3


@pytest.fixture
def aws(store, monkeypatch):  # noqa: ANN001, ANN201 - fixtures
    """The AWS variables pointing at the server, in this process, with s3fs's cached clients dropped."""
    import s3fs

    for k, v in store.env().items():
        monkeypatch.setenv(k, v)
    s3fs.S3FileSystem.clear_instance_cache()
    return store


@pytest.mark.parametrize("mode", MODES)
def test_dump_json_of_the_objects_in_s3_equals_the_dump_of_the_local_objects(aws, mode: str, tmp_path: Path) -> None:  # noqa: ANN001
    local = io.StringIO()
    assert dump([str(AIVEN / mode)], DumpOptions(fmt="json", keys=read_private_keys([f"key1={KEY}"])), local, io.StringIO()).errors == []
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | aws.env()
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "codec"), env.get("PYTHONPATH", "")])
    run = subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", "--private-key", f"key1={KEY}", f"s3://{BUCKET}/aiven/{mode}"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout == local.getvalue()
    assert sum('"type":"record"' in line for line in run.stdout.splitlines()) == 190
    assert list(tmp_path.iterdir()) == []


def _chunk_sizes(manifest: dict) -> list[int]:
    """The transformed chunk sizes of a ``variable`` chunk index, decoded here from the plug-in's
    ChunkSizesBinaryCodec layout (count, base, width, values above base, last value)."""
    data = zstandard.ZstdDecompressor().decompressobj().decompress(base64.b64decode(manifest["chunkIndex"]["transformedChunks"]))
    count, base, width = struct.unpack_from(">iib", data)
    values = [int.from_bytes(data[9 + i * width : 9 + (i + 1) * width], "big") + base for i in range(count - 1)]
    return [*values, struct.unpack_from(">i", data, 9 + (count - 1) * width)[0]]


@pytest.mark.rule("R-TIER-03")
def test_a_narrow_offset_read_fetches_only_the_chunks_holding_the_offsets(aws) -> None:  # noqa: ANN001
    mode = "compression-encryption"
    main = f"{PARTITION}/00000000000000000146-Txf2Fq7KP2ucLraPiJZ7SQ"
    manifest_bytes = (AIVEN / mode / f"{main}.rsm-manifest").read_bytes()
    manifest = json.loads(manifest_bytes)
    sizes = _chunk_sizes(manifest)
    chunk = manifest["chunkIndex"]["originalChunkSize"]
    # the bytes of segment 146 that hold offsets 180 and 181, from Kafka's dump of golden-0
    kafka = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl")
             if o["file"] == "golden-0/00000000000000000146.log" and o["type"] == "batch" and o["lastOffset"] >= 180 and o["baseOffset"] <= 181]
    first, last = kafka[0]["position"], kafka[-1]["position"] + kafka[-1]["sizeInBytes"] - 1
    needed = range(first // chunk, last // chunk + 1)
    allowed_log = sum(sizes[i] for i in needed)
    assert allowed_log < sum(sizes) / 2

    seen = len(aws.requests())
    [part] = open_tiered(f"s3://{BUCKET}/aiven/{mode}", keys=read_private_keys([f"key1={KEY}"]))
    got = [r.offset for _s, _b, r in part.records(180, 182)]
    assert got == [180, 181]
    gets = [r for r in aws.requests()[seen:] if r["method"] == "GET" and r["path"].startswith(f"/{BUCKET}/aiven/")]
    by_object: dict[str, int] = {}
    for r in gets:
        name = r["path"].rsplit("/", 1)[1]
        by_object[name] = by_object.get(name, 0) + r["bytes"]
    stem = main.rsplit("/", 1)[1]
    assert set(by_object) <= {f"{stem}.rsm-manifest", f"{stem}.indexes", f"{stem}.log"}, by_object
    assert by_object[f"{stem}.rsm-manifest"] == len(manifest_bytes)
    assert by_object[f"{stem}.indexes"] == (AIVEN / mode / f"{main}.indexes").stat().st_size
    assert by_object[f"{stem}.log"] <= allowed_log, (by_object, allowed_log, list(needed))


@pytest.mark.spark
def test_the_spark_source_reads_the_objects_from_s3(aws) -> None:  # noqa: ANN001
    """In process, as Spark runs the source (tests/spark/_support.py), with the endpoint and
    credentials as fs.* options."""
    pytest.importorskip("pyspark")
    from spark._support import assert_same_rows, dump_batches, expected_rows, read_in_process, rows_of

    lines = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["file"].startswith("golden-0/")]
    want = {k: v for k, v in expected_rows(dump_batches(lines)).items() if k[2] < 190}
    opts = {"path": f"s3://{BUCKET}/aiven/compression-encryption", "privateKeys": f"key1={KEY}", "includeHeaders": "true",
            **{f"fs.{k}": json.dumps(v) if not isinstance(v, str) else v for k, v in aws.storage_options().items()}}
    table, slices, _ = read_in_process(opts)
    assert_same_rows(rows_of(table), want)
    assert slices and all(s.tiered for s in slices)
