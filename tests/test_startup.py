"""Start-up as a command-line tool should have it: ``import kafkalog`` loads only the format layer,
and a small command imports only what it uses (no numpy, pyarrow, construct or numba for a small
``dump --json``). Checked on the modules a fresh interpreter imports (``python -X importtime``), not
on timings: which modules load is what makes a command start slow, and it does not vary with load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN

#: Heavy modules no small command needs: each costs tens of milliseconds to import.
HEAVY = ("numpy", "pyarrow", "construct", "numba", "llvmlite", "pandas")
#: The codec libraries: loaded when a compressed batch is met, not before.
CODECS = ("cramjam", "zstandard", "lz4", "xxhash")

SMALL_LOG = GOLDEN / "kafka" / "records" / "v2-none" / "00000000000000000000.log"


def _imported(*args: str, env: dict[str, str] | None = None) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """(the top-level names of the modules ``python -X importtime ARGS`` imported, the run)."""
    run = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True, text=True, env=env, check=False)
    names = set()
    for line in run.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name.split(".")[0])
    assert names, run.stderr[-2000:]
    return names, run


def _env(pure: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KAFKALOG_NO_EXTENSIONS", None)
    if pure:
        env["KAFKALOG_NO_EXTENSIONS"] = "1"
    return env


@pytest.mark.parametrize("pure", [False, True], ids=["c-extension", "pure-python"])
def test_import_kafkalog_loads_only_the_format_layer(pure: bool) -> None:
    names, run = _imported("-c", "import kafkalog, sys; print(sorted(m for m in sys.modules if m.startswith('kafkalog')))", env=_env(pure))
    assert run.returncode == 0, run.stderr[-2000:]
    assert not names & set(HEAVY + CODECS + ("crc32c",)), sorted(names & set(HEAVY + CODECS + ("crc32c",)))
    loaded = eval(run.stdout)  # noqa: S307 - our own subprocess's print of a list of names
    assert all(m == "kafkalog" or m.startswith(("kafkalog.format", "kafkalog.errors")) for m in loaded), loaded


@pytest.mark.parametrize("pure", [False, True], ids=["c-extension", "pure-python"])
def test_small_dump_imports_only_what_it_uses(pure: bool) -> None:
    """``kafkalog dump --json`` of a 1 KB segment: no numpy, pyarrow or construct; no codec
    library for an uncompressed file; with the extension built, not even the crc32c package (the
    compiled core checks small batches' CRCs itself)."""
    names, run = _imported("-m", "kafkalog", "dump", "--json", str(SMALL_LOG), env=_env(pure))
    assert run.returncode == 0, run.stderr[-2000:]
    from kafkalog import LogReader

    with LogReader(SMALL_LOG) as reader:
        assert run.stdout.count('"type":"record"') == sum(b.count for b in reader.batches()) > 0
    unwanted = set(HEAVY + CODECS)
    if not pure:
        from kafkalog.fast import objects

        if objects.COMPILED:
            unwanted.add("crc32c")
    assert not names & unwanted, sorted(names & unwanted)
    assert "kafkalog.tools.verify" not in run.stderr and "kafkalog.log.cleaner" not in run.stderr  # other commands' modules stay out


def _loaded(*args: str, env: dict[str, str] | None = None) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """(every module in ``sys.modules`` after ``kafkalog ARGS`` in a fresh interpreter, the run).
    Unlike ``-X importtime``, which leaves out what ``importlib.import_module`` loads, this names the
    command modules the CLI loads too."""
    code = ("import sys\nfrom kafkalog.tools.cli import main\ntry:\n    rc = main(sys.argv[1:])\nfinally:\n"
            "    sys.stdout.flush()\n    sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules)) + '\\n')\nsys.exit(rc)")
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, check=False)
    listed = [line for line in run.stderr.splitlines() if line.startswith("MODULES ")]
    assert listed, run.stderr[-2000:]
    return set(listed[-1].split()[1:]), run


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


#: The CLI's own modules, which every command loads.
_CLI = {"kafkalog.tools", "kafkalog.tools.cli", "kafkalog.tools.command"}


@pytest.mark.parametrize("pure", [False, True], ids=["c-extension", "pure-python"])
def test_version_loads_no_command(pure: bool) -> None:
    """``kafkalog --version`` prints the version before any command is looked at: no command's
    module (``--help`` loads them all, to list them), nothing beyond ``import kafkalog`` and the CLI."""
    modules, run = _loaded("--version", env=_env(pure))
    assert run.returncode == 0 and run.stdout.startswith("kafkalog "), run
    tools = {m for m in modules if m.startswith("kafkalog.tools")}
    assert tools == _CLI, sorted(tools - _CLI)
    assert not _top(modules) & set(HEAVY + CODECS), sorted(_top(modules) & set(HEAVY + CODECS))


def test_help_loads_no_heavy_module() -> None:
    """``kafkalog --help`` loads every command's module to list them, but none of the packages
    those commands use when they run: numpy (the log layer's index checks, verify), construct
    (explain's and the internal topics' schemas), pyarrow (export)."""
    modules, run = _loaded("--help", env=_env(False))
    assert run.returncode == 0, run.stderr[-2000:]
    assert {"kafkalog.tools.explain", "kafkalog.tools.groups", "kafkalog.tools.compact", "kafkalog.tools.writer_cases"} <= modules
    assert not _top(modules) & set(HEAVY + CODECS), sorted(_top(modules) & set(HEAVY + CODECS))


@pytest.mark.parametrize("pure", [False, True], ids=["c-extension", "pure-python"])
def test_dump_of_one_log_loads_only_the_record_readers(pure: bool) -> None:
    """``kafkalog dump`` (text and JSON) of one ``.log``: the readers of indexes, snapshots and
    checkpoints and the log layer (the data-loss check of partition directories) stay out, as do
    the other commands' modules."""
    for args in (["dump", str(SMALL_LOG)], ["dump", "--json", str(SMALL_LOG)]):
        modules, run = _loaded(*args, env=_env(pure))
        assert run.returncode == 0 and run.stdout, run.stderr[-2000:]
        extra = {m for m in modules if m.startswith(("kafkalog.log", "kafkalog.dataset", "kafkalog.internal"))}
        extra |= modules & {f"kafkalog.format.{m}" for m in ("index", "checkpoints", "snapshot", "txnindex", "schemas")}
        extra |= {m for m in modules if m.startswith("kafkalog.tools")} - _CLI - {"kafkalog.tools.dump", "kafkalog.tools.canonical"}
        assert not extra, (args, sorted(extra))
        assert not _top(modules) & set(HEAVY + CODECS), sorted(_top(modules) & set(HEAVY + CODECS))


def test_explain_loads_construct_only() -> None:
    """``kafkalog explain`` parses with construct's schemas, and needs neither numpy nor pyarrow."""
    modules, run = _loaded("explain", str(SMALL_LOG), env=_env(False))
    assert run.returncode == 0 and "record batch" in run.stdout, run.stderr[-2000:]
    assert _top(modules) & set(HEAVY) == {"construct"}, sorted(_top(modules) & set(HEAVY))


def test_the_cli_loads_every_command_for_help() -> None:
    """``--help`` (no command named) lists every command, so it loads them all."""
    run = subprocess.run([sys.executable, "-m", "kafkalog", "--help"], capture_output=True, text=True, check=False)
    assert run.returncode == 0
    for command in ("dump", "build", "explain", "groups", "verify", "conformance", "write-case", "retention", "recover", "compact"):
        assert command in run.stdout


def test_the_kafka_lz4_header_constant_is_kafkas(tmp_path: Path) -> None:
    """The lz4 frame header Kafka writes is a constant (so that xxhash loads only with lz4 data):
    its header checksum byte is the one lz4_header_checksum computes."""
    from kafkalog.format import compression

    header = compression._KAFKA_LZ4_HEADER
    assert header[:6] == compression._LZ4_MAGIC + b"\x60\x40"
    assert header[6] == compression.lz4_header_checksum(header[:6], 2)


def test_small_verify_loads_no_codec_library() -> None:
    """``kafkalog verify`` of an uncompressed 1 KB segment: the codec libraries' functions are
    looked up when a compressed batch first needs them, and small batches' CRCs are the compiled
    core's, so neither lz4, zstandard, cramjam nor (compiled) crc32c is imported."""
    from kafkalog.fast import objects

    names, run = _imported("-m", "kafkalog", "verify", str(SMALL_LOG), env=_env(False))
    assert run.returncode == 0, run.stderr[-2000:]
    unwanted = set(CODECS) | {"pyarrow", "construct", "numba"} | ({"crc32c"} if objects.COMPILED else set())
    assert not names & unwanted, sorted(names & unwanted)


@pytest.mark.parametrize("command", [
    ["cat", str(GOLDEN / "kafka" / "logdir"), "-t", "golden", "-p", "0", "-o", "-2", "-e"],
    ["export", str(GOLDEN / "kafka" / "logdir"), "-t", "golden", "-o", "{tmp}"],
    ["info", str(GOLDEN / "kafka" / "logdir"), "--json"],
], ids=["cat", "export", "info"])
def test_arrow_commands_do_not_import_pandas(command: list[str], tmp_path: Path) -> None:
    """The command that builds Arrow batches (export) needs numpy and pyarrow, not pandas (a 0.4 s
    import, more than the rest of a small ``cat``): ``pa.array`` of a numpy array imports it, so
    batches are built from buffers. ``cat`` prints record objects and ``info`` reads headers: no
    pyarrow (the base install runs them)."""
    names, run = _imported("-m", "kafkalog", *[a.replace("{tmp}", str(tmp_path / "out")) for a in command], env=_env(False))
    assert run.returncode == 0, run.stderr[-2000:]
    assert ("pyarrow" in names) == (command[0] == "export")
    assert "pandas" not in names
