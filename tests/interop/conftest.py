"""MCP implementations other people wrote, started by the tests from registry packages.

- `@modelcontextprotocol/server-everything` (the TypeScript SDK's reference server; npm,
  pinned in package.json), in streamable HTTP and legacy SSE modes, as a child process on
  a free loopback port;
- FastMCP (PyPI `fastmcp`, pinned in the dev group) servers, in-process on loopback.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from child_processes import ChildProcess, free_port
from tests.albert.mcp.conftest import (  # noqa: F401  (fixtures: the object's SQLite, managers)
    harness_factory,
    sql,
)

# The local stack's scripted model and platform services, as the e2e tests have them.
from tests.conformance.conftest import RUNTIMES
from tests.e2e.conftest import model, platform  # noqa: F401
from tests.support.asgi_server import AsgiServer
from tests.support.mcp_chat import FAST_MCP
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import ScriptedModelServer

PROJECT_DIR = Path(__file__).resolve().parents[2]

EVERYTHING = PROJECT_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything"


def node() -> Path:
    """The Node.js that package.json brings (or skip: scripts/bootstrap installs it)."""
    found = PROJECT_DIR / "node_modules" / ".bin" / "node"
    if not found.exists() or not (EVERYTHING / "dist" / "index.js").exists():
        pytest.skip("node_modules is not installed (scripts/bootstrap installs it)")
    return found


class Everything:
    """server-everything in one transport mode on a port of its own; restartable."""

    def __init__(self, mode: str, log_dir: Path, port: int | None = None) -> None:
        self.mode = mode
        self.port = port or free_port()
        path = "/mcp" if mode == "streamableHttp" else "/sse"
        self.url = f"http://127.0.0.1:{self.port}{path}"
        self._log = log_dir / f"everything-{mode}.log"
        self._child: ChildProcess | None = None

    def start(self) -> Everything:
        self._child = ChildProcess(
            [str(node()), str(EVERYTHING / "dist" / "index.js"), self.mode],
            name=f"server-everything-{self.mode}",
            env={"PORT": str(self.port)},
            log_path=self._log,
        ).start()
        self._child.wait_ready(self._listening, timeout=30, port=self.port)
        return self

    def _listening(self) -> bool:
        try:
            # Any answer means the server is up (the MCP route answers a bare GET with 4xx).
            httpx.get(f"http://127.0.0.1:{self.port}/", timeout=1)
            return True
        except httpx.HTTPError:
            return False

    def stop(self) -> None:
        if self._child is not None:
            self._child.stop()
            self._child = None

    def restart(self) -> None:
        """A new server process on the same port: it knows none of the old sessions."""
        self.stop()
        time.sleep(0.2)
        self.start()


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Everything]:
    server = Everything("streamableHttp", tmp_path_factory.mktemp("everything")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def everything_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Everything]:
    server = Everything("sse", tmp_path_factory.mktemp("everything")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    model: ScriptedModelServer,  # noqa: F811 (the fixture imported above)
    platform: AsgiServer,  # noqa: F811
) -> Iterator[RuntimeProcess]:
    """The worker, with no MCP server but those a test adds, and fast MCP retries (one per
    module and runtime: the local one and workerd, as the conformance suite runs them)."""
    kind = str(request.param)
    state: Path = tmp_path_factory.mktemp(f"interop-runtime-{kind}")
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "PLATFORM_API_URL": platform.url,
        "TOOL_TIMEOUT_SECONDS": "10",
        "MCP_DEFAULT_SERVER_URL": "",  # only the servers a test adds
        **FAST_MCP,
    }
    with RuntimeProcess(state, variables, runtime=kind) as process:
        yield process
