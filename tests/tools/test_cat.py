"""``kafkalog cat`` on kcat's flags, against Kafka's dump of the same files. Printed keys and values
are checked by undoing the escapes with Python's own ``codecs.escape_decode``: the bytes must be
the record's, and no line may hold a control character."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from corrupt_copy import corrupt_copy
from helpers import GOLDEN, KAFKA_INTERNAL_TOPICS, log_starts, need_shared, read_jsonl
from kafkalog.tools.cli import main

LOGDIR = GOLDEN / "kafka" / "logdir"


def _records(expected: list[dict], partition_dir: str) -> list[dict]:
    """Kafka's dump of one partition's records, control batches left out."""
    out, control = [], False
    for o in expected:
        if not o["file"].startswith(partition_dir + "/") or not o["file"].endswith(".log"):
            continue
        if o["type"] == "batch":
            control = o["isControlBatch"]
        elif o["type"] == "record" and not control:
            out.append(o)
    return out


def _unescape(line: str) -> bytes:
    assert not any(ord(c) < 0x20 or ord(c) == 0x7F or 0x80 <= ord(c) < 0xA0 for c in line), repr(line)
    return codecs.escape_decode(line.encode("utf-8"))[0]


def _cat(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    code = main(["cat", *args])
    return code, capsys.readouterr().out.splitlines()


def _cat_both(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], list[str]]:
    code = main(["cat", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err.splitlines()


def test_the_last_five_values_of_orders_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's acceptance command: kcat -C -t orders -p 0 -o -5 -e, at rest."""
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    expected = _records(read_jsonl(data.parents[1] / "expected" / "cp760-flink-on-prem.jsonl.gz"), "orders-0")
    code, lines = _cat(capsys, str(data), "-t", "orders", "-p", "0", "-o", "-5", "-e")
    assert code == 0
    assert [_unescape(v) for v in lines] == [bytes.fromhex(r["value"]) for r in expected[-5:]]


def test_format_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    records = _records(read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"), "golden-0")
    code, lines = _cat(capsys, str(LOGDIR / "golden-0"), "-f", "%t|%p|%o|%T|%K|%S|%k|%s|%h|%%\\n", "-Z")
    assert code == 0 and len(lines) == len(records)
    for line, r in zip(lines, records, strict=True):
        topic, part, off, ts, ksize, vsize, key, value, headers, pct = line.split("|")
        assert (topic, int(part), int(off), int(ts), pct) == ("golden", 0, r["offset"], r["timestamp"], "%")
        assert (int(ksize), int(vsize)) == (r["keySize"], r["valueSize"])
        assert key == "NULL" if r["key"] is None else _unescape(key) == bytes.fromhex(r["key"])
        assert value == "NULL" if r["value"] is None else _unescape(value) == bytes.fromhex(r["value"])
        want_headers = ",".join(f"{h['key']}={'NULL' if h['value'] is None else bytes.fromhex(h['value']).decode()}" for h in r["headers"])
        assert headers == want_headers


def test_offsets_beginning_end_absolute_and_by_time(capsys: pytest.CaptureFixture[str]) -> None:
    records = _records(read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"), "golden-0")
    path = str(LOGDIR / "golden-0")
    offsets = [r["offset"] for r in records]
    assert _cat(capsys, path, "-f", "%o\\n")[1] == [str(o) for o in offsets]
    assert _cat(capsys, path, "-f", "%o\\n", "-o", "end", "-e") == (0, [])
    mid = offsets[len(offsets) // 2]
    assert _cat(capsys, path, "-f", "%o\\n", "-o", str(mid), "-c", "3")[1] == [str(o) for o in offsets if o >= mid][:3]
    t = sorted(r["timestamp"] for r in records)[len(records) // 2]
    first = next(r["offset"] for r in records if r["timestamp"] >= t)  # ListOffsets: the first record at or after t
    assert _cat(capsys, path, "-f", "%o\\n", "-o", f"s@{t}", "-c", "1")[1] == [str(first)]
    stop = next(r["offset"] for r in records if r["timestamp"] >= t)
    assert _cat(capsys, path, "-f", "%o\\n", "-o", f"e@{t}")[1] == [str(o) for o in offsets if o < stop]


def test_count_spans_partitions_and_read_committed(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines = _cat(capsys, str(LOGDIR), "-t", "compacted", "-c", "5", "-f", "%t-%p@%o\\n")
    assert code == 0 and len(lines) == 5
    dump = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["file"].startswith("transactional-0/")]
    aborted = [(o["producerId"], o["firstOffset"], o["lastOffset"]) for o in dump if o["type"] == "abortedTxn"]
    assert aborted
    producer_of = {}  # offset -> producer id of its transactional batch
    for o in dump:
        if o["type"] == "batch" and o["file"].endswith(".log") and o["isTransactional"]:
            producer_of.update({off: o["producerId"] for off in range(o["baseOffset"], o["lastOffset"] + 1)})
    every = [int(o) for o in _cat(capsys, str(LOGDIR / "transactional-0"), "-f", "%o\\n")[1]]
    committed = [int(o) for o in _cat(capsys, str(LOGDIR / "transactional-0"), "-f", "%o\\n", "--isolation", "read_committed")[1]]
    dropped = set(every) - set(committed)
    assert dropped and set(committed) < set(every)
    assert not [o for o in committed for pid, lo, hi in aborted if lo <= o <= hi and producer_of.get(o) == pid]


@pytest.mark.parametrize("args", [["-o", "sideways"], ["-f", "%q"], ["-f", "\\q"], ["-c", "-1"]])
def test_usage_errors_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cat", str(LOGDIR / "golden-0"), *args]) == 2
    assert "error" in capsys.readouterr().err


def test_missing_path_and_no_match_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cat", str(tmp_path / "absent")]) == 3
    assert main(["cat", str(LOGDIR), "-t", "no-such-topic"]) == 3
    capsys.readouterr()


def test_data_loss_fails_unless_gaps_are_allowed(capsys: pytest.CaptureFixture[str]) -> None:
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    assert main(["cat", str(data), "-t", "customers", "-e"]) == 1
    err = capsys.readouterr().err
    assert "customers-0" in err and "0 to 17080" in err and "Traceback" not in err
    assert main(["cat", str(data), "-t", "customers", "--allow-gaps", "-e"]) == 0
    assert "warning" in capsys.readouterr().err


def test_minus_n_stops_at_the_log_start_offset(capsys: pytest.CaptureFixture[str]) -> None:
    """A repartition topic whose records below 1734 were deleted (DeleteRecords): the data dir's
    log-start-offset-checkpoint says so, and -o -100 starts there, as a consumer's seek would."""
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    topic = "_confluent-controlcenter-7-6-0-1-aggregatedTopicPartitionTableWindows-ONE_MINUTE-repartition"
    lines = (data / "log-start-offset-checkpoint").read_text().splitlines()[2:]
    start = next(int(o) for t, _p, o in (line.rsplit(" ", 2) for line in lines) if t == topic)
    assert start > 0
    code, out = _cat(capsys, str(data), "-t", topic, "-o", "-100", "-f", "%o\\n")
    assert code == 0 and int(out[0]) == start


@pytest.mark.rule("R-VAL-11")
def test_internal_topics_only_when_named_or_asked_for(capsys: pytest.CaptureFixture[str]) -> None:
    """A data dir holding __consumer_offsets: left out by default (exclude.internal.topics=true),
    read when named with -t or with --include-internal; the other topics' lines are Kafka's."""
    root = GOLDEN / "real" / "zk-danielmorales9-kafkafun" / "data" / "kafka"
    expected = read_jsonl(GOLDEN / "real" / "expected" / "zk-danielmorales9-kafkafun.jsonl.gz")
    dirs = sorted({o["file"].split("/")[0] for o in expected if o["file"].endswith(".log")})
    want = {d: {(d.rpartition("-")[0], int(d.rpartition("-")[2]), r["offset"]) for r in _records(expected, d)} for d in dirs}
    internal = set().union(*(w for d, w in want.items() if d.rpartition("-")[0] in KAFKA_INTERNAL_TOPICS))
    ordinary = set().union(*(w for d, w in want.items() if d.rpartition("-")[0] not in KAFKA_INTERNAL_TOPICS))
    assert internal and ordinary

    def read(*args: str) -> set[tuple[str, int, int]]:
        code, lines = _cat(capsys, str(root), "-f", "%t %p %o\\n", *args)
        assert code == 0
        return {(t, int(p), int(o)) for t, p, o in (line.split(" ") for line in lines)}

    assert read() == ordinary
    assert read("--include-internal") == ordinary | internal
    assert read("-t", "__consumer_offsets") == internal


@pytest.mark.rule("R-VAL-10")
def test_deleted_records_only_with_include_deleted(capsys: pytest.CaptureFixture[str]) -> None:
    """Records below the log start offset (DeleteRecords) that the segment still holds: read with
    --include-deleted only; an explicit -o below the log start offset starts at it, with a warning."""
    data = need_shared("golden-real/cp760-flink-on-prem/data")
    topic = "_confluent-controlcenter-7-6-0-1-aggregatedTopicPartitionTableWindows-ONE_MINUTE-repartition"
    start = log_starts(data)[(topic, 0)]
    expected = _records(read_jsonl(data.parents[1] / "expected" / "cp760-flink-on-prem.jsonl.gz"), f"{topic}-0")
    every = [r["offset"] for r in expected]
    assert start == 1734 and every[0] < start
    code, out = _cat(capsys, str(data), "-t", topic, "-f", "%o\\n")
    assert code == 0 and [int(o) for o in out] == [o for o in every if o >= start]
    code = main(["cat", str(data), "-t", topic, "-o", "0", "-f", "%o\\n"])
    out, err = capsys.readouterr()
    assert code == 0 and [int(o) for o in out.splitlines()] == [o for o in every if o >= start]
    assert "below the log start offset 1734" in err and "--include-deleted" in err
    code, out = _cat(capsys, str(data), "-t", topic, "--include-deleted", "-f", "%o\\n")
    assert code == 0 and [int(o) for o in out] == every
    # dump's consumer view loads the partition with its data dir's checkpoint, as LogLoader does
    assert main(["dump", "--json", "--isolation", "read_uncommitted", str(data / f"{topic}-0")]) == 0
    dumped = [o["offset"] for o in map(json.loads, capsys.readouterr().out.splitlines()) if o["type"] == "record"]
    assert dumped == [o for o in every if o >= start]


@pytest.mark.rule("R-VAL-09")
@pytest.mark.usefixtures("kernels")
def test_a_corrupt_batch_fails_cat_unless_skipped_or_unchecked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One byte flipped inside a batch of a real orders-0: cat prints the records before it, then
    fails naming the file, position and offset (exit 1, one line); --skip-corrupt leaves out that
    batch's records with one warning; --no-crc prints the corrupted value. Figures: Kafka's dump."""
    c = corrupt_copy(tmp_path)
    where = f"{c.log}, position {c.position}, offset {c.base_offset}: record batch is corrupt"
    code, out, err = _cat_both(capsys, str(c.data), "-t", "orders", "-f", "%o\\n")
    assert code == 1 and len(out) == c.before and all(int(o) < c.base_offset for o in out)
    assert len(err) == 1 and where in err[0] and "Traceback" not in err[0]
    code, out, err = _cat_both(capsys, str(c.data), "-t", "orders", "-f", "%o\\n", "--skip-corrupt")
    assert code == 0 and len(out) == c.rows_when_skipped == 17212 - c.records
    assert not {int(o) for o in out} & set(range(c.base_offset, c.last_offset + 1))
    assert len(err) == 1 and "warning" in err[0] and where in err[0]
    code, out, err = _cat_both(capsys, str(c.data), "-t", "orders", "-o", str(c.offset), "-c", "1", "--no-crc")
    assert code == 0 and [_unescape(v) for v in out] == [c.flipped] != [c.value] and err == []
