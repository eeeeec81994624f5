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
import binascii
import os
import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from kafkalog.errors import CorruptIndexError, MetaPropertiesError
from kafkalog.format.files import atomic_write

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
        with open(path, "rb") as f:
            data = f.read()
    try:
        return data.decode("utf-8"), name
    except UnicodeDecodeError as e:
        raise CorruptIndexError("not UTF-8 text", file=name, position=e.start) from None


def _checkpoint_lines(text: str, name: str | None, fields: int) -> list[list[str]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []  # Kafka reads an empty file as no entries
    if lines[0].strip() != "0":
        raise CorruptIndexError(f"unrecognised checkpoint version {lines[0]!r}", file=name, position=0)
    if len(lines) == 1:
        return []  # a version line alone: no entries, as Kafka reads it
    try:
        count = int(lines[1])
    except ValueError:
        raise CorruptIndexError(f"malformed entry count {lines[1]!r}", file=name, position=len(lines[0]) + 1) from None
    body = lines[2:]
    if count != len(body):
        raise CorruptIndexError(f"checkpoint declares {count} entries but holds {len(body)}", file=name, position=len(lines[0]) + 1)
    out = []
    pos = len(lines[0]) + len(lines[1]) + 2
    for line in body:
        parts = line.split()
        if len(parts) != fields:
            raise CorruptIndexError(f"malformed checkpoint line {line!r}", file=name, position=pos)
        out.append(parts)
        pos += len(line) + 1
    return out


def read_leader_epoch_checkpoint(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> list[EpochEntry]:
    """Entries of a ``leader-epoch-checkpoint`` file."""
    text, name = _text(path, data)
    return [EpochEntry(_int(e, name, text), _int(o, name, text)) for e, o in _checkpoint_lines(text, name, 2)]


def read_offset_checkpoint(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> dict[tuple[str, int], int]:
    """(topic, partition) -> offset of a recovery-point/replication/log-start/cleaner checkpoint."""
    text, name = _text(path, data)
    return {(t, _int(p, name, text, 32)): _int(o, name, text) for t, p, o in _checkpoint_lines(text, name, 3)}


def _int(field: str, name: str | None, text: str, bits: int = 64) -> int:
    """A checkpoint number (a Java int or long); a malformed one is reported at its first occurrence in the file."""
    try:
        value = int(field)
    except ValueError:
        value = None
    if value is None or not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise CorruptIndexError(f"malformed number {field!r} in checkpoint", file=name, position=max(text.find(field), 0))
    return value


def read_partition_metadata(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> PartitionMetadata:
    """Parse ``partition.metadata``: ``version: N`` (any N >= 0, for downgrades) then
    ``topic_id: <22-char base64 UUID>``; the all-zero id is invalid, as in Kafka."""
    import base64
    import binascii

    text, name = _text(path, data)
    lines = text.split("\n")
    first = lines[0].split() if lines else []
    if len(first) != 2:
        raise CorruptIndexError(f"malformed line {lines[0] if lines else ''!r}", file=name, position=0)
    try:
        version = int(first[1])
    except ValueError:
        raise CorruptIndexError(f"malformed version line {lines[0]!r}", file=name, position=0) from None
    if version < 0:
        raise CorruptIndexError(f"unrecognized partition.metadata version {version}", file=name, position=0)
    second = lines[1].split() if len(lines) > 1 else []
    pos = len(lines[0]) + 1
    if len(second) != 2:
        raise CorruptIndexError(f"malformed line {lines[1] if len(lines) > 1 else ''!r}", file=name, position=pos)
    topic_id = second[1]
    try:
        raw = base64.urlsafe_b64decode(topic_id + "==")
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16:
        raise CorruptIndexError(f"malformed topic id {topic_id!r}", file=name, position=pos)
    if raw == bytes(16):
        raise CorruptIndexError("invalid topic id: the all-zero UUID", file=name, position=pos)
    return PartitionMetadata(version, topic_id)


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


def _java_int(value: str) -> int | None:
    """``value`` as Java's Integer.parseInt reads it (optional sign, ASCII digits, int32), else None."""
    if not re.fullmatch(r"[+-]?[0-9]+", value) or not -(2**31) <= int(value) < 2**31:
        return None
    return int(value)


def read_meta_properties(path: str | os.PathLike[str] | None = None, *, data: bytes | None = None) -> MetaProperties:
    """Parse and check ``meta.properties`` as MetaProperties.Builder does (R-CKPT-09): a missing
    ``version`` is 0, versions other than 0 and 1 are refused, v1 needs ``node.id`` and ``cluster.id``;
    ids must be decimal int32 and ``directory.id`` a base64 UUID. Raises MetaPropertiesError."""
    text, name = _text(path, data)
    props = _properties(text)

    def fail(message: str, key: str | None = None) -> MetaPropertiesError:
        return MetaPropertiesError(message, file=name, position=props[key][1] if key in props else 0)

    raw_version = props.get("version", ("0", 0))[0]
    version = _java_int(raw_version.strip())
    if version is None:
        raise fail(f"invalid meta.properties version {raw_version!r}", "version")
    if version not in (0, 1):
        raise fail(f"unknown meta.properties version {version} (only 0 and 1 exist)", "version")
    id_key = "broker.id" if version == 0 else "node.id"
    node_id = None
    if id_key in props:
        node_id = _java_int(props[id_key][0])
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
        try:
            raw = base64.urlsafe_b64decode(directory_id + "=" * (-len(directory_id) % 4))
        except (binascii.Error, ValueError):
            raw = b""
        if len(directory_id) > 24 or len(raw) != 16:
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
    if isinstance(topic_id, uuid.UUID):
        raw = topic_id.bytes
    elif isinstance(topic_id, bytes):
        raw = topic_id
    else:
        try:
            raw = base64.urlsafe_b64decode(topic_id + "==")
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != 16 or len(topic_id) != 22:
            raise ValueError(f"malformed topic id {topic_id!r}")
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
