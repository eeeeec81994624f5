"""``kafkalog conformance`` that runs kafkalog's own commands inside its process, for tests/tools/test_corpus.py.

Usage: python tests/conformance_in_process.py CONFORMANCE-ARGS... (as ``kafkalog conformance``'s).
A command the runner starts that is kafkalog's CLI (``PYTHON -m kafkalog ARGS``, with this interpreter)
or tests/wrong_dumper.py runs here, through the same ``main`` its process would run, with its stdout,
stderr and exit code captured; any other command is started as a process, as the runner does. Over
the whole corpus this is one interpreter start-up instead of one per case and file (most of a run's
time: kafkalog's import costs more than reading a case). Cases run one at a time: the captured
stdout is the process's. tests/tools/test_corpus.py checks that a run here gives what the same
command gives as a process, and runs the CLI's own processes on a few cases of each shape.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Callable
from pathlib import Path

from kafkalog.tools import conformance, harness
from kafkalog.tools.cli import main as cli_main

WRONG_DUMPER = Path(__file__).resolve().parent / "wrong_dumper.py"


def _entry(argv: list[str]) -> Callable[[], int | None] | None:
    """The ``main`` that ``argv`` would run in a process of its own, or None for any other command."""
    if len(argv) < 2 or argv[0] != sys.executable:
        return None
    if argv[1:3] == ["-m", "kafkalog"]:
        return lambda: cli_main(argv[3:])
    if Path(argv[1]).resolve() == WRONG_DUMPER:
        sys.path.insert(0, str(WRONG_DUMPER.parent))
        try:
            import wrong_dumper
        finally:
            sys.path.remove(str(WRONG_DUMPER.parent))
        return lambda: wrong_dumper.main(argv[2:])
    return None


def run(template: list[str], subst: dict[str, str], timeout: float) -> harness._Run:
    """:func:`kafkalog.tools.harness._run`, with kafkalog's own commands run in this process (``timeout``
    does not apply to them: a hang shows as the test's)."""
    argv = [harness._fill(tok, subst) for tok in template]
    entry = _entry(argv)
    if entry is None:
        return harness._run(template, subst, timeout)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = entry()
        except SystemExit as e:  # argparse's usage errors, as the process would exit
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return harness._Run(0 if code is None else code, out.getvalue(), err.getvalue())


def main(argv: list[str]) -> int:
    conformance._run = run  # the name the runner calls
    return cli_main(["conformance", *argv, "--jobs", "1"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
