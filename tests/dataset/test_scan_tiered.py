"""``kafkalog.scan(tiered=PREFIX)`` (SPEC D.6): the Aiven plug-in's objects for golden-0's segments
0-146 give Kafka's own dump of those records in every mode; with a broker dir holding 146 onward,
every record of golden-0 once, in offset order; a missing tiered segment is data loss."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kafkalog
from helpers import GOLDEN, read_jsonl
from kafkalog.errors import DataLossError, LogNotFoundError

pytest.importorskip("Crypto", reason="the tiered extra (pycryptodome) decrypts the encrypted modes")

AIVEN = GOLDEN / "tiered" / "aiven"
KEYS = {"key1": AIVEN / "keys" / "private.pem"}
PARTITION = "tiered/golden-AAAAAAAAAAAAAAAAAAAAAQ/0"


def kafka_records() -> list[tuple]:
    """golden-0's records as Kafka's dump lists them (transaction markers left out, as a consumer
    receives them): (offset, timestamp, key hex, value hex)."""
    out, control = [], False
    for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"):
        if not o["file"].startswith("golden-0/") or not o["file"].endswith(".log"):
            continue
        if o["type"] == "batch":
            control = o["isControlBatch"]
        elif o["type"] == "record" and not control:
            out.append((o["offset"], o["timestamp"], o["key"], o["value"]))
    return out


def broker_dir(tmp_path: Path) -> Path:
    """A copy of golden-0 with segments 0, 51 and 102 deleted (retention after tiering): 146 is in both tiers."""
    d = tmp_path / "broker" / "golden-0"
    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", d)
    for f in d.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) <= 102:
            f.unlink()
    return d.parent


def rows(reader: object) -> list[tuple]:
    table = reader.read_all()  # type: ignore[attr-defined]
    assert set(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), strict=True)) <= {("golden", 0)}
    return [(r["offset"], int(r["timestamp"].timestamp() * 1000) if r["timestamp"] is not None else None,
             None if r["key"] is None else r["key"].hex(), None if r["value"] is None else r["value"].hex())
            for r in table.to_pylist()]


@pytest.mark.rule("R-TIER-07")
@pytest.mark.parametrize("mode", ["plain", "compression", "encryption", "compression-encryption"])
def test_scan_of_the_tiered_objects_gives_kafkas_records_of_segments_0_to_146(mode: str) -> None:
    want = [r for r in kafka_records() if r[0] < 190]
    assert len(want) > 150
    assert rows(kafkalog.scan(tiered=AIVEN / mode, private_keys=KEYS)) == want


@pytest.mark.rule("R-TIER-07")
@pytest.mark.parametrize("mode", ["plain", "compression-encryption"])
def test_scan_across_tiers_gives_every_record_of_golden0_once_in_offset_order(mode: str, tmp_path: Path) -> None:
    broker = broker_dir(tmp_path)
    want = kafka_records()
    got = rows(kafkalog.scan(broker, tiered=str(AIVEN / mode), private_keys=KEYS, batch_rows=7))
    assert got == want
    assert [g[0] for g in got] == sorted({g[0] for g in got}) and got[-1][0] > 190
    # ranges inside one tier, across the boundary, and inside the segment held in both tiers
    for lo, hi in ((10, 60), (180, 200), (150, 170), (190, 10**6)):
        got = rows(kafkalog.scan(broker, tiered=str(AIVEN / mode), private_keys=KEYS, start_offset=lo, end_offset=hi))
        assert got == [w for w in want if lo <= w[0] < hi], (lo, hi)


@pytest.mark.rule("R-TIER-07")
def test_a_missing_tiered_segment_is_data_loss_unless_gaps_are_allowed(tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    shutil.copytree(AIVEN / "compression", remote)
    for obj in (remote / PARTITION).glob("00000000000000000051-*"):
        obj.unlink()
    broker = broker_dir(tmp_path)
    with pytest.raises(DataLossError, match="offsets 51 to 101") as e:
        kafkalog.scan(broker, tiered=remote)
    assert e.value.offset == 51
    got = rows(kafkalog.scan(broker, tiered=remote, allow_gaps=True))
    assert got == [w for w in kafka_records() if not 51 <= w[0] <= 101]
    # a range that does not reach the hole reads without complaint
    assert rows(kafkalog.scan(broker, tiered=remote, start_offset=102)) == [w for w in kafka_records() if w[0] >= 102]


def test_times_select_across_tiers_as_offsetsForTimes_does(tmp_path: Path) -> None:
    """From the first record whose timestamp is at or after the time, through the remote segments'
    time indexes (parts of .indexes) or the broker's .timeindex."""
    broker = broker_dir(tmp_path)
    want = kafka_records()
    for at in (want[60][1], want[200][1]):  # one in the remote tier, one in the local one
        first = next(w[0] for w in want if w[1] >= at)
        got = rows(kafkalog.scan(broker, tiered=AIVEN / "compression", start_time=at))
        assert got == [w for w in want if w[0] >= first] and got


def test_read_committed_across_tiers_reads_what_it_reads_of_the_whole_dir(tmp_path: Path) -> None:
    whole = rows(kafkalog.scan(GOLDEN / "kafka" / "logdir" / "golden-0", read_committed=True))
    assert rows(kafkalog.scan(broker_dir(tmp_path), tiered=AIVEN / "encryption", private_keys=KEYS, read_committed=True)) == whole


def test_a_wrong_or_missing_prefix_is_reported(tmp_path: Path) -> None:
    with pytest.raises(LogNotFoundError):
        kafkalog.scan(tiered=tmp_path / "nowhere")
    with pytest.raises(ValueError, match="path"):
        kafkalog.scan()


@pytest.mark.rule("R-TIER-07")
def test_a_local_segment_overlapping_the_remote_ones_is_read_from_the_first_offset_not_given(tmp_path: Path) -> None:
    """Another leader rolled its segments elsewhere: its local segment 102 holds offsets 102-233
    (Kafka's batches of golden-0's segments 102, 146 and 190 in one file, no index), while the
    remote tier ends at 189. It gives 190-233 only, then segment 234."""
    d = tmp_path / "broker" / "golden-0"
    src = GOLDEN / "kafka" / "logdir" / "golden-0"
    shutil.copytree(src, d)
    for f in d.iterdir():
        if f.name[:20].isdigit() and int(f.name[:20]) < 234:
            f.unlink()
    (d / f"{102:020d}.log").write_bytes(b"".join((src / f"{base:020d}.log").read_bytes() for base in (102, 146, 190)))
    want = kafka_records()
    for lo in (None, 150, 200):
        got = rows(kafkalog.scan(d.parent, tiered=AIVEN / "plain", start_offset=lo))
        assert got == [w for w in want if lo is None or w[0] >= lo], lo


BUCKET = "kafkalog-tiered-scan"


@pytest.fixture
def aws(s3, monkeypatch):  # noqa: ANN001, ANN201 - fixtures
    """The plug-in's objects of the compression+encryption mode on the S3 server, the AWS variables pointing at it."""
    import s3fs

    import s3_server

    s3_server.upload(s3, BUCKET, list(s3_server.tree(AIVEN / "compression-encryption", "aiven")))
    for k, v in s3.env().items():
        monkeypatch.setenv(k, v)
    s3fs.S3FileSystem.clear_instance_cache()
    return s3


@pytest.mark.s3
@pytest.mark.rule("R-TIER-07")
def test_scan_reads_the_tiered_objects_from_s3(aws, tmp_path: Path) -> None:  # noqa: ANN001
    broker = broker_dir(tmp_path)
    assert rows(kafkalog.scan(broker, tiered=f"s3://{BUCKET}/aiven", private_keys=KEYS)) == kafka_records()
    # a narrow range: the manifests (to order the segments), and of segment 146 only its .indexes and some chunks
    seen = len(aws.requests())
    assert [r[0] for r in rows(kafkalog.scan(broker, tiered=f"s3://{BUCKET}/aiven", private_keys=KEYS, start_offset=180, end_offset=182))] == [180, 181]
    fetched: dict[str, int] = {}
    for r in aws.requests()[seen:]:
        if r["method"] == "GET" and r["path"].startswith(f"/{BUCKET}/aiven/"):
            name = r["path"].rsplit("/", 1)[1]
            fetched[name] = fetched.get(name, 0) + r["bytes"]
    stem = "00000000000000000146-Txf2Fq7KP2ucLraPiJZ7SQ"
    assert {n for n in fetched if not n.endswith(".rsm-manifest")} <= {f"{stem}.indexes", f"{stem}.log"}, fetched
    whole = (AIVEN / "compression-encryption" / PARTITION / f"{stem}.log").stat().st_size
    assert 0 < fetched[f"{stem}.log"] < whole / 2, (fetched, whole)
