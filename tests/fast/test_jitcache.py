"""Compiled code is cached where the user can write when kafkalog's package directory cannot be
written (a read-only install): $XDG_CACHE_HOME/kafkalog/numba, else a per-user temp dir."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN, REPO

pytest.importorskip("numba")

G = str(GOLDEN / "kafka" / "records" / "v2-none" / "00000000000000000000.log")


def _unwritable_copy(tmp_path: Path) -> Path:
    """The package copied with every ``__pycache__`` a plain file: no cache can be made beside the
    modules, even by root (CI runs as root, for whom permission bits do not stop writes)."""
    root = tmp_path / "site"
    shutil.copytree(REPO / "codec" / "kafkalog", root / "kafkalog", ignore=shutil.ignore_patterns("__pycache__"))
    for d in [root / "kafkalog", *(p for p in (root / "kafkalog").rglob("*") if p.is_dir())]:
        (d / "__pycache__").write_text("not a directory")
    return root


def _dump(site: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "KAFKALOG_CACHE_DIR", "KAFKALOG_NO_NUMBA")}
    full.update(env, PYTHONPATH=str(site))
    return subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", G], capture_output=True, text=True, env=full, check=False)


def _cached(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob("*.nbi")) if d.exists() else []


def test_read_only_package_caches_per_user(tmp_path: Path) -> None:
    site = _unwritable_copy(tmp_path)
    want = subprocess.run([sys.executable, "-m", "kafkalog", "dump", "--json", G], capture_output=True, text=True, check=True).stdout
    xdg = tmp_path / "xdg"
    proc = _dump(site, {"XDG_CACHE_HOME": str(xdg)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want
    assert _cached(xdg / "kafkalog" / "numba"), list(xdg.rglob("*"))
    assert all(p.is_file() for p in site.rglob("__pycache__"))  # nothing written beside the modules

    # no writable user cache either (HOME and XDG_CACHE_HOME unusable): a per-user temp dir, not a crash
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    blocked = tmp_path / "blocked"
    blocked.write_text("a file, so nothing can be made under it")
    proc = _dump(site, {"XDG_CACHE_HOME": str(blocked), "HOME": str(blocked), "TMPDIR": str(tmp)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == want
    assert _cached(tmp / f"kafkalog-{os.getuid()}" / "numba")
