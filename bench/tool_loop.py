"""Tool-loop overhead: what a five-step turn costs beyond the model's and the tools' own time.

In process: the real ToolLoop with an in-process model client and instant local tools,
against a baseline that consumes the same model events and runs the same tools directly.
Through the runtime: a real five-step turn (four instant tool calls, then the answer)
over the WebSocket, against direct reads of the same five model responses plus the tools'
own time as the runtime reports it in its tool_result frames.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from pydantic import Field

from albert.ai.model import (
    ChatMessage,
    ChatToolCall,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.ai.tool_loop import ToolLoop
from albert.tools.base import LocalTool, ToolInput, ToolResult
from albert.tools.guard import ToolGuard
from albert.tools.registry import ToolRegistry
from bench.core import BenchSizes, Row, Spread, Stopwatch
from bench.model_server import INSTANT_TOOL, ModelProcess
from bench.stack import running_runtime, runtime_vars, state_dir
from tests.support.chat_client import ChatClient

STEPS = 5
TARGET_MS = 1.0
# A registry about the size of the real one, so per-step spec building is realistic.
TOOL_COUNT = 12


class LookupInput(ToolInput):
    """Arguments of the instant tools."""

    symbol: str = Field(description="Token symbol, e.g. ETH")
    chain: str = Field("ethereum", description="Chain slug")
    limit: int = Field(10, ge=1, le=50, description="How many rows")


async def _instant(args: LookupInput) -> ToolResult:
    return ToolResult.text(f"{args.symbol} on {args.chain}: 42 rows", structured={"n": 42})


TOOLS = [
    LocalTool(f"lookup_{i}", "Looks something up.", LookupInput, _instant)
    for i in range(TOOL_COUNT)
]
ARGS = json.dumps({"symbol": "ETH", "chain": "base", "limit": 5})


def _step_events(tool_results: int) -> list[ModelEvent]:
    if tool_results < STEPS - 1:
        call = ChatToolCall(id=f"call_{tool_results}", name="lookup_3", arguments=ARGS)
        return [ToolCallRequest(call=call), StepFinished(reason="tool_calls")]
    return [
        TextDelta(text="All "),
        TextDelta(text="done."),
        StepFinished(reason="stop", prompt_tokens=10, completion_tokens=2),
    ]


class InstantModel:
    """An in-process model client: four tool calls, then an answer."""

    @property
    def model_name(self) -> str:
        return "instant"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        done = sum(1 for m in request.messages if m.role == "tool")
        async for event in self.events(done):
            yield event

    async def events(self, tool_results: int) -> AsyncIterator[ModelEvent]:
        """The events of the step after `tool_results` tool results."""
        for event in _step_events(tool_results):
            yield event


class NullObserver:
    """Receives the turn and does nothing with it."""

    async def on_text(self, step: int, delta: str) -> None:
        return None

    async def on_step_end(
        self, step: int, text: str, calls: list[ChatToolCall], finish_reason: str
    ) -> None:
        return None

    async def on_tool_call(
        self, step: int, call: ChatToolCall, arguments: dict[str, Any], source: str
    ) -> None:
        return None

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
        return None


USER = [
    ChatMessage(role="system", content="You are a test."),
    ChatMessage(role="user", content="go"),
]


async def _loop_turn(loop: ToolLoop, registry: ToolRegistry) -> None:
    result = await loop.run(USER, registry, NullObserver())
    if result.steps != STEPS:
        raise RuntimeError(f"expected {STEPS} steps, got {result.steps}")


async def _bare_turn(model: InstantModel, registry: ToolRegistry) -> None:
    """The same model events and tool executions, without the loop around them."""
    for done in range(STEPS):
        async for event in model.events(done):
            if isinstance(event, ToolCallRequest):
                tool = registry.get(event.call.name)
                assert tool is not None
                await tool.execute(json.loads(event.call.arguments))


async def in_process(sizes: BenchSizes) -> Row:
    """Per-step overhead of ToolLoop.run, batches of turns timed together."""
    batch = sizes.pick(50, 200)
    repeats = sizes.pick(5, 15)
    model = InstantModel()
    registry = ToolRegistry(TOOLS)
    loop = ToolLoop(model, ToolGuard(timeout_seconds=20, max_chars=50_000), max_steps=STEPS)
    for _ in range(20):  # warm-up
        await _loop_turn(loop, registry)
        await _bare_turn(model, registry)
    loop_ms: list[float] = []
    bare_ms: list[float] = []
    for _ in range(repeats):
        watch = Stopwatch()
        for _ in range(batch):
            await _loop_turn(loop, registry)
        loop_ms.append(watch.ms / batch)
        watch = Stopwatch()
        for _ in range(batch):
            await _bare_turn(model, registry)
        bare_ms.append(watch.ms / batch)
    per_step = Spread.of([(lm - bm) / STEPS for lm, bm in zip(loop_ms, bare_ms, strict=True)])
    return Row(
        bench="tool_loop",
        metric=f"in process: overhead per step ({STEPS}-step turn, {TOOL_COUNT} tools)",
        unit="ms",
        figure=per_step,
        baseline=Spread.of([b / STEPS for b in bare_ms]),
        baseline_label="bare model events + tool calls, per step",
        target=f"≤ {TARGET_MS:g} ms",
        met=per_step.median <= TARGET_MS,
        note=f"whole turn {Spread.of(loop_ms).median:.2f} ms in the loop",
    )


def _direct_body(tool_results: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(tool_results):
        messages.append({"role": "assistant", "content": "", "tool_calls": []})
        messages.append({"role": "tool", "content": "x", "tool_call_id": f"c{i}"})
    return {"model": "bench", "stream": True, "messages": messages}


async def _direct_steps(http: httpx.AsyncClient, model: ModelProcess) -> float:
    """Milliseconds to read the five responses of one turn straight from the model."""
    watch = Stopwatch()
    for done in range(STEPS):
        url = f"{model.base_url}/chat/completions"
        async with http.stream("POST", url, json=_direct_body(done)) as response:
            async for _ in response.aiter_lines():
                pass
    return watch.ms


async def through_runtime(sizes: BenchSizes) -> Row:
    """Per-step overhead of a real five-step turn over the WebSocket."""
    repeats = sizes.pick(5, 20)
    overhead: list[float] = []
    baselines: list[float] = []
    turns: list[float] = []
    with (
        ModelProcess(policy="tools", steps=STEPS) as model,
        state_dir("tools") as state,
        running_runtime(state, runtime_vars(model.base_url)) as runtime,
    ):
        async with (
            httpx.AsyncClient(timeout=30) as http,
            ChatClient(runtime.url, runtime.ws_url) as client,
        ):
            await client.connect()
            for index in range(repeats + 2):
                thread = await client.new_thread()
                direct_ms = await _direct_steps(http, model)
                watch = Stopwatch()
                frames = await client.turn(thread, "Look it up four times.")
                turn_ms = watch.ms
                done = frames[-1]
                results = [f for f in frames if f["type"] == "tool_result"]
                if done["steps"] != STEPS or len(results) != STEPS - 1:
                    raise RuntimeError(f"unexpected turn: {done}, {len(results)} tool results")
                if results[0]["name"] != INSTANT_TOOL:
                    raise RuntimeError(f"unexpected tool {results[0]['name']}")
                if index < 2:
                    continue
                tools_ms = sum(float(f["duration_ms"]) for f in results)
                turns.append(turn_ms)
                baselines.append((direct_ms + tools_ms) / STEPS)
                overhead.append((turn_ms - direct_ms - tools_ms) / STEPS)
    figure = Spread.of(overhead)
    return Row(
        bench="tool_loop",
        metric=f"through the runtime: overhead per step ({STEPS}-step turn over WebSocket)",
        unit="ms",
        figure=figure,
        baseline=Spread.of(baselines),
        baseline_label="direct model read + tool time, per step",
        target=f"≤ {TARGET_MS:g} ms",
        met=figure.median <= TARGET_MS,
        note=f"whole turn {Spread.of(turns).median:.1f} ms",
    )


async def run(sizes: BenchSizes) -> list[Row]:
    """Both measurements."""
    return [await in_process(sizes), await through_runtime(sizes)]
