"""Sockets held over time on both runtimes: a chat socket lives as long as its client keeps
it, with turns flowing the whole while (a short happy-path test once hid a socket that every
server closed 30 s after it opened)."""

from __future__ import annotations

import asyncio

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
                unanswered.append(f"{frames[-1]['finish_reason']} {errors}")
            next_at = started + asked * ASK_EVERY_SECONDS
            if next_at - started > HELD_SECONDS:
                break
            await asyncio.sleep(max(0.0, next_at - loop.time()))
        await asyncio.sleep(max(0.0, started + HELD_SECONDS - loop.time()))
        # Still the same socket, still open: a ping comes back.
        await asyncio.wait_for(await ws.ping(), 10)
    return asked, answered


async def test_twenty_sockets_held_past_a_minute_answer_every_question(
    runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    started = asyncio.get_running_loop().time()
    unanswered: list[str] = []
    results = await asyncio.wait_for(
        asyncio.gather(*(_hold_and_ask(runtime, started, unanswered) for _ in range(CLIENTS))),
        HELD_SECONDS + 60,
    )
    asked = sum(a for a, _ in results)
    answered = sum(b for _, b in results)
    assert asked == CLIENTS * (int(HELD_SECONDS / ASK_EVERY_SECONDS) + 1)
    assert answered == asked, unanswered
