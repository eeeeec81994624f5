"""The small text files of a log dir: checkpoints, ``partition.metadata``, ``meta.properties``.

* ``leader-epoch-checkpoint``: ``0`` (version), entry count, then ``epoch startOffset`` lines.
* ``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
  ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``: ``0``, count, then
  ``topic partition offset`` lines.
* ``partition.metadata``: ``version: 0`` and ``topic_id: <base64 UUID>``.
* ``meta.properties``: Java properties (``key=value``) with a version, node or broker id and cluster id.

The ``write_*`` functions replace a file as Kafka's CheckpointFile does: a ``.tmp`` file, fsync,
atomic rename, fsync of the directory.
"""

from __future__ import annotations

import base64
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalog.errors import CorruptIndexError, MetaPropertiesError
from kafkalog.format.files import atomic_write, read_bytes

if TYPE_CHECKING:
    import uuid  # imported where a UUID is given (uuid loads platform: not for every command)

__all__ = [
    "EpochEntry",
    "MetaProperties",
    "PartitionMetadata",
    "format_leader_epoch_checkpoint",
    "format_offset_checkpoint",
    "format_partition_metadata",
    "read_leader_epoch_checkpoint",
    "read_meta_properties",
    "read_offset_checkpoint",
    "read_partition_metadata",
    "read_properties",
    "topic_id_string",
    "write_leader_epoch_checkpoint",
    "write_offset_checkpoint",
    "write_partition_metadata",
]


@dataclass(frozen=True)
class EpochEntry:
    """Leader epoch ``epoch`` started at offset ``start_offset``."""

    epoch: int
    start_offset: int


@dataclass(frozen=True)
class PartitionMetadata:
    """The topic id a partition directory belongs to."""

    version: int
    topic_id: str


def _text(path: str | os.PathLike[str] | None, data: bytes | None) -> tuple[str, str | None]:
    name = None if path is None else os.fspath(path)
    if data is None:
        assert path is not None
        data = read_bytes(path)
    try:
        return data.decode("utf-8"), name
    except UnicodeDecodeError as e:
        raise CorruptIndexError("not UTF-8 text", file=name, position=e.start) from None


#: Java's ``\\s`` inside a line (CR and LF end lines before any split): what Kafka's patterns split at.
_JWS = "[ \t\x0b\x0c]"
_ENTRY_SEP = re.compile(_JWS + "+")  # LeaderEpochCheckpointFile, OffsetCheckpointFile: "\\s+"
_PM_SEP = re.compile(":" + _JWS + "+")  # PartitionMetadataReadBuffer: ":\\s+"
_LINE_END = re.compile(r"\r\n|\r|\n")
_ASCII_NUMBER = re.compile(r"[+-]?[0-9]+")


def _java_lines(text: str) -> list[tuple[str, int]]:
    """The lines BufferedReader.readLine returns (ends: CR LF, LF, CR; a line end at the very end
    starts no further line), each with the character position of its start."""
    out = []
    start = 0
    for m in _LINE_END.finditer(text):
        out.append((text[start : m.start()], start))
        start = m.end()
    if start < len(text):
        out.append((text[start:], start))
    return out


def _java_split(pattern: re.Pattern[str], line: str) -> list[str]:
    """``Pattern.split(line)``: an empty first part when the line starts with a separator, empty
    parts at the end dropped, the line itself when nothing matches."""
    parts = pattern.split(line)
    if len(parts) > 1:
        while parts and parts[-1] == "":
            parts.pop()
    return parts


def _java_number(field: str, bits: int) -> int | None:
    """``field`` as Java's Integer.parseInt (``bits`` 32) or Long.parseLong (64) reads it, else None:
    an optional ``+`` or ``-``, then one or more decimal digits, any of the BMP's Unicode ``Nd``
    digits included (Character.digit works on UTF-16 chars), and a value in range."""
    if _ASCII_NUMBER.fullmatch(field):
        value = int(field)
    else:
        sign, digits = (field[0], field[1:]) if field[:1] in ("+", "-") else ("", field)
        if not digits or any(ord(c) > 0xFFFF or unicodedata.decimal(c, None) is None for c in digits):
            return None
        value = int(sign + "".join(str(unicodedata.decimal(c)) for c in digits))
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None


def _checkpoint_lines(text: str, name: str | None, fields: int) -> Iterator[tuple[list[str], int]]:
    """The entry lines of a checkpoint file split into ``fields`` fields, each with the byte position
    of its line, read as CheckpointFile.CheckpointReadBuffer reads them (SPEC §5.7, R-CKPT-10)."""
    lines = _java_lines(text)

    ascii_only = text.isascii()
    reached = [0, 0]  # the last line start asked for and its byte position: entries are asked in order

    def at(i: int) -> int:
        """Line ``i``'s byte position, its UTF-8 counted on from the last one asked (counting from
        the file's start for each of 100,000 entries was most of planning's time over as many partitions)."""
        pos = lines[i][1]
        if ascii_only:
            return pos
        c, b = reached if pos >= reached[0] else (0, 0)
        reached[:] = [pos, b + len(text[c:pos].encode("utf-8"))]
        return reached[1]

    if not lines:
        return  # Kafka reads an empty file as no entries
    version = _java_number(lines[0][0], 32)
    if version is None:
        raise CorruptIndexError(f"malformed checkpoint version line {lines[0][0]!r}", file=name, position=0)
    if version != 0:
        raise CorruptIndexError(f"unrecognised checkpoint version {version}", file=name, position=0)
    if len(lines) == 1:
        return  # a version line alone: no entries, as Kafka reads it
    count = _java_number(lines[1][0], 32)
    if count is None or count < 0:
        raise CorruptIndexError(f"malformed entry count {lines[1][0]!r}", file=name, position=at(1))
    for i in range(2, len(lines)):
        parts = _java_split(_ENTRY_SEP, lines[i][0])
        if len(parts) != fields:
            raise CorruptIndexError(f"malformed checkpoint line {lines[i][0]!r}", file=name, position=at(i))
        yield parts, at(i)
    if count != len(lines) - 2:
        raise CorruptIndexError(f"checkpoint declares {count} entries but holds {len(lines) - 2}", file=name, position=at(1))


def read_leader_epoch_checkpoint(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> list[EpochEntry]:
    """Entries of a ``leader-epoch-checkpoint`` file."""
    text, name = _text(path, data)
    return [EpochEntry(_int(e, name, at, 32), _int(o, name, at)) for (e, o), at in _checkpoint_lines(text, name, 2)]


def read_offset_checkpoint(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> offset of a recovery-point/replication/log-start/cleaner checkpoint.
    As in Kafka, a line starting with whitespace has an empty topic name."""
    text, name = _text(path, data)
    plain = _plain_offset_entries(text)
    if plain is not None:
        return plain
    return {(t, _int(p, name, at, 32)): _int(o, name, at) for (t, p, o), at in _checkpoint_lines(text, name, 3)}


#: A checkpoint as Kafka writes one (CheckpointFile.write): the version 0 and the entry count on
#: lines of their own, then the entries' lines (``topic partition offset``, single spaces, LF ends).
_PLAIN_HEAD = re.compile(r"0\n([0-9]{1,9})\n")
#: One such entry line: a topic of visible ASCII, a partition of at most 9 digits and an offset of at
#: most 18 (a Java int and a Java long whatever the digits).
_PLAIN_ENTRY = re.compile(r"^([!-~]+) ([0-9]{1,9}) ([0-9]{1,18})$", re.M)


def _plain_offset_entries(text: str) -> dict[tuple[str, int], int] | None:
    """The entries of an offset checkpoint written as Kafka writes it, read with one regular
    expression; None for any other text, which :func:`_checkpoint_lines` then reads line by line
    (and judges). Both readings give the same entries: a line the pattern takes is one that
    line-by-line reading splits into the same three fields and numbers. A data dir's checkpoint has
    a line per partition: over 100,000 partitions, line-by-line reading was most of the time
    planning spent in a data dir's files."""
    head = _PLAIN_HEAD.match(text)
    if head is None:
        return None
    body = text[head.end() :]
    lines = body.count("\n") + (0 if body.endswith("\n") or not body else 1)
    entries = _PLAIN_ENTRY.findall(body)
    if len(entries) != lines or lines != int(head[1]):
        return None
    return {(t, int(p)): int(o) for t, p, o in entries}


def _int(field: str, name: str | None, position: int, bits: int = 64) -> int:
    """A checkpoint number (a Java int or long), reported at its line's byte ``position`` when malformed."""
    value = _java_number(field, bits)
    if value is None:
        raise CorruptIndexError(f"malformed number {field!r} in checkpoint", file=name, position=position)
    return value


_UUID = re.compile(r"[A-Za-z0-9_-]{22}(?:==)?")  # the strings Uuid.fromString decodes to 16 bytes


def _uuid_bytes(text: str) -> bytes | None:
    """The 16 bytes Kafka's Uuid.fromString reads from ``text`` (Java's strict URL-safe base64
    decoder, which ignores the unused low bits of the last character), else None."""
    if not _UUID.fullmatch(text):
        return None
    return base64.urlsafe_b64decode(text[:22] + "==")


def read_partition_metadata(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> PartitionMetadata:
    """Parse ``partition.metadata`` as PartitionMetadataReadBuffer does (R-CKPT-07, R-CKPT-10): two
    lines, each split at ``:`` followed by whitespace into a key (not checked) and a value; a
    version >= 0 (any, for downgrades), then a topic id that Java's URL-safe base64 decoder turns
    into 16 bytes, not all zero. The id is returned as Kafka prints it (no padding)."""
    text, name = _text(path, data)
    lines = _java_lines(text)
    if not lines:
        raise CorruptIndexError("empty partition.metadata", file=name, position=0)
    first = _java_split(_PM_SEP, lines[0][0])
    if len(first) != 2:
        raise CorruptIndexError(f"malformed line {lines[0][0]!r}", file=name, position=0)
    version = _java_number(first[1], 32)
    if version is None:
        raise CorruptIndexError(f"malformed version line {lines[0][0]!r}", file=name, position=0)
    if version < 0:
        raise CorruptIndexError(f"unrecognized partition.metadata version {version}", file=name, position=0)
    if len(lines) < 2:
        raise CorruptIndexError("partition.metadata has no topic id line", file=name, position=len(text.encode("utf-8")))
    pos = len(text[: lines[1][1]].encode("utf-8"))
    second = _java_split(_PM_SEP, lines[1][0])
    if len(second) != 2:
        raise CorruptIndexError(f"malformed line {lines[1][0]!r}", file=name, position=pos)
    topic_id = second[1]
    raw = _uuid_bytes(topic_id)
    if raw is None:
        raise CorruptIndexError(f"malformed topic id {topic_id!r}", file=name, position=pos)
    if raw == bytes(16):
        raise CorruptIndexError("invalid topic id: the all-zero UUID", file=name, position=pos)
    return PartitionMetadata(version, base64.urlsafe_b64encode(raw).decode("ascii").rstrip("="))


def _logical_lines(text: str) -> Iterator[tuple[str, int]]:
    """Java Properties.load's logical lines with the position of each one's first character:
    leading whitespace dropped, comments and blank lines skipped, a line ending in an odd number
    of backslashes continued on the next (whose leading whitespace is dropped)."""
    lines = [(m.group(1), m.start()) for m in re.finditer(r"([^\r\n]*)(?:\r\n|\r|\n)", text + "\n")]
    i = 0
    while i < len(lines):
        raw, start = lines[i]
        line = raw.lstrip(" \t\f")
        start += len(raw) - len(line)
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(lines):
            line = line[:-1] + lines[i][0].lstrip(" \t\f")
            i += 1
        yield line, start


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2 : i + 6]):
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        if c != "\\":
            out.append(c)
        i += 1
    return "".join(out)


def _properties(text: str) -> dict[str, tuple[str, int]]:
    """key -> (value, byte position of its line) as Java's Properties.load reads them: the key ends at
    the first unescaped ``=``, ``:`` or whitespace; later keys replace earlier ones."""
    out: dict[str, tuple[str, int]] = {}
    for line, start in _logical_lines(text):
        m = re.match(r"((?:\\.|[^\\=: \t\f])*)[ \t\f]*[=:]?[ \t\f]*", line)
        assert m is not None  # the pattern matches the empty string
        out[_unescape(m.group(1))] = (_unescape(line[m.end() :]), len(text[:start].encode("utf-8")))
    return out


def read_properties(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> dict[str, str]:
    """A Java properties file such as ``meta.properties`` (comments and blank lines skipped)."""
    text, _name = _text(path, data)
    return {k: v for k, (v, _pos) in _properties(text).items()}


@dataclass(frozen=True)
class MetaProperties:
    """What ``meta.properties`` says about its log dir (SPEC §5.6): ``version`` 0 (ZooKeeper mode,
    every field optional, the id read from ``broker.id``) or 1 (KRaft, ``node.id`` and ``cluster.id`` set)."""

    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: str | None


def read_meta_properties(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> MetaProperties:
    """Parse and check ``meta.properties`` as MetaProperties.Builder does (R-CKPT-09): a missing
    ``version`` is 0, versions other than 0 and 1 are refused, v1 needs ``node.id`` and ``cluster.id``;
    ids must be decimal int32 and ``directory.id`` a base64 UUID. Raises MetaPropertiesError."""
    text, name = _text(path, data)
    props = _properties(text)

    def fail(message: str, key: str | None = None) -> MetaPropertiesError:
        return MetaPropertiesError(message, file=name, position=props[key][1] if key in props else 0)

    raw_version = props.get("version", ("0", 0))[0]
    version = _java_number(raw_version.strip(), 32)
    if version is None:
        raise fail(f"invalid meta.properties version {raw_version!r}", "version")
    if version not in (0, 1):
        raise fail(f"unknown meta.properties version {version} (only 0 and 1 exist)", "version")
    id_key = "broker.id" if version == 0 else "node.id"
    node_id = None
    if id_key in props:
        node_id = _java_number(props[id_key][0], 32)
        if node_id is None:
            raise fail(f"{id_key} {props[id_key][0]!r} is not a base-10 int32", id_key)
    elif version == 1:
        raise fail("a version 1 meta.properties has no node.id")
    cluster_id = props["cluster.id"][0] if "cluster.id" in props else None
    if version == 1 and cluster_id is None:
        raise fail("a version 1 meta.properties has no cluster.id")
    directory_id = None
    if "directory.id" in props:
        directory_id = props["directory.id"][0]
        if _uuid_bytes(directory_id) is None:
            raise fail(f"directory.id {directory_id!r} is not a base64 UUID", "directory.id")
    return MetaProperties(version, cluster_id, node_id, directory_id)


# ------------------------------------------------------------------------------------ writers
def _checkpoint_text(lines: list[str]) -> bytes:
    return ("0\n" + f"{len(lines)}\n" + "".join(line + "\n" for line in lines)).encode("utf-8")


def format_leader_epoch_checkpoint(entries: Iterable[EpochEntry]) -> bytes:
    """The bytes of a ``leader-epoch-checkpoint`` (version 0, count, ``epoch startOffset`` lines)."""
    return _checkpoint_text([f"{e.epoch} {e.start_offset}" for e in entries])


def write_leader_epoch_checkpoint(path: str | os.PathLike[str], entries: Iterable[EpochEntry], *, sync: bool = True) -> None:
    """Replace a ``leader-epoch-checkpoint`` atomically (temp file, fsync, rename), as CheckpointFile.write does."""
    atomic_write(path, format_leader_epoch_checkpoint(entries), sync=sync)


def format_offset_checkpoint(offsets: Mapping[tuple[str, int], int]) -> bytes:
    """The bytes of an offset checkpoint (``topic partition offset`` lines, in the mapping's order)."""
    for topic, _p in offsets:
        if not topic or any(c.isspace() for c in topic):
            raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint")
    return _checkpoint_text([f"{t} {p} {o}" for (t, p), o in offsets.items()])


def write_offset_checkpoint(path: str | os.PathLike[str], offsets: Mapping[tuple[str, int], int], *, sync: bool = True) -> None:
    """Replace a recovery-point/replication/log-start/cleaner offset checkpoint atomically (OffsetCheckpointFile.write)."""
    atomic_write(path, format_offset_checkpoint(offsets), sync=sync)


def topic_id_string(topic_id: str | bytes | uuid.UUID) -> str:
    """A topic id as Kafka prints it: URL-safe base64 of its 16 bytes, without padding (Uuid.toString)."""
    import uuid

    if isinstance(topic_id, uuid.UUID):
        raw = topic_id.bytes
    elif isinstance(topic_id, bytes):
        raw = topic_id
    else:
        decoded = _uuid_bytes(topic_id) if len(topic_id) == 22 else None
        if decoded is None:
            raise ValueError(f"malformed topic id {topic_id!r}")
        raw = decoded
    if len(raw) != 16:
        raise ValueError(f"a topic id has 16 bytes, got {len(raw)}")
    if raw == bytes(16):
        raise ValueError("the all-zero UUID is not a valid topic id")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def format_partition_metadata(topic_id: str | bytes | uuid.UUID) -> bytes:
    """The bytes of ``partition.metadata`` (version 0, no newline after the id; PartitionMetadata.encode)."""
    return f"version: 0\ntopic_id: {topic_id_string(topic_id)}".encode("ascii")


def write_partition_metadata(path: str | os.PathLike[str], topic_id: str | bytes | uuid.UUID, *, sync: bool = True) -> None:
    """Replace ``partition.metadata`` atomically (PartitionMetadataFile.maybeFlush)."""
    atomic_write(path, format_partition_metadata(topic_id), sync=sync)
