"""The canonical JSON form of Kafka's files (one object per line), in both directions.

The field names and values are those of Kafka's own reader classes (see SPEC.md, "Canonical
JSON"): ``dump`` produces them from batches, ``build`` turns the same lines back into a ``.log``.
Bytes are lowercase hex, ``null`` stands for null. The lossless form (``dump --json --lossless``) adds what
Kafka's view hides, so that ``build`` gives back the stored bytes: stored timestamps, and each compressed
batch's payload as stored (SPEC.md §7.6).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from kafkalog.errors import BuildError, KafkaLogError
from kafkalog.format.compression import Codec
from kafkalog.format.records.control import ControlType, control_type_of, parse_end_txn_marker
from kafkalog.format.records.legacy import LegacyBatch, LegacyBatchBuilder
from kafkalog.format.records.record import LegacyRecord, Record, TimestampType
from kafkalog.format.records.stream import Batch
from kafkalog.format.records.v2 import HEADER_SIZE, RecordBatch, RecordBatchBuilder

__all__ = ["batch_json", "build_log", "dumps", "record_json", "log_lines"]


def _hex(b: bytes | None) -> str | None:
    return None if b is None else b.hex()


def dumps(obj: dict[str, Any]) -> str:
    """One canonical JSON line (compact separators, key order kept)."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def batch_json(batch: Batch, file: str, *, lossless: bool = False) -> dict[str, Any]:
    """The ``batch`` object of one batch.

    With ``lossless``, a compressed batch also carries ``payload``: its compressed records (a v0/v1
    wrapper's value) as stored, in base64. Other clients compress with other settings than Kafka's
    (a gzip header with a time and level 9, other lz4 block sizes...), so recompressing the records
    cannot give their bytes back; ``build`` writes this payload while the records are unchanged."""
    d: dict[str, Any] = {
        "file": file,
        "type": "batch",
        "position": batch.position,
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "magic": batch.magic,
        "sizeInBytes": batch.size_in_bytes,
        "crc": batch.crc,
        "isValid": batch.is_valid,
        "compression": batch.compression.label,
        "timestampType": batch.timestamp_type.value,
        "maxTimestamp": batch.max_timestamp,
        "attributes": batch.attributes,
    }
    if isinstance(batch, RecordBatch):
        d.update(
            lastOffsetDelta=batch.last_offset_delta,
            baseTimestamp=batch.base_timestamp,
            producerId=batch.producer_id,
            producerEpoch=batch.producer_epoch,
            baseSequence=batch.base_sequence,
            lastSequence=batch.last_sequence,
            partitionLeaderEpoch=batch.partition_leader_epoch,
            count=batch.count,
            isTransactional=batch.is_transactional,
            isControlBatch=batch.is_control,
            deleteHorizonMs=batch.delete_horizon_ms,
        )
    if lossless and batch.compression is not Codec.NONE:
        stored = batch.data[HEADER_SIZE:] if isinstance(batch, RecordBatch) else batch.msg.value
        d["payload"] = base64.b64encode(stored or b"").decode("ascii")
    return d


def record_json(batch: Batch, record: Record, file: str, *, base_offset: int | None = None, lossless: bool = False) -> dict[str, Any]:
    """The ``record`` object of one record of ``batch``.

    With ``lossless``, v2 records also carry ``timestampDelta`` (the stored delta, which Kafka's
    view hides under LogAppendTime), and v0/v1 inner messages whose stored timestamp differs from
    the reported one ``createTimestamp``, so that ``build`` can give back identical bytes.
    """
    d: dict[str, Any] = {
        "file": file,
        "type": "record",
        "batchBaseOffset": batch.base_offset if base_offset is None else base_offset,
        "offset": record.offset,
        "sequence": record.sequence,
        "timestamp": record.timestamp,
        "sizeInBytes": record.size_in_bytes,
        "keySize": record.key_size,
        "valueSize": record.value_size,
        "key": _hex(record.key),
        "value": _hex(record.value),
    }
    if isinstance(record, LegacyRecord):
        d["checksum"] = record.checksum
        d["isValid"] = record.is_valid
        d["recordAttributes"] = record.attributes
        if lossless and record.create_timestamp != record.timestamp:
            d["createTimestamp"] = record.create_timestamp
    d["headers"] = [{"key": k, "value": _hex(v)} for k, v in record.headers]
    if isinstance(batch, RecordBatch):
        if lossless:
            d["timestampDelta"] = record.create_timestamp - batch.base_timestamp
        if batch.is_control:
            try:
                ctype, _ = control_type_of(record.key)
                d["controlType"] = ctype.name
                if ctype in (ControlType.ABORT, ControlType.COMMIT):
                    d["coordinatorEpoch"] = parse_end_txn_marker(ctype, record.value).coordinator_epoch
            except KafkaLogError as e:
                raise e.located(file=batch.file, position=batch.position, offset=record.offset) from None
    return d


def log_lines(
    batches: Iterable[Batch],
    file: str,
    *,
    lossless: bool = False,
    extra: Callable[[Batch, Record], dict[str, Any]] | None = None,
) -> Iterator[dict[str, Any]]:
    """Canonical objects for every batch and record of a ``.log`` (records decoded per batch).

    ``extra(batch, record)`` may add fields to each record object (``--decode`` adds
    ``decodedKey``/``decodedValue``)."""
    for batch in batches:
        recs = batch.records()
        base = recs[0].offset if isinstance(batch, LegacyBatch) and recs else None
        yield batch_json(batch, file, lossless=lossless)
        for r in recs:
            d = record_json(batch, r, file, base_offset=base, lossless=lossless)
            if extra is not None:
                d.update(extra(batch, r))
            yield d


# ----------------------------------------------------------------------------------- build
_REQUIRED_BATCH = ("baseOffset", "lastOffset", "magic", "compression", "timestampType", "maxTimestamp", "attributes")
_REQUIRED_V2 = ("lastOffsetDelta", "baseTimestamp", "producerId", "producerEpoch", "baseSequence", "partitionLeaderEpoch")
_REQUIRED_RECORD = ("offset", "timestamp", "key", "value")


def _unhex(v: Any, where: str) -> bytes | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise BuildError(f"{where}: expected a hex string or null, got {v!r}")
    try:
        return bytes.fromhex(v)
    except ValueError:
        raise BuildError(f"{where}: not a hex string: {v[:40]!r}") from None


def _need(obj: dict[str, Any], keys: Iterable[str], where: str) -> None:
    missing = [k for k in keys if k not in obj]
    if missing:
        raise BuildError(f"{where}: missing field(s) {', '.join(missing)}")


def _stored_payload(b: dict[str, Any], codec: Codec, where: str) -> bytes | None:
    """The compressed payload a lossless ``batch`` object carries as stored (None when it has none)."""
    value = b.get("payload")
    if value is None or codec is Codec.NONE:
        return None
    if not isinstance(value, str):
        raise BuildError(f"{where}: payload: expected a base64 string, got {value!r}")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise BuildError(f"{where}: payload: not base64: {value[:40]!r}") from None


def _record_content(batch: Batch) -> list[tuple[Any, ...]]:
    """What the lossless JSON holds of each record of ``batch`` (for v0/v1 the attributes too, which
    a v2 record's object leaves out, R-REC-04)."""
    legacy = isinstance(batch, LegacyBatch)
    return [(r.offset, r.timestamp, r.create_timestamp, r.key, r.value, tuple(r.headers), r.attributes if legacy else 0)
            for r in batch.records()]


def _as_stored(stored: bytes, rebuilt: bytes, make: Callable[[bytes], bytes], kind: type[RecordBatch] | type[LegacyBatch]) -> bytes:
    """``make(stored)`` (the batch with the payload as stored) when it holds exactly the records of
    ``rebuilt`` (the same batch with them compressed as Kafka compresses), else ``rebuilt``: the
    stored payload gives back another client's bytes while the JSON's records are those it holds,
    and records a user edited (or a payload that does not read) are compressed with Kafka's settings."""
    candidate = make(stored)
    try:
        same = _record_content(kind(candidate)) == _record_content(kind(rebuilt))
    except KafkaLogError:
        return rebuilt
    return candidate if same else rebuilt


def _build_batch(b: dict[str, Any], recs: list[tuple[int, dict[str, Any]]], where: str) -> bytes:
    magic = b["magic"]
    try:
        codec = Codec.from_name(b["compression"])
        tstype = TimestampType(b["timestampType"])
    except (KafkaLogError, ValueError) as e:
        raise BuildError(f"{where}: {e}") from None
    stored = _stored_payload(b, codec, where)
    if magic == 2:
        _need(b, _REQUIRED_V2, where)
        lat = tstype is TimestampType.LOG_APPEND_TIME
        builder = RecordBatchBuilder(
            b["baseOffset"],
            compression=codec,
            timestamp_type=tstype,
            log_append_time=b["maxTimestamp"] if lat else None,
            producer_id=b["producerId"],
            producer_epoch=b["producerEpoch"],
            base_sequence=b["baseSequence"],
            is_transactional=bool(b.get("isTransactional", False)),
            is_control=bool(b.get("isControlBatch", False)),
            partition_leader_epoch=b["partitionLeaderEpoch"],
            delete_horizon_ms=b.get("deleteHorizonMs"),
        )
        builder.base_timestamp = b["baseTimestamp"]
        for line_no, r in recs:
            rw = f"line {line_no}"
            _need(r, _REQUIRED_RECORD, rw)
            ts = r["timestamp"]
            if "timestampDelta" in r:
                ts = b["baseTimestamp"] + r["timestampDelta"]
            headers = [(h["key"], _unhex(h.get("value"), rw)) for h in r.get("headers", [])]
            try:
                builder.append(ts, _unhex(r["key"], rw), _unhex(r["value"], rw), headers, offset=r["offset"])
            except ValueError as e:
                raise BuildError(f"{rw}: {e}") from None
        header = {"last_offset_delta": b["lastOffsetDelta"], "base_timestamp": b["baseTimestamp"],
                  "max_timestamp": b["maxTimestamp"], "attributes": b["attributes"]}
        rebuilt = builder.build(**header)
        if stored is None:
            return rebuilt
        return _as_stored(stored, rebuilt, lambda payload: builder.build(**header, payload=payload), RecordBatch)
    if magic in (0, 1):
        lat = tstype is TimestampType.LOG_APPEND_TIME
        builder_l = LegacyBatchBuilder(
            magic, b["baseOffset"], compression=codec, timestamp_type=tstype,
            log_append_time=b["maxTimestamp"] if lat else None,
        )
        if codec is Codec.NONE and len(recs) != 1:
            raise BuildError(f"{where}: an uncompressed magic {magic} entry holds exactly one record, got {len(recs)}")
        for line_no, r in recs:
            rw = f"line {line_no}"
            _need(r, _REQUIRED_RECORD, rw)
            attrs = r.get("recordAttributes", b["attributes"] if codec is Codec.NONE else 0)
            try:
                builder_l.append(
                    r.get("createTimestamp", r["timestamp"]), _unhex(r["key"], rw), _unhex(r["value"], rw),
                    offset=r["offset"], attributes=attrs, keep_timestamp="createTimestamp" in r,
                )
            except ValueError as e:
                raise BuildError(f"{rw}: {e}") from None
        wrapper = {"wrapper_timestamp": b["maxTimestamp"], "wrapper_attributes": b["attributes"]}
        rebuilt = builder_l.build(**wrapper)
        if stored is None:
            return rebuilt
        # the stored wrapper's offset too: a client leaves it 0
        return _as_stored(
            stored, rebuilt, lambda payload: builder_l.build(**wrapper, wrapper_offset=b["lastOffset"], payload=payload), LegacyBatch
        )
    raise BuildError(f"{where}: unsupported magic {magic!r}")


def build_log(lines: Iterable[str]) -> Iterator[bytes]:
    """Turn canonical JSON lines into ``.log`` bytes, one batch at a time.

    Batch lines give the batch fields (crc, sizes and positions are recomputed); the record lines
    that follow give its records. Lines of other types (index entries, ...) are ignored.
    """
    current: tuple[int, dict[str, Any]] | None = None
    recs: list[tuple[int, dict[str, Any]]] = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise BuildError(f"line {no}: not JSON ({e.msg})") from None
        if not isinstance(obj, dict):
            raise BuildError(f"line {no}: expected a JSON object")
        kind = obj.get("type")
        if kind == "batch":
            if current is not None:
                yield _build_batch(current[1], recs, f"line {current[0]}")
            _need(obj, _REQUIRED_BATCH, f"line {no}")
            current, recs = (no, obj), []
        elif kind == "record":
            if current is None:
                raise BuildError(f"line {no}: a record line before any batch line")
            recs.append((no, obj))
    if current is not None:
        yield _build_batch(current[1], recs, f"line {current[0]}")
