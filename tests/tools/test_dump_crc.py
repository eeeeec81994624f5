"""``kafkalog dump`` of batches whose CRC does not match (SPEC R-VAL-05, R-VAL-09): printed as Kafka's
dump prints them, then exit 1 with one line on stderr naming the file, position and offset. The
expected lines and finding are the corpus case's (golden/corpus/bad: Kafka's dump of the intact
file, changed only where the flipped byte shows)."""

from __future__ import annotations

import json

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog.tools.cli import main

BAD = GOLDEN / "corpus" / "bad"


@pytest.mark.rule("R-VAL-09")
@pytest.mark.parametrize("case", ["crc-v2", "crc-v1-wrapper"])
def test_dump_prints_a_corrupt_batch_then_fails_naming_it(case: str, capsys: pytest.CaptureFixture[str]) -> None:
    log = BAD / case / "00000000000000000000.log"
    finding = json.loads((BAD / case / "expected.json").read_text())["finding"]
    where = f"{log}, position {finding['position']}, offset {finding['offset']}:"
    assert main(["dump", "--json", str(log)]) == 1
    out, err = capsys.readouterr()
    assert [json.loads(line) for line in out.splitlines()] == read_jsonl(BAD / case / "expected.jsonl")
    assert len(err.splitlines()) == 1 and where in err and "corrupt" in err
    assert main(["dump", "--print-data-log", str(log)]) == 1
    out, err = capsys.readouterr()
    assert "isvalid: false" in out and "| offset:" in out  # the batch and its records, as kafka-dump-log prints them
    assert len(err.splitlines()) == 1 and where in err


def test_dump_of_valid_batches_says_nothing_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", "--print-data-log", str(GOLDEN / "kafka" / "records" / "v1-gzip" / "00000000000000000000.log")]) == 0
    assert capsys.readouterr().err == ""
