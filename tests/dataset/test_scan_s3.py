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


def test_a_scan_lists_its_prefix_once_and_fetches_each_byte_once(store) -> None:  # noqa: ANN001 - fixture
    """A new client (nothing listed before): one listing request for the prefix, no HEAD, and each
    ``.log`` fetched at most once, however it is read (the data-loss check reads the end of a
    last segment during planning; the scan is given those bytes, not fetched them again)."""
    import s3fs

    for name, local in (("cp760", CP760), ("weebee", WEEBEE)):
        s3fs.S3FileSystem.clear_instance_cache()
        seen = len(store.requests())
        remote = kafkalog.scan(f"s3://{BUCKET}/{name}", include_internal=True).read_all()
        reqs = store.requests()[seen:]
        assert remote.num_rows > 1000 and remote.equals(kafkalog.scan(local, include_internal=True).read_all())
        assert [r["method"] for r in reqs if r["path"].strip("/") == BUCKET] == ["GET"]  # the one listing
        assert [r for r in reqs if r["method"] == "HEAD"] == []
        fetched: dict[str, int] = {}
        for r in reqs:
            if r["method"] == "GET" and r["path"].endswith(".log"):
                fetched[r["path"]] = fetched.get(r["path"], 0) + r["bytes"]
        sizes = {f"/{BUCKET}/{name}/{f.relative_to(local).as_posix()}": f.stat().st_size for f in local.rglob("*.log")}
        assert fetched and all(n <= sizes[path] for path, n in fetched.items()), (fetched, sizes)
        assert sum(fetched.values()) <= 1.1 * sum(sizes.values())


def test_an_unreachable_endpoint_is_one_line_naming_the_url(tmp_path) -> None:  # noqa: ANN001 - fixture
    """Nothing listens at the endpoint: ``scan`` raises the OSError of an unreadable path naming the
    URL (not a library's exception), and the CLI prints it as one line and exits 3."""
    import os
    import socket
    import subprocess
    import sys

    from helpers import REPO

    pytest.importorskip("s3fs", reason="s3fs is not installed (extra [s3])")
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ACCESS_KEY_ID="k", AWS_SECRET_ACCESS_KEY="s", AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true",
               AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}", AWS_MAX_ATTEMPTS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "codec"), env.get("PYTHONPATH", "")])
    code = "import kafkalog\ntry:\n    kafkalog.scan('s3://kafkalog-nowhere/data')\nexcept OSError as e:\n    print(type(e).__name__, e)\n"
    api = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300)
    assert api.stdout.startswith("OSError s3://kafkalog-nowhere/data: EndpointConnectionError: "), (api.stdout, api.stderr)
    cli = subprocess.run([sys.executable, "-m", "kafkalog", "cat", "s3://kafkalog-nowhere/data"], env=env, cwd=tmp_path,
                         capture_output=True, text=True, check=False, timeout=300)
    assert cli.returncode == 3 and cli.stdout == ""
    assert cli.stderr.startswith("kafkalog cat: s3://kafkalog-nowhere/data: EndpointConnectionError: ") and cli.stderr.count("\n") == 1, cli.stderr


def test_a_range_is_fetched_into_the_callers_buffer(store, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001 - fixture
    """The read-ahead's ranged GET writes the body into the buffer it is given (a GET presigned by
    s3fs's client, received with ``http.client``): the bytes of the local file, fewer at the
    object's end, one GET with its Range each; a missing object is asked again through s3fs's own
    request, which makes it FileNotFoundError, as a local open's."""
    import s3fs

    from kafkalog.log import source
    from kafkalog.log.source import UrlStorage

    local = next(p for p in sorted(CP760.rglob("*.log")) if p.stat().st_size > 10_000)
    key = f"{BUCKET}/cp760/{local.relative_to(CP760).as_posix()}"
    data = local.read_bytes()
    storage = UrlStorage(s3fs.S3FileSystem())
    s3fs_gets = []
    s3fs_get = source._s3_get_into
    monkeypatch.setattr(source, "_s3_get_into", lambda *a: s3fs_gets.append(a[1]) or s3fs_get(*a))
    buffer = bytearray(b"x" * (len(data) + 100))
    before = len(store.requests())
    assert storage.read_range_into(key, 1000, memoryview(buffer)[:5000]) == 5000
    assert bytes(buffer[:5000]) == data[1000:6000] and buffer[5000:5001] == b"x"
    assert storage.read_range_into(key, len(data) - 10, memoryview(buffer)[:100]) == 10  # the object ends there
    assert bytes(buffer[:10]) == data[-10:]
    got = store.requests()[before:]
    assert [(r["method"], r["range"], r["bytes"]) for r in got] == [("GET", "bytes=1000-5999", 5000), ("GET", f"bytes={len(data) - 10}-{len(data) + 89}", 10)]
    assert s3fs_gets == []  # both received directly
    missing = f"{BUCKET}/cp760/nothing-0/00000000000000000000.log"
    with pytest.raises(FileNotFoundError):
        storage.read_range_into(missing, 0, memoryview(buffer)[:10])
    assert s3fs_gets == [missing, missing + ".deleted"]  # and under the name a broker renames a segment to


def test_a_kept_alive_connection_the_server_closed_is_replaced(store) -> None:  # noqa: ANN001 - fixture
    """The direct GETs keep their connections open when the server does; one the server has closed
    meanwhile (an idle timeout) fails on its next request, which is sent again on a new connection.
    (moto's server closes each connection after its answer: the closed one is put in the pool.)"""
    import http.client
    import socket
    from urllib.parse import urlsplit

    import s3fs

    from kafkalog.log.s3get import DirectGets

    local = next(p for p in sorted(CP760.rglob("*.log")) if p.stat().st_size > 10_000)
    key = f"{BUCKET}/cp760/{local.relative_to(CP760).as_posix()}"
    gets = DirectGets(s3fs.S3FileSystem())
    u = urlsplit(gets.fs.url(key))
    closed = http.client.HTTPConnection(u.hostname, u.port)
    closed.connect()
    closed.sock.shutdown(socket.SHUT_RDWR)  # as a server's close looks to the client: the next read finds the end
    gets._idle[(u.scheme, u.hostname, u.port)] = [closed]
    buffer = bytearray(100)
    before = len(store.requests())
    assert gets.get_into(key, 100, memoryview(buffer)) == 100 and bytes(buffer) == local.read_bytes()[100:200]
    assert [r["range"] for r in store.requests()[before:]] == ["bytes=100-199"]
    assert closed not in gets._idle[(u.scheme, u.hostname, u.port)]


def test_s3fs_request_options_and_proxies_keep_s3fs_requests(store) -> None:  # noqa: ANN001 - fixture
    """A filesystem whose GetObject carries arguments of its own (requester pays) or that reaches
    its endpoint through a proxy is read with s3fs's request, which carries them."""
    import s3fs

    from kafkalog.log.s3get import DirectGets

    key = f"{BUCKET}/cp760/_schemas-0/00000000000000000000.log"
    buffer = memoryview(bytearray(10))
    assert DirectGets(s3fs.S3FileSystem(requester_pays=True)).get_into(key, 0, buffer) is None
    proxied = s3fs.S3FileSystem(skip_instance_cache=True, config_kwargs={"proxies": {"http": "http://127.0.0.1:9", "https": "http://127.0.0.1:9"}})
    assert DirectGets(proxied).get_into(key, 0, buffer) is None
    assert DirectGets(s3fs.S3FileSystem(skip_instance_cache=True)).get_into(key, 0, buffer) == 10


def test_an_answer_other_than_the_range_is_left_to_s3fs_unread() -> None:
    """A server that answers a ranged GET with anything but that range (the whole object, an
    error) is asked again through s3fs; a large such answer is not read (its connection is closed),
    a small one (an error's document) is read so that the connection can be kept."""
    from kafkalog.log.s3get import DirectGets

    class Answer:
        def __init__(self, status: int, length: int, content_range: str | None) -> None:
            self.status, self.length, self.content_range, self.read_calls = status, length, content_range, 0

        def getheader(self, name: str) -> str | None:
            return self.content_range if name == "Content-Range" else None

        def read(self) -> bytes:
            self.read_calls += 1
            return b""

    view = memoryview(bytearray(100))
    whole = Answer(200, 50 << 20, None)
    assert DirectGets._body_into(whole, 0, view, None) is None and whole.read_calls == 0  # type: ignore[arg-type]
    error = Answer(403, 300, None)
    assert DirectGets._body_into(error, 0, view, None) is None and error.read_calls == 1  # type: ignore[arg-type]
    elsewhere = Answer(206, 100, "bytes 5-104/1000")  # not the range asked for
    assert DirectGets._body_into(elsewhere, 0, view, None) is None  # type: ignore[arg-type]
