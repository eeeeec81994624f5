"""The conformance corpus (golden/corpus) and `kafkalog conformance`.

The corpus must be exactly what golden/generate_corpus.py makes from golden/kafka and golden/real;
the runner must pass kafkalog's own dumper and validator and fail a deliberately wrong dumper on
exactly the cases its bugs touch.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest

from helpers import GOLDEN, REPO, read_jsonl
from kafkalog.tools.conformance import load_corpus, run_conformance
from kafkalog.tools.harness import _fill as harness_fill
from kafkalog.tools.harness import _run as harness_run

CORPUS = GOLDEN / "corpus"
PY = sys.executable
#: the aiven-* cases' encrypted modes need the key pair they were written with: the runner puts the
#: case's key (case.json) where the command has {keys}
DUMP = f"{PY} -m kafkalog dump --json {{keys}}"
#: the command README.md and golden/corpus/README.md show, exactly
README_IMPL = "kafkalog dump --json {file}"
WRONG = f"{PY} {REPO / 'tests' / 'wrong_dumper.py'}"
JOBS = 2


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "kafkalog", *args], capture_output=True, text=True, check=False, cwd=REPO)


def _failing(impl: str | None, verify: str | None = None, patterns: tuple[str, ...] = ()) -> dict[str, list[str]]:
    from fnmatch import fnmatchcase

    cases = [c for c in load_corpus(CORPUS) if not patterns or any(fnmatchcase(c.name, p) for p in patterns)]
    assert cases
    return {r.case: r.details for r in run_conformance(cases, impl, verify, jobs=JOBS) if r.failed}


def _failing_in_process(impl: str | None, verify: str | None = None, patterns: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """:func:`_failing` for kafkalog's own commands and tests/wrong_dumper.py, run by
    tests/conformance_in_process.py: ``kafkalog conformance --json`` in a process of its own (this
    one's environment: KAFKALOG_NO_EXTENSIONS too), which runs those commands inside it, so that
    the whole corpus costs one interpreter start-up rather than one per case and file."""
    args = [*(("--impl", impl) if impl else ()), *(("--verify-impl", verify) if verify else ()), *(a for p in patterns for a in ("--case", p))]
    p = subprocess.run([PY, str(REPO / "tests" / "conformance_in_process.py"), "--json", *args], capture_output=True, text=True, check=False, cwd=REPO)
    rows = [json.loads(line) for line in p.stdout.splitlines()]
    assert p.returncode in (0, 1) and rows and p.returncode == any("fail" in (r["impl"], r["verify"]) for r in rows), p.stdout[-2000:] + p.stderr[-3000:]
    return {r["case"]: r["details"] for r in rows if "fail" in (r["impl"], r["verify"])}


# ------------------------------------------------------------------------------------- corpus
def test_corpus_is_what_the_generator_makes(tmp_path: Path) -> None:
    out = tmp_path / "corpus"
    subprocess.run([PY, str(GOLDEN / "generate_corpus.py"), "--out", str(out)], check=True, capture_output=True)

    def tree(root: Path) -> list[str]:
        return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())

    assert tree(out) == tree(CORPUS), "file lists differ: run golden/generate_corpus.py"
    changed = [f for f in tree(out) if not filecmp.cmp(out / f, CORPUS / f, shallow=False)]
    assert not changed, f"regenerated files differ: {changed[:10]} (run golden/generate_corpus.py)"


def test_generator_does_not_use_kafkalog() -> None:
    """Expected output must come from Kafka's dumps and the corruption applied, never from our decoder."""
    src = (GOLDEN / "generate_corpus.py").read_text(encoding="utf-8")
    assert not re.search(r"^\s*(import|from)\s+kafkalog", src, re.M)


def test_corpus_is_small() -> None:
    total = sum(p.stat().st_size for p in CORPUS.rglob("*") if p.is_file())
    assert total < 4 * 1024 * 1024, total


def test_good_cases_expected_lines_are_kafkas() -> None:
    """Every line of every good case's expected.jsonl is a line of Kafka's dumps, only the folder prefix removed."""

    def key(o: dict) -> str:
        return json.dumps(o, sort_keys=True)

    kafka: set[str] = set()
    golden0: set[str] = set()  # the aiven-* cases: golden-0's lines with ``file`` left out (it names the object)
    for src in (GOLDEN / "kafka" / "dump" / "records.jsonl", GOLDEN / "kafka" / "dump" / "logdir.jsonl",
                *sorted((GOLDEN / "kafka" / "internal" / "dump").glob("*.jsonl")),
                *sorted((GOLDEN / "real" / "expected").glob("*.jsonl.gz"))):
        for o in read_jsonl(src):
            kafka.add(key({**o, "file": o["file"].split("/", 1)[1]}))
            if o["file"].startswith("golden-0/"):
                golden0.add(key({k: v for k, v in o.items() if k != "file"}))
    for case in load_corpus(CORPUS):
        if case.name.startswith("aiven-"):
            strange = [o for o in case.expected_lines or () if key({k: v for k, v in o.items() if k != "file"}) not in golden0]
            assert not strange and len(case.expected_lines or ()) > 250, f"{case.name}: lines not in Kafka's dump of golden-0: {strange[:2]}"
        elif not case.bad:
            strange = [o for o in case.expected_lines or () if key(o) not in kafka]
            assert not strange, f"{case.name}: lines not in Kafka's dumps: {strange[:2]}"


def test_every_case_has_inputs_and_a_readme_row() -> None:
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    cases = load_corpus(CORPUS)
    assert len([c for c in cases if not c.bad]) >= 30 and len([c for c in cases if c.bad]) >= 15
    for c in cases:
        assert c.inputs, c.name
        assert f"| `{c.name}` |" in readme, c.name
        if c.bad:
            e = c.expected
            assert e is not None and e["reader"] in ("reject", "lines") and e["rules"], c.name
            f = e["finding"]
            assert f["file"] in c.inputs and isinstance(f["position"], int) and f["severity"] in ("error", "warning"), c.name
            assert (e["reader"] == "lines") == (c.expected_lines is not None), c.name


def test_spec_names_only_existing_cases() -> None:
    spec = (REPO / "SPEC.md").read_text(encoding="utf-8")
    named = set(re.findall(r"golden/corpus/((?:bad/)?[a-z0-9][a-z0-9.-]*[a-z0-9])", spec))
    assert len(named) >= 10, named
    missing = sorted(n for n in named if not (CORPUS / n).is_dir())
    assert not missing, f"SPEC.md names corpus cases that do not exist: {missing}"


def test_spec_rule_ids_of_bad_cases_exist() -> None:
    spec = (REPO / "SPEC.md").read_text(encoding="utf-8")
    for c in load_corpus(CORPUS):
        for rule in (c.expected or {}).get("rules", []):
            assert f"**{rule}**" in spec, f"{c.name}: {rule} is not a rule of SPEC.md"


def _v2_crc_ok(data: bytes, pos: int) -> bool:
    size = int.from_bytes(data[pos + 8 : pos + 12], "big")
    return crc32c.crc32c(data[pos + 21 : pos + 12 + size]) == int.from_bytes(data[pos + 17 : pos + 21], "big")


@pytest.mark.parametrize("case,crc_ok", [("crc-v2", False), ("bad-varint", True), ("record-count", True),
                                         ("undefined-codec", True), ("lz4-linked-blocks", True), ("decompression-bomb", True),
                                         ("zstd-truncated-frame", True)])
def test_bad_batches_break_only_what_they_say(case: str, crc_ok: bool) -> None:
    """Checked with the crc32c package: CRC flips break the CRC, every other corruption keeps it valid."""
    data = (CORPUS / "bad" / case / "00000000000000000000.log").read_bytes()
    assert _v2_crc_ok(data, 0) is crc_ok


def test_lz4_linked_blocks_case() -> None:
    """Only FLG's block-independence bit and the header checksum differ from Kafka's frame."""
    ours = (CORPUS / "bad" / "lz4-linked-blocks" / "00000000000000000000.log").read_bytes()
    kafka = (GOLDEN / "kafka" / "records" / "v2-lz4" / "00000000000000000000.log").read_bytes()
    diff = [i for i in range(len(ours)) if ours[i] != kafka[i]]
    assert diff[-2:] == [61 + 4, 61 + 6] and set(diff[:-2]) <= {17, 18, 19, 20}
    assert ours[65] == 0x40 and kafka[65] == 0x60


# ------------------------------------------------------------------------------------- runner
@pytest.mark.rule("R-CONF-04", "R-JSON-06")
def test_our_dumper_passes_every_case() -> None:
    assert _failing_in_process(f"{DUMP} {{dir}}") == {}


#: one case of each shape the README's command meets: a single-file case, a whole partition dir (indexes,
#: snapshots, checkpoints), an internal topic, a real broker's dir, an encrypted tiered folder with its key,
#: and bad files; every case passes with our dumper in test_our_dumper_passes_every_case
README_CASES = ("kafka-records-v2-zstd", "kafka-logdir-compacted-0", "kafka-internal-sharegroupstate-0",
                "real-cp760-schemas", "aiven-compression-encryption", "bad/crc-v2", "bad/index-position")


@pytest.mark.rule("R-CONF-04")
def test_readme_command_passes_as_written() -> None:
    """`kafkalog conformance --impl "kafkalog dump --json {file}"`, exactly as the READMEs show it: one
    run per input file, and for the aiven-* cases (case.json) one run on the folder with the case's
    private key added at the end of the command. Run on one case of each shape: the command costs a
    process per file, and the dumper itself passes every case above."""
    readmes = (REPO / "README.md").read_text(encoding="utf-8") + (CORPUS / "README.md").read_text(encoding="utf-8")
    assert f'kafkalog conformance --impl "{README_IMPL}"' in readmes
    bindir = str(Path(sys.executable).parent)
    if shutil.which("kafkalog", path=bindir) is None:
        pytest.skip(f"no kafkalog command beside {sys.executable}: kafkalog is not installed in this environment")
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    cases = [arg for name in README_CASES for arg in ("--case", name)]
    p = subprocess.run(["kafkalog", "conformance", "--impl", README_IMPL, *cases], capture_output=True, text=True, check=False, cwd=REPO, env=env)
    n = len(README_CASES)
    assert p.returncode == 0 and p.stdout.splitlines()[-1] == f"{n} cases, {n} passed, 0 failed", p.stdout[-3000:] + p.stderr[-2000:]


def test_tiered_cases_declare_what_they_need() -> None:
    """The aiven-* cases are read as one folder, and the encrypted ones name their key, which is there."""
    tiered = {c.name: c for c in load_corpus(CORPUS) if c.name.startswith("aiven-")}
    assert len(tiered) == 4 and all(c.folder for c in tiered.values())
    for name, case in tiered.items():
        if "encryption" in name:
            assert [k for k, _ in case.private_keys] == ["key1"] and case.private_keys[0][1].read_bytes() == (
                GOLDEN / "tiered" / "aiven" / "keys" / "private.pem").read_bytes()
        else:
            assert case.private_keys == ()


def test_keys_go_where_the_command_says_or_at_its_end() -> None:
    (case,) = [c for c in load_corpus(CORPUS) if c.name == "aiven-encryption"]
    key = f"key1={CORPUS / 'aiven-encryption' / 'keys' / 'key1.pem'}"
    assert case.argv(["tool", "{keys}", "{file}"]) == ["tool", "--private-key", key, "{file}"]
    assert case.argv(["tool", "{file}"]) == ["tool", "{file}", "--private-key", key]
    (plain,) = [c for c in load_corpus(CORPUS) if c.name == "kafka-records-v2-none"]
    assert plain.argv(["tool", "{keys}", "{file}"]) == ["tool", "{file}"] and not plain.folder


def test_a_tiered_case_without_its_key_fails() -> None:
    """The key is needed: a command that drops it fails the encrypted cases only."""
    failing = _failing(f"""sh -c '{PY} -m kafkalog dump --json "$0"' {{file}} {{keys}}""", patterns=("aiven-*",))
    assert set(failing) == {"aiven-encryption", "aiven-compression-encryption"}, failing


HEADER_CASES = {
    "kafka-logdir-compacted-0", "kafka-logdir-compacted-1", "kafka-logdir-compacted-input-0", "kafka-logdir-compacted-input-1",
    "kafka-logdir-golden-0", "kafka-logdir-legacy-0", "kafka-logdir-logappendtime-0", "kafka-logdir-recompressed-0",
    "kafka-logdir-transactional-0", "kafka-records-mixed-magic", "kafka-records-v2-gzip", "kafka-records-v2-lz4",
    "kafka-records-v2-none", "kafka-records-v2-snappy", "kafka-records-v2-transactional", "kafka-records-v2-zstd",
    "real-weebee-headers", "bad/crc-v2", "bad/index-position", "bad/length-past-eof", "bad/timeindex-not-max",
    "bad/timeindex-order", "bad/truncated-batch", "bad/txnindex-missing-abort",
    "aiven-plain", "aiven-compression", "aiven-encryption", "aiven-compression-encryption",  # golden-0's segments 0-146, tiered
}
MAGIC1_CASES = {"kafka-logdir-legacy-0", "kafka-records-mixed-magic", "kafka-records-v1-gzip", "kafka-records-v1-lz4",
                "kafka-records-v1-none", "kafka-records-v1-snappy", "bad/crc-v1-wrapper"}
CRC_CASES = {"bad/crc-v2", "bad/crc-v1-wrapper"}
REJECT_CASES = {"bad/bad-magic", "bad/bad-varint", "bad/batch-too-small", "bad/checkpoint-version", "bad/decompression-bomb",
                "bad/lz4-linked-blocks", "bad/negative-length", "bad/partition-metadata", "bad/record-count",
                "bad/snapshot-crc", "bad/undefined-codec", "bad/zstd-truncated-frame"}


def test_header_cases_are_those_with_headers_in_kafkas_dump() -> None:
    """The hand-written set above agrees with the expected lines (which come from Kafka)."""
    derived = {c.name for c in load_corpus(CORPUS) if any(o.get("headers") for o in c.expected_lines or ())}
    assert derived == HEADER_CASES


def test_wrong_dumper_dropping_headers_fails_exactly_the_header_cases() -> None:
    failing = _failing_in_process(f"{WRONG} drop-headers {{dir}}")
    assert set(failing) == HEADER_CASES
    assert all("headers: got []" in d[0] for d in failing.values()), failing


def test_wrong_dumper_other_bugs_fail_exactly_their_cases() -> None:
    """Magic 1 timestamp type swapped, bad CRCs accepted, exit 0 on unreadable input."""
    failing = _failing_in_process(f"{WRONG} swap-ts-magic1,accept-bad-crc,exit-zero {{dir}}")
    assert set(failing) == MAGIC1_CASES | CRC_CASES | REJECT_CASES
    for case, details in failing.items():
        if case in MAGIC1_CASES:
            assert "timestampType" in details[0], (case, details)
        if case in CRC_CASES:
            assert "isValid: got true, expected false" in details[0], (case, details)
        if case in REJECT_CASES:
            assert "exit 0: a conforming reader rejects" in details[0], (case, details)


@pytest.mark.rule("R-CONF-05")
@pytest.mark.usefixtures("kernels")
def test_our_validator_reports_every_bad_case() -> None:
    """`kafkalog verify --json` exits 1 and reports each expected code and position; Kafka's partition
    dirs pass: with the compiled kernels and with the pure-Python ones."""
    assert _failing_in_process(None, f"{PY} -m kafkalog verify --json {{dir}}", ("bad/*", "kafka-logdir-*", "kafka-internal-*", "real-*")) == {}


def test_validator_that_reports_nothing_fails_the_error_cases() -> None:
    failing = _failing(None, "true {dir}", ("bad/*",))
    errors = {c.name for c in load_corpus(CORPUS) if c.bad and c.expected and c.expected["finding"]["severity"] == "error"}
    assert set(failing) == errors and "bad/truncated-batch" not in failing


def test_validator_with_wrong_finding_fails(tmp_path: Path) -> None:
    fake = tmp_path / "fake.py"
    fake.write_text('import json\nprint(json.dumps({"code": "batch-crc", "file": "x.log", "position": 9}))\nraise SystemExit(1)\n')
    failing = _failing(None, f"{PY} {fake} {{dir}}", ("bad/crc-v2", "bad/snapshot-crc"))
    assert set(failing) == {"bad/crc-v2", "bad/snapshot-crc"}
    assert "expected finding batch-crc at 00000000000000000000.log position 0" in failing["bad/crc-v2"][0]


def test_runner_reports_first_differing_line_and_key_order(tmp_path: Path) -> None:
    """A fake dumper that echoes expected.jsonl passes; one that changes a value or the key order fails there."""
    fake = tmp_path / "echo.py"
    fake.write_text(
        "import json, sys\n"
        "mode, d = sys.argv[1], sys.argv[2]\n"
        "for n, line in enumerate(open(d + '/expected.jsonl')):\n"
        "    o = json.loads(line)\n"
        "    if n == 2 and mode == 'value':\n"
        "        o['offset'] = -7\n"
        "    if n == 2 and mode == 'order':\n"
        "        o = dict(reversed(list(o.items())))\n"
        "    print(json.dumps(o))\n"
    )
    patterns = ("kafka-records-v0-none",)
    assert _failing(f"{PY} {fake} same {{dir}}", patterns=patterns) == {}
    value = _failing(f"{PY} {fake} value {{dir}}", patterns=patterns)["kafka-records-v0-none"][0]
    assert value.startswith("impl: line 3 (00000000000000000000.log ") and "offset: got -7" in value
    order = _failing(f"{PY} {fake} order {{dir}}", patterns=patterns)["kafka-records-v0-none"][0]
    assert order.startswith("impl: line 3 ") and "SPEC §7 order" in order


def test_runner_timeout_and_missing_command() -> None:
    cases = [c for c in load_corpus(CORPUS) if c.name == "kafka-records-v0-none"]
    (r,) = run_conformance(cases, f"{PY} -c 'import time; time.sleep(5)' {{dir}}", timeout=0.5)
    assert r.failed and "timed out after 0.5 s" in r.details[0]
    (r,) = run_conformance(cases, "/nonexistent/dumper {file}")
    assert r.failed and "cannot run /nonexistent/dumper" in r.details[0]


@pytest.mark.parametrize(("case", "command"), [
    ("bad/crc-v2", f"{PY} -m kafkalog verify --json {{dir}}"),  # exit 1 with JSON findings
    ("kafka-logdir-transactional-0", f"{PY} -m kafkalog verify --json {{dir}}"),  # exit 0
    ("kafka-logdir-compacted-0", f"{DUMP} {{dir}}"),
    ("bad/truncated-batch", f"{DUMP} {{dir}}"),
    ("bad/crc-v2", f"{WRONG} accept-bad-crc,exit-zero {{dir}}"),
    ("kafka-records-v0-none", f"{PY} -m kafkalog dump --no-such-option {{dir}}"),  # usage error: exit 2
])
def test_in_process_runs_give_what_the_process_gives(case: str, command: str) -> None:
    """tests/conformance_in_process.py, which the runner tests above use for kafkalog's own commands,
    captures the exit code, stdout and stderr that the command gives as a process of its own."""
    import shlex

    import conformance_in_process

    (c,) = [c for c in load_corpus(CORPUS) if c.name == case]
    template, subst = c.argv(shlex.split(command)), {"file": str(c.path), "dir": str(c.path)}
    assert conformance_in_process._entry([harness_fill(t, subst) for t in template]) is not None  # run in process, not started
    inside = conformance_in_process.run(template, subst, 60)
    process = harness_run(template, subst, 60)
    assert (inside.code, inside.stdout, inside.stderr) == (process.code, process.stdout, process.stderr)
    assert inside.stdout or inside.stderr


# ---------------------------------------------------------------------------------------- CLI
def test_cli_table_and_exit_codes() -> None:
    ok = _cli("conformance", "--impl", f"{DUMP} {{dir}}", "--case", "kafka-records-v2-*", "--case", "bad/crc-v2")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines()[0].split() == ["case", "kind", "impl", "verify", "detail"]
    assert ok.stdout.splitlines()[-1] == "7 cases, 7 passed, 0 failed"
    bad = _cli("conformance", "--json", "--impl", f"{WRONG} accept-bad-crc {{dir}}", "--case", "bad/crc-*", "--case", "kafka-records-v0-none")
    assert bad.returncode == 1
    rows = {r["case"]: r for r in map(json.loads, bad.stdout.splitlines())}
    assert {k: v["impl"] for k, v in rows.items()} == {"kafka-records-v0-none": "pass", "bad/crc-v1-wrapper": "fail", "bad/crc-v2": "fail"}


@pytest.mark.parametrize("args,code,message", [
    (["--impl", "mytool"], 2, "needs {file}"),
    ([], 2, "give --impl, --verify-impl and/or --writer"),
    (["--impl", "x {file}", "--case", "nothing-*"], 2, "no case matches"),
    (["--impl", "x {file}", "--corpus", "/nonexistent"], 3, "no corpus"),
])
def test_cli_usage_errors(args: list[str], code: int, message: str) -> None:
    p = _cli("conformance", *args)
    assert p.returncode == code and message in p.stderr and "Traceback" not in p.stderr


def test_default_corpus_found_from_another_directory(tmp_path: Path) -> None:
    p = subprocess.run([PY, "-m", "kafkalog", "conformance", "--impl", f"{DUMP} {{dir}}", "--case", "kafka-records-v0-none"],
                       capture_output=True, text=True, check=False, cwd=tmp_path, env={**os.environ})
    assert p.returncode == 0, p.stderr + p.stdout
