"""Write pytest's assertion-rewritten bytecode of the test modules, once, before ``./run test``'s
pytest starts its xdist workers (``python tests/rewrite_cache.py``).

Each worker imports every test module through pytest's assertion rewriter. Where
``PYTHONDONTWRITEBYTECODE`` is set (as on CI's machines) pytest does not write the rewritten code
to ``__pycache__``, so each worker rewrote all of them again: about 8 CPU seconds a worker, at the
start of the run. pytest still reads a cached file when it is there (named for the interpreter and
pytest's version, checked against the source's mtime and size), so writing them here, in parallel,
does that work once. The rewriting is pytest's own (``_pytest.assertion.rewrite``, a private
module): when it is not there as this expects, nothing is written and pytest rewrites as before.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

TESTS = Path(os.path.abspath(__file__)).parent  # not resolved: as pytest names the modules it imports


def _write(path: str) -> None:
    """Rewrite one module (a file pytest rewrites: ``test_*.py``, ``conftest.py``) into its cached pyc."""
    from _pytest.assertion import rewrite

    fn = Path(path)
    pyc = rewrite.get_cache_dir(fn) / (fn.name[:-3] + rewrite.PYC_TAIL)
    if rewrite._read_pyc(fn, pyc) is not None:  # written before, and the source is unchanged
        return
    source_stat, co = rewrite._rewrite_test(fn, None)  # type: ignore[arg-type] - no config: pytest's defaults
    pyc.parent.mkdir(exist_ok=True)
    part = pyc.with_name(f"{pyc.name}.{os.getpid()}")
    with open(part, "wb") as f:
        rewrite._write_pyc_fp(f, source_stat, co)
    os.replace(part, pyc)  # atomic, as pytest's own writer: a reader sees a whole file or none


def main() -> int:
    try:
        from _pytest.assertion import rewrite
    except ImportError as e:
        missing = [str(e)]
    else:
        missing = [
            n
            for n in ("get_cache_dir", "PYC_TAIL", "_read_pyc", "_rewrite_test", "_write_pyc_fp")
            if not hasattr(rewrite, n)
        ]
    import tomllib

    options = tomllib.loads((TESTS.parent / "pyproject.toml").read_text()).get("tool", {}).get("pytest", {}).get("ini_options", {})
    if options.get("enable_assertion_pass_hook"):  # rewritten otherwise, and pytest's cache is not told apart by it
        missing.append("enable_assertion_pass_hook is set")
    if missing:
        print(
            f"rewrite_cache: nothing written ({', '.join(missing)}); the workers rewrite",
            file=sys.stderr,
        )
        return 0
    # the code's file name (in tracebacks) is the absolute path, as pytest's import names it
    files = sorted(str(p) for pattern in ("test_*.py", "conftest.py") for p in TESTS.rglob(pattern))
    try:
        with ProcessPoolExecutor() as pool:
            list(pool.map(_write, files, chunksize=4))
    except Exception as e:  # noqa: BLE001 - a pytest whose private rewriter differs: its workers rewrite, as without this step
        print(f"rewrite_cache: not written ({type(e).__name__}: {e}); the workers rewrite", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
