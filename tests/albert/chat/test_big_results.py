"""A 2 MB tool result: the answer still arrives, the model pages what is kept with read_tool_result.

The chat service runs in-process on a real SQLite file, against the scripted model server
over real HTTP/SSE; the socket is the port's simplest adapter, a list of frames.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from pydantic import Field

from albert.composition import build_chat_service
from albert.storage.threads import MAX_STORED_OUTPUT_CHARS, kept_output
from albert.tools.base import LocalTool, ToolInput, ToolResult
from miniflare import install_shims
from tests.support.object_sql import object_sql
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall
from tests.support.sockets import RecordingSockets

install_shims()

TWO_MB = "".join(f"{i:07d}," for i in range(262_144))  # 2,097,152 characters, all distinct


class _NoArgs(ToolInput):
    scope: str = Field("all", description="unused")


async def _dump(_: _NoArgs) -> ToolResult:
    return ToolResult.text(TWO_MB)


def database_bytes(folder: Path) -> int:
    """The object's SQLite file with its WAL."""
    return sum(p.stat().st_size for p in folder.glob("o.sqlite*"))


async def test_two_megabytes_are_cut_kept_to_a_bound_and_paged(tmp_path: Path) -> None:
    sockets = RecordingSockets()
    with ScriptedModelServer() as model:
        async with httpx.AsyncClient() as http:
            service = build_chat_service(
                sql=object_sql(tmp_path / "o.sqlite"),
                hub=sockets,
                env={"MODEL_BASE_URL": model.base_url, "MODEL_CONTEXT_TOKENS": "20000"},
                http=http,
                extra_tools=[LocalTool("big_dump", "a very large report", _NoArgs, _dump)],
            )
            thread = service.store.create_thread("t_big", None).id
            model.script(
                Reply(tool_calls=[ScriptedToolCall(name="big_dump")]),
                Reply(
                    tool_calls=[
                        ScriptedToolCall(
                            name="read_tool_result",
                            arguments={"call_id": "call_1_0", "offset": 50_000},
                        )
                    ]
                ),
                Reply(text=["Summarised from the first 70,000 characters."]),
            )
            frame = {"type": "chat", "thread_id": thread, "message_id": "m1", "text": "dump it"}
            await service.handle_frame(sockets, json.dumps(frame))

            done = sockets.frames[-1]
            calls = [f for f in sockets.frames if f["type"] in ("tool_call", "tool_result")]
            assert calls and all(f["server"] is None for f in calls)  # built in: no server
            assert done["type"] == "done" and done["finish_reason"] == "stop"
            second, third = model.requests[1], model.requests[2]
            first_result = second["messages"][-1]["content"]
            fence = '<untrusted source="platform tool big_dump">'
            # The cut marker and the read-on hint are Albert's, after the fence's end.
            assert first_result.startswith(
                fence + TWO_MB[:50_000] + "</untrusted>\n\n[… result cut"
            )
            assert "result cut: 50,000 of 2,097,152 characters shown" in first_result
            assert 'call read_tool_result with call_id "call_1_0" and offset 50000' in first_result
            page = third["messages"][-1]["content"]
            assert TWO_MB[50_000:70_000] in page
            kept = kept_output(TWO_MB)
            assert len(kept) < MAX_STORED_OUTPUT_CHARS + 100
            assert f"characters 50,000–70,000 of {len(kept):,}; next offset 70000" in page
            # The page is fenced too, after the header (Albert's), naming the call read.
            assert page.startswith("[call_1_0: characters 50,000–70,000")
            assert '\n<untrusted source="output of call call_1_0 read back">' in page
            assert page.endswith(TWO_MB[50_000:70_000] + "</untrusted>")
            # What is stored (and shown) is the tools' own text, without fences.
            stored = [m.content for m in service.store.history(thread) if m.role == "tool"]
            assert stored[0].startswith(TWO_MB[:50_000]) and stored[1].startswith("[call_1_0")
            assert not any("<untrusted" in text for text in stored)
            # The context budget stubbed the older, bigger result to fit the third call.
            older = next(m for m in third["messages"] if m["role"] == "tool")["content"]
            assert older.startswith("[Earlier result of big_dump")
            assert sum(len(m["content"] or "") for m in third["messages"]) < 20_000 * 4

            # What is kept ends with the head's last characters and says the rest was not.
            part, total = service.outputs.read(thread, "call_1_0", 399_990, 200_000) or ("", 0)
            assert total == len(kept)
            assert part == TWO_MB[399_990:400_000] + (
                "\n[the output was 2,097,152 characters; only the first 400,000 were kept]"
            )
    assert database_bytes(tmp_path) < 3 * 1024 * 1024
