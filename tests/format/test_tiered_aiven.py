"""Reading what Aiven's tiered-storage plug-in wrote (golden/tiered/aiven: its own RSM at commit
8fb15816 over the first four segments of golden-0), in its four modes, against Kafka's files and
Kafka's dump of them: the plug-in's objects must give back the broker's bytes."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog.errors import (
    CorruptChunkError,
    DataKeyError,
    ManifestError,
    RemoteObjectMissingError,
    TieredStorageError,
    TruncatedObjectError,
)
from kafkalog.format.tiered_aiven import (
    Keyring,
    LocalStore,
    RemoteSegment,
    parse_manifest,
    parse_object_key,
    read_private_keys,
)
from kafkalog.tools.dump import DumpOptions, dump

pytest.importorskip("Crypto", reason="the tiered extra (pycryptodome) decrypts the encrypted modes")

AIVEN = GOLDEN / "tiered" / "aiven"
LOGDIR = GOLDEN / "kafka" / "logdir" / "golden-0"
MODES = ("plain", "compression", "encryption", "compression-encryption")
PARTITION = "tiered/golden-AAAAAAAAAAAAAAAAAAAAAQ/0"
SEGMENTS = {0: "QuyNXbcGOpuuPRwzU3A9Qg", 51: "XK9leFyiMSS1Irfujo8y4g", 102: "euXbbZVvN-ex0b3jjY4a9w", 146: "Txf2Fq7KP2ucLraPiJZ7SQ"}
NEXT = {0: 51, 51: 102, 102: 146, 146: 190}


def keys() -> Keyring:
    return read_private_keys([f"key1={AIVEN / 'keys' / 'private.pem'}"])


def segment(mode: str, base: int, root: Path = AIVEN) -> RemoteSegment:
    return RemoteSegment(LocalStore(root / mode), f"{PARTITION}/{base:020d}-{SEGMENTS[base]}", keys())


def kafka_lines(kind: str, base: int) -> list[dict]:
    """Kafka's dump of golden-0's file ``<base>.<kind>``, without ``file``."""
    name = f"golden-0/{base:020d}.{kind}"
    return [{k: v for k, v in o.items() if k != "file"} for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["file"] == name]


@pytest.mark.rule("R-TIER-03", "R-TIER-04", "R-TIER-05", "R-TIER-06")
@pytest.mark.parametrize("mode", MODES)
def test_each_mode_gives_back_the_brokers_segment_bytes_and_indexes(mode: str) -> None:
    for base in SEGMENTS:
        seg = segment(mode, base)
        m = seg.manifest
        assert (m.start_offset, m.end_offset, m.topic, m.partition) == (base, NEXT[base] - 1, "golden", 0)
        assert m.chunk_index_type == ("variable" if "compression" in mode else "fixed")
        assert len(m.chunks) == -(-m.original_file_size // 512) >= 4
        with seg.open_log() as f:
            assert f.read() == (LOGDIR / f"{base:020d}.log").read_bytes()
        assert seg.index_part("offset") == (LOGDIR / f"{base:020d}.index").read_bytes()
        assert seg.index_part("producerSnapshot") == (LOGDIR / f"{NEXT[base]:020d}.snapshot").read_bytes()
        txn = LOGDIR / f"{base:020d}.txnindex"
        assert (seg.index_part("transaction") or b"") == (txn.read_bytes() if txn.exists() else b"")
        epochs = [(e, int(o)) for e, o in (line.split() for line in seg.index_part("leaderEpoch").decode().splitlines()[2:])]
        assert epochs and all(o < NEXT[base] for _e, o in epochs)


@pytest.mark.rule("R-TIER-03")
def test_ranged_reads_across_chunk_boundaries_fetch_only_the_chunks_they_touch() -> None:
    seg = segment("compression-encryption", 51)
    want = (LOGDIR / "00000000000000000051.log").read_bytes()
    seg.manifest  # noqa: B018 - read the manifest first, so the count below is the chunks'
    before = seg.fetched
    with seg.open_log() as f:
        f.seek(510)
        assert f.read(4) == want[510:514]  # the last bytes of chunk 0 and the first of chunk 1
    chunk_bytes = sum(c.transformed_size for c in seg.manifest.chunks[:2])
    assert seg.fetched - before == chunk_bytes
    with seg.open_log() as f:
        f.seek(1500)
        assert f.read() == want[1500:]


def test_batches_from_an_offset_start_at_the_index_entry_and_read_the_chunks_after_it() -> None:
    seg = segment("compression-encryption", 146)
    batches = list(seg.batches(start_offset=180))
    assert batches[0].base_offset <= 180 <= batches[0].last_offset
    want = [b for b in kafka_lines("log", 146) if b["type"] == "batch" and b["lastOffset"] >= 180]
    assert [(b.position, b.base_offset, b.crc) for b in batches] == [(w["position"], w["baseOffset"], w["crc"]) for w in want]
    full = segment("compression-encryption", 146)
    list(full.batches())
    assert seg.fetched < full.fetched


def test_dump_json_of_each_mode_equals_kafkas_dump_of_the_four_segments() -> None:
    expected = []
    for base in SEGMENTS:
        for kind in ("index", "log", "timeindex", "txnindex"):
            expected += [(base, kind, o) for o in kafka_lines(kind, base)]
    for mode in MODES:
        out, err = io.StringIO(), io.StringIO()
        result = dump([str(AIVEN / mode)], DumpOptions(fmt="json", keys=keys()), out, err)
        assert result.errors == [], result.errors
        got = [json.loads(line) for line in out.getvalue().splitlines()]
        by_kind = {"offsetIndexEntry": "index", "timeIndexEntry": "timeindex", "abortedTxn": "txnindex", "batch": "log", "record": "log"}
        got_kafka = [(int(o["file"].rsplit("/", 1)[1][:20]), by_kind[o["type"]], {k: v for k, v in o.items() if k != "file"})
                     for o in got if o["type"] in by_kind]
        assert sorted(got_kafka, key=_order) == sorted(expected, key=_order), mode
        assert sum(o["type"] == "record" for o in got) == 190
        files = {o["file"] for o in got}
        assert files == {f"{PARTITION}/{b:020d}-{s}.{suffix}" for b, s in SEGMENTS.items() for suffix in ("log", "indexes")}
        snapshots = [o for o in got if o["type"] == "producerSnapshotEntry"]
        assert snapshots and all(o["file"].endswith(".indexes") for o in snapshots)


def _order(t: tuple[int, str, dict]) -> tuple:
    base, kind, o = t
    return base, kind, o.get("position", -1), o.get("i", -1), o.get("offset", -1), o.get("producerId", -1)


def test_object_keys_parse_as_the_plugin_makes_them() -> None:
    k = parse_object_key(f"{PARTITION}/00000000000000000051-XK9leFyiMSS1Irfujo8y4g.rsm-manifest")
    assert k is not None
    assert (k.topic, k.topic_id, k.partition, k.start_offset, k.segment_id, k.suffix) == (
        "golden", "AAAAAAAAAAAAAAAAAAAAAQ", 0, 51, "XK9leFyiMSS1Irfujo8y4g", "rsm-manifest")
    assert parse_object_key("golden-0/00000000000000000051.log") is None


# ------------------------------------------------------------------------------ bad input
def _copy(tmp_path: Path, mode: str) -> Path:
    shutil.copytree(AIVEN / mode, tmp_path / mode)
    return tmp_path


def _object(root: Path, mode: str, base: int, suffix: str) -> Path:
    return root / mode / PARTITION / f"{base:020d}-{SEGMENTS[base]}.{suffix}"


@pytest.mark.rule("R-TIER-04")
def test_a_corrupted_chunk_fails_its_gcm_tag_naming_the_object_and_chunk(tmp_path: Path) -> None:
    root = _copy(tmp_path, "compression-encryption")
    obj = _object(root, "compression-encryption", 51, "log")
    data = bytearray(obj.read_bytes())
    seg = segment("compression-encryption", 51, root)
    second = seg.manifest.chunks[1]
    data[second.transformed_position + 20] ^= 1
    obj.write_bytes(bytes(data))
    with pytest.raises(CorruptChunkError, match="chunk 1 fails its AES-GCM authentication tag") as e:
        list(seg.batches())
    assert (e.value.file, e.value.position) == (str(obj), second.transformed_position)


@pytest.mark.rule("R-TIER-04")
def test_a_truncated_log_object_is_a_missing_chunk(tmp_path: Path) -> None:
    root = _copy(tmp_path, "compression")
    obj = _object(root, "compression", 0, "log")
    seg = segment("compression", 0, root)
    last = seg.manifest.chunks[-1]
    obj.write_bytes(obj.read_bytes()[: last.transformed_position + 3])
    with pytest.raises(TruncatedObjectError, match=f"chunk {last.index} .* is missing") as e:
        list(seg.batches())
    assert (e.value.file, e.value.position) == (str(obj), last.transformed_position + 3)


@pytest.mark.rule("R-TIER-06")
def test_missing_objects_and_index_parts_are_named(tmp_path: Path) -> None:
    root = _copy(tmp_path, "plain")
    _object(root, "plain", 102, "log").unlink()
    with pytest.raises(RemoteObjectMissingError, match=r"\.log object is missing"):
        list(segment("plain", 102, root).batches())
    _object(root, "plain", 146, "indexes").unlink()
    with pytest.raises(RemoteObjectMissingError, match=r"\.indexes object is missing"):
        segment("plain", 146, root).offset_index()
    indexes = _object(root, "plain", 51, "indexes")
    indexes.write_bytes(indexes.read_bytes()[:230])  # the transaction index (bytes 215-248) cut
    with pytest.raises(TruncatedObjectError, match="the transaction index .* is missing") as e:
        segment("plain", 51, root).index_part("transaction")
    assert (e.value.file, e.value.position) == (str(indexes), 230)


@pytest.mark.rule("R-TIER-01")
def test_a_segment_without_its_manifest_is_an_unfinished_upload_and_not_dumped(tmp_path: Path) -> None:
    root = _copy(tmp_path, "compression")
    _object(root, "compression", 51, "rsm-manifest").unlink()
    out, err = io.StringIO(), io.StringIO()
    assert dump([str(root / "compression")], DumpOptions(fmt="json"), out, err).errors == []
    assert f"{_object(root, 'compression', 51, 'log')}: a tiered segment without its .rsm-manifest" in err.getvalue()
    got = {json.loads(line)["file"] for line in out.getvalue().splitlines()}
    assert not any("-XK9leFyiMSS1Irfujo8y4g" in f for f in got) and len(got) == 6


@pytest.mark.rule("R-TIER-02")
def test_a_manifest_of_an_unknown_version_is_refused() -> None:
    doc = json.loads(_object(AIVEN, "plain", 0, "rsm-manifest").read_bytes())
    doc["version"] = "2"
    with pytest.raises(ManifestError, match="manifest version '2' is unknown") as e:
        parse_manifest(json.dumps(doc).encode(), "x.rsm-manifest")
    assert e.value.file == "x.rsm-manifest"
    for bad in (b"", b"[1]", b'{"version":"1"}', b"\xff"):
        with pytest.raises(ManifestError):
            parse_manifest(bad, "x")


@pytest.mark.rule("R-TIER-05")
def test_a_wrong_or_missing_private_key_is_a_data_key_error(tmp_path: Path) -> None:
    from Crypto.PublicKey import RSA

    other = tmp_path / "other.pem"
    other.write_bytes(RSA.generate(2048).export_key(pkcs=8))
    wrong = RemoteSegment(LocalStore(AIVEN / "encryption"), f"{PARTITION}/{0:020d}-{SEGMENTS[0]}", read_private_keys({"key1": str(other)}))
    with pytest.raises(DataKeyError, match="does not unwrap this segment's data key"):
        list(wrong.batches())
    none = RemoteSegment(LocalStore(AIVEN / "encryption"), f"{PARTITION}/{0:020d}-{SEGMENTS[0]}")
    with pytest.raises(DataKeyError, match="key pair 'key1', and no private key has that id") as e:
        list(none.batches())
    assert e.value.file.endswith(".rsm-manifest")
    public = read_private_keys({"key1": str(AIVEN / "keys" / "public.pem")})
    with pytest.raises(DataKeyError, match="public key"):
        RemoteSegment(LocalStore(AIVEN / "encryption"), f"{PARTITION}/{0:020d}-{SEGMENTS[0]}", public).index_part("offset")
    assert "BEGIN" not in repr(keys())


def test_cryptography_refuses_the_plugins_oaep_and_pycryptodome_accepts_it() -> None:
    """Why the tiered extra is pycryptodome: the `cryptography` package has no OAEP with SHA3-512."""
    crypto = pytest.importorskip("cryptography")
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import padding

    private = serialization.load_pem_private_key((AIVEN / "keys" / "private.pem").read_bytes(), None)
    wrapped = segment("encryption", 0).manifest.encryption.wrapped_key
    with pytest.raises(UnsupportedAlgorithm):
        private.decrypt(wrapped, padding.OAEP(mgf=padding.MGF1(hashes.SHA3_512()), algorithm=hashes.SHA3_512(), label=None))
    assert crypto.__version__
    assert len(keys().unwrap("key1", wrapped, "x")) == 32


@pytest.mark.parametrize("fault", ["corrupt", "wrong-key", "missing-chunk"])
def test_the_cli_exits_1_with_the_object_named(tmp_path: Path, fault: str) -> None:
    import subprocess
    import sys

    from helpers import REPO

    mode = "compression-encryption"
    root = _copy(tmp_path, mode)
    obj = _object(root, mode, 102, "log")
    key = AIVEN / "keys" / "private.pem"
    if fault == "corrupt":
        data = bytearray(obj.read_bytes())
        data[-1] ^= 0x80
        obj.write_bytes(bytes(data))
    elif fault == "missing-chunk":
        obj.write_bytes(obj.read_bytes()[:600])
    else:
        from Crypto.PublicKey import RSA

        key = tmp_path / "other.pem"
        key.write_bytes(RSA.generate(2048).export_key(pkcs=8))
    run = subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", "--private-key", f"key1={key}", str(root / mode)],
                         capture_output=True, text=True, check=False, cwd=REPO, env={"PYTHONPATH": str(REPO / "codec"), "PATH": ""})
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    named = str(obj) if fault != "wrong-key" else str(obj.with_suffix(".rsm-manifest"))
    assert named in run.stderr
    assert issubclass(CorruptChunkError, TieredStorageError)
