"""Data loss in a partition directory: offsets its own files say existed but no ``.log`` holds (SPEC §6.8).

A reader that skips such offsets silently gives a wrong answer (a topic that reads as empty, a
count that is short), so every reader asks this module first and fails, or warns when gaps are
allowed (``--allow-gaps``, Spark's ``failOnDataLoss=false``)::

    from kafkalog.log.gaps import find_gaps, raise_on_gaps
    raise_on_gaps(find_gaps("data/customers-0"))        # DataLossError naming dir and offsets

What counts (SPEC R-LOSS-01 to R-LOSS-03): a segment whose ``.index``, ``.timeindex`` or
``.txnindex`` is there but whose ``.log`` is not lost the offsets from its base offset to the next
segment's (or, for the last one, to the furthest offset the files claim); the last ``.log`` lost
its tail when a producer snapshot or the last segment's own indexes say the log reached further,
or, after a clean shutdown only, the log dir's ``recovery-point-offset-checkpoint`` does. Offsets
below the log start offset were deleted on purpose (retention, DeleteRecords) and are not loss;
nor is any hole inside the range of a segment whose ``.log`` is there, between its base offset and
the next segment's: the cleaner removes records anywhere in that range and keeps the base offset
(R-CMP-12), and a follower of a compacted leader rolls at the first offset it copies (R-ROLL-03).
Only directories named ``<topic>-<partition>`` are judged (R-NAME-01: a broker loads no other).

The directory may be local, a URL (``s3://bucket/data/orders-0``: read through fsspec, see
:mod:`kafkalog.format.files`), or a path on an fsspec filesystem given as ``fs``. Claims are read
before the ``.log`` they are checked against (R-LIVE-02): a writer appends before it indexes or
snapshots, so a live directory is not reported for data being written.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from kafkalog.errors import DataLossError, KafkaLogError, ReplicaDivergenceError
from kafkalog.format.checkpoints import read_offset_checkpoint
from kafkalog.format.files import PARTITION_DIR, is_url, open_url, url_filesystem
from kafkalog.format.index import last_offset, offsets_and_positions
from kafkalog.format.records.stream import LogReader, next_offset_of
from kafkalog.format.txnindex import read_txn_index
from kafkalog.log.reads import log_start_offset

if TYPE_CHECKING:
    from fsspec.spec import AbstractFileSystem

__all__ = [
    "PARTITION_DIR", "SMALL_LISTING",
    "Divergence", "Gap", "LogDirOffsets", "claimed_end", "find_gaps", "gaps_error", "last_next_offset", "raise_on_gaps", "read_local",
    "segment_bases", "segment_file", "subtract_spans",
]

#: plain segment file names (tiered-storage copies, ``<offset>-<uuid>.log``, may overlap and are not judged),
#: and a ``.log`` renamed ``.log.swap`` (an interrupted swap) or ``.log.deleted`` (leaving the log)
_SEGMENT = re.compile(r"^(\d{20})\.(?:(log|index|timeindex|txnindex|snapshot)|log\.(swap|deleted))$")
#: the kinds :func:`segment_file` gives a plain segment file (not a renamed ``.log``)
SEGMENT_KINDS = frozenset({"log", "index", "timeindex", "txnindex", "snapshot"})
#: the kinds of file that make a segment (a producer snapshot is named by an offset, not a segment)
_INDEXED = frozenset({"log", "index", "timeindex", "txnindex"})

RECOVERY_POINT = "recovery-point-offset-checkpoint"
LOG_START = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
#: the most bytes of a ``.log``'s end that :func:`last_next_offset` reads in one go
WHOLE_TAIL = 1 << 16


@dataclass(frozen=True)
class Gap:
    """Offsets ``[start, end)`` of the partition in ``directory`` that no ``.log`` holds, and why the
    files say they existed (``evidence``)."""

    directory: str
    start: int
    end: int
    evidence: str

    @property
    def last(self) -> int:
        """The last missing offset (``end - 1``)."""
        return self.end - 1

    def message(self) -> str:
        """One line naming the offsets and the evidence (without the directory)."""
        span = f"offset {self.start} is" if self.end - self.start == 1 else f"offsets {self.start} to {self.last} are"
        return f"{span} in no .log: {self.evidence}"

    def __str__(self) -> str:
        return f"{self.directory}: {self.message()}"


@dataclass(frozen=True)
class Divergence(Gap):
    """Offsets ``[start, end)`` that two copies of one partition (``directory`` and ``other``) both
    hold with different records, as after an unclean leader election (SPEC §6.9); ``kept`` is the
    copy a reader that allows gaps reads them from. The offsets of the other copy are lost."""

    other: str = ""
    kept: str = ""

    def message(self) -> str:
        span = f"offset {self.start}" if self.end - self.start == 1 else f"offsets {self.start} to {self.last}"
        return f"replica divergence: {span} differ between copies {self.directory} and {self.other} ({self.evidence}); read from {self.kept}"

    def __str__(self) -> str:
        return self.message()


def subtract_spans(spans: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of the half-open ``spans`` outside every one of ``holes``."""
    out = spans
    for h_lo, h_hi in holes:
        nxt = []
        for lo, hi in out:
            if h_hi <= lo or h_lo >= hi:
                nxt.append((lo, hi))
                continue
            if lo < h_lo:
                nxt.append((lo, h_lo))
            if h_hi < hi:
                nxt.append((h_hi, hi))
        out = nxt
    return out


@functools.lru_cache(maxsize=1 << 14)
def segment_file(name: str) -> tuple[int, str] | None:
    """The base offset and kind of a plain segment file's name (``00000000000000000042.log``:
    ``(42, "log")``; the kinds are :data:`SEGMENT_KINDS`), of a ``.log`` renamed ``.log.swap`` or
    ``.log.deleted`` (kind ``"log.swap"``, ``"log.deleted"``); None for any other name. Every
    listing of a partition is read through this one parse, and the same names recur in each
    partition dir (``00000000000000000000.log``, ``partition.metadata``): the answers are kept."""
    m = _SEGMENT.match(name)
    if m is None:
        return None
    return int(m[1]), m[2] or f"log.{m[3]}"


def segment_bases(names: Iterable[str]) -> list[int]:
    """The base offsets that a directory listing's segment files (``.log``, ``.index``,
    ``.timeindex``, ``.txnindex``) name, sorted: each segment answers for the offsets up to the
    next one's base offset (R-ROLL-03), whether or not its ``.log`` is there."""
    return sorted({k[0] for n in names if (k := segment_file(n)) is not None and k[1] in _INDEXED})


def gaps_error(gaps: list[Gap]) -> DataLossError:
    """One :class:`~kafkalog.errors.DataLossError` for the gaps of one or more partitions: the first
    gap's directory and offset locate it, the message lists them all. A :class:`Divergence` first
    (callers put them first) gives a :class:`~kafkalog.errors.ReplicaDivergenceError` naming both copies."""
    first = gaps[0]
    rest = "".join(f"; {g}" for g in gaps[1:])
    cls = ReplicaDivergenceError if isinstance(first, Divergence) else DataLossError
    return cls(first.message() + rest, file=first.directory, offset=first.start, gaps=gaps)


def raise_on_gaps(gaps: list[Gap]) -> None:
    """Raise :func:`gaps_error` when there is any gap."""
    if gaps:
        raise gaps_error(gaps)


# ------------------------------------------------------------------------------- file access
class _Files:
    """Listing and reading of one directory, local or on an fsspec filesystem."""

    __slots__ = ("_prefix", "dir", "fs", "held", "local", "open_log", "read", "shown")

    def __init__(self, directory: str, fs: AbstractFileSystem | None, open_log: Callable[[str], BinaryIO] | None = None,
                 read_file: Callable[[str], bytes] | None = None, held: Mapping[str, bytes] | None = None) -> None:
        self.shown = directory
        self.open_log = open_log
        self.held = held or _NOTHING_HELD  # whole files read already, by name
        if fs is None and is_url(directory):
            fs, directory = url_filesystem(directory)
        self.fs = fs
        self.dir = directory.rstrip("/") if fs is not None else directory
        self.local = fs is None and open_log is None  # a .log is read with the file system calls alone
        #: a whole file's bytes, by path
        self.read: Callable[[str], bytes] = read_file if read_file is not None else fs.cat_file if fs is not None else read_local
        if fs is not None:
            self._prefix = f"{self.dir}/"  # what join puts before a name
        elif os.sep == "/":  # os.path.join(directory, "") without its calls: planning makes one per partition
            self._prefix = directory if not directory or directory[-1] == "/" else directory + "/"
        else:
            self._prefix = os.path.join(directory, "")

    def join(self, name: str) -> str:
        return self._prefix + name

    def parent(self) -> str:
        if self.fs is not None:
            return posixpath.dirname(self.dir)
        return os.path.dirname(os.path.abspath(self.dir))

    def names(self) -> dict[str, int | None]:
        """Every regular file of the directory, with its size."""
        if self.fs is not None:
            return {posixpath.basename(e["name"].rstrip("/")): e.get("size")
                    for e in self.fs.ls(self.dir, detail=True) if e.get("type") == "file"}
        out: dict[str, int | None] = {}
        with os.scandir(self.dir) as it:
            for e in it:
                with contextlib.suppress(OSError):
                    if e.is_file():
                        out[e.name] = e.stat().st_size
        return out

    def has_segment_above(self, base: int) -> bool:
        """Whether the directory, listed afresh, holds a segment file with a base offset above ``base``."""
        if self.fs is not None:
            self.fs.invalidate_cache(self.dir)
        return any(b > base for b in segment_bases(self.names()))

    def open(self, path: str) -> BinaryIO:
        if self.open_log is not None:
            return self.open_log(path)
        if self.fs is not None:
            return open_url(self.fs, path)
        return open(path, "rb")  # noqa: SIM115 - the caller closes it

    def exists(self, path: str) -> bool:
        return self.fs.exists(path) if self.fs is not None else os.path.exists(path)


_NOTHING_HELD: Mapping[str, bytes] = MappingProxyType({})


def read_local(path: str) -> bytes:
    """A whole local file, read with the file system calls alone: open, reads until one comes back
    empty, close; a file of :data:`WHOLE_TAIL` bytes or more is sized once and read on in one
    read (a read that comes back short is read on: a FUSE file system's may end short of the end).
    A file object (``open(path, "rb")``) makes as many calls again, and planning reads a few small
    files (the last segment's indexes, its ``.log``'s end) of every partition."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, WHOLE_TAIL)
        if not data:
            return data
        parts = [data]
        rest = os.fstat(fd).st_size - len(data) if len(data) == WHOLE_TAIL else 0
        while more := os.read(fd, max(rest + 1, WHOLE_TAIL)):  # one byte more: a read to the end tells it has not grown
            parts.append(more)
            rest -= len(more)
        return data if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------- checkpoints
@dataclass(frozen=True)
class LogDirOffsets:
    """What a log dir says of its partitions (§5.4): the log start offsets (an entry only when above
    the first segment's base offset, R-RET-09) and, when the dir was shut down cleanly (it holds
    ``.kafka_cleanshutdown``, R-RCV-01), the recovery points, each then the partition's log end
    offset (R-RCV-02). A running broker rewrites the recovery points every minute, so a copy of its
    dir may hold ones newer than the segments copied before them: they say nothing then. Read once
    per log dir and pass it to :func:`find_gaps` for each of its partitions."""

    log_start: Mapping[tuple[str, int], int] = field(default_factory=dict)
    log_end_at_shutdown: Mapping[tuple[str, int], int] = field(default_factory=dict)

    @classmethod
    def read(cls, log_dir: str, fs: AbstractFileSystem | None = None, *, names: Collection[str] | None = None) -> LogDirOffsets:
        """The checkpoints of ``log_dir`` (a path, URL, or path on ``fs``); a file that is absent
        or unreadable counts as empty (``kafkalog verify`` reports a damaged one). ``names``: the
        file names of ``log_dir`` when a listing already gave them; a file not among them is not
        asked for (on object storage each would be a request, a GET answered "no such key")."""
        files = _Files(log_dir, fs)

        def read(name: str) -> dict[tuple[str, int], int]:
            if names is not None and name not in names:
                return {}
            try:
                return read_offset_checkpoint(data=files.read(files.join(name)))
            except (OSError, KafkaLogError):
                return {}

        try:
            clean = CLEAN_SHUTDOWN in names if names is not None else files.exists(files.join(CLEAN_SHUTDOWN))
        except OSError:
            clean = False
        return cls(read(LOG_START), read(RECOVERY_POINT) if clean else {})


def _topic_partition(directory: str) -> tuple[str, int] | None:
    """The topic and partition a partition dir's name says (``<topic>-<partition>``), None for another name."""
    name = directory.replace(os.sep, "/").rstrip("/").rsplit("/", 1)[-1]
    topic, _, partition = name.rpartition("-")
    if topic and partition.isascii() and partition.isdigit():  # as the pattern reads the usual name, without it
        return topic, int(partition)
    m = PARTITION_DIR.match(name)
    return (m["topic"], int(m["partition"])) if m else None


# ---------------------------------------------------------------------------------- detector
_new_tuple = tuple.__new__


class _Claim(NamedTuple):
    end: int  # the log reached at least this offset (the offset after the last one it held)
    words: str  # what claims it ({0}: ``offset``, {1}: ``stem``), written out only when asked: a gap is rare
    offset: int
    stem: str

    @property
    def what(self) -> str:
        return self.words.format(self.offset, self.stem)


class _Listed(NamedTuple):
    """What the segment file names of a partition dir's listing say, before any file is read."""

    kinds: Mapping[int, frozenset[str]]  # base offset -> the kinds of its files (a .log.swap counted as its .log); not to be changed
    bases: tuple[int, ...]  # sorted
    snapshots: tuple[int, ...]  # the offsets producer snapshots are named by
    orphans: tuple[int, ...]  # the segments listed without a .log
    stem: str  # the last segment's file names without their suffix ("" without a segment)
    log_listed: bool  # the listing named the last segment's .log itself (not only its .swap)


def _listed(names: frozenset[str]) -> _Listed:
    """:class:`_Listed` of a listing's names. The same small listings recur in many partition dirs
    (a topic's partitions that all hold segment 0 and the same snapshot): their answers are kept
    (:func:`_listed_small`), a large listing's are not (it would be kept in memory whole)."""
    return _listed_small(names) if len(names) <= SMALL_LISTING else _read_listed(names)


#: the most names of a listing whose answers are kept (a few segments and snapshots): the same small
#: listings recur in many partition dirs, and a larger one's answer would be kept in memory whole.
#: Every cache over listings (:class:`_Listed` here, :func:`kafkalog.log.layout.layout`, the Spark
#: source's) keeps those of at most this many names.
SMALL_LISTING = 24


def _read_listed(names: frozenset[str]) -> _Listed:
    """:class:`_Listed` of a listing's names, read afresh."""
    by_base: dict[int, set[str]] = {}
    snapshots: list[int] = []
    deleted: list[int] = []
    for name in names:
        if (k := segment_file(name)) is None:
            continue
        base, kind = k
        if kind == "snapshot":
            snapshots.append(base)
        elif kind == "log.deleted":
            deleted.append(base)
        else:  # an interrupted swap's .log.swap stands for the .log (R-RCV-04)
            by_base.setdefault(base, set()).add("log" if kind == "log.swap" else kind)
    # a segment whose .log was renamed .deleted is leaving the log (retention R-RET-08, cleaner R-CMP-14):
    # its index files may not be renamed yet
    for base in deleted:
        if "log" not in by_base.get(base, set()):
            by_base.pop(base, None)
    bases = tuple(sorted(by_base))
    stem = f"{bases[-1]:020d}" if bases else ""
    return _Listed(MappingProxyType({b: frozenset(k) for b, k in by_base.items()}), bases, tuple(snapshots),
                   tuple(b for b in bases if "log" not in by_base[b]), stem, f"{stem}.log" in names)


_listed_small = functools.lru_cache(maxsize=1 << 10)(_read_listed)


def find_gaps(
    directory: str | os.PathLike[str],
    *,
    fs: AbstractFileSystem | None = None,
    files: Mapping[str, int | None] | Iterable[str] | None = None,
    checkpoints: LogDirOffsets | None = None,
    tail: bool = True,
    open_log: Callable[[str], BinaryIO] | None = None,
    read_file: Callable[[str], bytes] | None = None,
    held: Mapping[str, bytes] | None = None,
    partition: tuple[str, int] | None = None,
) -> list[Gap]:
    """The offset ranges of one partition directory that its files say existed but no ``.log``
    holds, in offset order (empty: nothing is missing).

    ``files`` is the directory's listing (file names, or names with sizes) when the caller has it;
    otherwise the directory is listed. ``checkpoints`` are the log dir's offset checkpoints; when
    None they are read from the directory's parent (absent files: none). ``tail=False`` leaves out
    the tail of a last segment whose ``.log`` is there (no ``.log`` is opened): a reader that reads
    that ``.log`` to its end anyway compares its end with :func:`claimed_end` itself. ``open_log``
    opens the ``.log`` read for that, and ``read_file`` reads a whole file (an index, a snapshot)
    (defaults: as any file of the directory). ``held``: files of a local directory read whole
    already, by name (:func:`kafkalog.log.source._local_listing`: the listing read them through the
    directory it held open), each taken where it would be read, and read no more; a ``.log``
    among them holds at most :data:`WHOLE_TAIL` bytes. ``partition``: the directory's (topic,
    partition) when the caller has parsed its name already (a planner of many partitions), else
    read from it."""
    shown = os.fspath(directory)
    access = _Files(shown, fs, open_log, read_file, held)
    listed: Mapping[str, int | None] | Iterable[str] = files if files is not None else access.names()
    # a file listed empty holds no entry to read (a live one may have grown since, but only with
    # data its .log, listed earlier or read later, holds too): the usual empty partition opens nothing
    sizes: Mapping[str, int | None] = listed if isinstance(listed, (dict, Mapping)) else {}  # dict first: a Mapping check of its own is a call into abc
    names = frozenset(listed)
    if checkpoints is None:
        checkpoints = LogDirOffsets.read(access.parent(), access.fs)
    tp = partition if partition is not None else _topic_partition(shown)
    if tp is None:
        return []

    seen = _listed(names)
    by_base: Mapping[int, Collection[str]] = seen.kinds
    bases = seen.bases
    # a listing may lose a file renamed while it was taken (fsspec's local ls drops an entry whose
    # stat fails): an orphan stands only if its .log is still absent under every name now
    if seen.orphans:
        found = {b: set(k) for b, k in by_base.items()}
        for base in seen.orphans:
            stem = access.join(f"{base:020d}")
            if access.exists(stem + ".log") or access.exists(stem + ".log.swap"):
                found[base].add("log")
            elif access.exists(stem + ".log.deleted"):
                del found[base]  # leaving the log (R-RET-08, R-CMP-14)
        by_base, bases = found, tuple(sorted(found))
    start = log_start_offset(checkpoints.log_start.get(tp), bases[0] if bases else None) or 0  # R-RCV-08
    last = bases[-1] if bases else None
    # the last segment's file names and whether its .log was listed: the listing's, unless its last segment was an orphan that has left since
    last_stem, log_listed = (seen.stem, seen.log_listed) if last is None or last == seen.bases[-1] else (f"{last:020d}", f"{last:020d}.log" in names)

    indexed: dict[int, list[int]] = {}
    # the claims are weighed against a last segment without its .log, or against the last .log's
    # end (``tail``); otherwise none is needed, and the last segment's indexes are not opened
    last_logged = last is not None and "log" in by_base[last]
    weighed = tail or not last_logged
    claim = _furthest_claim(access, tp, checkpoints, seen.snapshots, last, by_base[last] if last is not None else (), indexed,
                            stem=last_stem, sizes=sizes) if weighed else None
    gaps: list[Gap] = []
    for i, base in enumerate(bases if seen.orphans else ()):  # listed without an orphan, each segment has its .log
        if "log" in by_base[base]:
            continue
        shown_files = ", ".join(f".{s}" for s in sorted(by_base[base]))
        if i + 1 < len(bases):
            hi, why = bases[i + 1], f"the next segment starts at {bases[i + 1]}"
        else:
            if claim is None or claim.end <= base:
                continue  # an empty last segment: nothing it held is known
            hi, why = claim.end, claim.what
        lo = max(base, start)
        if hi > lo:
            gaps.append(Gap(shown, lo, hi, f"segment {base} has {shown_files} but no .log, and {why}"))
    if (last is not None and not last_logged) or (last is not None and not tail):
        return gaps
    if claim is None or claim.end <= max(start, last if last is not None else start):
        return gaps  # no claim reaches past the log start and the last segment's base
    if last is None:
        gaps.append(Gap(shown, start, claim.end, f"the directory has no segment at all, and {claim.what}"))
        return gaps
    log_end = _log_end(access, last, last_stem, indexed.get(last), listed=log_listed)
    lo = max(log_end, start)
    # a writer may have rolled and then cleaned the segment since the listing (only a segment that
    # is no longer the last is cleaned): its records past log_end were then compacted away, and the
    # offsets up to the new segment's base are explained (R-LOSS-02); the claims stand otherwise
    if claim.end > lo and not access.has_segment_above(last):
        gaps.append(Gap(shown, lo, claim.end, f"the last segment {last_stem}.log ends at offset {log_end}, and {claim.what}"))
    return gaps


def claimed_end(
    directory: str, files: Iterable[str], checkpoints: LogDirOffsets, *, partition: tuple[str, int] | None = None
) -> tuple[int, str] | None:
    """The furthest log end that the names in a listing and the log dir's checkpoints claim (a
    producer snapshot's name, a clean shutdown's recovery point: R-LOSS-03), with what claims it,
    read from no file; None when nothing does. ``partition``: the directory's (topic, partition)
    when the caller has parsed its name already (a planner of many partitions), else read from it."""
    tp = partition if partition is not None else _topic_partition(directory)
    if tp is None:
        return None
    snapshots = [k[0] for n in files if (k := segment_file(n)) is not None and k[1] == "snapshot"]
    claim = _furthest_claim(None, tp, checkpoints, snapshots, None, set())  # no file is read: no access to them
    return None if claim is None else (claim.end, claim.what)


def segment_claim(directory: str, base: int, kinds: Collection[str], *, fs: AbstractFileSystem | None = None) -> tuple[int, str] | None:
    """The furthest log end that segment ``base``'s own indexes claim (R-LOSS-03: its ``.index``'s
    and ``.timeindex``'s last entries, its ``.txnindex``'s last aborted transaction), with what
    claims it; None when none does. ``kinds``: which of ``index``, ``timeindex`` and ``txnindex``
    the directory's listing named (no other is asked for). For a reader that checks a last
    segment's tail where it reads that ``.log`` to its end (the Spark source's executors), as
    :func:`find_gaps` checks it with ``tail``: the two then weigh the same claims."""
    claim = _furthest_claim(_Files(directory, fs), ("", -1), LogDirOffsets(), [], base, set(kinds))
    return None if claim is None else (claim.end, claim.what)


def _furthest_claim(
    access: _Files | None, tp: tuple[str, int], checkpoints: LogDirOffsets, snapshots: Collection[int], last: int | None,
    last_files: Collection[str], indexed: dict[int, list[int]] | None = None, *, stem: str = "", sizes: Mapping[str, int | None] | None = None,
) -> _Claim | None:
    """Where the files say the log reached, the furthest claim (the first of the furthest, in the
    order below; None: nothing claims): each claim is an offset the log end was at or past.
    Only files a writer makes after the data they claim count (R-LOSS-03): a producer snapshot is
    written after the segment it is named by exists (a roll) or at close, an index entry after
    the batch it points at, and a clean shutdown's recovery point after the last write. The
    positions of the last segment's offset index, once read, are left in ``indexed`` for
    :func:`_log_end`. ``stem``: the last segment's file names without their suffix (default: made
    from ``last``); ``sizes``: the listing's, where a file listed empty is not read (it holds no
    entry; a listing that did not size it, :class:`kafkalog.log.source.Entry`, gives None). Only
    the furthest claim's words are written: a reader asks for them of each partition it plans."""
    best: tuple[int, str, int] | None = None  # the furthest end claimed, the words saying so, the offset they name
    if snapshots:
        s = max(snapshots)
        best = (s, "the producer snapshot {0:020d}.snapshot says the log reached offset {0}", s)
    if tp in checkpoints.log_end_at_shutdown:
        end = checkpoints.log_end_at_shutdown[tp]
        if best is None or end > best[0]:
            best = (end, f"the log dir's {RECOVERY_POINT} says the log ended at offset {{0}} at its clean shutdown", end)
    if last is not None and access is not None:
        stem = stem or f"{last:020d}"
        sizes = sizes or {}
        if "index" in last_files and (data := _read(access, stem + ".index", sizes)):
            offsets, positions = offsets_and_positions(data, base_offset=last)
            if indexed is not None:
                indexed[last] = positions
            if offsets and (best is None or offsets[-1] + 1 > best[0]):
                best = (offsets[-1] + 1, "{1}.index has an entry for offset {0}", offsets[-1])
        if "timeindex" in last_files and (data := _read(access, stem + ".timeindex", sizes)):
            o = last_offset(data, base_offset=last, time=True)
            if o is not None and (best is None or o + 1 > best[0]):
                best = (o + 1, "{1}.timeindex has an entry for offset {0}", o)
        if "txnindex" in last_files and (data := _read(access, stem + ".txnindex", sizes)):
            try:
                txns = read_txn_index(data=data)
            except KafkaLogError:
                txns = []  # damaged: it claims nothing
            o = max((t.last_offset for t in txns), default=None)
            if o is not None and (best is None or o + 1 > best[0]):
                best = (o + 1, "{1}.txnindex has an aborted transaction ending at offset {0}", o)
    return None if best is None else _new_tuple(_Claim, (*best, stem))  # a NamedTuple's own __new__ is a Python call


def _read(access: _Files, name: str, sizes: Mapping[str, int | None]) -> bytes:
    """The bytes of the directory's file ``name``; none when it is listed empty (``sizes``), absent
    or unreadable: it claims nothing."""
    if sizes.get(name) == 0:
        return b""
    if (data := access.held.get(name)) is not None:
        return data
    try:
        return access.read(access._prefix + name)
    except (OSError, KafkaLogError):
        return b""


def _log_end(access: _Files, base: int, stem: str, positions: list[int] | None, *, listed: bool = False) -> int:
    """The offset after the last whole batch of segment ``base``'s ``.log`` or, when the listing did
    not name it, its ``.log.swap`` (its base offset when it holds none); ``stem``: its file names
    without their suffix. The walk starts at the last index entry that lies inside the file, and steps back
    an entry at a time when no whole batch follows it (a torn or zero-filled tail). ``positions``:
    the segment's offset index entries' as :func:`_furthest_claim` read them (None: absent, listed
    empty or unreadable, so the walk starts at the first byte). ``listed``: the listing named the
    ``.log`` itself (not only its ``.swap``), so it is opened without asking whether it is there
    (a request apiece on object storage); renamed since, it is not found either way."""
    starts = [0] if not positions else sorted({0, *positions}, reverse=True)  # where the walk may start, last first
    if access.local and listed and (whole := access.held.get(stem + ".log")) is not None:
        return _held_log_end(whole, starts, base)
    path = access.join(stem + ".log")
    if not listed and not access.exists(path):
        path += ".swap"
    if access.local:
        return _local_log_end(path, starts, base)
    try:
        fh = access.open(path)
    except FileNotFoundError:
        return base  # renamed away since the listing (R-LIVE-03): nothing of it is known
    with fh:
        size = fh.seek(0, io.SEEK_END)
        for pos in starts:
            if pos < size and (end := last_next_offset(fh, pos)) is not None:
                return end
    return base


def _local_log_end(path: str, starts: list[int], base: int) -> int:
    """:func:`_log_end` of a local ``.log``, read with the file system calls alone (as :func:`read_local`):
    the rest from a start of up to :data:`WHOLE_TAIL` bytes read whole (until a read comes back
    empty; none at all: a start past the end), a longer one a batch at a time."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return base  # renamed away since the listing (R-LIVE-03): nothing of it is known
    try:
        for pos in starts:
            data = os.pread(fd, WHOLE_TAIL + 1, pos)
            while data and len(data) <= WHOLE_TAIL and (more := os.pread(fd, WHOLE_TAIL + 1 - len(data), pos + len(data))):
                data += more  # a read that came back short of the end (a FUSE file system's may): read on
            if not data:
                continue
            if len(data) <= WHOLE_TAIL:
                end = next_offset_of(data)
            else:
                with open(fd, "rb", closefd=False) as fh:
                    end = LogReader(fh, start=pos).next_offset()
            if end is not None:
                return end
    finally:
        os.close(fd)
    return base


def _held_log_end(data: bytes, starts: list[int], base: int) -> int:
    """:func:`_local_log_end` of a ``.log`` read whole already (at most :data:`WHOLE_TAIL` bytes)."""
    for pos in starts:
        if pos < len(data) and (end := next_offset_of(data[pos:] if pos else data)) is not None:
            return end
    return base


def last_next_offset(fh: BinaryIO, pos: int) -> int | None:
    """The next offset of the last whole batch from byte ``pos`` on, or None when there is none. A
    rest of up to :data:`WHOLE_TAIL` bytes is read at once and walked in memory (the usual last
    segment's rest past its last index entry: one read, not two a batch)."""
    size = fh.seek(0, io.SEEK_END)
    if size - pos <= WHOLE_TAIL:
        fh.seek(pos)
        return next_offset_of(fh.read(size - pos))
    return LogReader(fh, start=pos).next_offset()
