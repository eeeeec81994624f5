"""The Spark source over Aiven's tiered-storage objects (golden/tiered/aiven, SPEC Appendix D): each
mode reads as Kafka's dump of golden-0's first four segments, and together with a broker dir holding
146 onward as golden-0 whole, each offset once; a missing tiered segment is data loss; a corrupt
chunk or a wrong key fails the task. The key files are read on the driver and their text travels
with the read settings, never in a repr."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog.errors import CorruptChunkError, DataKeyError

from ._support import assert_same_rows, dump_batches, expected_rows, read_in_process, rows_of

pytest.importorskip("Crypto", reason="the tiered extra (pycryptodome) decrypts the encrypted modes")

AIVEN = GOLDEN / "tiered" / "aiven"
KEY = AIVEN / "keys" / "private.pem"
PARTITION = "tiered/golden-AAAAAAAAAAAAAAAAAAAAAQ/0"
MODES = ("plain", "compression", "encryption", "compression-encryption")


def golden0(keep=lambda offset: True) -> dict:  # noqa: ANN001 - predicate
    lines = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["file"].startswith("golden-0/")]
    return {k: v for k, v in expected_rows(dump_batches(lines)).items() if keep(k[2])}


def broker_dir(tmp_path: Path) -> Path:
    d = tmp_path / "broker" / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    for f in d.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) <= 102:
            f.unlink()
    return d.parent


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_reads_as_kafkas_dump_of_the_four_segments(mode: str) -> None:
    table, slices, _ = read_in_process({"path": str(AIVEN / mode), "privateKeys": f"key1={KEY}", "includeHeaders": "true"})
    assert_same_rows(rows_of(table), golden0(lambda o: o < 190))
    assert {s.tiered for s in slices} == {True}
    assert "BEGIN" not in repr(slices)


@pytest.mark.rule("R-TIER-07")
def test_tiered_objects_and_the_broker_dir_give_golden0_once(tmp_path: Path) -> None:
    paths = f"{AIVEN / 'compression-encryption'},{broker_dir(tmp_path)}"
    table, slices, _ = read_in_process({"path": paths, "privateKeys": f"key1={KEY}", "includeHeaders": "true"})
    assert_same_rows(rows_of(table), golden0())  # rows_of fails on an offset read twice
    assert len(golden0()) > 250
    assert any(s.tiered for s in slices) and any(not s.tiered for s in slices)


def test_a_missing_tiered_segment_is_data_loss_unless_failondataloss_is_false(tmp_path: Path) -> None:
    from kafkalog_spark.errors import DataLossError

    remote = tmp_path / "remote"
    shutil.copytree(AIVEN / "plain", remote)
    for f in (remote / PARTITION).glob("00000000000000000051-*"):
        f.unlink()
    paths = f"{remote},{broker_dir(tmp_path)}"
    with pytest.raises(DataLossError, match="offsets 51 to 101"):
        read_in_process({"path": paths})
    table, _, _ = read_in_process({"path": paths, "failOnDataLoss": "false", "includeHeaders": "true"})
    assert_same_rows(rows_of(table), golden0(lambda o: not 51 <= o <= 101))


def test_a_corrupt_chunk_or_a_wrong_key_fails_the_read(tmp_path: Path) -> None:
    from Crypto.PublicKey import RSA

    remote = tmp_path / "remote"
    shutil.copytree(AIVEN / "compression-encryption", remote)
    log = next((remote / PARTITION).glob("00000000000000000102-*.log"))
    data = bytearray(log.read_bytes())
    data[700] ^= 1
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptChunkError, match="fails its AES-GCM authentication tag") as e:
        read_in_process({"path": str(remote), "privateKeys": f"key1={KEY}"})
    assert e.value.file.endswith(log.name)
    other = tmp_path / "other.pem"
    other.write_bytes(RSA.generate(2048).export_key(pkcs=8))
    with pytest.raises(DataKeyError, match="does not unwrap"):
        read_in_process({"path": str(AIVEN / "encryption"), "privateKeys": f"key1={other}"})


def test_the_keys_travel_as_text_and_never_show_in_a_repr() -> None:
    from kafkalog_spark.source import _keyring

    keys = _keyring((("key1", str(KEY)),))
    shipped = pickle.loads(pickle.dumps(keys))
    assert shipped.pems() == {"key1": KEY.read_bytes()}
    assert "PRIVATE" not in repr(shipped) and repr(shipped) == "Keyring(ids=['key1'])"


@pytest.mark.cluster
def test_spark_reads_the_tiered_objects_and_fails_the_task_on_a_bad_chunk(spark, tmp_path: Path) -> None:  # noqa: ANN001 - fixture
    read = spark.read.format("kafkalog").option("privateKeys", f"key1={KEY}").option("includeHeaders", "true")
    table = read.load(str(AIVEN / "compression-encryption")).toArrow()
    assert_same_rows(rows_of(table), golden0(lambda o: o < 190))
    remote = tmp_path / "remote"
    shutil.copytree(AIVEN / "compression-encryption", remote)
    log = next((remote / PARTITION).glob("00000000000000000146-*.log"))
    log.write_bytes(log.read_bytes()[:-40])  # the last chunk cut: missing
    with pytest.raises(Exception, match="chunk 3 .* is missing") as e:
        read.load(str(remote)).toArrow()
    assert "TruncatedObjectError" in str(e.value)
