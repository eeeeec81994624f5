"""``LogReader.records`` checks each batch's CRC before returning its records (SPEC R-VAL-09), over
the corpus's CRC cases; the location each error names is the case's expected finding (Kafka's
reading of the file), never kafkalog's output."""

from __future__ import annotations

import json

import pytest

from helpers import GOLDEN, read_jsonl
from kafkalog import CrcMismatchError, LogReader
from kafkalog.format.records.stream import checked, crc_error

BAD = GOLDEN / "corpus" / "bad"


@pytest.mark.rule("R-VAL-09")
@pytest.mark.parametrize("case", ["crc-v2", "crc-v1-wrapper"])
def test_records_fail_at_a_corrupt_batch_unless_skipped_or_unchecked(case: str, caplog: pytest.LogCaptureFixture) -> None:
    log = BAD / case / "00000000000000000000.log"
    finding = json.loads((BAD / case / "expected.json").read_text())["finding"]
    kafka = [o for o in read_jsonl(BAD / case / "expected.jsonl") if o["type"] in ("batch", "record")]
    bad_batch = next(o for o in kafka if o["type"] == "batch" and o["position"] == finding["position"])
    in_bad = {o["offset"] for o in kafka if o["type"] == "record" and bad_batch["baseOffset"] <= o["offset"] <= bad_batch["lastOffset"]}
    every = [o["offset"] for o in kafka if o["type"] == "record"]
    with LogReader(log) as r, pytest.raises(CrcMismatchError) as e:
        list(r.records())
    assert (e.value.file, e.value.position, e.value.offset) == (str(log), finding["position"], finding["offset"])
    with LogReader(log) as r, caplog.at_level("WARNING"):
        assert [x.offset for x in r.records(on_corrupt="skip")] == [o for o in every if o not in in_bad]
    assert len(caplog.messages) == 1 and f"position {finding['position']}, offset {finding['offset']}" in caplog.messages[0]
    with LogReader(log) as r:
        assert [x.offset for x in r.records(verify_crc=False)] == every
    with LogReader(log) as r:
        errors = [crc_error(b) for b in r.batches()]
    assert [(x.position, x.offset) for x in errors if x is not None] == [(finding["position"], finding["offset"])]
    with LogReader(log) as r:
        assert len(list(checked(r.batches(), lambda err: None))) == len(errors) - 1


def test_on_corrupt_must_be_fail_skip_or_a_function() -> None:
    with LogReader(BAD / "crc-v2" / "00000000000000000000.log") as r, pytest.raises(ValueError, match="on_corrupt"):
        list(r.records(on_corrupt="ignore"))  # type: ignore[arg-type]
