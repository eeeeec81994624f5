"""How a writer-case runner reads ``case.json`` (SPEC.md R-CONF-08): exact 64-bit integers, ``cleanup.policy``
as a list or a string, ``lastDataOffset`` null for "no data offset", and ``before-open/`` in the recovery cases.

The expected directories are Kafka's (golden/corpus/writer, written by Kafka 4.0.0's log layer).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.log.unified import LogConfig
from kafkalog.tools.writer_cases import _data_offset, run_case

WRITER = GOLDEN / "corpus" / "writer"


def _tree(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@pytest.mark.rule("R-CONF-08")
def test_integers_beyond_2_53_are_read_exactly() -> None:
    big = []
    for case in sorted(WRITER.glob("*/case.json")):
        spec = json.loads(case.read_text(encoding="utf-8"))
        big += [(case.parent.name, k) for k, v in spec["topicConfig"].items() if isinstance(v, int) and abs(v) > 2**53]
        raw = case.read_text(encoding="utf-8")
        if '"max.compaction.lag.ms": 9223372036854775807' in raw:
            assert spec["topicConfig"]["max.compaction.lag.ms"] == 2**63 - 1
            assert int(float("9223372036854775807")) == 2**63  # what a double-based parser reads: not an int64
    assert ("cleaner-pass-0", "max.compaction.lag.ms") in big


@pytest.mark.rule("R-CONF-08")
def test_cleanup_policy_as_a_list_or_a_string(tmp_path: Path) -> None:
    for written in (["compact", "delete"], "compact,delete", " compact , delete"):
        assert set(LogConfig.from_properties({"cleanup.policy": written}).cleanup_policy) == {"compact", "delete"}
    # the compacted roll case gives Kafka's directory with the policy written either way
    case = tmp_path / "roll-compacted-max-lag"
    shutil.copytree(WRITER / case.name, case)
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    assert spec["topicConfig"]["cleanup.policy"] == ["compact"]
    spec["topicConfig"]["cleanup.policy"] = "compact"
    (case / "case.json").write_text(json.dumps(spec), encoding="utf-8")
    run_case(case, tmp_path / "out", "4.0.0")
    assert _tree(tmp_path / "out") == _tree(case / "expected")


@pytest.mark.rule("R-CONF-08")
def test_no_data_offset_is_null_absent_or_negative() -> None:
    for producer in ({"lastDataOffset": None}, {}, {"lastDataOffset": -1}):
        assert _data_offset(producer) is None
    assert _data_offset({"lastDataOffset": 0}) == 0 and _data_offset({"lastDataOffset": 42}) == 42


@pytest.mark.rule("R-CONF-08", "R-CONF-07")
@pytest.mark.parametrize("name", ["recovery-torn-tail", "recovery-bad-crc"])
def test_before_open_plus_the_ops_from_open_on_gives_the_same_directory(tmp_path: Path, name: str) -> None:
    src = WRITER / name
    spec = json.loads((src / "case.json").read_text(encoding="utf-8"))
    ops = spec["ops"]
    assert ops[0]["op"] == "create"
    at = next(i for i, op in enumerate(ops) if op["op"] == "open")
    clock = int(spec["initialClockMs"]) + sum(int(op["ms"]) for op in ops[:at] if op["op"] == "advanceClock")
    case = tmp_path / name
    case.mkdir()
    shutil.copyfile(src / "input.log", case / "input.log")
    shutil.copytree(src / "before-open", case / "before-open")
    (case / "case.json").write_text(json.dumps({**spec, "initialClockMs": clock, "ops": ops[at:]}), encoding="utf-8")
    run_case(case, tmp_path / "out", "4.0.0")
    assert _tree(tmp_path / "out") == _tree(src / "expected")
    # and the full case agrees, so before-open/ really is the directory the open found
    run_case(src, tmp_path / "full", "4.0.0")
    assert _tree(tmp_path / "full") == _tree(src / "expected")
