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
  say about sessions is in albert.auth.session_api.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from tests.cloudflare.import_graph import (
    PLATFORM_MODULES,
    first_party_closure,
    imports_of,
    platform_import_violations,
    python_files,
)
from workerd_dev import pyodide_compat as compat

ROOT = Path(__file__).resolve().parents[1]
SOURCE_ROOTS = [ROOT / "src", ROOT]
ADAPTER_PATHS = [ROOT / "src/albert/cloudflare", ROOT / "src/entry.py", ROOT / "durable_objects"]
BUNDLE = [ROOT / "src", ROOT / "durable_objects"]
FIRST_PARTY = {"albert", "durable_objects", "entry"}
NEVER_IN_THE_WORKER = {"miniflare", "data_server", "tests", "scripts"}


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
