"""Running an implementation's command over a conformance case: the subprocess, its outcome, and the
result row, shared by the reader corpus (:mod:`kafkalog.tools.conformance`) and the writer cases
(:mod:`kafkalog.tools.writer_cases`)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CaseResult"]


@dataclass
class CaseResult:
    """The outcome of one case for the dumper (``impl``) and the validator (``verify``) checks."""

    case: str
    kind: str
    impl: str = "-"
    verify: str = "-"
    details: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return "fail" in (self.impl, self.verify)

    def to_json(self) -> dict[str, Any]:
        return {"case": self.case, "kind": self.kind, "impl": self.impl, "verify": self.verify, "details": self.details}


@dataclass
class _Run:
    code: int | None  # None: timed out
    stdout: str
    stderr: str
    error: str | None = None  # the command could not be started


def _run(template: list[str], subst: dict[str, str], timeout: float) -> _Run:
    argv = [_fill(tok, subst) for tok in template]
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired as e:
        return _Run(None, _text(e.stdout), _text(e.stderr))
    except OSError as e:
        return _Run(None, "", "", error=f"cannot run {argv[0]}: {e.strerror or e}")
    return _Run(p.returncode, _text(p.stdout), _text(p.stderr))


def _fill(tok: str, subst: dict[str, str]) -> str:
    for k, v in subst.items():
        tok = tok.replace("{" + k + "}", v)
    return tok


def _text(b: bytes | str | None) -> str:
    if b is None:
        return ""
    return b if isinstance(b, str) else b.decode("utf-8", errors="replace")


def _describe(run: _Run, timeout: float) -> str | None:
    """Why a run is unusable (not started, timed out, killed by a signal), or None."""
    if run.error:
        return run.error
    if run.code is None:
        return f"timed out after {timeout:g} s"
    if run.code < 0:
        return f"killed by signal {-run.code}"
    return None


def _last_line(text: str) -> str:
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[-1][:160] if lines else "(no message)"
