"""``kafkalog.scan``, ``info`` and ``cat`` over S3 (moto's server on 127.0.0.1): the same rows and
inventory as the local copy, with the offset index sending a start offset's read to its byte."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import kafkalog
from helpers import GOLDEN
from kafkalog.tools.cli import main

pytestmark = pytest.mark.s3

WEEBEE = GOLDEN / "real" / "cp-latest-weebee" / "kafka" / "data"
CP760 = GOLDEN / "real" / "cp760-flink-on-prem" / "data"
BUCKET = "kafkalog-scan"


@pytest.fixture
def store(s3, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:  # noqa: ANN001 - fixture
    import s3fs

    import s3_server

    if not getattr(s3, "_scan_uploaded", False):
        s3_server.upload(s3, BUCKET, [*s3_server.tree(WEEBEE, "weebee"), *s3_server.tree(CP760, "cp760")])
        s3._scan_uploaded = True
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3


def test_scan_of_an_s3_data_dir_equals_the_local_scan(store: object) -> None:
    local = kafkalog.scan(WEEBEE, include_internal=True).read_all()  # weebee's records are mostly __consumer_offsets'
    remote = kafkalog.scan(f"s3://{BUCKET}/weebee", include_internal=True).read_all()
    assert remote.num_rows > 100 and remote.equals(local)
    assert kafkalog.scan(f"s3://{BUCKET}/weebee").read_all().equals(kafkalog.scan(WEEBEE).read_all())
    glob = kafkalog.scan(f"s3://{BUCKET}/cp760/_schemas-*").read_all()
    assert glob.equals(kafkalog.scan(CP760 / "_schemas-0").read_all())


def test_a_start_offset_reads_from_its_indexed_byte(store) -> None:  # noqa: ANN001 - fixture
    part = "cp760/_confluent-monitoring-0"
    size = (CP760 / "_confluent-monitoring-0" / "00000000000000000000.log").stat().st_size
    seen = len(store.requests())
    t = kafkalog.scan(f"s3://{BUCKET}/{part}", start_offset=2800, columns=["offset"]).read_all()
    assert t.column("offset")[0].as_py() >= 2800
    fetched = store.bytes_fetched(f"{BUCKET}/{part}/00000000000000000000.log", since=seen)
    assert 0 < fetched < size / 2


def test_info_and_cat_of_s3(store: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--json", str(WEEBEE)]) == 0
    local = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert main(["info", "--json", f"s3://{BUCKET}/weebee"]) == 0
    remote = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [dict(o, dir=None) for o in remote] == [dict(o, dir=None) for o in local]
    assert remote[0]["dir"].startswith(f"s3://{BUCKET}/weebee/")
    assert main(["cat", f"s3://{BUCKET}/cp760", "-t", "_schemas", "-o", "-2", "-f", "%o\\n"]) == 0
    assert main(["cat", str(CP760), "-t", "_schemas", "-o", "-2", "-f", "%o\\n"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[:2] == out[2:]
