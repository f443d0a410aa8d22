"""HTTP API of a client's MCP servers: GET/POST/DELETE /api/mcp/servers, GET /api/mcp/status,
POST /api/mcp/servers/{name}/authorize and the authorization's callback (OAuth), and
POST /api/mcp/servers/{name}/reconnect (drop the connection, connect afresh now).

A refused body says which field is at fault (`fields` of the error body), so a form can
show each message beside its field."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from albert.mcp.config_store import McpConfigStore
from albert.mcp.configs import McpServerConfig, McpServerIn, McpServerList, McpServerView
from albert.mcp.manager import McpManager, UnknownServer
from albert.mcp.oauth_state import CALLBACK_PATH
from albert.mcp.oauth_store import AuthorizationFailed
from albert.mcp.secret_binding import SecretBinding, SecretRefused, origin_of
from albert.mcp.ssrf import Resolver, UrlRefused, check_url, system_resolver
from albert.protocol.frames import McpServerStatus
from albert.settings import Settings
from albert.validation import validation_message
from albert.web import BadRequest, HttpRequest, HttpResponse, parse_body

_SERVER_PATH = re.compile(r"^/api/mcp/servers/(?P<name>[^/]{1,64})$")
_AUTHORIZE_PATH = re.compile(r"^/api/mcp/servers/(?P<name>[^/]{1,64})/authorize$")
_RECONNECT_PATH = re.compile(r"^/api/mcp/servers/(?P<name>[^/]{1,64})/reconnect$")
# Said instead of the pattern a refused name did not match.
NAME_RULE = (
    "use 1 to 32 characters: lower-case letters, digits, - and _, starting with a letter or digit"
)
# The callback page: no script, nothing loaded, never framed.
_PAGE_HEADERS = {
    "content-type": "text/html; charset=utf-8",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "frame-ancestors 'none'",
    "cache-control": "no-store",
    "referrer-policy": "no-referrer",
}
MAX_BODY_BYTES = 32_000


class McpStatus(BaseModel):
    """GET /api/mcp/status."""

    model_config = ConfigDict(defer_build=True)

    servers: list[McpServerStatus]


class AuthorizationStarted(BaseModel):
    """POST /api/mcp/servers/{name}/authorize: the URL the browser opens."""

    model_config = ConfigDict(defer_build=True)

    authorization_url: str


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
        seal: Callable[[str], str] | None = None,
    ) -> None:
        """`seal`: makes an authorization's state from its nonce (albert.mcp.oauth_state);
        without it (no object id, no signing key) servers cannot be authorized here."""
        self._store = store
        self._seal = seal
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
            return HttpResponse.error(exc.status, exc.error, exc.detail, fields=exc.fields)

    async def _route(self, request: HttpRequest) -> HttpResponse:
        if request.path == "/api/mcp/status":
            if request.method != "GET":
                return HttpResponse.error(405, "method_not_allowed", "use GET")
            return HttpResponse.json(McpStatus(servers=self._manager.status()))
        if request.path == "/api/mcp/servers":
            return await self._servers(request)
        if request.path == CALLBACK_PATH:
            return await self.callback(request)
        authorize = _AUTHORIZE_PATH.match(request.path)
        if authorize is not None:
            return await self._authorize(request, authorize["name"])
        reconnect = _RECONNECT_PATH.match(request.path)
        if reconnect is not None:
            return await self._reconnect(request, reconnect["name"])
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

    async def _authorize(self, request: HttpRequest, name: str) -> HttpResponse:
        """Begin a server's OAuth: discovery and registration now, the URL to open back."""
        if request.method != "POST":
            return HttpResponse.error(405, "method_not_allowed", "use POST")
        if self._seal is None or not request.base_url:
            return HttpResponse.error(
                503, "not_configured", "servers cannot be authorized on this deployment"
            )
        try:
            url = await self._manager.authorize(
                name, f"{request.base_url}{CALLBACK_PATH}", self._seal
            )
        except UnknownServer:
            return HttpResponse.error(
                404, "not_found", "no enabled MCP server of that name takes authorization"
            )
        except AuthorizationFailed as exc:
            return HttpResponse.error(502, "authorization_failed", str(exc))
        return HttpResponse.json(AuthorizationStarted(authorization_url=url))

    async def _reconnect(self, request: HttpRequest, name: str) -> HttpResponse:
        """Drop the server's connection and connect afresh now, its retries reset."""
        if request.method != "POST":
            return HttpResponse.error(405, "method_not_allowed", "use POST")
        if self._store.get(name) is None:
            return HttpResponse.error(404, "not_found", "no such MCP server")
        await self._manager.reload(name)
        status = next((s for s in self._manager.status() if s.name == name), None)
        if status is None:
            return HttpResponse.error(404, "not_found", "no such MCP server")
        return HttpResponse.json(status, status=202)

    async def callback(self, request: HttpRequest) -> HttpResponse:
        """GET /api/mcp/oauth/callback: the authorization server sent the browser back.

        The router checked the state's MAC and brought the request to this object; the
        nonce must match this object's waiting authorization. Answers a small page.
        """
        if request.method != "GET":
            return HttpResponse.error(405, "method_not_allowed", "use GET")
        nonce = request.query.get("state", "").split(".")[1:2]
        try:
            if not nonce:
                raise AuthorizationFailed("the callback carried no state")
            name = await self._manager.finish_authorization(nonce[0], dict(request.query))
        except AuthorizationFailed as exc:
            return _page(400, "Authorization failed", str(exc))
        status = next((s for s in self._manager.status() if s.name == name), None)
        if status is not None and status.state == "ready":
            return _page(200, "Connected", f"{name} is connected. You can close this tab.")
        reason = status.last_error if status is not None and status.last_error else "not yet"
        return _page(200, "Authorized", f"{name} is authorized, but not connected ({reason}).")

    async def _put(self, request: HttpRequest) -> HttpResponse:
        body = _friendly(lambda: parse_body(request, McpServerIn, MAX_BODY_BYTES))
        allowed = self._settings.mcp_allowed_hosts
        host = (urlsplit(body.url).hostname or "").lower()
        if allowed is not None and host not in {h.lower() for h in allowed}:
            raise BadRequest(
                f"MCP servers on {host!r} are not allowed for this product",
                status=422,
                error="url_refused",
                field="url",
            )
        try:
            await check_url(body.url, self._settings.mode, self._resolver)
        except UrlRefused as exc:
            raise BadRequest(
                f"url refused: {exc}", status=422, error="url_refused", field="url"
            ) from exc
        if body.secret_ref is not None:
            try:
                self._secrets.check(body.secret_ref, body.url)
            except SecretRefused as exc:
                raise BadRequest(
                    str(exc), status=422, error="secret_refused", field="secret_ref"
                ) from None
        existing = self._store.get(body.name)
        if body.keep_headers:
            body = _with_kept_headers(body, existing)
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


def _friendly(parse: Callable[[], McpServerIn]) -> McpServerIn:
    """The body, or its refusal with a name's rule in words rather than as a pattern."""
    try:
        return parse()
    except BadRequest as exc:
        for error in exc.fields or []:
            if error.field == "name" and "pattern" in error.message:
                error.message = f"invalid name: {NAME_RULE}"
        raise


def _same_origin(stored: str, given: str) -> bool:
    try:
        return origin_of(stored) == origin_of(given)
    except ValueError:
        return False  # not an http(s) origin: nothing stored goes there


def _with_kept_headers(body: McpServerIn, existing: McpServerConfig | None) -> McpServerIn:
    """An edit that keeps stored header values it cannot see (`keep_headers`): the body with
    them filled in; 422 when they are not there, or the URL's origin changed (a stored
    value never goes to another origin than the one it was given for)."""
    if existing is None or existing.source == "default":
        raise BadRequest(
            "keep_headers needs a stored server of this name with those headers",
            status=422,
            error="invalid_body",
            field="keep_headers",
        )
    if not _same_origin(existing.url, body.url):
        raise BadRequest(
            "the URL's origin changed, so stored header values cannot be kept: "
            "enter them again for the new URL",
            status=422,
            error="headers_not_kept",
            field="keep_headers",
        )
    stored = {name.lower(): name for name in existing.headers}
    given = {name.lower() for name in body.headers}
    kept: dict[str, str] = {}
    for name in body.keep_headers:
        if name.lower() in given:
            raise BadRequest(
                f"header {name!r} is both kept and given a new value",
                status=422,
                error="invalid_body",
                field="keep_headers",
            )
        if name.lower() not in stored:
            raise BadRequest(
                f"no stored header {name!r} to keep",
                status=422,
                error="invalid_body",
                field="keep_headers",
            )
        original = stored[name.lower()]
        kept[original] = existing.headers[original]
    data = body.model_dump()
    data.update(headers={**kept, **body.headers}, keep_headers=[])
    try:
        return McpServerIn.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(
            validation_message(exc), status=422, error="invalid_body", field="headers"
        ) from exc


def _page(status: int, title: str, text: str) -> HttpResponse:
    """The small page the browser sees at the end of an authorization."""
    body = (
        "<!doctype html><html lang=en><meta charset=utf-8>"
        f"<title>Albert: {html.escape(title)}</title>"
        "<body style='font:16px system-ui,sans-serif;margin:3rem auto;max-width:32rem'>"
        f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
        "<p><a href='/'>Back to the chat</a></p></body></html>"
    )
    return HttpResponse(status=status, body=body.encode(), headers=dict(_PAGE_HEADERS))
