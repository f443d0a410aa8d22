"""SSE parsing per the event-stream rules."""

from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert.ai.sse import parse_sse, parse_sse_bytes


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


# --- the raw-body parser gives what the line parser gives ---------------------------------


async def _chunks(body: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    last = 0
    for cut in sorted(set(cuts)):
        yield body[last:cut]
        last = cut
    yield body[last:]


async def _parse_bytes(body: bytes, cuts: list[int]) -> list[tuple[str, str]]:
    return [(e.event, e.data) async for e in parse_sse_bytes(_chunks(body, cuts))]


def _lines_of(body: bytes) -> list[str]:
    # What a line reader yields: every complete line, split at CRLF, LF or CR.
    text = body.decode("utf-8", "replace")
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1]  # the part after the last line break is not a complete line


BODIES = [
    b'data: {"a": 1}\n\ndata: [DONE]\n\n',
    b"data: one\r\ndata:two\r\n\r\nevent: x\rdata: y\r\r: comment\n\ndata: tail",
    "data: é 中文 🚀\n\n".encode() * 3,
    b"data:\n\ndata: \n\n\n\nevent: only\n\ndata: a\ndata: b\n\n",
]


@pytest.mark.parametrize("body", BODIES)
async def test_raw_body_parser_matches_the_line_parser_at_every_cut(body: bytes) -> None:
    expected = await _parse(*_lines_of(body))
    for cut in range(len(body) + 1):
        assert await _parse_bytes(body, [cut]) == expected, cut
    assert await _parse_bytes(body, list(range(len(body)))) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["data", "event", "", "id", ": c"]),
            st.text(
                alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)),
                max_size=12,
            ),
            st.sampled_from(["\n", "\r\n", "\r"]),
        ),
        max_size=25,
    ),
    st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
async def test_raw_body_parser_matches_for_any_stream_and_chunking(
    parts: list[tuple[str, str, str]], cuts: list[int]
) -> None:
    body = "".join(
        (f"{field}: {value}" if field else "") + ending for field, value, ending in parts
    ).encode()
    cuts = [c for c in cuts if c <= len(body)]
    assert await _parse_bytes(body, cuts) == await _parse(*_lines_of(body))
