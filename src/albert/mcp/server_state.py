"""One configured MCP server's state machine: every change of its state happens here.

| event              | from                                    | to                       |
| ------------------ | --------------------------------------- | ------------------------ |
| `connected`        | connecting, reconnecting, failed, ready | ready                    |
| `lost`             | ready, connecting                       | reconnecting             |
| `recovery_planned` | connecting, reconnecting, failed        | reconnecting, failed, or |
|                    |                                         | needs_authorization      |
| `retry_failed`     | reconnecting                            | (as `recovery_planned`)  |
| `half_open_failed` | failed                                  | failed (cool-down anew)  |
| `disabled`         | any                                     | disabled                 |

`failed` means every retry of the recovery cycle was spent (the recovery
scheduler decides, from `retry`); `needs_authorization` that the server asked for
OAuth and only the user can go on (albert.mcp.oauth_flow): no retry runs until then.
Each transition is logged and broadcast through `on_change`; so are the two changes
the browser shows besides the state: the number of tools and the quarantined ones.
Nothing outside this module assigns `state`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from albert.mcp.classify import ServerKind, classify_server
from albert.mcp.configs import McpServerConfig
from albert.mcp.remote_tool import RemoteToolSpec
from albert.mcp.retry_policy import RetryState
from albert.protocol.frames import McpState

if TYPE_CHECKING:
    from albert.mcp.connection import McpConnection

log = logging.getLogger(__name__)

# Which states each state may move to; `_enter` refuses anything else.
_DOWN: frozenset[McpState] = frozenset(
    {"ready", "reconnecting", "failed", "needs_authorization", "disabled"}
)
TRANSITIONS: dict[McpState, frozenset[McpState]] = {
    "connecting": _DOWN,
    "ready": frozenset({"ready", "reconnecting", "disabled"}),
    "reconnecting": _DOWN,
    "failed": _DOWN,
    "needs_authorization": _DOWN,
    "disabled": frozenset({"disabled"}),
}


class IllegalTransition(RuntimeError):
    """A transition the state table does not allow: a bug, never a server's fault."""


@dataclass(eq=False)
class ServerState:
    """What the manager knows about one configured server, and how it may change."""

    config: McpServerConfig
    on_change: Callable[[], None]
    state: McpState = "connecting"
    conn: McpConnection | None = None
    retry: RetryState = field(default_factory=RetryState)
    tools: list[RemoteToolSpec] | None = None
    checked_at: float = float("-inf")
    tools_stale: bool = False
    kind: ServerKind | None = None
    instructions: str | None = None
    server_name: str = ""
    last_error: str | None = None
    quarantined: list[str] = field(default_factory=list)
    renamed: list[str] = field(default_factory=list)
    first_attempt: asyncio.Task[None] | None = None
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    retired: bool = False
    final_failure: bool = False
    authorization_needed: bool = False

    @classmethod
    def for_config(cls, config: McpServerConfig, on_change: Callable[[], None]) -> ServerState:
        """A freshly configured server: connecting, or disabled by its config."""
        return cls(
            config=config,
            on_change=on_change,
            state="connecting" if config.enabled else "disabled",
        )

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def current(self) -> bool:
        """Still the manager's server of this name (not replaced or removed since)."""
        return not self.retired

    # --- transitions -----------------------------------------------------------------

    def connected(self, conn: McpConnection, specs: list[RemoteToolSpec], at: float) -> None:
        """A connection attempt succeeded: ready, with the tools it listed."""
        self._allow("ready", "connected")
        self.conn = conn
        self.instructions = conn.instructions
        self.server_name = conn.server_name
        self._take_tools(specs, at)
        self.last_error = None
        self.final_failure = False
        self.authorization_needed = False
        self.retry.reset()
        self._enter("ready", f"{len(specs)} tools")

    def lost(self, reason: str) -> bool:
        """The connection is gone; False when the server was not up (nothing changes)."""
        if self.state not in ("ready", "connecting", "needs_authorization"):
            return False
        self.conn = None
        self.last_error = reason
        self._enter("reconnecting", f"lost: {reason}", level=logging.WARNING)
        return True

    def recovery_planned(self) -> None:
        """A recovery cycle began (`retry` holds its plan): reconnecting, or failed at once."""
        self._enter_by_retry(f"recovery planned ({self.last_error})")

    def retry_failed(self) -> None:
        """A scheduled retry failed (`retry` counts it): reconnecting, or failed when spent."""
        self._enter_by_retry(f"retry {self.retry.attempts} failed ({self.last_error})")

    def half_open_failed(self) -> None:
        """The one attempt after the cool-down failed: the cool-down starts again."""
        self._enter("failed", f"half-open attempt failed ({self.last_error})")

    def disabled(self) -> None:
        """The config is gone or switched off: nothing connects any more."""
        if self.state != "disabled":
            self._enter("disabled", "config removed or disabled")

    # --- changes that are not transitions --------------------------------------------

    def connect_failed(self, reason: str, *, final: bool = False, authorize: bool = False) -> None:
        """An attempt failed; the state is the recovery scheduler's to change.

        `final`: no retry can fix it (no MCP endpoint there, answers over the caps), so the
        scheduler stops rather than retrying; `authorize` (final too): the server asks for
        the user's OAuth authorization.
        """
        self.last_error = reason
        self.final_failure = final or authorize
        self.authorization_needed = authorize

    def tools_listed(self, specs: list[RemoteToolSpec], at: float) -> None:
        """A fresh tool list (the health check passed); broadcast when the count changed."""
        before = len(self.tools or [])
        self._take_tools(specs, at)
        if len(specs) != before:
            self.on_change()

    def tools_changed(self) -> None:
        """The server said its tool list changed: list it again before the next use."""
        self.tools_stale = True

    def answered(self, at: float) -> None:
        """A call succeeded: that counts as a passed health check."""
        self.checked_at = at

    def health_unknown(self) -> None:
        """Something suggests the server may be gone: check it before the next use."""
        self.checked_at = float("-inf")

    def quarantine(self, rejected: list[str], renamed: list[str] | None = None) -> None:
        """The tools left out this turn, and those offered under another name; broadcast
        when either changed."""
        renamed = renamed or []
        if rejected != self.quarantined or renamed != self.renamed:
            self.quarantined = rejected
            self.renamed = renamed
            self.on_change()

    def _take_tools(self, specs: list[RemoteToolSpec], at: float) -> None:
        self.tools = specs
        self.tools_stale = False
        self.checked_at = at
        # The tool set is the strongest evidence of what a server is; it can change.
        self.kind = classify_server([s.name for s in specs], self.config.kind)

    def _enter_by_retry(self, why: str) -> None:
        if not self.retry.exhausted:
            self._enter("reconnecting", why)
        elif self.retry.authorize:
            self._enter("needs_authorization", why)
        else:
            self._enter("failed", why)

    def _allow(self, state: McpState, why: str) -> None:
        if state not in TRANSITIONS[self.state]:
            raise IllegalTransition(f"MCP server {self.name}: {self.state} → {state} ({why})")

    def _enter(self, state: McpState, why: str, *, level: int = logging.INFO) -> None:
        self._allow(state, why)
        log.log(level, "MCP server %s: %s → %s, %s", self.name, self.state, state, why)
        self.state = state
        self.on_change()
