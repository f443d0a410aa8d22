"""Importing the worker does no I/O: no thread, no socket, no file read, no process.

Python Workers import the main module once and snapshot the interpreter's memory;
that snapshot is reused for every later start, so import time must not start
threads, open sockets, read files or spawn processes (they would not exist, or
would be stale, in the restored snapshot). The import runs in a fresh interpreter
with an audit hook installed before it starts; the import system's own reads of
modules are the only file access allowed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

HARNESS = r"""
import json, sys
# Workers never write bytecode caches; a fresh checkout here would (fd-numbered opens).
sys.dont_write_bytecode = True
sys.path[:0] = json.loads(sys.argv[2])
from miniflare import install_shims
install_shims()
import miniflare.shims  # noqa: F401  (the stand-ins load before recording starts)
import js, workers, pyodide.ffi  # noqa: F401, E401

import _thread, threading
CODE_SUFFIXES = (".py", ".pyc", ".so", ".pth")
SEARCH_PATH = {str(p) for p in sys.path}
WATCHED = {
    "open", "socket.__new__", "socket.connect", "socket.bind", "socket.getaddrinfo",
    "_thread.start_new_thread", "subprocess.Popen", "os.system", "os.fork", "os.exec",
    "os.posix_spawn", "os.spawn", "urllib.Request", "sqlite3.connect",
}
events = []
recording = False

def hook(event, args):
    if not recording or event not in WATCHED:
        return
    if event == "open":
        path = str(args[0]) if args else ""
        mode = str(args[1]) if len(args) > 1 else "r"
        # The import system reading modules, probing sys.path entries, and installed
        # packages' metadata (static files of the bundle, e.g. pydantic's plugin scan).
        if path.endswith(CODE_SUFFIXES) or "__pycache__" in path or path in SEARCH_PATH:
            return
        if ".dist-info/" in path and mode.startswith("r"):
            return
        events.append([event, path, mode])
        return
    events.append([event, repr(args)[:200]])

# Python 3.11 raises no audit event for a new thread: wrap the primitive instead.
_start = _thread.start_new_thread

def _recorded_start(*args, **kwargs):
    if recording:
        events.append(["_thread.start_new_thread", repr(args[0])[:200]])
    return _start(*args, **kwargs)

_thread.start_new_thread = _recorded_start
threading._start_new_thread = _recorded_start
sys.addaudithook(hook)
recording = True
before = set(sys.modules)
__import__(sys.argv[1])
recording = False
print(json.dumps({"events": events, "modules": sorted(set(sys.modules) - before)}))
"""


# Modules the worker's import must not load: (module, the requests that load it).
LOADED_ON_FIRST_USE = {
    "mcp": "a configured MCP server's connection (albert.mcp.lazy_connection)",
    "albert.auth.host_jwt": "a request with a host JWT (albert.auth.identify)",
    "albert.auth.jwks": "a request with a host JWT, through albert.auth.host_jwt",
    "albert.auth.sign_in": "POST /api/session with a host JWT (albert.auth.gateway)",
    "albert.auth.claim": "a sign-in that claims anonymous work, through albert.auth.sign_in",
    "albert.analytics.event_catalog": "the first event with analytics on; POST /api/events",
    "albert.analytics.sinks": "the first event with analytics on (albert.analytics.service)",
    "albert.chat.claim_steps": "an object's first claim step, /internal/claim/* (sign-in)",
    "albert.storage.transfer": "an object's first claim step, through albert.chat.claim_steps",
    # What only an object with an MCP server, or the MCP API, needs: the config models,
    # the SSRF checks, the secret bindings (albert.composition) and the API (albert.mcp.access).
    **{
        f"albert.mcp.{name}": "an object's first MCP server or /api/mcp/ request"
        for name in ("api", "configs", "secret_binding", "ssrf")
    },
    # The servers and what they share: the first configured server, config change or
    # alarm of an object (albert.mcp.manager).
    **{
        f"albert.mcp.{name}": "an object's first MCP server, config change or alarm"
        for name in (
            "classify",
            "lazy_connection",
            "recovery_policy",
            "recovery_scheduler",
            "remote_tool",
            "server",
            "turn_tools",
        )
    },
}


def _import_events(module: str, extra_paths: list[str]) -> dict[str, list]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    result = subprocess.run(
        [sys.executable, "-c", HARNESS, module, json.dumps([*extra_paths, str(ROOT)])],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_the_worker_entry_does_no_io() -> None:
    report = _import_events("entry", [str(ROOT / "src")])
    assert report["events"] == []
    # It really imported the worker: the router, the Durable Object and the core.
    for name in ("entry", "durable_objects.chat", "albert.router", "albert.chat.service"):
        assert name in report["modules"]
    # Loaded on the path that needs them, not at start (cold start counts): the MCP SDK on
    # the first configured server; the rest with the features only some requests use.
    assert not set(LOADED_ON_FIRST_USE) & set(report["modules"])


def test_the_harness_sees_threads_files_and_sockets(tmp_path: Path) -> None:
    (tmp_path / "data.json").write_text("{}")
    (tmp_path / "noisy.py").write_text(
        "import json, socket, threading, pathlib\n"
        "CONFIG = json.loads((pathlib.Path(__file__).parent / 'data.json').read_text())\n"
        "threading.Thread(target=lambda: None).start()\n"
        "socket.socket().close()\n"
    )
    report = _import_events("noisy", [str(tmp_path)])
    kinds = {event[0] for event in report["events"]}
    assert {"open", "_thread.start_new_thread", "socket.__new__"} <= kinds
    assert any(str(e[1]).endswith("data.json") for e in report["events"] if e[0] == "open")
