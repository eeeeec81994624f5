"""Kaitai Struct export: ``kafka_log.ksy`` generated from the construct declarations of ``schemas``.

Every type of ``schemas.SCHEMAS`` becomes a Kaitai type of the same fields (camelCase names in
snake_case), so Kaitai's compilers give parsers in many languages and its Web IDE a hex viewer that
agree with SPEC.md's byte tables. The top-level type reads a ``.log`` file (entries of magic 0, 1
and 2; compressed record areas are exposed as bytes); ``offset_index``, ``time_index``,
``txn_index`` and ``producer_snapshot`` read the other binary files. Run
``python -m kafkalog.tools.ksy > golden/kafka_log.ksy`` to regenerate (tests/test_ksy.py checks it).
"""

from __future__ import annotations

import operator
import re
import sys
from typing import Any

from construct import Bytes, Const, Construct, FocusedSeq, FormatField, IfThenElse, Renamed, Struct
from construct.expr import BinExpr, Path

from kafkalog.format import schemas as S

__all__ = ["ksy_document", "ksy_text"]

_INT = {("b", 1): "s1", ("h", 2): "s2", ("i", 4): "s4", ("l", 4): "s4", ("q", 8): "s8",
        ("B", 1): "u1", ("H", 2): "u2", ("I", 4): "u4", ("L", 4): "u4", ("Q", 8): "u8"}
_OPS = {operator.ge: ">=", operator.gt: ">", operator.le: "<=", operator.lt: "<", operator.eq: "==", operator.ne: "!=",
        operator.add: "+", operator.sub: "-"}
#: Kafka's varlong has at most 10 groups of 7 bits.
_MAX_GROUPS = 10


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _int_type(ff: FormatField) -> str:
    return _INT[(ff.fmtstr[-1], ff.length)]


def _is_varint(sc: Construct) -> bool:
    return type(sc).__name__ == "ZigZag"


def _expr(e: Any, varints: set[str]) -> str:
    """A construct ``this`` expression in Kaitai's expression language."""
    if isinstance(e, Path):
        name = _snake(e._Path__field)  # noqa: SLF001 - construct keeps the field name private
        return f"{name}.value" if name in varints else name
    if isinstance(e, BinExpr):
        return f"{_expr(e.lhs, varints)} {_OPS[e.op]} {_expr(e.rhs, varints)}"
    if isinstance(e, int):
        return str(e)
    raise TypeError(f"no Kaitai expression for {e!r}")


def _fields(struct: Struct) -> list[dict[str, Any]]:
    """Kaitai ``seq`` attributes for the fields of one construct Struct."""
    out: list[dict[str, Any]] = []
    varints: set[str] = set()
    for field in struct.subcons:
        assert isinstance(field, Renamed), field
        name, sc = _snake(field.name), field.subcon
        attr: dict[str, Any] = {"id": name}
        cond = None
        if isinstance(sc, IfThenElse):  # construct's If(cond, x): x or nothing
            cond, sc = _expr(sc.condfunc, varints), sc.thensubcon
        if isinstance(sc, Const):
            if isinstance(sc.subcon, FormatField):
                attr.update(type=_int_type(sc.subcon), valid=sc.value)
            else:
                attr["contents"] = list(sc.value)
        elif isinstance(sc, FormatField):
            attr["type"] = _int_type(sc)
        elif _is_varint(sc):
            attr["type"] = "zigzag_varint"
            varints.add(name)
        elif isinstance(sc, Bytes):
            attr["size"] = _expr(sc.length, varints) if not isinstance(sc.length, int) else sc.length
        elif isinstance(sc, FocusedSeq):  # PrefixedArray: an element count, then the elements
            count, element = sc.subcons[0].subcon.subcon, sc.subcons[1].subcon.subcon  # Renamed(Rebuild(..)), Renamed(Array(..))
            count_attr: dict[str, Any] = {"id": f"{name}_count"}
            if _is_varint(count):
                count_attr["type"] = "zigzag_varint"
                count_expr = f"{name}_count.value"
            else:
                count_attr["type"] = _int_type(count)
                count_expr = f"{name}_count"
            out.append(count_attr)
            attr.update(type=_type_name(element), repeat="expr")
            attr["repeat-expr"] = count_expr
        else:
            raise TypeError(f"{field.name}: no Kaitai type for {type(sc).__name__}")
        if cond is not None:
            attr["if"] = cond
        out.append(attr)
    return out


def _type_name(struct: Construct) -> str:
    for name, sc in S.SCHEMAS.items():
        if sc is struct:
            return _snake(name)
    raise KeyError(f"{struct!r} is not in schemas.SCHEMAS")


def _zigzag_varint() -> dict[str, Any]:
    groups = " + ".join(
        f"(groups.size > {i} ? (groups[{i}] & 0x7f) << {7 * i} : 0)" if i else "(groups[0] & 0x7f)" for i in range(_MAX_GROUPS)
    )
    return {
        "doc": "Kafka's varint/varlong: zig-zag, then little-endian base 128 (SPEC §1.2).",
        "seq": [{"id": "groups", "type": "u1", "repeat": "until", "repeat-until": "(_ & 0x80) == 0 or _index == 9"}],
        "instances": {
            "raw": {"value": groups, "doc": "the unsigned (zig-zag encoded) value"},
            "value": {"value": "(raw >> 1) ^ -(raw & 1)", "doc": "the signed value"},
        },
    }


def ksy_document() -> dict[str, Any]:
    """The .ksy as a plain dict (YAML-ready), built from ``schemas.SCHEMAS``."""
    types: dict[str, Any] = {}
    for name, sc in S.SCHEMAS.items():
        types[_snake(name)] = {"doc": f"schemas.{name} (SPEC.md table `{name}`)", "seq": _fields(sc)}
    types["zigzag_varint"] = _zigzag_varint()
    types["log_entry"] = {
        "doc": "One entry of a .log (SPEC §3.1): its size and magic are read ahead, then the whole entry by its magic.",
        "seq": [{
            "id": "entry",
            "size": "12 + size_ahead",
            "type": {"switch-on": "magic_ahead", "cases": {0: "legacy_message_v0", 1: "legacy_message_v1", 2: "record_batch_v2"}},
        }],
        "instances": {
            "start": {"value": "_io.pos"},
            "size_ahead": {"pos": "start + 8", "type": "s4"},
            "magic_ahead": {"pos": "start + 16", "type": "s1"},
        },
    }
    types["record_batch_v2"] = {
        "doc": "A magic 2 batch (SPEC §3.6-§3.8): the header, then the records or, when compressed, their compressed bytes.",
        "seq": [
            {"id": "header", "type": "record_batch_v2_header"},
            {"id": "records", "type": "record_v2", "repeat": "expr", "repeat-expr": "header.records_count", "if": "compression == 0"},
            {"id": "compressed_records", "size-eos": True, "if": "compression != 0"},
        ],
        "instances": {
            "compression": {"value": "header.attributes & 7", "doc": "0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd (Appendix A)"},
        },
    }
    for name, entry, doc in (
        ("offset_index", "offset_index_entry", "a .index file (SPEC §4.2); a preallocated file's zero tail reads as entries (0, 0)"),
        ("time_index", "time_index_entry", "a .timeindex file (SPEC §4.4)"),
        ("txn_index", "aborted_txn_entry", "a .txnindex file (SPEC §4.6)"),
    ):
        types[name] = {"doc": doc, "seq": [{"id": "entries", "type": entry, "repeat": "eos"}]}
    # the top level: a .log file; the other files are read with the types above
    return {
        "meta": {"id": "kafka_log", "title": "Apache Kafka log segment (.log) and its index, transaction index and snapshot files",
                 "file-extension": "log", "license": "Apache-2.0", "endian": "be"},
        "doc": "Generated by kafkalog.tools.ksy from kafkalog.format.schemas; do not edit. See SPEC.md. "
               "Other files: parse with the types offset_index, time_index, txn_index and producer_snapshot.",
        "seq": [{"id": "entries", "type": "log_entry", "repeat": "eos"}],
        "types": types,
    }


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    s = str(v)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", s) and s not in ("true", "false", "null", "yes", "no", "on", "off"):
        return s
    return "'" + s.replace("'", "''") + "'"


def _yaml(v: Any, indent: int) -> list[str]:
    pad = "  " * indent
    lines: list[str] = []
    if isinstance(v, dict):
        for k, x in v.items():
            if isinstance(x, (dict, list)) and x:
                lines.append(f"{pad}{_scalar(k)}:")
                lines += _yaml(x, indent + 1)
            else:
                lines.append(f"{pad}{_scalar(k)}: {_flow(x)}")
    else:
        for x in v:
            sub = _yaml(x, indent + 1) if isinstance(x, (dict, list)) else [f"{pad}  {_flow(x)}"]
            lines.append(f"{pad}- {sub[0].lstrip()}")
            lines += sub[1:]
    return lines


def _flow(v: Any) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(_flow(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_scalar(k)}: {_flow(x)}" for k, x in v.items()) + "}"
    return _scalar(v)


def ksy_text() -> str:
    """The .ksy file's text (YAML)."""
    return "# Generated by `python -m kafkalog.tools.ksy` from codec/kafkalog/format/schemas.py; do not edit.\n" + "\n".join(_yaml(ksy_document(), 0)) + "\n"


if __name__ == "__main__":
    sys.stdout.write(ksy_text())
