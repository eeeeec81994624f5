"""``kafkalog cat``'s kcat flags beyond ``-f``: the ``-J`` JSON envelope (kcat's json.c fields and
order) and ISO 8601 times in ``-o s@``/``e@``, against Kafka's dump of golden/kafka/logdir; and
``cat`` as the base install runs it: no pyarrow, CRCs checked."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from helpers import GOLDEN, REPO, read_jsonl
from kafkalog.tools.cli import main
from kafkalog.tools.command import parse_time

LOGDIR = GOLDEN / "kafka" / "logdir"
#: kcat's fields in the order its json.c writes them (``tstype``/``ts`` and ``headers`` only when there are any)
KCAT_ORDER = ["topic", "partition", "offset", "tstype", "ts", "broker", "headers", "key", "payload"]


def _consumed() -> dict[tuple[str, int, int], tuple[dict, dict]]:
    """Kafka's dump of golden/kafka/logdir: each record a consumer receives (no control batch) with its batch."""
    out: dict[tuple[str, int, int], tuple[dict, dict]] = {}
    batch: dict = {}
    for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl"):
        if not o["file"].endswith(".log"):
            continue
        if o["type"] == "batch":
            batch = o
        elif o["type"] == "record" and not batch.get("isControlBatch"):
            topic, _, part = o["file"].split("/")[0].rpartition("-")
            out[(topic, int(part), o["offset"])] = (o, batch)
    return out


def _text(hexed: str | None) -> str | None:
    return None if hexed is None else bytes.fromhex(hexed).decode("utf-8", "backslashreplace")


def test_json_envelope_is_kcats(capsys: pytest.CaptureFixture[str]) -> None:
    """Every record of the data dir (magic 0, 1 and 2; CreateTime and LogAppendTime) as kcat -J
    prints it: its fields from Kafka's dump, in kcat's order, one valid JSON object per line."""
    assert main(["cat", str(LOGDIR), "-J"]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = _consumed()
    assert sorted((o["topic"], o["partition"], o["offset"]) for o in got) == sorted(expected)
    seen = set()
    for o in got:
        r, b = expected[(o["topic"], o["partition"], o["offset"])]
        want: dict = {"topic": o["topic"], "partition": o["partition"], "offset": r["offset"]}
        if b["timestampType"] != "NoTimestampType":  # kcat leaves both out when librdkafka has no timestamp
            want["tstype"] = {"CreateTime": "create", "LogAppendTime": "logappend"}[b["timestampType"]]
            want["ts"] = r["timestamp"]
        want["broker"] = -1
        if r["headers"]:
            want["headers"] = [x for h in r["headers"] for x in (h["key"], _text(h["value"]))]
        want["key"] = _text(r["key"])
        want["payload"] = _text(r["value"])
        assert o == want
        assert list(o) == [k for k in KCAT_ORDER if k in o]
        seen.add((b["timestampType"], "headers" in o, o["key"] is None))
    # the data dir has each case the envelope treats apart
    assert {t for t, _h, _k in seen} == {"CreateTime", "LogAppendTime", "NoTimestampType"}
    assert any(h for _t, h, _k in seen) and any(k for _t, _h, k in seen)


def test_json_and_format_are_one_or_the_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["cat", str(LOGDIR), "-J", "-f", "%s\\n"])
    assert exit_.value.code == 2 and "-f/--format: not allowed with argument -J/--json" in capsys.readouterr().err


def _iso(ms: int, zone: timedelta = timedelta(0)) -> str:
    """``ms`` as ISO 8601 in the time zone ``zone`` ahead of UTC (``2023-11-14T22:13:20.210000+00:00``)."""
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)).astimezone(timezone(zone)).isoformat()


def test_iso_8601_times_in_offsets(capsys: pytest.CaptureFixture[str]) -> None:
    """``-o s@TIME`` and ``e@TIME`` take ISO 8601 as ``export --start-time`` does: the first record
    at or after the time, by Kafka's dump of golden-0."""
    records = sorted((r["offset"], r["timestamp"]) for (t, _p, _o), (r, _b) in _consumed().items() if t == "golden")
    t0 = sorted(ts for _o, ts in records)[len(records) // 3]
    t1 = sorted(ts for _o, ts in records)[2 * len(records) // 3]
    first = next(o for o, ts in records if ts >= t0)
    stop = next(o for o, ts in records if ts >= t1)
    want = [str(o) for o, _ts in records if first <= o < stop]
    assert want
    path = str(LOGDIR / "golden-0")
    for start, end in [(_iso(t0).replace("+00:00", "Z"), _iso(t1)), (_iso(t0, timedelta(hours=2)), _iso(t1, timedelta(hours=-5))),
                       (str(t0), str(t1))]:
        assert main(["cat", path, "-f", "%o\\n", "-o", f"s@{start}", "-o", f"e@{end}"]) == 0, (start, end)
        assert capsys.readouterr().out.splitlines() == want, (start, end)
    assert main(["cat", path, "-o", "s@yesterday"]) == 2
    assert "ISO 8601" in capsys.readouterr().err


def test_times_are_whole_milliseconds_as_javas_instant() -> None:
    """Java's Instant.toEpochMilli floors: half a millisecond before the epoch is -1, not 0."""
    assert parse_time("1969-12-31T23:59:59.9995Z") == -1
    assert parse_time("2024-04-19T14:30:00.291Z") == 1713537000291
    assert parse_time("2024-04-19T16:30:00.291+02:00") == 1713537000291
    assert parse_time("2024-04-19T14:30:00") == 1713537000000  # no zone: UTC


def test_a_corrupt_batch_fails_naming_file_and_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """cat checks every batch's CRC, as a consumer with check.crcs=true: one flipped byte inside a
    batch's records is exit 1 naming the file, the batch's position and offset."""
    part = tmp_path / "golden-0"
    shutil.copytree(LOGDIR / "golden-0", part)
    batches = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["type"] == "batch" and o["file"] == "golden-0/00000000000000000051.log"]
    victim = next(b for b in batches if not b["isControlBatch"] and b["compression"] == "none")
    log = part / "00000000000000000051.log"
    data = bytearray(log.read_bytes())
    data[victim["position"] + victim["sizeInBytes"] - 3] ^= 0xFF  # inside the last record's value
    log.write_bytes(bytes(data))
    assert main(["cat", str(part), "-f", "%o\\n"]) == 1
    captured = capsys.readouterr()
    assert str(log) in captured.err and f"offset {victim['baseOffset']}" in captured.err and "crc" in captured.err, captured.err
    assert str(victim["baseOffset"]) not in captured.out.splitlines()


def test_cat_needs_no_pyarrow_and_export_names_its_extra(tmp_path: Path) -> None:
    """With pyarrow unimportable, cat prints what it prints with it, and export says in one line
    which extra it needs (exit 3), writing nothing."""
    block = "import sys; sys.modules['pyarrow'] = None; from kafkalog.tools.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {"PYTHONPATH": f"{REPO / 'codec'}", "PATH": str(Path(sys.executable).parent)}
    args = ["cat", str(LOGDIR), "-f", "%t %p %o %T %k %s %h\\n", "--isolation", "read_committed"]
    without = subprocess.run([sys.executable, "-c", block, *args], capture_output=True, text=True, env=env, check=False)
    with_arrow = subprocess.run([sys.executable, "-m", "kafkalog", *args], capture_output=True, text=True, env=env, check=False)
    assert (without.returncode, without.stderr) == (0, "")
    assert without.stdout == with_arrow.stdout and without.stdout
    out = tmp_path / "out"
    export = subprocess.run([sys.executable, "-c", block, "export", str(LOGDIR), "-o", str(out)], capture_output=True, text=True, env=env,
                            check=False)
    assert (export.returncode, export.stderr) == (3, 'kafkalog export: needs pyarrow: pip install "kafkalog[arrow]"\n')
    assert not out.exists()
