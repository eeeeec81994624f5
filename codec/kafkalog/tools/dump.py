"""``kafkalog dump``: every supported file as canonical JSON lines or kafka-dump-log's text.

The JSON form is SPEC.md's canonical JSON; the text form follows kafka-dump-log
(DumpLogSegments) line for line where that tool reads the file type.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, TextIO

from kafkalog.errors import KafkaLogError
from kafkalog.format.checkpoints import read_leader_epoch_checkpoint, read_partition_metadata
from kafkalog.format.files import DUMPED_KINDS, FileKind, exists, is_dir, is_url, kind_of, segment_file_name, walk
from kafkalog.format.index import OffsetIndex, TimeIndex
from kafkalog.format.records.legacy import LegacyBatch
from kafkalog.format.records.record import LegacyRecord
from kafkalog.format.records.stream import LogReader
from kafkalog.format.records.v2 import RecordBatch
from kafkalog.format.snapshot import read_producer_snapshot
from kafkalog.format.txnindex import read_txn_index
from kafkalog.internal import control_text, decoded_fields, decoder_for_path, record_text
from kafkalog.tools.canonical import batch_json, dumps, log_lines, record_json

__all__ = ["DumpOptions", "DumpResult", "dump", "json_lines", "partition_dirs"]


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

    def decoder_for(self, path: str) -> str | None:
        """The internal-topic decoder to apply to ``path``: forced, by topic, or none."""
        if self.decoder is not None:
            return self.decoder
        return decoder_for_path(path) if self.decode else None


@dataclass
class DumpResult:
    """Files dumped, and the problems met (messages with file and position)."""

    files: int = 0
    errors: list[str] = field(default_factory=list)
    torn_tails: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------- JSON per kind
def _snapshot_lines(path: str, rel: str) -> Iterator[dict[str, Any]]:
    for e in read_producer_snapshot(path):
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


def _index_lines(path: str, rel: str) -> Iterator[dict[str, Any]]:
    idx = OffsetIndex.read(path)
    for i in range(len(idx)):
        yield {"file": rel, "type": "offsetIndexEntry", "i": i, "offset": int(idx.offsets[i]), "position": int(idx.positions[i])}


def _time_index_lines(path: str, rel: str) -> Iterator[dict[str, Any]]:
    idx = TimeIndex.read(path)
    for i in range(len(idx)):
        yield {"file": rel, "type": "timeIndexEntry", "i": i, "timestamp": int(idx.timestamps[i]), "offset": int(idx.offsets[i])}


def _txn_lines(path: str, rel: str) -> Iterator[dict[str, Any]]:
    for t in read_txn_index(path):
        yield {
            "file": rel, "type": "abortedTxn", "version": t.version, "producerId": t.producer_id,
            "firstOffset": t.first_offset, "lastOffset": t.last_offset, "lastStableOffset": t.last_stable_offset,
        }


def _epoch_lines(path: str, rel: str) -> Iterator[dict[str, Any]]:
    for e in read_leader_epoch_checkpoint(path):
        yield {"file": rel, "type": "leaderEpochEntry", "epoch": e.epoch, "startOffset": e.start_offset}


def _pm_lines(path: str, rel: str) -> Iterator[dict[str, Any]]:
    pm = read_partition_metadata(path)
    yield {"file": rel, "type": "partitionMetadata", "version": pm.version, "topicId": pm.topic_id}


_JSON: dict[FileKind, Callable[[str, str], Iterator[dict[str, Any]]]] = {
    FileKind.INDEX: _index_lines,
    FileKind.TIME_INDEX: _time_index_lines,
    FileKind.TXN_INDEX: _txn_lines,
    FileKind.PRODUCER_SNAPSHOT: _snapshot_lines,
    FileKind.LEADER_EPOCH_CHECKPOINT: _epoch_lines,
    FileKind.PARTITION_METADATA: _pm_lines,
}


def json_lines(
    path: str, rel: str, kind: FileKind, result: DumpResult | None = None, lossless: bool = False, decoder: str | None = None
) -> Iterator[dict[str, Any]]:
    """Canonical objects of one file of the given kind (a ``.log`` is streamed batch by batch).

    With ``decoder`` (an internal-topic decoder name), record objects gain ``decodedKey`` and
    ``decodedValue`` (or ``decodeError``)."""
    if kind in (FileKind.LOG, FileKind.KRAFT_SNAPSHOT):
        extra = None
        if decoder is not None:

            def extra(batch: Any, r: Any) -> dict[str, Any]:
                control = isinstance(batch, RecordBatch) and batch.is_control
                return decoded_fields(None, r, decoder=decoder, control=control, file=path, position=batch.position)

        with LogReader(path) as reader:
            yield from log_lines(reader.batches(), rel, lossless=lossless, extra=extra)
            if reader.tail is not None and result is not None:
                result.torn_tails.append(reader.tail.message())
        return
    yield from _JSON[kind](path, rel)


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


def _text_log(path: str, out: TextIO, opts: DumpOptions, result: DumpResult) -> None:
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
    with LogReader(path) as reader:
        valid = 0
        for batch in reader.batches():
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
                line += f" isValid: {_b(r.is_valid)} crc: {r.checksum}}}"  # sic: kafka-dump-log prints a stray '}'
            if isinstance(batch, RecordBatch) and batch.is_control:
                line += control_text(r, file=path, position=batch.position)
            parts.append(line)
        if print_data and not (isinstance(batch, RecordBatch) and batch.is_control):
            parts.append(record_text(None, r, decoder=decoder, prefix=prefix, file=path, position=batch.position))
        out.write("".join(parts) + "\n")


def _text_other(path: str, kind: FileKind, out: TextIO) -> None:
    if kind is FileKind.INDEX:
        idx = OffsetIndex.read(path)
        if len(idx) == 0:
            out.write(f"{path} is empty.\n")
        for o, p in zip(idx.offsets.tolist(), idx.positions.tolist(), strict=True):
            out.write(f"offset: {o} position: {p}\n")
    elif kind is FileKind.TIME_INDEX:
        tidx = TimeIndex.read(path)
        for t, o in zip(tidx.timestamps.tolist(), tidx.offsets.tolist(), strict=True):
            out.write(f"timestamp: {t} offset: {o}\n")
    elif kind is FileKind.TXN_INDEX:
        for a in read_txn_index(path):
            out.write(
                f"version: {a.version} producerId: {a.producer_id} firstOffset: {a.first_offset} "
                f"lastOffset: {a.last_offset} lastStableOffset: {a.last_stable_offset}\n"
            )
    elif kind is FileKind.PRODUCER_SNAPSHOT:
        for e in read_producer_snapshot(path):
            line = (
                f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {_opt(e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None)} "
                f"lastTimestamp: {e.timestamp} "
            )
            if e.last_offset >= 0:
                line += (
                    f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                    f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
                )
            out.write(line + "\n")
    elif kind is FileKind.LEADER_EPOCH_CHECKPOINT:
        for ep in read_leader_epoch_checkpoint(path):
            out.write(f"epoch: {ep.epoch} startOffset: {ep.start_offset}\n")
    elif kind is FileKind.PARTITION_METADATA:
        pm = read_partition_metadata(path)
        out.write(f"version: {pm.version} topicId: {pm.topic_id}\n")


# ------------------------------------------------------------------------------------ driver
#: the suffix a segment file gets while it waits for file.delete.delay.ms
DELETED_SUFFIX = ".deleted"


def _targets(paths: list[str], err: TextIO) -> Iterator[tuple[str, str, FileKind]]:
    for p in paths:
        if is_dir(p):
            for full, rel in walk(p):
                k = kind_of(full)
                if k in DUMPED_KINDS:
                    yield full, rel, k  # type: ignore[misc]
        else:
            k = kind_of(p)
            if k is None:
                # kafka-dump-log's rule: dispatch on the suffix alone
                suffix = os.path.splitext(p)[1]
                k = next((x for x in FileKind if x.value == suffix), None)
            if k is None:
                err.write(f"Ignoring unknown file {p}\n")
                continue
            yield p, os.path.basename(p), k


def partition_dirs(root: str) -> list[str]:
    """``root`` if it holds segments, else every directory under it that does (sorted)."""
    found = []
    for dirpath, dirs, names in os.walk(root):
        dirs.sort()
        if any(kind_of(os.path.join(dirpath, n)) is FileKind.LOG for n in names):
            found.append(dirpath)
    return sorted(found)


def _dump_consumed(root: str, opts: DumpOptions, out: TextIO, result: DumpResult, progress: Callable[[str], None] | None) -> None:
    """What a consumer with ``opts.isolation`` receives from each partition directory under ``root``:
    the batches it reads records from (position as in the segment) and those records, in the
    shapes of the plain dump. The directory is loaded read-only (:meth:`kafkalog.log.unified.Log.open`)."""
    from kafkalog.log.isolation import consume_batches
    from kafkalog.log.unified import Log

    base = root if os.path.isdir(root) else os.path.dirname(root)
    for pdir in partition_dirs(root):
        if progress is not None:
            progress(pdir)
        with Log.open(pdir) as lg:
            current = None
            for cb in consume_batches(lg, read_committed=opts.isolation == "read_committed"):
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
                obj = batch_json(cb.batch, rel)
                obj["position"] = cb.position
                out.write(dumps(obj) + "\n")
                first = cb.batch.records()[0].offset if isinstance(cb.batch, LegacyBatch) else None
                for r in cb.records:
                    rec = record_json(cb.batch, r, rel, base_offset=first, lossless=opts.lossless)
                    if decoder is not None:
                        rec.update(decoded_fields(None, r, decoder=decoder, control=False, file=full, position=cb.position))
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
    """
    for p in paths:
        if not exists(p):
            raise FileNotFoundError(p)
    result = DumpResult()
    if opts.isolation is not None:
        for p in paths:
            try:
                _dump_consumed(p, opts, out, result, progress)
            except KafkaLogError as e:
                e.located(file=p)
                result.errors.append(str(e))
                err.write(f"error: {e}\n")
        return result
    for full, rel, kind in _targets(paths, err):
        result.files += 1
        if progress is not None:
            progress(full)
        if not is_url(full) and not os.path.exists(full) and os.path.exists(full + DELETED_SUFFIX):
            full += DELETED_SUFFIX  # retention or the cleaner removed it since the listing: Kafka keeps it this long
        try:
            if opts.fmt == "json":
                for obj in json_lines(full, rel, kind, result, opts.lossless, opts.decoder_for(full)):
                    out.write(dumps(obj))
                    out.write("\n")
            else:
                out.write(f"Dumping {full}\n")
                if kind in (FileKind.LOG, FileKind.KRAFT_SNAPSHOT):
                    _text_log(full, out, opts, result)
                else:
                    _text_other(full, kind, out)
        except BrokenPipeError:
            raise  # our reader went away (`| head`): the command ends quietly (cli.main)
        except KafkaLogError as e:
            e.located(file=full)
            result.errors.append(str(e))
            err.write(f"error: {e}\n")
        except FileNotFoundError as e:
            if exists(os.path.dirname(full) or "."):
                err.write(f"warning: {full}: removed while dumping (by retention or the cleaner)\n")
            else:
                result.errors.append(f"{full}: {e.strerror or e}")
                err.write(f"error: {full}: {e.strerror or e}\n")
        except OSError as e:
            result.errors.append(f"{full}: {e.strerror or e}")
            err.write(f"error: {full}: {e.strerror or e}\n")
    if opts.fmt == "json":
        for t in result.torn_tails:
            err.write(f"warning: {t}\n")
    return result


