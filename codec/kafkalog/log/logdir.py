"""A whole log dir (one ``log.dirs`` entry) opened and closed as Kafka's LogManager does it (SPEC R-RCV-01).

The marker file ``.kafka_cleanshutdown`` says the dir was shut down cleanly. :meth:`LogDir.open`
deletes it before loading any partition (so a crash while loading counts as unclean), then opens
every ``<topic>-<partition>`` directory with the offsets of the dir's checkpoints: after a clean
shutdown no segment is recovered, after an unclean one every segment from the partition's recovery
point on is (:meth:`kafkalog.log.unified.Log.open`). :meth:`LogDir.close` flushes and closes every log,
writes ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``, and only then
writes the marker again::

    with LogDir.open("/var/lib/kafka/data") as d:
        d.logs[("orders", 0)].append(batch)

A LogDir that is never closed (a crash), or whose ``with`` block raised, leaves no marker, so the
next open recovers.
Directories ending in ``-delete``, ``-future`` or ``-stray`` and the KRaft metadata log
(``__cluster_metadata-0``) are left alone; Kafka manages those separately.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType

from kafkalog.errors import KafkaLogError
from kafkalog.format.checkpoints import read_offset_checkpoint
from kafkalog.format.files import fsync_dir
from kafkalog.log.unified import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    Log,
    LogConfig,
    checkpoint_log_dir,
    parse_topic_partition,
)

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LogDir",
    "format_clean_shutdown",
    "read_clean_shutdown",
    "write_clean_shutdown",
]

log = logging.getLogger(__name__)

#: The marker of a clean shutdown (CleanShutdownFileHandler.CLEAN_SHUTDOWN_FILE_NAME).
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: The KRaft metadata topic, whose log the Raft layer manages rather than LogManager.
METADATA_TOPIC = "__cluster_metadata"
_SPECIAL_DIR_SUFFIXES = ("-delete", "-future", "-stray")


def format_clean_shutdown(broker_epoch: int = -1) -> bytes:
    """The marker's bytes: JSON ``{"version":0,"brokerEpoch":N}`` without spaces or newline, as
    Jackson writes CleanShutdownFileHandler's Content (``-1`` when the epoch is unknown)."""
    return json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")).encode("utf-8")


def read_clean_shutdown(log_dir: str | os.PathLike[str]) -> int | None:
    """The broker epoch in a log dir's marker, or None when it is absent or unreadable (Kafka then
    reads no epoch; the marker's presence alone decides recovery)."""
    try:
        with open(os.path.join(os.fspath(log_dir), CLEAN_SHUTDOWN_FILE), "rb") as f:
            content = json.loads(f.read().decode("utf-8"))
        epoch = content["brokerEpoch"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return epoch if isinstance(epoch, int) and not isinstance(epoch, bool) else None


def write_clean_shutdown(log_dir: str | os.PathLike[str], broker_epoch: int = -1, *, sync: bool = True) -> None:
    """Write the marker in place and fsync it (CleanShutdownFileHandler.write: no temporary file)."""
    with open(os.path.join(os.fspath(log_dir), CLEAN_SHUTDOWN_FILE), "wb") as f:
        f.write(format_clean_shutdown(broker_epoch))
        f.flush()
        if sync:
            os.fsync(f.fileno())


def _checkpoint(path: str) -> dict[tuple[str, int], int]:
    """A log dir checkpoint, or nothing when it is absent or unreadable (LogManager.loadLogs warns and
    falls back: recovery from offset 0, log start at the first segment)."""
    if not os.path.exists(path):
        return {}
    try:
        return read_offset_checkpoint(path)
    except (KafkaLogError, OSError) as e:
        log.warning("could not read %s, using no entries from it: %s", path, e)
        return {}


def _abandon(logs: Iterable[Log]) -> None:
    for lg in logs:
        for seg in lg.segments:
            seg.close_handlers()
        lg.closed = True


class LogDir:
    """The partitions of one log dir, keyed by (topic, partition), with its clean-shutdown state."""

    def __init__(self, path: str, logs: dict[tuple[str, int], Log], had_clean_shutdown: bool, *, sync: bool) -> None:
        self.path = path
        self.logs = logs
        #: the marker was there when the dir was opened: no segment was recovered
        self.had_clean_shutdown = had_clean_shutdown
        self.sync = sync
        self.closed = False

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        config: LogConfig | None = None,
        *,
        topic_configs: Mapping[str, LogConfig] | None = None,
        clock: Callable[[], int] | None = None,
        sync: bool = True,
    ) -> LogDir:
        """Open (creating if needed) a log dir and load its partitions as LogManager.loadLogs does.

        ``topic_configs`` overrides ``config`` per topic. If a partition fails to load, the
        exception propagates and the marker stays deleted, so the next open recovers."""
        d = os.fspath(path)
        os.makedirs(d, exist_ok=True)
        marker = os.path.join(d, CLEAN_SHUTDOWN_FILE)
        had_clean = os.path.exists(marker)
        if had_clean:
            os.unlink(marker)
            if sync:  # beyond Kafka: a power cut must not bring the marker back over recovered-later data
                fsync_dir(d)
        recovery = _checkpoint(os.path.join(d, RECOVERY_POINT_CHECKPOINT))
        starts = _checkpoint(os.path.join(d, LOG_START_OFFSET_CHECKPOINT))
        log.info("%s %s: %s", "loading" if had_clean else "recovering", d,
                 "clean shutdown file found" if had_clean else "no clean shutdown file")
        logs: dict[tuple[str, int], Log] = {}
        try:
            for name in sorted(os.listdir(d)):
                child = os.path.join(d, name)
                if not os.path.isdir(child) or name.endswith(_SPECIAL_DIR_SUFFIXES):
                    continue
                tp = parse_topic_partition(name)
                if tp is None:
                    log.warning("skipping %s: not a <topic>-<partition> directory", child)
                    continue
                if tp[0] == METADATA_TOPIC:
                    continue
                cfg = (topic_configs or {}).get(tp[0], config)
                logs[tp] = Log.open(
                    child, cfg, log_start_offset=starts.get(tp, 0), recovery_point=recovery.get(tp, 0),
                    had_clean_shutdown=had_clean, clock=clock, sync=sync, writable=True,
                )
        except BaseException:
            _abandon(logs.values())  # as a failed broker start: nothing more is written
            raise
        return cls(d, logs, had_clean, sync=sync)

    def close(self, broker_epoch: int = -1) -> None:
        """Shut down cleanly (LogManager.shutdown): flush and close every log, write both offset
        checkpoints, then the marker. Kafka writes it only if the dir was clean at startup or all its
        logs finished loading; a LogDir exists only once all of them have, so it always does."""
        if self.closed:
            return
        for lg in self.logs.values():
            lg.close()  # flushes the active segment too, then closes
        checkpoint_log_dir(self.path, self.logs.values(), sync=self.sync)
        write_clean_shutdown(self.path, broker_epoch, sync=self.sync)
        self.closed = True

    def abandon(self) -> None:
        """Release the files without writing anything, as a crash would: no marker, so the next open recovers."""
        if not self.closed:
            _abandon(self.logs.values())
            self.closed = True

    def __enter__(self) -> LogDir:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        """Close cleanly, unless the block raised: a write may have failed half-way, so the dir is
        left as after a crash and recovered at the next open."""
        if exc_type is None:
            self.close()
        else:
            self.abandon()

    def __repr__(self) -> str:
        return f"LogDir(path={self.path!r}, logs={len(self.logs)}, had_clean_shutdown={self.had_clean_shutdown})"
