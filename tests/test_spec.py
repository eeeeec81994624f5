"""SPEC.md's byte tables mirror the construct schemas, and the rules and cases it names exist."""

from __future__ import annotations

import re

import pytest
from construct import Const, FocusedSeq, FormatField, IfThenElse, Renamed

from helpers import REPO
from kafkalog.format import schemas as S

SPEC = (REPO / "SPEC.md").read_text(encoding="utf-8")

_TYPES = {
    ("b", 1): "int8", ("h", 2): "int16", ("i", 4): "int32", ("l", 4): "int32", ("q", 8): "int64",
    ("B", 1): "uint8", ("H", 2): "uint16", ("I", 4): "uint32", ("L", 4): "uint32", ("Q", 8): "uint64",
}


def _table(name: str) -> list[dict[str, str]]:
    m = re.search(rf"^#### `{name}`\s*\n\s*\n((?:\|.*\n)+)", SPEC, re.M)
    assert m, f"SPEC.md has no table under a heading `{name}`"
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in m.group(1).strip().splitlines()]
    header, body = rows[0], rows[2:]
    return [dict(zip(header, r, strict=True)) for r in body]


def _expected(sc: Renamed) -> tuple[str, int | None]:
    """(type, size) a table row must give for one field of a construct Struct."""
    inner = sc.subcon
    while type(inner).__name__ in ("Rebuild",):
        inner = inner.subcon
    if isinstance(inner, Const):
        if isinstance(inner.subcon, FormatField):
            return _TYPES[(inner.subcon.fmtstr[-1], inner.subcon.length)], inner.subcon.length
        return "bytes", len(inner.value)
    if isinstance(inner, FormatField):
        return _TYPES[(inner.fmtstr[-1], inner.length)], inner.length
    if type(inner).__name__ == "ZigZag":
        return "varint", None
    if isinstance(inner, IfThenElse) or type(inner).__name__ == "Bytes":
        return "bytes", None
    if isinstance(inner, FocusedSeq):  # PrefixedArray: the row gives the count's type
        count = inner.subcons[0]
        while type(count).__name__ in ("Renamed", "Rebuild"):
            count = count.subcon
        if isinstance(count, FormatField):
            return _TYPES[(count.fmtstr[-1], count.length)], None
        return "varint", None
    raise AssertionError(f"no SPEC type for {sc.name}: {type(inner).__name__}")


@pytest.mark.parametrize("name", sorted(S.SCHEMAS))
def test_spec_table_mirrors_schema(name: str) -> None:
    rows = _table(name)
    fields = S.SCHEMAS[name].subcons
    assert [r["Field"] for r in rows] == [f.name for f in fields], f"{name}: field names or order differ"
    offset: int | None = 0
    for row, f in zip(rows, fields, strict=True):
        typ, size = _expected(f)
        spec_type = row["Type"]
        # SPEC writes Kafka's varlong where construct's ZigZag is the same encoding
        assert spec_type == typ or (typ == "varint" and spec_type == "varlong"), f"{name}.{f.name}: SPEC says {spec_type}, schema {typ}"
        if size is not None:
            assert row["Size"] == str(size), f"{name}.{f.name}: size {row['Size']} != {size}"
        if offset is not None:
            assert row["Offset"] == str(offset), f"{name}.{f.name}: offset {row['Offset']} != {offset}"
        offset = offset + size if (offset is not None and size is not None) else None


def test_fixed_sizes_stated_in_spec() -> None:
    """The sizes SPEC.md states in prose match the schemas (61-byte v2 header, 8/12/34-byte entries)."""
    assert S.RECORD_BATCH_V2_HEADER.sizeof() == 61 and "61" in SPEC
    for name, size in (("OffsetIndexEntry", 8), ("TimeIndexEntry", 12), ("AbortedTxnEntry", 34), ("ProducerSnapshotEntry", 46)):
        assert S.SCHEMAS[name].sizeof() == size


def test_rule_ids_are_unique() -> None:
    ids = re.findall(r"^\*\*(R-[A-Z0-9]+-\d+)\*\*", SPEC, re.M)
    assert len(ids) > 100
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, dupes


def _byte_tables() -> list[tuple[int, str | None]]:
    """(line number, the `Name` heading right above it or None) of every table with Offset, Size and Type columns."""
    lines = SPEC.splitlines()
    out = []
    for i, line in enumerate(lines):
        cols = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if {"Offset", "Size", "Type"} <= set(cols) and (i == 0 or not lines[i - 1].startswith("|")):
            j = i - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            m = re.fullmatch(r"#### `(\w+)`", lines[j].strip()) if j >= 0 else None
            out.append((i + 1, m.group(1) if m else None))
    return out


def test_every_byte_table_mirrors_a_schema() -> None:
    """Each byte table sits right under a heading naming a construct schema, and each schema has one table."""
    tables = _byte_tables()
    assert len(tables) >= len(S.SCHEMAS)
    orphans = [line for line, name in tables if name not in S.SCHEMAS]
    assert not orphans, f"SPEC.md byte tables at lines {orphans} have no `Name` heading of a schema in schemas.SCHEMAS"
    names = [name for _line, name in tables]
    assert sorted(names) == sorted(S.SCHEMAS), "each schema must have exactly one byte table"


@pytest.mark.parametrize("name", sorted(S.SCHEMAS))
def test_constant_fields_state_their_value(name: str) -> None:
    """A Const field (magic numbers) shows its value at the start of the table's Meaning column."""
    rows = {r["Field"]: r for r in _table(name)}
    for f in S.SCHEMAS[name].subcons:
        inner = f.subcon
        if isinstance(inner, Const):
            meaning = rows[f.name]["Meaning"]
            if isinstance(inner.value, bytes):
                assert meaning.startswith(f"`{inner.value.hex(' ')}`"), f"{name}.{f.name}: {meaning}"
            else:
                assert meaning.split()[0] == str(inner.value), f"{name}.{f.name}: {meaning}"
