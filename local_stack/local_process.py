"""`albert serve` (the worker alone) or `albert dev` (the whole local stack) as a child
process on free ports, for tests, the evaluation and the benchmarks.

Started through child_processes, so it never outlives its starter: it and everything it
starts (Typesense, the local chains, wrangler and workerd) go when it is stopped or when
its starter dies.
"""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path
from types import TracebackType

from child_processes import (
    ChildProcess,
    ChildStartError,
    answers_http,
    free_port,
    read_log_tail,
    start_on_free_ports,
)

# The checkout `albert` runs from: the child's working directory.
PROJECT_DIR = Path(__file__).resolve().parent.parent

# workerd's first start may build its Pyodide bundle and vendor the worker's packages.
START_SECONDS = {"local": 60.0, "workerd": 240.0}


class LocalProcess:
    """The local runtime (`serve`) or the whole local stack (`dev`) on free ports.

    `runtime="workerd"` runs the worker on Cloudflare's workerd instead (workerd_dev).
    """

    def __init__(
        self,
        state_dir: Path,
        variables: dict[str, str] | None = None,
        port: int | None = None,
        *,
        command: str = "serve",
        log_name: str = "albert.log",
        grace: float = 10.0,
        data_port: int | None = None,
        env: dict[str, str] | None = None,
        runtime: str = "local",
    ) -> None:
        self.state_dir = state_dir
        self.env = dict(env or {})
        self.command = command
        self.runtime = runtime
        self.variables = dict(variables or {})
        self.port = port or free_port()
        self.data_port = data_port or free_port()
        # Ports picked here may be taken by anyone between the pick and the child's bind;
        # until the first start succeeds, such a loss is retried on fresh ports.
        self._ports_movable = port is None and data_port is None
        self.log_path = state_dir / log_name
        self.grace = grace
        self.child: ChildProcess | None = None

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
        return self.child.pid if self.child is not None else None

    @property
    def running(self) -> bool:
        return self.child is not None and self.child.running

    def args(self) -> list[str]:
        """The command line of the child."""
        args = [sys.executable, "-m", "local_stack", self.command]
        if self.command == "dev":
            args += ["--data-port", str(self.data_port)]
        args += ["--port", str(self.port), "--state-dir", str(self.state_dir)]
        if self.runtime != "local":
            args += ["--runtime", self.runtime]
        for key, value in self.variables.items():
            args += ["--var", f"{key}={value}"]
        return args

    def start(self, timeout: float | None = None) -> LocalProcess:
        """Start and wait until the worker answers /healthz, at most `timeout` seconds
        (by default START_SECONDS of the runtime).

        A second start while it runs is a no-op (never a second process on the same port).
        """
        if self.running:
            return self
        if timeout is None:
            timeout = START_SECONDS[self.runtime]

        def repick() -> None:
            self.port, self.data_port = free_port(), free_port()

        try:
            start_on_free_ports(
                lambda: self._start_once(timeout),
                log_path=self.log_path,
                failure=ChildStartError,
                movable=self._ports_movable,
                repick=repick,
            )
        except ChildStartError as exc:
            raise RuntimeError(f"albert {self.command}: {exc}") from exc
        self._ports_movable = False  # restarts keep the port the clients know
        return self

    def _start_once(self, timeout: float) -> None:
        if self.child is not None:
            self.child.kill()  # it died (or was killed): clear what is left of its group
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.child = ChildProcess(
            self.args(),
            name=f"albert {self.command}",
            env={"PYTHONUNBUFFERED": "1", **self.env},
            cwd=PROJECT_DIR,
            log_path=self.log_path,
            grace=self.grace,
        ).start()
        self.child.wait_ready(
            answers_http(f"{self.url}/healthz", healthy_only=True),
            timeout,
            "healthy",
            port=self.port,
        )

    def stop(self) -> int | None:
        """SIGTERM (the clean stop), then SIGKILL of its group after the grace; the exit code."""
        if self.child is None:
            return None
        code = self.child.stop()
        self.child = None
        return code

    def kill(self) -> None:
        """SIGKILL the process alone, as a crash would: its own children must die with it.

        `start()` starts it again; `stop()` (or leaving the `with` block) clears what is
        left of its group.
        """
        if self.child is not None and self.child.running:
            os.kill(self.child.popen.pid, signal.SIGKILL)
            self.child.popen.wait(timeout=10)

    def restart(self) -> None:
        """Stop and start again on the same port and state folder."""
        self.stop()
        self.start()

    def object_files(self, class_name: str) -> list[Path]:
        """The SQLite files of a Durable Object class's objects, wherever the runtime keeps them."""
        if self.runtime == "workerd":
            # wrangler's --persist-to layout: v3/do/<worker name>-<class>/<id>.sqlite
            folders = (self.state_dir / "workerd" / "state" / "v3" / "do").glob(f"*-{class_name}")
        else:
            folders = iter([self.state_dir / "do" / class_name])
        return sorted(
            path
            for folder in folders
            for path in folder.glob("*.sqlite")
            if path.name != "metadata.sqlite"
        )

    def typesense_url(self) -> str:
        """The Typesense URL `albert dev` printed at start-up."""
        match = re.search(r"Typesense on (http://\S+)", self.log_path.read_text(errors="replace"))
        if not match:
            raise RuntimeError("albert dev did not report its Typesense URL")
        return match.group(1)

    def chain_urls(self) -> dict[str, str]:
        """Chain → JSON-RPC URL of the local chains `albert dev` printed at start-up."""
        text = self.log_path.read_text(errors="replace")
        return dict(re.findall(r"chain (\w+) \(id \d+\) on (http://[\d.]+:\d+)", text))

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the process log."""
        return read_log_tail(self.log_path, lines)

    def __enter__(self) -> LocalProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
