"""A batch read's planning of many partition dirs on local disk, in worker processes (``planningJobs``).

Planning costs some 100 us of Python a partition dir, all of it per partition: listing the dir,
its :class:`~.layout.Replica`, its :class:`~.planning.PartitionLog` (merge, data-loss check),
offsets, bytes and slices. With :data:`PARALLEL_PLANNING` or more partition dirs, this process
lists only the directories above them and hands the dirs whose names say their partition to worker
processes (forked from this one when it runs no other thread, :func:`_forkable`; else those of
:func:`kafkalog.dataset.processes.ordered_map`), in runs that hold every copy of a
partition; each worker does all of the above for its partitions and returns plain values (a
:class:`_Run`): what was logged and raised at each step, the bytes planned and the slices (as
rows), kept by dir or partition only where they differ from the usual. The slices of a partition
whose segments are no larger than the least split size do not depend on the split
(:meth:`PartitionLog.fixed_slices`); the others are cut here once the split is known from every
partition's bytes. This process then replays the steps in the serial planning's order (every dir's
listing and replica, the partitions named in the options, every partition's log, then its offsets,
then its slices), visiting only the dirs and partitions something happens to, so that warnings come
in the same order and the same first error is raised; the input partitions are the serial
planning's. Whatever the workers cannot settle as one process would (a dir inside a partition dir,
a listing that fails, an error that does not cross processes, a partition also in what this
process reads) is planned again by the serial code.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import sys
import threading
import time
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from itertools import groupby
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from fsspec.implementations.local import LocalFileSystem

from kafkalog.format.tiered_aiven import parse_object_key
from kafkalog.log.gaps import LogDirOffsets
from kafkalog.log.source import Entry, LocalStorage, gc_paused

from .errors import LayoutError
from .filters import RowFilter
from .layout import (
    _SKIPPED_DIR,
    FileSystemRef,
    Replica,
    _aiven_replicas,
    _child,
    _expand,
    _nothing_found,
    _replica_order,
    parse_partition_dir,
)
from .options import SourceOptions
from .planning import PartitionLog, SliceRow, batch_request, group_replicas, pack

if TYPE_CHECKING:
    from pyspark.sql.datasource import InputPartition

    from .source import _Planner

__all__ = ["PARALLEL_PLANNING", "plan_in_processes", "planning_jobs"]

#: Partition dirs from which a batch read plans in worker processes. Set when a dir cost about
#: 0.14 ms, where half their planning outweighed the workers' start from a server (about 1 s of
#: imports: pyspark's) and the planning process's listing and replay; a dir now costs about 0.08 ms
#: in one process (10,000 in 0.76 s), so forked workers (which start at no cost) still gain here and
#: workers from a server break even; not re-tuned.
PARALLEL_PLANNING = 16384

Key = tuple[str, int]
#: a worker's answer when the serial planning must redo it all
BAIL = "bail"


def planning_jobs(opts: SourceOptions) -> int:
    """The processes a batch planning may use: ``planningJobs``, else the CPUs available
    (:func:`kafkalog.dataset.processes.default_jobs`); 1 in a daemonic process (which may start
    none) and, unless ``planningJobs`` is given, in a program whose main module a worker would run
    again (:func:`kafkalog.dataset.scan.main_runs_again`), but for Spark's own Python workers, whose
    modules (``pyspark.daemon``, ``pyspark.worker``) keep their work under ``if __name__ == "__main__":``."""
    if multiprocessing.current_process().daemon:
        return 1
    if opts.planning_jobs is not None:
        return opts.planning_jobs
    from kafkalog.dataset.processes import default_jobs
    from kafkalog.dataset.scan import main_runs_again

    main = getattr(getattr(sys.modules.get("__main__"), "__spec__", None), "name", None) or ""
    if main_runs_again() and not main.startswith("pyspark."):
        return 1
    return default_jobs()


class _Walk:
    """This process's listing of a read's paths down to the partition dirs: the serial discovery's
    steps in order, and the dirs the workers list and read."""

    def __init__(self) -> None:
        #: ("dir", path, listing) | ("dirs", first, end: the workers' dirs of those numbers) | ("root", root) | ("path", raw, any roots)
        self.steps: list[tuple] = []
        self.dirs: list[tuple[str, Key]] = []  # the workers' dirs, by number: (dir, its partition by name)


def _walk(paths: tuple[str, ...] | list[str], fs: LocalFileSystem) -> _Walk | None:
    """List ``paths`` as :func:`~.layout.discover` does (each root at any depth, dirs ending in
    ``-delete``, ``-future`` or ``-stray`` not entered), but for the dirs whose name alone says
    their partition: those are left to the workers. None (plan serially) when a root may be a
    partition dir itself (a file named as a segment, or a leftover), a listing fails (the serial
    planning meets it where it does), or a partition left to the workers may also be in what this
    process reads: a dir whose name reads as two partitions (a tiered copy's), or Aiven's plug-in's
    objects (this process reads them, and the workers' runs would not hold every copy of it)."""
    storage = LocalStorage()
    walk = _Walk()
    here: set[Key] = set()  # the partitions the dirs listed here may turn out to hold
    try:
        for raw in paths:
            roots = _expand(fs, raw)
            for root in roots:
                found: list[tuple[str, list[Entry] | None, Key | None]] = []
                todo = [root]
                while todo:
                    d = todo.pop()
                    entries = storage.listdir(d)
                    if len(entries) >= PARALLEL_PLANNING:
                        _start_server()
                    files = [e for e in entries if not e.is_dir]
                    if d != root:
                        found.append((d, files, None))
                        # the plug-in's objects: read in this process if the root holds no partition dir (:func:`_replayed`)
                        here.update((k.topic, k.partition) for e in files if (k := parse_object_key(e.path)) is not None)
                    elif any(e.name[:20].isdigit() or e.name.endswith(_LEFTOVERS) for e in files):
                        return None
                    for e in entries:
                        if e.is_dir and not _SKIPPED_DIR.search(e.name):
                            broker = parse_partition_dir(e.name, False)
                            # the tiered names hold a 22-character id: a shorter name reads as a broker's
                            tiered = parse_partition_dir(e.name, True) if len(e.name) > 24 else broker
                            if broker is not None and tiered == broker:
                                found.append((e.path, None, broker[:2]))
                            else:
                                here.update(k[:2] for k in (broker, tiered) if k is not None)
                                todo.append(e.path)
                for local, row in groupby(sorted(found, key=itemgetter(0)), key=lambda f: f[2] is None):
                    if local:
                        walk.steps += (("dir", d, files) for d, files, _ in row)
                    else:  # one step for the workers' dirs in a row
                        first = len(walk.dirs)
                        walk.dirs += ((d, key) for d, _, key in row)
                        walk.steps.append(("dirs", first, len(walk.dirs)))
                walk.steps.append(("root", root))
            walk.steps.append(("path", raw, bool(roots)))
    except (OSError, LayoutError):
        return None  # the serial planning meets it where it does, after what the paths before it log
    if here and not here.isdisjoint(key for _, key in walk.dirs):
        return None
    return walk


_LEFTOVERS = (".deleted", ".cleaned", ".swap")
#: the modules the workers' server imports before it forks them (ordered_map's own, then this one)
_PRELOAD = ["kafkalog.dataset.processes", __name__]


def _start_server() -> None:
    """Start the server the workers are forked from now, as :func:`kafkalog.dataset.processes.ordered_map`
    would (with the same modules preloaded), so that its imports (pyspark's, most of a second) run
    while this process lists the partition dirs; none when the workers are forked from this process."""
    if not _forkable() and "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        multiprocessing.get_context("forkserver").set_forkserver_preload(_PRELOAD)
        forkserver.ensure_running()


class _Context:
    """What every worker's run shares (pickled with each run)."""

    def __init__(self, opts: SourceOptions, row_filter: RowFilter, fsref: FileSystemRef, least_split: int, level: int) -> None:
        self.opts = opts
        self.row_filter = row_filter
        self.fsref = fsref
        self.least_split = least_split
        self.level = level  # the lowest level a logger of the planning process takes
        self.token = (os.getpid(), time.monotonic_ns())  # this planning's, across the runs' copies of it

    def wants(self, topic: str, partition: int) -> bool:
        """Whether the subscription and the pushed filters take ``topic``-``partition`` (:meth:`_Planner._wants`)."""
        return self.opts.wants_partition(topic, partition) and self.row_filter.admits_partition(topic, partition)


_TRACEBACKS = logging.Formatter()


class _Records(logging.Handler):
    """What a worker logs, kept to be logged again, in order, by the planning process."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and not record.exc_text:
            record.exc_text = _TRACEBACKS.formatException(record.exc_info)  # the traceback as text, as a handler formats it
        record.msg, record.args, record.exc_info = record.getMessage(), None, None  # plain text: it pickles
        self.records.append(record)

    def take(self) -> list[logging.LogRecord] | None:
        """The records since the last take (None: none)."""
        if not self.records:
            return None
        out, self.records = self.records, []
        return out


@contextmanager
def _recorded(level: int) -> Iterator[_Records]:
    root = logging.getLogger()
    handler = _Records()
    was = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(was)


def _replay(records: list[logging.LogRecord] | None) -> None:
    for r in records or ():
        logger = logging.getLogger(r.name)
        if logger.isEnabledFor(r.levelno):
            logger.handle(r)


def _crosses(e: Exception) -> bool:
    try:
        pickle.loads(pickle.dumps(e))
    except Exception:  # noqa: BLE001 - any failure: the serial planning raises it itself
        return False
    return True


def _plan_run(task: tuple[_Context, list[tuple[int, str]]]) -> Any:
    """:func:`_planned_run`, or :data:`BAIL` when it fails where it does not keep the error for the
    planning process to raise in its turn (that one plans serially, and meets it in order)."""
    try:
        return _planned_run(task)
    except Exception:  # noqa: BLE001 - met again, in order, by the serial planning
        return BAIL


class _Run:
    """What the workers planned of one or more runs of partition dirs, as plain values: only what
    differs from the usual (a dir that logs nothing and holds a partition, a partition that logs
    nothing and whose slices do not depend on the split) is kept by dir or by partition."""

    def __init__(self) -> None:
        self.dirs: dict[int, tuple[list | None, bool]] = {}  # dir number -> (records, whether it counts as found), unless (None, True)
        self.dir_error: dict[int, Exception] = {}  # the first dir's error (no more is done after it)
        self.keys: list[Key] = []  # the partitions planned, in order
        self.present: list[Key] = []  # other partitions the dirs hold (the options refuse them)
        self.logged: dict[tuple[int, Key], list] = {}  # (step: 0 its log, 1 its offsets, 2 its slices; partition) -> records
        self.bytes = self.files = 0  # the bytes and files planned (:meth:`PartitionLog.planned_bytes`)
        self.rows: list[SliceRow] = []  # the slices of the partitions that are not cut here, in order
        self.cut: dict[Key, tuple] = {}  # the partitions cut here, once the split is known: (log, start, end, lowest timestamp)
        self.errors: dict[tuple[int, Key], tuple] = {}  # the first partition's error: (step, key) -> (exception, records of that step)

    def add(self, run: _Run) -> None:
        """Take in the next run's (runs come in the order of their partitions)."""
        self.dirs.update(run.dirs)
        self.dir_error.update(run.dir_error)
        self.keys += run.keys
        self.present += run.present
        self.logged.update(run.logged)
        self.bytes, self.files = self.bytes + run.bytes, self.files + run.files
        self.rows += run.rows
        self.cut.update(run.cut)
        self.errors.update(run.errors)


def _planned_run(task: tuple[_Context, list[tuple[int, str]]]) -> Any:
    """In a worker: the planning of one run of partition dirs ((number, dir) in the serial
    planning's order, holding every copy of their partitions), as a :class:`_Run`, or :data:`BAIL`
    when the serial planning must redo it. The first error (of a dir, else of a partition) is kept
    with what was logged before it at its step, and ends the run."""
    ctx, dirs = task
    fs = ctx.fsref.get()
    replicas: list[Replica] = []
    out = _Run()
    admitted: set[Key] = set()  # the partitions ctx.wants took, asked of the dirs' names (not asked again as they are grouped)

    def wants(topic: str, partition: int) -> bool:
        if ctx.wants(topic, partition):
            admitted.add((topic, partition))
            return True
        return False

    with gc_paused(), _recorded(ctx.level) as rec:
        for n, d in dirs:
            subdirs: list[str] = []
            try:
                files = LocalStorage.files(d, subdirs)  # the walk of its root lists it so (LocalStorage.walk)
            except (FileNotFoundError, NotADirectoryError):
                out.dirs[n] = (None, False)  # removed since listed: as the walk of its root skips it
                continue
            except OSError:
                return BAIL  # the serial listing of its root fails first
            if subdirs:
                return BAIL  # a dir inside a partition dir: discovery reads it as one more dir under the root
            try:
                counted, rep = _child(fs, d, files, wants)
            except Exception as e:  # noqa: BLE001 - raised by the planning process in the serial order
                out.dirs[n] = (rec.take(), False)
                if not _crosses(e):
                    return BAIL
                out.dir_error[n] = e
                return out
            logged = rec.take()
            if logged or not counted:
                out.dirs[n] = (logged, counted)
            if rep is not None:
                replicas.append(rep)
        groups = group_replicas(sorted(replicas, key=_replica_order), ctx.opts, ctx.row_filter, admitted)
        out.keys = keys = sorted(groups)
        out.present = sorted({r.key for r in replicas}.difference(groups))
        log_dirs = _log_dirs(ctx)
        step, key = 0, None
        try:
            logs = []
            for key in keys:
                logs.append(PartitionLog(fs, groups[key], ctx.opts, None, log_dirs))
                if logged := rec.take():
                    out.logged[0, key] = logged
            step = 1
            requests = []
            total = files = 0
            for key, plog in zip(keys, logs, strict=True):
                request = batch_request(plog, ctx.opts, ctx.row_filter)
                if logged := rec.take():
                    out.logged[1, key] = logged
                b, n = plog.planned_bytes(request[1], request[2])
                total, files = total + b, files + n
                requests.append(request)
            out.bytes, out.files = total, files
            del logs
            step = 2
            for key, (plog, start, end, ts_lo) in zip(keys, requests, strict=True):
                fixed = plog.fixed_slices(start, end, least_split=ctx.least_split, ts_lo=ts_lo)
                logged = rec.take()
                if fixed is None:
                    out.cut[key] = (plog, start, end, ts_lo)  # what it logged is logged again as it is cut in the planning process
                else:
                    out.rows += fixed
                    if logged:
                        out.logged[2, key] = logged
        except Exception as e:  # noqa: BLE001 - raised by the planning process in the serial order
            if not _crosses(e):
                return BAIL
            out.errors[step, key] = (e, rec.take())  # type: ignore[index]
    return out


#: in a worker: each log dir's checkpoints, read once for the runs of one planning (its context)
_checkpoints: tuple[object, dict[str, LogDirOffsets]] = (None, {})


def _log_dirs(ctx: _Context) -> dict[str, LogDirOffsets]:
    global _checkpoints
    if _checkpoints[0] != ctx.token:
        _checkpoints = (ctx.token, {})
    return _checkpoints[1]


def plan_in_processes(planner: _Planner) -> list[InputPartition] | None:
    """The batch read's input partitions, planned with worker processes (module docstring); None
    when the serial planning is to plan them: fewer than :data:`PARALLEL_PLANNING` partition dirs,
    not on local disk, one process to use (:func:`planning_jobs`), or a case the workers leave to it."""
    fs = planner.fsref.get()
    if not isinstance(fs, LocalFileSystem):
        return None
    jobs = planning_jobs(planner.opts)
    if jobs < 2:
        return None
    walk = _walk(planner.paths, fs)
    if walk is None or len(walk.dirs) < PARALLEL_PLANNING:
        return None
    from kafkalog.dataset.processes import WorkerDied, ordered_map, runs, span

    # the dirs by partition (a partition's copies in a row, each partition's in the walk's order)
    dirs = walk.dirs
    order = sorted(range(len(dirs)), key=lambda n: dirs[n][1])
    keys, weights = [], []
    for n in order:
        if keys and keys[-1] == dirs[n][1]:
            weights[-1] += 1
        else:
            keys.append(dirs[n][1])
            weights.append(1)
    ctx = _Context(planner.opts, planner.row_filter, planner.fsref, planner.least_split, _lowest_level())
    tasks = []
    i = 0
    for run in runs(range(len(keys)), weights, jobs):
        count = sum(weights[k] for k in run)
        tasks.append((ctx, [(n, dirs[n][0]) for n in sorted(order[i : i + count])]))
        i += count
    names = lambda i: span([d for _, d in tasks[i][1]])  # noqa: E731 - one line
    mapped = _forked(tasks, jobs, names) if _forkable() else ordered_map(_plan_run, tasks, jobs, names=names, preload=_PRELOAD[1:])
    done = _Run()
    with closing(mapped):
        try:
            for result in mapped:
                if result == BAIL:
                    return None  # the runs under way finish, no other starts
                done.add(result)
        except WorkerDied:
            return None  # a worker killed (out of memory, a signal): this process plans it all, as kafkalog.scan's does
    return _replayed(planner, fs, walk, done)


def _forkable() -> bool:
    """Whether the workers may be forked from this process as it is: it runs no other Python thread
    (none can hold a lock the workers would need; the native threads of jemalloc and OpenBLAS
    make themselves safe at a fork). Forked workers start with every module this process
    imported and cost no pickling of their tasks; else they come from
    :func:`kafkalog.dataset.processes.ordered_map`'s server."""
    return threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()


#: in a forked worker: the runs of the planning that forked it
_runs: list = []


def _forked(tasks: list, jobs: int, names: Any) -> Iterator[Any]:
    """:func:`_plan_run` of each task in order, by ``jobs`` workers forked from this process."""
    global _runs
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from kafkalog.dataset.processes import WorkerDied

    _runs = tasks
    try:
        # every worker is forked at the first submission, before the pool starts its own thread
        with ProcessPoolExecutor(min(jobs, len(tasks)), mp_context=multiprocessing.get_context("fork"), initializer=_quiet) as pool:
            futures = [pool.submit(_plan_forked, i) for i in range(len(tasks))]
            try:
                for i, f in enumerate(futures):
                    try:
                        yield f.result()
                    except BrokenProcessPool:
                        raise WorkerDied(f"a worker process died (killed by a signal, or out of memory) while planning {names(i)}", {}) from None
            finally:
                for f in futures:
                    f.cancel()
    finally:
        _runs = []


def _quiet() -> None:
    """A forked worker's start: the handlers it inherited removed, and every logger passing its
    records up to the root's recorder (:func:`_recorded`), even one the program made not to (what
    a worker logs is logged by the planning process, once, through the program's own handlers)."""
    for logger in [logging.getLogger(), *logging.root.manager.loggerDict.values()]:
        if isinstance(logger, logging.Logger):
            logger.handlers = []
            logger.propagate = True
    logging.lastResort = None  # type: ignore[assignment]


def _plan_forked(i: int) -> Any:
    return _plan_run(_runs[i])


def _replayed(planner: _Planner, fs: LocalFileSystem, walk: _Walk, done: _Run) -> list[InputPartition]:
    """The serial planning's steps (:meth:`_Planner.partition_logs`, :func:`.planning.batch_request`,
    :meth:`_Planner.plan`), each taken from the workers' results or, for the dirs listed here, done
    here: at each step, only the partitions something happens to (they logged, failed, or are planned
    here) are visited, in order; the others' bytes and slices are taken as the workers summed and made them."""
    opts, rf = planner.opts, planner.row_filter
    replicas: dict[str, Replica] = {}  # those of the dirs listed here
    noted = sorted(done.dirs.keys() | done.dir_error.keys())
    found = 0
    for step in walk.steps:
        if step[0] == "dirs":
            first, end = step[1], step[2]
            found += end - first
            for n in noted[bisect_left(noted, first) : bisect_left(noted, end)]:
                logged, counted = done.dirs.get(n, (None, True))
                if logged:
                    _replay(logged)
                if n in done.dir_error:
                    raise done.dir_error[n]
                found -= not counted
        elif step[0] == "dir":
            counted, rep = _child(fs, step[1], step[2], planner._wants)
            found += counted
            if rep is not None:
                replicas[rep.dir] = rep
        elif step[0] == "root":
            if not found:
                for rep in _aiven_replicas(fs, step[1], planner.keys, planner._wants):
                    replicas[rep.dir] = rep
                    found += 1
        else:
            if step[2] and not found:
                raise _nothing_found(step[1])
            found = 0
    here = group_replicas(sorted(replicas.values(), key=_replica_order), opts, rf)  # no partition of the workers' (_walk)
    planner._check_named_partitions({*done.keys, *here}, [*done.keys, *done.present, *(r.key for r in replicas.values())])

    def visited(step: int, *more: Iterable[Key]) -> list[Key]:
        """The partitions something happens to at ``step``, in order."""
        return sorted({*here, *(k for s, k in done.logged if s == step), *(k for s, k in done.errors if s == step), *(k for m in more for k in m)})

    logs: dict[Key, PartitionLog] = {}
    log_dirs: dict[str, LogDirOffsets] = {}
    for key in visited(0):
        _raise_if_failed(done, 0, key)
        if key in here:
            logs[key] = PartitionLog(fs, here[key], opts, None, log_dirs)
        else:
            _replay(done.logged.get((0, key)))
    requests = dict(done.cut)
    total, files = done.bytes, done.files
    for key in visited(1):
        _raise_if_failed(done, 1, key)
        if key in logs:
            requests[key] = plog, start, end, _ = batch_request(logs[key], opts, rf)
            b, n = plog.planned_bytes(start, end)
            total, files = total + b, files + n
        else:
            _replay(done.logged.get((1, key)))
    split = planner.split(total, files)
    # the slices in the partitions' order: the workers' rows, and between them those cut here
    rows: list[SliceRow] = []
    taken = 0
    for key in visited(2, done.cut):
        _raise_if_failed(done, 2, key)
        at = bisect_left(done.rows, key, taken, key=_row_key)
        rows += done.rows[taken:at]
        taken = at
        if key in requests:
            plog, start, end, ts_lo = requests[key]
            rows += plog.slices(start, end, split=split, ts_lo=ts_lo)
        else:
            _replay(done.logged.get((2, key)))
    rows += done.rows[taken:]
    return list(pack(planner.fsref, rows, split, planner.open_cost))


#: a slice row's partition
_row_key = itemgetter(0, 1)


def _raise_if_failed(done: _Run, step: int, key: Key) -> None:
    """Log what a worker logged at the step that failed, and raise its error."""
    failed = done.errors.get((step, key))
    if failed is not None:
        _replay(failed[1])
        raise failed[0]


def _lowest_level() -> int:
    """The lowest level any logger of this process takes: the level a worker records from."""
    loggers = [logging.getLogger(), *(x for x in logging.root.manager.loggerDict.values() if isinstance(x, logging.Logger))]
    return min(x.getEffectiveLevel() for x in loggers)
