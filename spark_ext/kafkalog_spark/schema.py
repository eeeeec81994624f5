"""The columns the source produces and their Arrow types: what planning needs, importable without
the decoder (Spark plans in fresh Python processes, where importing numpy and the columnar decoder
costs more than planning)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

__all__ = ["ARROW_TYPES", "HEADERS_TYPE", "METADATA_COLUMNS", "arrow_schema"]

#: Spark's Kafka source type of ``headers`` (the type :data:`kafkalog.fast.arrow.HEADERS_TYPE` builds; a test holds them equal).
HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))

#: Every column the source can produce, with its Arrow type (what Spark's types map to).
ARROW_TYPES: dict[str, pa.DataType] = {
    "key": pa.binary(),
    "value": pa.binary(),
    "topic": pa.string(),
    "partition": pa.int32(),
    "offset": pa.int64(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestampType": pa.int32(),
    "headers": HEADERS_TYPE,
    "producerId": pa.int64(),
    "producerEpoch": pa.int16(),
    "sequence": pa.int32(),
    "isTransactional": pa.bool_(),
    "leaderEpoch": pa.int32(),
    "segment": pa.string(),
    "position": pa.int64(),
    "decoded": pa.string(),
}
#: The opt-in columns (``includeMetadata=true``), in schema order.
METADATA_COLUMNS = ("producerId", "producerEpoch", "sequence", "isTransactional", "leaderEpoch", "segment", "position")


def arrow_schema(columns: Sequence[str]) -> pa.Schema:
    """The Arrow schema Spark expects for ``columns`` (all nullable, as Spark's schema declares them)."""
    return pa.schema([pa.field(c, ARROW_TYPES[c]) for c in columns])
