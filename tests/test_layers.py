"""Import layers: every module under src/trusteval imports only its own layer or the layers below it.

Every import is read with `ast`, at module level and inside functions (a lazy import is still a dependency),
and each module is given the layer of its package (see LAYERS and docs/architecture.md). Every import form
counts: `import trusteval.x`, `from trusteval.x import y`, relative imports, and `from trusteval import y` or
`import trusteval` (an import of the package root, the top layer). The test fails on an upward import, on a cycle
between packages, and on a cycle between modules inside one package. Today's known exceptions are listed in
ALLOWED with the reason; the list may only shrink: a new upward import or cycle fails.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src" / "trusteval"

# Bottom (0) to top (5). A package's layer covers every module in it; a top-level module has its own.
LAYERS: dict[str, int] = {
    "_version": 0, "records": 0, "errors": 0, "progress": 0, "untrusted": 0, "util": 0,
    "store": 1, "registry": 1, "specs": 1, "options": 1, "dotenv": 1,
    "models": 2, "data": 2, "lexicon": 2, "scorers": 2, "metrics": 2, "tables": 2,
    "benchmarks": 3, "config": 3, "executors": 3,
    "pipeline": 4, "report": 4, "translation": 4,
    "commands": 5, "cli": 5, "api": 5, "__main__": 5, "__init__": 5,
}  # fmt: skip

# (importing module, imported module) pairs that break the layering today, each with the reason it stays.
# Remove an entry when the import goes; never add one without a reason a maintainer would accept.
# An entry names modules or packages; it covers every module below them.
ALLOWED: dict[tuple[str, str], str] = {
    ("trusteval.lexicon.core", "trusteval.lexicon.symmetric"): "symmetric.py is Lexicon's swap half (issue 30), "
    "split out for size; it names core's types for mypy and calls two of core's grammar helpers lazily. To go: "
    "the helpers into a grammar module below both, the types passed in",
    ("trusteval.lexicon.symmetric", "trusteval.lexicon.core"): "the other edge of the same loop",
}


def unit(module: str) -> str:
    """The layered unit of a dotted module name below trusteval: its package, or the top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path) -> str:
    relative = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(relative.parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1] if len(parts) > 2 else parts
    return ".".join(parts)


def _resolve_relative(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    base = module.split(".")
    base = base if is_package else base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(path: Path) -> set[str]:
    """Every trusteval module this file imports, anywhere in the file."""
    return imports_of_text(path.read_text(encoding="utf-8"), module_name(path), path.name == "__init__.py")


def imports_of_text(text: str, module: str, is_package: bool = False) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve_relative(module, node, is_package) if node.level else node.module or ""
            names = {f"{target}.{alias.name}" for alias in node.names}
            found.update(names)
            if target != "trusteval" or not all(_exists(name) for name in names):
                found.add(target)  # `from trusteval import api` imports the module api, not the root's names
    return {_root_or_module(name) for name in found if name == "trusteval" or name.startswith("trusteval.")}


def _root_or_module(name: str) -> str:
    """`trusteval.x` when that is a module; else the name is an attribute of the package root: `trusteval`."""
    while name != "trusteval" and not _exists(name):
        name = name.rsplit(".", 1)[0]
    return name


def _exists(name: str) -> bool:
    relative = Path(*name.split(".")[1:])
    return (ROOT / relative).with_suffix(".py").is_file() or (ROOT / relative / "__init__.py").is_file()


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for path in sorted(ROOT.rglob("*.py")):
        graph[module_name(path)] = {name for name in imports_of(path) if name != module_name(path)}
    return graph


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {
        (source, target)
        for source, targets in graph.items()
        for target in targets
        if LAYERS.get(unit(target), -1) > LAYERS.get(unit(source), -1)  # a unit without a layer fails above
    }


def package_cycles(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Imports between two packages of one layer that reach each other (an upward import is reported as such).

    Returns (module, module) edges that lie on a cycle of the package graph built from same-layer imports.
    """
    same_layer = {
        (source, target)
        for source, targets in graph.items()
        for target in targets
        if unit(source) != unit(target) and LAYERS.get(unit(source)) == LAYERS.get(unit(target))
    }
    edges: dict[str, set[str]] = defaultdict(set)
    for source, target in same_layer:
        edges[unit(source)].add(unit(target))
    return {(s, t) for s, t in same_layer if unit(s) in _reachable(edges, unit(t))}


def module_cycles(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Imports between two modules of one package (lazy ones too) that reach each other through that package."""
    inside = {
        source: {t for t in targets if t != source and _package(t) == _package(source)}
        for source, targets in graph.items()
    }
    return {(s, t) for s, targets in inside.items() for t in targets if s in _reachable(inside, t)}


def _package(module: str) -> str:
    return module.rsplit(".", 1)[0] if module.count(".") > 1 else module


def _reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


@pytest.mark.slow
def test_every_module_has_a_layer() -> None:
    missing = sorted({unit(m) for m in import_graph()} - set(LAYERS))
    assert not missing, f"give these modules a layer in LAYERS (and docs/architecture.md): {missing}"


def allowed(edge: tuple[str, str]) -> bool:
    return any(_within(edge[0], source) and _within(edge[1], target) for source, target in ALLOWED)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.mark.slow
def test_imports_point_down_only() -> None:
    new = sorted(edge for edge in upward_imports(import_graph()) if not allowed(edge))
    assert not new, "upward imports (move the code down, or pass the dependency in):\n" + "\n".join(
        f"  {s} (layer {LAYERS.get(unit(s))}) imports {t} (layer {LAYERS.get(unit(t))})" for s, t in new
    )


@pytest.mark.slow
def test_no_cycles_between_packages() -> None:
    new = sorted(edge for edge in package_cycles(import_graph()) if not allowed(edge))
    assert not new, "imports that close a cycle between packages:\n" + "\n".join(f"  {s} -> {t}" for s, t in new)


@pytest.mark.slow
def test_no_cycles_between_modules_of_one_package() -> None:
    new = sorted(edge for edge in module_cycles(import_graph()) if not allowed(edge))
    assert not new, "imports that close a cycle inside a package:\n" + "\n".join(f"  {s} -> {t}" for s, t in new)


def test_allowed_list_holds_only_live_exceptions() -> None:
    graph = import_graph()
    live = upward_imports(graph) | package_cycles(graph) | module_cycles(graph)
    stale = sorted(
        entry for entry in ALLOWED if not any(_within(s, entry[0]) and _within(t, entry[1]) for s, t in live)
    )
    assert not stale, f"these imports are gone or now legal; remove them from ALLOWED: {stale}"


def test_the_checker_sees_lazy_imports_upward_edges_and_cycles(tmp_path: Path) -> None:
    source = tmp_path / "lazy.py"
    source.write_text("def f():\n    from trusteval.pipeline import run_benchmark\n    import trusteval.cli\n")
    found = {n.module for n in ast.walk(ast.parse(source.read_text())) if isinstance(n, ast.ImportFrom)}
    assert found == {"trusteval.pipeline"}
    assert module_name(ROOT / "metrics" / "stats.py") == "trusteval.metrics.stats"
    assert module_name(ROOT / "data" / "__init__.py") == "trusteval.data"
    fake = {
        "trusteval.metrics.stats": {"trusteval.pipeline"},
        "trusteval.data.files": {"trusteval.scorers.base"},
        "trusteval.scorers.base": {"trusteval.data.files", "trusteval.records"},
    }
    assert upward_imports(fake) == {("trusteval.metrics.stats", "trusteval.pipeline")}
    assert package_cycles(fake) == {
        ("trusteval.data.files", "trusteval.scorers.base"),
        ("trusteval.scorers.base", "trusteval.data.files"),
    }
    assert _within("trusteval.report.html_data", "trusteval.report")
    assert not _within("trusteval.reports", "trusteval.report")
    assert not allowed(("trusteval.benchmarks.trustgpt_ava", "trusteval.pipeline"))


def test_the_checker_sees_imports_of_the_package_root_and_loops_inside_a_package(tmp_path: Path) -> None:
    source = tmp_path / "root.py"
    source.write_text("from trusteval import __version__\nimport trusteval\nfrom trusteval.data import files\n")
    fake_path = ROOT / "pipeline" / "fake_root_importer.py"
    assert not fake_path.exists()
    found = imports_of_text(source.read_text(), "trusteval.pipeline.fake_root_importer")
    assert found == {"trusteval", "trusteval.data", "trusteval.data.files"}
    assert upward_imports({"trusteval.pipeline.run": {"trusteval"}}) == {("trusteval.pipeline.run", "trusteval")}
    loop = {
        "trusteval.data.generic": {"trusteval.data.multilabel", "trusteval.data"},
        "trusteval.data.multilabel": {"trusteval.data.tiseval"},
        "trusteval.data.tiseval": {"trusteval.data.generic", "trusteval.records"},
        "trusteval.models.base": {"trusteval.models"},
        "trusteval.models": {"trusteval.models.base"},
    }
    assert module_cycles(loop) == {
        ("trusteval.data.generic", "trusteval.data.multilabel"),
        ("trusteval.data.multilabel", "trusteval.data.tiseval"),
        ("trusteval.data.tiseval", "trusteval.data.generic"),
        ("trusteval.models.base", "trusteval.models"),
        ("trusteval.models", "trusteval.models.base"),
    }
