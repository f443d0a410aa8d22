"""The tool wrapper: the cut to fit (a note of ours), timeouts, error capture, schema untouched."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import Field

from albert.tools.base import LocalTool, TextPart, ToolInput, ToolResult
from albert.tools.guard import ToolGuard


class _Args(ToolInput):
    size: int = Field(description="How many characters to return")


async def _big(args: _Args) -> ToolResult:
    return ToolResult.text("x" * args.size)


BIG = LocalTool("big", "returns many characters", _Args, _big)


async def test_a_200k_result_reaches_the_model_cut_to_50k_with_a_note() -> None:
    outcome = await ToolGuard(timeout_seconds=5, max_chars=50_000).run(BIG, {"size": 200_000})
    assert outcome.truncated and outcome.cut is not None and outcome.cut.total == 200_000
    # The tool's text is whole; what the model is shown of it, and our note, apart.
    assert outcome.joined_text() == "x" * 200_000
    assert outcome.shown_text() == "x" * 50_000
    assert "result cut: 50,000 of 200,000 characters shown" in outcome.cut_note()
    assert not outcome.own_words and outcome.duration_ms >= 0


async def test_small_results_pass_untouched() -> None:
    outcome = await ToolGuard(timeout_seconds=5, max_chars=50_000).run(BIG, {"size": 10})
    assert not outcome.truncated and outcome.cut_note() == ""
    assert outcome.shown_text() == "x" * 10


def test_the_cut_spans_parts_and_keeps_the_error_flag() -> None:
    result = ToolResult(content=[TextPart(text="a" * 30), TextPart(text="b" * 30)], is_error=True)
    cut = result.cut_to(40)
    assert cut.truncated and cut.is_error and cut.cut is not None and cut.cut.total == 62
    assert cut.shown_text() == "a" * 30 + "\n\n" + "b" * 8
    assert cut.content == result.content


async def test_a_slow_tool_times_out_as_an_error_result() -> None:
    async def slow(args: _Args) -> ToolResult:
        await asyncio.sleep(10)
        return ToolResult.text("never")

    tool = LocalTool("slow", "sleeps", _Args, slow)
    outcome = await ToolGuard(timeout_seconds=0.05, max_chars=1000).run(tool, {"size": 1})
    assert outcome.is_error
    assert "slow timed out" in outcome.joined_text()


async def test_a_raising_tool_becomes_a_short_error() -> None:
    async def boom(args: _Args) -> ToolResult:
        raise KeyError("secret internal detail")

    tool = LocalTool("boom", "raises", _Args, boom)
    outcome = await ToolGuard(timeout_seconds=1, max_chars=1000).run(tool, {"size": 1})
    assert outcome.is_error
    assert outcome.joined_text() == "Error: boom failed: KeyError"


async def test_invalid_arguments_are_explained_to_the_model() -> None:
    outcome = await ToolGuard(timeout_seconds=1, max_chars=1000).run(BIG, {"size": "many"})
    assert outcome.is_error
    assert "size" in outcome.joined_text()
    outcome = await ToolGuard(timeout_seconds=1, max_chars=1000).run(BIG, {"size": 1, "x": 2})
    assert "x: Extra inputs are not permitted" in outcome.joined_text()


def test_the_schema_is_the_prompt() -> None:
    schema: dict[str, Any] = BIG.input_schema
    assert schema["properties"]["size"]["description"] == "How many characters to return"
