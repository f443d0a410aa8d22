"""Our MCP client against the TypeScript SDK's reference server (`server-everything`).

Through the same manager a chat object uses: list, call, progress, structured and resource
results, a task-only tool left out, the legacy SSE transport and its restart, a restart
that forgets our session, and a URL on the server that is no MCP endpoint.
"""

from __future__ import annotations

import asyncio

from albert.cloudflare.sql import WorkersSql
from albert.tools.progress import reporting
from tests.albert.mcp.test_manager import Harness, harness, wait_state
from tests.interop.conftest import Everything


async def test_streamable_http_lists_calls_and_keeps_what_results_carry(
    sql: WorkersSql, harness_factory: list[Harness], everything_http: Everything
) -> None:
    h = await harness(sql, harness_factory, everything_http.url, name="everything")
    await wait_state(h.manager, "everything", "ready")
    turn = await h.manager.tools_for_turn()
    registry = turn.registry
    assert registry.source_of("echo") == "everything" and registry.source_of("get-sum")
    assert (await registry.get("echo").execute({"message": "hi"})).joined_text() == "Echo: hi"
    total = await registry.get("get-sum").execute({"a": 2, "b": 3})
    assert "5" in total.joined_text() and not total.is_error
    structured = await registry.get("get-structured-content").execute({"location": "New York"})
    assert not structured.is_error and structured.structured, structured
    links = (await registry.get("get-resource-links").execute({"count": 2})).joined_text()
    assert "[resource link" in links and "<demo://resource/" in links
    # An embedded text resource inline under its URI; a binary one named, not read.
    reference = registry.get("get-resource-reference")
    text = (await reference.execute({"resourceType": "Text"})).joined_text()
    assert "[resource demo://resource/dynamic/text/1]\nResource 1: This is a plaintext" in text
    blob = (await reference.execute({"resourceType": "Blob"})).joined_text()
    assert "[resource demo://resource/dynamic/blob/1 (text/plain) omitted" in blob
    # Tools it registers only for clients that declare sampling or elicitation: we declare
    # neither, so they are never offered.
    names = registry.names()
    assert not [n for n in names if "sampling" in n or "elicitation" in n], names
    # A tool that runs only as a task is left out, and the status says why.
    assert "simulate-research-query" not in registry.names()
    [status] = h.manager.status()
    assert any(
        q.startswith("simulate-research-query: it runs only as a task") for q in status.quarantined
    )


async def test_progress_notifications_reach_the_running_call(
    sql: WorkersSql, harness_factory: list[Harness], everything_http: Everything
) -> None:
    h = await harness(sql, harness_factory, everything_http.url, name="everything")
    await wait_state(h.manager, "everything", "ready")
    tool = (await h.manager.tools_for_turn()).registry.get("trigger-long-running-operation")
    reports: list[tuple[float, float | None]] = []
    with reporting(lambda done, total, _message: reports.append((done, total))):
        result = await tool.execute({"duration": 1, "steps": 3})
    assert not result.is_error, result
    assert [done for done, _ in reports] == [1, 2, 3] and reports[-1][1] == 3


async def test_a_restart_that_forgets_our_session_costs_no_call(
    sql: WorkersSql, harness_factory: list[Harness], everything_http: Everything
) -> None:
    h = await harness(
        sql, harness_factory, everything_http.url, name="everything", MCP_HEALTH_CACHE_SECONDS="60"
    )
    await wait_state(h.manager, "everything", "ready")
    turn = await h.manager.tools_for_turn()
    assert (
        await turn.registry.get("echo").execute({"message": "one"})
    ).joined_text() == "Echo: one"
    everything_http.restart()
    # The new process answers our session id with 404: a new session, the call made once.
    again = await turn.registry.get("echo").execute({"message": "two"})
    assert again.joined_text() == "Echo: two", again
    await wait_state(h.manager, "everything", "ready")


async def test_the_legacy_sse_transport_is_used_when_streamable_http_is_refused(
    sql: WorkersSql, harness_factory: list[Harness], everything_sse: Everything
) -> None:
    h = await harness(sql, harness_factory, everything_sse.url, name="everything")
    await wait_state(h.manager, "everything", "ready")
    echo = (await h.manager.tools_for_turn()).registry.get("echo")
    assert (await echo.execute({"message": "old"})).joined_text() == "Echo: old"


async def test_a_restarted_legacy_sse_server_is_reconnected(
    sql: WorkersSql, harness_factory: list[Harness], everything_sse: Everything
) -> None:
    # Issue #33 item 8: the SSE stream ends with the process; a new one is opened.
    h = await harness(sql, harness_factory, everything_sse.url, name="everything")
    await wait_state(h.manager, "everything", "ready")
    everything_sse.restart()
    await wait_state(h.manager, "everything", "ready", within=15)
    for _ in range(50):  # bounded: the drop may be noticed by this turn's health check
        registry = (await h.manager.tools_for_turn()).registry
        if registry.source_of("echo") == "everything":
            break
        await asyncio.sleep(0.1)
    assert registry.source_of("echo") == "everything", h.manager.status()
    echo = registry.get("echo")
    assert (await echo.execute({"message": "back"})).joined_text() == "Echo: back"
    assert h.manager.status()[0].last_error is None


async def test_a_url_that_is_no_mcp_endpoint_fails_once_with_a_clear_reason(
    sql: WorkersSql, harness_factory: list[Harness], everything_http: Everything
) -> None:
    # Issue #33 item 8: 404 to the POST and to the SSE GET; no retry can fix that.
    url = everything_http.url.replace("/mcp", "/nothing")
    h = await harness(sql, harness_factory, url, name="everything")
    await wait_state(h.manager, "everything", "failed")
    [status] = h.manager.status()
    assert status.last_error is not None
    assert status.last_error.startswith("no MCP endpoint at this URL (HTTP 404 to initialize)")
    await asyncio.sleep(1.0)  # the fast schedule would have retried several times by now
    [later] = h.manager.status()
    assert later.state == "failed" and later.attempts == status.attempts
