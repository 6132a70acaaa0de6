"""The layout of rdl, read from the source with :mod:`ast`: each part imports
only the parts its rule allows (a stage only earlier stages), nothing imports
in a cycle at module level, no module of rdl outside :mod:`rdl.testing`
imports it, no test module imports another, and no module is named after a
standard library module.

Imports inside functions count for the rules of what may import what: a lazy
import still ties one part to another. Only module-level imports count for
cycles: a lazy import breaks one at import time.
"""
from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("db", "graph", "sampling", "tasks", "nn", "train", "predict")
# Leaves: import no other part, any part may import them.
UTILITIES = {"home", "checksum", "user_errors", "output_file", "cpu_share"}
ANY = {*STAGES, "baseline", "datasets", "cli", "help_cache", *UTILITIES}


def before(stage: str) -> set[str]:
    return set(STAGES[:STAGES.index(stage)])


# What each part of rdl (a top-level package or module under rdl/, or "rdl"
# for rdl/__init__.py) may import besides itself.
ALLOWED: dict[str, set[str]] = {stage: before(stage) | UTILITIES for stage in STAGES}
ALLOWED.update({
    # The baseline builds features from the database and labels from tasks;
    # the stages after tasks may import it (train blends it in).
    "baseline": before("nn") | UTILITIES,
    **{stage: ALLOWED[stage] | {"baseline"} for stage in STAGES[STAGES.index("nn"):]},
    # Datasets are read with the db stage; the stages reach them by name
    # through rdl.db.registry (entry points), never by import.
    "datasets": {"db"} | UTILITIES,
    # The command line and its help cache sit on top of every stage.
    "cli": ANY - {"cli"},
    "help_cache": set(UTILITIES),
    "__main__": {"cli"},
    # rdl/__init__.py: the public names (rdl.connect, rdl.Predictor).
    "rdl": {"db", "predict"},
    **{utility: set() for utility in UTILITIES},
    # Test support may use anything; nothing else in rdl imports it.
    "testing": ANY | {"rdl"},
})


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module
    line: int
    lazy: bool  # inside a function

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}{' (lazily)' if self.lazy else ''}"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def python_files(folder: str) -> list[Path]:
    return sorted((ROOT / folder).rglob("*.py"))


RDL_MODULES = {module_name(path) for path in python_files("rdl")}


def imports(path: Path, known: set[str]) -> Iterator[Import]:
    """Every import in the file at ``path``, relative ones resolved; ``from X
    import y`` imports ``X.y`` when that is a module in ``known``, else ``X``."""
    source = module_name(path)
    package = source if path.name == "__init__.py" else source.rpartition(".")[0]

    def visit(node: ast.AST, lazy: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(source, alias.name, node.lineno, lazy)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                yield Import(source, sub if sub in known else module, node.lineno, lazy)
        lazy = lazy or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            yield from visit(child, lazy)

    yield from visit(ast.parse(path.read_text(), str(path)), False)


def part(module: str) -> str:
    """``rdl.db.connect`` -> ``db``; ``rdl`` -> ``rdl``."""
    names = module.split(".")
    return names[1] if len(names) > 1 else names[0]


@cache
def rdl_imports() -> list[Import]:
    found = [i for path in python_files("rdl") for i in imports(path, RDL_MODULES)
             if i.target == "rdl" or i.target.startswith("rdl.")]
    return list(dict.fromkeys(found))  # once per statement


def broken_rules(found: list[Import]) -> list[Import]:
    return [i for i in found if part(i.target) != part(i.source)
            and part(i.target) not in ALLOWED.get(part(i.source), set())]


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the directed graph ``edges`` (a self-loop counts), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_every_part_of_rdl_has_a_rule():
    assert {part(m) for m in RDL_MODULES} == set(ALLOWED)


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_each_part_imports_only_what_its_rule_allows(name):
    broken = [i for i in broken_rules(rdl_imports())
              if part(i.source) == name]
    assert not broken, (f"rdl.{name} may import only {sorted(ALLOWED[name])}:\n"
                        + "\n".join(map(str, broken)))


def test_stages_import_no_later_stage():
    later = [i for i in rdl_imports() if part(i.source) in STAGES and part(i.target) in STAGES
             and STAGES.index(part(i.target)) > STAGES.index(part(i.source))]
    assert not later, "\n".join(map(str, later))


def test_only_rdl_testing_imports_rdl_testing():
    users = [i for i in rdl_imports() if part(i.target) == "testing" != part(i.source)]
    assert not users, "\n".join(map(str, users))


@pytest.mark.parametrize("level", ["module", "part"])
def test_no_import_cycle_at_module_level(level):
    edges: dict[str, set[str]] = {}
    for i in rdl_imports():
        if i.lazy:
            continue
        source, target = (i.source, i.target) if level == "module" else (part(i.source),
                                                                        part(i.target))
        if level == "module" or source != target:
            edges.setdefault(source, set()).add(target)
    found = cycle(edges)
    assert found is None, "import cycle: " + " -> ".join(found)


def test_no_module_is_named_after_the_standard_library():
    named = sorted(m for m in RDL_MODULES
                   if m.rpartition(".")[2] in sys.stdlib_module_names)
    assert not named, f"named after standard library modules: {named}"


def test_no_test_module_imports_another():
    """Shared test code lives in rdl.testing; fixtures in conftest.py files."""
    files = python_files("tests")
    local = {"tests"} | {path.stem for path in files} - {"__init__"}
    found = [i for path in files for i in imports(path, set()) if i.target.split(".")[0] in local]
    assert not found, "\n".join(map(str, found))
