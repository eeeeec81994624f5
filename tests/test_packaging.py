"""The compiled core as users get it: the switch between compiled and pure-Python kernels, a
platform wheel that works in a clean virtual environment (no Cython, no compiler on PATH), an
install without a C compiler, which falls back to pure Python with one line saying so, and every
subcommand in a venv with the base install only (no extra): it works or names the extra it needs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import venv
from pathlib import Path

import pytest

from helpers import GOLDEN, REPO, read_jsonl
from kafkalog.tools.cli import COMMANDS

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
    """A fresh venv's python. The venv gets no pip of its own (ensurepip cost 7 CPU seconds a venv):
    :func:`_pip_install` installs into it with this environment's pip."""
    venv.create(where, with_pip=False, clear=True)
    return where / ("Scripts" if os.name == "nt" else "bin") / "python"


def _pip_install(python: Path, *args: str) -> list[str]:
    """The command line of ``pip install ARGS`` into the venv of ``python``: this environment's pip
    with ``--python``, which runs itself under that interpreter, so that what it installs, and a
    source install's isolated build environment, are the venv's own as with the venv's pip."""
    return [sys.executable, "-m", "pip", "--python", str(python), "install", *args]


def _parallel_build_env(tmp: Path) -> dict[str, str]:
    """:func:`_env_without_switch` with setuptools told to compile the extension modules in parallel,
    one per core (``DIST_EXTRA_CONFIG``: a distutils config file setuptools reads after setup.cfg),
    as ``pip install`` and ``python -m build`` pass it on to the build backend."""
    cfg = tmp / "parallel-build.cfg"
    cfg.write_text(f"[build_ext]\nparallel = {os.cpu_count() or 1}\n")
    return dict(_env_without_switch(), DIST_EXTRA_CONFIG=str(cfg))


@pytest.fixture(scope="module")
def base_install(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """What ``python -m build`` of this checkout does (an sdist, then the wheel built from the
    unpacked sdist in an isolated environment with pyproject.toml's build requirements), the wheel
    installed as ``pip install kafkalog`` installs it, base dependencies only, into a fresh venv:
    the venv's python, the dist folder, and an environment with nothing but the venv's bin on PATH
    (no Cython, no compiler, no PYTHONPATH to this checkout). The sdist, which compiles nothing,
    is made with this environment's setuptools and Cython (--no-isolation) rather than a second
    isolated environment."""
    tmp = tmp_path_factory.mktemp("wheel")
    env = _parallel_build_env(tmp)
    dist = tmp / "dist"
    build = [sys.executable, "-m", "build", "--outdir", str(dist)]
    subprocess.run([*build, "--sdist", "--no-isolation", str(REPO)], check=True, env=env, capture_output=True, text=True)
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    (unpacked,) = (tmp / "unpacked").iterdir()
    subprocess.run([*build, "--wheel", str(unpacked)], check=True, env=env, capture_output=True, text=True)
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1, sorted(p.name for p in dist.iterdir())
    python = _venv(tmp / "venv")
    subprocess.run(_pip_install(python, "--quiet", str(wheels[0])), check=True, env=env, capture_output=True, text=True)
    clean = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "CC", "CXX")}
    clean["PATH"] = str(python.parent)
    return python, dist, clean


@pytest.mark.wheel
@pytest.mark.xdist_group("base-install")  # one build per run: the tests using base_install share a worker
def test_wheel_in_clean_venv(base_install: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    """``python -m build`` makes an sdist and a platform wheel; the wheel installs into a fresh venv
    with no Cython and no compiler on PATH, loads its compiled modules (from the venv, not this
    checkout) and gives the same dump and verify results as this checkout."""
    python, dist, clean = base_install
    env = _env_without_switch()
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1 and len(list(dist.glob("*.tar.gz"))) == 1, sorted(p.name for p in dist.iterdir())
    tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    assert f"-{tag}-{tag}-" in wheels[0].name and "none-any" not in wheels[0].name, wheels[0].name  # a platform wheel, not py3-none-any
    # no build tools: neither Cython nor a compiler is reachable from the venv
    work = tmp_path / "elsewhere"  # not the checkout: the installed package is what imports
    work.mkdir()
    probe = ("import importlib.util, kafkalog.fast as f, kafkalog.fast._columnar as c; "
             "print(f.EXTENSIONS, importlib.util.find_spec('Cython') is None, shutil.which('cc') is None, c.__file__)")
    out = subprocess.run([str(python), "-c", "import shutil; " + probe], check=True, cwd=work, env=clean, capture_output=True, text=True).stdout.split()
    assert out[:3] == ["True", "True", "True"], out
    assert Path(out[3]).is_relative_to(python.parent.parent), out[3]
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
    out = subprocess.run(_pip_install(python, "-v", str(src)), env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    notices = [line.strip() for line in (out.stdout + out.stderr).splitlines() if "kafkalog: the compiled core was not built" in line]
    assert notices, out.stdout[-3000:]
    probe = "import kafkalog.fast as f; from kafkalog.fast import columnar; print(f.EXTENSIONS, columnar.kernels.name)"
    work = tmp_path / "elsewhere"
    work.mkdir()
    got = subprocess.run([str(python), "-c", probe], check=True, cwd=work, env=env, capture_output=True, text=True).stdout.split()
    assert got == ["False", "pure-python"]
    assert _dump(python, SMALL, work, env) == _dump(sys.executable, SMALL, work, _env_without_switch())


#: Each subcommand's smoke run in the base install, from a work dir holding copies of what it may
#: change: its arguments ({scratch}: that dir) and the extra it needs (None: it must succeed).
SMOKE: dict[str, tuple[list[str], str | None]] = {
    "info": (["info", str(GOLDEN / "kafka" / "logdir")], None),
    # the command line: the last two records of one partition, which needed pyarrow
    "cat": (["cat", str(GOLDEN / "kafka" / "logdir"), "-t", "golden", "-p", "0", "-o", "-2", "-e"], None),
    "export": (["export", str(GOLDEN / "kafka" / "logdir"), "-o", "{scratch}/out"], "arrow"),
    "dump": (["dump", "--json", str(SMALL)], None),
    "build": (["build", "-o", "{scratch}/built.log", "{scratch}/batches.jsonl"], None),
    "explain": (["explain", str(SMALL)], None),
    "groups": (["groups", str(GOLDEN / "real" / "kafka310-bheem" / "kafka-logs")], None),
    "verify": (["verify", str(LOGDIR)], None),
    "conformance": (["conformance", "--impl", "kafkalog dump --json {file}", "--corpus", str(GOLDEN / "corpus"), "--case", "kafka-logdir-compacted-0"], None),
    "write-case": (["write-case", str(GOLDEN / "corpus" / "writer" / "roll-by-size"), "{scratch}/case"], None),
    "retention": (["retention", "{scratch}/golden-0", "--dry-run"], None),
    "recover": (["recover", "{scratch}/golden-0"], None),
    "compact": (["compact", "{scratch}/golden-0", "--dry-run", "--now-ms", "1700000000000"], None),
}


def test_every_subcommand_has_a_smoke_run() -> None:
    assert set(SMOKE) == set(COMMANDS)


@pytest.mark.wheel
@pytest.mark.xdist_group("base-install")
@pytest.mark.parametrize("command", sorted(SMOKE))
def test_subcommand_in_base_install(command: str, base_install: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    """``kafkalog COMMAND ...`` in a venv with ``pip install kafkalog`` only: it succeeds, or, when
    it needs an extra, exits 3 with one line naming it (``pip install "kafkalog[arrow]"``), never an
    internal error; nothing of an extra is installed."""
    python, _dist, clean = base_install
    probe = "import importlib.util as u; print(*(u.find_spec(m) is None for m in ('pyarrow', 'pyspark', 'fsspec', 'Crypto')))"
    assert subprocess.run([str(python), "-c", probe], check=True, cwd=tmp_path, env=clean, capture_output=True, text=True).stdout.split() == ["True"] * 4
    shutil.copytree(LOGDIR, tmp_path / "golden-0")
    dumped = subprocess.run([str(python), "-m", "kafkalog", "dump", "--json", "--lossless", str(SMALL)], check=True, cwd=tmp_path, env=clean,
                            capture_output=True, text=True).stdout
    (tmp_path / "batches.jsonl").write_text(dumped)
    argv, extra = SMOKE[command]
    # the console script, as a user runs it (conformance's --impl runs it too)
    proc = subprocess.run([str(python.parent / "kafkalog"), *(a.replace("{scratch}", str(tmp_path)) for a in argv)], cwd=tmp_path, env=clean,
                          capture_output=True, text=True, timeout=300)
    if extra is None:
        assert proc.returncode == 0, proc.stderr
        assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    else:
        package = {"arrow": "pyarrow"}[extra]
        assert (proc.returncode, proc.stderr) == (3, f'kafkalog {command}: needs {package}: pip install "kafkalog[{extra}]"\n')
        assert not (tmp_path / "out").exists()  # it fails before writing anything
    if command == "cat":
        # Kafka's dump of golden-0: offsets from two before the end offset, control records left out as a consumer does
        records = [o for o in read_jsonl(GOLDEN / "kafka" / "dump" / "logdir.jsonl") if o["type"] == "record" and o["file"].startswith("golden-0/")]
        end = max(o["offset"] for o in records) + 1
        assert proc.stdout.splitlines() == [bytes.fromhex(o["value"]).decode() for o in records if o["offset"] >= end - 2 and "controlType" not in o]
    if command == "build":
        assert (tmp_path / "built.log").read_bytes() == SMALL.read_bytes()
