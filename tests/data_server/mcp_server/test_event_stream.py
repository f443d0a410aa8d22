"""GET on the data server's MCP endpoint (data_server/mcp_streams.py), as clients send it.

The served app on loopback, read with httpx: a GET before `initialize` (what the Vercel AI
SDK's client sends) is 405 and makes no session; a GET resuming with `Last-Event-ID` is a
400 that says why (it was a 500: the SDK's replay path answers nothing without an event
store); a GET within a session still opens the event stream.
"""

from __future__ import annotations

import httpx

from tests.data_server.mcp_server.servers import AppServer

SSE = {"Accept": "text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


async def _session(http: httpx.AsyncClient, url: str) -> str:
    opened = await http.post(
        url, json=INITIALIZE, headers={"Accept": "application/json, text/event-stream"}
    )
    assert opened.status_code == 200, opened.text
    session = opened.headers["mcp-session-id"]
    done = await http.post(
        url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={"Accept": "application/json, text/event-stream", "Mcp-Session-Id": session},
    )
    assert done.status_code == 202, done.text
    return session


async def test_a_get_before_initialize_is_405_and_makes_no_session(app_server: AppServer) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        for version in (None, "2025-11-25", "2025-06-18"):
            headers = SSE | ({"MCP-Protocol-Version": version} if version else {})
            answer = await http.get(app_server.mcp_url, headers=headers)
            assert answer.status_code == 405, (version, answer.status_code, answer.text)
            assert "mcp-session-id" not in answer.headers
            assert answer.headers["allow"] == "POST, DELETE"
            assert "initialize first" in answer.json()["error"]["message"]
        # The 2026 revisions have no GET stream: the SDK says so itself.
        modern = await http.get(
            app_server.mcp_url, headers=SSE | {"MCP-Protocol-Version": "2026-07-28"}
        )
        assert modern.status_code == 405


async def test_a_resuming_get_is_a_400_that_says_why(app_server: AppServer) -> None:
    async with httpx.AsyncClient(timeout=10) as http:
        session = await _session(http, app_server.mcp_url)
        headers = SSE | {"Mcp-Session-Id": session, "Last-Event-ID": "stream-1_7"}
        answer = await http.get(app_server.mcp_url, headers=headers)
        assert answer.status_code == 400, answer.text
        assert "no event history" in answer.json()["error"]["message"]
        # Without it, the session's event stream opens as before.
        async with http.stream(
            "GET", app_server.mcp_url, headers=SSE | {"Mcp-Session-Id": session}
        ) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
        # The session still answers.
        listed = await http.post(
            app_server.mcp_url,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream", "Mcp-Session-Id": session},
        )
        assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == 10
