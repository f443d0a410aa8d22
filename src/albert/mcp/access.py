"""What the chat service holds of the MCP layer: the config store, the manager, and the HTTP
API under /api/mcp/, which is made (and its modules imported) on its first request."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from albert.mcp.config_store import McpConfigStore
from albert.mcp.manager import McpManager
from albert.web import HttpRequest, HttpResponse

if TYPE_CHECKING:
    from albert.mcp.api import McpApi

MCP_API_PREFIX = "/api/mcp/"


class McpAccess:
    """The store, the manager, and the HTTP API made once on first use."""

    def __init__(
        self, store: McpConfigStore, manager: McpManager, api: Callable[[], McpApi]
    ) -> None:
        self.store = store
        self.manager = manager
        self._make_api = api
        self._api: McpApi | None = None

    @staticmethod
    def handles(path: str) -> bool:
        """True for the paths the MCP API owns."""
        return path.startswith(MCP_API_PREFIX)

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Answer one /api/mcp/ request."""
        return await self.api().handle(request)

    def api(self) -> McpApi:
        """The HTTP API, made on first use (no await here: made once)."""
        if self._api is None:
            self._api = self._make_api()
        return self._api
