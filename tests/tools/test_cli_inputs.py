"""Every wrong input on the command line is answered with its exit code and a message naming it,
never a traceback; a closed stdout ends a command quietly; writers refuse topic names Kafka refuses."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import GOLDEN
from kafkalog.errors import InvalidTopicError
from kafkalog.log.unified import Log
from kafkalog.tools.cli import main

G = str(GOLDEN / "kafka" / "records" / "v2-none" / "00000000000000000000.log")


def _run(args: list[str], stdin: str = "") -> tuple[int, str, str]:
    """``kafkalog ARGS`` in this process (fast): exit code, stdout, stderr. An exception escaping
    main would fail the test here as a traceback would on the command line."""
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as e:  # argparse's usage errors
                code = int(e.code or 0)
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def where(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("hello")
    (tmp_path / "out").mkdir()
    return {"EMPTY": str(tmp_path / "empty"), "OTHER": str(tmp_path / "other"), "OUT": str(tmp_path / "out"),
            "MISSING": str(tmp_path / "missing"), "G": G}


# (args, stdin, exit code, words the message must hold, paths that must not exist afterwards)
BAD_INPUTS = [
    (["dump", "EMPTY"], "", 3, ["kafkalog dump: no Kafka files in EMPTY"], []),
    (["dump", "OTHER"], "", 3, ["kafkalog dump: no Kafka files in OTHER"], []),
    (["dump", "OTHER/notes.txt"], "", 3, ["Ignoring unknown file OTHER/notes.txt", "no Kafka files in OTHER/notes.txt"], []),
    (["dump", "MISSING"], "", 3, ["no such file or directory: MISSING"], []),
    (["verify", "EMPTY"], "", 3, ["kafkalog verify: no Kafka files in EMPTY"], []),
    (["verify", "OTHER"], "", 3, ["kafkalog verify: no Kafka files in OTHER"], []),
    (["verify", "MISSING"], "", 3, ["no such file or directory: MISSING"], []),
    (["groups", "EMPTY"], "", 3, ["kafkalog groups: no Kafka files in EMPTY"], []),
    (["groups", "MISSING"], "", 3, ["no such directory: MISSING"], []),
    (["explain", "EMPTY"], "", 2, ["usage: kafkalog explain", "EMPTY is a directory; explain takes one file"], []),
    (["explain", "MISSING"], "", 3, ["no such file: MISSING"], []),
    (["explain", "G", "--offset", "99999999"], "", 1, ["no batch holds offset 99999999: its last offset is 13"], []),
    (["explain", "G", "--count", "0"], "", 2, ["usage: kafkalog explain", "--count must be 1 or more"], []),
    (["build", "-o", "OUT/x.log"], '{"foo":1}\n', 2, ["no batches in the input"], ["OUT/x.log", "OUT/x.log.tmp"]),
    (["build", "-o", "OUT/x.log"], "", 2, ["no batches in the input"], ["OUT/x.log", "OUT/x.log.tmp"]),
    (["build", "-o", "OUT/x.log"], "not json\n", 2, ["kafkalog build:"], ["OUT/x.log", "OUT/x.log.tmp"]),
    (["build", "-o", "OUT/new-0"], '{"foo":1}\n', 2, ["no batches in stdin"], ["OUT/new-0"]),
    (["build", "-o", "OUT/..-0", "G"], "", 2, ["usage: kafkalog build", "'..' is not a valid topic name (Topic.java)"], ["OUT/..-0"]),
    (["build", "-o", "OUT/.-0", "G"], "", 2, ["'.' is not a valid topic name"], ["OUT/.-0"]),
    (["build", "-o", "OUT/a b-0", "G"], "", 2, ["has characters other than ASCII letters, digits, '.', '_' and '-'"], ["OUT/a b-0"]),
    (["build", "-o", "OUT/" + "t" * 250 + "-0", "G"], "", 2, ["longer than 249 characters"], ["OUT/" + "t" * 250 + "-0"]),
    (["build", "-o", "OUT/x.log", "--topic-id", "AAAAAAAAAAAAAAAAAAAAAA"], "", 2, ["--topic-id needs a directory"], ["OUT/x.log"]),
    (["dump", "--lossless", "G"], "", 2, ["usage: kafkalog dump", "--lossless needs --json"], []),
    (["dump", "--json", "-d", "G"], "", 2, ["usage: kafkalog dump", "--deep-iteration apply to the text output only"], []),
    (["dump", "--json", "--print-data-log", "G"], "", 2, ["--print-data-log apply to the text output only"], []),
    (["dump", "--foo", "G"], "", 2, ["usage: kafkalog dump", "kafkalog dump: error: unrecognized arguments: --foo"], []),
    (["verify", "--bogus", "G"], "", 2, ["usage: kafkalog verify", "unrecognized arguments: --bogus"], []),
    (["verify", "--max-message-bytes", "0", "G"], "", 2, ["--max-message-bytes must be positive"], []),
    (["build", "-o", "OUT/y.log", "--nope"], "", 2, ["usage: kafkalog build", "unrecognized arguments: --nope"], ["OUT/y.log"]),
    (["nosuchcommand"], "", 2, ["invalid choice: 'nosuchcommand'"], []),
    ([], "", 2, ["usage: kafkalog"], []),
]


@pytest.mark.parametrize(("args", "stdin", "code", "words", "absent"), BAD_INPUTS, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_bad_input_is_answered(where: dict[str, str], args: list[str], stdin: str, code: int, words: list[str], absent: list[str]) -> None:
    def fill(s: str) -> str:  # the placeholders (EMPTY, OUT, G...) as whole words
        return re.sub(r"\b(" + "|".join(where) + r")\b", lambda m: where[m.group(1)], s)

    got, out, err = _run([fill(a) for a in args], stdin)
    assert got == code, (out, err)
    for w in words:
        assert fill(w) in err, (w, err)
    assert "Traceback" not in err + out
    for a in absent:
        assert not os.path.lexists(fill(a)), a


def test_groups_without_consumer_offsets_says_so(tmp_path: Path) -> None:
    import shutil

    shutil.copytree(GOLDEN / "kafka" / "logdir" / "golden-0", tmp_path / "golden-0")
    code, out, err = _run(["groups", str(tmp_path)])
    assert code == 0 and out.startswith("GROUP")
    assert f"no __consumer_offsets partition under {tmp_path}" in err


def test_bad_input_on_the_real_command_line(tmp_path: Path) -> None:
    """The same answers from the console entry point in its own process: no traceback."""
    for args, code, word in [
        (["explain", str(tmp_path)], 2, "is a directory"),
        (["dump", "--foo", G], 2, "usage: kafkalog dump"),
        (["verify", str(tmp_path)], 3, f"no Kafka files in {tmp_path}"),
    ]:
        proc = subprocess.run([sys.executable, "-m", "kafkalog", *args], capture_output=True, text=True, check=False)
        assert (proc.returncode, "Traceback" in proc.stderr) == (code, False), proc.stderr
        assert word in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "kafkalog", "build", "-o", str(tmp_path / "x.log")], input='{"foo":1}\n',
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------ pipes
@pytest.mark.parametrize("args", [["dump", "-d", "--print-data-log"], ["dump", "--json"]], ids=" ".join)
def test_closed_stdout_ends_quietly(args: list[str]) -> None:
    """`kafkalog dump BIGDIR | head -1`: a real pipe whose reader goes away after one line."""
    proc = subprocess.Popen([sys.executable, "-m", "kafkalog", *args, str(GOLDEN / "real")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 0, err
    assert first and err == b""


def test_closed_stdout_with_head(tmp_path: Path) -> None:
    """The shell's way: `kafkalog dump DIR | head -1`, stderr captured to a file."""
    err = tmp_path / "err"
    cmd = f"{sys.executable} -m kafkalog dump -d {GOLDEN / 'real'} 2>{err} | head -1"
    out = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Dumping ")
    assert err.read_text() == ""


# ------------------------------------------------------------------------------ topic names
@pytest.mark.parametrize("name", ["..", ".", "a b", "é", "t" * 250])
def test_the_library_refuses_to_create_a_partition_dir_kafka_refuses(tmp_path: Path, name: str) -> None:
    d = tmp_path / f"{name}-0"
    with pytest.raises(InvalidTopicError, match=r"Topic\.java"):
        Log.open(d, writable=True)
    assert not d.exists() and list(tmp_path.iterdir()) == []


def test_a_valid_topic_name_is_created(tmp_path: Path) -> None:
    d = tmp_path / ("t" * 249 + "-0")
    Log.open(d, writable=True).close()
    assert d.is_dir()
