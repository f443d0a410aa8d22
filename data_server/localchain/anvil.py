"""Start and stop a real local EVM node (Foundry's anvil) on 127.0.0.1, one per chain.

The binary comes from the npm package `@foundry-rs/anvil-linux-<arch>` that `npm ci` installs
(pinned in package.json); nothing is downloaded at run time. The node starts empty (no fork,
so no network), with the chain's real EIP-155 id, and keeps its state in memory: the seeding
step fills it at every start.
"""

from __future__ import annotations

import os
import platform
import shutil
from pathlib import Path
from types import TracebackType

import httpx

from data_server.typesense.process import HOST, free_port, port_is_free
from data_server.wallets.chain_ids import chain_id as known_chain_id
from miniflare.process import (
    ChildProcess,
    ChildStartError,
    read_log_tail,
    start_on_free_ports,
)

PROJECT_DIR = Path(__file__).resolve().parents[2]
ANVIL_VERSION = "1.7.1"  # package.json pins the same


class AnvilNotInstalled(RuntimeError):
    """No anvil binary: scripts/bootstrap (npm ci) has not run, or the platform has none."""


class AnvilStartError(RuntimeError):
    """The node exited or did not answer in time; the message ends with its log tail."""


def binary_path() -> Path:
    """The anvil binary: $ANVIL_BINARY, else the pinned npm package's, else one on PATH."""
    override = os.environ.get("ANVIL_BINARY")
    if override:
        return Path(override)
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower(), platform.machine().lower()
    )
    pinned = PROJECT_DIR / "node_modules" / "@foundry-rs" / f"anvil-linux-{arch}" / "bin" / "anvil"
    if pinned.exists():
        return pinned
    found = shutil.which("anvil")
    if found:
        return Path(found)
    raise AnvilNotInstalled(
        f"no anvil binary (expected {pinned}); run scripts/bootstrap, which installs "
        f"@foundry-rs/anvil {ANVIL_VERSION} with npm ci"
    )


class AnvilProcess:
    """One anvil child process serving one chain id."""

    def __init__(
        self,
        chain: str,
        log_dir: Path,
        *,
        chain_id: int | None = None,
        port: int | None = None,
        host: str = HOST,
    ) -> None:
        resolved = chain_id if chain_id is not None else known_chain_id(chain)
        if resolved is None:
            raise ValueError(f"no chain id known for {chain!r}; pass chain_id")
        self.chain = chain
        self.chain_id = resolved
        self.host = host
        self.port = port or free_port(host)
        self._auto_port = port is None
        self.log_dir = Path(log_dir)
        self.child: ChildProcess | None = None

    @property
    def url(self) -> str:
        """JSON-RPC URL, e.g. http://127.0.0.1:8545."""
        return f"http://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"anvil-{self.chain}.log"

    @property
    def pid(self) -> int | None:
        return self.child.pid if self.child is not None else None

    @property
    def running(self) -> bool:
        return self.child is not None and self.child.running

    def command(self) -> list[str]:
        """The command line: loopback only, the chain's id, no fork (so no network at all)."""
        return [
            str(binary_path()),
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--chain-id",
            str(self.chain_id),
            "--accounts",
            "1",
            "--no-cors",
            "--color",
            "never",
        ]

    def start(self, timeout: float = 20.0) -> AnvilProcess:
        """Launch the node and wait until `eth_chainId` answers with its id.

        A port picked here (not given) that is taken before the node listens on it is
        picked again (miniflare.process.start_on_free_ports).
        """
        if self.running:
            return self
        self.log_dir.mkdir(parents=True, exist_ok=True)

        def repick() -> None:
            self.port = free_port(self.host)

        return start_on_free_ports(
            lambda: self._start_once(timeout),
            log_path=self.log_path,
            failure=AnvilStartError,
            movable=self._auto_port,
            repick=repick,
        )

    def _start_once(self, timeout: float) -> AnvilProcess:
        if not port_is_free(self.port, self.host):
            self.port = free_port(self.host)
        # The project's process runner: own process group, stopped as a group, stopped at
        # interpreter exit, and killed by the kernel if this process dies first. The node's
        # state is in memory and rebuilt at each start, so a quick kill loses nothing.
        self.child = ChildProcess(
            self.command(), name=f"anvil-{self.chain}", log_path=self.log_path
        ).start()
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, timeout: float) -> None:
        assert self.child is not None
        body = {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}
        with httpx.Client(timeout=1.0) as client:

            def answers_chain_id() -> bool:
                try:
                    answer = client.post(self.url, json=body).json()
                    return int(answer["result"], 16) == self.chain_id
                except (httpx.HTTPError, ValueError, KeyError, TypeError):
                    return False

            try:
                self.child.wait_ready(answers_chain_id, timeout, "answering", port=self.port)
            except ChildStartError as exc:
                head, _, log = str(exc).partition("\n")
                raise AnvilStartError(f"{head} at {self.url}.\n{log}") from exc

    def log_tail(self, lines: int = 20) -> str:
        """The last lines of the node's log."""
        return read_log_tail(self.log_path, lines, missing="(no log)")

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the node's group, wait up to `timeout` seconds, then SIGKILL it."""
        child, self.child = self.child, None
        if child is not None:
            child.stop(grace=timeout)

    def __enter__(self) -> AnvilProcess:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"AnvilProcess({self.chain!r}, id {self.chain_id}, {self.url!r}, {state})"
