"""Streaming overhead: a whole turn through the runtime and a WebSocket, versus reading the
same model stream directly with httpx.

The model streams N tokens at full speed from its own process. Each repeat times one
direct read and one turn back to back, so both see the same machine load.
"""

from __future__ import annotations

import httpx

from bench.core import BenchSizes, Row, Spread, Stopwatch, ratio
from bench.model_server import ModelProcess
from bench.stack import running_runtime, runtime_vars, state_dir
from tests.support.chat_client import ChatClient, answer_text

RATIO_TARGET = 1.10
PER_TOKEN_TARGET_US = 10.0


async def direct_read(http: httpx.AsyncClient, model: ModelProcess) -> int:
    """Read one whole completion stream line by line; returns the data lines seen."""
    body = {
        "model": "bench",
        "stream": True,
        "messages": [{"role": "user", "content": "Stream please."}],
    }
    lines = 0
    async with http.stream("POST", f"{model.base_url}/chat/completions", json=body) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                lines += 1
                if line == "data: [DONE]":
                    break
    return lines


async def run(sizes: BenchSizes) -> list[Row]:
    """Turn time versus direct read time, and the added time per token."""
    tokens = sizes.pick(200, 1000)
    repeats = sizes.pick(5, 15)
    turns: list[float] = []
    directs: list[float] = []
    per_token_us: list[float] = []
    with (
        ModelProcess(policy="text", tokens=tokens) as model,
        state_dir("stream") as state,
        running_runtime(state, runtime_vars(model.base_url)) as runtime,
    ):
        async with (
            httpx.AsyncClient(timeout=30) as http,
            ChatClient(runtime.url, runtime.ws_url) as client,
        ):
            await client.connect()
            for index in range(repeats + 2):
                thread = await client.new_thread()  # same context size every time
                watch = Stopwatch()
                lines = await direct_read(http, model)
                direct_ms = watch.ms
                watch = Stopwatch()
                frames = await client.turn(thread, "Stream please.")
                turn_ms = watch.ms
                if lines < tokens or len(answer_text(frames).split()) != tokens:
                    raise RuntimeError("the stream did not arrive whole")
                if index < 2:
                    continue  # warm-up: first connections, first object wake-up
                directs.append(direct_ms)
                turns.append(turn_ms)
                per_token_us.append((turn_ms - direct_ms) * 1000 / tokens)
    turn, direct = Spread.of(turns), Spread.of(directs)
    turn_ratio = ratio(turn, direct)
    added = Spread.of(per_token_us)
    return [
        Row(
            bench="streaming",
            metric=f"turn of {tokens} tokens via runtime + WebSocket",
            unit="ms",
            figure=turn,
            baseline=direct,
            baseline_label="httpx read of the same stream",
            ratio=turn_ratio,
            target=f"≤ {RATIO_TARGET:.2f}×",
            met=turn_ratio is not None and turn_ratio <= RATIO_TARGET,
        ),
        Row(
            bench="streaming",
            metric="added time per token",
            unit="µs",
            figure=added,
            target=f"≤ {PER_TOKEN_TARGET_US:g} µs",
            met=added.median <= PER_TOKEN_TARGET_US,
        ),
    ]
