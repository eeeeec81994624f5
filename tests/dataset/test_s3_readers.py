"""Every reader over S3 (moto's server on 127.0.0.1, request by request): ``scan``, ``cat``,
``export``, ``info`` and ``dump`` of an ``s3://`` prefix give what they give of the
local copy, read objects only with ranged GETs of what they read (no HEAD per file, nothing fetched
twice by ``scan``, at most 1.1x the bytes needed), write nothing to the bucket, and fetch no data-dir
checkpoint that the listing shows absent. The expected output is the local read's, checked against
Kafka's own dumps in tests/tools/test_readers_agree.py and tests/tools/test_golden_dump.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow.dataset as ds
import pytest

import kafkalog
from helpers import GOLDEN
from kafkalog.dataset.scan import plan_all
from kafkalog.log.replicas import discover
from kafkalog.tools.cli import main

pytestmark = pytest.mark.s3

CP760 = GOLDEN / "real" / "cp760-flink-on-prem" / "data"
BUCKET = "kafkalog-readers"
URL = f"s3://{BUCKET}/cp760"
BARE = f"s3://{BUCKET}/bare"  # cp760's partition dirs without the data dir's files (no checkpoints)


@pytest.fixture
def store(s3, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:  # noqa: ANN001 - fixture
    import s3fs

    import s3_server

    if not getattr(s3, "_readers_uploaded", False):
        bare = [(f, k.replace("cp760/", "bare/", 1)) for f, k in s3_server.tree(CP760, "cp760") if f.parent != CP760]
        s3_server.upload(s3, BUCKET, [*s3_server.tree(CP760, "cp760"), *bare])
        s3._readers_uploaded = True
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    s3fs.S3FileSystem.clear_instance_cache()
    yield s3


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()  # a new client: nothing listed or cached before
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def _export(out: Path) -> list[dict]:
    t = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    return sorted(t.to_pylist(), key=lambda r: (r["topic"], r["partition"], r["offset"]))


def test_every_reader_gives_the_local_output_over_s3(store, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:  # noqa: ANN001
    local, url = str(CP760), URL
    assert kafkalog.scan(url, include_internal=True).read_all().equals(kafkalog.scan(CP760, include_internal=True).read_all())
    for args in (["cat", "{}", "--include-internal", "-f", "%t %p %o %T %k %s\\n"], ["info", "--json", "{}"], ["dump", "--json", "{}"],
                 ["dump", "{}/_schemas-0"]):
        rc, out, err = _run(capsys, *[a.format(local) for a in args])
        rc_s3, out_s3, err_s3 = _run(capsys, *[a.format(url) for a in args])
        assert rc == rc_s3 == 0, (args, err_s3)
        assert len(out) > 100, args
        assert out_s3.replace(url, local) == out, args  # a URL is shown where the local path is
        assert err_s3.replace(url, local) == err, args
    for src, dest in ((local, tmp_path / "local"), (url, tmp_path / "s3")):
        assert _run(capsys, "export", src, "-o", str(dest), "--include-internal")[0] == 0
    assert _export(tmp_path / "s3") == _export(tmp_path / "local")


def test_reads_fetch_only_what_they_read_and_never_write(store, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:  # noqa: ANN001
    """Each reader: GETs (a listing, ranged reads), no HEAD of a file (``dump`` asks whether the
    path it is given exists), no PUT/POST/DELETE; ``scan``
    fetches each ``.log`` byte its plans read once and nothing else of a ``.log``; ``dump``, which
    reads every file whole, at most 1.1x the files' bytes; ``info`` a fraction of them."""
    import s3fs

    logs = {f"/{BUCKET}/cp760/{f.relative_to(CP760).as_posix()}": f.stat().st_size for f in CP760.rglob("*.log")}
    before = sorted(s3fs.S3FileSystem().find(f"{BUCKET}/cp760", detail=True).items())
    needed = sum((sl.end if sl.end is not None else sl.segment.size) - sl.start for p in plan_all(discover([URL])) for sl in p.slices)

    def reqs_of(call: object) -> list[dict]:
        seen = len(store.requests())
        s3fs.S3FileSystem.clear_instance_cache()
        call()  # type: ignore[operator]
        capsys.readouterr()
        return store.requests()[seen:]

    def log_bytes(reqs: list[dict]) -> int:
        return sum(r["bytes"] for r in reqs if r["method"] == "GET" and r["path"] in logs)

    runs = {
        "scan": lambda: kafkalog.scan(URL, include_internal=True).read_all(),
        "cat": lambda: main(["cat", URL, "--include-internal", "-f", "%o\\n"]),
        "export": lambda: main(["export", URL, "-o", str(tmp_path / "out"), "--include-internal"]),
        "info": lambda: main(["info", URL]),
        "dump": lambda: main(["dump", "--json", URL]),
    }
    for name, call in runs.items():
        reqs = reqs_of(call)
        assert {r["method"] for r in reqs} <= {"GET", "HEAD"}, (name, {r["method"] for r in reqs})
        assert [r["path"] for r in reqs if r["method"] == "HEAD" and r["path"] != f"/{BUCKET}/cp760"] == [], name  # none per file
        fetched = log_bytes(reqs)
        if name in ("scan", "cat", "export"):
            assert fetched == needed, name
        elif name == "info":
            assert 0 < fetched < sum(logs.values()) / 2, name
        else:
            assert sum(logs.values()) <= fetched <= 1.1 * sum(logs.values()), (name, fetched)
    assert sorted(s3fs.S3FileSystem().find(f"{BUCKET}/cp760", detail=True).items()) == before  # nothing written


def test_a_checkpoint_the_listing_shows_absent_is_not_fetched(store) -> None:  # noqa: ANN001 - fixture
    """The data dir's ``log-start-offset-checkpoint`` (and ``.kafka_cleanshutdown``, which says
    whether the recovery points count) are taken from the listing: asked for only when listed."""
    import s3fs

    def checkpoint_reqs(url: str) -> list[dict]:
        s3fs.S3FileSystem.clear_instance_cache()
        seen = len(store.requests())
        kafkalog.scan(url, include_internal=True).read_all()
        return [r for r in store.requests()[seen:] if "checkpoint" in r["path"].rsplit("/", 1)[-1] and "-0/" not in r["path"]
                or r["path"].endswith(".kafka_cleanshutdown")]

    assert checkpoint_reqs(BARE) == []
    assert [(r["method"], r["path"]) for r in checkpoint_reqs(URL)] == [("GET", f"/{BUCKET}/cp760/log-start-offset-checkpoint")]
    # the rows are the same: cp760's checkpoint moves no partition's start past its first segment
    assert kafkalog.scan(BARE, include_internal=True).read_all().equals(kafkalog.scan(URL, include_internal=True).read_all())
