"""Worker processes for work cut into tasks: :func:`ordered_map` runs them in up to N processes and
hands their results back in task order, so that a caller writes, prints and reports exactly what one
process would, in the same order, whatever N is. Listing and planning many partitions (:func:`kafkalog.dataset.scan.scan`, :func:`~kafkalog.dataset.scan.plan_all`)
and the ``-j N`` of ``export``, ``verify`` and ``info`` (:mod:`kafkalog.tools.jobs`) use it.
Processes, not threads: Parquet and JSON encoding, record objects, the checks and planning's
per-partition work hold the GIL. Nothing here is imported until more than one process is used, so a
small command starts as fast as before (``tests/test_startup.py``).

Workers come from a ``forkserver`` (where the platform has one; else ``spawn``), never a bare
``fork`` of a process that may already run threads: a task's function and arguments are pickled,
so the design holds under every start method. Workers read with the kernels the parent reads with
(:data:`kafkalog.fast.columnar.kernels`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from typing import Any, TypeVar

__all__ = ["RUNS_PER_JOB", "NoWorkers", "WorkerDied", "default_jobs", "cut", "ordered_map", "runs", "share", "span", "start_server"]

T = TypeVar("T")
R = TypeVar("R")


class WorkerDied(ChildProcessError):
    """A worker process ended without a result (killed by a signal, out of memory): the run stops,
    naming what it was doing (an :class:`OSError`: the CLI exits 3 with one line). ``running``
    maps the index of each task under way when the pool broke to the pid of the worker running it
    (what it leaves behind, a temporary file, is named after that pid)."""

    def __init__(self, message: str, running: dict[int, int]) -> None:
        super().__init__(0, message)
        self.running = running


class NoWorkers(WorkerDied):
    """A worker process could not be started (too many open files, a refused ``fork``: the system's
    limits). Workers started before it may have run tasks already: a caller whose tasks only read
    (planning's listing and checks) does the work itself, as when a worker dies; one that cannot
    stops as it does then, leaving what a dead worker leaves."""


def default_jobs() -> int:
    """The CPUs this process may run on (``os.sched_getaffinity``: a container's or ``taskset``'s
    limit), else the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: Tasks per worker process a run is cut into: small enough that one slow task does not leave the
#: other processes idle at the end, large enough that sending tasks costs little next to them.
RUNS_PER_JOB = 16


def share(weights: Sequence[int], jobs: int) -> int:
    """The weight of one task when ``weights`` are spread over ``jobs`` processes: a ``RUNS_PER_JOB * jobs``-th of the total."""
    return max(1, sum(weights) // (RUNS_PER_JOB * jobs))


def runs(items: Sequence[T], weights: Sequence[int], jobs: int, target: int | None = None) -> list[list[T]]:
    """``items`` cut, in order, into runs of about ``target`` weight each (default: :func:`share`;
    an item heavier than that is a run of its own): the tasks of a run spread over ``jobs``
    processes, so that thousands of small partitions cost a few dozen round trips, not thousands."""
    return list(cut(zip(items, weights, strict=True), share(weights, jobs) if target is None else target))


def cut(weighted: Iterable[tuple[T, int]], target: int) -> Iterator[list[T]]:
    """:func:`runs` of ``(item, weight)`` pairs, each run given as soon as it is whole: the tasks of
    :func:`ordered_map` from items that come one by one (their number not known ahead)."""
    run: list[T] = []
    weight = 0
    for item, w in weighted:
        if weight > 0 and w >= target:  # an item heavier than a run: a run of its own
            yield run
            run = []
            weight = 0
        run.append(item)
        weight += w
        if weight >= target:
            yield run
            run = []
            weight = 0
    if run:
        yield run


def span(names: Sequence[str]) -> str:
    """A run of tasks named in a line: its one item, or its first and last."""
    return names[0] if len(names) == 1 else f"one of the {len(names)} from {names[0]} to {names[-1]}"


#: in a worker process: per task under way (task k in slot k % its length), the pid of the worker
#: running it (-1 once done); see ordered_map
_status: Any = None


def _init(status: Any, pure: bool, plain_listing: bool) -> None:
    """A worker's start: the run's task table, and the parent's kernels (the plain-Python twins when
    the parent uses them: the columnar ones, and the listing of directories)."""
    global _status
    _status = status
    if pure:
        from kafkalog.fast import columnar

        columnar.kernels = columnar.PURE
    if plain_listing:
        from kafkalog.format import files

        files.set_dir_lister(None)


def _run(fn: Callable[[T], R], item: T, slot: int) -> R:
    """Run one task in a worker, its slot of the task table marked as in progress by this process until it is done."""
    status = _status
    status[slot] = os.getpid()
    try:
        result = fn(item)
    except BaseException as e:
        import pickle

        try:
            pickle.loads(pickle.dumps(e))
        except Exception:  # noqa: BLE001 - an exception that does not cross processes crosses as its text
            raise RuntimeError(f"{type(e).__name__}: {e}") from None
        raise
    finally:
        status[slot] = -1
    return result


def ordered_map(
    fn: Callable[[T], R], items: Iterable[T], jobs: int, *, names: Callable[[int], str], preload: Sequence[str] = ()
) -> Iterator[R]:
    """``fn(item)`` for each item, in item order, computed by up to ``jobs`` worker processes
    (``jobs`` 1, or a single item: in this process, nothing started). ``fn`` must be a module-level
    function and the items picklable. ``items`` may be an iterator whose items come as it is
    advanced (a walk's directories): each is taken when it is sent to a worker, at most ``2 * jobs``
    ahead of the result being given, so its making goes on beside the workers' tasks; an exception
    taking one is raised in its turn, as a failing task's is.

    The first task to fail stops the run: no task is started after it, those under way finish (so
    that each writes its file whole or removes it), and its exception is raised once the results
    before it have been given, as one process would raise it. A worker that dies raises
    :class:`WorkerDied` naming ``names(index)`` of the tasks it may have been running; a pool whose
    processes cannot be started raises :class:`NoWorkers` (one) at the first result asked for.
    ``preload``: modules the worker processes import once, before they are forked."""
    todo = iter(items)
    first: list[T] = []  # the items taken to know whether there are two
    try:
        first.extend(itertools.islice(todo, 2 if jobs > 1 else 0))
    except Exception:
        yield from map(fn, first)  # the results before the item that failed to come, then its error
        raise
    if jobs <= 1 or len(first) <= 1:
        yield from map(fn, itertools.chain(first, todo))
        return
    todo = itertools.chain(first, todo)
    from concurrent.futures import Future, ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from kafkalog.fast import columnar
    from kafkalog.format import files

    ctx = _context(preload)
    ahead = 2 * jobs  # tasks queued at most: a failure stops the run before many more start
    try:
        # per task under way, task k in slot k % ahead (no more are under way): the pid running it, -1 once done
        status = ctx.Array("q", [0] * ahead, lock=False)
        pool = ProcessPoolExecutor(
            max_workers=min(jobs, len(items)) if isinstance(items, Sized) else jobs,
            mp_context=ctx,
            initializer=_init,
            initargs=(status, columnar.kernels is columnar.PURE, files.dir_lister() is None),
        )
    except OSError as e:  # its shared memory, pipes and queues are files too
        raise _no_workers(e) from e
    pending: dict[int, Future[R]] = {}
    submitted = 0
    failed: Exception | None = None  # what taking item `submitted` raised (None: none, or not taken yet)
    taken = False  # every item taken
    terminate = _exit_on_sigterm()
    try:
        for i in itertools.count():
            try:
                while not taken and submitted < i + ahead:
                    try:
                        item = next(todo)
                    except StopIteration:
                        taken = True
                        break
                    except Exception as e:  # noqa: BLE001 - raised in its turn, after the results before it
                        taken, failed = True, e
                        break
                    try:
                        pending[submitted] = pool.submit(_run, fn, item, submitted % ahead)
                    except OSError as e:  # the pool starts its processes as the first tasks are submitted
                        raise _no_workers(e) from e
                    submitted += 1
                if i == submitted:
                    if failed is not None:
                        raise failed
                    return
                yield pending.pop(i).result()
            except BrokenProcessPool:  # raised by submit too, once a worker died
                running = {k: status[k % ahead] for k in range(i, submitted) if status[k % ahead] > 0}
                raise WorkerDied(
                    "a worker process died (killed by a signal, or out of memory) while reading "
                    f"{' or '.join(names(k) for k in running or [i])}",
                    running,
                ) from None
    finally:
        for f in pending.values():
            f.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        if terminate is not None:
            import signal

            signal.signal(signal.SIGTERM, terminate)


def _context(preload: Sequence[str]) -> Any:
    """The multiprocessing context workers come from: a ``forkserver`` that imports ``preload`` (and
    this module) before it forks them, else ``spawn``."""
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    if "forkserver" in methods and preload:
        ctx.set_forkserver_preload([__name__, *preload])
    return ctx


def start_server(preload: Sequence[str] = ()) -> None:
    """Start now the server that :func:`ordered_map`'s workers are forked from, importing the same
    ``preload``, so that its start (a fresh interpreter and its imports, about 0.3 s) runs while this
    process goes on (listing the directories that the workers will be given) rather than once the
    first task is sent. Nothing where workers are spawned, or where the server cannot be started:
    :func:`ordered_map` then meets what it meets."""
    if _context(preload).get_start_method() != "forkserver":
        return
    import contextlib
    from multiprocessing import forkserver

    with contextlib.suppress(OSError):
        forkserver.ensure_running()


def _no_workers(e: OSError) -> NoWorkers:
    return NoWorkers(f"no worker process could be started ({type(e).__name__}: {e})", {})


def _exit_on_sigterm() -> Any:
    """While workers run, SIGTERM (``kill``, ``timeout``) ends this process as an exception does
    (``SystemExit``, status 143 as the signal gives): the run stops as on a failure, its temporary
    files are removed, and the forkserver's socket directory (``/tmp/pymp-*``, removed at the
    interpreter's exit) is not left behind. Returns the handler to put back (None: none changed,
    outside the main thread)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    return signal.signal(signal.SIGTERM, stop)
