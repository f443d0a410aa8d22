"""The local runtime as a real process on a free port, restartable like a deployment."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.ports import free_port

PROJECT_DIR = Path(__file__).resolve().parents[2]
TEST_SIGNING_KEY = "test:albert-test-signing-key-0123456789"


class RuntimeProcess:
    """`albert serve` (or `albert dev`) with a state folder and var overrides."""

    def __init__(
        self,
        state_dir: Path,
        variables: dict[str, str] | None = None,
        port: int | None = None,
        *,
        command: str = "serve",
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.state_dir = state_dir
        # Every test runtime can sign sessions, production mode included.
        self.variables = {"AUTH_SIGNING_KEY": TEST_SIGNING_KEY, **(variables or {})}
        self.port = port or free_port()
        self.command = command
        self.extra_args = extra_args
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = state_dir / "runtime.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> RuntimeProcess:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        args = [
            sys.executable,
            "-m",
            "miniflare.cli",
            self.command,
            *self.extra_args,
            "--port",
            str(self.port),
            "--state-dir",
            str(self.state_dir),
        ]
        for key, value in self.variables.items():
            args += ["--var", f"{key}={value}"]
        log = self._log.open("ab")
        self._proc = subprocess.Popen(
            args,
            cwd=PROJECT_DIR,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"runtime exited early:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"runtime did not become healthy:\n{self.log_tail()}")

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=5)
        self._proc = None

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return ""

    def __enter__(self) -> RuntimeProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
