"""``kafkalog conformance``: run another implementation over the golden corpus and compare.

The corpus (golden/corpus, SPEC.md §8) holds good cases, each a folder of Kafka-written files with
``expected.jsonl`` (Kafka's own canonical JSON, SPEC §7), and bad cases under ``bad/``, each a
corrupted file with ``expected.json`` (the finding a conforming reader or validator must report).
The implementation is any command; ``{file}`` in it is replaced by each input file of a case in
turn, ``{dir}`` by the case folder. A case whose ``case.json`` declares ``"input": "folder"`` (its
files read as one input, as Aiven's tiered-storage objects are read through their manifest) gives its
folder for ``{file}`` too; one that declares ``privateKeys`` gives ``--private-key ID=FILE`` for each
where the command has the word ``{keys}``, or at its end when it has none.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalog.tools.command import EXIT_BAD_DATA, EXIT_IO, EXIT_OK, EXIT_USAGE, Progress
from kafkalog.tools.harness import CaseResult, _describe, _last_line, _Run, _run

__all__ = ["Case", "CaseResult", "default_corpus", "load_corpus", "render_table", "run_conformance"]

_SIDE_FILES = {"expected.jsonl", "expected.json", "README.md", "case.json"}
#: the word of a command that stands for a case's private keys (``--private-key ID=FILE`` each)
KEYS = "{keys}"


@dataclass(frozen=True)
class Case:
    """One corpus folder: its name (``bad/<x>`` for bad cases), path, inputs and expectations, and
    what reading it needs (its ``case.json``): whether its files are one input, the folder, and the
    private keys of the key pairs its tiered objects are encrypted for (id -> file)."""

    name: str
    path: Path
    inputs: tuple[str, ...]
    expected_lines: tuple[dict[str, Any], ...] | None
    expected: dict[str, Any] | None  # bad cases: the contents of expected.json
    folder: bool = False
    private_keys: tuple[tuple[str, Path], ...] = ()

    @property
    def bad(self) -> bool:
        return self.expected is not None

    def argv(self, template: list[str]) -> list[str]:
        """``template`` with the word ``{keys}`` replaced by ``--private-key ID=FILE`` for each of the
        case's keys, which go at the end when the command has no ``{keys}``."""
        keys = [arg for key_id, path in self.private_keys for arg in ("--private-key", f"{key_id}={path}")]
        if KEYS not in template:
            return template + keys
        return [arg for word in template for arg in (keys if word == KEYS else [word])]


def default_corpus() -> Path | None:
    """golden/corpus of the source tree this package runs from, else of the current directory."""
    for cand in (Path(__file__).resolve().parents[3] / "golden" / "corpus", Path.cwd() / "golden" / "corpus"):
        if cand.is_dir():
            return cand
    return None


def _read_jsonl(path: Path) -> tuple[dict[str, Any], ...]:
    with open(path, encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def _case(path: Path, name: str) -> Case:
    inputs = tuple(sorted(f for f in os.listdir(path) if f not in _SIDE_FILES and (path / f).is_file()))
    lines = _read_jsonl(path / "expected.jsonl") if (path / "expected.jsonl").exists() else None
    expected = json.loads((path / "expected.json").read_text(encoding="utf-8")) if (path / "expected.json").exists() else None
    if lines is None and expected is None:
        raise ValueError(f"{path}: neither expected.jsonl nor expected.json")
    meta = json.loads((path / "case.json").read_text(encoding="utf-8")) if (path / "case.json").exists() else {}
    keys = tuple((key_id, path / file) for key_id, file in sorted(meta.get("privateKeys", {}).items()))
    return Case(name, path, inputs, lines, expected, meta.get("input") == "folder", keys)


def load_corpus(root: Path) -> list[Case]:
    """Every case of the corpus at ``root``: good cases first, then ``bad/*``, each in name order
    (``writer/`` holds the writer cases, :mod:`kafkalog.writer_cases`)."""
    cases = [_case(p, p.name) for p in sorted(root.iterdir()) if p.is_dir() and p.name not in ("bad", "writer")]
    bad = root / "bad"
    if bad.is_dir():
        cases += [_case(p, f"bad/{p.name}") for p in sorted(bad.iterdir()) if p.is_dir()]
    return cases


def _parse_lines(out: str) -> tuple[list[dict[str, Any]], str | None]:
    objs: list[dict[str, Any]] = []
    for n, line in enumerate(out.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            return objs, f"output line {n} is not JSON: {line[:80]!r}"
        if not isinstance(obj, dict):
            return objs, f"output line {n} is not a JSON object"
        objs.append(obj)
    return objs, None


def _first_difference(got: list[dict[str, Any]], expected: list[dict[str, Any]]) -> str | None:
    """A message naming the first line where ``got`` differs from ``expected``, or None when equal."""
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        if g != e:
            keys = [k for k in list(e) + [k for k in g if k not in e] if g.get(k, "<absent>") != e.get(k, "<absent>")]
            diff = ", ".join(f"{k}: got {json.dumps(g.get(k, '<absent>'))}, expected {json.dumps(e.get(k, '<absent>'))}" for k in keys[:4])
            return f"line {i + 1} ({e.get('file')} {e.get('type')}): {diff}"
        if list(g) != list(e):
            return f"line {i + 1} ({e.get('file')} {e.get('type')}): keys in order {list(g)}, SPEC §7 order is {list(e)}"
    if len(got) != len(expected):
        if len(got) < len(expected):
            e = expected[len(got)]
            return f"{len(got)} lines, expected {len(expected)}; first missing: line {len(got) + 1} ({e.get('file')} {e.get('type')})"
        g = got[len(expected)]
        return f"{len(got)} lines, expected {len(expected)}; first extra: line {len(expected) + 1} ({g.get('file')} {g.get('type')})"
    return None


def _mode(template: list[str]) -> str:
    joined = " ".join(template)
    if "{file}" in joined:
        return "file"
    if "{dir}" in joined:
        return "dir"
    raise ValueError("the command needs {file} (run once per input file) or {dir} (once per case folder)")


def _runs(case: Case, template: list[str], timeout: float) -> list[tuple[str | None, _Run]]:
    """Run a command over a good case: once on its folder (a ``{dir}`` command, or an
    ``"input": "folder"`` case), else once per input file (named in the result)."""
    argv = case.argv(template)
    if _mode(template) == "dir" or case.folder:
        return [(None, _run(argv, {"file": str(case.path), "dir": str(case.path)}, timeout))]
    return [(f, _run(argv, {"file": str(case.path / f), "dir": str(case.path)}, timeout)) for f in case.inputs]


def _dump_lines(case: Case, template: list[str], timeout: float, strict_exit: bool) -> str | None:
    """Run a dumper over a case and compare its JSON lines with expected.jsonl; None when they match."""
    assert case.expected_lines is not None
    for f, run in _runs(case, template, timeout):
        exp = [o for o in case.expected_lines if f is None or o.get("file") == f]
        where = f"{f}: " if f else ""
        bad = _describe(run, timeout)
        if bad:
            return where + bad
        if strict_exit and run.code != 0:
            return f"{where}exit {run.code}: {_last_line(run.stderr)}"
        got, err = _parse_lines(run.stdout)
        if err:
            return where + err
        diff = _first_difference(got, exp)
        if diff:
            return where + diff
    return None


def _findings(stdout: str) -> list[dict[str, Any]]:
    """JSON objects with a ``code`` in an implementation's output (its machine-readable findings)."""
    out = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict) and "code" in obj:
                out.append(obj)
            elif isinstance(obj, dict) and isinstance(obj.get("findings"), list):
                out += [x for x in obj["findings"] if isinstance(x, dict) and "code" in x]
    return out


def _finding_matches(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Same code and file; same position (the corrupted byte, or the start of its entry) and offset when reported."""
    if got.get("code") != want["code"]:
        return False
    if got.get("file") and os.path.basename(str(got["file"])) != want["file"]:
        return False
    if got.get("position") is not None and got["position"] not in (want["position"], want.get("entryPosition", want["position"])):
        return False
    return got.get("offset") is None or want.get("offset") is None or got["offset"] == want["offset"]


def _check_findings(run: _Run, want: dict[str, Any]) -> str | None:
    found = _findings(run.stdout)
    if found and not any(_finding_matches(f, want) for f in found):
        codes = ", ".join(f"{f.get('code')}@{f.get('position')}" for f in found[:5])
        return f"expected finding {want['code']} at {want['file']} position {want['position']}; reported: {codes}"
    return None


def _run_on_bad_file(case: Case, template: list[str], timeout: float) -> tuple[_Run | None, str | None]:
    """Run ``template`` on the file a bad case corrupts: the run, or why it is unusable."""
    assert case.expected is not None
    want = case.expected["finding"]
    run = _run(case.argv(template), {"file": str(case.path / want["file"]), "dir": str(case.path)}, timeout)
    bad = _describe(run, timeout)
    return (None, bad) if bad else (run, None)


def _bad_with_dumper(case: Case, template: list[str], timeout: float) -> str | None:
    assert case.expected is not None
    if case.expected["reader"] == "lines":
        return _dump_lines(case, template, timeout, strict_exit=False)
    want = case.expected["finding"]
    run, bad = _run_on_bad_file(case, template, timeout)
    if run is None:
        return bad
    if run.code == 0:
        return f"exit 0: a conforming reader rejects this input ({want['code']} at position {want['position']})"
    return _check_findings(run, want)


def _bad_with_validator(case: Case, template: list[str], timeout: float) -> str | None:
    assert case.expected is not None
    want = case.expected["finding"]
    run, bad = _run_on_bad_file(case, template, timeout)
    if run is None:
        return bad
    if want.get("severity", "error") == "error" and run.code == 0:
        return f"exit 0: a conforming validator reports {want['code']} at {want['file']} position {want['position']}"
    return _check_findings(run, want)


def _good_with_validator(case: Case, template: list[str], timeout: float) -> str | None:
    for f, run in _runs(case, template, timeout):
        where = f"{f}: " if f else ""
        bad = _describe(run, timeout)
        if bad:
            return where + bad
        if run.code != 0:
            errors = [x for x in _findings(run.stdout) if x.get("severity", "error") == "error"]
            first = f"{errors[0].get('code')}@{errors[0].get('position')}" if errors else _last_line(run.stderr)
            return f"{where}exit {run.code} on Kafka-written data: {first}"
    return None


def _check(case: Case, impl: list[str] | None, verify: list[str] | None, timeout: float) -> CaseResult:
    res = CaseResult(case.name, "bad" if case.bad else "good")
    if impl is not None:
        msg = _bad_with_dumper(case, impl, timeout) if case.bad else _dump_lines(case, impl, timeout, strict_exit=True)
        res.impl = "fail" if msg else "pass"
        if msg:
            res.details.append(f"impl: {msg}")
    if verify is not None:
        msg = _bad_with_validator(case, verify, timeout) if case.bad else _good_with_validator(case, verify, timeout)
        res.verify = "fail" if msg else "pass"
        if msg:
            res.details.append(f"verify: {msg}")
    return res


def run_conformance(
    cases: list[Case],
    impl: str | None,
    verify_impl: str | None = None,
    *,
    timeout: float = 60.0,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> list[CaseResult]:
    """Check every case with the dumper command ``impl`` and/or the validator command ``verify_impl``.

    Commands are split like a shell would (no shell runs them); raises ValueError when a command
    has neither ``{file}`` nor ``{dir}``."""
    t_impl = shlex.split(impl) if impl else None
    t_verify = shlex.split(verify_impl) if verify_impl else None
    for t in (t_impl, t_verify):
        if t is not None:
            _mode(t)

    def one(case: Case) -> CaseResult:
        if progress is not None:
            progress(case.name)
        return _check(case, t_impl, t_verify, timeout)

    if jobs <= 1:
        return [one(c) for c in cases]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, cases))


def render_table(results: list[CaseResult]) -> Iterator[str]:
    """Lines of a plain-text table, one row per case, then a summary line."""
    width = max([len(r.case) for r in results] + [4])
    kw = max([len(r.kind) for r in results] + [4])
    yield f"{'case':<{width}}  {'kind':<{kw}}  {'impl':<4}  {'verify':<6}  detail"
    for r in results:
        detail = r.details[0] if r.details else ""
        yield f"{r.case:<{width}}  {r.kind:<{kw}}  {r.impl:<4}  {r.verify:<6}  {detail}"
        for more in r.details[1:]:
            yield f"{'':<{width}}  {'':<{kw}}  {'':<4}  {'':<6}  {more}"
    failed = sum(r.failed for r in results)
    yield f"{len(results)} cases, {len(results) - failed} passed, {failed} failed"


def _command(args: argparse.Namespace) -> int:
    import fnmatch
    import json
    from pathlib import Path

    from kafkalog.tools.writer_cases import WriterCase, load_writer_cases, run_writer_conformance


    if not args.impl and not args.verify_impl and not args.writer:
        print("kafkalog conformance: give --impl, --verify-impl and/or --writer", file=sys.stderr)
        return EXIT_USAGE
    corpus = Path(args.corpus) if args.corpus else default_corpus()
    if corpus is None or not corpus.is_dir():
        print(f"kafkalog conformance: no corpus at {args.corpus or 'golden/corpus'} (give --corpus DIR)", file=sys.stderr)
        return EXIT_IO

    def chosen(names: list[str]) -> set[str]:
        return {n for n in names if not args.case or any(fnmatch.fnmatchcase(n, pat) for pat in args.case)}

    cases = load_corpus(corpus) if args.impl or args.verify_impl else []
    writer_root = corpus / "writer" if (corpus / "writer").is_dir() else corpus
    writer_cases: list[WriterCase] = load_writer_cases(writer_root) if args.writer else []
    if args.case:
        keep = chosen([c.name for c in cases] + [c.name for c in writer_cases])
        cases = [c for c in cases if c.name in keep]
        writer_cases = [c for c in writer_cases if c.name in keep]
        if not cases and not writer_cases:
            print(f"kafkalog conformance: no case matches {' '.join(args.case)}", file=sys.stderr)
            return EXIT_USAGE
    if args.writer and not writer_cases and not args.case:
        print(f"kafkalog conformance: no writer cases (folders with case.json) in {writer_root}", file=sys.stderr)
        return EXIT_IO
    progress = Progress(sys.stderr, "checking")
    try:
        results: list[CaseResult] = []
        if cases:
            results += run_conformance(cases, args.impl, args.verify_impl, timeout=args.timeout, jobs=args.jobs, progress=progress)
        if writer_cases:
            results += run_writer_conformance(writer_cases, args.writer, timeout=args.timeout, jobs=args.jobs, progress=progress)
    except ValueError as e:
        progress.done()
        print(f"kafkalog conformance: {e}", file=sys.stderr)
        return EXIT_USAGE
    progress.done()
    if args.json:
        for r in results:
            print(json.dumps(r.to_json(), separators=(",", ":")))
    else:
        for line in render_table(results):
            print(line)
    return EXIT_BAD_DATA if any(r.failed for r in results) else EXIT_OK


# ------------------------------------------------------------------------------- the command
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``kafkalog conformance`` to the command line."""
    c = sub.add_parser("conformance", help="run another implementation over the golden corpus and compare", description=(
        "Run a dumper (--impl) and/or a validator (--verify-impl) over the conformance corpus (SPEC.md section 8). "
        "In each COMMAND, {file} is replaced by each input file of a case in turn, {dir} by the case folder. "
        "A case whose case.json declares \"input\": \"folder\" (Aiven's tiered-storage objects, read through their "
        "manifest) gives its folder for {file} too; one that declares privateKeys gives --private-key ID=FILE for "
        "each key pair where the command has the word {keys}, or at its end when it has none. "
        "Good cases: the dumper's stdout must be Kafka's canonical JSON lines (expected.jsonl) and its exit 0. "
        "Bad cases: per expected.json, the dumper must fail ('reject') or print exactly expected.jsonl ('lines'); "
        "the validator must exit non-zero, and JSON findings it prints must include the expected code and position. "
        "Writer cases (--writer): the command replays a case's operations (case.json, input.log) into an empty "
        "directory, which must then equal the case's expected/ file by file, byte for byte; a failing case names the "
        "missing, extra or different files, the first differing byte and the SPEC rules. "
        "Prints a table (or --json, one object per case); exit 1 if any case fails."))
    c.add_argument("--impl", metavar="COMMAND", help='dumper command, e.g. "mytool dump --json {file}"')
    c.add_argument("--verify-impl", metavar="COMMAND", help='validator command, e.g. "mytool verify --json {dir}"')
    c.add_argument("--writer", metavar="COMMAND", help=(
        'writer command, e.g. "kafkalog write-case {case} {dir}": run over each writer case (golden/corpus/writer), '
        "{case} the case folder, {dir} an empty output dir that must end equal to the case's expected/ byte for byte"))
    c.add_argument("--corpus", metavar="DIR", help="corpus folder (default: golden/corpus)")
    c.add_argument("--case", action="append", metavar="PATTERN", help="only cases whose name matches this glob (repeatable)")
    c.add_argument("--jobs", "-j", type=int, default=1, metavar="N", help="cases run at once (default 1)")
    c.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per command run (default 60)")
    c.add_argument("--json", action="store_true", help="one JSON object per case")
    c.set_defaults(func=_command)
