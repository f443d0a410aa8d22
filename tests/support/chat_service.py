"""The chat service in-process, as one client's object runs it, for tests of a turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from albert.chat.service import ChatService
from albert.composition import build_chat_service
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.object_sql import object_sql
from tests.support.scripted_model import ScriptedModelServer
from tests.support.sockets import RecordingSockets


@asynccontextmanager
async def chat_service(
    sqlite: Path,
    model: ScriptedModelServer,
    server: InProcessMcpServer,
    server_name: str,
    **settings: str,
) -> AsyncIterator[tuple[ChatService, RecordingSockets]]:
    """The service on the SQLite file `sqlite`, talking to the scripted `model`, with
    `server` as its default MCP server (connecting in the background) and `settings` on
    top of that env; closed on exit. Call `miniflare.install_shims()` first."""
    env = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "MCP_DEFAULT_SERVER_URL": server.url,
        "MCP_DEFAULT_SERVER_NAME": server_name,
        "MCP_CONNECT_WAIT_SECONDS": "10",
        **settings,
    }
    sockets = RecordingSockets()
    async with httpx.AsyncClient() as http:
        service = build_chat_service(sql=object_sql(sqlite), hub=sockets, env=env, http=http)
        service.start_background()
        try:
            yield service, sockets
        finally:
            await service.close()
