"""Every byte layout of Kafka's on-disk files, declared once with ``construct``.

SPEC.md's byte tables mirror these declarations one to one (a test compares them). The hot
paths (``records/``, ``index.py``) read the same layouts with ``struct``/numpy and are tested
against these declarations; everything cold (``explain``, the Kaitai export, validation of
odd inputs) uses them directly. Names follow SPEC.md.
"""

from __future__ import annotations

from construct import (
    Bytes,
    Const,
    Construct,
    If,
    Int8sb,
    Int16sb,
    Int32sb,
    Int32ub,
    Int64sb,
    PrefixedArray,
    Struct,
    this,
)
from construct import (
    ZigZag as _ZigZag,
)

__all__ = [
    "ABORTED_TXN_ENTRY",
    "CONTROL_RECORD_KEY",
    "END_TXN_MARKER_VALUE",
    "LEGACY_MESSAGE",
    "LEGACY_MESSAGE_V0",
    "LEGACY_MESSAGE_V1",
    "LOG_ENTRY_HEADER",
    "LZ4_FRAME_HEADER",
    "OFFSET_INDEX_ENTRY",
    "PRODUCER_SNAPSHOT",
    "PRODUCER_SNAPSHOT_ENTRY",
    "RECORD_BATCH_V2_HEADER",
    "RECORD_HEADER",
    "RECORD_V2",
    "SCHEMAS",
    "TIME_INDEX_ENTRY",
    "XERIAL_SNAPPY_HEADER",
    "ZigZagVarint",
]

#: Zig-zag encoded LEB128 integer (Kafka's varint/varlong): construct's ZigZag over VarInt.
ZigZagVarint: Construct = _ZigZag

#: The 12 bytes every entry of a ``.log`` starts with, whatever its magic (SPEC §3.1).
LOG_ENTRY_HEADER = Struct(
    "offset" / Int64sb,  # v2: baseOffset; v0/v1: the message's (or wrapper's last) offset
    "size" / Int32sb,  # bytes that follow this field
)

#: Legacy message, magic 0 (Kafka 0.8-0.9). CRC-32 covers magic..end.
LEGACY_MESSAGE_V0 = Struct(
    "offset" / Int64sb,
    "messageSize" / Int32sb,
    "crc" / Int32ub,
    "magic" / Const(0, Int8sb),
    "attributes" / Int8sb,
    "keyLength" / Int32sb,
    "key" / If(this.keyLength >= 0, Bytes(this.keyLength)),
    "valueLength" / Int32sb,
    "value" / If(this.valueLength >= 0, Bytes(this.valueLength)),
)

#: Legacy message, magic 1 (Kafka 0.10): adds an 8-byte timestamp after the attributes.
LEGACY_MESSAGE_V1 = Struct(
    "offset" / Int64sb,
    "messageSize" / Int32sb,
    "crc" / Int32ub,
    "magic" / Const(1, Int8sb),
    "attributes" / Int8sb,
    "timestamp" / Int64sb,
    "keyLength" / Int32sb,
    "key" / If(this.keyLength >= 0, Bytes(this.keyLength)),
    "valueLength" / Int32sb,
    "value" / If(this.valueLength >= 0, Bytes(this.valueLength)),
)

#: A legacy message of either magic, chosen by the magic byte at offset 16.
LEGACY_MESSAGE = Struct(
    "offset" / Int64sb,
    "messageSize" / Int32sb,
    "crc" / Int32ub,
    "magic" / Int8sb,
    "attributes" / Int8sb,
    "timestamp" / If(this.magic == 1, Int64sb),
    "keyLength" / Int32sb,
    "key" / If(this.keyLength >= 0, Bytes(this.keyLength)),
    "valueLength" / Int32sb,
    "value" / If(this.valueLength >= 0, Bytes(this.valueLength)),
)

#: Record batch header, magic 2 (Kafka 0.11+): 61 bytes. CRC-32C covers attributes..end.
RECORD_BATCH_V2_HEADER = Struct(
    "baseOffset" / Int64sb,
    "batchLength" / Int32sb,
    "partitionLeaderEpoch" / Int32sb,
    "magic" / Const(2, Int8sb),
    "crc" / Int32ub,
    "attributes" / Int16sb,
    "lastOffsetDelta" / Int32sb,
    "baseTimestamp" / Int64sb,
    "maxTimestamp" / Int64sb,
    "producerId" / Int64sb,
    "producerEpoch" / Int16sb,
    "baseSequence" / Int32sb,
    "recordsCount" / Int32sb,
)

#: One record header (key is UTF-8, value may be null: length -1).
RECORD_HEADER = Struct(
    "headerKeyLength" / ZigZagVarint,
    "headerKey" / Bytes(this.headerKeyLength),
    "headerValueLength" / ZigZagVarint,
    "headerValue" / If(this.headerValueLength >= 0, Bytes(this.headerValueLength)),
)

#: One record inside a v2 batch (after decompression).
RECORD_V2 = Struct(
    "length" / ZigZagVarint,
    "attributes" / Int8sb,
    "timestampDelta" / ZigZagVarint,
    "offsetDelta" / ZigZagVarint,
    "keyLength" / ZigZagVarint,
    "key" / If(this.keyLength >= 0, Bytes(this.keyLength)),
    "valueLength" / ZigZagVarint,
    "value" / If(this.valueLength >= 0, Bytes(this.valueLength)),
    "headers" / PrefixedArray(ZigZagVarint, RECORD_HEADER),
)

#: Key of a control record (a record of a batch with the control attribute bit).
CONTROL_RECORD_KEY = Struct(
    "version" / Int16sb,
    "type" / Int16sb,  # 0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3/4 SNAPSHOT_HEADER/FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS
)

#: Value of an ABORT or COMMIT control record.
END_TXN_MARKER_VALUE = Struct(
    "version" / Int16sb,
    "coordinatorEpoch" / Int32sb,
)

#: One ``.index`` entry: 8 bytes, offset relative to the segment's base offset.
OFFSET_INDEX_ENTRY = Struct(
    "relativeOffset" / Int32sb,
    "position" / Int32sb,
)

#: One ``.timeindex`` entry: 12 bytes.
TIME_INDEX_ENTRY = Struct(
    "timestamp" / Int64sb,
    "relativeOffset" / Int32sb,
)

#: One ``.txnindex`` entry: 34 bytes, an aborted transaction's range.
ABORTED_TXN_ENTRY = Struct(
    "version" / Int16sb,
    "producerId" / Int64sb,
    "firstOffset" / Int64sb,
    "lastOffset" / Int64sb,
    "lastStableOffset" / Int64sb,
)

#: One producer entry of a ``.snapshot`` file (version 1): 46 bytes.
PRODUCER_SNAPSHOT_ENTRY = Struct(
    "producerId" / Int64sb,
    "epoch" / Int16sb,
    "lastSequence" / Int32sb,
    "lastOffset" / Int64sb,
    "offsetDelta" / Int32sb,
    "timestamp" / Int64sb,
    "coordinatorEpoch" / Int32sb,
    "currentTxnFirstOffset" / Int64sb,
)

#: A producer-state ``.snapshot`` file. CRC-32C covers everything after the crc field.
PRODUCER_SNAPSHOT = Struct(
    "version" / Int16sb,
    "crc" / Int32ub,
    "entries" / PrefixedArray(Int32sb, PRODUCER_SNAPSHOT_ENTRY),
)

#: Kafka's snappy stream framing (snappy-java's SnappyOutputStream): 16-byte header, then chunks.
XERIAL_SNAPPY_HEADER = Struct(
    "magic" / Const(b"\x82SNAPPY\x00"),
    "version" / Int32sb,
    "compatibleVersion" / Int32sb,
)

#: LZ4 frame header as Kafka writes it (no content size): magic, FLG, BD, HC.
LZ4_FRAME_HEADER = Struct(
    "magic" / Const(b"\x04\x22\x4d\x18"),
    "flg" / Int8sb,
    "bd" / Int8sb,
    "hc" / Int8sb,
)

#: All layouts by the name SPEC.md gives them (used by the spec-table test and the .ksy export).
SCHEMAS: dict[str, Construct] = {
    "LogEntryHeader": LOG_ENTRY_HEADER,
    "LegacyMessageV0": LEGACY_MESSAGE_V0,
    "LegacyMessageV1": LEGACY_MESSAGE_V1,
    "RecordBatchV2Header": RECORD_BATCH_V2_HEADER,
    "RecordV2": RECORD_V2,
    "RecordHeader": RECORD_HEADER,
    "ControlRecordKey": CONTROL_RECORD_KEY,
    "EndTxnMarkerValue": END_TXN_MARKER_VALUE,
    "OffsetIndexEntry": OFFSET_INDEX_ENTRY,
    "TimeIndexEntry": TIME_INDEX_ENTRY,
    "AbortedTxnEntry": ABORTED_TXN_ENTRY,
    "ProducerSnapshot": PRODUCER_SNAPSHOT,
    "ProducerSnapshotEntry": PRODUCER_SNAPSHOT_ENTRY,
    "XerialSnappyHeader": XERIAL_SNAPPY_HEADER,
    "Lz4FrameHeader": LZ4_FRAME_HEADER,
}

