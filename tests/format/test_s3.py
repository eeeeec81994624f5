"""Reading from an object store: a real broker data dir uploaded to an S3 server (moto's, on
127.0.0.1) reads through ``kafkalog dump`` and the library exactly as the local copy, with
credentials and endpoint from the standard AWS variables, ranged requests, and nothing written
locally."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, REPO
from kafkalog.format.index import OffsetIndex
from kafkalog.format.records.stream import LogReader
from kafkalog.tools.dump import DumpOptions, dump

pytestmark = pytest.mark.s3

WEEBEE = GOLDEN / "real" / "cp-latest-weebee" / "kafka" / "data"  # 54 partitions, headers, internal topics
CP760 = GOLDEN / "real" / "cp760-flink-on-prem" / "data"
BUCKET = "kafkalog-lib"


@pytest.fixture(scope="module")
def store(s3):  # noqa: ANN001, ANN201 - fixture
    import s3_server

    s3_server.upload(s3, BUCKET, [*s3_server.tree(WEEBEE, "weebee"), *s3_server.tree(CP760, "cp760")])
    return s3


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafkalog", *args], env=env, cwd=cwd, capture_output=True, text=True, check=False)


def _isolated_env(tmp_path: Path, extra: dict[str, str]) -> tuple[dict[str, str], list[Path]]:
    """The environment without AWS settings of the machine, plus ``extra``, with HOME, TMPDIR and
    the working directory in empty folders (returned, so a test can check nothing was written)."""
    dirs = [tmp_path / d for d in ("home", "tmp", "cwd")]
    for d in dirs:
        d.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(extra, HOME=str(dirs[0]), TMPDIR=str(dirs[1]), PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "codec"), env.get("PYTHONPATH", "")])
    return env, dirs


def test_dump_json_of_an_s3_data_dir_equals_the_local_dump(store, tmp_path) -> None:  # noqa: ANN001 - fixtures
    env, dirs = _isolated_env(tmp_path, store.env())
    local = io.StringIO()
    assert dump([str(WEEBEE)], DumpOptions(fmt="json"), local, io.StringIO()).errors == []
    remote = _cli("dump", "--json", f"s3://{BUCKET}/weebee", env=env, cwd=dirs[2])
    assert remote.returncode == 0, remote.stderr
    assert len(local.getvalue().splitlines()) > 20000  # every batch, record, index entry and checkpoint
    assert remote.stdout == local.getvalue()
    text = _cli("dump", "-d", f"s3://{BUCKET}/cp760/_schemas-0/00000000000000000000.log", env=env, cwd=dirs[2])
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith(f"Dumping s3://{BUCKET}/cp760/_schemas-0/00000000000000000000.log\nLog starting offset: 0\n")
    assert [p for d in dirs for p in d.rglob("*")] == []  # reading created nothing locally


def test_dump_of_an_unreadable_s3_path_exits_3(store, tmp_path) -> None:  # noqa: ANN001 - fixtures
    env, dirs = _isolated_env(tmp_path, store.env())
    missing = _cli("dump", "--json", f"s3://{BUCKET}/no-such-dir", env=env, cwd=dirs[2])
    assert (missing.returncode, missing.stdout) == (3, "")
    assert missing.stderr == f"kafkalog dump: no such file or directory: s3://{BUCKET}/no-such-dir\n"
    no_credentials = {k: v for k, v in env.items() if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    denied = _cli("dump", "--json", f"s3://{BUCKET}/weebee", env=no_credentials, cwd=dirs[2])
    assert denied.returncode == 3
    assert denied.stderr.startswith(f"kafkalog dump: cannot read: s3://{BUCKET}/weebee: NoCredentialsError"), denied.stderr
    assert "Traceback" not in denied.stderr


def test_log_reader_reads_an_s3_segment_with_ranged_requests(store, monkeypatch) -> None:  # noqa: ANN001 - fixtures
    """LogReader and OffsetIndex open s3:// URLs (credentials from the AWS variables); reading from
    an indexed position fetches the bytes after it, not the segment."""
    import s3fs

    for k, v in store.env().items():
        monkeypatch.setenv(k, v)
    s3fs.S3FileSystem.clear_instance_cache()
    part = CP760 / "_confluent-monitoring-0"
    url = f"s3://{BUCKET}/cp760/_confluent-monitoring-0/00000000000000000000"
    with LogReader(part / "00000000000000000000.log") as local_reader:
        local = [(b.base_offset, b.data) for b in local_reader.batches()]
    with LogReader(url + ".log") as reader:
        assert [(b.base_offset, b.data) for b in reader.batches()] == local
        assert reader.name == url + ".log" and reader.size == (part / "00000000000000000000.log").stat().st_size

    index = OffsetIndex.read(url + ".index")
    assert index.offsets.tolist() == OffsetIndex.read(part / "00000000000000000000.index").offsets.tolist()
    offset, position = index.lookup(2800)
    assert position > 0
    seen = len(store.requests())
    with LogReader(url + ".log", start=position) as tail:
        batches = list(tail.batches())
    first = batches[0].base_offset
    assert first <= offset <= batches[0].last_offset  # Kafka indexes a batch by its last offset
    assert [b.data for b in batches] == [d for o, d in local if o >= first]
    fetched = store.bytes_fetched(f"{BUCKET}/cp760/_confluent-monitoring-0/", since=seen)
    assert fetched == reader.size - position  # one ranged GET from the position to the end
    assert fetched < reader.size / 10
