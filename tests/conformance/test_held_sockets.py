"""Sockets held over time on both runtimes: a chat socket lives as long as its client keeps
it, with turns flowing the whole while (a short happy-path test once hid a socket that every
server closed 30 s after it opened). Both runtimes are held at once, in one test: the hold
is what takes the time, and two in a row would double it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.conformance.conftest import RUNTIMES
from tests.support.asgi_server import AsgiServer
from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import ScriptedModelServer

CLIENTS = 20
HELD_SECONDS = 75.0
ASK_EVERY_SECONDS = 10.0


async def _hold_and_ask(
    runtime: RuntimeProcess, started: float, unanswered: list[str]
) -> tuple[int, int]:
    """One client on one socket, asking every ASK_EVERY_SECONDS until HELD_SECONDS have
    passed; (questions asked, questions answered). Any socket closed early raises; how a
    question went unanswered is added to `unanswered`."""
    loop = asyncio.get_running_loop()
    asked = answered = 0
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        ws = await client.connect()
        thread = await client.new_thread()
        for _ in range(int(HELD_SECONDS / ASK_EVERY_SECONDS) + 1):
            asked += 1
            frames = await client.turn(thread, f"question {asked}")
            if frames[-1]["finish_reason"] == "stop" and answer_text(frames):
                answered += 1
            else:
                errors = [
                    f"{f.get('code')}: {f.get('message')}" for f in frames if f["type"] == "error"
                ]
                unanswered.append(f"{runtime.runtime}: {frames[-1]['finish_reason']} {errors}")
            next_at = started + asked * ASK_EVERY_SECONDS
            if next_at - started > HELD_SECONDS:
                break
            await asyncio.sleep(max(0.0, next_at - loop.time()))
        await asyncio.sleep(max(0.0, started + HELD_SECONDS - loop.time()))
        # Still the same socket, still open: a ping comes back.
        await asyncio.wait_for(await ws.ping(), 10)
    return asked, answered


@pytest.fixture(scope="module")
def runtimes(
    tmp_path_factory: pytest.TempPathFactory, model: ScriptedModelServer, platform: AsgiServer
) -> Iterator[dict[str, RuntimeProcess]]:
    """Both runtimes at once, on the one scripted model."""
    with ExitStack() as stack:
        started = {}
        for kind in RUNTIMES:
            state: Path = tmp_path_factory.mktemp(f"held-{kind}")
            variables = {
                "ALBERT_MODE": "local",
                "MODEL_BASE_URL": model.base_url,
                "PLATFORM_API_URL": platform.url,
            }
            started[kind] = stack.enter_context(RuntimeProcess(state, variables, runtime=kind))
        yield started


async def test_twenty_sockets_on_each_runtime_held_past_a_minute_answer_every_question(
    runtimes: dict[str, RuntimeProcess],
) -> None:
    started = asyncio.get_running_loop().time()
    unanswered: list[str] = []
    holders = [
        _hold_and_ask(runtime, started, unanswered)
        for runtime in runtimes.values()
        for _ in range(CLIENTS)
    ]
    results = await asyncio.wait_for(asyncio.gather(*holders), HELD_SECONDS + 60)
    asked = sum(a for a, _ in results)
    answered = sum(b for _, b in results)
    assert asked == len(runtimes) * CLIENTS * (int(HELD_SECONDS / ASK_EVERY_SECONDS) + 1)
    assert answered == asked, unanswered
