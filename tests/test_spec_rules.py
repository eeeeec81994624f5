"""Every MUST/SHOULD rule of SPEC.md is exercised by a test or a golden corpus case.

A test claims a rule by naming its id: ``@pytest.mark.rule("R-IDX-05")`` (registered in conftest.py)
or, inside a parametrised table, a comment. A corpus case claims it in golden/corpus/README.md's
(or golden/corpus/writer/README.md's) SPEC column or in its ``expected.json`` ``rules``. Claiming a rule means exercising it: a test that
only mentions an id without checking the behaviour does not count (reviewers check the markers).
That every case SPEC.md names exists is checked in test_corpus.py (test_spec_names_only_existing_cases).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import GOLDEN, REPO

SPEC = (REPO / "SPEC.md").read_text(encoding="utf-8")
TESTS = REPO / "tests"
CORPUS = GOLDEN / "corpus"
RULE_ID = re.compile(r"R-[A-Z0-9]+-\d+(?!\d)")
NORMATIVE = re.compile(r"\b(MUST|SHOULD|REQUIRED|SHALL)\b")

#: Rule-id prefixes of sections still being written, whose rules may be uncovered until their tests land.
PENDING_AREAS: tuple[str, ...] = ()

#: Normative rules kafkalog does not implement yet, with the reason. An entry here must really be
#: uncovered (the test below fails when a test starts claiming it, so the list only shrinks).
KNOWN_GAPS: dict[str, str] = {}


def spec_rules() -> dict[str, str]:
    """Rule id -> its text: from the bold id to the next rule or heading."""
    heads = list(re.finditer(r"^\*\*(R-[A-Z0-9]+-\d+)\*\*", SPEC, re.M))
    out = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(SPEC)
        text = SPEC[m.end() : end]
        heading = re.search(r"^#", text, re.M)
        out[m.group(1)] = text[: heading.start()] if heading else text
    return out


def normative_rules() -> list[str]:
    return [r for r, text in spec_rules().items() if NORMATIVE.search(text)]


def _test_sources() -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(TESTS.rglob("*.py")) if p.name != Path(__file__).name}


def claimed_by_tests() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p, text in _test_sources().items():
        for rule in set(RULE_ID.findall(text)):
            out.setdefault(rule, []).append(str(p.relative_to(REPO)))
    return out


def claimed_by_corpus() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (CORPUS / "README.md").read_text(encoding="utf-8").splitlines() + (CORPUS / "writer" / "README.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\| `([^`]+)` \|", line)
        if m:
            for rule in set(RULE_ID.findall(line)):
                out.setdefault(rule, []).append(m.group(1))
    for p in sorted(CORPUS.rglob("expected.json")):
        for rule in json.loads(p.read_text(encoding="utf-8")).get("rules", []):
            out.setdefault(rule, []).append(str(p.parent.relative_to(CORPUS)))
    return out


def test_rules_are_parsed() -> None:
    rules = spec_rules()
    norm = normative_rules()
    assert len(rules) > 150 and len(norm) > 100, (len(rules), len(norm))
    assert "R-LOG-04" in norm and "MUST report a corruption error" in rules["R-LOG-04"]
    assert "R-LOG-01" not in norm  # descriptive: no requirement keyword


def test_every_normative_rule_is_exercised() -> None:
    tests, corpus = claimed_by_tests(), claimed_by_corpus()
    uncovered = [
        r for r in normative_rules()
        if r not in tests and r not in corpus and r not in KNOWN_GAPS and not r.startswith(PENDING_AREAS)
    ]
    assert not uncovered, f"{len(uncovered)} MUST/SHOULD rules of SPEC.md have no test or corpus case: {uncovered}"


def test_known_gaps_are_real_and_still_open() -> None:
    rules = spec_rules()
    claimed = set(claimed_by_tests()) | set(claimed_by_corpus())
    for rule, reason in KNOWN_GAPS.items():
        assert rule in rules and NORMATIVE.search(rules[rule]), f"{rule} is not a normative rule of SPEC.md"
        assert rule not in claimed, f"{rule} is now exercised ({reason}): remove it from KNOWN_GAPS"


def test_claimed_rule_ids_exist_in_spec() -> None:
    """A rule id in a test or corpus case that SPEC.md does not define is a typo or a stale reference."""
    rules = spec_rules()
    unknown = {
        rule: where
        for rule, where in {**claimed_by_tests(), **claimed_by_corpus()}.items()
        if rule not in rules and not rule.startswith(PENDING_AREAS)
    }
    assert not unknown, unknown


def test_rule_ids_cited_in_code_and_docs_exist() -> None:
    """Code comments, docstrings and documentation cite only rules SPEC.md defines."""
    rules = spec_rules()
    sources = [REPO / "README.md", *[p for d in ("codec", "spark_ext", "docs", "bench") for p in sorted((REPO / d).rglob("*")) if p.suffix in (".py", ".md")]]
    unknown: dict[str, list[str]] = {}
    for p in sources:
        for rule in set(RULE_ID.findall(p.read_text(encoding="utf-8", errors="replace"))):
            if rule not in rules:
                unknown.setdefault(rule, []).append(str(p.relative_to(REPO)))
    assert len(sources) > 20
    assert not unknown, unknown
