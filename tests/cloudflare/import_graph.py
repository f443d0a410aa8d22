"""The project's import graph, read from the AST of its source files (nothing is imported)."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PLATFORM_MODULES = frozenset({"js", "pyodide", "workers"})


@dataclass(frozen=True)
class Import:
    """One import statement (or import_module call) in one file."""

    path: Path
    line: int
    module: str
    lazy: bool

    @property
    def top(self) -> str:
        return self.module.split(".", 1)[0]


def python_files(roots: Iterable[Path]) -> Iterator[Path]:
    """Every .py file under the roots (a root may be a single file)."""
    for root in roots:
        if root.is_file():
            yield root
            continue
        for path in sorted(root.rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


def _package_of(path: Path, source_roots: Iterable[Path]) -> list[str]:
    for root in source_roots:
        try:
            rel = path.relative_to(root)
        except ValueError:
            continue
        parts = list(rel.with_suffix("").parts)
        # Both pkg/__init__.py and pkg/mod.py live in package `pkg`.
        return parts[:-1]
    return []


def imports_of(path: Path, source_roots: Iterable[Path]) -> list[Import]:
    """The imports of one file, relative ones resolved, with `lazy` for those inside defs."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _package_of(path, source_roots)
    found: list[Import] = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    found.append(Import(path, child.lineno, alias.name, lazy))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = (
                        package[: len(package) - (child.level - 1)] if child.level > 1 else package
                    )
                    module = ".".join([*base, child.module] if child.module else base)
                else:
                    module = child.module or ""
                found.append(Import(path, child.lineno, module, lazy))
                # `from pkg import mod` may name submodules; record them too.
                for alias in child.names:
                    found.append(Import(path, child.lineno, f"{module}.{alias.name}", lazy))
            elif isinstance(child, ast.Call) and _is_dynamic_import(child):
                arg = child.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    found.append(Import(path, child.lineno, arg.value, True))
            visit(child, inner)

    visit(tree, False)
    return found


def _is_dynamic_import(call: ast.Call) -> bool:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("import_module", "__import__") and bool(call.args)


def platform_import_violations(
    files: Iterable[Path], allowed: Iterable[Path], source_roots: Iterable[Path]
) -> list[str]:
    """Imports of js/pyodide/workers from files outside the allowed adapter paths."""
    allowed = [a.resolve() for a in allowed]
    problems = []
    for path in files:
        resolved = path.resolve()
        if any(resolved == a or a in resolved.parents for a in allowed):
            continue
        for imp in imports_of(path, source_roots):
            if imp.top in PLATFORM_MODULES:
                problems.append(f"{path}:{imp.line} imports {imp.module}")
    return problems


def module_file(module: str, source_roots: Iterable[Path]) -> Path | None:
    """The project file that defines `module`, if any."""
    parts = module.split(".")
    for root in source_roots:
        base = root.joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def first_party_closure(entry: Path, source_roots: list[Path]) -> dict[str, Path]:
    """Every project module reachable from `entry`, lazy imports included, by dotted name."""
    seen: dict[str, Path] = {}
    stack = [entry]
    visited: set[Path] = set()
    while stack:
        path = stack.pop()
        if path in visited:
            continue
        visited.add(path)
        for imp in imports_of(path, source_roots):
            parts = imp.module.split(".")
            # Every package on the way is imported too (its __init__ runs).
            for n in range(1, len(parts) + 1):
                name = ".".join(parts[:n])
                found = module_file(name, source_roots)
                if found is not None and name not in seen:
                    seen[name] = found
                    stack.append(found)
    return seen


def package_edges(
    packages: dict[str, Path], source_roots: Iterable[Path]
) -> dict[tuple[str, str], Import]:
    """(importer, imported) between top-level packages → the first import that makes it.

    `packages` maps each top-level name to its folder (or single file); lazy imports (inside
    functions) and import_module calls count as much as those at the top of a module.
    """
    edges: dict[tuple[str, str], Import] = {}
    for name, root in packages.items():
        for path in python_files([root]):
            for imp in imports_of(path, source_roots):
                if imp.top in packages and imp.top != name:
                    edges.setdefault((name, imp.top), imp)
    return edges


def package_cycles(edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The groups of packages that import each other, directly or around a loop (Tarjan's
    strongly connected components of more than one package), each sorted."""
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in sorted(graph[node]):
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)
