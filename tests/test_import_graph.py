"""The import graph keeps the platform at the edge and the worker deployable.

- `js`, `pyodide` and `workers` are imported only by the adapter layer
  (src/albert/cloudflare/), the entry (src/entry.py) and durable_objects/;
- what the worker uploads (src/ and durable_objects/) never imports the local
  runtime, the data server, tests or scripts;
- every third-party package the uploaded code imports is in the worker's runtime
  dependency closure (what pywrangler vendors, plus the MCP client's extra);
- the MCP client layer (albert.mcp) never reaches the chat core (albert.chat): both meet
  in the neutral ports (albert.ports), so the tool layer can change without the chat;
- the chat core (the object side) never reaches the worker router (the edge): what both
  say about sessions is in albert.auth.session_api;
- no two top-level packages import each other, directly or around a loop, lazy imports
  included, and child_processes imports none of the project's packages at all.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from tests.cloudflare.import_graph import (
    PLATFORM_MODULES,
    first_party_closure,
    imports_of,
    package_cycles,
    package_edges,
    platform_import_violations,
    python_files,
)
from workerd_dev import pyodide_compat as compat

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = [ROOT / "src", ROOT]
ADAPTER_PATHS = [ROOT / "src/albert/cloudflare", ROOT / "src/entry.py", ROOT / "durable_objects"]
BUNDLE = [ROOT / "src", ROOT / "durable_objects"]
FIRST_PARTY = {"albert", "durable_objects", "entry"}
NEVER_IN_THE_WORKER = {
    "child_processes",
    "miniflare",
    "local_stack",
    "data_server",
    "workerd_dev",
    "tests",
    "scripts",
}


def top_level_packages(root: Path) -> dict[str, Path]:
    """Every top-level package of the checkout (and src/'s), by import name."""
    found = {"albert": root / "src" / "albert", "entry": root / "src" / "entry.py"}
    for folder in sorted(root.iterdir()):
        if folder.is_dir() and (folder / "__init__.py").is_file():
            found[folder.name] = folder
    # scripts/ is run, not imported as a package, yet tests import from it all the same.
    found["scripts"] = root / "scripts"
    return found


def test_only_the_adapter_layer_touches_the_platform_modules() -> None:
    files = list(python_files([ROOT / "src", ROOT / "durable_objects", ROOT / "data_server"]))
    assert len(files) > 50
    assert platform_import_violations(files, ADAPTER_PATHS, SOURCE_ROOTS) == []


def test_the_checker_catches_a_core_module_importing_js(tmp_path: Path) -> None:
    core = tmp_path / "src" / "albert" / "chat"
    core.mkdir(parents=True)
    (core / "leaky.py").write_text(
        "import json\n\ndef f():\n    from pyodide.ffi import to_js\n    return to_js\n"
    )
    (core / "dynamic.py").write_text("import importlib\nimportlib.import_module('workers')\n")
    adapter = tmp_path / "src" / "albert" / "cloudflare"
    adapter.mkdir()
    (adapter / "ok.py").write_text("from js import fetch\n")
    problems = platform_import_violations(
        python_files([tmp_path / "src"]), [adapter], [tmp_path / "src"]
    )
    flagged = {(Path(p.split(":")[0]).name, p.split(" imports ")[1]) for p in problems}
    assert ("leaky.py", "pyodide.ffi") in flagged and ("dynamic.py", "workers") in flagged
    assert not any(name == "ok.py" for name, _ in flagged)


def test_the_uploaded_code_never_imports_local_only_code() -> None:
    bad = [
        f"{imp.path.relative_to(ROOT)}:{imp.line} imports {imp.module}"
        for path in python_files(BUNDLE)
        for imp in imports_of(path, SOURCE_ROOTS)
        if imp.top in NEVER_IN_THE_WORKER
    ]
    assert bad == []


def test_third_party_imports_of_the_worker_are_runtime_dependencies() -> None:
    lock = compat.load_lock(ROOT / "uv.lock")
    base, extra = compat.runtime_roots(ROOT / "pyproject.toml")
    runtime = set(compat.closure(lock, base + extra))
    owners = metadata.packages_distributions()
    unknown = []
    for path in python_files(BUNDLE):
        for imp in imports_of(path, SOURCE_ROOTS):
            top = imp.top
            if not top or top in FIRST_PARTY or top in PLATFORM_MODULES:
                continue
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            dists = {compat.normalize(d) for d in owners.get(top, [])}
            if not dists & runtime:
                unknown.append(f"{path.relative_to(ROOT)}:{imp.line} {imp.module} ({dists})")
    assert unknown == []


def test_the_entry_reaches_the_core_the_adapters_and_the_durable_object() -> None:
    reached = first_party_closure(ROOT / "src/entry.py", SOURCE_ROOTS)
    for name in (
        "albert.router",
        "albert.cloudflare.http",
        "albert.cloudflare.sql",
        "albert.cloudflare.sockets",
        "durable_objects.chat",
        "albert.chat.service",
    ):
        assert name in reached
    assert not {n.split(".")[0] for n in reached} & NEVER_IN_THE_WORKER


def reached_from(files: list[Path], roots: list[Path]) -> dict[Path, set[str]]:
    """Every project module each file imports, directly or through others (lazy ones too)."""
    return {path: set(first_party_closure(path, roots)) for path in files}


def layer_violations(layer: Path, forbidden: str, roots: list[Path]) -> list[str]:
    """Files of `layer` that reach the package `forbidden` (or a module inside it)."""
    files = list(python_files([layer]))
    return [
        f"{path.name} reaches {name}"
        for path, names in reached_from(files, roots).items()
        for name in sorted(names)
        if name == forbidden or name.startswith(forbidden + ".")
    ]


def test_the_mcp_layer_never_imports_the_chat_core() -> None:
    mcp = ROOT / "src/albert/mcp"
    assert len(list(python_files([mcp]))) > 8
    assert layer_violations(mcp, "albert.chat", SOURCE_ROOTS) == []


def test_the_chat_core_never_imports_the_router() -> None:
    chat = ROOT / "src/albert/chat"
    assert len(list(python_files([chat]))) > 8
    assert layer_violations(chat, "albert.router", SOURCE_ROOTS) == []


def test_the_layer_check_catches_an_indirect_import(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for package in ("albert", "albert/mcp", "albert/chat", "albert/tools"):
        (src / package).mkdir(parents=True, exist_ok=True)
        (src / package / "__init__.py").write_text("")
    (src / "albert/chat/turns.py").write_text("X = 1\n")
    (src / "albert/tools/helper.py").write_text("def f():\n    from albert.chat import turns\n")
    (src / "albert/mcp/clean.py").write_text("import json\n")
    (src / "albert/mcp/leaky.py").write_text("from albert.tools.helper import f\n")
    problems = layer_violations(src / "albert/mcp", "albert.chat", [src])
    assert problems and all(p.startswith("leaky.py reaches albert.chat") for p in problems)


def describe(edges: dict[tuple[str, str], Any], group: list[str]) -> str:
    """A cycle, with the import behind each of its edges."""
    lines = [" <-> ".join(group)]
    for (source, target), imp in sorted(edges.items()):
        if source in group and target in group:
            lines.append(f"  {source} -> {target}: {imp.path.relative_to(ROOT)}:{imp.line}")
    return "\n".join(lines)


def test_no_two_top_level_packages_import_each_other() -> None:
    packages = top_level_packages(ROOT)
    for name in ("child_processes", "miniflare", "local_stack", "data_server", "workerd_dev"):
        assert name in packages
    edges = package_edges(packages, SOURCE_ROOTS)
    assert [describe(edges, group) for group in package_cycles(edges)] == []


def test_the_process_supervision_package_is_a_leaf() -> None:
    packages = top_level_packages(ROOT)
    edges = package_edges(packages, SOURCE_ROOTS)
    assert [target for source, target in edges if source == "child_processes"] == []


def test_the_cycle_check_sees_a_loop_through_a_function_level_import(tmp_path: Path) -> None:
    for package in ("low", "middle", "high", "apart"):
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "low" / "tool.py").write_text("def f():\n    from high import cli\n")
    (tmp_path / "middle" / "m.py").write_text("import low.tool\n")
    (tmp_path / "high" / "cli.py").write_text("from middle import m\n")
    (tmp_path / "apart" / "a.py").write_text("import low\n")
    packages = {name: tmp_path / name for name in ("low", "middle", "high", "apart")}
    edges = package_edges(packages, [tmp_path])
    assert package_cycles(edges) == [["high", "low", "middle"]]
    assert package_cycles([(a, b) for a, b in edges if a != "low"]) == []
