"""The compiled core as users get it: the switch between compiled and pure-Python kernels, a
platform wheel that works in a clean virtual environment (no Cython, no compiler on PATH), and
an install without a C compiler, which falls back to pure Python with one line saying so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from helpers import GOLDEN, REPO

SMALL = GOLDEN / "kafka" / "records" / "v2-none" / "00000000000000000000.log"
LOGDIR = GOLDEN / "kafka" / "logdir" / "golden-0"


def _env_without_switch() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "KAFKALOG_NO_EXTENSIONS"}


def test_no_extensions_switch() -> None:
    """KAFKALOG_NO_EXTENSIONS=1 runs the pure-Python kernels, and says so; without it the compiled
    ones load; reading the switch imports nothing heavy."""
    if os.environ.get("KAFKALOG_NO_EXTENSIONS"):
        pytest.skip("the compiled core is disabled for this run")
    code = "import sys; from kafkalog import fast; from kafkalog.fast import columnar; print(fast.EXTENSIONS, columnar.kernels.name)"
    env = _env_without_switch()
    out = subprocess.run([sys.executable, "-c", code], check=True, env=dict(env, KAFKALOG_NO_EXTENSIONS="1"), capture_output=True, text=True)
    assert out.stdout.split() == ["False", "pure-python"]
    out = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["True", "c-extension"]
    code = "import sys, kafkalog; before = set(sys.modules); from kafkalog import fast; fast.EXTENSIONS; print(*sorted(set(sys.modules) - before))"
    loaded = subprocess.run([sys.executable, "-c", code], check=True, env=env, capture_output=True, text=True).stdout.split()
    assert all(m.startswith(("kafkalog.fast", "_cython_", "cython_runtime")) for m in loaded), loaded  # the module and Cython's runtime only


def _dump(python: Path | str, path: Path, cwd: Path, env: dict[str, str]) -> list[dict]:
    out = subprocess.run([str(python), "-m", "kafkalog", "dump", "--json", str(path)], check=True, cwd=cwd, env=env, capture_output=True, text=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def _venv(where: Path) -> Path:
    venv.create(where, with_pip=True, clear=True)
    return where / ("Scripts" if os.name == "nt" else "bin") / "python"


@pytest.mark.wheel
def test_wheel_in_clean_venv(tmp_path: Path) -> None:
    """``python -m build`` makes an sdist and a platform wheel; the wheel installs into a fresh venv
    with no Cython and no compiler on PATH, loads its compiled modules (from the venv, not this
    checkout) and gives the same dump and verify results as this checkout."""
    env = _env_without_switch()
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(dist), str(REPO)], check=True, env=env, capture_output=True, text=True)
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1 and len(list(dist.glob("*.tar.gz"))) == 1, sorted(p.name for p in dist.iterdir())
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert f"-{tag}-{tag}-" in wheels[0].name and "none-any" not in wheels[0].name, wheels[0].name  # a platform wheel, not py3-none-any
    python = _venv(tmp_path / "venv")
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheels[0])], check=True, env=env, capture_output=True, text=True)
    # no build tools: neither Cython nor a compiler is reachable from the venv
    clean = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "CC", "CXX")}
    clean["PATH"] = str(python.parent)
    work = tmp_path / "elsewhere"  # not the checkout: the installed package is what imports
    work.mkdir()
    probe = ("import importlib.util, kafkalog.fast as f, kafkalog.fast._columnar as c; "
             "print(f.EXTENSIONS, importlib.util.find_spec('Cython') is None, shutil.which('cc') is None, c.__file__)")
    out = subprocess.run([str(python), "-c", "import shutil; " + probe], check=True, cwd=work, env=clean, capture_output=True, text=True).stdout.split()
    assert out[:3] == ["True", "True", "True"], out
    assert Path(out[3]).is_relative_to(tmp_path / "venv"), out[3]
    assert _dump(python, SMALL, work, clean) == _dump(sys.executable, SMALL, work, env)
    verify = subprocess.run([str(python), "-m", "kafkalog", "verify", str(LOGDIR)], cwd=work, env=clean, capture_output=True, text=True)
    assert verify.returncode == 0, verify.stderr


@pytest.mark.wheel
def test_install_without_compiler_falls_back(tmp_path: Path) -> None:
    """With no working C compiler, installing from source still succeeds: one line says the
    compiled core was not built, and the pure-Python path gives the same dump."""
    env = _env_without_switch()
    src = tmp_path / "src"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv*", ".git", "build", "dist", "*.so", "*.c", "__pycache__", "*.egg-info", "golden", "docs"))
    env = dict(env, CC="false", CXX="false", LDSHARED="false")
    python = _venv(tmp_path / "venv")
    out = subprocess.run([str(python), "-m", "pip", "install", "-v", str(src)], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    notices = [line.strip() for line in (out.stdout + out.stderr).splitlines() if "kafkalog: the compiled core was not built" in line]
    assert notices, out.stdout[-3000:]
    probe = "import kafkalog.fast as f; from kafkalog.fast import columnar; print(f.EXTENSIONS, columnar.kernels.name)"
    work = tmp_path / "elsewhere"
    work.mkdir()
    got = subprocess.run([str(python), "-c", probe], check=True, cwd=work, env=env, capture_output=True, text=True).stdout.split()
    assert got == ["False", "pure-python"]
    assert _dump(python, SMALL, work, env) == _dump(sys.executable, SMALL, work, _env_without_switch())
