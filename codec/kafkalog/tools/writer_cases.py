"""Writer conformance (SPEC.md §8.3): run a writer over the cases of golden/corpus/writer and compare directories.

A writer case is a folder holding ``case.json`` (the topic config, the broker clock and an ordered list
of operations), ``input.log`` (the batches the ``append`` operations take, in order), ``expected/``
(the partition directory Kafka's own broker log layer left after the last operation) and, for cases
that start from an existing directory, ``before-open/``. A writer under test is any command: ``{case}``
is replaced by the case folder and ``{dir}`` by an empty output directory; afterwards the directory must
equal ``expected/`` file by file, byte for byte.

:func:`run_case` is kafkalog's own implementation (``kafkalog write-case CASE DIR``): it replays the
operations against :class:`kafkalog.log.unified.Log` with a frozen clock that only ``advanceClock`` moves.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kafkalog.errors import KafkaLogError
from kafkalog.format.records.stream import LogReader
from kafkalog.format.releases import parse_version
from kafkalog.log.producer_state import AppendOrigin
from kafkalog.log.unified import _PROPERTIES, Log, LogConfig
from kafkalog.tools.command import EXIT_IO, EXIT_OK, EXIT_USAGE, writer_version_arg
from kafkalog.tools.harness import CaseResult, _describe, _last_line, _run

__all__ = [
    "FILE_RULES",
    "WriterCase",
    "compare_dirs",
    "default_writer_corpus",
    "load_writer_cases",
    "register",
    "rules_for",
    "run_case",
    "run_writer_conformance",
]

#: The SPEC.md rules that decide each kind of file a writer produces (named in a failing case's detail).
FILE_RULES: dict[str, tuple[str, ...]] = {
    ".log": ("R-WR-06", "R-ROLL-01", "R-ROLL-03", "R-RCV-07"),
    ".index": ("R-IDX-05", "R-IDX-06", "R-IDX-09", "R-IDX-11"),
    ".timeindex": ("R-TIDX-02", "R-TIDX-03", "R-TIDX-04", "R-IDX-11"),
    ".txnindex": ("R-TXN-01", "R-TXN-02"),
    ".snapshot": ("R-SNAP-03", "R-SNAP-05", "R-SNAP-06", "R-SNAP-07"),
    "leader-epoch-checkpoint": ("R-CKPT-01", "R-CKPT-11"),
    "partition.metadata": ("R-CKPT-08",),
}
#: rules for a file that is missing or extra: which segments and files exist at all
PRESENCE_RULES: dict[str, tuple[str, ...]] = {
    ".log": ("R-ROLL-01", "R-ROLL-03", "R-RET-01", "R-RET-06"),
    ".index": ("R-ROLL-05", "R-IDX-09"),
    ".timeindex": ("R-ROLL-05", "R-IDX-09"),
    ".txnindex": ("R-TXN-01",),
    ".snapshot": ("R-SNAP-08", "R-ROLL-05", "R-RCV-09", "R-RET-07"),
}


def _kind(name: str) -> str:
    if name in ("leader-epoch-checkpoint", "partition.metadata"):
        return name
    return os.path.splitext(name)[1]


def rules_for(name: str, *, presence: bool = False) -> tuple[str, ...]:
    """The SPEC rule ids that govern file ``name`` (for a missing or extra file, the rules that decide it exists)."""
    kind = _kind(name)
    if presence and kind in PRESENCE_RULES:
        return PRESENCE_RULES[kind]
    return FILE_RULES.get(kind, ())


# --------------------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class WriterCase:
    """One writer case folder."""

    name: str
    path: Path

    @property
    def spec(self) -> dict[str, Any]:
        """The parsed ``case.json``."""
        with open(self.path / "case.json", encoding="utf-8") as f:
            return json.load(f)  # type: ignore[no-any-return]

    @property
    def expected(self) -> Path:
        """Kafka's resulting partition directory."""
        return self.path / "expected"

    @property
    def partition_dir(self) -> str:
        """The partition directory name the case was written in (``<topic>-<partition>``)."""
        return str(self.spec.get("partitionDir") or f"{self.name}-0")


def default_writer_corpus() -> Path | None:
    """golden/corpus/writer of the source tree this package runs from, else of the current directory."""
    for cand in (Path(__file__).resolve().parents[3] / "golden" / "corpus" / "writer", Path.cwd() / "golden" / "corpus" / "writer"):
        if cand.is_dir():
            return cand
    return None


def load_writer_cases(root: Path) -> list[WriterCase]:
    """Every folder of ``root`` holding a ``case.json``, in name order."""
    return [WriterCase(p.name, p) for p in sorted(root.iterdir()) if (p / "case.json").is_file()]


# --------------------------------------------------------------------------- kafkalog's writer
def case_config(spec: dict[str, Any], kafka_version: str | None = None) -> LogConfig:
    """The LogConfig of a case: its topic configs kafkalog knows, the broker's producer.id.expiration.ms, and
    the Kafka release whose log layer to follow (default: the newest)."""
    props: dict[str, object] = {k: v for k, v in spec.get("topicConfig", {}).items() if k in _PROPERTIES}
    broker = spec.get("broker", {})
    if "producer.id.expiration.ms" in broker:
        props["producer.id.expiration.ms"] = broker["producer.id.expiration.ms"]
    return replace(LogConfig.from_properties(props), kafka_version=parse_version(kafka_version))


def _input_batches(case_dir: Path) -> list[bytes]:
    path = case_dir / "input.log"
    if not path.exists():
        return []
    with LogReader(str(path)) as reader:
        return [bytes(b.data) for b in reader.batches()]


_ORIGINS = {"client": AppendOrigin.CLIENT, "coordinator": AppendOrigin.COORDINATOR, "replication": AppendOrigin.REPLICATION}


class _Clock:
    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _crash(lg: Log) -> None:
    """Drop the log without a clean close: nothing trimmed, flushed or written."""
    for seg in lg.segments:
        seg.close_handlers()
    lg.closed = True


def _data_offset(producer: dict[str, Any]) -> int | None:
    """An active producer's last data offset; None for "no data offset", written null, or absent, or -1 as
    Kafka's ProducerStateEntry reports it (SPEC R-CONF-08 item 3)."""
    offset = producer.get("lastDataOffset")
    return None if offset is None or offset < 0 else int(offset)


def _clean(lg: Log, op: dict[str, Any], now: int) -> None:
    from kafkalog.log.cleaner import CleanerConfig, LastRecord, clean

    om = op.get("offsetMap", {})
    cfg = CleanerConfig(
        dedupe_buffer_size=om.get("memoryBytes", 128 * 1024 * 1024), hash_algorithm=om.get("hashAlgorithm", "MD5"),
        dedupe_buffer_load_factor=op.get("dupBufferLoadFactor", 0.9), io_buffer_size=op.get("ioBufferSize", 1024 * 1024),
        max_io_buffer_size=op.get("maxIoBufferSize", 1024 * 1024 * 1024),
    )
    active = {a["producerId"]: LastRecord(_data_offset(a), a["producerEpoch"]) for a in op.get("lastRecordsOfActiveProducers", [])}
    clean(lg, op["firstDirtyOffset"], op["firstUncleanableOffset"], now, cleaner_config=cfg, active_producers=active,
          high_watermark=int(op.get("highWatermark", lg.log_end_offset)))


def run_case(case_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str], kafka_version: str | None = None) -> None:
    """Replay the operations of the case at ``case_dir`` with kafkalog's Log, writing the partition directory ``out_dir``,
    as the log layer of Kafka release ``kafka_version`` (``"4.0.0"``, ``"4.1"``...; default: the newest) writes it."""
    case = Path(case_dir)
    out = Path(out_dir)
    with open(case / "case.json", encoding="utf-8") as f:
        spec = json.load(f)
    config = case_config(spec, kafka_version)
    clock = _Clock(int(spec["initialClockMs"]))
    batches = _input_batches(case)
    ops: list[dict[str, Any]] = spec["ops"]
    lg: Log | None = None
    if ops and ops[0]["op"] != "create":  # the case starts from the directory in before-open/
        out.mkdir(parents=True, exist_ok=True)
        for f in sorted((case / "before-open").iterdir()):
            shutil.copyfile(f, out / f.name)
    for op in ops:
        kind = op["op"]
        if kind == "create":
            lg = Log.open(out, config, topic_id=spec.get("topicId"), clock=clock, sync=False, writable=True)
        elif kind == "append":
            assert lg is not None
            lo, hi = op["batches"]
            k = int(op.get("batchesPerCall", 1))
            origin = _ORIGINS[op["origin"]]
            for i in range(lo, hi, k):
                data = b"".join(batches[i : min(i + k, hi)])
                if origin is AppendOrigin.REPLICATION:
                    lg.append(data, assign_offsets=False, origin=origin)
                else:
                    lg.append(data, leader_epoch=op["leaderEpoch"], origin=origin)
        elif kind == "advanceClock":
            clock.now += int(op["ms"])
        elif kind == "retention":
            assert lg is not None
            lg.delete_old_segments(clock.now)
            lg.delete_pending_files(clock.now + config.file_delete_delay_ms)
        elif kind == "crash":
            assert lg is not None
            _crash(lg)
            lg = None
        elif kind == "fileAppend":
            with open(out / op["file"], "ab") as fh:
                fh.write(bytes.fromhex(op["hex"]))
        elif kind == "fileWrite":
            with open(out / op["file"], "r+b") as fh:
                fh.seek(int(op["position"]))
                fh.write(bytes.fromhex(op["hex"]))
        elif kind == "fileDelete":
            os.unlink(out / op["file"])
        elif kind == "open":
            lg = Log.open(
                out, config, topic_id=spec.get("topicId"), log_start_offset=int(op.get("logStartOffset", 0)),
                recovery_point=op.get("recoveryPoint"), had_clean_shutdown=bool(op.get("cleanShutdown", True)), clock=clock, sync=False, writable=True,
            )
        elif kind == "attach":
            lg = Log.open(out, config, topic_id=spec.get("topicId"), log_start_offset=int(op.get("logStartOffset", 0)), clock=clock, sync=False, writable=True, takeover=True)
        elif kind == "close":  # UnifiedLog.close(): no flush first (a broker's shutdown flushes, then closes)
            assert lg is not None
            lg.close(flush=False)
            lg = None
        elif kind == "roll":
            assert lg is not None
            lg.roll()
        elif kind == "clean":
            assert lg is not None
            _clean(lg, op, clock.now)
        else:
            raise ValueError(f"{case / 'case.json'}: unknown op {kind!r}")
    if lg is not None:  # a case that ends without close or crash: leave the files as they are
        _crash(lg)


# ---------------------------------------------------------------------------------- comparing
def _first_difference(got: bytes, want: bytes) -> str:
    n = min(len(got), len(want))
    i = next((j for j in range(n) if got[j] != want[j]), n)
    if i < n:
        return f"byte {i} is 0x{got[i]:02x}, expected 0x{want[i]:02x} ({len(got)} bytes, expected {len(want)})"
    return f"{len(got)} bytes, expected {len(want)} (equal up to byte {n})"


def compare_dirs(got: Path, expected: Path) -> list[str]:
    """The differences of directory ``got`` from ``expected``: one message per missing, extra or different file,
    each naming the file, the first differing byte and the SPEC rules that govern it. Empty when identical."""
    have = {p.name for p in got.iterdir() if p.is_file()} if got.is_dir() else set()
    want = {p.name for p in expected.iterdir() if p.is_file()}
    out: list[str] = []
    for name in sorted(have | want):
        if name not in have:
            out.append(f"{name}: missing [{', '.join(rules_for(name, presence=True))}]")
        elif name not in want:
            out.append(f"{name}: extra file ({(got / name).stat().st_size} bytes) [{', '.join(rules_for(name, presence=True))}]")
        else:
            a, b = (got / name).read_bytes(), (expected / name).read_bytes()
            if a != b:
                out.append(f"{name}: {_first_difference(a, b)} [{', '.join(rules_for(name))}]")
    return out


# ------------------------------------------------------------------------------------ running
def _check(case: WriterCase, template: list[str], timeout: float) -> CaseResult:
    res = CaseResult(case.name, "writer")
    with tempfile.TemporaryDirectory(prefix="kafkalog-writer-") as tmp:
        out = Path(tmp) / case.partition_dir
        out.mkdir()
        run = _run(template, {"case": str(case.path), "dir": str(out)}, timeout)
        bad = _describe(run, timeout)
        if bad is None and run.code != 0:
            bad = f"exit {run.code}: {_last_line(run.stderr)}"
        diffs = [bad] if bad else compare_dirs(out, case.expected)
    res.impl = "fail" if diffs else "pass"
    res.details = diffs
    return res


def run_writer_conformance(
    cases: list[WriterCase],
    command: str,
    *,
    timeout: float = 60.0,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> list[CaseResult]:
    """Run the writer ``command`` (``{case}``: the case folder, ``{dir}``: an empty output directory) over every
    case and compare the directory it leaves with ``expected/``. Raises ValueError when ``{dir}`` is missing."""
    template = shlex.split(command)
    if "{dir}" not in " ".join(template):
        raise ValueError("the writer command needs {dir} (the output directory) and usually {case} (the case folder)")

    def one(case: WriterCase) -> CaseResult:
        if progress is not None:
            progress(case.name)
        return _check(case, template, timeout)

    if jobs <= 1:
        return [one(c) for c in cases]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, cases))


def _command(args: argparse.Namespace) -> int:
    if not os.path.isfile(os.path.join(args.case, "case.json")):
        print(f"kafkalog write-case: no case.json in {args.case}", file=sys.stderr)
        return EXIT_IO
    if os.path.isdir(args.dir) and os.listdir(args.dir):
        print(f"kafkalog write-case: {args.dir} is not empty", file=sys.stderr)
        return EXIT_USAGE
    try:
        run_case(args.case, args.dir, args.kafka_version)
    except (ValueError, KeyError, json.JSONDecodeError) as e:
        if isinstance(e, KafkaLogError):
            raise
        print(f"kafkalog write-case: {args.case}/case.json: {e!r}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as e:
        print(f"kafkalog write-case: {e.filename or args.dir}: {e.strerror}", file=sys.stderr)
        return EXIT_IO
    return EXIT_OK


# ------------------------------------------------------------------------------- the command

def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog write-case`` to the command line."""
    w = sub.add_parser("write-case", help="replay a writer case (case.json) with kafkalog's own log layer", description=(
        "Run the operations of a writer conformance case (create, append, advanceClock, retention, crash, file edits, "
        "open, attach, clean, roll, close; SPEC.md section 8.3) against kafkalog's Log with the case's frozen clock, "
        "writing the partition directory DIR: kafkalog's implementation for 'kafkalog conformance --writer'."))
    w.add_argument("case", metavar="CASE", help="the case folder (holding case.json, input.log, before-open/)")
    w.add_argument("dir", metavar="DIR", help="the output partition directory (empty or new)")
    w.add_argument("--kafka-version", type=writer_version_arg, metavar="X.Y[.Z]", help=(
        "the Kafka release whose log layer to follow (4.0 to 4.4, or a patch release such as 4.0.2; default: the newest, "
        "4.4): from 4.0.1 a multi-batch append is indexed batch by batch (KAFKA-806), from 4.4 the cleaner keeps an "
        "emptied batch only at the high watermark (KAFKA-20452); 4.0 is 4.0.0, as golden/corpus/writer was written"))
    w.set_defaults(func=_command)
