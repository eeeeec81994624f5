"""Find the partitions and segments under the given paths, on any fsspec filesystem.

Layouts read (each path, after glob expansion, is one of these, or a folder holding them at any depth):

* a **broker log dir** (``log.dirs`` entry): sub-directories ``<topic>-<partition>`` holding
  ``<20-digit base offset>.log`` segments with ``.index``/``.timeindex``/``.txnindex`` beside them;
* a **single partition dir** (a directory that itself holds segment files);
* a **tiered-storage copy** as Kafka's ``LocalTieredStorage`` writes it (RemoteLogSegmentFileset,
  RemoteTopicPartitionDirectory): sub-directories ``<topic>-<partition>-<22-char topic id>`` (also
  accepted: ``<topic>-<topic id>-<partition>`` and plain ``<topic>-<partition>``) holding
  ``<20-digit start offset>-<22-char segment uuid>.log`` with the same index suffixes;
* **Aiven's tiered-storage plug-in**'s objects (SPEC Appendix D), found up to four levels under a
  path that holds no other layout (the plug-in's ``key.prefix`` directory or the one above it): ``<topic>-<topic id>/<partition>/<start offset>-<segment uuid>``
  ``.log``, ``.indexes`` and ``.rsm-manifest``; a segment counts once its manifest is there
  (R-TIER-01), and its ``.log`` is read through the manifest (chunks decompressed and decrypted
  with the ``privateKeys`` option's keys).

Skipped: directories ending in ``-delete``, ``-future`` or ``-stray`` (Kafka's pending deletes,
future replicas and strays) and files whose name is not a segment file's. The leftovers of an
interrupted cleaner, split or retention (``*.deleted``, ``*.cleaned``, ``*.swap``) are read as the
broker has them after loading the directory: dropped, or a completed swap's files in place of the
segments they replace (:mod:`kafkalog.log.leftovers`, SPEC R-RCV-04). The same topic-partition found under several paths is returned
as several :class:`Replica` objects; :mod:`.planning` merges them by offset.
"""

from __future__ import annotations

import functools
import io
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

import fsspec
from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem
from fsspec.spec import AbstractFileSystem

from kafkalog.format.tiered_aiven import Keyring, RemoteSegment, UrlStore, parse_object_key
from kafkalog.log.gaps import PARTITION_DIR, SMALL_LISTING
from kafkalog.log.layout import read_layout
from kafkalog.log.leftovers import as_loaded, renamed_name
from kafkalog.log.source import Entry, LocalStorage, UrlStorage, storage_of
from kafkalog.log.unified import topic_name_problem

from .errors import LayoutError

__all__ = ["FileSystemRef", "Replica", "SegmentFiles", "discover", "filesystem_for", "parse_partition_dir"]

log = logging.getLogger(__name__)

_SKIPPED_DIR = re.compile(r"-(delete|future|stray)$")
#: a tiered copy's directory names, then a broker's (:data:`kafkalog.log.gaps.PARTITION_DIR`: any topic
#: part is read, R-NAME-03: a topic name Kafka would refuse is warned about, not skipped)
_TIERED_DIRS = (
    re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)-(?P<partition>\d+)-(?P<id>[A-Za-z0-9_-]{22})$"),
    re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)-(?P<id>[A-Za-z0-9_-]{22})-(?P<partition>\d+)$"),
    PARTITION_DIR,
)


@dataclass(frozen=True)
class FileSystemRef:
    """A picklable handle on an fsspec filesystem: its protocol and storage options."""

    protocol: str
    storage_options: tuple[tuple[str, object], ...] = ()

    def get(self) -> AbstractFileSystem:
        """The filesystem (fsspec caches instances, so this is cheap)."""
        return fsspec.filesystem(self.protocol, **dict(self.storage_options))


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    """One segment: its ``.log`` (path and size at discovery) and the index files found beside it."""

    base_offset: int
    log: str
    size: int
    index: str | None = None
    timeindex: str | None = None
    txnindex: str | None = None
    segment_id: str | None = None  # the tiered-storage segment uuid, when the names carry one
    tiered: bool = False  # an Aiven plug-in segment: ``log`` is its .log object, read through the manifest beside it
    next_offset: int | None = None  # a tiered segment's ``endOffset`` + 1, from its manifest: what it answers for ends there
    keys: Keyring | None = field(default=None, repr=False, compare=False)  # for an encrypted tiered segment

    def remote(self, fs: AbstractFileSystem) -> RemoteSegment:
        """The plug-in's view of a ``tiered`` segment (its manifest read once per filesystem)."""
        return _remote(fs, self.log, self.keys)

    def open_log(self, fs: AbstractFileSystem) -> BinaryIO:
        """The segment's ``.log`` bytes as a seekable binary file, opened as kafkalog's own readers
        open it (:func:`kafkalog.log.source.storage_of`: on object storage, ranged requests fetched
        ahead a growing block at a time, no s3fs file and its cache), under the name the broker
        renamed it to if it did since the listing. Its current size is asked now (the file may have
        grown, or gone: then FileNotFoundError is raised here, as a local open raises it)."""
        if self.tiered:
            return self.remote(fs).open_log()
        f = storage_of(fs).open(self.log)
        try:
            f.seek(0, io.SEEK_END)
            f.seek(0)
        except BaseException:
            f.close()
            raise
        return f


@functools.lru_cache(maxsize=1024)
def _remote(fs: AbstractFileSystem, log_path: str, keys: Keyring | None) -> RemoteSegment:
    folder, name = log_path.rsplit("/", 1)
    return RemoteSegment(UrlStore(folder, fs), name[: -len(".log")], keys)


@dataclass(frozen=True, slots=True)
class Replica:
    """One directory holding (a copy of) one topic-partition's log."""

    topic: str
    partition: int
    dir: str
    segments: tuple[SegmentFiles, ...]  # by base offset
    snapshots: tuple[tuple[int, str], ...] = ()  # producer-state snapshots (offset, path), by offset
    topic_id: str | None = None  # from a tiered-storage directory name
    #: every file name of the directory's listing (the data-loss check reads orphaned index files
    #: and ``.deleted``/``.swap`` names, which ``segments`` leaves out)
    names: tuple[str, ...] = ()
    #: the listing names plain segments only with their ``.log`` and holds no leftover of an
    #: interrupted operation: no offsets can be orphaned (:func:`kafkalog.log.gaps.find_gaps` without
    #: the tail finds none), so planning need not ask (False: ask)
    whole: bool = False

    @property
    def key(self) -> tuple[str, int]:
        """(topic, partition)."""
        return self.topic, self.partition


def parse_partition_dir(name: str, tiered: bool) -> tuple[str, int, str | None] | None:
    """(topic, partition, topic id or None) from a partition directory's name, or None if it is not one."""
    if _SKIPPED_DIR.search(name):
        return None
    for pattern in _TIERED_DIRS if tiered else (PARTITION_DIR,):
        m = pattern.match(name)
        if m:
            return m["topic"], int(m["partition"]), m["id"] if "id" in pattern.groupindex else None
    return None


#: :func:`topic_name_problem` of each topic once, not once per partition dir
_topic_name_problem = functools.lru_cache(maxsize=1024)(topic_name_problem)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _open_listed(fs: AbstractFileSystem, path: str) -> BinaryIO:
    """A listed file, or the same bytes under the name the broker renamed it to since the listing
    (:func:`kafkalog.log.leftovers.renamed_name`: a swap completed by a live cleaner)."""
    try:
        return fs.open(path, "rb")  # type: ignore[return-value]
    except FileNotFoundError:
        return fs.open(renamed_name(path), "rb")  # type: ignore[return-value]


def _replica(fs: AbstractFileSystem, dir_path: str, entries: list[Entry], name: str | None = None,
             broker: tuple[str, int, str | None] | None = None) -> Replica | None:
    """The replica a listing describes, or None when the directory holds no segment files.
    ``name`` and ``broker``: the directory's name and its :func:`parse_partition_dir` as a broker's
    dir, when the caller parsed them already (a tiered copy's names are parsed here)."""
    names = tuple([e.name for e in entries])
    layout = _layout(names) if len(names) <= SMALL_LISTING else _read_layout(names)
    if layout is None:  # leftovers of an interrupted operation: as the broker has the files after loading them
        files = {e.name: e for e in entries}
        layout = _read_layout(names, as_loaded(files, lambda e: _open_listed(fs, e.path)))
    segs, snapshot_at, found, tiered, whole, listed = layout  # type: ignore[misc]
    if not found:
        return None
    if name is None:
        name = _basename(dir_path)
    parsed = broker if broker is not None and not tiered else parse_partition_dir(name, tiered)
    if parsed is None:
        log.info("kafkalog source: skipping %s: %r is not a <topic>-<partition> directory name", dir_path, name)
        return None
    topic, partition, topic_id = parsed
    if (problem := _topic_name_problem(topic)) is not None:
        log.warning("kafkalog source: %s: %s; read anyway", dir_path, problem)
    segments = tuple([
        SegmentFiles(base, entries[at].path, entries[at].size or 0,
                     None if index is None else entries[index].path, None if time is None else entries[time].path,
                     None if txn is None else entries[txn].path, seg_id)
        for base, seg_id, at, index, time, txn in segs
    ])
    snapshots = tuple([(base, entries[at].path) for base, at in snapshot_at])
    return Replica(topic, partition, dir_path, segments, snapshots, topic_id, listed, whole)


#: A listing as the source reads it (:func:`_read_layout`): the segments with a ``.log``, as
#: (base offset, segment uuid or None, then the places in the listing of its ``.log``, ``.index``,
#: ``.timeindex`` and ``.txnindex``, None where absent) in :class:`Replica`'s order; the producer
#: snapshots as (offset, place) by offset and name; whether it holds any segment file; whether any
#: segment is a tiered copy's (its names carry a uuid); :attr:`Replica.whole`; :attr:`Replica.names`.
_Layout = tuple[tuple[tuple[int, "str | None", int, "int | None", "int | None", "int | None"], ...], tuple[tuple[int, int], ...], bool, bool, bool,
                tuple[str, ...]]


def _read_layout(names: tuple[str, ...], loaded: list[tuple[str, Entry]] | None = None) -> _Layout | None:
    """:data:`_Layout` of a listing's ``names``: kafkalog's grouping of them
    (:func:`kafkalog.log.layout.read_layout`, a tiered copy's ``<offset>-<uuid>`` names read too),
    with what the source asks of it on top. None when it holds leftovers of an interrupted
    operation; ``loaded``: the files as the broker has them after loading the directory
    (:func:`kafkalog.log.leftovers.as_loaded`, whose entries are the listing's), when it does."""
    found = read_layout(names, loaded, copies=True)
    if found is None:
        return None
    segments, snapshots, _, listed = found
    # Replica.whole: a listing as loaded (no leftover) naming plain segments, each with its .log
    plain = [s for s in segments if s[1] is None]
    whole = bool(plain) and loaded is None and all(s[2] is not None for s in plain)
    with_log = tuple([s for s in segments if s[2] is not None])  # indexes without their .log (a segment being deleted): nothing to read
    return with_log, snapshots, bool(segments or snapshots), any(s[1] is not None for s in segments), whole, listed  # type: ignore[return-value]


#: :func:`_read_layout` of a small listing, kept: the same listings recur in many partition dirs
_layout = functools.lru_cache(maxsize=1 << 12)(_read_layout)


def _expand(fs: AbstractFileSystem, path: str) -> list[str]:
    if any(c in path for c in "*?["):
        return [p for p in fs.glob(path) if fs.isdir(p)]
    if not fs.isdir(path):
        raise LayoutError("not a directory: give a broker log dir, a partition dir or a glob of them", file=path)
    return [path]


def filesystem_for(paths: Iterable[str], storage_options: tuple[tuple[str, object], ...]) -> tuple[FileSystemRef, list[str]]:
    """The filesystem the paths live on and the paths stripped of their protocol."""
    ref: FileSystemRef | None = None
    stripped = []
    for p in paths:
        fs, path = url_to_fs(p, **dict(storage_options))
        proto = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        if ref is None:
            ref = FileSystemRef(proto, storage_options)
        elif proto != ref.protocol:
            raise LayoutError(f"all paths must be on one filesystem: {p!r} is {proto}, the first path is {ref.protocol}", file=p)
        stripped.append(path)
    if ref is None:
        raise LayoutError("no path given")
    return ref, stripped


def _unwanted(name: str, broker: tuple[str, int, str | None] | None, wants: Callable[[str, int], bool] | None) -> bool:
    """Whether a directory named ``name`` is a partition directory ``wants`` refuses (read as a
    broker's, ``broker`` being :func:`parse_partition_dir` of it as one, and as a tiered copy's
    name), so that it need not be listed."""
    if wants is None:
        return False
    if broker is not None and wants(broker[0], broker[1]):
        return False
    tiered = parse_partition_dir(name, True)  # only asked when the broker's reading of the name is refused
    if tiered is not None and tiered != broker:
        return not wants(tiered[0], tiered[1])
    return broker is not None


def _tree(fs: AbstractFileSystem, root: str) -> tuple[list[Entry], dict[str, list[Entry]]]:
    """``root``'s files and those of every directory under it, at any depth, as kafkalog's own
    discovery lists them (:meth:`kafkalog.log.source.LocalStorage.tree`; on object storage one
    paginated listing of every key under the prefix, 1,000 a request on S3, where listing each
    partition directory would be a request apiece). Directories ending in ``-delete``, ``-future``
    or ``-stray`` are not entered."""
    storage = LocalStorage() if isinstance(fs, LocalFileSystem) else UrlStorage(fs)
    top = root.rstrip("/")
    own: list[Entry] = []
    children: dict[str, list[Entry]] = {}
    for d, files in sorted(storage.tree(root).items()):
        if d.rstrip("/") == top:
            own = files
        else:
            children[d] = files
    return own, children


#: how deep under a path the plug-in's objects are looked for: ``<key.prefix>/<topic>-<id>/<partition>/<object>``,
#: so a path may be the directory of the plug-in's ``key.prefix`` or the one above it, a topic's or a partition's
_AIVEN_DEPTH = 4


def _aiven_replicas(fs: AbstractFileSystem, root: str, keys: Keyring | None, wants: Callable[[str, int], bool] | None) -> list[Replica]:
    """The partitions Aiven's plug-in stored under ``root`` (one recursive listing), each segment
    sized by its manifest's ``originalFileSize``; objects without a manifest are skipped with a warning."""
    top = root.rstrip("/")
    groups: dict[tuple[str, int, str], dict[str, dict[str, str]]] = {}
    for name in sorted(fs.find(top, maxdepth=_AIVEN_DEPTH, withdirs=False)):
        k = parse_object_key(name)
        if k is not None:
            groups.setdefault((k.topic, k.partition, k.topic_id), {}).setdefault(k.main, {})[k.suffix] = name
    out = []
    for (topic, partition, topic_id), mains in sorted(groups.items()):
        if wants is not None and not wants(topic, partition):
            continue
        segments = []
        for main, objs in sorted(mains.items()):
            if "rsm-manifest" not in objs:
                log.warning("kafkalog source: %s.log: a tiered segment without its .rsm-manifest (an unfinished upload): ignored", main)
                continue
            seg = SegmentFiles(parse_object_key(objs["rsm-manifest"]).start_offset, f"{main}.log", 0, tiered=True, keys=keys)  # type: ignore[union-attr]
            m = seg.remote(fs).manifest
            segments.append(SegmentFiles(m.start_offset, seg.log, m.original_file_size, segment_id=m.segment_id, tiered=True,
                                         next_offset=m.end_offset + 1, keys=keys))
        if segments:
            out.append(Replica(topic, partition, f"{top}/{topic}-{topic_id}/{partition}", tuple(sorted(segments, key=lambda s: s.base_offset)),
                               (), topic_id))
    return out


def discover(
    fs: AbstractFileSystem, paths: Iterable[str], *, refresh: bool = False, allow_empty: bool = False, wants: Callable[[str, int], bool] | None = None,
    keys: Keyring | None = None,
) -> list[Replica]:
    """Every partition directory under ``paths`` (see the module docstring for the layouts).

    ``refresh`` drops fsspec's cached listings first (streaming polls need fresh ones); a path
    holding no partition directory raises :class:`LayoutError` unless ``allow_empty`` (a live
    data dir that has no partitions yet). ``wants(topic, partition)`` false: the directory is
    skipped by its name (a data dir's internal topics, unsubscribed ones). Each path is searched at
    any depth, listed once (see :func:`_tree`), as kafkalog's other readers search it.
    A path holding none of the other layouts is searched for Aiven's plug-in's objects, whose
    encrypted segments ``keys`` decrypts.
    """
    replicas: dict[str, Replica] = {}
    for raw in paths:
        if refresh:
            fs.invalidate_cache()
        roots = _expand(fs, raw)
        found = 0
        for root in roots:
            entries, children = _tree(fs, root)
            own = _replica(fs, root, entries)
            if own is not None:
                replicas[own.dir] = own
                found += 1
                continue
            for child, files in children.items():
                counted, rep = _child(fs, child, files, wants)
                found += counted
                if rep is not None:
                    replicas[rep.dir] = rep
            if not found:
                for rep in _aiven_replicas(fs, root, keys, wants):
                    replicas[rep.dir] = rep
                    found += 1
        if roots and not found and not allow_empty:
            raise _nothing_found(raw)
    return sorted(replicas.values(), key=_replica_order)


def _replica_order(r: Replica) -> tuple[str, int, str]:
    return r.topic, r.partition, r.dir


def _nothing_found(path: str) -> LayoutError:
    return LayoutError("no Kafka partition directories (<topic>-<partition> with segment files) found", file=path)


def _child(fs: AbstractFileSystem, child: str, files: list[Entry], wants: Callable[[str, int], bool] | None) -> tuple[bool, Replica | None]:
    """What :func:`discover` finds in a directory under a path (``files``: its listing): whether it
    counts as a partition directory found (one ``wants`` refuses by its name counts, unread), and
    its replica (None: none to read)."""
    name = _basename(child)
    if _SKIPPED_DIR.search(name):
        return False, None
    broker = parse_partition_dir(name, False)
    if _unwanted(name, broker, wants):
        return True, None
    rep = _replica(fs, child, files, name, broker)
    return rep is not None, rep
