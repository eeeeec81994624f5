"""The result of decoding one internal-topic record."""

from __future__ import annotations

from typing import Any

from kafkalog.internal.wire import kafka_json

__all__ = ["Decoded"]


class Decoded:
    """One decoded record: ``key`` and ``value`` are JSON-able objects (Kafka's JSON of them);
    ``value`` is ``None`` for a tombstone (``tombstone`` is then true) or when the decoder prints no
    payload. ``key_type``/``value_type`` name the Kafka messages read; ``record_type`` is the key's
    record type (or metadata api key, or control type id); ``version`` the value's version.

    :attr:`key_text` / :attr:`value_text` are what kafka-dump-log prints after ``key:`` and
    ``payload:`` (``None``: that part is not printed).
    """

    __slots__ = ("key", "value", "key_type", "value_type", "record_type", "version", "_key_text", "_value_text")

    def __init__(
        self,
        key: Any,
        value: Any,
        key_type: str | None,
        value_type: str | None,
        record_type: int | None,
        version: int | None,
        *,
        key_text: str | None = None,
        value_text: str | None = None,
    ) -> None:
        self.key = key
        self.value = value
        self.key_type = key_type
        self.value_type = value_type
        self.record_type = record_type
        self.version = version
        self._key_text = key_text
        self._value_text = value_text

    @property
    def tombstone(self) -> bool:
        return self.value is None and self.value_type is None and self.key_type is not None

    @property
    def key_text(self) -> str | None:
        if self._key_text is not None:
            return self._key_text
        return None if self.key is None else kafka_json(self.key)

    @property
    def value_text(self) -> str | None:
        if self._value_text is not None:
            return self._value_text
        if self.value is not None:
            return kafka_json(self.value)
        return "<DELETE>" if self.tombstone else None

    def as_tuple(self) -> tuple[Any, Any]:
        return self.key, self.value

    def __repr__(self) -> str:
        return f"Decoded(key={self.key!r}, value={self.value!r})"
