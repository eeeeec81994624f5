"""What a broker does with a partition directory (SPEC.md §6): segments, the log (:class:`Log`), producer
state, retention, the log cleaner, segment splitting, whole log dirs and the consumer's isolation levels.

``from kafkalog.log import Log`` loads :mod:`kafkalog.log.unified` on first use, so that importing one
module of this layer does not load them all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkalog.log.unified import FetchIsolation, Log, LogConfig

__all__ = ["FetchIsolation", "Log", "LogConfig"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from kafkalog.log import unified

        return getattr(unified, name)
    raise AttributeError(f"module 'kafkalog.log' has no attribute {name!r}")
