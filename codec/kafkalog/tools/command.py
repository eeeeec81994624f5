"""What every ``kafkalog`` subcommand shares: exit codes, the progress line, usage errors and the
check that a path holds Kafka files."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    import argparse

    from kafkalog.errors import CrcMismatchError
    from kafkalog.format.records.stream import OnCorrupt
    from kafkalog.format.tiered_aiven import Keyring
    from kafkalog.log.source import PartitionFiles

__all__ = [
    "EXIT_BAD_DATA", "EXIT_IO", "EXIT_OK", "EXIT_USAGE", "Progress", "UsageError", "add_crc_options", "add_read_options",
    "add_tiered_options", "corrupt_failure", "crc_options", "is_kafka_file", "check_tiered_paths", "kafka_version_arg", "missing_or_empty",
    "only_internal", "parse_time", "partition_filter", "partitions_of", "private_keys", "unlink", "writer_version_arg",
]

EXIT_OK = 0
EXIT_BAD_DATA = 1
EXIT_USAGE = 2
EXIT_IO = 3


class Progress:
    """A one-line progress indicator on stderr, shown only when stderr is a terminal."""

    def __init__(self, stream: TextIO, label: str) -> None:
        self.stream = stream
        self.label = label
        self.enabled = stream.isatty()
        self.count = 0
        self.total: int | None = None
        self.last = 0.0

    def set_total(self, total: int) -> None:
        """The number of files the run will go through (shown as ``count/total``)."""
        self.total = total

    def __call__(self, item: str) -> None:
        self.count += 1
        now = time.monotonic()
        if self.enabled and now - self.last > 0.1:
            self.last = now
            short = item if len(item) < 60 else "..." + item[-57:]
            done = f"{self.count}/{self.total}" if self.total else str(self.count)
            self.stream.write(f"\r\x1b[K{self.label} {done} files: {short}")
            self.stream.flush()

    def done(self) -> None:
        if self.enabled and self.count:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class UsageError(Exception):
    """A command-line mistake found after parsing: reported with the subcommand's usage, exit 2."""


def parse_time(value: str) -> int:
    """A time given on the command line (``export --start-time``, ``cat -o s@``) as milliseconds
    since the epoch: a number is taken as such, anything else as an ISO 8601 time (``Z`` or an
    offset for its zone; none: UTC)."""
    from datetime import UTC, datetime, timedelta

    try:
        return int(value)
    except ValueError:
        pass
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{value!r} is neither milliseconds since the epoch nor an ISO 8601 time") from None
    # in whole milliseconds, not through a float's seconds (.123 s is not 123 ms as a float times 1000)
    return ((t if t.tzinfo else t.replace(tzinfo=UTC)) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def kafka_version_arg(text: str) -> str:
    """``--kafka-version`` of the readers (dump, groups): a known release line, one of its patch releases, or
    ``auto`` (the release the data says: :mod:`kafkalog.internal.detect`); argparse reports others."""
    return text if text == "auto" else writer_version_arg(text)


def writer_version_arg(text: str) -> str:
    """``--kafka-version`` of the writers (write-case, compact), whose log layer's behaviour no record
    shows: a known release line or one of its patch releases; argparse reports others, ``auto`` too."""
    import argparse

    from kafkalog.format.releases import parse_version

    if text == "auto":
        raise argparse.ArgumentTypeError("auto reads the release from the records; a writer needs a release: X.Y[.Z]")
    try:
        parse_version(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def has_kafka_files(directory: str, wanted: Callable[[str], bool]) -> bool:
    """Whether any file under ``directory`` (recursively) has a name ``wanted`` accepts; stops at the first."""
    return any(any(wanted(n) for n in names) for _dirpath, _dirs, names in os.walk(directory))


def missing_or_empty(command: str, paths: Sequence[str], wanted: Callable[[str], bool]) -> int | None:
    """Exit 3 with a message naming the first path that does not exist or holds no Kafka files."""
    from kafkalog.format.files import is_url

    for path in paths:
        if is_url(path):
            continue  # object storage: the command reports a missing path or refused credentials when it reads
        if not os.path.exists(path):
            print(f"kafkalog {command}: no such file or directory: {path}", file=sys.stderr)
            return EXIT_IO
        if not os.access(path, os.R_OK):
            print(f"kafkalog {command}: cannot read {path}: permission denied", file=sys.stderr)
            return EXIT_IO
        if os.path.isdir(path) and not has_kafka_files(path, wanted):
            print(f"kafkalog {command}: no Kafka files in {path} (no .log, .index, .timeindex, .txnindex, .snapshot, "
                  "leader-epoch-checkpoint or partition.metadata under it)", file=sys.stderr)
            return EXIT_IO
    return None


def add_tiered_options(
    parser: argparse.ArgumentParser,
    across: str = "as one log: each offset once; a hole between segments in range is data loss (exit 1; --allow-gaps reads on)",
) -> None:
    """``--tiered PREFIX`` and ``--private-key ID=FILE`` (repeatable), as every command that reads
    partitions across tiers takes them (SPEC D.6); ``across`` says what the command makes of it."""
    parser.add_argument("--tiered", metavar="PREFIX", help=(
        "read each partition across tiers: the segments Aiven's tiered-storage plug-in stored under PREFIX (a "
        "directory or s3://...), then the broker's under the PATHs (its data dir or partition dirs, optional), "
        f"{across}"))
    parser.add_argument("--private-key", action="append", metavar="ID=FILE", help=(
        "for tiered segments Aiven's plug-in encrypted: the private key (PEM) of key pair ID, as the plug-in's "
        "encryption.key.pairs.ID.private.key.file; repeatable"))


def add_read_options(parser: argparse.ArgumentParser, *, deleted: bool = True) -> None:
    """``--include-internal`` and (``deleted``) ``--include-deleted``, as every command that reads
    records as a consumer takes them (SPEC R-VAL-10, R-VAL-11)."""
    parser.add_argument("--include-internal", action="store_true", help=(
        "also read Kafka's internal topics (__consumer_offsets, __transaction_state, __share_group_state, "
        "__cluster_metadata, __remote_log_metadata), left out by default as Kafka's consumers leave them out "
        "(exclude.internal.topics=true); a topic named with -t is read whatever it is"))
    if deleted:
        parser.add_argument("--include-deleted", action="store_true", help=(
            "also read the records below each partition's log start offset (deleted by DeleteRecords or retention, "
            "their segment not yet) that the files still hold; by default reads start at the log start offset, as a "
            "consumer's do"))


def partition_filter(args: argparse.Namespace) -> Callable[[str, int], bool]:
    """Which partitions the command line takes: its ``-t``/``-p`` (when the command has them) and
    the internal-topic rule (:func:`kafkalog.log.reads.includes_topic`)."""
    from kafkalog.log.reads import includes_topic

    topics = set(args.topic) if getattr(args, "topic", None) else None
    parts = set(args.partition) if getattr(args, "partition", None) else None
    internal = bool(getattr(args, "include_internal", False))
    return lambda t, p: includes_topic(t, topics, include_internal=internal) and (parts is None or p in parts)


def only_internal(command: str, args: argparse.Namespace) -> str:
    """What a reading command says when every partition it found is of a Kafka internal topic that
    the rule left out: a consumer of every topic receives nothing, which is not an error."""
    where = " ".join(args.paths + ([args.tiered] if args.tiered else []))
    return (f"kafkalog {command}: {where} holds only Kafka's internal topics, left out as a consumer leaves them out "
            "(name one with -t, or add --include-internal)")
def add_crc_options(parser: argparse.ArgumentParser) -> None:
    """``--skip-corrupt`` and ``--no-crc``, as every command that returns records takes them: by
    default a batch whose CRC does not match fails the command (SPEC R-VAL-09)."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--skip-corrupt", action="store_true", help=(
        "read past a batch whose CRC does not match, leaving its records out, with a warning naming it; without it "
        "such a batch fails the command (exit 1) naming the file, byte position and offset"))
    g.add_argument("--no-crc", action="store_true", help="do not check batch CRCs (faster; a corrupt batch's records come out as stored)")


def crc_options(args: argparse.Namespace, command: str) -> tuple[bool, OnCorrupt]:
    """(verify_crc, on_corrupt) for the readers from ``--no-crc`` / ``--skip-corrupt``: each
    skipped batch is one warning line on stderr."""
    if args.skip_corrupt:
        def warn(err: CrcMismatchError) -> None:
            print(f"kafkalog {command}: warning: {err} (--skip-corrupt: its records left out, reading on)", file=sys.stderr)

        return True, warn
    return not args.no_crc, "fail"


def corrupt_failure(command: str, err: CrcMismatchError) -> int:
    """Report a corrupt batch that failed the command (one line on stderr) and return its exit code."""
    print(f"kafkalog {command}: {err} (--skip-corrupt reads past it with a warning)", file=sys.stderr)
    return EXIT_BAD_DATA


def private_keys(args: argparse.Namespace) -> Keyring | None:
    """The keyring ``--private-key`` gives (None without one); a malformed ``ID=FILE`` is a usage
    error, an unreadable file an OSError (exit 3)."""
    if not args.private_key:
        return None
    from kafkalog.format.tiered_aiven import read_private_keys

    try:
        return read_private_keys(args.private_key)
    except ValueError as e:
        raise UsageError(str(e)) from None


def check_tiered_paths(args: argparse.Namespace) -> None:
    """With ``--tiered`` the PATHs are the broker's local directories (none is fine); without it
    at least one PATH is needed."""
    from kafkalog.format.files import is_url

    if args.tiered is None:
        if not args.paths:
            raise UsageError("no PATH given")
        return
    for p in args.paths:
        if is_url(p) or os.path.isfile(p):
            raise UsageError(f"with --tiered, the PATHs are the broker's local data or partition directories, not {p}")


def partitions_of(args: argparse.Namespace, wants: Callable[[str, int], bool] | None = None) -> list[PartitionFiles]:
    """The partitions the command line names: under the PATHs, or with ``--tiered`` across tiers
    (:func:`kafkalog.log.tiered.tiered_files`), only the topics and partitions of its ``-t``/``-p``
    when it has them (and those ``wants(topic, partition)`` accepts). Raises
    :class:`~kafkalog.errors.LogNotFoundError` when the paths hold none."""
    check_tiered_paths(args)
    topics = set(t) if (t := getattr(args, "topic", None)) else None
    parts = set(p) if (p := getattr(args, "partition", None)) else None

    def selected(topic: str, partition: int) -> bool:
        return (topics is None or topic in topics) and (parts is None or partition in parts) and (wants is None or wants(topic, partition))
    if args.tiered is not None:
        from kafkalog.log.tiered import tiered_files

        return tiered_files(args.tiered, args.paths, keys=private_keys(args), wants=selected)
    from kafkalog.log.replicas import discover

    return discover(args.paths, wants=selected)


#: State files of a log dir that are not segment files (checkpoints, meta.properties, KRaft's bootstrap)
_LOG_DIR_FILES = frozenset({
    "meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint", "bootstrap.checkpoint",
})


def is_kafka_file(name: str) -> bool:
    """Whether ``name`` is a file a Kafka log dir holds: a segment file, index, snapshot, checkpoint or metadata."""
    from kafkalog.format.files import kind_of

    return kind_of(name) is not None or name in _LOG_DIR_FILES


def unlink(path: str) -> None:
    """Remove ``path`` if it is there (a temporary file a failed command leaves)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
