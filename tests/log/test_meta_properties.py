"""``meta.properties`` (SPEC §5.6, R-CKPT-09): Kafka-written files read as Kafka reads them, bad ones refused.

Positive cases are the files brokers wrote in golden/real (values below copied from their text);
the refusals follow MetaProperties.Builder and MetaPropertiesVersion.fromNumber (Kafka @1eb7644).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.errors import CorruptIndexError, MetaPropertiesError
from kafkalog.format.checkpoints import MetaProperties, read_meta_properties, read_properties
from kafkalog.tools.validate import verify

REAL = GOLDEN / "real"

#: (file under golden/real, what the broker wrote in it)
KAFKA_WRITTEN = [
    ("kafka310-bheem/kafka-logs/meta.properties", MetaProperties(0, "P4mWrUMKRvm3AylnZYNBaQ", 0, None)),
    ("kafka271-donaldy/kafka-logs/meta.properties", MetaProperties(0, "d0053poFTbGwSWThjV1DEg", 0, None)),
    ("zk-danielmorales9-kafkafun/data/kafka/meta.properties", MetaProperties(0, "UAh5RmlKQJqK6xvZ2PrLjQ", 0, None)),
    ("kraft-metadata-christseng89/kafka-logs/meta.properties", MetaProperties(1, "NfneYjE3SpS3Orx0jFuqGA", 1, None)),
    ("cp760-flink-on-prem/data/meta.properties", MetaProperties(1, "MkU3OEVBNTcwNTJENDM2Qg", 1, None)),
    ("cp-latest-weebee/kafka/data/meta.properties", MetaProperties(1, "test-cluster-id", 1, "lGeBS8O4_dDn0a9z4uM_bQ")),
]


@pytest.mark.rule("R-CKPT-09")
@pytest.mark.parametrize(("rel", "expected"), KAFKA_WRITTEN, ids=[r.split("/")[0] for r, _ in KAFKA_WRITTEN])
def test_kafka_written_meta_properties(rel: str, expected: MetaProperties) -> None:
    assert read_meta_properties(REAL / rel) == expected


@pytest.mark.rule("R-CKPT-09")
def test_a_file_without_version_is_version_0() -> None:
    assert read_meta_properties(data=b"#\nbroker.id=3\ncluster.id=abc\n") == MetaProperties(0, "abc", 3, None)
    assert read_meta_properties(data=b"") == MetaProperties(0, None, None, None)  # v0 guarantees no field
    # v0 reads its id from broker.id only; a node.id there is not the id
    assert read_meta_properties(data=b"version=0\nnode.id=4\n").node_id is None
    # Properties.load syntax: ':' and whitespace separators, CRLF, version trimmed as fromNumberString does
    assert read_meta_properties(data=b"version : 1 \r\nnode.id 7\r\ncluster.id:c\r\n") == MetaProperties(1, "c", 7, None)


BAD = [
    ("version=2\nnode.id=1\ncluster.id=c\n", "version=2", "unknown meta.properties version 2"),
    ("version=-1\n", "version=-1", "unknown meta.properties version -1"),
    ("cluster.id=c\nversion=one\n", "version=one", "invalid meta.properties version"),
    ("version=1\ncluster.id=c\n", None, "no node.id"),
    ("version=1\nnode.id=1\n", None, "no cluster.id"),
    ("version=1\ncluster.id=c\nnode.id=x1\n", "node.id=x1", "node.id 'x1' is not a base-10 int32"),
    ("version=1\ncluster.id=c\nnode.id=2147483648\n", "node.id=2147483648", "not a base-10 int32"),
    ("broker.id=1.5\n", "broker.id=1.5", "broker.id '1.5' is not a base-10 int32"),
    ("version=1\ncluster.id=c\nnode.id=1\ndirectory.id=not-a-uuid\n", "directory.id=not-a-uuid", "not a base64 UUID"),
]


@pytest.mark.rule("R-CKPT-09")
@pytest.mark.parametrize(("text", "bad_line", "message"), BAD)
def test_bad_meta_properties_are_refused(tmp_path: Path, text: str, bad_line: str | None, message: str) -> None:
    p = tmp_path / "meta.properties"
    p.write_text(text)
    with pytest.raises(MetaPropertiesError, match=message) as e:
        read_meta_properties(p)
    assert isinstance(e.value, CorruptIndexError)
    assert e.value.file == str(p)
    assert e.value.position == (text.index(bad_line) if bad_line else 0)


def test_java_properties_syntax() -> None:
    data = b"  # comment \\\nk1 = v1\n! other\nk2:v\\\n    2\nk\\ 3=\\u0041\\tB\nk4\n"
    assert read_properties(data=data) == {"k1": "v1", "k2": "v2", "k 3": "A\tB", "k4": ""}


@pytest.mark.rule("R-CKPT-09")
def test_verify_and_cli_report_a_bad_meta_properties(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "legacy-0", logdir / "legacy-0")
    (logdir / "meta.properties").write_text("version=1\nnode.id=1\n")
    report = verify(logdir)
    [finding] = report.errors
    assert finding.file == str(logdir / "meta.properties") and "no cluster.id" in finding.message
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "verify", "--json", str(logdir)], capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    [line] = [f for f in map(json.loads, proc.stdout.splitlines()) if f["severity"] == "error"]
    assert line["file"].endswith("meta.properties") and "no cluster.id" in line["message"]
    # dump covers what kafka-dump-log covers: meta.properties is not among them, and nothing breaks
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", str(logdir)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    # a good one verifies clean
    (logdir / "meta.properties").write_text("#\nversion=1\nnode.id=1\ncluster.id=c\n")
    assert verify(logdir).ok
