"""The Apache Kafka releases kafkalog follows, as ``--kafka-version`` names them.

Both the internal topics' decoders (:mod:`kafkalog.internal.releases`, by release line) and the log layer
(:class:`kafkalog.log.unified.LogConfig`, where a patch release can matter: KAFKA-806 is in 4.0.1) take
their release from here, so the two layers name and check releases the same way.
"""

from __future__ import annotations

__all__ = ["NEWEST_VERSION", "RELEASES", "Version", "parse_version"]

#: The release lines kafkalog follows, oldest first.
RELEASES: tuple[str, ...] = ("4.0", "4.1", "4.2", "4.3", "4.4")

#: A Kafka release, ``(major, minor, patch)``.
Version = tuple[int, int, int]

#: The default: the newest release (4.4.0).
NEWEST_VERSION: Version = (4, 4, 0)


def parse_version(text: str | None) -> Version:
    """``"4.1.2"`` -> ``(4, 1, 2)``; a release line names its first release (``"4.0"`` -> ``(4, 0, 0)``); ``None``
    -> the newest. Raises ``ValueError`` naming the known lines for any other text."""
    if text is None:
        return NEWEST_VERSION
    parts = text.split(".")
    if ".".join(parts[:2]) not in RELEASES or len(parts) > 3 or not all(p.isdigit() for p in parts):
        raise ValueError(
            f"unknown Kafka release {text!r} (known: {', '.join(RELEASES)}, or one of their patch releases)"
        )
    return int(parts[0]), int(parts[1]), int(parts[2]) if len(parts) == 3 else 0
