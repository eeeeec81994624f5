"""The ``kafkalog`` command line: dump and build Kafka log files without a broker.

Exit codes: 0 success; 1 the input holds bad data (corrupt batches, bad files); 2 usage error
(bad arguments, unreadable JSON given to ``build``); 3 a path could not be read or written.
Messages go to stderr, data to stdout; no tracebacks for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TextIO

from kafkalog import __version__
from kafkalog.errors import BuildError, KafkaLogError
from kafkalog.tools.canonical import build_log
from kafkalog.tools.dump import DumpOptions, dump

__all__ = ["main"]

EXIT_OK = 0
EXIT_BAD_DATA = 1
EXIT_USAGE = 2
EXIT_IO = 3


class _Progress:
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


class _UsageError(Exception):
    """A command-line mistake found after parsing: reported with the subcommand's usage, exit 2."""


def _has_kafka_files(directory: str, wanted: Callable[[str], bool]) -> bool:
    """Whether any file under ``directory`` (recursively) has a name ``wanted`` accepts; stops at the first."""
    return any(any(wanted(n) for n in names) for _dirpath, _dirs, names in os.walk(directory))


def _missing_or_empty(command: str, paths: Sequence[str], wanted: Callable[[str], bool]) -> int | None:
    """Exit 3 with a message naming the first path that does not exist or holds no Kafka files."""
    for path in paths:
        if not os.path.exists(path):
            print(f"kafkalog {command}: no such file or directory: {path}", file=sys.stderr)
            return EXIT_IO
        if not os.access(path, os.R_OK):
            print(f"kafkalog {command}: cannot read {path}: permission denied", file=sys.stderr)
            return EXIT_IO
        if os.path.isdir(path) and not _has_kafka_files(path, wanted):
            print(f"kafkalog {command}: no Kafka files in {path} (no .log, .index, .timeindex, .txnindex, .snapshot, "
                  "leader-epoch-checkpoint or partition.metadata under it)", file=sys.stderr)
            return EXIT_IO
    return None


#: state files of a log dir that are not segment files (checkpoints, meta.properties, KRaft's bootstrap)
_LOG_DIR_FILES = frozenset({
    "meta.properties", "recovery-point-offset-checkpoint", "replication-offset-checkpoint", "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint", "bootstrap.checkpoint",
})


def _is_kafka_file(name: str) -> bool:
    from kafkalog.format.files import kind_of

    return kind_of(name) is not None or name in _LOG_DIR_FILES


def _cmd_dump(args: argparse.Namespace) -> int:
    from kafkalog.format.files import DUMPED_KINDS, kind_of

    if args.lossless and not args.json:
        raise _UsageError("--lossless needs --json (it adds timestampDelta to the canonical JSON)")
    text_only = [flag for flag, on in (("--deep-iteration", args.deep_iteration), ("--print-data-log", args.print_data_log),
                                       ("--skip-record-metadata", args.skip_record_metadata)) if on]
    if args.json and text_only:
        raise _UsageError(f"{', '.join(text_only)} apply to the text output only; --json always prints every record")
    opts = DumpOptions(
        fmt="json" if args.json else "text",
        deep_iteration=args.deep_iteration,
        print_data_log=args.print_data_log,
        skip_record_metadata=args.skip_record_metadata,
        lossless=args.lossless,
        decode=args.decode,
        decoder=args.decoder,
        isolation=args.isolation,
    )
    if args.isolation is not None:
        from kafkalog.tools.dump import partition_dirs

        for p in args.paths:
            if os.path.isfile(p):
                print(f"kafkalog dump: --isolation reads partition directories, not files such as {p}", file=sys.stderr)
                return EXIT_USAGE
            if os.path.exists(p) and not partition_dirs(p):
                print(f"kafkalog dump: --isolation reads partition directories, and {p} holds none", file=sys.stderr)
                return EXIT_IO
    if (code := _missing_or_empty("dump", args.paths, lambda n: kind_of(n) in DUMPED_KINDS)) is not None:
        return code
    progress = _Progress(sys.stderr, "dumping")
    try:
        result = dump(args.paths, opts, sys.stdout, sys.stderr, progress)
    except FileNotFoundError as e:
        progress.done()
        print(f"kafkalog dump: no such file or directory: {e.args[0]}", file=sys.stderr)
        return EXIT_IO
    except OSError as e:  # e.g. an s3:// path without credentials
        progress.done()
        print(f"kafkalog dump: cannot read: {e}", file=sys.stderr)
        return EXIT_IO
    progress.done()
    if not result.files and args.isolation is None:  # a consumer's view may hold no batch at all
        print(f"kafkalog dump: no Kafka files in {' '.join(args.paths)}", file=sys.stderr)
        return EXIT_IO
    return EXIT_BAD_DATA if result.errors else EXIT_OK


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


def _cmd_build_dir(args: argparse.Namespace) -> int:
    from kafkalog.log.unified import Log, LogConfig, partition_dir_problem

    props: dict[str, object] = {}
    for key, value in (("segment.bytes", args.segment_bytes), ("index.interval.bytes", args.index_interval_bytes),
                       ("segment.index.bytes", args.segment_index_bytes)):
        if value is not None:
            props[key] = value
    config = LogConfig.from_properties(props)
    if (problem := partition_dir_problem(args.output)) is not None:
        raise _UsageError(problem)
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


def _cmd_build(args: argparse.Namespace) -> int:
    if not args.output.endswith(".log"):
        try:
            return _cmd_build_dir(args)
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
        raise _UsageError("--topic-id needs a directory as -o (a lone .log has no partition.metadata)")
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
        _unlink(tmp)
        print(f"kafkalog build: {src}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        _unlink(tmp)
        if isinstance(e, BrokenPipeError):
            raise
        print(f"kafkalog build: {e.filename or args.output}: {e.strerror}", file=sys.stderr)
        return EXIT_IO
    except BaseException:
        _unlink(tmp)
        raise
    print(f"wrote {n} batches to {args.output}", file=sys.stderr)
    return EXIT_OK


def _cmd_explain(args: argparse.Namespace) -> int:
    from kafkalog.tools.explain import explain_file

    if not os.path.exists(args.file):
        print(f"kafkalog explain: no such file: {args.file}", file=sys.stderr)
        return EXIT_IO
    if os.path.isdir(args.file):
        raise _UsageError(f"{args.file} is a directory; explain takes one file, e.g. {os.path.join(args.file, '00000000000000000000.log')}")
    if args.count < 1:
        raise _UsageError(f"--count must be 1 or more, got {args.count}")
    if (args.offset is not None or args.count != 1) and not args.file.endswith(".log"):
        raise _UsageError("--offset and --count apply to .log files")
    for line in explain_file(args.file, offset=args.offset, limit=args.count):
        print(line)
    return EXIT_OK


def _cmd_groups(args: argparse.Namespace) -> int:
    import json

    from kafkalog.tools.groups import describe_groups, read_groups

    for d in args.dirs:
        if not os.path.isdir(d):
            print(f"kafkalog groups: no such directory: {d}", file=sys.stderr)
            return EXIT_IO
    if (code := _missing_or_empty("groups", args.dirs, _is_kafka_file)) is not None:
        return code
    res = read_groups(*args.dirs)
    if args.json:
        print(json.dumps(res.to_json(), separators=(",", ":")))
    else:
        print(describe_groups(res))
    for err in res.errors:
        print(f"error: {err}", file=sys.stderr)
    if not res.groups and not any(os.path.basename(p).startswith("__consumer_offsets-") for d in args.dirs for p, _, _ in os.walk(d)):
        print(f"kafkalog groups: no __consumer_offsets partition under {' '.join(args.dirs)}: no committed offsets to show",
              file=sys.stderr)
    return EXIT_BAD_DATA if res.errors else EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    import json

    from kafkalog.tools.validate import NOTE, verify

    if args.max_message_bytes is None:
        from kafkalog.tools.validate import DEFAULT_MAX_MESSAGE_BYTES

        args.max_message_bytes = DEFAULT_MAX_MESSAGE_BYTES
    if args.max_message_bytes < 1:
        raise _UsageError(f"--max-message-bytes must be positive, got {args.max_message_bytes}")
    if (code := _missing_or_empty("verify", args.paths, _is_kafka_file)) is not None:
        return code
    progress = _Progress(sys.stderr, "verifying")
    report = verify(args.paths, progress=progress, total=progress.set_total, max_message_bytes=args.max_message_bytes)
    progress.done()
    if not report.files:
        print(f"kafkalog verify: no Kafka files in {' '.join(args.paths)}", file=sys.stderr)
        return EXIT_IO
    for f in report.findings:
        if f.severity == NOTE and not args.notes:
            continue
        if args.json:
            print(json.dumps(f.to_json(), separators=(",", ":")))
        else:
            print(f)
    errors, warnings, notes = len(report.errors), len(report.warnings), len(report.notes)
    listed = "" if not notes or args.notes else " (--notes lists them)"
    print(f"verified {report.files} files ({report.bytes} bytes): {errors} errors, {warnings} warnings, {notes} notes{listed}",
          file=sys.stderr)
    return EXIT_BAD_DATA if errors else EXIT_OK


def _cmd_conformance(args: argparse.Namespace) -> int:
    import fnmatch
    import json
    from pathlib import Path

    from kafkalog.tools.conformance import default_corpus, load_corpus, render_table, run_conformance

    if not args.impl and not args.verify_impl:
        print("kafkalog conformance: give --impl and/or --verify-impl", file=sys.stderr)
        return EXIT_USAGE
    corpus = Path(args.corpus) if args.corpus else default_corpus()
    if corpus is None or not corpus.is_dir():
        print(f"kafkalog conformance: no corpus at {args.corpus or 'golden/corpus'} (give --corpus DIR)", file=sys.stderr)
        return EXIT_IO
    cases = load_corpus(corpus)
    if args.case:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.name, pat) for pat in args.case)]
        if not cases:
            print(f"kafkalog conformance: no case matches {' '.join(args.case)}", file=sys.stderr)
            return EXIT_USAGE
    progress = _Progress(sys.stderr, "checking")
    try:
        results = run_conformance(cases, args.impl, args.verify_impl, timeout=args.timeout, jobs=args.jobs, progress=progress)
    except ValueError as e:
        progress.done()
        print(f"kafkalog conformance: {e}", file=sys.stderr)
        return EXIT_USAGE
    progress.done()
    if args.json:
        for r in results:
            print(json.dumps(r.to_json(), separators=(",", ":")))
    else:
        for line in render_table(results):
            print(line)
    return EXIT_BAD_DATA if any(r.failed for r in results) else EXIT_OK


def _unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kafkalog", description="Read, verify and write Apache Kafka log files without a broker.")
    p.add_argument("--version", action="version", version=f"kafkalog {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser("dump", help="print the contents of log files and directories", description=(
        "Print .log, .index, .timeindex, .txnindex, .snapshot, leader-epoch-checkpoint and partition.metadata files. "
        "Directories are walked recursively in sorted order. Text output follows kafka-dump-log; --json prints "
        "kafkalog's canonical JSON, one object per line. A PATH may be a URL such as s3://bucket/dir (the s3 extra; "
        "credentials and endpoint from the standard AWS environment variables), read with ranged requests."))
    d.add_argument("paths", nargs="+", metavar="PATH")
    d.add_argument("--json", action="store_true", help="canonical JSON, one object per line")
    d.add_argument("--lossless", action="store_true", help="with --json: add timestampDelta to v2 records so that build gives back identical bytes")
    d.add_argument("--deep-iteration", "-d", action="store_true", help="text: print every record, not only batches")
    d.add_argument("--print-data-log", action="store_true", help="text: print keys and values (implies --deep-iteration)")
    d.add_argument("--skip-record-metadata", action="store_true", help="text: with --print-data-log, print only keys and values")
    d.add_argument("--decode", action="store_true", help=(
        "decode keys and values of internal topics (__consumer_offsets, __transaction_state, __cluster_metadata), "
        "chosen by the partition directory's topic; JSON adds decodedKey/decodedValue"))
    d.add_argument("--isolation", choices=["read_committed", "read_uncommitted"], help=(
        "print only what a consumer with this isolation.level receives from each partition directory: the batches it "
        "takes records from and those records (no control records; read_committed: no aborted data, nothing past the "
        "last stable offset); the directory is read as a whole, read-only"))
    d.add_argument("--decoder", choices=["offsets", "transaction-log", "cluster-metadata", "share-group-state"],
                   help="force one internal-topic decoder for every file")
    d.add_argument("--offsets-decoder", dest="decoder", action="store_const", const="offsets", help="as kafka-dump-log: --decoder offsets")
    d.add_argument("--transaction-log-decoder", dest="decoder", action="store_const", const="transaction-log", help="as kafka-dump-log: --decoder transaction-log")
    d.add_argument("--cluster-metadata-decoder", dest="decoder", action="store_const", const="cluster-metadata", help="as kafka-dump-log: --decoder cluster-metadata")
    d.set_defaults(func=_cmd_dump)

    b = sub.add_parser("build", help="write a .log, or a partition directory, from canonical JSON or .log files", description=(
        "With -o OUT.log: read canonical JSON lines (as 'kafkalog dump --json' prints them) and write the batches to "
        "one file; CRCs, sizes and positions are recomputed; the file is written to OUT.log.tmp, synced, then renamed. "
        "With -o DIR: append every batch of the SOURCEs (canonical JSON, or .log files whose batch bytes are kept "
        "unchanged) one batch per append into a partition directory, as a follower broker appends: segments roll and "
        "indexes, time indexes, transaction indexes, producer snapshots and leader epochs are written by Kafka's rules."))
    b.add_argument("inputs", nargs="*", metavar="SOURCE", help="JSON lines or .log files ('-' or nothing: JSON on stdin)")
    b.add_argument("-o", "--output", required=True, metavar="OUT.log|DIR")
    b.add_argument("--segment-bytes", type=int, metavar="N", help="directory output: segment.bytes (default 1 GiB)")
    b.add_argument("--index-interval-bytes", type=int, metavar="M", help="directory output: index.interval.bytes (default 4096)")
    b.add_argument("--segment-index-bytes", type=int, metavar="K", help="directory output: segment.index.bytes (default 10 MiB)")
    b.add_argument("--topic-id", metavar="ID", help="directory output: write partition.metadata with this topic id (22-char base64)")
    b.set_defaults(func=_cmd_build)

    e = sub.add_parser("explain", help="annotated hex dump of a file, field by field", description=(
        "Print every field of a batch (or of each entry of an index, time index, transaction index or producer "
        "snapshot) with its byte position, bytes, name as SPEC.md names it, type and value."))
    e.add_argument("file", metavar="FILE")
    e.add_argument("--offset", type=int, help=".log: start at the batch holding this offset (default: the first)")
    e.add_argument("--count", type=int, default=1, help=".log: how many batches to show (default 1)")
    e.set_defaults(func=_cmd_explain)

    g = sub.add_parser("groups", help="consumer groups' committed offsets and lag, from a data dir at rest", description=(
        "Read __consumer_offsets partitions under the given log dirs and print each consumer group's latest committed "
        "offset per topic-partition, its state and members, and its lag against the partition's log end offset when "
        "that partition's directory is there too."))
    g.add_argument("dirs", nargs="+", metavar="DIR")
    g.add_argument("--json", action="store_true", help="one JSON object")
    g.set_defaults(func=_cmd_groups)

    v = sub.add_parser("verify", help="check batches, CRCs, offsets, indexes and state files; report every problem", description=(
        "Check data dirs, partition dirs or single files: batch framing and CRCs, record structure, offsets, every "
        ".index and .timeindex entry against the log (as kafka-dump-log --verify-index-only), .txnindex entries "
        "against ABORT markers, producer snapshots and checkpoints. Prints one line per finding "
        "(FILE:POSITION: offset N: SEVERITY: MESSAGE [CODE]) on stdout, sorted by file and position, and a summary "
        "on stderr; exit 1 if any is an error. Bytes after the last whole batch are a torn tail (a warning) only at "
        "the end of the active segment and only when they can be the start of a batch being written; otherwise "
        "they are an error."))
    v.add_argument("paths", nargs="+", metavar="DIR_OR_FILE")
    v.add_argument("--json", action="store_true", help="one JSON object per finding")
    v.add_argument("--notes", action="store_true", help=(
        "also list notes: known behaviours of some broker versions that are not faults (e.g. time index entries of "
        "brokers before 3.8); they are counted in the summary either way"))
    v.add_argument("--max-message-bytes", type=int, metavar="N", help=(
        "the topic's max.message.bytes (default Kafka's, 1048588): a trailing entry larger than this is corruption, "
        "not a torn tail"))
    v.set_defaults(func=_cmd_verify)

    c = sub.add_parser("conformance", help="run another implementation over the golden corpus and compare", description=(
        "Run a dumper (--impl) and/or a validator (--verify-impl) over the conformance corpus (SPEC.md section 8). "
        "In each COMMAND, {file} is replaced by each input file of a case in turn, {dir} by the case folder. "
        "Good cases: the dumper's stdout must be Kafka's canonical JSON lines (expected.jsonl) and its exit 0. "
        "Bad cases: per expected.json, the dumper must fail ('reject') or print exactly expected.jsonl ('lines'); "
        "the validator must exit non-zero, and JSON findings it prints must include the expected code and position. "
        "Prints a table (or --json, one object per case); exit 1 if any case fails."))
    c.add_argument("--impl", metavar="COMMAND", help='dumper command, e.g. "mytool dump --json {file}"')
    c.add_argument("--verify-impl", metavar="COMMAND", help='validator command, e.g. "mytool verify --json {dir}"')
    c.add_argument("--corpus", metavar="DIR", help="corpus folder (default: golden/corpus)")
    c.add_argument("--case", action="append", metavar="PATTERN", help="only cases whose name matches this glob (repeatable)")
    c.add_argument("--jobs", "-j", type=int, default=1, metavar="N", help="cases run at once (default 1)")
    c.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per command run (default 60)")
    c.add_argument("--json", action="store_true", help="one JSON object per case")
    c.set_defaults(func=_cmd_conformance)

    from kafkalog.tools.maintenance import register as register_maintenance  # retention, recover

    register_maintenance(sub)
    from kafkalog.tools.compact import register as register_compaction  # compact

    register_compaction(sub)
    return p


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers by name, so that a subcommand's mistakes print its own usage."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``kafkalog`` console script; returns the exit code.

    No input given on the command line ends in a traceback: bad data exits 1, usage errors 2 (with
    the subcommand's usage), unreadable or unwritable paths 3; a closed stdout (``| head``) ends
    the command quietly."""
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    command = getattr(args, "command", None)
    sub = _subparsers(parser).get(command or "", parser)
    if extra:
        sub.error(f"unrecognized arguments: {' '.join(extra)}")  # exits 2 with that subcommand's usage
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        code = func(args)
        sys.stdout.flush()  # a closed pipe shows here, while it can still be handled
        return code
    except BrokenPipeError:
        # the reader of our stdout went away (`| head`, quitting `less`): stop quietly, as Unix tools do;
        # stdout goes to devnull so that the interpreter's last flush does not fail again (Python's signal docs)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except _UsageError as e:
        sub.print_usage(sys.stderr)
        print(f"kafkalog {command}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KafkaLogError as e:
        print(f"kafkalog {command}: {e}", file=sys.stderr)
        return EXIT_BAD_DATA
    except OSError as e:
        print(f"kafkalog {command}: {e.filename or ''}{': ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        return EXIT_IO
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - no input may end in a traceback; KAFKALOG_DEBUG=1 shows it
        if os.environ.get("KAFKALOG_DEBUG"):
            raise
        print(f"kafkalog {command}: internal error: {type(e).__name__}: {e} (KAFKALOG_DEBUG=1 shows the traceback; "
              "please report it)", file=sys.stderr)
        return EXIT_BAD_DATA


if __name__ == "__main__":
    sys.exit(main())
