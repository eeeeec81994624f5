"""Schema sources (issue #34): the backup's ``_schemas`` topic replayed with the Schema Registry's rules
(Confluent's KafkaStoreReaderThread / KafkaStoreMessageHandler), schema files, and a live registry's
REST API served by a small HTTP server here. Expected values come from Kafka's dump of the real
cp760 backup, or from the records the tests write."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog.dataset.registry import Reference, Registry, RegistryClient, SchemaFiles, SchemasTopic
from kafkalog.dataset.scan import topic_records
from kafkalog.errors import RegistryUnreachableError, UnknownSchemaError

CP760 = GOLDEN / "real" / "cp760-flink-on-prem" / "data"


def _key(kind: str, **kw: object) -> bytes:
    return json.dumps({"keytype": kind, **kw, "magic": 1}).encode()


def _schema(subject: str, version: int, sid: int, text: str, **kw: object) -> tuple[bytes, bytes]:
    return (_key("SCHEMA", subject=subject, version=version),
            json.dumps({"subject": subject, "version": version, "id": sid, "schema": text, "deleted": False, **kw}).encode())


def _replay(*records: tuple[bytes | None, bytes | None]) -> SchemasTopic:
    return SchemasTopic.replay((k, v, n) for n, (k, v) in enumerate(records))


def test_the_real_schemas_topic_against_kafkas_dump() -> None:
    """cp760's _schemas (two NOOPs, eight schemas) gives each registered id its schema, as Kafka's dump holds the records."""
    dump = [r for r in read_jsonl(GOLDEN / "real" / "expected" / "cp760-flink-on-prem.jsonl.gz")
            if r["type"] == "record" and r["file"].startswith("_schemas-0/")]
    values = [json.loads(bytes.fromhex(r["value"])) for r in dump if r["value"] is not None]
    assert len(values) == 8 and len(dump) == 10
    records = topic_records([CP760], "_schemas")
    assert records is not None
    topic = SchemasTopic.replay(records)
    assert topic.skipped == []
    for v in values:
        s = topic.by_id(v["id"])
        assert s is not None and (s.text, s.type, s.subject, s.version, s.deleted) == (v["schema"], "AVRO", v["subject"], v["version"], False)
    assert topic.subjects() == {v["subject"]: [v["version"]] for v in sorted(values, key=lambda v: v["subject"])}
    assert topic.by_id(99) is None


def test_no_schemas_topic_is_none(tmp_path: Path) -> None:
    assert topic_records([GOLDEN / "kafka" / "logdir"], "_schemas") is None
    assert topic_records([tmp_path / "nothing"], "_schemas") is None


def test_last_value_wins_and_a_tombstone_removes() -> None:
    t = _replay(_schema("a-value", 1, 1, '"string"'), _schema("a-value", 2, 2, '"int"'), _schema("a-value", 2, 3, '"long"'),
                (_key("SCHEMA", subject="a-value", version=1), None))
    assert t.by_id(1) is None and t.by_id(2) is None
    assert t.by_id(3).text == '"long"'  # type: ignore[union-attr]
    assert t.subjects() == {"a-value": [2]}


def test_soft_deleted_schemas_still_decode_old_data() -> None:
    """A version soft-deleted (deleted: true, or by DELETE_SUBJECT) keeps its id; it is no longer a subject's latest."""
    t = _replay(_schema("a-value", 1, 1, '"string"'), _schema("a-value", 2, 2, '"int"', deleted=True),
                _schema("b-value", 1, 3, '"long"'), _schema("b-value", 2, 4, '"double"'),
                (_key("DELETE_SUBJECT", subject="b-value"), json.dumps({"subject": "b-value", "version": 1}).encode()))
    assert t.by_id(2).deleted and t.by_id(2).text == '"int"'  # type: ignore[union-attr]
    assert t.by_version("a-value", None).id == 1  # type: ignore[union-attr]
    assert t.by_id(3).deleted and not t.by_id(4).deleted  # type: ignore[union-attr]
    assert t.subjects() == {"a-value": [1], "b-value": [2]}


def test_clear_subject_removes_the_soft_deleted_versions() -> None:
    t = _replay(_schema("a-value", 1, 1, '"string"', deleted=True), _schema("a-value", 2, 2, '"int"'),
                (_key("CLEAR_SUBJECT", subject="a-value"), json.dumps({"subject": "a-value"}).encode()))
    assert t.by_id(1) is None and t.by_id(2) is not None


def test_noop_config_mode_and_undeserializable_keys() -> None:
    """NOOP, CONFIG and MODE change nothing that decodes; a key the Registry cannot read is skipped, as it skips it."""
    t = _replay((_key("NOOP"), None), (_key("CONFIG", subject=None), b'{"compatibilityLevel":"NONE"}'),
                (_key("MODE", subject=None), b'{"mode":"READWRITE"}'), (b"not json", b"{}"), (_key("SOMETHING"), b"{}"),
                _schema("a-value", 1, 1, '"string"'), (_key("SCHEMA", subject="a-value", version=2), b"{broken"))
    assert t.skipped == [3, 4, 6]
    assert t.subjects() == {"a-value": [1]}


def test_an_id_reused_for_another_schema_is_refused() -> None:
    """The Registry's validateUpdate ignores a record that gives a registered id another schema text."""
    t = _replay(_schema("a-value", 1, 1, '"string"'), _schema("b-value", 1, 1, '"int"'), _schema("c-value", 1, 1, '"string"'))
    assert t.by_id(1).text == '"string"'  # type: ignore[union-attr]
    assert t.subjects() == {"a-value": [1], "c-value": [1]}


def test_schema_types_and_references() -> None:
    t = _replay(_schema("a-value", 1, 1, "{}", schemaType="JSON", references=[{"name": "x.json", "subject": "x", "version": 3}]))
    s = t.by_id(1)
    assert s is not None and s.type == "JSON" and s.references == (Reference("x.json", "x", 3),)


def test_schema_files(tmp_path: Path) -> None:
    (tmp_path / "o.avsc").write_text('{"type":"record","name":"o","fields":[]}')
    (tmp_path / "j.json").write_text("{}")
    (tmp_path / "x.txt").write_text("{}")
    files = SchemaFiles({7: tmp_path / "o.avsc", 8: tmp_path / "j.json", 9: tmp_path / "x.txt"})
    assert files.by_id(7).type == "AVRO" and files.by_id(8).type == "JSON" and files.by_id(1) is None  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="ends in"):
        files.by_id(9)


def test_registry_asks_sources_in_order_and_names_an_unknown_id() -> None:
    first = _replay(_schema("a-value", 1, 1, '"string"'))
    second = _replay(_schema("a-value", 1, 1, '"int"'), _schema("b-value", 1, 2, '"long"'))
    reg = Registry([first, second])
    assert reg.by_id(1).text == '"string"' and reg.by_id(2).text == '"long"'
    assert reg.subjects() == {"a-value": [1], "b-value": [1]}
    with pytest.raises(UnknownSchemaError, match="schema id 5: no schema with this id"):
        reg.by_id(5)


class _Api(BaseHTTPRequestHandler):
    """The Schema Registry REST API's three GETs, over two schemas."""

    SCHEMAS = {1: {"schema": '"string"'}, 2: {"schema": "{}", "schemaType": "JSON"}}

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        routes = {"/schemas/ids/1": self.SCHEMAS[1], "/schemas/ids/2": self.SCHEMAS[2], "/subjects": ["a-value"],
                  "/subjects/a-value/versions": [1],
                  "/subjects/a-value/versions/latest": {"subject": "a-value", "version": 1, "id": 1, "schema": '"string"'}}
        if self.path == "/schemas/ids/500":
            self.send_response(500)
            self.end_headers()
            return
        body = routes.get(self.path)
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.end_headers()
        self.wfile.write(json.dumps(body if body is not None else {"error_code": 40403, "message": "Schema not found"}).encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def registry_url() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _Api)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_live_registry(registry_url: str) -> None:
    c = RegistryClient(registry_url)
    assert c.by_id(1).text == '"string"' and c.by_id(1).type == "AVRO"  # type: ignore[union-attr]
    assert c.by_id(2).type == "JSON"  # type: ignore[union-attr]
    assert c.by_id(3) is None
    assert c.by_version("a-value", None).id == 1  # type: ignore[union-attr]
    assert c.subjects() == {"a-value": [1]}
    with pytest.raises(RegistryUnreachableError, match="HTTP 500"):
        c.by_id(500)


def test_a_registry_that_cannot_be_reached() -> None:
    with pytest.raises(RegistryUnreachableError, match="cannot be reached"):
        RegistryClient("http://127.0.0.1:9", timeout=2).by_id(1)
