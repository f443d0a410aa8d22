"""HTTP API of a client's MCP servers: GET/POST/DELETE /api/mcp/servers, GET /api/mcp/status."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict

from albert.mcp.config_store import McpConfigStore
from albert.mcp.configs import McpServerIn, McpServerList, McpServerView
from albert.mcp.manager import McpManager
from albert.mcp.secret_binding import SecretBinding, SecretRefused
from albert.mcp.ssrf import Resolver, UrlRefused, check_url, system_resolver
from albert.protocol.frames import McpServerStatus
from albert.settings import Settings
from albert.web import BadRequest, HttpRequest, HttpResponse, parse_body

_SERVER_PATH = re.compile(r"^/api/mcp/servers/(?P<name>[^/]{1,64})$")
MAX_BODY_BYTES = 32_000


class McpStatus(BaseModel):
    """GET /api/mcp/status."""

    model_config = ConfigDict(defer_build=True)

    servers: list[McpServerStatus]


class McpApi:
    """Routes /api/mcp/* requests to the config store and the manager."""

    def __init__(
        self,
        store: McpConfigStore,
        manager: McpManager,
        settings: Settings,
        resolver: Resolver = system_resolver,
        *,
        secrets: SecretBinding | None = None,
    ) -> None:
        self._store = store
        self._manager = manager
        self._settings = settings
        self._resolver = resolver
        # Without a binding no secret may be referenced at all.
        self._secrets = secrets or SecretBinding({}, settings.tenant_key, lambda _name: None)

    @property
    def manager(self) -> McpManager:
        """The manager behind this API (the object's ToolProvider)."""
        return self._manager

    async def handle(self, request: HttpRequest) -> HttpResponse:
        """Answer one request; every failure is a JSON error with a clear detail."""
        try:
            return await self._route(request)
        except BadRequest as exc:
            return HttpResponse.error(exc.status, exc.error, exc.detail)

    async def _route(self, request: HttpRequest) -> HttpResponse:
        if request.path == "/api/mcp/status":
            if request.method != "GET":
                return HttpResponse.error(405, "method_not_allowed", "use GET")
            return HttpResponse.json(McpStatus(servers=self._manager.status()))
        if request.path == "/api/mcp/servers":
            return await self._servers(request)
        match = _SERVER_PATH.match(request.path)
        if match is None:
            return HttpResponse.error(404, "not_found", "no such route")
        return await self._server(request, match["name"])

    async def _servers(self, request: HttpRequest) -> HttpResponse:
        """/api/mcp/servers: list, add or replace, delete by `?name=`."""
        if request.method == "GET":
            views = [McpServerView.of(c) for c in self._store.all()]
            return HttpResponse.json(McpServerList(servers=views))
        if request.method == "POST":
            return await self._put(request)
        if request.method == "DELETE":
            name = request.query.get("name")
            if not name:
                raise BadRequest("name the server: DELETE /api/mcp/servers/{name}")
            return await self._delete(name)
        return HttpResponse.error(405, "method_not_allowed", "use GET, POST or DELETE")

    async def _server(self, request: HttpRequest, name: str) -> HttpResponse:
        """/api/mcp/servers/{name}: read or delete one server."""
        if request.method == "DELETE":
            return await self._delete(name)
        if request.method == "GET":
            config = self._store.get(name)
            if config is None:
                return HttpResponse.error(404, "not_found", "no such MCP server")
            return HttpResponse.json(McpServerView.of(config))
        return HttpResponse.error(405, "method_not_allowed", "use GET or DELETE")

    async def _put(self, request: HttpRequest) -> HttpResponse:
        body = parse_body(request, McpServerIn, MAX_BODY_BYTES)
        allowed = self._settings.mcp_allowed_hosts
        host = (urlsplit(body.url).hostname or "").lower()
        if allowed is not None and host not in {h.lower() for h in allowed}:
            raise BadRequest(
                f"MCP servers on {host!r} are not allowed for this product",
                status=422,
                error="url_refused",
            )
        try:
            await check_url(body.url, self._settings.mode, self._resolver)
        except UrlRefused as exc:
            raise BadRequest(f"url refused: {exc}", status=422, error="url_refused") from exc
        if body.secret_ref is not None:
            try:
                self._secrets.check(body.secret_ref, body.url)
            except SecretRefused as exc:
                raise BadRequest(str(exc), status=422, error="secret_refused") from None
        existing = self._store.get(body.name)
        is_new = existing is None or existing.source == "default"
        if is_new and self._store.count_client() >= self._settings.mcp_max_servers:
            raise BadRequest(
                f"at most {self._settings.mcp_max_servers} MCP servers per client",
                status=409,
                error="too_many",
            )
        config = self._store.put(body)
        await self._manager.reload(config.name)
        return HttpResponse.json(McpServerView.of(config), status=201 if is_new else 200)

    async def _delete(self, name: str) -> HttpResponse:
        if self._store.delete(name):
            await self._manager.reload(name)
            return HttpResponse(status=204)
        config = self._store.get(name)
        if config is not None and config.source == "default":
            return HttpResponse.error(
                409,
                "read_only",
                "this server comes from the deployment's settings; disable it by adding "
                "a server of the same name with enabled=false",
            )
        return HttpResponse.error(404, "not_found", "no such MCP server")
