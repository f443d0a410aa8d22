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


# --- an authorization server that answers as the test scripts it -----------------------

# What crashed the callback (RecursionError, a 500) and looped a refresh: nested brackets,
# past the error size bound and, inside it, past any parser's depth.
NESTED = b"[" * 200_000
DEEP = b"[" * 10_000 + b"]" * 10_000


class Authority:
    """A loopback authorization server (and the resource's metadata) whose answers each
    test shapes: what registration and the token endpoint say, and what it forgets."""

    def __init__(self) -> None:
        self.offline = False  # lists offline_access in scopes_supported
        self.endpoint_suffix = ""  # appended to the authorization endpoint's URL
        self.refuse_scope = False  # registration refuses a `scope` (HTTP 400)
        self.refuse_all: dict[str, Any] | None = None  # registration refuses with this
        self.management = False  # registrations can be read back (RFC 7592)
        self.refresh = True  # token answers carry a refresh token
        self.expires_in = 3600
        self.grant_types: list[str] | None = None  # grant_types_supported, when listed
        self.token_error: tuple[int, bytes] | None = None  # the next token answer instead
        self.clients: set[str] = set()
        self.registrations: list[dict[str, Any]] = []
        self.refreshes = 0
        self.served = AsgiServer(self._app())

    def __enter__(self) -> Authority:
        self.served.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.served.stop()

    @property
    def url(self) -> str:
        return self.served.url

    @property
    def mcp_url(self) -> str:
        return f"{self.url}/mcp"

    def forget_clients(self) -> None:
        """A restart with an in-memory store: no registration is known any more."""
        self.clients.clear()

    def _app(self) -> Starlette:
        async def prm(request: Request) -> Response:
            return JSONResponse(
                {
                    "resource": self.mcp_url,
                    "authorization_servers": [self.url],
                    "scopes_supported": ["mcp"],
                }
            )

        async def asm(request: Request) -> Response:
            return JSONResponse(
                {
                    **good(self.url),
                    "authorization_endpoint": f"{self.url}/authorize{self.endpoint_suffix}",
                    "scopes_supported": ["openid", *(["offline_access"] if self.offline else [])],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                    **({"grant_types_supported": self.grant_types} if self.grant_types else {}),
                }
            )

        async def register(request: Request) -> Response:
            body = await request.json()
            self.registrations.append(body)
            if self.refuse_all is not None:
                return JSONResponse(self.refuse_all, status_code=400)
            if self.refuse_scope and "scope" in body:
                return JSONResponse(
                    {"error": "invalid_client_metadata", "error_description": "no such scope"},
                    status_code=400,
                )
            client_id = f"client-{len(self.registrations)}"
            self.clients.add(client_id)
            answer = {**body, "client_id": client_id, "client_secret": "s3cret"}
            if self.management:
                answer |= {
                    "registration_client_uri": f"{self.url}/register/{client_id}",
                    "registration_access_token": f"rat-{client_id}",
                }
            return JSONResponse(answer, status_code=201)

        async def read_back(request: Request) -> Response:
            client_id = request.path_params["client_id"]
            if client_id not in self.clients:
                return JSONResponse({"error": "invalid_token"}, status_code=401)
            return JSONResponse({"client_id": client_id})

        async def authorize(request: Request) -> Response:
            if request.query_params.get("client_id") not in self.clients:
                return Response("unknown client", status_code=400)
            redirect = request.query_params["redirect_uri"]
            state = request.query_params["state"]
            return Response(
                status_code=302, headers={"location": f"{redirect}?code=c&state={state}"}
            )

        async def token(request: Request) -> Response:
            if self.token_error is not None:
                status, body = self.token_error
                return Response(body, status_code=status, media_type="application/json")
            form = await request.form()
            if form["grant_type"] == "refresh_token":
                self.refreshes += 1
            answer: dict[str, Any] = {
                "access_token": f"at-{self.refreshes}",
                "token_type": "Bearer",
                "expires_in": self.expires_in,
            }
            if self.refresh:
                answer["refresh_token"] = f"rt-{self.refreshes}"
            return JSONResponse(answer)

        return Starlette(
            routes=[
                Route("/.well-known/oauth-protected-resource/mcp", prm),
                Route("/.well-known/oauth-authorization-server", asm),
                Route("/register", register, methods=["POST"]),
                Route("/register/{client_id}", read_back),
                Route("/authorize", authorize),
                Route("/token", token, methods=["POST"]),
            ]
        )


@pytest.fixture
def authority() -> Iterator[Authority]:
    with Authority() as served:
        yield served


async def authorized(flow: OAuthFlow, authority: Authority) -> None:
    url = await flow.start("s", authority.mcp_url, REDIRECT, seal)
    assert await flow.finish(nonce_of(url), await approve(url)) == "s"


async def test_nested_json_from_the_token_endpoint_is_a_refusal_not_a_crash(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    flow = flow_for(sql, clock)
    # At the callback: a refusal the page can show, no RecursionError (a 500).
    url = await flow.start("s", authority.mcp_url, REDIRECT, seal)
    authority.token_error = (400, NESTED)
    with pytest.raises(AuthorizationFailed, match=r"refused to issue tokens \(HTTP 400\)$"):
        await flow.finish(nonce_of(url), await approve(url))
    # At a refresh: the tokens go and the reason stays, so the server waits for the user.
    authority.token_error = None
    await authorized(flow, authority)
    authority.token_error = (400, b'{"error": ' + DEEP + b"}")
    token = await flow.access_token("s", authority.mcp_url)
    assert await flow.refreshed("s", authority.mcp_url, token or "") is None
    record = OAuthStore(sql, clock.now_ms).get("s", authority.mcp_url)
    assert record is not None and record.access_token is None and record.refresh_token is None
    assert record.ended == "the authorization server refused to renew access (HTTP 400)"


async def test_an_error_answer_is_shown_in_words_and_bounded(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    flow = flow_for(sql, clock)
    await authorized(flow, authority)
    authority.token_error = (
        400,
        b'{"error": "invalid_grant", "error_description": "grant \\u202erevoked\\u0000'
        + b"x" * 400
        + b'"}',
    )
    assert await flow.refreshed("s", authority.mcp_url, "at-0") is None
    record = OAuthStore(sql, clock.now_ms).get("s", authority.mcp_url)
    assert record is not None and record.ended is not None
    assert record.ended.startswith(
        "the authorization server refused to renew access (HTTP 400, invalid_grant: grant revoked x"
    )
    assert "\u202e" not in record.ended and len(record.ended) < 300


async def test_offline_access_is_asked_with_prompt_consent(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    authority.offline = True
    url = await flow_for(sql, clock).start("s", authority.mcp_url, REDIRECT, seal)
    query = parse_qs(urlsplit(url).query)
    assert query["scope"] == ["mcp offline_access"] and query["prompt"] == ["consent"]
    authority.offline = False
    url = await flow_for(sql, clock).start("s", authority.mcp_url, REDIRECT, seal)
    assert "prompt" not in parse_qs(urlsplit(url).query)


async def test_the_endpoint_keeps_its_query_and_loses_its_fragment(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    authority.endpoint_suffix = "?tenant=acme&client_id=someone-else#section"
    url = await flow_for(sql, clock).start("s", authority.mcp_url, REDIRECT, seal)
    parts = urlsplit(url)
    assert parts.fragment == "" and parts.path == "/authorize"
    query = parse_qs(parts.query)
    assert query["tenant"] == ["acme"] and query["client_id"] == ["client-1"]
    assert query["state"] and query["code_challenge_method"] == ["S256"]


async def test_a_token_without_refresh_serves_until_it_expires(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    authority.refresh = False
    authority.expires_in = 50  # inside the refresh margin from the start
    flow = flow_for(sql, clock)
    await authorized(flow, authority)
    token = await flow.access_token("s", authority.mcp_url)
    assert token == "at-0"
    clock.advance(45)
    assert await flow.access_token("s", authority.mcp_url) == token
    assert authority.refreshes == 0
    clock.advance(6)
    assert await flow.access_token("s", authority.mcp_url) is None
    record = OAuthStore(sql, clock.now_ms).get("s", authority.mcp_url)
    assert record is not None and record.ended is not None and "no refresh token" in record.ended


async def test_a_refused_scope_is_registered_without_it(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    authority.refuse_scope = True
    flow = flow_for(sql, clock)
    url = await flow.start("s", authority.mcp_url, REDIRECT, seal)
    assert [("scope" in r) for r in authority.registrations] == [True, False]
    # The authorization still asks for the resource's scope.
    assert parse_qs(urlsplit(url).query)["scope"] == ["mcp"]
    assert await flow.finish(nonce_of(url), await approve(url)) == "s"


async def test_only_the_grants_the_server_lists_are_registered(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    # A provider that issues no refresh token refuses a registration asking for one.
    authority.offline = True
    authority.grant_types = ["authorization_code", "implicit"]
    url = await flow_for(sql, clock).start("s", authority.mcp_url, REDIRECT, seal)
    assert authority.registrations[-1]["grant_types"] == ["authorization_code"]
    query = parse_qs(urlsplit(url).query)
    assert query["scope"] == ["mcp"] and "prompt" not in query
    authority.grant_types = ["authorization_code", "refresh_token"]
    await flow_for(sql, clock).start("t", authority.mcp_url, REDIRECT, seal)
    assert authority.registrations[-1]["grant_types"] == ["authorization_code", "refresh_token"]


async def test_a_refused_registration_says_what_the_server_said(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    authority.refuse_all = {"error": "invalid_redirect_uri"}
    with pytest.raises(
        AuthorizationFailed, match=r"refused our registration \(HTTP 400, invalid_redirect_uri\)"
    ):
        await flow_for(sql, clock).start("s", authority.mcp_url, REDIRECT, seal)
    assert len(authority.registrations) == 2  # with the scope, then without


async def test_a_forgotten_registration_is_made_again(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    flow = flow_for(sql, clock)
    await authorized(flow, authority)
    # The server forgot every client: a refresh says invalid_client, and the registration
    # goes with the tokens.
    authority.forget_clients()
    authority.token_error = (401, b'{"error": "invalid_client"}')
    assert await flow.refreshed("s", authority.mcp_url, "at-0") is None
    authority.token_error = None
    await authorized(flow, authority)
    assert len(authority.registrations) == 2
    # Without a refresh to tell: an authorization that never came back registers anew.
    authority.forget_clients()
    OAuthStore(sql, clock.now_ms).challenged("s", authority.mcp_url, "Bearer")
    url = await flow.start("s", authority.mcp_url, REDIRECT, seal)
    async with httpx.AsyncClient() as browser:
        assert (await browser.get(url)).status_code == 400  # the user sees an error page
    await authorized(flow, authority)
    assert len(authority.registrations) == 3


async def test_a_registration_read_back_as_unknown_is_made_again(
    sql: WorkersSql, clock: ManualClock, authority: Authority
) -> None:
    authority.management = True
    flow = flow_for(sql, clock)
    await authorized(flow, authority)
    await authorized(flow, authority)
    assert len(authority.registrations) == 1  # still known: used again
    authority.forget_clients()
    await authorized(flow, authority)
    assert len(authority.registrations) == 2
