"""A thread exported as Markdown and as JSON: everything stored, in order, as a download."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from albert.agent import build_chat_service
from albert.web import HttpRequest
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.support.sockets import RecordingSockets

install_shims()


async def test_a_thread_exports_as_markdown_and_json(tmp_path: Path) -> None:
    sockets = RecordingSockets()
    with ScriptedModelServer() as model:
        async with httpx.AsyncClient() as http:
            service = build_chat_service(
                sql=object_sql(tmp_path / "o.sqlite"),
                hub=sockets,
                env={"MODEL_BASE_URL": model.base_url},
                http=http,
            )
            thread = service.store.create_thread("t_exp", "Yields on Base: ```x```").id
            model.script(
                Reply(tool_calls=[ScriptedToolCall(name="read_tool_result", arguments={})]),
                Reply(text=["| Vault | APY |\n| --- | ---: |\n| A | 4.2% |"]),
            )
            frame = {"type": "chat", "thread_id": thread, "message_id": "m1", "text": "Best?"}
            await service.handle_frame(sockets, json.dumps(frame))

            async def export(fmt: str) -> tuple[int, dict[str, str], bytes]:
                answer = await service.handle_http(
                    HttpRequest(
                        method="GET",
                        path=f"/api/threads/{thread}/export",
                        query={"format": fmt},
                    )
                )
                return answer.status, answer.headers, answer.body

            status, headers, body = await export("markdown")
            assert status == 200 and headers["content-type"].startswith("text/markdown")
            assert headers["content-disposition"] == ('attachment; filename="yields-on-base-x.md"')
            text = body.decode()
            assert text.startswith("# Yields on Base: ```x```\n\n## You\n\nBest?\n")
            assert "*Tool call `read_tool_result`:*" in text
            assert "*Result of `read_tool_result` (failed):*" in text
            assert text.rstrip().endswith("| A | 4.2% |")

            status, headers, body = await export("json")
            exported = json.loads(body)
            assert status == 200 and headers["content-type"] == "application/json"
            assert exported["thread"]["id"] == thread
            roles = [m["role"] for m in exported["messages"]]
            assert roles == ["user", "assistant", "tool", "assistant"]

            bad, _, _ = await export("pdf")
            assert bad == 422
            missing = await service.handle_http(
                HttpRequest(method="GET", path="/api/threads/t_nope/export")
            )
            assert missing.status == 404
