"""A real `mcp`-SDK server on loopback that can misbehave the ways servers in the wild do.

The SDK's low-level server answers everything it can; an ASGI wrapper in front of it
plays what a hostile or unlucky deployment sends: a compressed bomb or an oversized tool
list, a result of two million content parts, a legacy-only handshake (`server/discover`
unknown, so the client opens a session with `initialize`), and a restart behind a proxy
that forgets every session so far (the SDK itself then answers 404).
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import anyio

from tests.support.asgi_server import AsgiServer

PARTS = 2_000_000
BOMB_BYTES = 64 * 1024 * 1024


def _tools() -> list[Any]:
    import mcp_types as types

    def tool(name: str) -> types.Tool:
        return types.Tool(
            name=name, description=name, input_schema={"type": "object", "properties": {}}
        )

    names = (
        "text",
        "count",
        "structured_only",
        "resources",
        "huge_parts",
        "big",
        "slow",
        "progressive",
        "chatty",
    )
    # Names a platform owns already, one legal in MCP but not for model APIs, a task-only one.
    clashing = ("echo", "Local-Only", "vault.search")
    task_only = types.Tool(
        name="batch_export",
        description="batch_export",
        input_schema={"type": "object", "properties": {}},
        execution=types.ToolExecution(task_support="required"),
    )
    return [*(tool(n) for n in (*names, *clashing)), task_only]


def _sdk_app(state: dict[str, Any]) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=_tools())

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        if name == "count":
            state["counted"] += 1
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=str(state["counted"]))]
            )
        if name == "structured_only":
            return types.CallToolResult(content=[], structured_content={"apy": 4.2, "tvl": 10})
        if name == "resources":
            return types.CallToolResult(
                content=[
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.TextResourceContents(
                            uri="file:///report.md", mime_type="text/markdown", text="# Report"
                        ),
                    ),
                    types.ResourceLink(
                        type="resource_link", uri="https://example.org/v/1", name="vault-1"
                    ),
                    types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
                ]
            )
        if name == "progressive":
            for done in (1, 2, 3):
                await ctx.session.report_progress(done, 3, f"step {done}")
                await anyio.sleep(0.3)
            return types.CallToolResult(content=[types.TextContent(type="text", text="done")])
        if name == "chatty":
            # Every level, whatever the client asked for (allowed at the 2025 handshakes).
            for level in ("debug", "info", "notice", "warning", "error", "critical"):
                await ctx.session.send_log_message(
                    level, f"{level} line", logger="unruly", related_request_id=ctx.request_id
                )
            return types.CallToolResult(content=[types.TextContent(type="text", text="said")])
        if name == "slow":
            state["slow_started"] += 1
            try:
                await anyio.sleep(1.0)
            except anyio.get_cancelled_exc_class():
                state["slow_cancelled"] += 1
                raise
            return types.CallToolResult(content=[types.TextContent(type="text", text="slow")])
        if name == "big":
            return types.CallToolResult(
                content=[types.TextContent(type="text", text="x" * (3 * 1024 * 1024))]
            )
        if name in ("echo", "Local-Only", "vault.search"):
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"remote {name}")]
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text="plain")])

    server: Any = Server(
        "unruly", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    return server.streamable_http_app(
        streamable_http_path="/mcp", host="127.0.0.1", json_response=state["json_response"]
    )


# Made once, before any test measures: the server's copy is not what a test bounds.
HUGE_PARTS_TAIL = b'{"type":"text","text":"x"},' * (PARTS - 1) + b'{"type":"text","text":"x"}]}}'


def _huge_parts_body(request_id: Any) -> list[bytes]:
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":{"content":['
    return [head, HUGE_PARTS_TAIL]


def _list_body(request_id: Any, padding: int) -> bytes:
    head = b'{"jsonrpc":"2.0","id":' + json.dumps(request_id).encode() + b',"result":{"tools":[]'
    return head + b" " * padding + b"}}"


class UnrulyServer:
    """The wrapped SDK server on a free loopback port, in a thread of this process."""

    def __init__(self, *, json_response: bool = True, legacy_only: bool = False) -> None:
        self.state: dict[str, Any] = {
            "json_response": json_response,
            "counted": 0,
            "list": None,  # None | "gzip_bomb" | "huge"
            "forgotten": set(),
            "sessions": set(),
            "sent_encoding": [],
            "slow_started": 0,
            "slow_cancelled": 0,
        }
        self.legacy_only = legacy_only
        self._app = _sdk_app(self.state)
        self._server = AsgiServer(self._wrapper, lifespan="on", graceful_shutdown_seconds=1)
        self.url = f"{self._server.url}/mcp"

    def __enter__(self) -> UnrulyServer:
        self._server.start(timeout=15)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def forget_sessions(self) -> None:
        """What a restart behind a proxy does: every session so far is unknown."""
        self.state["forgotten"] |= self.state["sessions"]

    async def _wrapper(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = dict(scope["headers"])
        self.state["sent_encoding"].append(headers.get(b"accept-encoding", b"").decode())
        try:
            request = json.loads(body)
        except ValueError:
            request = {}
        method = request.get("method") if isinstance(request, dict) else None
        request_id = request.get("id") if isinstance(request, dict) else None
        canned = self._canned(method, request_id, request)
        if canned is not None:
            await _answer(send, *canned)
            return
        session = headers.get(b"mcp-session-id")
        if session is not None and session.decode() in self.state["forgotten"]:
            scope = {
                **scope,
                "headers": [
                    (k, b"forgotten-" + v if k == b"mcp-session-id" else v)
                    for k, v in scope["headers"]
                ],
            }
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def noting(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", []):
                    if key.lower() == b"mcp-session-id":
                        self.state["sessions"].add(value.decode())
            await send(message)

        await self._app(scope, replay, noting)

    def _canned(
        self, method: Any, request_id: Any, request: dict[str, Any]
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes | list[bytes]] | None:
        json_kind = [(b"content-type", b"application/json")]
        if method == "server/discover" and self.legacy_only:
            error = {"code": -32601, "message": "Method not found"}
            body = json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
            return 200, json_kind, body
        if method == "tools/list" and self.state["list"] == "gzip_bomb":
            bomb = gzip.compress(_list_body(request_id, BOMB_BYTES), compresslevel=9)
            return 200, [*json_kind, (b"content-encoding", b"gzip")], bomb
        if method == "tools/list" and self.state["list"] == "huge":
            return 200, json_kind, _list_body(request_id, 20 * 1024 * 1024)
        params = request.get("params") or {}
        if method == "tools/call" and params.get("name") == "huge_parts":
            return 200, json_kind, _huge_parts_body(request_id)
        return None


async def _answer(
    send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes | list[bytes]
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    step = 256 * 1024
    for piece in [body] if isinstance(body, bytes) else body:
        view = memoryview(piece)
        for start in range(0, len(piece), step):
            chunk = bytes(view[start : start + step])
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b""})
