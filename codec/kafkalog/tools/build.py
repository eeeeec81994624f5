"""``kafkalog build``: write a ``.log`` from canonical JSON, or a partition directory from batches, as a
follower broker appends them (offsets, indexes, snapshots and epochs by Kafka's rules)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Iterator

from kafkalog.errors import BuildError
from kafkalog.tools.canonical import build_log
from kafkalog.tools.command import EXIT_IO, EXIT_OK, EXIT_USAGE, UsageError, unlink

__all__ = ["register"]


def _source_batches(src: str) -> Iterator[bytes]:
    """Batch bytes of one build source: a .log file (unchanged) or canonical JSON (file or -)."""
    if src != "-" and src.endswith(".log"):
        from kafkalog.format.records.stream import LogReader

        with LogReader(src) as reader:
            for batch in reader.batches():
                yield batch.data
            if reader.tail is not None:
                print(f"warning: {reader.tail.message()} (not copied)", file=sys.stderr)
        return
    stream = sys.stdin if src == "-" else open(src, encoding="utf-8")  # noqa: SIM115 - closed below
    with stream:
        yield from build_log(stream)


def _build_dir(args: argparse.Namespace) -> int:
    from kafkalog.log.unified import Log, LogConfig, partition_dir_problem

    props: dict[str, object] = {}
    for key, value in (("segment.bytes", args.segment_bytes), ("index.interval.bytes", args.index_interval_bytes),
                       ("segment.index.bytes", args.segment_index_bytes)):
        if value is not None:
            props[key] = value
    config = LogConfig.from_properties(props)
    if (problem := partition_dir_problem(args.output)) is not None:
        raise UsageError(problem)
    created = not os.path.exists(args.output)
    os.makedirs(args.output, exist_ok=True)
    if any(n.endswith(".log") for n in os.listdir(args.output)):
        print(f"kafkalog build: {args.output} already holds segments; give an empty or new directory", file=sys.stderr)
        return EXIT_USAGE
    n = 0
    try:
        log = Log.open(args.output, config, topic_id=args.topic_id, writable=True)
        try:
            for src in args.inputs or ["-"]:
                for batch in _source_batches(src):
                    log.append(batch, assign_offsets=False)  # as a follower: bytes unchanged
                    n += 1
        finally:
            log.close()
        if not n:
            raise BuildError(f"no batches in {' '.join(args.inputs or ['stdin'])}: nothing to build (expected canonical "
                             "JSON lines as 'kafkalog dump --json' prints them, or .log files)")
    except BaseException:
        if created:  # leave nothing behind of a directory this run made
            shutil.rmtree(args.output, ignore_errors=True)
        raise
    print(f"appended {n} batches to {args.output}: {len(log.segments)} segment(s), log end offset {log.log_end_offset}", file=sys.stderr)
    return EXIT_OK


def _command(args: argparse.Namespace) -> int:
    if not args.output.endswith(".log"):
        try:
            return _build_dir(args)
        except BuildError as e:
            print(f"kafkalog build: {e}", file=sys.stderr)
            return EXIT_USAGE
        except OSError as e:
            print(f"kafkalog build: {e.filename or args.output}: {e.strerror}", file=sys.stderr)
            return EXIT_IO
    if args.segment_bytes is not None or args.index_interval_bytes is not None or args.segment_index_bytes is not None:
        print("kafkalog build: segment options need a directory as -o (not a .log file)", file=sys.stderr)
        return EXIT_USAGE
    if args.topic_id is not None:
        raise UsageError("--topic-id needs a directory as -o (a lone .log has no partition.metadata)")
    if len(args.inputs) > 1:
        print("kafkalog build: a single .log output takes one JSON source", file=sys.stderr)
        return EXIT_USAGE
    src = args.inputs[0] if args.inputs else "-"
    try:
        stream = sys.stdin if src == "-" else open(src, encoding="utf-8")  # noqa: SIM115
    except OSError as e:
        print(f"kafkalog build: cannot read {src}: {e.strerror}", file=sys.stderr)
        return EXIT_IO
    tmp = args.output + ".tmp"
    try:
        with stream, open(tmp, "wb") as out:
            n = 0
            for batch in build_log(stream):
                out.write(batch)
                n += 1
            out.flush()
            os.fsync(out.fileno())
        if not n:
            raise BuildError("no batches in the input: nothing to build (expected canonical JSON lines as "
                             "'kafkalog dump --json' prints them)")
        os.replace(tmp, args.output)
    except BuildError as e:
        unlink(tmp)
        print(f"kafkalog build: {src}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        unlink(tmp)
        if isinstance(e, BrokenPipeError):
            raise
        print(f"kafkalog build: {e.filename or args.output}: {e.strerror}", file=sys.stderr)
        return EXIT_IO
    except BaseException:
        unlink(tmp)
        raise
    print(f"wrote {n} batches to {args.output}", file=sys.stderr)
    return EXIT_OK




# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog build`` to the command line."""
    b = sub.add_parser("build", help="write a .log, or a partition directory, from canonical JSON or .log files", description=(
        "With -o OUT.log: read canonical JSON lines (as 'kafkalog dump --json' prints them) and write the batches to "
        "one file; CRCs, sizes and positions are recomputed; a compressed batch of 'dump --json --lossless' is written "
        "with its payload as stored while its records are unchanged, else compressed as Kafka compresses; the file is "
        "written to OUT.log.tmp, synced, then renamed. "
        "With -o DIR: append every batch of the SOURCEs (canonical JSON, or .log files whose batch bytes are kept "
        "unchanged) one batch per append into a partition directory, as a follower broker appends: segments roll and "
        "indexes, time indexes, transaction indexes, producer snapshots and leader epochs are written by Kafka's rules."))
    b.add_argument("inputs", nargs="*", metavar="SOURCE", help="JSON lines or .log files ('-' or nothing: JSON on stdin)")
    b.add_argument("-o", "--output", required=True, metavar="OUT.log|DIR")
    b.add_argument("--segment-bytes", type=int, metavar="N", help="directory output: segment.bytes (default 1 GiB)")
    b.add_argument("--index-interval-bytes", type=int, metavar="M", help="directory output: index.interval.bytes (default 4096)")
    b.add_argument("--segment-index-bytes", type=int, metavar="K", help="directory output: segment.index.bytes (default 10 MiB)")
    b.add_argument("--topic-id", metavar="ID", help="directory output: write partition.metadata with this topic id (22-char base64)")
    b.set_defaults(func=_command)
