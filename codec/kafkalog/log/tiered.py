"""One partition across tiers: the segments a tiered-storage plug-in holds, then the broker's local
ones, read as one log (SPEC Appendix D.6, R-TIER-07).

A broker with tiered storage copies closed segments to an object store and keeps only its newest
segments on disk, often a few that are also in the store. :func:`open_tiered` lists the objects
Aiven's plug-in wrote under a prefix (local directory or ``s3://...``; a segment counts once its
``.rsm-manifest`` is there, R-TIER-01) and, optionally, a broker data dir or partition dirs, and
gives one :class:`TieredPartition` per topic-partition: remote segments by start offset, then local
ones by base offset. Each offset is given once (segments or batches already covered are skipped),
and a hole between one segment's last offset and the next segment is data loss: it raises
:class:`~kafkalog.errors.DataLossError` (with :class:`kafkalog.log.gaps.Gap` entries) unless gaps are allowed, in which case it is recorded and
logged. Offsets missing *inside* a segment are compaction's doing and are not holes. A read of an
offset range opens only the segments that can hold it: a narrow read of a remote segment fetches
its manifest, its ``.indexes`` and the chunks holding the offsets asked for.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from kafkalog.errors import LogNotFoundError
from kafkalog.format.files import is_url, url_filesystem
from kafkalog.format.index import OffsetIndex
from kafkalog.format.records.stream import Batch, LogReader
from kafkalog.format.tiered_aiven import Keyring, RemoteSegment, open_store, parse_object_key
from kafkalog.log.gaps import PARTITION_DIR, Gap, gaps_error
from kafkalog.log.source import LocalStorage, PartitionFiles, SegmentFiles, partition_dirs

__all__ = ["TieredFiles", "TieredPartition", "TieredSegment", "TieredStorage", "open_tiered", "tiered_files"]

log = logging.getLogger(__name__)

_LOCAL_LOG = re.compile(r"^(\d{20})\.log$")
_LOCAL_SNAPSHOT = re.compile(r"^(\d{20})\.snapshot$")


@dataclass(frozen=True)
class TieredSegment:
    """One segment of the merged log: a remote one (``remote`` set) or a local ``.log`` file.

    ``base_offset`` comes from the name (the plug-in's key carries the start offset); the last
    offset is the manifest's ``endOffset`` for a remote segment (read when first needed), and for a
    local one the next local segment's base offset minus one (None for the newest)."""

    base_offset: int
    name: str  # the .log's path or URL
    rel: str  # the name relative to the root it was found under, with "/"
    remote: RemoteSegment | None = None
    local_last: int | None = None

    @property
    def tier(self) -> str:
        """``remote`` or ``local``."""
        return "remote" if self.remote is not None else "local"

    @property
    def last_offset(self) -> int | None:
        """The last offset the segment answers for (None: the broker's newest segment, still growing)."""
        return self.remote.manifest.end_offset if self.remote is not None else self.local_last

    def batches(self, start_offset: int) -> Iterator[Batch]:
        """Batches holding offsets at or past ``start_offset``, read from the indexed position before it."""
        if self.remote is not None:
            yield from self.remote.batches(start_offset=start_offset if start_offset > self.base_offset else None)
            return
        start = 0
        if start_offset > self.base_offset:
            try:
                _off, pos = OffsetIndex.read(self.name[: -len(".log")] + ".index").lookup(start_offset)
                start = max(pos, 0)
            except OSError:
                start = 0  # no index: read from the start of the segment
        with LogReader(self.name, start=start) as reader:
            for b in reader.batches():
                if b.last_offset >= start_offset:
                    yield b


@dataclass
class TieredPartition:
    """One topic-partition across tiers; ``segments`` in reading order (remote by start offset, then local)."""

    topic: str
    partition: int
    segments: list[TieredSegment]
    allow_gaps: bool = False
    gaps: list[Gap] = field(default_factory=list)  # holes met so far (gaps allowed)

    @property
    def name(self) -> str:
        """``<topic>-<partition>``."""
        return f"{self.topic}-{self.partition}"

    def plan(
        self, start_offset: int | None = None, end_offset: int | None = None, *, on_hole: Callable[[Gap], None] | None = None
    ) -> list[tuple[TieredSegment, int]]:
        """(segment, first offset it gives) for the segments that give offsets in ``[start_offset,
        end_offset)``: each segment from the first offset not yet given; a segment whose offsets
        were all given is skipped; a hole before a segment is data loss (R-TIER-07), raised unless
        gaps are allowed, or passed to ``on_hole`` when given (the caller judges it).

        With ``start_offset``, reading starts at the last segment whose base offset is at or below
        it, and segments before that one are not opened (a remote one's manifest is not even
        fetched); segments from ``end_offset`` on are not either."""
        segs = self.segments
        if start_offset is not None:
            first = max((i for i, s in enumerate(segs) if s.base_offset <= start_offset), default=0)
            segs = segs[first:]
        if end_offset is not None:
            segs = [s for s in segs if s.base_offset < end_offset]
        pieces: list[tuple[TieredSegment, int]] = []
        nxt: int | None = None
        for seg in segs:
            last = seg.last_offset
            if nxt is not None and last is not None and last < nxt:
                continue  # every offset it holds came from an earlier segment (the same data in both tiers)
            if nxt is not None and seg.base_offset > nxt:
                (on_hole or self._hole)(Gap(_folder(seg.name), nxt, seg.base_offset, f"the segment before ends at offset {nxt - 1} and the "
                               f"next one, {seg.tier} segment {_basename(seg.name)}, starts at {seg.base_offset}"))
            pieces.append((seg, seg.base_offset if nxt is None else max(nxt, seg.base_offset)))
            if last is None:
                break  # the broker's newest segment: nothing after it
            nxt = last + 1
        return pieces

    def _hole(self, gap: Gap) -> None:
        if not self.allow_gaps:
            raise gaps_error([gap])
        log.warning("data loss in %s: %s; continuing (gaps allowed)", self.name, gap)
        if gap not in self.gaps:
            self.gaps.append(gap)

    def batches(
        self, start_offset: int | None = None, end_offset: int | None = None
    ) -> Iterator[tuple[TieredSegment, Batch, int, int | None]]:
        """(segment, batch, first, stop) for every batch holding offsets in ``[start_offset,
        end_offset)``, in offset order: the batch's records in ``[first, stop)`` are the ones this
        segment gives (below ``first`` an earlier segment gave them, from ``stop`` a later one does;
        :meth:`records` keeps only those)."""
        pieces = self.plan(start_offset, end_offset)
        for i, (seg, lo) in enumerate(pieces):
            hi = pieces[i + 1][1] if i + 1 < len(pieces) else None
            if start_offset is not None and hi is not None and hi <= start_offset:
                continue
            first = lo if start_offset is None else max(lo, start_offset)
            stop = hi if end_offset is None else end_offset if hi is None else min(hi, end_offset)
            for b in seg.batches(first):
                if stop is not None and b.base_offset >= stop:
                    break
                yield seg, b, first, stop
                if stop is not None and b.last_offset >= stop - 1:
                    break  # the rest is past ``stop``: not even the next header is read (its chunk is not fetched)

    def records(self, start_offset: int | None = None, end_offset: int | None = None) -> Iterator[tuple[TieredSegment, Batch, Any]]:
        """(segment, batch, record) for every record with an offset in ``[start_offset, end_offset)``, each offset once."""
        for seg, b, first, stop in self.batches(start_offset, end_offset):
            for r in b.records():
                if first <= r.offset and (stop is None or r.offset < stop):
                    yield seg, b, r


    def files(self) -> TieredFiles:
        """The partition as :class:`~kafkalog.log.source.PartitionFiles`, so that what reads a
        partition dir (``kafkalog.scan``, ``info``, ``cat``, ``export``: :mod:`kafkalog.log.plan`)
        reads it across tiers: the segments :meth:`plan` keeps, each with the first offset it gives
        (``first_offset``, set where an earlier segment holds the ones before), a remote one's
        ``.log`` and index parts read through its objects (:class:`TieredStorage`). Holes between
        segments are not raised here but reported by :meth:`TieredFiles.gaps`, so that the reader
        judges them against the offsets it reads, as it judges a partition dir's. Fetches every
        remote segment's manifest."""
        storage = TieredStorage()
        holes: list[Gap] = []
        segments = []
        snapshots: list[tuple[int, str]] = []
        for seg, first in self.plan(on_hole=holes.append):
            given = None if first == seg.base_offset else first
            if seg.remote is not None:
                parts = storage.add(seg.remote)
                segments.append(SegmentFiles(seg.base_offset, seg.name, seg.remote.size, parts.get("offset"), parts.get("timestamp"),
                                             parts.get("transaction"), first_offset=given))
                if "producerSnapshot" in parts:
                    # Kafka uploads the snapshot taken at the next segment's base offset (RemoteLogManager)
                    snapshots.append((seg.remote.manifest.end_offset + 1, parts["producerSnapshot"]))
                continue
            stem = seg.name[: -len(".log")]
            found = {suffix: f"{stem}.{suffix}" for suffix in ("index", "timeindex", "txnindex") if os.path.isfile(f"{stem}.{suffix}")}
            segments.append(SegmentFiles(seg.base_offset, seg.name, os.path.getsize(seg.name), found.get("index"), found.get("timeindex"),
                                         found.get("txnindex"), first_offset=given))
        for d in sorted({os.path.dirname(s.name) for s in self.segments if s.remote is None}):
            snapshots.extend((int(m[1]), os.path.join(d, n)) for n in os.listdir(d) if (m := _LOCAL_SNAPSHOT.match(n)))
        where = _folder(self.segments[0].name) if self.segments else self.name
        return TieredFiles(storage, self.topic, self.partition, where, tuple(segments), tuple(sorted(snapshots)), lost=tuple(holes))


class TieredStorage(LocalStorage):
    """What :class:`TieredFiles` reads: remote segments' ``.log`` and ``.indexes`` parts through the
    plug-in's objects (named by the object's path or URL, a part as ``<.indexes>#<part>``), and
    the broker's local files as the local file system has them."""

    def __init__(self) -> None:
        self._logs: dict[str, RemoteSegment] = {}
        self._parts: dict[str, tuple[RemoteSegment, str]] = {}

    def add(self, seg: RemoteSegment) -> dict[str, str]:
        """Make ``seg``'s ``.log`` and the ``.indexes`` parts its manifest lists readable; their names by part."""
        self._logs[seg.name("log")] = seg
        parts = {}
        for part in seg.manifest.indexes:
            name = f"{seg.name('indexes')}#{part}"
            self._parts[name] = (seg, part)
            parts[part] = name
        return parts

    def open(self, path: str, size: int | None = None) -> BinaryIO:
        seg = self._logs.get(path)
        return seg.open_log() if seg is not None else super().open(path, size)  # type: ignore[return-value]

    def read(self, path: str) -> bytes:
        found = self._parts.get(path)
        if found is None:
            return super().read(path)
        seg, part = found
        return seg.index_part(part) or b""


@dataclass(frozen=True, slots=True)
class TieredFiles(PartitionFiles):
    """A partition read across tiers (:meth:`TieredPartition.files`): its data loss is the holes
    between segments (``lost``), not what a directory's checkpoints say."""

    lost: tuple[Gap, ...] = field(default=(), compare=False)

    def gaps(self) -> list[Gap]:
        """The holes between the tiers' segments (R-TIER-07)."""
        return list(self.lost)


def tiered_files(
    remote: str,
    local: str | Sequence[str] | None = None,
    *,
    keys: Keyring | None = None,
    wants: Callable[[str, int], bool] | None = None,
    warnings: list[str] | None = None,
) -> list[PartitionFiles]:
    """:func:`open_tiered`'s partitions as :class:`~kafkalog.log.source.PartitionFiles` (see
    :meth:`TieredPartition.files`), those ``wants(topic, partition)`` rejects left out. A missing
    prefix or broker dir, or one holding no partition, raises :class:`~kafkalog.errors.LogNotFoundError`
    as :func:`kafkalog.log.replicas.discover` does."""
    try:
        parts = open_tiered(remote, local, keys=keys, allow_gaps=True, warnings=warnings)
    except FileNotFoundError as e:
        raise LogNotFoundError("no such directory: give the tiered-storage prefix and the broker's data or partition dirs",
                               file=str(e.args[0])) from None
    if not parts:
        raise LogNotFoundError("no tiered segment (.rsm-manifest) and no broker segment found", file=remote)
    return [p.files() for p in parts if wants is None or wants(p.topic, p.partition)]


def _folder(name: str) -> str:
    return name.rsplit("/", 1)[0] if "/" in name else "."


def _basename(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _remote_segments(prefix: str, keys: Keyring | None, warnings: list[str]) -> dict[tuple[str, int], list[TieredSegment]]:
    """The plug-in's segments under ``prefix`` by (topic, partition), from one listing (manifests are
    read when a segment is planned)."""
    store = open_store(prefix)
    by_main: dict[str, dict[str, Any]] = {}
    for key, _size in store.list(""):
        k = parse_object_key(key)
        if k is not None:
            by_main.setdefault(k.main, {})[k.suffix] = k
    out: dict[tuple[str, int], list[TieredSegment]] = {}
    for main, parts in sorted(by_main.items()):
        if "rsm-manifest" not in parts:
            message = (f"{store.display(main + '.log')}: a tiered segment without its .rsm-manifest (the plug-in writes it "
                       "last: an unfinished or failed upload): ignored")
            warnings.append(message)
            log.warning("%s", message)
            continue
        k = parts["rsm-manifest"]
        seg = RemoteSegment(store, main, keys)
        out.setdefault((k.topic, k.partition), []).append(TieredSegment(k.start_offset, seg.name("log"), f"{main}.log", seg))
    for segs in out.values():
        segs.sort(key=lambda s: (s.base_offset, s.rel))
    return out


def _local_segments(roots: Sequence[str]) -> dict[tuple[str, int], list[TieredSegment]]:
    """The broker's segments under ``roots`` (data dirs or partition dirs) by (topic, partition)."""
    out: dict[tuple[str, int], list[TieredSegment]] = {}
    for root in roots:
        if is_url(root):
            raise ValueError(f"{root}: the broker's segments are read from a local directory")
        if not os.path.isdir(root):
            raise FileNotFoundError(root)
        for pdir in partition_dirs(root):
            m = PARTITION_DIR.match(os.path.basename(os.path.abspath(pdir)))
            if m is None:
                continue
            bases = sorted(int(mm[1]) for n in os.listdir(pdir) if (mm := _LOCAL_LOG.match(n)))
            segs = out.setdefault((m["topic"], int(m["partition"])), [])
            for i, base in enumerate(bases):
                path = os.path.join(pdir, f"{base:020d}.log")
                rel = os.path.relpath(path, root if root != pdir else os.path.dirname(os.path.abspath(pdir))).replace(os.sep, "/")
                segs.append(TieredSegment(base, path, rel, local_last=bases[i + 1] - 1 if i + 1 < len(bases) else None))
    return out


def open_tiered(
    remote: str,
    local: str | Sequence[str] | None = None,
    *,
    keys: Keyring | None = None,
    allow_gaps: bool = False,
    warnings: list[str] | None = None,
) -> list[TieredPartition]:
    """Every topic-partition under the plug-in's prefix ``remote`` (a directory or URL) and the
    broker dirs ``local``, each as one log across tiers, sorted by (topic, partition).

    ``keys`` unwraps the data keys of encrypted segments. Segments without a manifest are skipped
    and described in ``warnings``. Raises :class:`DataLossError` for a hole between segments unless
    ``allow_gaps``. Nothing is written."""
    warnings = [] if warnings is None else warnings
    if is_url(remote):
        fs, path = url_filesystem(remote)
        if not fs.exists(path):
            raise FileNotFoundError(remote)
    elif not os.path.isdir(remote):
        raise FileNotFoundError(remote)
    remote_segs = _remote_segments(remote, keys, warnings)
    local_segs = _local_segments([local] if isinstance(local, str) else list(local or ()))
    parts = []
    for tp in sorted(set(remote_segs) | set(local_segs)):
        parts.append(TieredPartition(tp[0], tp[1], remote_segs.get(tp, []) + local_segs.get(tp, []), allow_gaps))
    return parts
