#!/usr/bin/env python3
"""The table of SPEC.md §7.9: the record types and versions each Kafka release writes to its internal
topics, and its control records, as the committed goldens ``golden/kafka-<release>/`` hold them.

The versions come from the records' bytes, not from a decoder: a coordinator topic's key starts with
its record type (an ``int16``) and its value with the value's version (an ``int16``); a
``__cluster_metadata`` or ``__remote_log_metadata`` value starts with three unsigned varints (frame
version, api key, version); a control record's key holds its type (second ``int16``) and its value
starts with the value's version. The names, and the mark ``†`` on a release whose value layout differs
from the previous release's at the same version (a field added, retyped or removed), come from the
decoders' message data (``kafkalog.internal.messages``), so the table also shows where the two meet.
tests/test_spec_releases.py checks that SPEC.md holds exactly this table and that every version seen
is one the decoder of that release reads.

Usage: python golden/release_table.py            print the table
       python golden/release_table.py --write    replace the table between SPEC.md's markers
"""

from __future__ import annotations

import argparse
import re
import struct
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent
SPEC = GOLDEN.parent / "SPEC.md"
BEGIN, END = "<!-- release-table:begin (golden/release_table.py --write) -->", "<!-- release-table:end -->"
_BLOCK = re.compile(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), re.S)

#: The release whose goldens stand for each release line, oldest first.
RELEASE_DIRS: dict[str, str] = {
    "4.0": "kafka-4.0.2",
    "4.1": "kafka-4.1.2",
    "4.2": "kafka-4.2.2",
    "4.3": "kafka-4.3.1",
    "4.4": "kafka-4.4.0",
}
TOPICS = (
    "__consumer_offsets",
    "__share_group_state",
    "__transaction_state",
    "__cluster_metadata",
    "__remote_log_metadata",
)
CONTROL = "control records"

#: (topic, type) -> {release line: set of value versions}
Seen = dict[tuple[str, int], dict[str, set[int]]]


def _uvarint(b: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        x = b[i]
        i += 1
        value |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return value, i


def _logs(release_dir: Path) -> Iterable[tuple[str | None, Path]]:
    """(internal topic or None, .log file) of every Kafka-written log of one release's goldens."""
    for path in sorted(release_dir.rglob("*.log")):
        topic = path.parent.name.rsplit("-", 1)[0]
        yield (topic if topic in TOPICS and path.parent.parent == release_dir else None), path


def versions_seen(golden: Path = GOLDEN) -> Seen:
    """Every (topic, record type) -> release line -> the value versions its goldens hold (tombstones
    and the writer cases' bad inputs skipped)."""
    from kafkalog.errors import KafkaLogError
    from kafkalog.format.records.stream import read_batches

    seen: Seen = defaultdict(lambda: defaultdict(set))
    for line, name in RELEASE_DIRS.items():
        for topic, path in _logs(golden / name):
            try:
                batches = list(read_batches(str(path)))
            except KafkaLogError:
                continue  # a writer case's deliberately damaged input
            for batch in batches:
                if batch.magic != 2:
                    continue
                control = bool(batch.attributes & 0x20)
                if topic is None and not control:
                    continue
                for r in batch.records():
                    if r.value is None:
                        continue
                    key, value = bytes(r.key or b""), bytes(r.value)
                    if control:
                        seen[(CONTROL, struct.unpack_from(">h", key, 2)[0])][line].add(
                            struct.unpack_from(">h", value)[0]
                        )
                    elif topic in ("__cluster_metadata", "__remote_log_metadata"):
                        _frame, i = _uvarint(value, 0)
                        api_key, i = _uvarint(value, i)
                        seen[(topic, api_key)][line].add(_uvarint(value, i)[0])
                    else:
                        assert topic is not None
                        seen[(topic, struct.unpack_from(">h", key)[0])][line].add(struct.unpack_from(">h", value)[0])
    return seen


def _decoders(line: str) -> dict[tuple[str, int], object]:
    """(topic, type) -> the decoder's value message (or, for control records, the type's name) for a release line."""
    from kafkalog.format.records.control import ControlType
    from kafkalog.internal.messages import messages_of
    from kafkalog.internal.releases import parse_release

    m = messages_of(parse_release(line))
    out: dict[tuple[str, int], object] = {}
    out.update({("__consumer_offsets", t): kv[1] for t, kv in m.group_coordinator.items()})
    out.update({("__share_group_state", t): kv[1] for t, kv in m.share_coordinator.items()})
    out[("__transaction_state", 0)] = m.transaction_coordinator[0][1]
    out.update({("__cluster_metadata", t): msg for t, (_name, msg) in m.metadata.items()})
    out.update({("__remote_log_metadata", t): msg for t, (_name, msg) in m.remote_log_metadata.items()})
    out.update({(CONTROL, c.value): c.name for c in ControlType if c.value >= 0})
    return out


def _layout(m: object) -> object:
    """What decides a message's bytes: each field's name, type, versions, nullability and tag, nested."""
    if isinstance(m, str):
        return m

    def fields(fs: Iterable[object]) -> tuple[object, ...]:
        return tuple(
            (f.name, f.type, str(f.versions), str(f.nullable), f.tag, str(f.tagged), fields(f.fields or ()))  # type: ignore[attr-defined]
            for f in fs
        )

    structs = getattr(m, "structs", {})
    return str(m.valid), fields(m.fields), tuple(sorted((k, fields(v)) for k, v in structs.items()))  # type: ignore[attr-defined]


def _name(m: object) -> str:
    return m if isinstance(m, str) else re.sub(r"Value$", "", m.name)  # type: ignore[attr-defined]


def _span(versions: set[int]) -> str:
    """{0, 1, 2, 4} -> "0-2, 4"."""
    out: list[str] = []
    for v in sorted(versions):
        if out and v == int(out[-1].split("-")[-1]) + 1:
            out[-1] = f"{out[-1].split('-')[0]}-{v}"
        else:
            out.append(str(v))
    return ", ".join(out)


def table(golden: Path = GOLDEN) -> str:
    """The Markdown table of §7.9."""
    seen = versions_seen(golden)
    lines = list(RELEASE_DIRS)
    decoders = {line: _decoders(line) for line in lines}
    head = "| topic | type | record | " + " | ".join(lines) + " |"
    rows = [head, "|" + "---|" * (3 + len(lines))]
    order = {t: i for i, t in enumerate((*TOPICS, CONTROL))}
    for topic, rtype in sorted(seen, key=lambda k: (order[k[0]], k[1])):
        newest = next(decoders[line][(topic, rtype)] for line in reversed(lines) if (topic, rtype) in decoders[line])
        cells = []
        previous: object = None
        for line in lines:
            m = decoders[line].get((topic, rtype))
            versions = seen[(topic, rtype)].get(line)
            if not versions:
                cells.append("—")
                previous = None
                continue
            cell = _span(versions)
            if m is not None and _name(m) != _name(newest):
                cell += f" ({_name(m)})"
            if previous is not None and m is not None and _layout(m) != _layout(previous):
                cell += " †"
            cells.append(cell)
            previous = m
        where = "control" if topic == CONTROL else f"`{topic}`"
        rows.append(f"| {where} | {rtype} | {_name(newest)} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def spec_table(spec: str) -> str:
    """The table SPEC.md holds between the markers."""
    m = _BLOCK.search(spec)
    if not m:
        raise SystemExit(f"SPEC.md has no {BEGIN} ... {END} block")
    return m.group(1).strip("\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="replace the table in SPEC.md")
    args = ap.parse_args(argv)
    text = table()
    if not args.write:
        print(text)
        return 0
    spec = SPEC.read_text(encoding="utf-8")
    spec_table(spec)  # the markers are there
    SPEC.write_text(_BLOCK.sub(lambda _m: BEGIN + "\n" + text + "\n" + END, spec, count=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
