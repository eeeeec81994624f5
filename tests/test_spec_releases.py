"""SPEC.md 1.2's release tables: §7.9's record types and versions by release is exactly what the goldens of
each release hold (golden/release_table.py), and §6.10's release-dependent behaviours are the ones the log
layer switches on (R-K4-05).

The versions come from the bytes Kafka's own classes wrote into golden/kafka-<release>/; the decoders'
tables only name the types and say where a layout changed.
"""

from __future__ import annotations

import importlib.util
import re
from types import ModuleType

import pytest

from helpers import GOLDEN, REPO
from kafkalog.format.releases import RELEASES
from kafkalog.log.unified import LogConfig

SPEC = (REPO / "SPEC.md").read_text(encoding="utf-8")


def _release_table() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_table", GOLDEN / "release_table.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RT = _release_table()


@pytest.mark.rule("R-DEC-07")
def test_spec_table_is_what_the_goldens_hold() -> None:
    assert list(RT.RELEASE_DIRS) == list(RELEASES)
    assert RT.spec_table(SPEC) == RT.table(), (
        "SPEC.md §7.9 differs from the goldens: run golden/release_table.py --write"
    )


@pytest.mark.rule("R-DEC-07")
def test_every_version_the_goldens_hold_is_one_the_release_decodes() -> None:
    seen = RT.versions_seen()
    for line in RELEASES:
        decoders = RT._decoders(line)
        for (topic, rtype), by_release in seen.items():
            if topic == RT.CONTROL or line not in by_release:
                continue
            message = decoders.get((topic, rtype))
            assert message is not None, f"{line}: {topic} type {rtype} is in the goldens but not in the decoder"
            outside = sorted(v for v in by_release[line] if v not in message.valid)
            assert not outside, (
                f"{line}: {topic} type {rtype} versions {outside} outside {message.name}'s {message.valid}"
            )


def test_the_table_shows_what_changed() -> None:
    """Spot checks against the release notes of issue 35: streams groups from 4.1, type 9 gone in 4.1,
    UnregisterControllerRecord (29) in 4.4, RegisterBrokerRecord v4 in 4.3, the share-state layout in 4.1 and 4.2."""
    rows = {
        (r[0], r[1]): r[3:]
        for r in (
            [c.strip() for c in line.strip().strip("|").split("|")] for line in RT.spec_table(SPEC).splitlines()[2:]
        )
    }
    assert rows[("`__consumer_offsets`", "17")][:2] == ["—", "0"]
    assert rows[("`__consumer_offsets`", "9")][1:] == ["—"] * 4
    assert rows[("`__cluster_metadata`", "29")] == ["—", "—", "—", "—", "0"]
    assert rows[("`__cluster_metadata`", "0")][3] == "0-4 †"
    assert rows[("`__share_group_state`", "0")][1:3] == ["0 †", "0 †"]
    assert rows[("control", "2")] == ["0"] * 5


def _behaviours() -> list[list[str]]:
    block = SPEC[SPEC.index("**R-K4-05**") : SPEC.index("## 7. Canonical JSON")]
    return [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in block.splitlines()
        if line.startswith("| ") and "---" not in line
    ][1:]


def test_every_release_dependent_rule_named_in_the_table_exists() -> None:
    rules = set(re.findall(r"^\*\*(R-[A-Z0-9]+-\d+)\*\*", SPEC, re.M))
    named = {r for row in _behaviours() for r in re.findall(r"R-[A-Z0-9]+-\d+", row[-1])}
    assert named and named <= rules, named - rules
    # and every rule that says "from Kafka 4.x" / "in 4.4" is in the table
    for rule in ("R-IDX-06", "R-CMP-11", "R-TIDX-04", "R-K4-03", "R-ZSTD-05", "R-DEC-07"):
        assert rule in named, rule


@pytest.mark.rule("R-K4-05", "R-IDX-06", "R-CMP-11")
@pytest.mark.parametrize(
    ("version", "per_batch", "at_hw"),
    [
        ("4.0.0", False, False),
        ("4.0.1", True, False),
        ("4.0.2", True, False),
        ("4.1", True, False),
        ("4.3.1", True, False),
        ("4.4", True, True),
        (None, True, True),
    ],
)
def test_the_log_layer_switches_where_the_table_says(version: str | None, per_batch: bool, at_hw: bool) -> None:
    from kafkalog.format.releases import parse_version

    cfg = LogConfig(kafka_version=parse_version(version))
    assert (cfg.index_per_batch, cfg.cleaner_empty_batch_at_high_watermark) == (per_batch, at_hw)
