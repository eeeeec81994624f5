"""The documentation builds with no warnings (sphinx-build -W)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import REPO


def test_docs_build_without_warnings(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", str(REPO / "docs"), str(tmp_path / "html")],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "html" / "index.html").exists()
