"""An OAuth authorization server and an MCP server that needs its tokens, on loopback.

Both are the `mcp` SDK's own server pieces: the authorization server is its
`create_auth_routes` (metadata, dynamic client registration, /authorize with PKCE,
/token with refresh) over the in-memory provider below; the MCP server is an
`MCPServer` with `AuthSettings` (protected-resource metadata, 401 with
WWW-Authenticate) on another port, so discovery crosses origins as with hosted servers.

The provider approves every authorization at once, as if the user had pressed
"Allow": GET /authorize answers a redirect to our callback with a code.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette

from child_processes import free_port
from tests.support.asgi_server import AsgiServer

SCOPE = "vaults:read"
SECRET_YIELD = "guarded vault: 7.25% APY"


@dataclass
class LoopbackProvider:
    """Clients, codes and tokens in memory; counts what the tests look at."""

    access_seconds: int = 3600
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    authorizations: list[AuthorizationParams] = field(default_factory=list)
    refreshes: int = 0
    registrations: int = 0

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.registrations += 1
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        self.authorizations.append(params)
        code = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._issue(client, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token already used")
        self.refreshes += 1
        return self._issue(client, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def revoke_everything(self) -> None:
        """The user withdrew the grant at the authorization server."""
        self.access.clear()
        self.refresh.clear()

    def _issue(
        self, client: OAuthClientInformationFull, scopes: list[str], resource: str | None
    ) -> OAuthToken:
        assert client.client_id is not None
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = int(time.time()) + self.access_seconds
        self.access[access] = AccessToken(
            token=access,
            client_id=client.client_id,
            scopes=scopes,
            expires_at=expires,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client.client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=self.access_seconds,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )


class _Verifier:
    """The MCP server's view of tokens: asks the authorization server's store."""

    def __init__(self, provider: LoopbackProvider) -> None:
        self._provider = provider

    async def verify_token(self, token: str) -> AccessToken | None:
        return await self._provider.load_access_token(token)


@dataclass
class GuardedServers:
    """The running pair: where they are, and the provider behind both.

    `token_answer`: when set, the authorization server's token endpoint answers with this
    (status, JSON body) instead, as a broken or hostile one would."""

    provider: LoopbackProvider
    issuer: str
    mcp_url: str
    token_answer: tuple[int, bytes] | None = None


class _TokenAnswer:
    """ASGI wrapper of the authorization server: the token endpoint says what the test set."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.servers: GuardedServers | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        answer = self.servers.token_answer if self.servers is not None else None
        if scope["type"] != "http" or scope["path"] != "/token" or answer is None:
            await self.app(scope, receive, send)
            return
        status, body = answer
        headers = [(b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@contextmanager
def guarded_mcp(access_seconds: int = 3600) -> Iterator[GuardedServers]:
    """An authorization server and an MCP server that needs its tokens, both running."""
    provider = LoopbackProvider(access_seconds=access_seconds)
    as_port, mcp_port = free_port(), free_port()
    issuer = f"http://127.0.0.1:{as_port}"
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    authority = _TokenAnswer(
        Starlette(
            routes=create_auth_routes(
                provider,
                AnyHttpUrl(issuer),
                client_registration_options=ClientRegistrationOptions(
                    enabled=True, valid_scopes=[SCOPE], default_scopes=[SCOPE]
                ),
            )
        )
    )
    server = MCPServer(
        "guarded",
        token_verifier=_Verifier(provider),
        auth=AuthSettings(
            issuer_url=AnyHttpUrl(issuer),
            resource_server_url=AnyHttpUrl(mcp_url),
            required_scopes=[SCOPE],
            validate_token_resource=False,
        ),
    )

    @server.tool()
    def guarded_yield() -> str:
        """The yield only an authorized client may read."""
        return SECRET_YIELD

    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    with (
        AsgiServer(authority, as_port),
        AsgiServer(app, mcp_port, lifespan="on", graceful_shutdown_seconds=1),
    ):
        servers = GuardedServers(provider, issuer, mcp_url)
        authority.servers = servers
        yield servers
