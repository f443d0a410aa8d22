"""The OAuth of one object's servers: what is stored (albert.mcp.oauth_store) and the flow
(albert.mcp.oauth_flow), which is made, and `mcp` imported, only when first needed.

One flow per object: it holds the lock that keeps two requests from spending a server's
refresh token twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from albert.clock import Clock
from albert.mcp.oauth_store import OAuthStore

if TYPE_CHECKING:
    import httpx2

    from albert.mcp.configs import McpServerConfig
    from albert.mcp.oauth_flow import OAuthFlow
    from albert.mcp.ssrf import Resolver


class OAuthAccess:
    """The stored OAuth state of an object's servers, and its flow made on first use."""

    def __init__(
        self,
        store: OAuthStore,
        clock: Clock,
        mode: Literal["local", "production"],
        resolver: Resolver | None = None,
    ) -> None:
        """`resolver`: the DNS lookup of the SSRF checks (the system's without)."""
        self.store = store
        self._clock = clock
        self._mode = mode
        self._resolver = resolver
        self._flow: OAuthFlow | None = None

    def flow(self) -> OAuthFlow:
        """The servers' OAuth flow, made (and `mcp` imported) on first use."""
        if self._flow is None:
            from albert.mcp.oauth_flow import OAuthFlow
            from albert.mcp.ssrf import system_resolver

            self._flow = OAuthFlow(
                self.store, self._clock, self._mode, self._resolver or system_resolver
            )
        return self._flow

    def bearer(self, config: McpServerConfig) -> httpx2.Auth | None:
        """What a connection to this server authorizes itself with: its bearer once the user
        authorized it, else None."""
        if not config.uses_oauth or not self.store.has_tokens(config.name, config.url):
            return None
        return self.flow().bearer(config.name, config.url)
