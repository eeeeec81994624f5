"""``-j N`` / ``--jobs N``: the work of ``export``, ``verify`` and ``info`` spread over worker processes.

A command cuts its work into tasks (a partition, a partition directory, a run of small partitions),
and :func:`~kafkalog.dataset.processes.ordered_map` runs them in up to N worker processes and hands
their results back in task order, so that the command writes, prints and reports exactly what one
process would, in the same order, whatever N is. The pool itself is
:mod:`kafkalog.dataset.processes` (planning many partitions uses it too); this module holds the
command line's side of it, and gives the pool's names to the commands.
"""

from __future__ import annotations

import argparse

from kafkalog.dataset.processes import RUNS_PER_JOB, WorkerDied, default_jobs, ordered_map, runs, share, span

__all__ = [
    "MIN_PARALLEL_BYTES",
    "RUNS_PER_JOB",
    "WorkerDied",
    "add_jobs_option",
    "crosses_processes",
    "default_jobs",
    "ordered_map",
    "runs",
    "share",
    "span",
]

#: Below this many bytes to read, a run stays in one process: starting workers (about 0.3 s, each
#: importing pyarrow or numpy) costs more than it saves.
MIN_PARALLEL_BYTES = 32 << 20


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {n}")
    return n


def add_jobs_option(parser: argparse.ArgumentParser, unit: str, small: str = "under 32 MB to read") -> None:
    """``-j N`` / ``--jobs N``; ``unit`` says what is spread over the processes, ``small`` which runs stay in one."""
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=default_jobs(),
        metavar="N",
        help=(
            f"worker processes to spread {unit} over (default: the CPUs available to the process; 1: one process). The "
            f"output is the same whatever N: the same files, lines and order. A run with {small} stays in one process"
        ),
    )


def crosses_processes(sample: object) -> bool:
    """Whether ``sample`` (a task's arguments) can be sent to a worker process: some sources of
    segments (an object store client holding a live connection) cannot, and are read in one."""
    import pickle

    try:
        pickle.dumps(sample)
    except Exception:  # noqa: BLE001 - whatever pickling raises, the answer is no
        return False
    return True
