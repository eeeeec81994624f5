"""``kafkalog dump``: every supported file as canonical JSON lines or kafka-dump-log's text.

The JSON form is SPEC.md's canonical JSON; the text form follows kafka-dump-log
(DumpLogSegments) line for line where that tool reads the file type.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import posixpath
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from kafkalog.errors import CrcMismatchError, DataLossError, KafkaLogError
from kafkalog.format.files import (
    DUMPED_KINDS,
    FileKind,
    exists,
    is_dir,
    is_url,
    kind_of,
    open_read,
    segment_file_name,
    walk,
)
from kafkalog.format.records.legacy import LegacyBatch
from kafkalog.format.records.record import LegacyRecord
from kafkalog.format.records.stream import Batch, LogReader, crc_error
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.tools.canonical import batch_json, dumps, log_lines, record_json
from kafkalog.tools.command import (
    EXIT_BAD_DATA,
    EXIT_IO,
    EXIT_OK,
    EXIT_USAGE,
    Progress,
    UsageError,
    add_tiered_options,
    check_tiered_paths,
    kafka_version_arg,
    missing_or_empty,
    private_keys,
)

if TYPE_CHECKING:
    from kafkalog.format.tiered_aiven import Keyring, RemoteSegment
    from kafkalog.log.gaps import Gap

# The readers of the other file kinds (indexes, snapshots, checkpoints) and the data-loss check of
# directories are imported where a file or a directory needs them: a dump of one .log loads none.

__all__ = ["DumpOptions", "DumpResult", "dump", "json_lines"]


@dataclass
class DumpOptions:
    """What to print: ``fmt`` is ``json`` or ``text``; the rest mirror kafka-dump-log's flags."""

    fmt: str = "text"
    deep_iteration: bool = False
    print_data_log: bool = False
    skip_record_metadata: bool = False
    lossless: bool = False
    decode: bool = False
    decoder: str | None = None
    #: ``read_committed`` or ``read_uncommitted``: print only what a consumer receives (partition directories)
    isolation: str | None = None
    #: private keys by key-pair id, for tiered segments the Aiven plug-in encrypted (SPEC Appendix D)
    keys: Keyring | None = None
    #: the prefix holding the Aiven plug-in's objects: the paths are then read with it, one log per partition (D.6)
    tiered: str | None = None
    #: read past offsets no segment holds (R-LOSS-04, D.6), with a warning, instead of failing (data loss)
    allow_gaps: bool = False
    #: the Kafka release line ("4.0" ... "4.4") whose decoders and kafka-dump-log text to follow; None: the newest;
    #: "auto": per file, the release its records say wrote it (:mod:`kafkalog.internal.detect`)
    kafka_version: str | None = None
    #: name on ``err`` the release ``auto`` chose for each file, and why
    verbose: bool = False

    def decoder_for(self, path: str) -> str | None:
        """The internal-topic decoder to apply to ``path``: forced, by topic, or none."""
        if self.decoder is not None:
            return self.decoder
        if not self.decode:
            return None
        from kafkalog.internal import decoder_for_path  # the internal topics' decoders load when asked for

        return decoder_for_path(path)


@dataclass
class DumpResult:
    """Files dumped, and the problems met (messages with file and position)."""

    files: int = 0
    errors: list[str] = field(default_factory=list)
    torn_tails: list[str] = field(default_factory=list)
    #: offsets lost in the partition directories dumped (with ``allow_gaps``; else dump raises)
    gaps: list[Gap] = field(default_factory=list)
    #: batches whose CRC does not match: dumped as kafka-dump-log dumps them (``isvalid: false``), and
    #: each an error (R-VAL-09), reported on stderr once its file is dumped
    corrupt: list[CrcMismatchError] = field(default_factory=list)

    def report_corrupt(self, since: int, err: TextIO) -> None:
        """Write the corrupt batches found from index ``since`` on to ``err`` and count them as errors."""
        for c in self.corrupt[since:]:
            self.errors.append(str(c))
            err.write(f"error: {c}\n")


def _noting_corrupt(batches: Iterable[Batch], result: DumpResult | None) -> Iterator[Batch]:
    """``batches``, each one whose CRC does not match noted in ``result.corrupt`` (every batch is still dumped)."""
    for batch in batches:
        if result is not None and (err := crc_error(batch)) is not None:
            result.corrupt.append(err)
        yield batch


# ----------------------------------------------------------------------------- JSON per kind
@dataclass(frozen=True)
class _Part:
    """A file held inside a tiered segment's objects (SPEC Appendix D): the ``.log`` (``part`` None), opened
    through the manifest, or one part of its ``.indexes``."""

    segment: RemoteSegment
    part: str | None = None

    @property
    def base_offset(self) -> int:
        return self.segment.base_offset

    def data(self) -> bytes:
        return self.segment.index_part(self.part) or b"" if self.part else b""

    def open(self) -> BinaryIO:
        return self.segment.open_log()  # type: ignore[return-value]


def _snapshot_lines(path: str, rel: str, src: _Part | None = None) -> Iterator[dict[str, Any]]:
    from kafkalog.format.snapshot import read_producer_snapshot

    for e in read_producer_snapshot(path, data=None if src is None else src.data()):
        meta = []
        if e.last_offset >= 0:
            meta.append(
                {
                    "firstSeq": e.first_sequence,
                    "lastSeq": e.last_sequence,
                    "firstOffset": e.first_offset,
                    "lastOffset": e.last_offset,
                    "offsetDelta": e.offset_delta,
                    "timestamp": e.timestamp,
                }
            )
        yield {
            "file": rel,
            "type": "producerSnapshotEntry",
            "producerId": e.producer_id,
            "producerEpoch": e.epoch,
            "coordinatorEpoch": e.coordinator_epoch,
            "lastTimestamp": e.timestamp,
            "currentTxnFirstOffset": e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None,
            "firstSeq": e.first_sequence,
            "lastSeq": e.last_sequence if e.last_offset >= 0 else -1,
            "lastDataOffset": e.last_offset if e.last_offset >= 0 else -1,
            "batchMetadata": meta,
        }


def _index_lines(path: str, rel: str, src: _Part | None = None) -> Iterator[dict[str, Any]]:
    from kafkalog.format.index import OffsetIndex

    idx = OffsetIndex.read(path) if src is None else OffsetIndex.read(path, data=src.data(), base_offset=src.base_offset)
    for i in range(len(idx)):
        yield {"file": rel, "type": "offsetIndexEntry", "i": i, "offset": int(idx.offsets[i]), "position": int(idx.positions[i])}


def _time_index_lines(path: str, rel: str, src: _Part | None = None) -> Iterator[dict[str, Any]]:
    from kafkalog.format.index import TimeIndex

    idx = TimeIndex.read(path) if src is None else TimeIndex.read(path, data=src.data(), base_offset=src.base_offset)
    for i in range(len(idx)):
        yield {"file": rel, "type": "timeIndexEntry", "i": i, "timestamp": int(idx.timestamps[i]), "offset": int(idx.offsets[i])}


def _txn_lines(path: str, rel: str, src: _Part | None = None) -> Iterator[dict[str, Any]]:
    from kafkalog.format.txnindex import read_txn_index

    for t in read_txn_index(path, data=None if src is None else src.data()):
        yield {
            "file": rel, "type": "abortedTxn", "version": t.version, "producerId": t.producer_id,
            "firstOffset": t.first_offset, "lastOffset": t.last_offset, "lastStableOffset": t.last_stable_offset,
        }


def _epoch_lines(path: str, rel: str, src: _Part | None = None) -> Iterator[dict[str, Any]]:
    from kafkalog.format.checkpoints import read_leader_epoch_checkpoint

    for e in read_leader_epoch_checkpoint(path, data=None if src is None else src.data()):
        yield {"file": rel, "type": "leaderEpochEntry", "epoch": e.epoch, "startOffset": e.start_offset}


def _pm_lines(path: str, rel: str, src: _Part | None = None) -> Iterator[dict[str, Any]]:
    from kafkalog.format.checkpoints import read_partition_metadata

    pm = read_partition_metadata(path)
    yield {"file": rel, "type": "partitionMetadata", "version": pm.version, "topicId": pm.topic_id}


_JSON: dict[FileKind, Callable[[str, str, _Part | None], Iterator[dict[str, Any]]]] = {
    FileKind.INDEX: _index_lines,
    FileKind.TIME_INDEX: _time_index_lines,
    FileKind.TXN_INDEX: _txn_lines,
    FileKind.PRODUCER_SNAPSHOT: _snapshot_lines,
    FileKind.LEADER_EPOCH_CHECKPOINT: _epoch_lines,
    FileKind.PARTITION_METADATA: _pm_lines,
}


def json_lines(
    path: str, rel: str, kind: FileKind, result: DumpResult | None = None, lossless: bool = False, decoder: str | None = None,
    *, end: int | None = None, source: BinaryIO | None = None, src: _Part | None = None, release: str | None = None,
) -> Iterator[dict[str, Any]]:
    """Canonical objects of one file of the given kind (a ``.log`` is streamed batch by batch, from
    ``source`` when the caller opened it already, and read only up to the offset ``end`` when one
    is given: :func:`_targets`).

    With ``decoder`` (an internal-topic decoder name), record objects gain ``decodedKey`` and
    ``decodedValue`` (or ``decodeError``), as Kafka ``release`` decodes them (default: the newest).
    ``src`` reads the file from a tiered segment's objects."""
    if kind in (FileKind.LOG, FileKind.KRAFT_SNAPSHOT):
        extra = None
        if decoder is not None:
            from kafkalog.internal import decoded_fields

            def extra(batch: Any, r: Any) -> dict[str, Any]:
                control = isinstance(batch, RecordBatch) and batch.is_control
                return decoded_fields(None, r, decoder=decoder, control=control, file=path, position=batch.position, release=release)

        with LogReader(path if source is None else source, name=path) as reader:
            yield from log_lines(_noting_corrupt(_planned(reader.batches(), end), result), rel, lossless=lossless, extra=extra)
            if reader.tail is not None and result is not None:
                result.torn_tails.append(reader.tail.message())
        return
    yield from _JSON[kind](path, rel, src)


def _planned(batches: Iterator[Any], end: int | None) -> Iterator[Any]:
    """``batches`` up to the first one holding an offset at or past ``end`` (all of them when None)."""
    return batches if end is None else itertools.takewhile(lambda b: b.last_offset < end, batches)


# ------------------------------------------------------------------------------------- text
def _b(v: bool) -> str:
    return "true" if v else "false"


def _opt(v: int | None) -> str:
    return "OptionalLong.empty" if v is None else f"OptionalLong[{v}]"


def _text_batch(batch: Any, position: int) -> str:
    if isinstance(batch, RecordBatch):
        head = (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.count} "
            f"baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
            f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_b(batch.is_transactional)} isControl: {_b(batch.is_control)} "
            f"deleteHorizonMs: {_opt(batch.delete_horizon_ms)}"
        )
    else:
        head = f"offset: {batch.last_offset}"
    return (
        f"{head} position: {position} {batch.timestamp_type.value}: {batch.max_timestamp} size: {batch.size_in_bytes} "
        f"magic: {batch.magic} compresscodec: {batch.compression.label} crc: {batch.crc} isvalid: {_b(batch.is_valid)}"
    )


def _text_log(path: str, out: TextIO, opts: DumpOptions, result: DumpResult, end: int | None = None, source: BinaryIO | None = None) -> None:
    name = os.path.basename(path)
    stem = name.split(".", 1)[0]
    decoder = opts.decoder_for(path)
    if name == "bootstrap.checkpoint":
        out.write("KRaft bootstrap snapshot\n")
    elif name.endswith(".checkpoint"):
        off, _, epoch = stem.partition("-")
        out.write(f"Snapshot end offset: {int(off)}, epoch: {int(epoch)}\n")
    else:
        out.write(f"Log starting offset: {int(stem.split('-')[0])}\n")
    with LogReader(path if source is None else source, name=path) as reader:
        valid = 0
        for batch in _noting_corrupt(_planned(reader.batches(), end), result):
            _text_batch_and_records(path, batch, valid, batch.records(), out, opts, decoder)
            valid += batch.size_in_bytes
        if reader.tail is not None:
            out.write(f"Found {reader.tail.size} invalid bytes at the end of {name}\n")
            result.torn_tails.append(reader.tail.message())


def _text_batch_and_records(
    path: str, batch: Any, position: int, records: Iterable[Any], out: TextIO, opts: DumpOptions, decoder: str | None
) -> None:
    """One batch line and, with deep iteration, a line for each of ``records``."""
    out.write(_text_batch(batch, position) + "\n")
    print_data = opts.print_data_log or decoder is not None
    if not (opts.deep_iteration or print_data):
        return
    for r in records:
        prefix = "| "
        parts: list[str] = []
        if not opts.skip_record_metadata:
            line = f"{prefix}offset: {r.offset} {batch.timestamp_type.value}: {r.timestamp} keySize: {r.key_size} valueSize: {r.value_size}"
            prefix = " "
            if batch.magic >= 2:
                line += f" sequence: {r.sequence} headerKeys: [{','.join(k for k, _ in r.headers)}]"
            if isinstance(r, LegacyRecord):
                # sic: the Scala kafka-dump-log (up to 4.2) prints a stray '}'
                stray = "}" if _release_of(opts.kafka_version) < (4, 3) else ""
                line += f" isValid: {_b(r.is_valid)} crc: {r.checksum}{stray}"
            if isinstance(batch, RecordBatch) and batch.is_control:
                from kafkalog.internal import control_text

                line += control_text(r, file=path, position=batch.position, release=opts.kafka_version)
            parts.append(line)
        if print_data and not (isinstance(batch, RecordBatch) and batch.is_control):
            from kafkalog.internal import record_text

            parts.append(record_text(None, r, decoder=decoder, prefix=prefix, file=path, position=batch.position, release=opts.kafka_version))
        out.write("".join(parts) + "\n")


def _auto_release(path: str, kind: FileKind, opts: DumpOptions, source: BinaryIO | None, err: TextIO) -> DumpOptions:
    """``opts`` with ``--kafka-version auto`` resolved for one file: the release its records say
    (:func:`kafkalog.internal.detect.detect_release`, with the file's internal-topic decoder, decoding or
    not, as the control records' text depends on the release too); the newest for files without records."""
    from kafkalog.internal import decoder_for_path
    from kafkalog.internal.detect import Detected, detect_release
    from kafkalog.internal.releases import NEWEST

    if kind in (FileKind.LOG, FileKind.KRAFT_SNAPSHOT):
        found = detect_release(path, opts.decoder_for(path) or decoder_for_path(path), source)
    else:
        found = Detected(NEWEST, "no records: the newest release", from_records=False)
    if opts.verbose:
        err.write(f"kafkalog dump: {path}: read as Kafka {found.name} ({found.reason})\n")
    return replace(opts, kafka_version=found.name)


def _release_of(kafka_version: str | None) -> tuple[int, int]:
    from kafkalog.internal.releases import parse_release

    return parse_release(kafka_version)


def _text_other(path: str, kind: FileKind, out: TextIO, src: _Part | None = None, release: str | None = None) -> None:
    from kafkalog.format.checkpoints import read_leader_epoch_checkpoint, read_partition_metadata
    from kafkalog.format.index import OffsetIndex, TimeIndex
    from kafkalog.format.snapshot import read_producer_snapshot
    from kafkalog.format.txnindex import read_txn_index

    data = None if src is None else src.data()
    if kind is FileKind.INDEX:
        idx = OffsetIndex.read(path) if src is None else OffsetIndex.read(path, data=data, base_offset=src.base_offset)
        if len(idx) == 0:
            out.write(f"{path} is empty.\n")
        for o, p in zip(idx.offsets.tolist(), idx.positions.tolist(), strict=True):
            out.write(f"offset: {o} position: {p}\n")
    elif kind is FileKind.TIME_INDEX:
        tidx = TimeIndex.read(path) if src is None else TimeIndex.read(path, data=data, base_offset=src.base_offset)
        for t, o in zip(tidx.timestamps.tolist(), tidx.offsets.tolist(), strict=True):
            out.write(f"timestamp: {t} offset: {o}\n")
    elif kind is FileKind.TXN_INDEX:
        for a in read_txn_index(path, data=data):
            out.write(
                f"version: {a.version} producerId: {a.producer_id} firstOffset: {a.first_offset} "
                f"lastOffset: {a.last_offset} lastStableOffset: {a.last_stable_offset}\n"
            )
    elif kind is FileKind.PRODUCER_SNAPSHOT:
        for e in read_producer_snapshot(path, data=data):
            line = (
                f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {_opt(e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None)} "
                f"lastTimestamp: {e.timestamp}"
            )
            if e.last_offset >= 0:
                line += (
                    f" firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                    f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
                )
            elif _release_of(release) < (4, 3):
                line += " "  # sic: the Scala kafka-dump-log (up to 4.2) ends the line with the space before its batch metadata
            out.write(line + "\n")
    elif kind is FileKind.LEADER_EPOCH_CHECKPOINT:
        for ep in read_leader_epoch_checkpoint(path, data=data):
            out.write(f"epoch: {ep.epoch} startOffset: {ep.start_offset}\n")
    elif kind is FileKind.PARTITION_METADATA:
        pm = read_partition_metadata(path)
        out.write(f"version: {pm.version} topicId: {pm.topic_id}\n")


# ------------------------------------------------------------------------------------ driver
#: the suffix a segment file gets while it waits for file.delete.delay.ms
DELETED_SUFFIX = ".deleted"


_Target = tuple[str, str, FileKind, "tuple[int, int | None] | None", "_Part | None"]

#: the parts of a tiered segment's ``.indexes`` (SPEC D.5) dumped as the files they were on the broker
_INDEX_PART_KINDS = (
    ("offset", FileKind.INDEX), ("timestamp", FileKind.TIME_INDEX), ("producerSnapshot", FileKind.PRODUCER_SNAPSHOT),
    ("leaderEpoch", FileKind.LEADER_EPOCH_CHECKPOINT), ("transaction", FileKind.TXN_INDEX),
)
_PART_LABELS = {"offset": "offset index", "timestamp": "time index", "producerSnapshot": "producer snapshot",
                "leaderEpoch": "leader-epoch checkpoint", "transaction": "transaction index"}
_MANIFEST_SUFFIX = ".rsm-manifest"


def _tiered_parts(full: str, rel: str, keys: Keyring | None) -> list[_Target]:
    """The targets of one tiered segment whose ``.log`` is ``full``: each part of its ``.indexes``
    (``file`` is the ``.indexes`` object), then the ``.log`` read through its manifest."""
    from kafkalog.format.tiered_aiven import RemoteSegment, open_store

    folder = posixpath.dirname(full) if is_url(full) else os.path.dirname(full)
    seg = RemoteSegment(open_store(folder or "."), os.path.basename(full)[: -len(".log")], keys)
    stem = rel[: -len(".log")]
    out: list[_Target] = [(seg.name("indexes"), stem + ".indexes", kind, None, _Part(seg, part)) for part, kind in _INDEX_PART_KINDS]
    out.append((full, rel, FileKind.LOG, None, _Part(seg)))
    return out


def _targets(paths: list[str], err: TextIO, keys: Keyring | None = None) -> list[_Target]:
    """Every file to dump, listed before any is read, each with the end of its planned offset range:
    for a ``.log`` found by walking a directory, the base offset of the next ``.log`` listed beside
    it (None: no bound) and the inode the listing saw. The range applies only to a file replaced
    since the listing (see :func:`_replaced`): a cleaned segment renamed over an old one may hold the
    next segments' offsets, which the dump reads from their own files (R-LIVE-04).

    A ``.log`` with an ``.rsm-manifest`` beside it is a segment Aiven's tiered-storage plug-in
    wrote (SPEC Appendix D): it is read through the manifest (chunks decompressed and decrypted with
    ``keys``), and its ``.indexes`` object is dumped as the index files it holds. A ``.log`` with
    an ``.indexes`` object but no manifest is an upload the plug-in had not finished (it writes the
    manifest last): skipped with a warning."""
    found: list[_Target] = []
    for p in paths:
        if is_dir(p):
            listing = _listed(p)
            rels = {rel for _full, rel, _ino in listing}
            walked = [(full, rel, k, ino) for name, (full, rel, ino) in _as_loaded(listing) if (k := kind_of(name)) in DUMPED_KINDS]
            for i, (full, rel, k, ino) in enumerate(walked):
                if k is FileKind.LOG and rel[: -len(".log")] + _MANIFEST_SUFFIX in rels:
                    found.extend(_tiered_parts(full, rel, keys))
                    continue
                if k is FileKind.LOG and rel[: -len(".log")] + ".indexes" in rels:
                    err.write(f"warning: {full}: a tiered segment without its {_MANIFEST_SUFFIX} (an unfinished upload): skipped\n")
                    continue
                end = _next_base(walked, i) if k is FileKind.LOG else None
                found.append((full, rel, k, None if end is None else (end, ino), None))  # type: ignore[arg-type]
        elif p.endswith((".log", ".indexes")) and exists(p.rsplit(".", 1)[0] + _MANIFEST_SUFFIX):
            # a tiered segment's .log or .indexes named alone: that object, read through the manifest beside it
            stem = p.rsplit(".", 1)[0]
            parts = _tiered_parts(stem + ".log", os.path.basename(stem) + ".log", keys)
            found.extend(t for t in parts if (t[2] is FileKind.LOG) == p.endswith(".log"))
        else:
            k = kind_of(p)
            if k is None:
                # kafka-dump-log's rule: dispatch on the suffix alone
                suffix = os.path.splitext(p)[1]
                k = next((x for x in FileKind if x.value == suffix), None)
            if k is None:
                err.write(f"Ignoring unknown file {p}\n")
                continue
            found.append((p, os.path.basename(p), k, None, None))
    return found


def _listed(root: str) -> list[tuple[str, str, int | None]]:
    """(path, path relative to ``root``, inode) for every file under ``root``, sorted by relative path.
    A local file's inode is the one its directory entry held when the listing read the name (no
    later ``stat``): a stat taken after the listing may already see a cleaned segment renamed over
    the listed one, and the dump would then read the new file whole (R-LIVE-04). URLs: no inode."""
    if is_url(root):
        return [(full, rel, None) for full, rel in walk(root)]
    found: list[tuple[str, str, int | None]] = []
    for dirpath, _dirs, _names in os.walk(root):
        with os.scandir(dirpath) as it:
            for e in it:
                with contextlib.suppress(OSError):
                    if e.is_file():
                        ino = e.stat().st_ino if e.is_symlink() else e.inode()
                        found.append((e.path, os.path.relpath(e.path, root).replace(os.sep, "/"), ino))
    found.sort(key=lambda f: f[1])
    return found


def _as_loaded(listing: list[tuple[str, str, int | None]]) -> list[tuple[str, tuple[str, str, int | None]]]:
    """A walk's files, each directory's as the broker has them after loading it: (name, the listed
    file holding it now), in the walk's order. Leftovers of interrupted operations are left out, or
    a completed swap's ``.swap`` files stand in for the segments they replace (SPEC R-RCV-04)."""
    by_dir: dict[str, dict[str, tuple[str, str, int | None]]] = {}
    for f in listing:
        by_dir.setdefault(posixpath.dirname(f[1]), {})[posixpath.basename(f[1])] = f
    from kafkalog.log.leftovers import as_loaded

    loaded = [(name, f) for files in by_dir.values() for name, f in as_loaded(files, lambda f: _open_listed(f[0]))]
    return sorted(loaded, key=lambda nf: posixpath.join(posixpath.dirname(nf[1][1]), nf[0]))


def _open_listed(path: str) -> BinaryIO:
    """A listed file, or the same bytes under the name a live broker renamed it to since the listing
    (:func:`kafkalog.log.leftovers.renamed_name`)."""
    try:
        return open_read(path)
    except FileNotFoundError:
        from kafkalog.log.leftovers import renamed_name

        return open_read(renamed_name(path))


def _next_base(walked: list[tuple[str, str, FileKind | None, int | None]], i: int) -> int | None:
    """The base offset of the first ``.log`` after ``walked[i]`` in the same directory (None: none)."""
    from kafkalog.format.index import base_offset_of

    folder = posixpath.dirname(walked[i][1])
    if not _PLAIN_SEGMENT.fullmatch(posixpath.basename(walked[i][1])):
        return None  # a tiered-storage copy (<offset>-<id>.log): copies of one partition may overlap
    for _full, rel, k, _ino in walked[i + 1 :]:
        if posixpath.dirname(rel) != folder:
            return None
        if k is FileKind.LOG:
            name = posixpath.basename(rel)
            return base_offset_of(name) if _PLAIN_SEGMENT.fullmatch(name) else None
    return None


_PLAIN_SEGMENT = re.compile(r"\d{20}\.log")


def _open_segment(path: str) -> BinaryIO:
    """Open a listed ``.log``, or the name retention or the cleaner renamed it to since the listing
    (``.deleted``: Kafka keeps it for file.delete.delay.ms, R-LIVE-03; a ``.swap`` the cleaner has
    since given its final name)."""
    try:
        return open(path, "rb", buffering=1 << 20)  # noqa: SIM115 - the caller closes it
    except FileNotFoundError:
        from kafkalog.log.leftovers import renamed_name

        return open(renamed_name(path), "rb", buffering=1 << 20)  # noqa: SIM115


def _replaced(opened: BinaryIO, planned: tuple[int, int | None] | None) -> int | None:
    """The planned end of the offsets of the open file if it is not the file the listing saw
    (another inode: the cleaner renamed a new segment over it), else None: a file at rest is dumped
    whole, as kafka-dump-log dumps it. The inode is the open file's own (``fstat``), so no rename
    can come between this check and the read."""
    if planned is None:
        return None
    end, listed = planned
    return end if listed is not None and os.fstat(opened.fileno()).st_ino != listed else None


def _data_loss(paths: list[str]) -> list[Gap]:
    """The offsets lost in every partition directory under the directories among ``paths``: each
    directory holding segment files, judged with its log dir's checkpoints (read once a log dir)."""
    dirs: dict[str, None] = {}
    for p in paths:
        if not is_dir(p):
            continue
        files = walk(p) if is_url(p) else ((full, "") for full, _rel, _ino in _listed(p))
        for full, _rel in files:
            if kind_of(full) in _SEGMENT_KINDS:
                dirs[posixpath.dirname(full) if is_url(full) else os.path.dirname(full)] = None
    if not dirs:
        return []  # files named one by one: no partition to check (nor its check to load)
    from kafkalog.log.gaps import LogDirOffsets, find_gaps

    offsets: dict[str, LogDirOffsets] = {}
    gaps: list[Gap] = []
    for d in dirs:
        parent = posixpath.dirname(d.rstrip("/")) if is_url(d) else os.path.dirname(os.path.abspath(d))
        if parent not in offsets:
            offsets[parent] = LogDirOffsets.read(parent)
        gaps.extend(find_gaps(d, checkpoints=offsets[parent]))
    return gaps


_SEGMENT_KINDS = frozenset({FileKind.LOG, FileKind.INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX, FileKind.PRODUCER_SNAPSHOT})


def _dump_tiered(paths: list[str], opts: DumpOptions, out: TextIO, err: TextIO, result: DumpResult) -> None:
    """Each partition read across tiers (SPEC D.6, :func:`kafkalog.log.tiered.open_tiered`): the
    plug-in's segments under ``opts.tiered``, then the broker's under ``paths``, each offset once.
    A batch prints with the object or file it was read from and its position there, and only the
    records that segment gives; a hole between segments is data loss (DataLossError) unless
    ``opts.allow_gaps``."""
    from kafkalog.log.tiered import open_tiered

    assert opts.tiered is not None
    warnings: list[str] = []
    parts = open_tiered(opts.tiered, paths, keys=opts.keys, allow_gaps=opts.allow_gaps, warnings=warnings)
    for w in warnings:
        err.write(f"warning: {w}\n")
    for part in parts:
        current = None
        for seg, batch, first, stop in part.batches():
            if (crc_err := crc_error(batch)) is not None:
                result.corrupt.append(crc_err)
            if seg is not current:
                current = seg
                result.files += 1
                if opts.fmt != "json":
                    out.write(f"Dumping {seg.name}\nLog starting offset: {seg.base_offset}\n")
            records = [r for r in batch.records() if r.offset >= first and (stop is None or r.offset < stop)]
            if opts.fmt != "json":
                _text_batch_and_records(seg.name, batch, batch.position, records, out, opts, opts.decoder_for(seg.name))
                continue
            out.write(dumps(batch_json(batch, seg.rel, lossless=opts.lossless)) + "\n")
            base = batch.records()[0].offset if isinstance(batch, LegacyBatch) else None
            for r in records:
                out.write(dumps(record_json(batch, r, seg.rel, base_offset=base, lossless=opts.lossless)) + "\n")
        for g in part.gaps:
            err.write(f"warning: data loss: {g} (read past it: --allow-gaps)\n")


def _dump_consumed(root: str, opts: DumpOptions, out: TextIO, result: DumpResult, progress: Callable[[str], None] | None) -> None:
    """What a consumer with ``opts.isolation`` receives from each partition directory under ``root``:
    the batches it reads records from (position as in the segment) and those records, in the
    shapes of the plain dump. The directory is loaded read-only (:meth:`kafkalog.log.unified.Log.open`)."""
    from kafkalog.log.gaps import LogDirOffsets
    from kafkalog.log.isolation import consume_batches
    from kafkalog.log.source import partition_dirs
    from kafkalog.log.unified import Log, parse_topic_partition

    base = root if os.path.isdir(root) else os.path.dirname(root)
    log_dirs: dict[str, LogDirOffsets] = {}
    for pdir in partition_dirs(root):
        if progress is not None:
            progress(pdir)
        # the consumer starts at the log start offset: Log.open takes the data dir's checkpoint entry, as LogLoader does
        parent = os.path.dirname(os.path.abspath(pdir))
        if parent not in log_dirs:
            log_dirs[parent] = LogDirOffsets.read(parent)
        tp = parse_topic_partition(pdir)
        with Log.open(pdir, log_start_offset=(log_dirs[parent].log_start.get(tp) or 0) if tp is not None else 0) as lg:
            current = None
            # a consumer's view: a corrupt batch is left out (and reported, as dump reports it), the rest dumped
            for cb in consume_batches(lg, read_committed=opts.isolation == "read_committed", on_corrupt=result.corrupt.append):
                full = os.path.join(pdir, segment_file_name(cb.segment_base_offset, ".log"))
                rel = os.path.relpath(full, base).replace(os.sep, "/")
                decoder = opts.decoder_for(full)
                if full != current:
                    current = full
                    result.files += 1
                    if opts.fmt != "json":
                        out.write(f"Dumping {full}\nLog starting offset: {cb.segment_base_offset}\n")
                if opts.fmt != "json":
                    _text_batch_and_records(full, cb.batch, cb.position, cb.records, out, opts, decoder)
                    continue
                obj = batch_json(cb.batch, rel, lossless=opts.lossless)
                obj["position"] = cb.position
                out.write(dumps(obj) + "\n")
                first = cb.batch.records()[0].offset if isinstance(cb.batch, LegacyBatch) else None
                for r in cb.records:
                    rec = record_json(cb.batch, r, rel, base_offset=first, lossless=opts.lossless)
                    if decoder is not None:
                        from kafkalog.internal import decoded_fields

                        rec.update(decoded_fields(None, r, decoder=decoder, control=False, file=full, position=cb.position,
                                                  release=opts.kafka_version))
                    out.write(dumps(rec) + "\n")


def dump(
    paths: list[str],
    opts: DumpOptions,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    progress: Callable[[str], None] | None = None,
) -> DumpResult:
    """Dump every file named (directories recursively, in sorted order) to ``out``.

    Paths may be URLs (``s3://bucket/dir``: see :mod:`kafkalog.format.files`). Problems are written to
    ``err`` and collected in the result; a bad file does not stop the others. A missing path
    raises FileNotFoundError. With ``opts.isolation`` every path is read as partition directories,
    as a consumer reads them (:func:`_dump_consumed`).

    Before anything is printed, the partition directories under the paths are checked for lost
    offsets (:func:`kafkalog.log.gaps.find_gaps`, R-LOSS-04): any raises
    :class:`~kafkalog.errors.DataLossError`, unless ``opts.allow_gaps``, which warns on ``err``.
    """
    for p in paths:
        if not exists(p):
            raise FileNotFoundError(p)
    if opts.kafka_version == "auto" and (opts.tiered is not None or opts.isolation is not None):
        raise ValueError("--kafka-version auto reads the release from each file: name one with --isolation or --tiered")
    result = DumpResult()
    if opts.tiered is not None:
        _dump_tiered(paths, opts, out, err, result)
        result.report_corrupt(0, err)
        return result
    result.gaps = _data_loss(paths)
    if result.gaps:
        if not opts.allow_gaps:
            from kafkalog.log.gaps import gaps_error

            raise gaps_error(result.gaps)
        for g in result.gaps:
            err.write(f"warning: {g} (dumping the rest: --allow-gaps)\n")
    if opts.isolation is not None:
        for p in paths:
            try:
                _dump_consumed(p, opts, out, result, progress)
            except KafkaLogError as e:
                e.located(file=p)
                result.errors.append(str(e))
                err.write(f"error: {e}\n")
        result.report_corrupt(0, err)
        return result
    failed: set[int] = set()  # tiered segments whose manifest or data key failed: their other parts are not tried
    for full, rel, kind, planned, src in _targets(paths, err, opts.keys):
        if src is not None and id(src.segment) in failed:
            continue
        result.files += 1
        if progress is not None:
            progress(full)
        opened: BinaryIO | None = None
        corrupt_before = len(result.corrupt)
        try:
            if kind is FileKind.LOG and src is not None:
                opened = src.open()  # a tiered segment: its chunks, through the manifest
            elif kind is FileKind.LOG and not is_url(full):
                opened = _open_segment(full)
                full = opened.name  # type: ignore[assignment]
            elif not is_url(full) and not os.path.exists(full) and os.path.exists(full + DELETED_SUFFIX):
                full += DELETED_SUFFIX  # retention or the cleaner removed it since the listing: Kafka keeps it this long
            end = None if opened is None or src is not None else _replaced(opened, planned)
            fopts = _auto_release(full, kind, opts, opened, err) if opts.kafka_version == "auto" else opts
            if opts.fmt == "json":
                for obj in json_lines(full, rel, kind, result, opts.lossless, opts.decoder_for(full), end=end, source=opened, src=src,
                                      release=fopts.kafka_version):
                    out.write(dumps(obj))
                    out.write("\n")
            else:
                out.write(f"Dumping {full}\n" if src is None or src.part is None else f"Dumping {full} ({_PART_LABELS[src.part]})\n")
                if kind in (FileKind.LOG, FileKind.KRAFT_SNAPSHOT):
                    _text_log(full, out, fopts, result, end, opened)
                else:
                    _text_other(full, kind, out, src, release=fopts.kafka_version)
        except BrokenPipeError:
            raise  # our reader went away (`| head`): the command ends quietly (cli.main)
        except KafkaLogError as e:
            e.located(file=full)
            result.errors.append(str(e))
            err.write(f"error: {e}\n")
            if src is not None and e.file == src.segment.name("rsm-manifest"):
                failed.add(id(src.segment))
        except FileNotFoundError as e:
            if exists(os.path.dirname(full) or "."):
                err.write(f"warning: {full}: removed while dumping (by retention or the cleaner)\n")
            else:
                result.errors.append(f"{full}: {e.strerror or e}")
                err.write(f"error: {full}: {e.strerror or e}\n")
        except OSError as e:
            result.errors.append(f"{full}: {e.strerror or e}")
            err.write(f"error: {full}: {e.strerror or e}\n")
        finally:
            if opened is not None:
                opened.close()
            result.report_corrupt(corrupt_before, err)
    if opts.fmt == "json":
        for t in result.torn_tails:
            err.write(f"warning: {t}\n")
    return result



def _command(args: argparse.Namespace) -> int:
    from kafkalog.format.files import DUMPED_KINDS, kind_of

    if args.lossless and not args.json:
        raise UsageError("--lossless needs --json (it adds stored timestamps and compressed payloads to the canonical JSON)")
    text_only = [flag for flag, on in (("--deep-iteration", args.deep_iteration), ("--print-data-log", args.print_data_log),
                                       ("--skip-record-metadata", args.skip_record_metadata)) if on]
    if args.json and text_only:
        raise UsageError(f"{', '.join(text_only)} apply to the text output only; --json always prints every record")
    opts = DumpOptions(
        allow_gaps=args.allow_gaps,
        fmt="json" if args.json else "text",
        deep_iteration=args.deep_iteration,
        print_data_log=args.print_data_log,
        skip_record_metadata=args.skip_record_metadata,
        lossless=args.lossless,
        decode=args.decode,
        decoder=args.decoder,
        isolation=args.isolation,
        kafka_version=args.kafka_version,
        verbose=args.verbose,
    )
    if args.kafka_version == "auto" and (args.isolation is not None or args.tiered is not None):
        raise UsageError("--kafka-version auto reads the release from each file: name one with --isolation or --tiered")
    if args.tiered is not None:
        if args.isolation is not None:
            raise UsageError("--tiered and --isolation cannot be combined")
        opts.tiered = args.tiered
    check_tiered_paths(args)
    opts.keys = private_keys(args)
    if args.isolation is not None:
        from kafkalog.log.source import partition_dirs

        for p in args.paths:
            if is_url(p):  # a consumer's view needs the whole partition loaded as Log.open loads it, from local files
                print(f"kafkalog dump: --isolation reads local partition directories, not URLs such as {p} (the Spark source "
                      "reads object storage with isolationLevel)", file=sys.stderr)
                return EXIT_USAGE
            if os.path.isfile(p):
                print(f"kafkalog dump: --isolation reads partition directories, not files such as {p}", file=sys.stderr)
                return EXIT_USAGE
            if os.path.exists(p) and not partition_dirs(p):
                print(f"kafkalog dump: --isolation reads partition directories, and {p} holds none", file=sys.stderr)
                return EXIT_IO
    if (code := missing_or_empty("dump", args.paths + ([args.tiered] if args.tiered else []),
                                 lambda n: kind_of(n) in DUMPED_KINDS or n.endswith(".rsm-manifest"))) is not None:
        return code
    progress = Progress(sys.stderr, "dumping")
    try:
        result = dump(args.paths, opts, sys.stdout, sys.stderr, progress)
    except DataLossError as e:
        progress.done()
        print(f"kafkalog dump: error: {e} (--allow-gaps dumps the rest with a warning)", file=sys.stderr)
        return EXIT_BAD_DATA
    except FileNotFoundError as e:
        progress.done()
        print(f"kafkalog dump: no such file or directory: {e.args[0]}", file=sys.stderr)
        return EXIT_IO
    except BrokenPipeError:
        raise  # the reader of stdout went away: main ends quietly
    except OSError as e:  # e.g. an s3:// path without credentials
        progress.done()
        print(f"kafkalog dump: cannot read: {e}", file=sys.stderr)
        return EXIT_IO
    progress.done()
    if not result.files and args.isolation is None:  # a consumer's view may hold no batch at all
        print(f"kafkalog dump: no Kafka files in {' '.join(args.paths)}", file=sys.stderr)
        return EXIT_IO
    return EXIT_BAD_DATA if result.errors else EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog dump`` to the command line."""
    d = sub.add_parser("dump", help="print the contents of log files and directories", description=(
        "Print .log, .index, .timeindex, .txnindex, .snapshot, leader-epoch-checkpoint and partition.metadata files. "
        "Directories are walked recursively in sorted order. Text output follows kafka-dump-log; --json prints "
        "kafkalog's canonical JSON, one object per line. A PATH may be a URL such as s3://bucket/dir (the s3 extra; "
        "credentials and endpoint from the standard AWS environment variables), read with ranged requests. Segments "
        "Aiven's tiered-storage plug-in wrote (a .log with an .rsm-manifest beside it) are read through their manifest "
        "(SPEC.md Appendix D)."))
    d.add_argument("paths", nargs="*", metavar="PATH")
    d.add_argument("--json", action="store_true", help="canonical JSON, one object per line")
    d.add_argument("--lossless", action="store_true", help=(
        "with --json: add what Kafka's view hides (stored record timestamps, each compressed batch's payload as stored, "
        "in base64) so that build gives back identical bytes"))
    d.add_argument("--deep-iteration", "-d", action="store_true", help="text: print every record, not only batches")
    d.add_argument("--print-data-log", action="store_true", help="text: print keys and values (implies --deep-iteration)")
    d.add_argument("--skip-record-metadata", action="store_true", help="text: with --print-data-log, print only keys and values")
    d.add_argument("--decode", action="store_true", help=(
        "decode keys and values of internal topics (__consumer_offsets, __transaction_state, __cluster_metadata, "
        "__share_group_state, __remote_log_metadata), chosen by the partition directory's topic; JSON adds "
        "decodedKey/decodedValue"))
    d.add_argument("--isolation", choices=["read_committed", "read_uncommitted"], help=(
        "print only what a consumer with this isolation.level receives from each partition directory: the batches it "
        "takes records from and those records (no control records; read_committed: no aborted data, nothing past the "
        "last stable offset); the directory is read as a whole, read-only"))
    add_tiered_options(d, "as one log: each offset once, the batches with the object or file they came from; a hole between "
                       "segments is data loss (exit 1)")
    d.add_argument("--allow-gaps", action="store_true", help=(
        "dump partition directories whose files say offsets existed that no .log holds (a .log missing beside its "
        "index or snapshot, a log ending before its snapshot), warning on stderr; without it the dump fails naming "
        "the partition and the offsets, before printing anything; with --tiered, a hole between tiers' segments too"))
    d.add_argument("--decoder", choices=["offsets", "transaction-log", "cluster-metadata", "share-group-state", "remote-log-metadata"],
                   help="force one internal-topic decoder for every file")
    d.add_argument("--offsets-decoder", dest="decoder", action="store_const", const="offsets", help="as kafka-dump-log: --decoder offsets")
    d.add_argument("--transaction-log-decoder", dest="decoder", action="store_const", const="transaction-log", help="as kafka-dump-log: --decoder transaction-log")
    d.add_argument("--cluster-metadata-decoder", dest="decoder", action="store_const", const="cluster-metadata", help="as kafka-dump-log: --decoder cluster-metadata")
    d.add_argument("--share-group-state-decoder", dest="decoder", action="store_const", const="share-group-state", help="as kafka-dump-log: --decoder share-group-state")
    d.add_argument("--remote-log-metadata-decoder", dest="decoder", action="store_const", const="remote-log-metadata", help="as kafka-dump-log: --decoder remote-log-metadata")
    d.add_argument("--kafka-version", type=kafka_version_arg, metavar="X.Y", help=(
        "the Kafka release (4.0 to 4.4, or a patch release such as 4.1.2) whose decoders and kafka-dump-log text to "
        "follow: its record types and layouts of the internal topics, its printing of them (default: the newest, 4.4); "
        "auto: per file, the oldest release that reads every record in full, not below the metadata.version a "
        "FeatureLevelRecord names (see docs/cli.md)"))
    d.add_argument("-v", "--verbose", action="store_true", help=(
        "with --kafka-version auto: name on stderr the release each file is read as, and why"))
    d.set_defaults(func=_command)
