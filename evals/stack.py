"""The stacks the evaluation runs against: `albert dev`, and workers with failure profiles.

The default profile is the real local stack (`albert dev`: Typesense, demo data, data
server, worker) on free ports. A failure profile is one more worker (`albert serve`) wired
to the same data server and Typesense, with a few vars changed: the vault server pointing
at a closed port, the platform services at a server that accepts and never answers, a tiny
tool timeout, a small result limit. Starting workers alone keeps it to one seeded stack.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

import httpx
from pydantic import BaseModel, Field

PROJECT_DIR = Path(__file__).resolve().parent.parent
LOCAL_TYPESENSE_KEY = "albert-local-typesense"  # miniflare.stack.LOCAL_TYPESENSE_KEY


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


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


class StackProcess:
    """`albert dev` or `albert serve` as a child process on a free port."""

    def __init__(
        self,
        state_dir: Path,
        *,
        command: str = "dev",
        variables: dict[str, str] | None = None,
        log_name: str = "albert.log",
    ) -> None:
        self.state_dir = state_dir
        self.command = command
        self.variables = dict(variables or {})
        self.port = free_port()
        self.data_port = free_port()
        self.log_path = state_dir / log_name
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def data_url(self) -> str:
        return f"http://127.0.0.1:{self.data_port}"

    def start(self, timeout: float = 120.0) -> StackProcess:
        """Start and wait until the worker answers /healthz."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "miniflare.cli", self.command]
        if self.command == "dev":
            args += ["--data-port", str(self.data_port)]
        args += ["--port", str(self.port), "--state-dir", str(self.state_dir)]
        for key, value in self.variables.items():
            args += ["--var", f"{key}={value}"]
        log = self.log_path.open("ab")
        self._proc = subprocess.Popen(
            args,
            cwd=PROJECT_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            # Its own process group, so stop() also reaches the Typesense it starts.
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"albert {self.command} exited early:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"albert {self.command} did not become healthy:\n{self.log_tail()}")

    def typesense_url(self) -> str:
        """The Typesense URL `albert dev` printed at start-up."""
        match = re.search(r"Typesense on (http://\S+)", self.log_path.read_text(errors="replace"))
        if not match:
            raise RuntimeError("albert dev did not report its Typesense URL")
        return match.group(1)

    def stop(self) -> None:
        """Interrupt the process (it stops its own children), then wait for it."""
        if self._proc is None:
            return
        # SIGINT, as Ctrl-C: `albert dev` stops its Typesense on that path.
        self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        # Whatever it started and did not stop (a Typesense left by a crash) goes too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc = None

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the process log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def __enter__(self) -> StackProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


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
