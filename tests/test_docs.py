"""The documentation builds with no warnings (sphinx-build -W), and every Python example in
README.md and docs/ runs on a scratch directory that it leaves byte for byte unchanged."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import REPO
from scratch import fingerprint, make_scratch, read_only_mount


def _dev_venv_ready() -> bool:
    """``./run``'s .venv is installed and current, so ``./run docs`` installs nothing."""
    stamp = REPO / ".venv" / ".installed"
    return stamp.is_file() and stamp.stat().st_mtime >= (REPO / "pyproject.toml").stat().st_mtime


def test_docs_build_without_warnings(tmp_path: Path) -> None:
    """The documented command, ``./run docs OUTDIR`` (sphinx -W), builds the site and names the page
    to open; where ./run's .venv is not set up, the same sphinx command runs with this interpreter."""
    out = tmp_path / "html"
    # without the highlighted source pages (docs/conf.py): the build's warnings and pages are the same
    env = {**os.environ, "KAFKALOG_DOCS_NO_VIEWCODE": "1"}
    if _dev_venv_ready():
        proc = subprocess.run(["bash", str(REPO / "run"), "docs", str(out)], capture_output=True, text=True, check=False, env=env)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
        assert proc.stdout == f"documentation built: open {out / 'index.html'}\n"
    else:
        proc = subprocess.run(
            [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(REPO / "docs"), str(out)],
            capture_output=True, text=True, check=False, env=env,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
    assert (out / "index.html").exists() and (out / "api.html").exists() and (out / "reference.html").exists()
    assert not (out / "_modules").exists()  # the published build's source pages were left out, as asked
    # the generated reference documents the classes the API guide introduces
    reference = (out / "reference.html").read_text(encoding="utf-8")
    assert "kafkalog.LogReader" in reference and "kafkalog.internal.decode_log" in reference
    # and the dataset reader and the Spark source, documented from their docstrings (not just named)
    assert "kafkalog.scan" in reference and "RecordBatchReader" in reference, "kafkalog.scan is missing from the reference"
    assert "kafkalog_spark.register" in reference and "kafkalog_spark.options.SourceOptions" in reference


# ------------------------------------------------------------------------------ the examples
#: A fenced Python block, optionally preceded by ``<!-- example: writes NAME... -->`` (an example
#: that writes those files: it runs in an empty directory and must create exactly them).
EXAMPLE = re.compile(r"(?:<!-- example: writes (?P<writes>[^>]*?) -->\n)?```python\n(?P<code>.*?)^```", re.S | re.M)
DOCS = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _examples(spark: bool) -> list[object]:
    out: list[object] = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for m in EXAMPLE.finditer(text):
            if ("kafkalog_spark" in m["code"]) != spark:
                continue
            line = text.count("\n", 0, m.start("code")) + 1
            out.append(pytest.param(f"{doc.relative_to(REPO)}:{line}", m["code"], (m["writes"] or "").split(), id=f"{doc.relative_to(REPO)}:{line}"))
    return out


def test_every_example_is_found() -> None:
    found = {p.values[0].split(":")[0] for p in _examples(False) + _examples(True)}  # type: ignore[attr-defined]
    assert {"README.md", "docs/api.md", "docs/arrow.md", "docs/spark.md", "docs/tutorials/read-a-data-dir.md", "docs/tutorials/write-a-log.md"} <= found


def test_the_arrow_page_runs_each_engine() -> None:
    """docs/arrow.md's recipes use the real DuckDB, Polars and pandas (the dev extra installs them)."""
    codes = [p.values[1] for p in _examples(False) if p.values[0].startswith("docs/arrow.md")]  # type: ignore[attr-defined]
    for engine in ("duckdb.sql(", "pl.from_arrow(", ".read_pandas()"):
        assert any(engine in c for c in codes), engine


def _run(where: str, code: str, cwd: Path, monkeypatch: pytest.MonkeyPatch, **names: object) -> dict[str, object]:
    monkeypatch.chdir(cwd)
    if "spark" in names:
        # Spark runs a Python data source in worker processes started from the directory the
        # session began in, not from this test's current directory: give the path in full
        code = code.replace('"data"', repr(str(cwd / "data")))
    scope: dict[str, object] = {"__name__": "__example__", **names}
    exec(compile(code, where, "exec"), scope)  # noqa: S102 - the documentation's own examples
    return scope


def _check(where: str, code: str, writes: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **names: object) -> None:
    """Run one example on the scratch dir (unchanged after it, also on a read-only mount when
    mounting is permitted); an example that writes runs in an empty dir and must create exactly
    the files it names."""
    if writes:
        out = tmp_path / "out"
        out.mkdir()
        _run(where, code, out, monkeypatch, **names)
        assert sorted(os.listdir(out)) == sorted(writes)
        return
    scratch = make_scratch(tmp_path / "scratch")
    before = fingerprint(scratch)
    scope = _run(where, code, scratch, monkeypatch, **names)
    if "df" in scope:
        scope["df"].collect()  # type: ignore[attr-defined]  # a Spark example's DataFrame: read it
    assert fingerprint(scratch) == before, f"{where} changed the directory it read"
    with read_only_mount(scratch) as ro:
        try:
            scope = _run(where, code, ro, monkeypatch, **names)
            if "df" in scope:
                scope["df"].collect()  # type: ignore[attr-defined]
        finally:
            os.chdir(tmp_path)  # out of the mount, so that it can be unmounted
    assert fingerprint(scratch) == before


@pytest.mark.rule("R-NAME-14")
@pytest.mark.parametrize(("where", "code", "writes"), _examples(False))
def test_example_runs_and_reads_only(where: str, code: str, writes: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(where, code, writes, tmp_path, monkeypatch)


@pytest.mark.parametrize(("where", "code", "writes"), _examples(True))
def test_spark_example_runs_and_reads_only(
    where: str, code: str, writes: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spark: object
) -> None:
    _check(where, code, writes, tmp_path, monkeypatch, spark=spark)
