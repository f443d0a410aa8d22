"""The demo planner against real tools, in process: what the local stack gives it.

A data server over the offline pipeline's recorded vaults (plus the constructed test vaults)
runs on a loopback port with its platform services; the session's Typesense holds the token
index; the local tools are built against both, the vault tools are listed and called over a
real MCP session. Questions go through the project's own tool loop (five steps, the last
without tools), so a plan's lookup, main and follow-up steps run exactly as in a chat turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from albert.ai.model import ChatMessage, ChatToolCall
from albert.ai.tool_loop import ToolLoop
from albert.mcp.remote_tool import RemoteTool, RemoteToolSpec
from albert.search.typesense_client import TypesenseClient
from albert.settings import Settings
from albert.tools.address_analysis import address_analysis_tool
from albert.tools.base import TextPart, Tool, ToolResult
from albert.tools.feed_search import feed_search_tool
from albert.tools.guard import ToolGuard
from albert.tools.registry import ToolRegistry
from albert.tools.token_analysis import token_analysis_tool
from albert.tools.token_search.tool import token_search_tool
from data_server.tokens.seed import seed_tokens
from demo_planner import DemoPlanner
from tests.data_server.mcp_server.servers import AppServer, fresh_app
from tests.typesense_fixture import TypesenseServer, unique_name

GUARD = ToolGuard(timeout_seconds=20, max_chars=50_000)


@dataclass
class Turn:
    """One answered question: the calls in order, their results, the answer."""

    question: str
    calls: list[ChatToolCall] = field(default_factory=list)
    results: dict[str, str] = field(default_factory=dict)
    answer: str = ""
    finish: str = ""
    steps: int = 0

    def step_calls(self, step: str) -> list[tuple[str, dict[str, Any]]]:
        """(tool, arguments) of the calls of one plan step: lookup, main or follow."""
        import json

        return [
            (c.name, json.loads(c.arguments))
            for c in self.calls
            if c.id.startswith(f"demo_{step}_")
        ]

    def results_of(self, step: str) -> list[str]:
        return [self.results[c.id] for c in self.calls if c.id.startswith(f"demo_{step}_")]

    def as_history(self) -> list[ChatMessage]:
        """The turn as the chat stores it for the next one: the question, the calls with
        their results, the answer."""
        out = [ChatMessage(role="user", content=self.question)]
        if self.calls:
            out.append(ChatMessage(role="assistant", content="", tool_calls=list(self.calls)))
            out += [
                ChatMessage(role="tool", content=self.results[c.id], tool_call_id=c.id, name=c.name)
                for c in self.calls
            ]
        out.append(ChatMessage(role="assistant", content=self.answer))
        return out


class _Recorder:
    def __init__(self, turn: Turn) -> None:
        self.turn = turn

    async def on_text(self, step: int, delta: str) -> None:
        self.turn.answer += delta

    async def on_step_end(self, step: int, text: str, calls: list, finish_reason: str) -> None:
        return None

    async def on_tool_call(
        self, step: int, call: ChatToolCall, arguments: dict, source: str
    ) -> None:
        self.turn.calls.append(call)

    def on_tool_progress(
        self,
        step: int,
        call: ChatToolCall,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        return None

    async def on_tool_result(
        self, step: int, call: ChatToolCall, outcome: ToolResult, source: str
    ) -> None:
        self.turn.results[call.id] = outcome.shown_text() + outcome.cut_note()


@dataclass
class World:
    """Real tools for the planner: local ones and the vault server's over MCP."""

    local: list[Tool]
    session: ClientSession

    async def remote(self) -> list[Tool]:
        listed = await self.session.list_tools()

        async def invoke(server: str, spec: RemoteToolSpec, args: dict[str, Any]) -> ToolResult:
            result = await self.session.call_tool(spec.name, args)
            texts = [part.text for part in result.content if getattr(part, "text", None)]
            structured = result.structured_content
            return ToolResult(
                content=[TextPart(text=t) for t in texts or ["(the tool returned no text)"]],
                is_error=bool(result.is_error),
                # Kept as the project's MCP connection keeps it (albert.mcp.connection).
                structured=structured if isinstance(structured, dict) else None,
            )

        tools: list[Tool] = []
        for t in listed.tools:
            spec = RemoteToolSpec(
                name=t.name, description=t.description or "", input_schema=t.input_schema
            )
            tools.append(RemoteTool("vaults", spec, invoke))
        return tools

    async def ask(
        self,
        question: str,
        planner: DemoPlanner | None = None,
        *,
        without: tuple[str, ...] = (),
        history: list[ChatMessage] | None = None,
    ) -> Turn:
        """Ask one question through the tool loop, after `history` (earlier turns of the
        thread); `without` leaves tools out of the turn."""
        registry = ToolRegistry([t for t in self.local if t.name not in without])
        registry.merge([t for t in await self.remote() if t.name not in without], "vaults")
        turn = Turn(question)
        loop = ToolLoop(planner or DemoPlanner(), GUARD, max_steps=5)
        result = await loop.run(
            [*(history or []), ChatMessage(role="user", content=question)],
            registry,
            _Recorder(turn),
        )
        turn.finish, turn.steps = result.finish_reason, result.steps
        return turn

    async def converse(
        self, questions: list[str], planner: DemoPlanner | None = None
    ) -> list[Turn]:
        """Ask the questions one after another in one thread (each sees the earlier turns)."""
        planner = planner or DemoPlanner()
        history: list[ChatMessage] = []
        turns = []
        for question in questions:
            turn = await self.ask(question, planner, history=history)
            history += turn.as_history()
            turns.append(turn)
        return turns


@contextmanager
def running_services(typesense: TypesenseServer, folder: Path) -> Iterator[tuple[AppServer, str]]:
    """The data server (vaults, platform services) and a token collection of its own."""
    tokens = unique_name("tokens")

    async def seed() -> None:
        async with TypesenseClient(typesense.url, typesense.api_key) as client:
            await seed_tokens(client, tokens)

    asyncio.run(seed())
    with fresh_app(typesense, folder, "vaults") as app:
        yield app, tokens
    with httpx.Client() as http:
        http.delete(
            f"{typesense.url}/collections/{tokens}",
            headers={"X-TYPESENSE-API-KEY": typesense.api_key},
        )


@asynccontextmanager
async def world(app: AppServer, tokens: str, typesense: TypesenseServer) -> AsyncIterator[World]:
    """Local tools against the services, and an open MCP session to the vault tools."""
    settings = Settings.model_validate(
        {
            "PLATFORM_API_URL": f"{app.base_url}/platform",
            "TYPESENSE_URL": typesense.url,
            "TYPESENSE_API_KEY": typesense.api_key,
        }
    )
    async with httpx.AsyncClient() as http:
        local: list[Tool] = [
            token_analysis_tool(settings, http),
            address_analysis_tool(settings, http),
            feed_search_tool(settings, http),
            token_search_tool(settings, http, collection=tokens),
        ]
        async with _mcp_session(app.mcp_url, http) as session:
            yield World(local, session)


@asynccontextmanager
async def _mcp_session(url: str, http: httpx.AsyncClient) -> AsyncIterator[ClientSession]:
    """An MCP session owned by a task of its own (as the project's connection does), so a
    fixture may open it in one task and close it in another."""
    ready, stop = asyncio.Event(), asyncio.Event()
    holder: list[ClientSession] = []

    async def own() -> None:
        async with streamable_http_client(url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                holder.append(session)
                ready.set()
                await stop.wait()

    owner = asyncio.create_task(own())
    waiter = asyncio.create_task(ready.wait())
    await asyncio.wait({owner, waiter}, timeout=20, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if not holder:
        owner.cancel()
        raise RuntimeError("the MCP session did not open")
    try:
        yield holder[0]
    finally:
        stop.set()
        await asyncio.wait_for(owner, 10)
