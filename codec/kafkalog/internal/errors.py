"""Errors for internal-topic records that cannot be decoded (each names file, position, offset).

``position`` is the byte position of the batch holding the record. ``kafka_text`` is what
kafka-dump-log prints for that record instead of the decoded key (``text_part`` "key") or payload
(``text_part`` "payload"); ``None`` where Kafka's tool stops with an exception instead.
"""

from __future__ import annotations

from kafkalog.errors import KafkaLogError

__all__ = ["InternalRecordError", "MalformedInternalRecordError", "UnknownRecordTypeError", "UnknownRecordVersionError"]


class InternalRecordError(KafkaLogError):
    """An internal topic's key or value could not be decoded."""

    def __init__(
        self,
        message: str,
        *,
        kafka_text: str | None = None,
        file: str | None = None,
        position: int | None = None,
        offset: int | None = None,
    ) -> None:
        self.kafka_text = kafka_text
        #: where kafka-dump-log prints ``kafka_text``: after ``key:`` or after ``payload:``
        self.text_part = "key"
        super().__init__(message, file=file, position=position, offset=offset)


class UnknownRecordTypeError(InternalRecordError):
    """The key (or metadata frame, or control record) names a record type Kafka does not define."""


class UnknownRecordVersionError(InternalRecordError):
    """The key or value declares a version its record type does not have."""


class MalformedInternalRecordError(InternalRecordError):
    """The bytes do not form the declared record (too short, bad lengths, trailing garbage...)."""
