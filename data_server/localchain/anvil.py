"""Start and stop a real local EVM node (Foundry's anvil) on 127.0.0.1, one per chain.

The binary comes from the npm package `@foundry-rs/anvil-linux-<arch>` that `npm ci` installs
(pinned in package.json); nothing is downloaded at run time. The node starts empty (no fork,
so no network), with the chain's real EIP-155 id, and keeps its state in memory: the seeding
step fills it at every start.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from child_processes import LOOPBACK, ServerProcess, free_port, port_is_free
from data_server.wallets.chain_ids import chain_id as known_chain_id

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


class AnvilProcess(ServerProcess):
    """One anvil child process serving one chain id.

    Started through child_processes.ServerProcess: own process group, stopped as a group,
    stopped at interpreter exit, and killed by the kernel if this process dies first. The
    node's state is in memory and rebuilt at each start, so a quick kill loses nothing.
    """

    start_error = AnvilStartError
    ready_state = "answering"
    start_seconds = 20.0
    stop_seconds = 5.0
    log_lines = 20

    def __init__(
        self,
        chain: str,
        log_dir: Path,
        *,
        chain_id: int | None = None,
        port: int | None = None,
        host: str = LOOPBACK,
    ) -> None:
        resolved = chain_id if chain_id is not None else known_chain_id(chain)
        if resolved is None:
            raise ValueError(f"no chain id known for {chain!r}; pass chain_id")
        super().__init__(host, port or free_port(host), movable=port is None)
        self.chain = chain
        self.chain_id = resolved
        self.child_name = f"anvil-{chain}"
        self.log_dir = Path(log_dir)

    @property
    def log_path(self) -> Path:
        """Where the node's output goes."""
        return self.log_dir / f"anvil-{self.chain}.log"

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

    def prepare_launch(self) -> None:
        """A port taken since it was picked is picked again before the launch."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if not port_is_free(self.port, self.host):
            self.port = free_port(self.host)

    @contextlib.contextmanager
    def readiness_probe(self) -> Iterator[Callable[[], bool]]:
        """True once `eth_chainId` answers with the node's chain id."""
        body = {"jsonrpc": "2.0", "id": 1, "method": "eth_chainId", "params": []}
        with httpx.Client(timeout=1.0) as client:

            def answers_chain_id() -> bool:
                try:
                    answer = client.post(self.url, json=body).json()
                    return int(answer["result"], 16) == self.chain_id
                except (httpx.HTTPError, ValueError, KeyError, TypeError):
                    return False

            yield answers_chain_id

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"AnvilProcess({self.chain!r}, id {self.chain_id}, {self.url!r}, {state})"
