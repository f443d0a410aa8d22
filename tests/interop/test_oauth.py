"""An MCP server that needs OAuth, added by a user, authorized in the browser (issue #33, 7).

The local runtime serves the worker; the authorization server and the MCP server are the
`mcp` SDK's server pieces on loopback (tests/support/oauth_servers.py). The browser's part
is played by HTTP requests: open the authorization URL, follow its redirect to the
worker's callback (with no session token, as a browser arriving from elsewhere would).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.chat_client import ChatClient, answer_text
from tests.support.mcp_chat import system_prompt, wait_status
from tests.support.oauth_servers import SCOPE, SECRET_YIELD, GuardedServers, guarded_mcp
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall


@pytest.fixture
def guarded() -> Iterator[GuardedServers]:
    with guarded_mcp() as servers:
        yield servers


async def authorize_in_browser(
    client: ChatClient, runtime: RuntimeProcess, name: str, url: str | None = None
) -> str:
    """Press Authorize (unless `url` is the one it gave), approve at the authorization
    server, land on the callback page."""
    if url is None:
        started = await client.http.post(f"/api/mcp/servers/{name}/authorize")
        assert started.status_code == 200, started.text
        url = started.json()["authorization_url"]
    async with httpx.AsyncClient(timeout=10) as browser:
        approved = await browser.get(url)
        assert approved.status_code in (302, 303, 307), approved.text
        callback = approved.headers["location"]
        assert callback.startswith(f"{runtime.url}/api/mcp/oauth/callback?")
        page = await browser.get(callback)
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    return page.text


async def add(client: ChatClient, name: str, url: str) -> None:
    made = await client.http.post("/api/mcp/servers", json={"name": name, "url": url})
    assert made.status_code == 201, made.text


async def test_a_server_that_needs_oauth_waits_for_the_user_then_answers(
    runtime: RuntimeProcess, model: ScriptedModelServer, guarded: GuardedServers
) -> None:
    provider = guarded.provider
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        await add(client, "guarded", guarded.mcp_url)
        waiting = await wait_status(client, "guarded", "needs_authorization")
        assert "401" in waiting["last_error"]
        # Not a retry loop: nothing is planned while the server waits for the user.
        await asyncio.sleep(1.0)
        waiting = await wait_status(client, "guarded", "needs_authorization")
        assert waiting["attempts"] == 0 and waiting["next_retry_in_seconds"] is None
        # Meanwhile the model is told why the server's tools are missing, and what to say.
        thread = await client.new_thread()
        model.script(Reply(text=["Please authorize it."]))
        await client.turn(thread, "What does the guarded vault yield?")
        assert "press Authorize" in system_prompt(model.requests[-1])

        started = await client.http.post("/api/mcp/servers/guarded/authorize")
        authorization_url = started.json()["authorization_url"]
        url = urlsplit(authorization_url)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        # Discovery went from the server's metadata to the authorization server's.
        assert f"{url.scheme}://{url.netloc}" == guarded.issuer and url.path == "/authorize"
        assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) >= 43
        assert query["resource"] == guarded.mcp_url
        assert query["scope"] == SCOPE
        assert query["redirect_uri"] == f"{runtime.url}/api/mcp/oauth/callback"
        assert provider.registrations == 1

        page = await authorize_in_browser(client, runtime, "guarded", authorization_url)
        assert "guarded is connected" in page
        assert provider.registrations == 1
        ready = await wait_status(client, "guarded", "ready")
        assert ready["tools"] == 1 and ready["last_error"] is None
        # The resource indicator reached the authorization server with the code.
        assert provider.authorizations[-1].resource == guarded.mcp_url

        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="guarded_yield")]), Reply(text=["7.25%."])
        )
        frames = await client.turn(thread, "What does the guarded vault yield?")
        [result] = [f for f in frames if f["type"] == "tool_result"]
        assert result["ok"] and result["content"] == SECRET_YIELD
        assert answer_text(frames) == "7.25%."

        # The tokens never reach the browser.
        tokens = [*provider.access, *provider.refresh]
        assert tokens
        for path in ("/api/mcp/servers", "/api/mcp/status", "/api/mcp/servers/guarded"):
            text = (await client.http.get(path)).text
            assert not any(token in text for token in tokens), path


async def test_an_expiring_token_is_refreshed_and_a_withdrawn_grant_asks_again(
    runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    # Tokens for 30 s: within the refresh margin, so every use refreshes first.
    with guarded_mcp(access_seconds=30) as guarded:
        provider = guarded.provider
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            await add(client, "short", guarded.mcp_url)
            await wait_status(client, "short", "needs_authorization")
            await authorize_in_browser(client, runtime, "short")
            await wait_status(client, "short", "ready")
            assert provider.refreshes >= 1
            thread = await client.new_thread()
            model.script(
                Reply(tool_calls=[ScriptedToolCall(name="guarded_yield")]), Reply(text=["ok"])
            )
            frames = await client.turn(thread, "yield?")
            [result] = [f for f in frames if f["type"] == "tool_result"]
            assert result["ok"] and result["content"] == SECRET_YIELD

            # The user withdraws the grant: refresh fails, and the server waits for them.
            provider.revoke_everything()
            model.script(
                Reply(tool_calls=[ScriptedToolCall(name="guarded_yield")]), Reply(text=["no"])
            )
            frames = await client.turn(thread, "yield again?")
            [result] = [f for f in frames if f["type"] == "tool_result"]
            assert not result["ok"]
            waiting = await wait_status(client, "short", "needs_authorization", within=15)
            assert "401" in waiting["last_error"]


async def test_made_up_replayed_and_refused_callbacks_change_nothing(
    runtime: RuntimeProcess, guarded: GuardedServers
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        await add(client, "careful", guarded.mcp_url)
        await wait_status(client, "careful", "needs_authorization")
        started = await client.http.post("/api/mcp/servers/careful/authorize")
        state = parse_qs(urlsplit(started.json()["authorization_url"]).query)["state"][0]
        callback = f"{runtime.url}/api/mcp/oauth/callback"
        async with httpx.AsyncClient(timeout=10) as browser:
            object_id, nonce, mac = state.split(".")
            forged = f"{object_id}.{nonce[::-1]}.{mac}"
            made_up = await browser.get(callback, params={"state": forged, "code": "x"})
            assert made_up.status_code == 400
            assert made_up.json()["error"] == "invalid_state"
            # The user refused at the authorization server.
            denied = await browser.get(callback, params={"state": state, "error": "access_denied"})
            assert denied.status_code == 400 and "access_denied" in denied.text
            # That authorization is spent: a code sent after it is refused.
            replayed = await browser.get(callback, params={"state": state, "code": "x"})
            assert replayed.status_code == 400 and "not known" in replayed.text
        await wait_status(client, "careful", "needs_authorization")
        # A server that does not take OAuth cannot be authorized.
        missing = await client.http.post("/api/mcp/servers/nothing/authorize")
        assert missing.status_code == 404


# 200,000 nested brackets: a RecursionError once, so a 500 at the callback and a refresh
# that escaped its handler and left the server reconnecting for ever.
NESTED = b"[" * 200_000
DEEP = b'{"error": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"


async def test_a_token_endpoint_answering_nested_json_ends_in_words_not_a_crash(
    runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    with guarded_mcp(access_seconds=30) as guarded:
        async with ChatClient(runtime.url, runtime.ws_url) as client:
            await client.connect()
            await add(client, "nested", guarded.mcp_url)
            await wait_status(client, "nested", "needs_authorization")
            # At the callback: the page says what happened, no 500.
            guarded.token_answer = (400, NESTED)
            started = await client.http.post("/api/mcp/servers/nested/authorize")
            async with httpx.AsyncClient(timeout=10) as browser:
                approved = await browser.get(started.json()["authorization_url"])
                page = await browser.get(approved.headers["location"])
            assert page.status_code == 400, page.text
            assert "refused to issue tokens (HTTP 400)" in page.text
            await wait_status(client, "nested", "needs_authorization")

            # At a refresh (every use of a 30 s token refreshes): the tokens go, and the
            # server waits for the user with the reason instead of reconnecting.
            guarded.token_answer = None
            await authorize_in_browser(client, runtime, "nested")
            await wait_status(client, "nested", "ready")
            guarded.token_answer = (400, DEEP)
            thread = await client.new_thread()
            model.script(
                Reply(tool_calls=[ScriptedToolCall(name="guarded_yield")]), Reply(text=["no"])
            )
            frames = await client.turn(thread, "yield?")
            [result] = [f for f in frames if f["type"] == "tool_result"]
            assert not result["ok"]
            waiting = await wait_status(client, "nested", "needs_authorization", within=15)
            assert "refused to renew access (HTTP 400)" in waiting["last_error"], waiting
            await asyncio.sleep(1.0)
            still = await wait_status(client, "nested", "needs_authorization")
            assert still["attempts"] == 0 and still["next_retry_in_seconds"] is None
