"""Parquet files written in parts by several processes joined into the file one writer writes.

A Parquet file is ``PAR1``, the column chunks of its row groups, then its footer: the file's
metadata (a Thrift ``FileMetaData`` in the compact protocol), its length as a 4-byte little-endian
integer, and ``PAR1`` again (the format's README, parquet.thrift). The footer holds the absolute
position of each column chunk's pages, so the row groups of another file cannot be appended as
they are; but nothing in the chunks depends on where they are. :func:`join` copies each part's
chunks after the previous part's and writes one footer whose row groups are the parts' in order,
their positions moved by where the chunks now start, their ordinals counted on, and the row count
summed. When every part was written by the same writer with the same schema and options, as one
writer would have written their row groups in turn, the result is that writer's file, byte for
byte: ``export -j`` lets worker processes encode a large partition's row groups and this process
only joins them.

The metadata is read into a tree that keeps every field (Thrift's compact protocol, field ids,
types and values in order) and written back by the same rules, so fields this module does not know
pass through unchanged.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from typing import Any, BinaryIO

from kafkalog.format.primitives import read_unsigned_varint, read_varlong, write_unsigned_varint, write_varint

__all__ = ["join"]

MAGIC = b"PAR1"
# compact protocol types (Thrift's TCompactProtocol)
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)

# the fields join changes (parquet.thrift): FileMetaData.num_rows and .row_groups; RowGroup.columns,
# .file_offset and .ordinal; ColumnChunk.file_offset and .meta_data; ColumnMetaData.data_page_offset,
# .index_page_offset and .dictionary_page_offset. A page index (ColumnChunk.offset_index_offset,
# .column_index_offset) or bloom filter (ColumnMetaData.bloom_filter_offset) is written after every
# row group, before the footer: files that hold one are refused
_FMD_NUM_ROWS, _FMD_ROW_GROUPS = 3, 4
_RG_COLUMNS, _RG_FILE_OFFSET, _RG_ORDINAL = 1, 5, 7
_CC_FILE_OFFSET, _CC_META = 2, 3
_CC_AFTER_ROW_GROUPS = (4, 6)
_CMD_OFFSETS = (9, 10, 11)
_CMD_AFTER_ROW_GROUPS = 14

Struct = list[list[Any]]  # [[field id, type, value], ...] in the order written


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.p = 0

    def byte(self) -> int:
        b = self.data[self.p]
        self.p += 1
        return b

    def varint(self) -> int:
        n, self.p = read_unsigned_varint(self.data, self.p, 10, "Thrift varint")
        return n

    def zigzag(self) -> int:
        n, self.p = read_varlong(self.data, self.p)
        return n

    def value(self, t: int) -> Any:
        if t in (_TRUE, _FALSE):
            return None  # a field's value is its type
        if t == _BYTE:
            return self.byte()
        if t in (_I16, _I32, _I64):
            return self.zigzag()
        if t == _DOUBLE:
            v = self.data[self.p : self.p + 8]
            self.p += 8
            return v
        if t == _BINARY:
            n = self.varint()
            v = self.data[self.p : self.p + n]
            self.p += n
            return v
        if t in (_LIST, _SET):
            head = self.byte()
            n, et = head >> 4, head & 0x0F
            if n == 15:
                n = self.varint()
            # booleans in a list are one byte each, kept as read
            return et, [self.byte() if et in (_TRUE, _FALSE) else self.value(et) for _ in range(n)]
        if t == _MAP:
            n = self.varint()
            kv = self.byte() if n else 0
            kt, vt = kv >> 4, kv & 0x0F
            return kt, vt, [(self.value(kt), self.value(vt)) for _ in range(n)]
        if t == _STRUCT:
            return self.struct()
        raise ValueError(f"unknown Thrift compact type {t} at byte {self.p}")

    def struct(self) -> Struct:
        fields: Struct = []
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return fields
            t, delta = head & 0x0F, head >> 4
            fid = last + delta if delta else self.zigzag()
            fields.append([fid, t, self.value(t)])
            last = fid


def _write_value(t: int, v: Any, out: bytearray) -> None:
    if t in (_TRUE, _FALSE):
        return
    if t == _BYTE:
        out.append(v)
    elif t in (_I16, _I32, _I64):
        write_varint(v, out)
    elif t == _DOUBLE:
        out += v
    elif t == _BINARY:
        write_unsigned_varint(len(v), out)
        out += v
    elif t in (_LIST, _SET):
        et, items = v
        if len(items) < 15:
            out.append(len(items) << 4 | et)
        else:
            out.append(0xF0 | et)
            write_unsigned_varint(len(items), out)
        for item in items:
            if et in (_TRUE, _FALSE):
                out.append(item)
            else:
                _write_value(et, item, out)
    elif t == _MAP:
        kt, vt, items = v
        write_unsigned_varint(len(items), out)
        if items:
            out.append(kt << 4 | vt)
        for k, x in items:
            _write_value(kt, k, out)
            _write_value(vt, x, out)
    elif t == _STRUCT:
        _write_struct(v, out)
    else:
        raise ValueError(f"unknown Thrift compact type {t}")


def _write_struct(fields: Struct, out: bytearray) -> None:
    last = 0
    for fid, t, v in fields:
        if 0 < fid - last <= 15:
            out.append((fid - last) << 4 | t)
        else:
            out.append(t)
            write_varint(fid, out)
        _write_value(t, v, out)
        last = fid
    out.append(0)


def _field(fields: Struct, fid: int) -> list[Any] | None:
    return next((f for f in fields if f[0] == fid), None)


def _footer(f: BinaryIO, size: int) -> tuple[Struct, int]:
    """A Parquet file's metadata, and where its footer starts."""
    f.seek(size - 8)
    tail = f.read(8)
    (length,) = struct.unpack("<i", tail[:4])
    if tail[4:] != MAGIC or length <= 0 or length > size - 12:
        raise ValueError(f"{getattr(f, 'name', 'a part')} is not a whole Parquet file")
    start = size - 8 - length
    f.seek(start)
    return _Reader(f.read(length)).struct(), start


def _move(row_group: Struct, by: int, ordinal: int) -> None:
    """A row group's positions moved ``by`` bytes, its ordinal set."""
    for fid, _t, v in row_group:
        if fid == _RG_COLUMNS:
            for chunk in v[1]:
                for f in chunk:
                    if f[0] == _CC_FILE_OFFSET and f[2] > 0:  # 0: not given
                        f[2] += by
                    elif f[0] in _CC_AFTER_ROW_GROUPS:
                        raise ValueError("a part holds a page index, written after every row group: its row groups cannot be joined")
                    elif f[0] == _CC_META:
                        for m in f[2]:
                            if m[0] in _CMD_OFFSETS:
                                m[2] += by
                            elif m[0] == _CMD_AFTER_ROW_GROUPS:
                                raise ValueError("a part holds a bloom filter, written after every row group: its row groups cannot be joined")
    for f in row_group:
        if f[0] == _RG_FILE_OFFSET and f[2] > 0:
            f[2] += by
        elif f[0] == _RG_ORDINAL:
            f[2] = ordinal


def join(out: BinaryIO, parts: Iterable[str]) -> None:
    """Write to ``out`` (at its start) the Parquet file whose row groups are those of the files
    ``parts``, in order (see the module's docstring). Each part is read whole before the next is
    asked for (an iterator may remove it then)."""
    out.write(MAGIC)
    pos = len(MAGIC)
    merged: Struct | None = None
    groups: list[Any] = []
    rows = 0
    for path in parts:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            meta, end = _footer(f, size)
            for g in _field(meta, _FMD_ROW_GROUPS)[2][1]:  # type: ignore[index]
                _move(g, pos - len(MAGIC), len(groups))
                groups.append(g)
            rows += _field(meta, _FMD_NUM_ROWS)[2]  # type: ignore[index]
            f.seek(len(MAGIC))
            left = end - len(MAGIC)
            while left:
                chunk = f.read(min(left, 1 << 20))
                out.write(chunk)
                left -= len(chunk)
            pos += end - len(MAGIC)
        merged = merged or meta
    if merged is None:
        raise ValueError("no part to join")
    _field(merged, _FMD_NUM_ROWS)[2] = rows  # type: ignore[index]
    rg = _field(merged, _FMD_ROW_GROUPS)
    rg[2] = (rg[2][0], groups)  # type: ignore[index]
    footer = bytearray()
    _write_struct(merged, footer)
    out.write(footer)
    out.write(struct.pack("<i", len(footer)))
    out.write(MAGIC)
