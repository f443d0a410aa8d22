"""A test client for the worker: session, thread HTTP API and the chat WebSocket."""

from __future__ import annotations

import asyncio
import json
import ssl
import uuid
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection, connect

_TLS: ssl.SSLContext | None = None


def _shared_tls() -> ssl.SSLContext:
    # httpx loads the CA bundle for every client it builds (~0.8 MiB); a benchmark runs
    # a thousand clients at once.
    global _TLS
    if _TLS is None:
        _TLS = httpx.create_ssl_context()
    return _TLS


class ChatClient:
    """One browser-like client of the worker."""

    def __init__(
        self, base_url: str, ws_url: str, token: str | None = None, tenant: str | None = None
    ) -> None:
        self.base_url = base_url
        self.ws_url = ws_url
        self.token = token
        self.tenant = tenant
        self.client_id: str | None = None
        # A kept-alive connection is given up before the servers' own 5 s idle close
        # (KEEP_ALIVE_SECONDS), so a request never goes out on one the server is closing.
        self.http = httpx.AsyncClient(
            base_url=base_url,
            timeout=10,
            verify=_shared_tls(),
            limits=httpx.Limits(keepalive_expiry=2.0),
        )
        self.ws: ClientConnection | None = None
        self.status_frames: list[dict[str, Any]] = []

    async def __aenter__(self) -> ChatClient:
        if self.token is None:
            body = {"tenant": self.tenant} if self.tenant else {}
            response = await self.http.post("/api/session", json=body)
            response.raise_for_status()
            self.token = response.json()["token"]
        self.http.headers["authorization"] = f"Bearer {self.token}"
        me = await self.http.get("/api/me")
        me.raise_for_status()
        self.client_id = me.json()["client_id"]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.ws is not None:
            await self.ws.close()
        await self.http.aclose()

    async def connect(self) -> ClientConnection:
        self.ws = await connect(f"{self.ws_url}/api/chat?token={self.token}", open_timeout=10)
        return self.ws

    async def new_thread(self, title: str | None = None) -> str:
        response = await self.http.post("/api/threads", json={"title": title} if title else {})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    async def thread(self, thread_id: str, **params: Any) -> dict[str, Any]:
        response = await self.http.get(f"/api/threads/{thread_id}", params=params)
        assert response.status_code == 200, response.text
        return dict(response.json())

    async def send_raw(self, raw: str | bytes) -> None:
        assert self.ws is not None
        await self.ws.send(raw)

    async def ask(self, thread_id: str, text: str, message_id: str | None = None) -> str:
        message_id = message_id or uuid.uuid4().hex
        await self.send_raw(
            json.dumps(
                {"type": "chat", "thread_id": thread_id, "message_id": message_id, "text": text}
            )
        )
        return message_id

    async def next_frame(
        self, timeout: float = 10.0, include_status: bool = False
    ) -> dict[str, Any]:
        """The next frame; MCP status frames (pushed on connect and on changes) are set
        aside in `status_frames` unless asked for."""
        assert self.ws is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        for _ in range(10_000):
            raw = await asyncio.wait_for(self.ws.recv(), max(0.0, deadline - loop.time()))
            frame = dict(json.loads(raw))
            if frame["type"] == "mcp_status" and not include_status:
                self.status_frames.append(frame)
                continue
            return frame
        raise AssertionError("only status frames arrived")

    async def frames_until(
        self, kind: str, timeout: float = 20.0, turn_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Collect frames until one of `kind` (for `turn_id`, if given) arrives."""
        frames: list[dict[str, Any]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        for _ in range(100_000):
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            frame = await self.next_frame(remaining, include_status=kind == "mcp_status")
            frames.append(frame)
            if frame["type"] == kind and (turn_id is None or frame.get("turn_id") == turn_id):
                return frames
        raise AssertionError(f"no {kind} frame within {timeout}s; got {frames[-5:]}")

    async def turn(
        self, thread_id: str, text: str, message_id: str | None = None
    ) -> list[dict[str, Any]]:
        """Ask and collect the whole turn up to its done frame."""
        turn_id = await self.ask(thread_id, text, message_id)
        return await self.frames_until("done", turn_id=turn_id)


def answer_text(frames: list[dict[str, Any]]) -> str:
    """The streamed answer text of a turn's frames."""
    return "".join(f["delta"] for f in frames if f["type"] == "text_delta")
