"""`albert serve` / `albert dev` as a child process: for tests, the evaluation and benchmarks.

One runner for every caller that needs the real thing on free loopback ports: it waits for
/healthz with a bound, stops with SIGINT (so `albert dev` stops its Typesense too), and
then ends its whole process group, so nothing it started outlives it.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A loopback TCP port nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalProcess:
    """The local runtime (`serve`) or the whole local stack (`dev`) on free ports."""

    def __init__(
        self,
        state_dir: Path,
        variables: dict[str, str] | None = None,
        port: int | None = None,
        *,
        command: str = "serve",
        log_name: str = "albert.log",
    ) -> None:
        self.state_dir = state_dir
        self.command = command
        self.variables = dict(variables or {})
        self.port = port or free_port()
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
        """The data server of `albert dev` (MCP at /mcp, platform services at /platform)."""
        return f"http://127.0.0.1:{self.data_port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def start(self, timeout: float = 60.0) -> LocalProcess:
        """Start and wait until the worker answers /healthz, at most `timeout` seconds."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "miniflare.cli", self.command]
        if self.command == "dev":
            args += ["--data-port", str(self.data_port)]
        args += ["--port", str(self.port), "--state-dir", str(self.state_dir)]
        for key, value in self.variables.items():
            args += ["--var", f"{key}={value}"]
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                args,
                cwd=PROJECT_DIR,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"albert {self.command} exited early:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"albert {self.command} did not become healthy:\n{self.log_tail()}")

    def stop(self) -> None:
        """Interrupt (as Ctrl-C does), wait, then end whatever of its group is left."""
        if self._proc is None:
            return
        self._proc.send_signal(signal.SIGINT)
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        self._proc = None

    def restart(self) -> None:
        """Stop and start again on the same port and state folder."""
        self.stop()
        self.start()

    def typesense_url(self) -> str:
        """The Typesense URL `albert dev` printed at start-up."""
        match = re.search(r"Typesense on (http://\S+)", self.log_path.read_text(errors="replace"))
        if not match:
            raise RuntimeError("albert dev did not report its Typesense URL")
        return match.group(1)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the process log."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def __enter__(self) -> LocalProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
