"""What each file of a Kafka log dir is, by its name (SPEC §2, "Naming"), and crash-safe file replacement."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from enum import Enum

__all__ = ["FileKind", "atomic_write", "fsync_dir", "kind_of", "segment_file_name", "walk"]


class FileKind(Enum):
    """The file types kafkalog reads, with the suffix or name Kafka gives them."""

    LOG = ".log"
    INDEX = ".index"
    TIME_INDEX = ".timeindex"
    TXN_INDEX = ".txnindex"
    PRODUCER_SNAPSHOT = ".snapshot"
    LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
    PARTITION_METADATA = "partition.metadata"
    KRAFT_SNAPSHOT = ".checkpoint"


#: Kinds that a directory dump includes (the files Kafka's dump of a data dir covers).
DUMPED_KINDS = frozenset(
    {
        FileKind.LOG,
        FileKind.INDEX,
        FileKind.TIME_INDEX,
        FileKind.TXN_INDEX,
        FileKind.PRODUCER_SNAPSHOT,
        FileKind.LEADER_EPOCH_CHECKPOINT,
        FileKind.PARTITION_METADATA,
    }
)

_SEGMENT = re.compile(r"^\d{20}(?:-[A-Za-z0-9_-]{22})?\.(log|index|timeindex|txnindex|snapshot)$")
_KRAFT_SNAPSHOT = re.compile(r"^\d{20}-\d{10}\.checkpoint$")


def kind_of(path: str | os.PathLike[str]) -> FileKind | None:
    """The kind of a file by its name, or None for files kafkalog does not read.

    Segment files are ``<20-digit base offset>.<suffix>`` (tiered-storage copies add
    ``-<segment uuid>`` before the suffix); ``.deleted``/``.cleaned``/``.swap`` names are not matched.
    """
    name = os.path.basename(os.fspath(path))
    m = _SEGMENT.match(name)
    if m:
        return FileKind("." + m.group(1))
    if name == "leader-epoch-checkpoint":
        return FileKind.LEADER_EPOCH_CHECKPOINT
    if name == "partition.metadata":
        return FileKind.PARTITION_METADATA
    if _KRAFT_SNAPSHOT.match(name):
        return FileKind.KRAFT_SNAPSHOT
    return None


def walk(root: str | os.PathLike[str]) -> Iterator[tuple[str, str]]:
    """Yield (path, path relative to ``root``) for every file under ``root``, sorted by relative path."""
    root = os.fspath(root)
    found = []
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(dirpath, n)
            found.append((os.path.relpath(p, root).replace(os.sep, "/"), p))
    for rel, p in sorted(found):
        yield p, rel


def segment_file_name(offset: int, suffix: str) -> str:
    """``<offset as 20 digits><suffix>``, Kafka's name for segment files and snapshots (LogFileUtils)."""
    return f"{offset:020d}{suffix}"


def pwrite_all(fd: int, data: bytes | memoryview, offset: int) -> int:
    """Write all of ``data`` at ``offset``, returning the offset after it. ``os.pwrite`` may write
    less than asked (a disk filling up writes what fits first); the rest is written or its error
    raised, so a caller never takes a partly written index entry or batch for a whole one."""
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        offset += n
        view = view[n:]
    return offset


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """fsync a directory so that renames and new files in it survive a crash (Utils.flushDirIfExists).

    A failed fsync raises, as in Kafka: swallowing it would let a flush report renames and new
    segments durable that a power cut can still undo. Skipped on Windows, where Kafka skips it too.
    """
    if os.name == "nt":
        return
    try:
        fd = os.open(os.fspath(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: bytes, *, sync: bool = True) -> None:
    """Write ``data`` to ``<path>.tmp``, fsync it, rename it over ``path`` and fsync the directory.

    This is how Kafka replaces checkpoint files (CheckpointFile.write, Utils.atomicMoveWithFallback);
    with ``sync=False`` the two fsyncs are skipped (the rename stays atomic).
    """
    target = os.fspath(path)
    tmp = target + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        if sync:
            os.fsync(f.fileno())
    os.replace(tmp, target)
    if sync:
        fsync_dir(os.path.dirname(os.path.abspath(target)))
