"""Asks one question over the worker's real WebSocket and records the turn."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

from albert.chat.history import stored_result
from demo_planner.leads import CARD_KINDS
from evals.scorer import ToolCallRecord, ToolResultRecord, TurnRecord

MAX_FRAMES_PER_TURN = 20_000
# A message refused by the per-client rate limit is sent again this often, after the
# wait the refusal names (capped), so a burst of follow-up turns is not scored as failures.
MAX_RATE_LIMIT_RETRIES = 5
MAX_RATE_LIMIT_WAIT_S = 10.0


def card_of(frame: dict[str, Any]) -> str | None:
    """The card the chat draws of a tool_result frame (web/js/cards.js), if any: a result
    with structured content, of a tool the chat has a card for."""
    if not frame.get("ok") or not isinstance(frame.get("structured"), dict):
        return None
    return CARD_KINDS.get(str(frame.get("name")))


class EvalClient:
    """One browser-like client: a session, a socket, a thread per case."""

    def __init__(self, base_url: str, *, turn_timeout: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.ws_url = "ws" + self.base_url.removeprefix("http")
        self.turn_timeout = turn_timeout
        self.http = httpx.AsyncClient(base_url=self.base_url, timeout=15)
        self.ws: ClientConnection | None = None
        self.client_id = ""

    async def __aenter__(self) -> EvalClient:
        response = await self.http.post("/api/session", json={})
        response.raise_for_status()
        session = response.json()
        # A signed session token where the worker issues one, else the bare client id.
        if session.get("token"):
            self.http.headers["authorization"] = f"Bearer {session['token']}"
            query = f"token={session['token']}"
        else:
            self.client_id = str(session["client_id"])
            self.http.headers["x-albert-client"] = self.client_id
            query = f"client_id={self.client_id}"
        self.ws = await connect(f"{self.ws_url}/api/chat?{query}", open_timeout=15, max_size=2**24)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        await self.http.aclose()

    async def ask(self, question: str, before: Sequence[str] = ()) -> TurnRecord:
        """Ask in a fresh thread, after the earlier turns `before` (each waited to its end);
        record the last turn only, its tool results read back in full."""
        assert self.ws is not None
        response = await self.http.post("/api/threads", json={})
        response.raise_for_status()
        thread_id = str(response.json()["id"])
        for index, earlier in enumerate(before, start=1):
            # An earlier turn is context, not scored; but if it never finished, the last
            # question would be asked into a busy or broken thread, so the case fails here.
            setup = await self._turn(thread_id, uuid.uuid4().hex, TurnRecord(question=earlier))
            if setup.error or setup.finish_reason is None:
                return TurnRecord(
                    question=question,
                    before=list(before),
                    error=f"earlier turn {index} ({earlier!r}): {setup.error or 'no done frame'}",
                )
        turn_id = uuid.uuid4().hex
        record = await self._turn(thread_id, turn_id, TurnRecord(question=question))
        record.before = list(before)
        await self._full_results(thread_id, turn_id, record)
        return record

    async def _turn(self, thread_id: str, turn_id: str, record: TurnRecord) -> TurnRecord:
        """Send one message and collect its frames up to `done` (or an error, or the timeout)."""
        assert self.ws is not None
        started = await self._send(thread_id, turn_id, record.question)
        retries = MAX_RATE_LIMIT_RETRIES
        answer: list[str] = []
        try:
            async with asyncio.timeout(self.turn_timeout):
                for _ in range(MAX_FRAMES_PER_TURN):
                    frame = json.loads(await self.ws.recv())
                    kind, tid = frame.get("type"), frame.get("turn_id")
                    if kind == "error" and tid in (turn_id, None):
                        if frame.get("thread_id") not in (thread_id, None):
                            continue
                        wait = frame.get("retry_after_seconds")
                        if frame.get("code") == "rate_limited" and wait is not None and retries:
                            # A follow-up case sends several messages per thread, so a client
                            # can outrun the per-client message rate; the refused message was
                            # not taken, and is sent again once the limit allows, as a user
                            # would. The wait is not counted in the turn's latency.
                            retries -= 1
                            await asyncio.sleep(min(float(wait), MAX_RATE_LIMIT_WAIT_S))
                            started = await self._send(thread_id, turn_id, record.question)
                            continue
                        record.error = f"{frame['code']}: {frame['message']}"
                        break
                    if tid != turn_id:
                        continue
                    if kind == "text_delta":
                        answer.append(frame["delta"])
                    elif kind == "tool_call":
                        record.calls.append(
                            ToolCallRecord(
                                call_id=frame["call_id"],
                                name=frame["name"],
                                arguments=frame["arguments"],
                            )
                        )
                    elif kind == "tool_result":
                        record.results.append(
                            ToolResultRecord(
                                call_id=frame["call_id"],
                                name=frame["name"],
                                ok=frame["ok"],
                                truncated=frame["truncated"],
                                content=frame["content"],
                                card=card_of(frame),
                            )
                        )
                    elif kind == "done":
                        record.finish_reason = frame["finish_reason"]
                        record.steps = frame["steps"]
                        break
        except TimeoutError:
            record.error = f"no done frame within {self.turn_timeout:g} s"
        record.latency_s = round(time.monotonic() - started, 3)
        record.answer = "".join(answer)
        return record

    async def _send(self, thread_id: str, turn_id: str, text: str) -> float:
        """Send one chat message; returns when it was sent (monotonic seconds)."""
        assert self.ws is not None
        message = {"type": "chat", "thread_id": thread_id, "message_id": turn_id, "text": text}
        started = time.monotonic()
        await self.ws.send(json.dumps(message))
        return started

    async def _full_results(self, thread_id: str, turn_id: str, record: TurnRecord) -> None:
        """Replace the frames' 4,000-character previews with the stored tool results."""
        response = await self.http.get(f"/api/threads/{thread_id}", params={"limit": 200})
        if response.status_code != 200:
            return
        stored: dict[str, Any] = {
            m.get("tool_call_id") or "": m
            for m in response.json().get("messages", [])
            if m.get("role") == "tool" and m.get("turn_id") == turn_id
        }
        for result in record.results:
            message = stored.get(result.call_id)
            if message is not None:
                # What the model was shown: the stored text, and our cut note after it.
                shown = stored_result(str(message.get("content", "")), message.get("meta") or {})
                result.content = shown.preface + shown.shown_text() + shown.cut_note()
