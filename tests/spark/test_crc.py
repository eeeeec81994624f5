"""The Spark source checks each batch's CRC (``verifyCrc``, default true) as Kafka's consumer does
(``check.crcs=true``, SPEC R-VAL-09); ``skipCorrupt=true`` reads past a corrupt batch with a warning.
Figures come from Kafka's dump of the intact file (tests/corrupt_copy.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from corrupt_copy import corrupt_copy
from kafkalog.errors import CrcMismatchError

from ._support import read_in_process


@pytest.mark.rule("R-VAL-09")
def test_a_corrupt_batch_fails_the_source_unless_skipped_or_unchecked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    c = corrupt_copy(tmp_path)
    with pytest.raises(CrcMismatchError) as e:
        read_in_process({"path": str(c.data)})
    assert (e.value.file, e.value.position, e.value.offset) == (str(c.log), c.position, c.base_offset)
    with caplog.at_level(logging.WARNING, logger="kafkalog_spark"):
        table, _, _ = read_in_process({"path": str(c.data), "skipCorrupt": "true"})
    assert table is not None and table.num_rows == c.rows_when_skipped == 17212 - c.records
    assert not set(table.column("offset").to_pylist()) & set(range(c.base_offset, c.last_offset + 1))
    warned = [m for m in caplog.messages if "skipCorrupt" in m]
    assert len(warned) == 1 and f"{c.log}, position {c.position}, offset {c.base_offset}" in warned[0]
    one = {"startingOffsets": json.dumps({"orders": {"0": c.offset}}), "endingOffsets": json.dumps({"orders": {"0": c.offset + 1}})}
    table, _, _ = read_in_process({"path": str(c.data), "verifyCrc": "false", **one})
    assert table is not None and table.column("value").to_pylist() == [c.flipped] != [c.value]
