"""Our code uses the public API of the libraries it depends on, never their private names.

A private name (a leading underscore) of a dependency can change in any release: code
that reaches for one pins the dependency and turns each of its security fixes into a port.
This reads every module of the product (what the wheel ships) and refuses
an import of a private module or name from another package, and an attribute with a
leading underscore that none of our own code defines.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "data_server",
    "child_processes",
    "miniflare",
    "local_stack",
    "durable_objects",
    "demo_planner",
    "workerd_dev",
)
PRODUCT = ("src", *PACKAGES)
OURS = ("albert", *PACKAGES)
# Documented as public despite the underscore (the language's own, not a library's).
DOCUMENTED = {"_exit", "_replace", "_asdict", "_fields", "_make", "_field_defaults", "_missing_"}


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def modules() -> Iterator[tuple[Path, ast.Module]]:
    for folder in PRODUCT:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "python_modules" in path.parts:
                continue
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def own_private_names(trees: list[ast.Module]) -> set[str]:
    """Every underscored name our code defines: functions, classes, attributes, fields."""
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.alias):
                names.add(node.asname or node.name.split(".")[0])
    return {n for n in names if private(n)}


def foreign_private_uses(path: Path, tree: ast.Module, ours: set[str]) -> Iterator[str]:
    where = path.relative_to(ROOT)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            top = node.module.split(".")[0]
            if top in OURS:
                continue
            if any(private(part) for part in node.module.split(".")):
                yield f"{where}:{node.lineno}: from {node.module} import …"
            for alias in node.names:
                if private(alias.name):
                    yield f"{where}:{node.lineno}: from {node.module} import {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                if top not in OURS and any(private(p) for p in alias.name.split(".")[1:]):
                    yield f"{where}:{node.lineno}: import {alias.name}"
        elif isinstance(node, ast.Attribute) and private(node.attr):
            if node.attr not in ours and node.attr not in DOCUMENTED:
                yield f"{where}:{node.lineno}: .{node.attr}"


def test_the_product_uses_no_private_name_of_another_package() -> None:
    parsed = list(modules())
    assert len(parsed) > 100, "the product's modules were found"
    ours = own_private_names([tree for _, tree in parsed])
    found = [use for path, tree in parsed for use in foreign_private_uses(path, tree, ours)]
    assert found == []


def test_the_check_sees_a_private_import_and_attribute() -> None:
    source = (
        "from mcp.shared._httpx_utils import create_mcp_http_client\n"
        "from httpx import _client\n"
        "def f(session):\n"
        "    return session._output_schema_validator\n"
    )
    tree = ast.parse(source)
    found = list(foreign_private_uses(ROOT / "src" / "x.py", tree, own_private_names([tree])))
    assert [use.split(": ", 1)[1] for use in found] == [
        "from mcp.shared._httpx_utils import …",
        "from httpx import _client",
        "._output_schema_validator",
    ]
