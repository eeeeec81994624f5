"""``kafkalog export``: the records of data dirs, partition dirs, globs or URLs written as Parquet, JSON
lines or CSV, Hive-partitioned (``OUT/topic=T/partition=P/part-00000.parquet``), as ``kafkalog.scan``
reads them.

Every file is written under a temporary name beginning with ``.`` in its target directory (readers
of Hive-partitioned data sets skip such names), flushed and fsynced, then renamed to its final name
and the directory fsynced: a run that fails or is interrupted leaves no file under a final name
that is not complete (a temporary file is removed on the way out; after a crash one may remain, hidden).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, BinaryIO

from kafkalog.tools.command import (
    EXIT_IO,
    EXIT_OK,
    UsageError,
    add_crc_options,
    add_read_options,
    add_tiered_options,
    corrupt_failure,
    crc_options,
    only_internal,
    parse_time,
    partition_filter,
    partitions_of,
    unlink,
)
from kafkalog.tools.formats import add_format_options, make_decoding, parse_formats
from kafkalog.tools.jobs import add_jobs_option

if TYPE_CHECKING:
    import pyarrow as pa

    from kafkalog.dataset.scan import PartitionPlan, Slice
    from kafkalog.dataset.values import Decoding
    from kafkalog.fast.arrow import CommittedState
    from kafkalog.format.records.stream import OnCorrupt

__all__ = ["FILE_COLUMNS", "export", "register"]

#: The columns each file holds: topic and partition are in its path (``topic=T/partition=P``), as Hive and Spark lay it out.
FILE_COLUMNS = ("key", "value", "offset", "timestamp", "timestampType", "headers")
_SUFFIX = {"parquet": ".parquet", "jsonl": ".jsonl", "csv": ".csv"}


class _Progress:
    """One line on stderr while exporting, when stderr is a terminal: partitions, rows, rows/s."""

    def __init__(self, total: int) -> None:
        self.enabled = sys.stderr.isatty()
        self.total = total
        self.done = 0
        self.rows = 0
        self.t0 = time.monotonic()
        self.last = 0.0

    def add(self, rows: int, partition_done: bool | int = False) -> None:
        """``rows`` more written; ``partition_done``: a partition finished with them (a number: that many)."""
        self.rows += rows
        self.done += partition_done
        now = time.monotonic()
        if self.enabled and (now - self.last > 0.2 or partition_done and self.done == self.total):
            self.last = now
            rate = self.rows / max(now - self.t0, 1e-9)
            width = 30
            filled = width * self.done // max(self.total, 1)
            sys.stderr.write(f"\r\x1b[K[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} partitions, "
                             f"{self.rows:,} rows ({rate:,.0f} rows/s)")
            sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _AtomicFile:
    """A file written under a hidden temporary name and renamed into place only when complete."""

    def __init__(self, final: str) -> None:
        self.final = final
        self.tmp = self.temporary(final, os.getpid())
        self.f: BinaryIO = open(self.tmp, "wb")  # noqa: SIM115 - closed in _commit or abort

    @staticmethod
    def temporary(final: str, pid: int) -> str:
        """The name process ``pid`` writes ``final`` under until it is complete."""
        directory, name = os.path.split(final)
        return os.path.join(directory, f".{name}.{pid}.tmp")

    def abort(self) -> None:
        if not self.f.closed:
            self.f.close()
        unlink(self.tmp)


def _commit(group: list[_AtomicFile]) -> None:
    """Make finished files durable under their final names: fsync each, rename each into place,
    then fsync each directory once. Done a group at a time, every file's fsync before any rename, so
    that a file system with one journal (ext4, XFS) commits the renames of a group together rather
    than once per file; a file is never renamed before its own data is on disk. On an error the
    files of the group not yet renamed are removed and the error is raised."""
    renamed = 0
    a = group[0]
    try:
        for a in group:
            a.f.flush()
            if hasattr(os, "posix_fadvise"):
                # start every file's writeback before waiting on the first (Linux starts it for
                # DONTNEED): their blocks are allocated in one journal commit, not one per fsync.
                # Only a hint: a file system that refuses it changes nothing
                with contextlib.suppress(OSError):
                    os.posix_fadvise(a.f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        for a in group:
            os.fsync(a.f.fileno())
            a.f.close()
        for a in group:
            os.replace(a.tmp, a.final)
            renamed += 1
    except BaseException as e:
        if isinstance(e, OSError) and e.filename is None:
            e.filename = a.final  # an fsync's error names no file: the one it was making durable
        for b in group[renamed:]:
            b.abort()
        raise
    for directory in dict.fromkeys(os.path.dirname(a.final) for a in group):
        _fsync_dir(directory)


class _Committer:
    """Commits finished files in a second thread while the next partitions are decoded and written
    (an fsync waits on the disk, not the CPU): each time the thread wakes it commits every file
    finished since (:func:`_commit`). :meth:`close` waits for all of them; a failed commit fails
    the run, after the rest are committed."""

    def __init__(self) -> None:
        import queue
        import threading

        self._queue: queue.SimpleQueue[_AtomicFile | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="kafkalog-export-commit", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import queue

        done = False
        while not done:
            group = [self._queue.get()]
            while True:
                try:
                    group.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            done = group[-1] is None
            files = [a for a in group if a is not None]
            if files:
                try:
                    _commit(files)
                except BaseException as e:  # noqa: BLE001 - raised again by close(), in the caller's thread
                    self._error = self._error or e

    def submit(self, a: _AtomicFile) -> None:
        self._queue.put(a)

    def close(self) -> BaseException | None:
        """Wait until every submitted file is committed (or removed); the first failure, if any."""
        self._queue.put(None)
        self._thread.join()
        return self._error


def _binary_encoder(how: str) -> Any:
    import base64

    from kafkalog.tools.cat import text

    if how == "base64":
        return lambda b: None if b is None else base64.b64encode(b).decode("ascii")
    if how == "hex":
        return lambda b: None if b is None else b.hex()
    return lambda b: None if b is None else text(b)


def _rows(batch: pa.RecordBatch, encode: Any) -> Iterator[dict[str, Any]]:
    """The rows of a batch with key, value and header values encoded as text, timestamps in ms."""
    import pyarrow as pa

    cols = {name: batch.column(name) for name in batch.schema.names}
    if "timestamp" in cols:
        cols["timestamp"] = cols["timestamp"].cast(pa.int64()).to_numpy(zero_copy_only=False) // 1000
    lists = {name: (c.tolist() if hasattr(c, "tolist") else c.to_pylist()) for name, c in cols.items()}
    for i in range(batch.num_rows):
        row = {name: v[i] for name, v in lists.items()}
        for name in ("key", "value"):
            if name in row:
                row[name] = encode(row[name])
        if "headers" in row and row["headers"] is not None:
            row["headers"] = [{"key": h["key"], "value": encode(h["value"])} for h in row["headers"]]
        yield row


def _write_parquet(f: BinaryIO, batches: Iterator[pa.RecordBatch], schema: pa.Schema, compression: str, progress: _Progress) -> int:
    import pyarrow.parquet as pq

    n = 0
    # dictionaries only where values repeat, statistics only where min/max prune (not on keys and values):
    # both cost more than they give on Kafka payloads. Offsets, consecutive but for compaction's holes and
    # markers, are delta-encoded: 30x smaller than plain and cheaper to write
    numeric = [c for c in ("offset", "timestamp", "timestampType") if c in schema.names]
    delta = {"offset": "DELTA_BINARY_PACKED"} if "offset" in schema.names else None
    with pq.ParquetWriter(f, schema, compression=compression, use_dictionary=["timestampType", "headers.list.element.key"],
                          write_statistics=numeric, column_encoding=delta) as w:
        for b in batches:
            w.write_batch(b)
            n += b.num_rows
            progress.add(b.num_rows)
    return n


def _write_jsonl(f: BinaryIO, batches: Iterator[pa.RecordBatch], encode: Any, progress: _Progress) -> int:
    import json

    n = 0
    for b in batches:
        lines = [json.dumps(r, separators=(",", ":"), ensure_ascii=False) for r in _rows(b, encode)]
        if lines:
            f.write(("\n".join(lines) + "\n").encode("utf-8"))
        n += b.num_rows
        progress.add(b.num_rows)
    return n


def _write_csv(f: BinaryIO, batches: Iterator[pa.RecordBatch], names: list[str], encode: Any, progress: _Progress,
               header: bool = True) -> int:
    import csv
    import io
    import json

    n = 0
    text = io.TextIOWrapper(f, encoding="utf-8", newline="", write_through=True)
    w = csv.writer(text)
    if header:  # not in a part of a file (see _export_part): the file's first line, written once
        w.writerow(names)
    for b in batches:
        for r in _rows(b, encode):
            if "headers" in r:
                r["headers"] = "" if r["headers"] is None else json.dumps(r["headers"], separators=(",", ":"), ensure_ascii=False)
            w.writerow(["" if r[c] is None else r[c] for c in names])
        n += b.num_rows
        progress.add(b.num_rows)
    text.flush()
    text.detach()
    return n


def _final(out: str, p: PartitionPlan, fmt: str) -> str:
    """Where partition ``p``'s file goes."""
    return os.path.join(out, f"topic={p.topic}", f"partition={p.partition}", "part-00000" + _SUFFIX[fmt])


def _part_file(out: str, p: PartitionPlan, fmt: str, part: tuple[int, int]) -> str:
    """Where the worker reading segments ``part`` of partition ``p`` writes its share of the file
    (hidden, beside the file; named by its first segment, so that the parent removes what a failed run leaves)."""
    directory, name = os.path.split(_final(out, p, fmt))
    return os.path.join(directory, f".{name}.from-{part[0]}.tmp")


def _slice_bytes(sl: Slice) -> int:
    return ((sl.segment.size or 0) if sl.end is None else sl.end) - sl.start


def _plan_bytes(p: PartitionPlan) -> int:
    """The bytes of ``.log`` a plan reads."""
    return sum(map(_slice_bytes, p.slices))


def _collecting(opts: dict[str, Any]) -> list[Exception | str]:
    """In a worker process: what the run reports as it reads, in order, for the parent to report
    (:func:`_export_parallel`): the corrupt batches ``--skip-corrupt`` reads past and the warnings of values
    that do not decode. ``opts`` is changed to collect them."""
    events: list[Exception | str] = []
    if opts.pop("collect", False):
        opts["on_corrupt"] = events.append
    if opts.pop("warns", False):
        opts["decoding"] = copy.copy(opts["decoding"])
        opts["decoding"].warn = events.append
    return events


def _export_run(plans: list[PartitionPlan], out: str, opts: dict[str, Any]) -> tuple[int, int, list[Exception | str]]:
    """A run of partitions exported in a worker process (``-j``): (files, rows, what it reports, see :func:`_collecting`)."""
    events = _collecting(opts)
    quiet = _Progress(1)
    quiet.enabled = False
    files, rows = export(plans, out, progress=quiet, jobs=1, **opts)
    return files, rows, events


def _partition_batches(p: PartitionPlan, cols: list[str], opts: dict[str, Any], **read: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The schema of ``p``'s file and its batches, decoded as ``opts`` say (``read``: more of
    :func:`~kafkalog.dataset.scan.read_plans`' options: a fetch-ahead, a part)."""
    from kafkalog.dataset.scan import BATCH_ROWS, read_plans, schema_of

    schema = schema_of(cols)
    decoding = opts["decoding"]
    kw = {"read_committed": opts["read_committed"], "batch_rows": opts["batch_rows"] or BATCH_ROWS, "verify_crc": opts["verify_crc"],
          "on_corrupt": opts["on_corrupt"], **read}
    if decoding is None:
        return schema, read_plans([p], columns=cols, **kw)
    schema = decoding.schema(schema, [p.topic])
    return schema, decoding.batches(read_plans([p], columns=decoding.columns(cols), **kw), p.topic, p.partition, schema)


def _export_part(p: PartitionPlan, part: tuple[int, int], out: str, opts: dict[str, Any],
                 committed: CommittedState | None = None) -> tuple[bool, int, list[Exception | str], CommittedState | None]:
    """Segments ``part`` of a large partition read in a worker process (``-j``) into its share of
    the partition's file (:func:`_part_file`): a Parquet file of its row groups (the parent joins
    them into one file: :mod:`kafkalog.tools.parquet_join`), or the lines of a JSON lines or CSV
    file (the parent concatenates them). Read_committed, the part starts from ``committed``, by
    default the state the ``.txnindex`` files give (:func:`~kafkalog.dataset.scan.committed_at`).
    Returns whether there was a batch (a part without one writes nothing), rows, what it reports
    (:func:`_collecting`) and the read_committed state it ends in."""
    events = _collecting(opts)
    ended: list[CommittedState | None] = [None]
    path = _part_file(out, p, opts["fmt"], part)
    unlink(path)  # a part read again (see _export_parallel) replaces the one read before
    schema, batches = _partition_batches(p, _file_schema(opts["columns"]).names, opts, part=part, committed=committed,
                                         on_committed=lambda state: ended.__setitem__(0, state))
    first = next(batches, None)
    if first is None:
        return False, 0, events, ended[0]
    quiet = _Progress(1)
    quiet.enabled = False
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path, "wb") as f:
            if opts["fmt"] == "parquet":
                n = _write_parquet(f, _chained(first, batches), schema, opts["compression"], quiet)
            elif opts["fmt"] == "jsonl":
                n = _write_jsonl(f, _chained(first, batches), _binary_encoder(opts["binary"]), quiet)
            else:
                n = _write_csv(f, _chained(first, batches), schema.names, _binary_encoder(opts["binary"]), quiet, header=False)
    except BaseException:
        unlink(path)
        raise
    return True, n, events, ended[0]


def _export_task(task: tuple[Any, ...]) -> tuple[Any, ...]:
    """One task of :func:`_export_parallel` in a worker: ``("run", plans, out, opts)`` or ``("part", plan, (i, j), out, opts)``."""
    return _export_run(*task[1:]) if task[0] == "run" else _export_part(*task[1:])


def _chained(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield first
    yield from rest


def _export_parallel(plans: list[PartitionPlan], out: str, jobs: int, progress: _Progress, opts: dict[str, Any],
                     warn: Callable[[str], None] | None) -> tuple[int, int]:
    """:func:`export` of runs of plans in worker processes, results taken in plan order (see
    :func:`kafkalog.tools.jobs.ordered_map`): each worker writes and commits its partitions' files
    as one process does, so the files are the same whatever the number of processes.

    A partition larger than a task's share (:func:`~kafkalog.tools.jobs.share`) and of several
    segments is cut into ranges of whole segments, each read by a worker into a part
    (:func:`_export_part`); this process joins the parts into the partition's file, in order, as
    they come. A batch never holds records of two segments, so the file holds the batches, row
    groups and bytes of one process's. Typed columns are decoded record by record (the schemas
    looked up by id), so a part decodes as the whole read does.

    Read_committed, the rows of a part depend on the aborted transactions under way at its start
    (begun in an earlier part, their ABORT marker in this one or a later one): a part starts from
    the state the partition's ``.txnindex`` files give for its first offset, which is the state
    the read of the parts before ends in when the files agree with the markers (as Kafka's broker
    answers a fetch from any offset with them, SPEC R-ISO-03). Each part's end state is checked
    against the next part's start, in order; where they differ (a ``.txnindex`` that disagrees
    with the log) that part is read again here, from the state the parts before end in: the
    rows are one process's whatever the files hold.

    The corrupt batches read past (``--skip-corrupt``) and the values that do not decode are
    reported here through ``opts["on_corrupt"]`` and ``warn``, in the order one process reports them."""
    from kafkalog.dataset.scan import committed_at
    from kafkalog.tools.jobs import WorkerDied, ordered_map, runs, share, span

    report = opts["on_corrupt"]
    opts = {**opts, "on_corrupt": "fail", "collect": True} if callable(report) else opts

    def reported(events: list[Exception | str]) -> None:
        for e in events:
            report(e) if isinstance(e, Exception) else warn(e)  # type: ignore[operator, misc]

    fmt = opts["fmt"]
    weights = [_plan_bytes(p) for p in plans]
    target = share(weights, jobs)
    tasks: list[tuple[Any, ...]] = []
    for run in runs(plans, weights, jobs, target):
        p = run[0]
        if len(run) == 1 and len(p.slices) > 1 and _plan_bytes(p) > target:
            parts = runs(range(len(p.slices)), [_slice_bytes(sl) for sl in p.slices], jobs, target)
            tasks += [("part", p, (r[0], r[-1] + 1), out, dict(opts)) for r in parts]
        else:
            tasks.append(("run", run, out, dict(opts)))

    def name(i: int) -> str:
        t = tasks[i]
        if t[0] == "run":
            return span([p.files.display() for p in t[1]])
        return f"{t[1].files.display()} (segments {t[2][0] + 1} to {t[2][1]} of {len(t[1].slices)})"

    results = ordered_map(_export_task, tasks, jobs, preload=["pyarrow", "kafkalog.tools.export"], names=name)
    schema = _file_schema(opts["columns"])
    encode = _binary_encoder(opts["binary"])
    committer = _Committer()
    files = rows = 0
    made: set[str] = set()
    k = 0
    try:
        while k < len(tasks):
            if tasks[k][0] == "run":
                f, n, events = next(results)
                reported(events)
                files += f
                rows += n
                progress.add(n, partition_done=len(tasks[k][1]))
                k += 1
                continue
            p = tasks[k][1]
            mine = [t[2] for t in tasks[k:] if t[0] == "part" and t[1] is p]

            def parts(mine: list[tuple[int, int]] = mine, p: PartitionPlan = p) -> Iterator[tuple[str, int]]:
                """Each part that holds a batch: its file and rows, taken in order (a failed part raises here)."""
                ended = None  # the read_committed state the part before ends in
                for part in mine:
                    wrote, n, events, end = next(results)
                    start = committed_at(p, part[0]) if opts["read_committed"] else None
                    if start is not None and ended is not None and ended.until(p.aborted, start.reached + 1) != start:
                        wrote, n, events, end = _export_part(p, part, out, dict(opts), ended)  # read again from where the parts before end
                    ended = end
                    reported(events)
                    if wrote:
                        yield _part_file(out, p, fmt, part), n

            n = _write_file(p, out, fmt, parts(), made, committer, progress, lambda f, b: _join_parts(f, b, schema.names, encode, progress, fmt))
            files += n is not None
            rows += n or 0
            k += len(mine)
    except BaseException as e:
        results.close()  # the workers stop: those under way finish, the rest are not started
        committer.close()
        for i, t in enumerate(tasks):  # what they leave, hidden, is not to be left
            if t[0] == "part":
                unlink(_part_file(out, t[1], fmt, t[2]))
            elif isinstance(e, WorkerDied) and i in e.running:
                for p in t[1]:
                    unlink(_AtomicFile.temporary(_final(out, p, fmt), e.running[i]))
        raise
    if (error := committer.close()) is not None:
        raise error
    return files, rows


def _join_parts(f: BinaryIO, parts: Iterator[tuple[str, int]], names: list[str], encode: Any, progress: _Progress, fmt: str) -> int:
    """A partition's file from its parts (:func:`_export_part`), in order, each removed once read:
    Parquet's row groups joined under one footer, the lines of JSON lines and CSV (after the header) concatenated."""
    import shutil

    from kafkalog.tools.parquet_join import join

    n = 0

    def paths() -> Iterator[str]:
        nonlocal n
        for path, rows in parts:
            try:
                yield path
            finally:
                unlink(path)
            n += rows
            progress.add(rows)

    if fmt == "parquet":
        join(f, paths())
        return n
    if fmt == "csv":
        _write_csv(f, iter(()), names, encode, progress)
    for path in paths():
        with open(path, "rb") as src:
            shutil.copyfileobj(src, f, 1 << 20)
    return n


def _file_schema(columns: list[str] | None) -> pa.Schema:
    """The schema of the files (topic and partition are in their path)."""
    from kafkalog.dataset.scan import schema_of

    return schema_of([c for c in (columns or FILE_COLUMNS) if c not in ("topic", "partition")])


def _write_file(p: PartitionPlan, out: str, fmt: str, items: Iterator[Any], made: set[str], committer: _Committer,
                progress: _Progress, write: Callable[[BinaryIO, Iterator[Any]], int]) -> int | None:
    """Partition ``p``'s file written by ``write`` from ``items`` (its batches, or its parts) under
    a temporary name and handed to ``committer``: its rows, or None when there is no item (no file).
    ``made``: the topic directories made so far."""
    first = next(items, None)
    if first is None:
        progress.add(0, partition_done=True)
        return None
    topic_dir = os.path.join(out, f"topic={p.topic}")
    if topic_dir not in made:
        os.makedirs(topic_dir, exist_ok=True)
        made.add(topic_dir)
    final = _final(out, p, fmt)
    with contextlib.suppress(FileExistsError):
        os.mkdir(os.path.dirname(final))
    target = _AtomicFile(final)
    try:
        n = write(target.f, _chained(first, items))
    except BaseException:
        target.abort()
        raise
    committer.submit(target)
    progress.add(0, partition_done=True)
    return n


def export(
    plans: list[PartitionPlan], out: str, *, fmt: str = "parquet", columns: list[str] | None = None, read_committed: bool = False,
    compression: str = "snappy", binary: str = "base64", progress: _Progress | None = None, batch_rows: int | None = None,
    verify_crc: bool = True, on_corrupt: OnCorrupt = "fail", decoding: Decoding | None = None, jobs: int = 1,
) -> tuple[int, int]:
    """Write each planned partition to ``out/topic=T/partition=P/part-00000.<fmt>`` (partitions with
    no row in range get no file); returns (files, rows). Batch CRCs are checked as
    :func:`kafkalog.scan` checks them: a corrupt batch raises :class:`~kafkalog.errors.CrcMismatchError`
    and the partition being written gets no file, unless ``on_corrupt`` reads past it. ``decoding``
    writes typed key and value columns (Parquet only: :class:`kafkalog.dataset.values.Decoding`),
    each topic's files with its own types.

    ``jobs`` above 1 writes partitions in that many worker processes (when there are several and
    :data:`~kafkalog.tools.jobs.MIN_PARALLEL_BYTES` to read): the same files, byte for byte, and
    the same error for the first partition that fails; partitions after it may have been written
    (each file whole). A large partition of several segments is read by several processes, a range
    of segments each, and its file written here from their parts (see :func:`_export_parallel`). A
    plan or ``decoding`` that cannot be pickled (a source of segments holding a live connection)
    keeps the run in this process; ``decoding``'s warnings are printed by this process, in order."""
    from kafkalog.dataset.scan import read_ahead

    progress = progress or _Progress(len(plans))
    opts = {"fmt": fmt, "columns": columns, "read_committed": read_committed, "compression": compression, "binary": binary,
            "batch_rows": batch_rows, "verify_crc": verify_crc, "on_corrupt": on_corrupt, "decoding": decoding}
    if jobs > 1 and plans and (len(plans) > 1 or len(plans[0].slices) > 1):
        from kafkalog.tools.jobs import MIN_PARALLEL_BYTES, crosses_processes

        shipped = copy.copy(decoding)  # the workers' warnings are reported here (_collecting): they get no printer
        if shipped is not None:
            shipped.warn = None
        if sum(map(_plan_bytes, plans)) >= MIN_PARALLEL_BYTES and crosses_processes((plans[0], shipped)):
            warn = None if decoding is None else decoding.warn
            return _export_parallel(plans, out, jobs, progress, {**opts, "decoding": shipped, "warns": warn is not None}, warn)

    cols = _file_schema(columns).names
    encode = _binary_encoder(binary)
    files = rows = 0
    made: set[str] = set()  # topic directories made (or found) so far
    committer = _Committer()
    ahead = read_ahead(plans)  # object storage: the next partitions' bytes are fetched while one is written
    try:
        for p in plans:
            schema, batches = _partition_batches(p, cols, opts, ahead=ahead)
            if fmt == "parquet":
                n = _write_file(p, out, fmt, batches, made, committer, progress,
                                lambda f, b, schema=schema: _write_parquet(f, b, schema, compression, progress))  # type: ignore[misc]
            elif fmt == "jsonl":
                n = _write_file(p, out, fmt, batches, made, committer, progress, lambda f, b: _write_jsonl(f, b, encode, progress))
            else:
                n = _write_file(p, out, fmt, batches, made, committer, progress,
                                lambda f, b, names=schema.names: _write_csv(f, b, names, encode, progress))  # type: ignore[misc]
            files += n is not None
            rows += n or 0
    except BaseException:
        ahead.close()
        committer.close()  # no temporary file is left behind by a commit in flight
        raise
    if (error := committer.close()) is not None:
        raise error  # a failed commit (its temporary file removed) fails the run
    return files, rows


def _command(args: argparse.Namespace) -> int:
    import pyarrow  # noqa: F401 - the arrow extra: missing, the run ends here (one line naming it), before anything is read or written

    from kafkalog.dataset.scan import plan_all
    from kafkalog.errors import CrcMismatchError, LogNotFoundError

    if args.format != "parquet" and args.compression != "snappy":
        raise UsageError("--compression applies to --format parquet only")
    formats = parse_formats(args)
    if formats and args.format != "parquet":
        raise UsageError("--key-format/--value-format write typed columns, to --format parquet only (cat -s prints them as JSON)")
    if formats and args.on_undecodable == "raw":
        raise UsageError("--on-undecodable raw keeps bytes, which a typed column cannot hold: give error, null or skip")
    if args.batch_rows is not None and args.batch_rows < 1:
        raise UsageError(f"--batch-rows must be positive, got {args.batch_rows}")
    columns = args.columns.split(",") if args.columns else None
    if columns:
        from kafkalog.fast.arrow import KAFKA_SCHEMA

        if unknown := [c for c in columns if c not in KAFKA_SCHEMA.names]:
            raise UsageError(f"--columns: unknown {', '.join(unknown)} (known: {', '.join(KAFKA_SCHEMA.names)})")
    verify_crc, on_corrupt = crc_options(args, "export")
    try:
        files = partitions_of(args, wants=partition_filter(args))
    except LogNotFoundError as e:
        print(f"kafkalog export: {e}", file=sys.stderr)
        return EXIT_IO
    if not files and not args.topic and not args.partition:
        print(only_internal("export", args), file=sys.stderr)
    committed = args.isolation == "read_committed"
    plans = plan_all(files, start_offset=args.start_offset, end_offset=args.end_offset,
                     start_time=None if args.start_time is None else parse_time(args.start_time),
                     end_time=None if args.end_time is None else parse_time(args.end_time), read_committed=committed,
                     allow_gaps=args.allow_gaps, include_deleted=args.include_deleted,
                     on_gap=lambda g: print(f"kafkalog export: warning: {g} (--allow-gaps: reading on)", file=sys.stderr),
                     on_deleted=lambda m: print(f"kafkalog export: warning: {m}", file=sys.stderr), jobs=args.jobs)
    os.makedirs(args.output, exist_ok=True)
    progress = _Progress(len(plans))
    t0 = time.monotonic()
    try:
        n_files, rows = export(plans, args.output, fmt=args.format, columns=columns, read_committed=committed, compression=args.compression,
                               binary=args.binary, progress=progress, batch_rows=args.batch_rows, verify_crc=verify_crc, on_corrupt=on_corrupt,
                               decoding=make_decoding(args, formats, "export") if formats else None,
                               jobs=args.jobs)
    except CrcMismatchError as e:
        progress.close()
        return corrupt_failure("export", e)  # the partition being written got no file; those written before are complete
    finally:
        progress.close()
    took = time.monotonic() - t0
    print(f"exported {rows:,} rows of {len(plans)} partitions to {n_files} {args.format} files under {args.output} in {took:.1f} s",
          file=sys.stderr)
    return EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog export`` to the command line."""
    e = sub.add_parser("export", help="write records as Parquet, JSON lines or CSV, Hive-partitioned by topic and partition", description=(
        "Write the records of data dirs, partition dirs, globs or URLs (as kafkalog.scan reads them: no transaction "
        "markers) to OUT/topic=T/partition=P/part-00000.{parquet,jsonl,csv}, one file per partition with rows. Files "
        "hold key, value, offset, timestamp, timestampType and headers (topic and partition are in the path); JSON and "
        "CSV give keys and values as base64 (--binary) and timestamps in ms. Each file is written under a hidden "
        "temporary name, fsynced and renamed: a failed run leaves no partial file under a final name. A progress bar "
        "shows on a terminal. Every batch's CRC is checked, as Kafka's consumer checks it: a corrupt batch fails the "
        "run (exit 1) naming the file, byte position and offset, unless --skip-corrupt (or --no-crc)."))
    e.add_argument("paths", nargs="*", metavar="PATH")
    e.add_argument("-o", "--output", required=True, metavar="OUT", help="the directory to write into (created if needed; files of the same names are replaced)")
    e.add_argument("--format", choices=["parquet", "jsonl", "csv"], default="parquet", help="default: parquet")
    e.add_argument("-t", "--topic", action="append", metavar="TOPIC", help="only this topic (repeatable)")
    e.add_argument("-p", "--partition", action="append", type=int, metavar="N", help="only this partition (repeatable)")
    e.add_argument("--start-offset", type=int, metavar="N", help="from this offset of each partition (inclusive)")
    e.add_argument("--end-offset", type=int, metavar="N", help="up to this offset of each partition (exclusive)")
    e.add_argument("--start-time", metavar="TIME", help=(
        "from the first record at or after this time (ms since the epoch, or ISO 8601; resolved per partition through the "
        "time index, as Kafka's offsetsForTimes)"))
    e.add_argument("--end-time", metavar="TIME", help="up to, not including, the first record at or after this time")
    e.add_argument("--isolation", choices=["read_uncommitted", "read_committed"], default="read_uncommitted", help=(
        "read_committed: leave out aborted transactions and everything from the last stable offset on"))
    e.add_argument("--columns", metavar="A,B,...", help=f"the columns to write (default: {','.join(FILE_COLUMNS)})")
    e.add_argument("--compression", choices=["snappy", "zstd", "lz4", "gzip", "none"], default="snappy", help="Parquet compression (default: snappy)")
    e.add_argument("--binary", choices=["base64", "hex", "text"], default="base64", help=(
        "JSON and CSV: keys and values as base64 (default, lossless), hex, or text (UTF-8, other bytes escaped as \\xNN: lossy)"))
    e.add_argument("--batch-rows", type=int, metavar="N", help="records per batch read, so per Parquet row group at most (default 32768)")
    e.add_argument("--allow-gaps", action="store_true", help="read on over offsets the files say existed but no .log holds, with a warning")
    add_read_options(e)
    add_crc_options(e)
    add_format_options(e, serdes_flag=False)
    add_tiered_options(e)
    add_jobs_option(e, "partitions (and a large partition's segments)")
    e.set_defaults(func=_command)
