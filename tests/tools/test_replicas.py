"""Copies of one topic-partition read as one view (SPEC §6.9): a three-broker backup written with
kafkalog's log layer (:mod:`replica_backup`), given as one folder or as three paths in any order,
gives the same records to ``info``, ``cat``, ``scan`` and ``export``, and a diverged copy is
reported naming both copies. Expected records are the ones the backup's builder appended."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import kafkalog
from kafkalog.errors import DataLossError, ReplicaDivergenceError
from kafkalog.tools.cli import main
from kafkalog.tools.validate import verify
from replica_backup import LAGGING_END, RECORDS, UNCLEAN_AT, UNCLEAN_RECORDS, Backup, build_backup


@pytest.fixture(scope="module")
def backup(tmp_path_factory: pytest.TempPathFactory) -> Backup:
    return build_backup(tmp_path_factory.mktemp("replicas"))


def _ways(b: Backup) -> list[list[str]]:
    """The backup as one folder, as its three copies in every order, and as two of them (the lagging
    copy and the one with a hole hold every offset between them)."""
    copies = [b.copy(n) for n in (1, 2, 3)]
    return [[str(b.backup)], *(list(p) for p in itertools.permutations(copies)), [b.copy(3), b.copy(2)], [b.copy(2), b.copy(3)]]


def _want(records: dict[int, tuple[int, bytes, bytes]], start: int = 0) -> list[tuple[int, int, bytes, bytes]]:
    return [(o, ts, k, v) for o, (ts, k, v) in sorted(records.items()) if o >= start]


def _rows(table: pa.Table) -> list[tuple[int, int, bytes, bytes]]:
    d = table.to_pydict()
    ts = table.column("timestamp").cast(pa.int64()).to_pylist()
    return sorted(zip(d["offset"], [t // 1000 for t in ts], d["key"], d["value"], strict=True))


def _cat(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["cat", *args, "-f", "%o %T %k %s\\n"])
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def _lines(rows: list[tuple[int, int, bytes, bytes]]) -> list[str]:
    return [f"{o} {ts} {k.decode()} {v.decode()}" for o, ts, k, v in rows]


def _info(capsys: pytest.CaptureFixture[str], *paths: str) -> dict:
    assert main(["info", "--json", *paths]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    return json.loads(line)


@pytest.mark.rule("R-REP-01", "R-REP-03", "R-REP-05")
def test_a_folder_or_the_copies_in_any_order_give_every_record_once(backup: Backup, capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    want = _want(RECORDS)
    # each copy alone is short of the backup: broker-2 lags, broker-3 lost a segment (and says so)
    assert [r[0] for r in _rows(kafkalog.scan(backup.copy(2)).read_all())] == list(range(LAGGING_END))
    with pytest.raises(DataLossError) as lost:
        kafkalog.scan(backup.copy(3))
    assert (lost.value.gaps[0].start, lost.value.gaps[0].end) == (backup.hole.start, backup.hole.stop)
    for n, paths in enumerate(_ways(backup)):
        assert _rows(kafkalog.scan(paths).read_all()) == want, paths
        code, lines, err = _cat(capsys, *paths)
        assert (code, err) == (0, "") and lines == _lines(want), paths
        out = tmp_path / f"export-{n}"
        assert main(["export", *paths, "-o", str(out)]) == 0
        assert _rows(ds.dataset(out, format="parquet", partitioning="hive").to_table()) == want, paths
        info = _info(capsys, *paths)
        assert (info["logStartOffset"], info["endOffset"], info["dataLoss"], info["divergence"]) == (0, len(RECORDS), [], []), paths
        three = len(paths) == 1 or len(paths) == 3
        assert sorted(info["copies"]) == sorted(backup.copy(b) for b in ((1, 2, 3) if three else (2, 3))), paths
        # the most complete copy: broker-1 holds every offset; of the other two, broker-3 holds more than broker-2
        assert info["mostComplete"] == info["copies"][0] == backup.copy(1 if three else 3), paths


def test_info_shows_the_copies_in_its_table(backup: Backup, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(backup.backup)]) == 0
    head, row = capsys.readouterr().out.splitlines()
    assert head.split()[:5] == ["TOPIC", "PART", "COPIES", "MOST", "COMPLETE"]
    assert row.split()[:4] == ["orders", "0", "3", backup.copy(1)]


@pytest.mark.rule("R-REP-01")
def test_a_data_dir_nested_under_the_folder_is_found_by_every_reader(backup: Backup, capsys: pytest.CaptureFixture[str],
                                                                     tmp_path: Path) -> None:
    broker = str(backup.root / "backup" / "broker-2")  # broker-2/kafka-data/orders-0
    assert _info(capsys, broker)["endOffset"] == LAGGING_END
    code, lines, _ = _cat(capsys, broker)
    assert code == 0 and lines == _lines(_want(RECORDS))[:LAGGING_END]
    assert kafkalog.scan(broker).read_all().num_rows == LAGGING_END
    assert main(["export", broker, "-o", str(tmp_path / "out")]) == 0
    assert main(["dump", broker, "--json"]) == 0 and main(["verify", broker]) == 0
    capsys.readouterr()


@pytest.mark.rule("R-REP-02")
def test_the_log_start_offset_is_the_largest_of_the_copies(backup: Backup, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    lagging = tmp_path / "broker-2" / "orders-0"
    shutil.copytree(backup.copy(2), lagging)
    # DeleteRecords on broker-2 moved its log start to 40: a consumer of the leader cannot read below it any more
    (lagging.parent / "log-start-offset-checkpoint").write_text("0\n1\norders 0 40\n")
    for paths in ([backup.copy(1), str(lagging)], [str(lagging), backup.copy(1)]):
        assert _rows(kafkalog.scan(paths).read_all()) == _want(RECORDS, 40)
        assert _info(capsys, *paths)["logStartOffset"] == 40
        code, lines, _ = _cat(capsys, *paths)
        assert code == 0 and lines == _lines(_want(RECORDS, 40))
    # asked for explicitly (include_deleted, R-VAL-10), the offsets below it are read from the copies that still hold them
    assert _rows(kafkalog.scan([backup.copy(1), str(lagging)], include_deleted=True).read_all()) == _want(RECORDS)


@pytest.mark.rule("R-REP-04")
def test_a_diverged_copy_fails_every_reader_naming_both_copies(backup: Backup, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    old, new = backup.copy(1), backup.copy(4)
    # Kafka keeps the newer epoch's history: broker-4's records from 150 on, the old leader's before
    kept = {**{o: r for o, r in RECORDS.items() if o < UNCLEAN_AT}, **UNCLEAN_RECORDS}
    for paths in ([str(backup.backup), str(backup.root / "unclean")], [str(backup.root / "unclean"), str(backup.backup)], [new, old]):
        with pytest.raises(ReplicaDivergenceError) as err:
            kafkalog.scan(paths)
        assert old in str(err.value) and new in str(err.value) and f"offsets {UNCLEAN_AT} to {max(UNCLEAN_RECORDS)}" in str(err.value)
        assert err.value.offset == UNCLEAN_AT
        code, lines, message = _cat(capsys, *paths)
        assert code == 1 and lines == [] and old in message and new in message and "replica divergence" in message
        assert main(["export", *paths, "-o", str(tmp_path / "x")]) == 1
        capsys.readouterr()
        assert _rows(kafkalog.scan(paths, allow_gaps=True).read_all()) == _want(kept)
        code, lines, message = _cat(capsys, *paths, "--allow-gaps")
        assert code == 0 and lines == _lines(_want(kept)) and "warning: replica divergence" in message and old in message
        info = _info(capsys, *paths)
        assert info["endOffset"] == max(UNCLEAN_RECORDS) + 1 and info["mostComplete"] == new
        # broker-4 diverged from each copy of the old history, from the first offset both hold (broker-3's hole may hold it)
        assert {(d["end"], d["kept"]) for d in info["divergence"]} == {(max(UNCLEAN_RECORDS) + 1, new)}
        assert [d["start"] for d in info["divergence"] if set(d["copies"]) == {old, new}] == [UNCLEAN_AT]
    report = verify([str(backup.root)])
    found = [f for f in report.findings if f.code == "replica-divergence"]
    # broker-4 diverged from each of the three copies of the old leader's history
    assert len(found) == 3 and all(f.severity == "error" and f.offset >= UNCLEAN_AT and new in f.message for f in found)
    assert {f.file for f in found} == {backup.copy(n) for n in (1, 2, 3)}
    assert not any(f.code == "replica-divergence" for f in verify([str(backup.backup)]).findings)


@pytest.mark.rule("R-REP-04")
def test_copies_of_two_topics_of_one_name_are_told_apart_by_topic_id(backup: Backup, tmp_path: Path) -> None:
    import shutil

    ids = {1: "AAAAAAAAAAAAAAAAAAAAAQ", 4: "AAAAAAAAAAAAAAAAAAAAAg"}
    for n, topic_id in ids.items():
        d = tmp_path / f"cluster-{n}" / "orders-0"
        shutil.copytree(backup.copy(n), d)
        (d / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}\n")
    with pytest.raises(ReplicaDivergenceError, match=f"topic ids {ids[1]} and {ids[4]}: two topics of one name"):
        kafkalog.scan([str(tmp_path / "cluster-4"), str(tmp_path / "cluster-1")])
