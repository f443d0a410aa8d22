"""An MCP server whose authorization server is panva's `oidc-provider` (npm, pinned), which
nobody here wrote, configured for an MCP resource and otherwise as shipped
(tests/support/oidc_provider.mjs): dynamic client registration that refuses a scope it
does not list, PKCE, resource indicators, introspection, refresh tokens only for a grant
of offline_access asked with prompt=consent, and in-memory storage.

The worker runs on both runtimes; the user's part is played over HTTP (the provider's own
login and consent pages, then the worker's callback, with no session token).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.chat_client import ChatClient
from tests.support.mcp_chat import wait_status
from tests.support.oidc_provider import (
    GUARDED_ANSWER,
    OidcGuarded,
    browser_authorizes,
    installed,
    oidc_guarded,
)
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

pytestmark = pytest.mark.skipif(
    not installed(), reason="node_modules is not installed (scripts/bootstrap installs it)"
)


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def guarded(logs: Path) -> Iterator[OidcGuarded]:
    # A 50 s access token: inside the refresh margin from the moment it is issued.
    with oidc_guarded(logs, access_seconds=50) as servers:
        yield servers


async def add(client: ChatClient, name: str, url: str) -> None:
    made = await client.http.post("/api/mcp/servers", json={"name": name, "url": url})
    assert made.status_code == 201, made.text


async def start_authorization(client: ChatClient, name: str) -> str:
    started = await client.http.post(f"/api/mcp/servers/{name}/authorize")
    assert started.status_code == 200, started.text
    return str(started.json()["authorization_url"])


async def authorize(client: ChatClient, runtime: RuntimeProcess, name: str) -> dict[str, str]:
    """Press Authorize, sign in and consent, land on the callback page; the URL's query."""
    url = await start_authorization(client, name)
    callback = await browser_authorizes(url, f"{runtime.url}/api/mcp/oauth/callback")
    async with httpx.AsyncClient(timeout=15) as browser:
        page = await browser.get(callback)
    assert page.status_code == 200 and f"{name} is connected" in page.text, page.text
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}


async def call_guarded(
    client: ChatClient, model: ScriptedModelServer, thread: str
) -> dict[str, object]:
    model.script(Reply(tool_calls=[ScriptedToolCall(name="guarded_yield")]), Reply(text=["ok"]))
    frames = await client.turn(thread, "What does the guarded vault yield?")
    [result] = [f for f in frames if f["type"] == "tool_result"]
    return result


async def test_authorized_with_a_refresh_token_renewed_and_revoked(
    runtime: RuntimeProcess, model: ScriptedModelServer, guarded: OidcGuarded
) -> None:
    provider = guarded.provider
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        await add(client, "oidc", guarded.mcp_url)
        await wait_status(client, "oidc", "needs_authorization")
        query = await authorize(client, runtime, "oidc")
        # offline_access with prompt=consent, so the provider keeps it and issues a refresh
        # token; the resource indicator and PKCE S256.
        assert query["scope"] == "mcp offline_access" and query["prompt"] == "consent"
        assert query["resource"] == guarded.mcp_url and query["code_challenge_method"] == "S256"
        # The provider lists no `mcp` scope: it refused the registration asking for it, and
        # took the same registration without it.
        [refused] = provider.events("registration_refused")
        assert refused["error"] == "invalid_client_metadata"
        [registered] = provider.events("registration")
        assert registered["scope"] is None
        assert provider.events("refresh_token"), provider.events()
        ready = await wait_status(client, "oidc", "ready")
        assert ready["last_error"] is None

        # Every use of a 50 s token renews it first; the call is answered.
        thread = await client.new_thread()
        result = await call_guarded(client, model, thread)
        assert result["ok"] and result["content"] == GUARDED_ANSWER
        renewed = [g for g in provider.events("grant") if g["grant_type"] == "refresh_token"]
        assert renewed

        # The user withdraws the grant at the provider: the refresh is refused, the server
        # waits for the user, and says why.
        provider.revoke_everything()
        result = await call_guarded(client, model, thread)
        assert not result["ok"]
        waiting = await wait_status(client, "oidc", "needs_authorization", within=15)
        assert "refused to renew access" in waiting["last_error"], waiting
        assert "invalid_grant" in waiting["last_error"]

        # Authorized again: the registration is still known, and used again.
        await authorize(client, runtime, "oidc")
        await wait_status(client, "oidc", "ready")
        assert len(provider.events("registration")) == 1
        result = await call_guarded(client, model, thread)
        assert result["ok"] and result["content"] == GUARDED_ANSWER


async def test_without_a_refresh_token_the_token_serves_until_it_expires(
    runtime: RuntimeProcess, model: ScriptedModelServer, logs: Path
) -> None:
    # A provider without offline_access never issues a refresh token. A 50 s token is
    # inside the refresh margin from the start, and still connects and answers.
    with oidc_guarded(logs, access_seconds=50, offline=False) as guarded:
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            await add(client, "brief", guarded.mcp_url)
            await wait_status(client, "brief", "needs_authorization")
            query = await authorize(client, runtime, "brief")
            assert query["scope"] == "mcp" and "prompt" not in query
            assert not guarded.provider.events("refresh_token")
            await wait_status(client, "brief", "ready")
            thread = await client.new_thread()
            result = await call_guarded(client, model, thread)
            assert result["ok"] and result["content"] == GUARDED_ANSWER
    # Past its expiry, the server waits for the user and says why (a shorter token, so
    # the test waits less).
    with oidc_guarded(logs, access_seconds=8, offline=False) as guarded:
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            await add(client, "brief", guarded.mcp_url)
            await wait_status(client, "brief", "needs_authorization")
            await authorize(client, runtime, "brief")
            await wait_status(client, "brief", "ready")
            thread = await client.new_thread()
            result = await call_guarded(client, model, thread)
            assert result["ok"]
            await asyncio.sleep(9)
            result = await call_guarded(client, model, thread)
            assert not result["ok"]
            waiting = await wait_status(client, "brief", "needs_authorization", within=15)
            assert "no refresh token" in waiting["last_error"], waiting


@pytest.mark.parametrize("offline", [True, False], ids=["refresh-token", "no-refresh-token"])
async def test_a_provider_restart_that_forgets_us_ends_in_a_new_registration(
    runtime: RuntimeProcess, model: ScriptedModelServer, logs: Path, offline: bool
) -> None:
    with oidc_guarded(logs, access_seconds=3600, offline=offline) as guarded:
        provider = guarded.provider
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            await add(client, "forgetful", guarded.mcp_url)
            await wait_status(client, "forgetful", "needs_authorization")
            await authorize(client, runtime, "forgetful")
            await wait_status(client, "forgetful", "ready")
            thread = await client.new_thread()
            assert (await call_guarded(client, model, thread))["ok"]

            # Restarted with nothing in memory: our token, grant and registration are gone.
            provider.restart()
            result = await call_guarded(client, model, thread)
            assert not result["ok"]
            waiting = await wait_status(client, "forgetful", "needs_authorization", within=15)
            if offline:
                # The refresh told: the provider no longer knows our client.
                assert "invalid_client" in waiting["last_error"], waiting
            else:
                assert "no refresh token" in waiting["last_error"], waiting

            # Authorize again registers anew (the old registration reads back as unknown,
            # or went with the refused refresh), and the server is back.
            await authorize(client, runtime, "forgetful")
            assert len(provider.events("registration")) == 1  # at the restarted provider
            await wait_status(client, "forgetful", "ready")
            result = await call_guarded(client, model, thread)
            assert result["ok"] and result["content"] == GUARDED_ANSWER
