"""One partition across tiers (SPEC D.6): the Aiven plug-in's objects for golden-0's segments 0-146
plus a broker dir holding 146 onward give every record of golden-0 once, in offset order, as
Kafka's own dump of golden-0 lists them; a missing tiered segment is data loss."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog.errors import DataLossError
from kafkalog.format.tiered_aiven import read_private_keys
from kafkalog.log.tiered import open_tiered

pytest.importorskip("Crypto", reason="the tiered extra (pycryptodome) decrypts the encrypted modes")

AIVEN = GOLDEN / "tiered" / "aiven"
PARTITION = "tiered/golden-AAAAAAAAAAAAAAAAAAAAAQ/0"
KEYS = read_private_keys([f"key1={AIVEN / 'keys' / 'private.pem'}"])


def kafka_records() -> list[dict]:
    """Every record of golden-0 as Kafka's dump gives it, in file order."""
    return [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["file"].startswith("golden-0/") and o["type"] == "record"]


def broker_dir(tmp_path: Path) -> Path:
    """A copy of golden-0 with segments 0, 51 and 102 deleted, as retention leaves it once they are tiered."""
    d = tmp_path / "broker" / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    for base in (0, 51, 102):
        for suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot"):
            (d / f"{base:020d}{suffix}").unlink(missing_ok=True)
    return d.parent


def _as_kafka(seg_rec: tuple) -> dict:
    _seg, _batch, r = seg_rec
    return {"offset": r.offset, "timestamp": r.timestamp, "key": None if r.key is None else r.key.hex(),
            "value": None if r.value is None else r.value.hex()}


@pytest.mark.rule("R-TIER-07")
@pytest.mark.parametrize("mode", ["plain", "compression-encryption"])
def test_tiered_objects_and_the_broker_dir_give_every_record_once_in_offset_order(mode: str, tmp_path: Path) -> None:
    [part] = open_tiered(str(AIVEN / mode), str(broker_dir(tmp_path)), keys=KEYS)
    assert (part.topic, part.partition) == ("golden", 0)
    assert [(s.tier, s.base_offset) for s in part.segments] == [
        ("remote", 0), ("remote", 51), ("remote", 102), ("remote", 146), ("local", 146), ("local", 190), ("local", 234)]
    got = list(part.records())
    want = [{k: o[k] for k in ("offset", "timestamp", "key", "value")} for o in kafka_records()]
    assert [_as_kafka(x) for x in got] == want
    assert len(want) == len({w["offset"] for w in want}) > 250
    tiers = {x[2].offset: x[0].tier for x in got}
    assert {o for o, t in tiers.items() if t == "remote"} == {w["offset"] for w in want if w["offset"] < 190}
    # a range inside one tier, and one across the boundary
    assert [x[2].offset for x in part.records(180, 200)] == [w["offset"] for w in want if 180 <= w["offset"] < 200]


@pytest.mark.rule("R-TIER-01", "R-TIER-07")
def test_a_missing_tiered_segment_is_data_loss_unless_gaps_are_allowed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    remote = tmp_path / "remote"
    shutil.copytree(AIVEN / "compression", remote)
    for obj in (remote / PARTITION).glob("00000000000000000051-*"):
        obj.unlink()
    broker = broker_dir(tmp_path)
    [part] = open_tiered(str(remote), str(broker), keys=KEYS)
    with pytest.raises(DataLossError, match="offsets 51 to 101 are in no .log: the segment before ends at offset 50") as e:
        list(part.records())
    assert e.value.offset == 51 and e.value.file == str(remote / PARTITION)
    assert "remote segment 00000000000000000102-euXbbZVvN-ex0b3jjY4a9w.log, starts at 102" in str(e.value)
    [lenient] = open_tiered(str(remote), str(broker), keys=KEYS, allow_gaps=True)
    with caplog.at_level(logging.WARNING):
        offsets = [r.offset for _s, _b, r in lenient.records()]
    assert offsets == [o["offset"] for o in kafka_records() if not 51 <= o["offset"] <= 101]
    assert [(g.start, g.last) for g in lenient.gaps] == [(51, 101)]
    assert "data loss" in caplog.text
    # only the manifest gone: the segment is an unfinished upload, ignored with a warning, and the hole is data loss again
    shutil.rmtree(remote)
    shutil.copytree(AIVEN / "compression", remote)
    next((remote / PARTITION).glob("00000000000000000102-*.rsm-manifest")).unlink()
    warnings: list[str] = []
    [part] = open_tiered(str(remote), str(broker), keys=KEYS, warnings=warnings)
    assert len(warnings) == 1 and "without its .rsm-manifest" in warnings[0]
    with pytest.raises(DataLossError, match="offsets 102 to 145"):
        list(part.records())


def test_the_newest_local_segments_alone_and_the_remote_alone_are_each_one_log(tmp_path: Path) -> None:
    [remote_only] = open_tiered(str(AIVEN / "encryption"), keys=KEYS)
    assert [r.offset for _s, _b, r in remote_only.records()] == [o["offset"] for o in kafka_records() if o["offset"] < 190]
    with pytest.raises(FileNotFoundError):
        open_tiered(str(tmp_path / "nowhere"))
