"""An S3 server for the tests: moto's, on 127.0.0.1, in a process of its own, with a request log.

Run as ``python s3_server.py LOG``: serves moto's S3 on a free port of 127.0.0.1, prints
``port N`` once listening, and appends one JSON line per request to ``LOG`` (method, path, the
``Range`` header and the bytes of the response body), so tests can count what clients fetched.
:func:`start` runs it and :class:`S3Server` reads the log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

#: Credentials and region the tests use; moto accepts any.
ACCESS_KEY = "kafkalog-test"
SECRET_KEY = "kafkalog-test-secret"
REGION = "us-east-1"


def _counting(app, log_path: str):  # noqa: ANN001, ANN202 - WSGI callables
    """``app`` with each request's method, path, Range header and response size appended to ``log_path``."""
    lock = threading.Lock()

    def wrapped(environ, start_response):  # noqa: ANN001, ANN202 - WSGI
        respond = start_response
        if environ.get("HTTP_RANGE"):
            # S3 gives no checksum of the object with a ranged GET's part of it; moto does when the
            # range is the whole object, and botocore then computes a CRC over every byte it got
            def respond(status, headers, exc_info=None):  # noqa: ANN001, ANN202 - WSGI
                return start_response(status, [(k, v) for k, v in headers if not k.lower().startswith("x-amz-checksum-")], exc_info)

        # the body is taken whole and logged before a byte is sent, so a client that has its
        # answer finds its request in the log
        body = list(app(environ, respond))
        entry = {"method": environ["REQUEST_METHOD"], "path": environ.get("PATH_INFO", ""),
                 "range": environ.get("HTTP_RANGE"), "bytes": sum(len(c) for c in body)}
        with lock, open(log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")
        return body

    return wrapped


def serve(log_path: str) -> None:
    """Serve moto's S3 on 127.0.0.1 (a free port, printed) until terminated."""
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = _counting(DomainDispatcherApplication(create_backend_app), log_path)
    server = make_server("127.0.0.1", 0, app, threaded=True, request_handler=MotoRequestHandler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


@dataclass
class S3Server:
    """A running server: its endpoint, request log and process."""

    endpoint: str
    log: Path
    proc: subprocess.Popen

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point a client at this server (and keep botocore from
        asking an instance-metadata address for credentials: nothing leaves 127.0.0.1)."""
        return {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_ENDPOINT_URL": self.endpoint, "AWS_DEFAULT_REGION": REGION, "AWS_EC2_METADATA_DISABLED": "true"}

    def storage_options(self) -> dict[str, object]:
        """The same, as s3fs arguments (for ``fs.*`` options)."""
        return {"key": ACCESS_KEY, "secret": SECRET_KEY, "endpoint_url": self.endpoint, "client_kwargs": {"region_name": REGION}}

    def requests(self) -> list[dict]:
        """Every request served so far."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def bytes_fetched(self, prefix: str, since: int = 0) -> int:
        """Body bytes of the GET requests for objects under ``/prefix`` after the first ``since`` requests."""
        return sum(r["bytes"] for r in self.requests()[since:] if r["method"] == "GET" and r["path"].startswith("/" + prefix))

    def stop(self) -> None:
        """Terminate the server process."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start(log: Path, timeout: float = 60.0) -> S3Server:
    """Start the server; returns once it listens."""
    proc = subprocess.Popen([sys.executable, __file__, str(log)], stdout=subprocess.PIPE, stderr=open(log.with_suffix(".err"), "wb"),  # noqa: SIM115 - the child keeps it
                            stdin=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    line = proc.stdout.readline()  # blocks until the port is printed or the process dies
    if not line.startswith("port ") or time.monotonic() > deadline:
        proc.kill()
        raise RuntimeError(f"the S3 server did not start: {line!r}; see {log.with_suffix('.err')}")
    return S3Server(f"http://127.0.0.1:{int(line.split()[1])}", log, proc)


def upload(server: S3Server, bucket: str, files: Iterable[tuple[Path, str]]) -> None:
    """Create ``bucket`` if needed and put each (local file, key) into it."""
    import boto3

    s3 = boto3.client("s3", endpoint_url=server.endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY, region_name=REGION)
    if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
        s3.create_bucket(Bucket=bucket)
    for path, key in files:
        s3.upload_file(str(path), bucket, key)


def tree(root: Path, prefix: str) -> Iterator[tuple[Path, str]]:
    """(file, ``prefix/relative path``) for every file under ``root``."""
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = Path(dirpath, n)
            yield p, f"{prefix}/{p.relative_to(root).as_posix()}"


if __name__ == "__main__":
    serve(sys.argv[1])
