"""The stacks the evaluation runs against: `albert dev`, and workers with failure profiles.

The default profile is the real local stack (`albert dev`: Typesense, demo data, data
server, worker) on free ports. A failure profile is one more worker (`albert serve`) wired
to the same data server and Typesense, with a few vars changed: the vault server pointing
at a closed port, the platform services at a server that accepts and never answers, a tiny
tool timeout, a small result limit. Starting workers alone keeps it to one seeded stack.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

from pydantic import BaseModel, Field

from child_processes import free_port
from local_stack.local_process import LocalProcess

__all__ = ["PROFILES", "HangingServer", "StackProcess", "free_port", "profile_variables"]

LOCAL_TYPESENSE_KEY = "albert-local-typesense"  # local_stack.stack.LOCAL_TYPESENSE_KEY


class Profile(BaseModel):
    """Worker vars of a stack profile; `{closed_port}` and `{hanging_url}` are filled in."""

    name: str
    description: str
    variables: dict[str, str] = Field(default_factory=dict)


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in [
        Profile(name="default", description="albert dev as a user runs it"),
        Profile(
            name="vaults_down",
            description="the vault MCP server's URL points at a closed port",
            variables={
                "MCP_DEFAULT_SERVER_URL": "http://127.0.0.1:{closed_port}/mcp",
                "MCP_CONNECT_TIMEOUT_SECONDS": "1",
            },
        ),
        Profile(
            name="platform_hangs",
            description="platform services accept connections and never answer; 1 s tool timeout",
            variables={"PLATFORM_API_URL": "{hanging_url}/platform", "TOOL_TIMEOUT_SECONDS": "1"},
        ),
        Profile(
            name="small_results",
            description="tool results are cut at 1,000 characters",
            variables={"TOOL_RESULT_MAX_CHARS": "1000"},
        ),
    ]
}


class HangingServer:
    """Accepts TCP connections, reads what comes, never answers: a stuck upstream."""

    def __init__(self) -> None:
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(conn)

    def __enter__(self) -> HangingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self._held:
            conn.close()
        self._sock.close()


class StackProcess(LocalProcess):
    """`albert dev` (or `albert serve` for a profile worker) on free ports."""

    def __init__(
        self,
        state_dir: Path,
        *,
        command: str = "dev",
        variables: dict[str, str] | None = None,
        log_name: str = "albert.log",
    ) -> None:
        super().__init__(state_dir, variables, command=command, log_name=log_name)

    def start(self, timeout: float = 120.0) -> StackProcess:
        """Start and wait until the worker answers /healthz (seeding takes a while)."""
        super().start(timeout)
        return self


def profile_variables(
    profile: Profile, base: StackProcess, closed_port: int, hanging_url: str
) -> dict[str, str]:
    """Vars of a profile worker: wired to `base`'s data server and Typesense, then changed."""
    variables = {
        "ALBERT_MODE": "local",
        "PLATFORM_API_URL": f"{base.data_url}/platform",
        "TYPESENSE_URL": base.typesense_url(),
        "TYPESENSE_API_KEY": LOCAL_TYPESENSE_KEY,
        "MCP_DEFAULT_SERVER_URL": f"{base.data_url}/mcp",
        **base.variables,
    }
    for key, value in profile.variables.items():
        variables[key] = value.format(closed_port=closed_port, hanging_url=hanging_url)
    return variables
