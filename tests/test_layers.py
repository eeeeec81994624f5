"""The package's layers (issue #22, README "Layout"): every import of every module, function-level ones
included (``if TYPE_CHECKING:`` blocks excepted), read with ``ast``; no import circle anywhere in
``codec/`` or ``spark_ext/``, and imports run downward only: tools -> dataset -> log/fast -> format.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: one xdist worker runs this module's tests, so the import graph (3 CPU s of parsing) is built once a run
pytestmark = pytest.mark.xdist_group("layers")
ROOTS = [REPO / "codec", REPO / "spark_ext"]

#: What each layer of kafkalog may import from (besides the package's top-level modules).
ALLOWED = {
    "format": {"format"},
    "internal": {"format", "internal"},
    "fast": {"format", "fast"},
    "log": {"format", "log"},
    "dataset": {"format", "fast", "log", "dataset"},
    "tools": {"format", "internal", "fast", "log", "dataset", "tools"},
}


def _modules() -> dict[str, Path]:
    out = {}
    for root in ROOTS:
        for p in root.rglob("*.py"):
            parts = list(p.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = p
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
            skip.update(id(x) for x in ast.walk(n))
    return skip


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports (a ``from P import N`` of a submodule counts as importing P.N)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_nodes(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for n in ast.walk(tree):
        if id(n) in skip:
            continue
        if isinstance(n, ast.Import):
            out.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            base = n.module or ""
            if n.level:
                base = ".".join(package[: len(package) - n.level + 1] + ([n.module] if n.module else []))
            for a in n.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base)
    return {m for m in out if m in modules and m != name}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm): the import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_walk_sees_function_level_imports(graph: dict[str, set[str]]) -> None:
    # the package plugs the compiled record walker into the record layer inside a function
    assert "kafkalog.fast.objects" in graph["kafkalog"]
    assert "kafkalog.fast.columnar" in graph["kafkalog.tools.validate"]


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    assert _cycles(graph) == []


def test_the_circle_finder_finds_one() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_layers_import_downward_only(graph: dict[str, set[str]]) -> None:
    wrong = []
    for name, deps in graph.items():
        parts = name.split(".")
        if parts[0] != "kafkalog" or len(parts) < 3:
            continue
        for dep in deps:
            dp = dep.split(".")
            if dp[0] == "kafkalog" and len(dp) >= 3 and dp[1] not in ALLOWED[parts[1]]:
                wrong.append(f"{name} -> {dep}")
    assert wrong == []


def test_few_modules_at_the_top() -> None:
    top = sorted(p.name for p in (REPO / "codec" / "kafkalog").glob("*.py"))
    assert len(top) <= 8, top
