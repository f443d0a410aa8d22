"""The OAuth flow against real servers on loopback: the SDK's authorization server, and
servers whose metadata is wrong in the ways that must stop an authorization."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from albert.cloudflare.sql import WorkersSql
from albert.mcp.oauth_flow import MAX_ANSWER_BYTES, OAuthFlow
from albert.mcp.oauth_store import AuthorizationFailed, OAuthStore
from albert.mcp.ssrf import system_resolver
from tests.support.asgi_server import AsgiServer
from tests.support.clock import ManualClock
from tests.support.oauth_servers import guarded_mcp

REDIRECT = "https://chat.example/api/mcp/oauth/callback"
OBJECT = "ab" * 32


def seal(nonce: str) -> str:
    return f"{OBJECT}.{nonce}.mac"


def flow_for(sql: WorkersSql, clock: ManualClock, mode: str = "local") -> OAuthFlow:
    return OAuthFlow(OAuthStore(sql, clock.now_ms), clock, mode, system_resolver)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(int(time.time() * 1000))


def nonce_of(url: str) -> str:
    return parse_qs(urlsplit(url).query)["state"][0].split(".")[1]


async def approve(url: str) -> dict[str, str]:
    """The user presses Allow: the callback's query."""
    async with httpx.AsyncClient() as browser:
        answer = await browser.get(url)
    location = answer.headers["location"]
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def test_a_code_is_traded_once_and_tokens_refresh_with_rotation(
    sql: WorkersSql, clock: ManualClock
) -> None:
    with guarded_mcp(access_seconds=600) as guarded:
        flow = flow_for(sql, clock)
        url = await flow.start("g", guarded.mcp_url, REDIRECT, seal)
        query = await approve(url)
        assert await flow.finish(nonce_of(url), query) == "g"
        token = await flow.access_token("g", guarded.mcp_url)
        assert token in guarded.provider.access
        # Far from expiry: the same token; close to it: a new one, the old refresh spent.
        assert await flow.access_token("g", guarded.mcp_url) == token
        clock.advance(590)
        fresh = await flow.access_token("g", guarded.mcp_url)
        assert fresh is not None and fresh != token and guarded.provider.refreshes == 1
        # Two requests holding the same refused token refresh once between them.
        again = [await flow.refreshed("g", guarded.mcp_url, fresh) for _ in range(2)]
        assert again[0] == again[1] and guarded.provider.refreshes == 2
        # The same callback again finds nothing waiting.
        with pytest.raises(AuthorizationFailed, match="not known"):
            await flow.finish(nonce_of(url), query)
        # A token made for this URL is not offered to the same name at another URL.
        assert await flow.access_token("g", guarded.mcp_url + "/other") is None


async def test_an_authorization_finished_too_late_is_refused(
    sql: WorkersSql, clock: ManualClock
) -> None:
    with guarded_mcp() as guarded:
        flow = flow_for(sql, clock)
        url = await flow.start("g", guarded.mcp_url, REDIRECT, seal)
        query = await approve(url)
        clock.advance(601)
        with pytest.raises(AuthorizationFailed, match="expired"):
            await flow.finish(nonce_of(url), query)
        assert await flow.access_token("g", guarded.mcp_url) is None


# --- servers whose metadata must stop the authorization --------------------------------


def metadata_server(
    document: Callable[[str], dict[str, Any] | bytes], resource: Callable[[str], str] | None = None
) -> Starlette:
    """One origin serving both metadata documents, shaped by the test."""

    def base(request: Request) -> str:
        return f"http://127.0.0.1:{request.url.port}"

    async def prm(request: Request) -> Response:
        url = base(request)
        return JSONResponse(
            {
                "resource": resource(url) if resource else f"{url}/mcp",
                "authorization_servers": [url],
            }
        )

    async def asm(request: Request) -> Response:
        body = document(base(request))
        if isinstance(body, bytes):
            return Response(body, media_type="application/json")
        return JSONResponse(body)

    return Starlette(
        routes=[
            Route("/.well-known/oauth-protected-resource/mcp", prm),
            Route("/.well-known/oauth-authorization-server", asm),
        ]
    )


def good(url: str) -> dict[str, Any]:
    return {
        "issuer": url,
        "authorization_endpoint": f"{url}/authorize",
        "token_endpoint": f"{url}/token",
        "registration_endpoint": f"{url}/register",
        "code_challenge_methods_supported": ["S256"],
    }


CASES: dict[str, tuple[Starlette, str]] = {
    "no PKCE": (
        metadata_server(lambda u: {**good(u), "code_challenge_methods_supported": ["plain"]}),
        "PKCE",
    ),
    "another issuer": (
        metadata_server(lambda u: {**good(u), "issuer": "http://127.0.0.1:1"}),
        "another issuer",
    ),
    "another resource": (
        metadata_server(good, resource=lambda _u: "http://127.0.0.1:1/mcp"),
        "another resource",
    ),
    "no registration": (
        metadata_server(lambda u: {**good(u), "registration_endpoint": None}),
        "no dynamic client registration",
    ),
    "oversized metadata": (
        metadata_server(lambda u: b" " * (MAX_ANSWER_BYTES + 1) + b"{}"),
        "no authorization server metadata",
    ),
}


@pytest.fixture(params=sorted(CASES))
def broken(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    app, reason = CASES[request.param]
    with AsgiServer(app) as served:
        yield f"{served.url}/mcp", reason


async def test_wrong_metadata_stops_the_authorization_with_a_reason(
    sql: WorkersSql, clock: ManualClock, broken: tuple[str, str]
) -> None:
    url, reason = broken
    flow = flow_for(sql, clock)
    with pytest.raises(AuthorizationFailed, match=reason):
        await flow.start("s", url, REDIRECT, seal)
    assert OAuthStore(sql, clock.now_ms).get("s", url) is None


async def test_production_refuses_metadata_that_points_inside(
    sql: WorkersSql, clock: ManualClock
) -> None:
    # The well-known URLs derive from a loopback server: every one is refused, none read.
    with AsgiServer(metadata_server(good)) as served:
        flow = flow_for(sql, clock, mode="production")
        with pytest.raises(AuthorizationFailed, match="no authorization server metadata"):
            await flow.start("s", f"{served.url}/mcp", REDIRECT, seal)
