"""``kafkalog verify``: every batch, CRC, index entry and state file checked, every finding reported
(the checks are :mod:`kafkalog.tools.validate`'s, loaded when the command runs: they compile on first use)."""

from __future__ import annotations

import argparse
import sys

from kafkalog.tools.command import (
    EXIT_BAD_DATA,
    EXIT_IO,
    EXIT_OK,
    Progress,
    UsageError,
    is_kafka_file,
    missing_or_empty,
)
from kafkalog.tools.jobs import add_jobs_option

__all__ = ["register"]



def _command(args: argparse.Namespace) -> int:
    import json

    from kafkalog.tools.validate import NOTE, verify

    if args.max_message_bytes is None:
        from kafkalog.tools.validate import DEFAULT_MAX_MESSAGE_BYTES

        args.max_message_bytes = DEFAULT_MAX_MESSAGE_BYTES
    if args.max_message_bytes < 1:
        raise UsageError(f"--max-message-bytes must be positive, got {args.max_message_bytes}")
    from kafkalog.tools.validate_tiered import holds_tiered_objects, verify_tiered

    keys = None
    if args.private_key:
        from kafkalog.format.tiered_aiven import read_private_keys

        try:
            keys = read_private_keys(args.private_key)
        except ValueError as e:
            raise UsageError(str(e)) from None
    tiered = [p for p in args.paths if holds_tiered_objects(p)]
    local = [p for p in args.paths if p not in tiered]
    if (code := missing_or_empty("verify", local, is_kafka_file)) is not None:
        return code
    progress = Progress(sys.stderr, "verifying")
    report = verify(local, progress=progress, total=progress.set_total, max_message_bytes=args.max_message_bytes,
                    jobs=args.jobs)
    for p in tiered:  # the objects of Aiven's tiered-storage plug-in (SPEC Appendix D)
        verify_tiered(p, keys, report, progress)
    report.sort()
    progress.done()
    if not report.files:
        print(f"kafkalog verify: no Kafka files in {' '.join(args.paths)}", file=sys.stderr)
        return EXIT_IO
    for f in report.findings:
        if f.severity == NOTE and not args.notes and f.code != "leftover":  # what the broker's load will do: always said
            continue
        if args.json:
            print(json.dumps(f.to_json(), separators=(",", ":")))
        else:
            print(f)
    errors, warnings, notes = len(report.errors), len(report.warnings), len(report.notes)
    listed = "" if args.notes or all(f.code == "leftover" for f in report.notes) else " (--notes lists them)"
    print(f"verified {report.files} files ({report.bytes} bytes): {errors} errors, {warnings} warnings, {notes} notes{listed}",
          file=sys.stderr)
    return EXIT_BAD_DATA if errors else EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog verify`` to the command line."""
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
    v.add_argument("--private-key", action="append", metavar="ID=FILE", help=(
        "for a path holding Aiven tiered-storage objects (found by their .rsm-manifest): the private key (PEM) of "
        "key pair ID for its encrypted segments; repeatable. Such a path is checked chunk by chunk (GCM tags), batch "
        "by batch (CRCs), index entry by index entry, and for holes between its segments"))
    v.add_argument("--notes", action="store_true", help=(
        "also list notes: known behaviours of some broker versions that are not faults (e.g. time index entries of "
        "brokers before 3.8); they are counted in the summary either way. Notes on leftovers of interrupted operations "
        "(.swap, .cleaned, .deleted files: what the broker will delete or swap in when it loads the directory) are "
        "always listed"))
    v.add_argument("--max-message-bytes", type=int, metavar="N", help=(
        "the topic's max.message.bytes (default Kafka's, 1048588): a trailing entry larger than this is corruption, "
        "not a torn tail"))
    add_jobs_option(v, "directories (and a large directory's segments)")
    v.set_defaults(func=_command)
