"""SSE parsing per the event-stream rules."""

from collections.abc import AsyncIterator

from albert.ai.sse import parse_sse


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line


async def _parse(*lines: str) -> list[tuple[str, str]]:
    return [(e.event, e.data) async for e in parse_sse(_lines(*lines))]


async def test_events_are_split_on_blank_lines() -> None:
    assert await _parse("data: a", "", "data: b", "") == [("message", "a"), ("message", "b")]


async def test_multiline_data_comments_and_event_names() -> None:
    events = await _parse(": keep-alive", "event: delta", "data: one", "data:two", "", "")
    assert events == [("delta", "one\ntwo")]


async def test_crlf_line_endings_are_tolerated() -> None:
    assert await _parse("data: x\r\n", "\r\n") == [("message", "x")]


async def test_an_unterminated_final_event_is_dropped() -> None:
    # A stream cut before the blank line never dispatches its last event.
    assert await _parse("data: done", "", "data: partial") == [("message", "done")]
