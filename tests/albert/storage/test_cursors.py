"""Cursors: only what the store made decodes; everything else is one InvalidCursor."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert.storage.threads import InvalidCursor, MessageCursor, ThreadCursor, decode_cursor

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


def test_cursors_round_trip() -> None:
    cursor = ThreadCursor(updated_at=1_700_000_000_000, thread_id="t_abc")
    assert decode_cursor(cursor.encode(), ThreadCursor) == cursor
    assert decode_cursor(MessageCursor(seq=42).encode(), MessageCursor).seq == 42


@settings(max_examples=400, deadline=None)
@given(JSON)
def test_any_json_is_a_cursor_or_invalid(value: object) -> None:
    raw = json.dumps(value).encode()
    text = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    for model in (ThreadCursor, MessageCursor):
        try:
            decoded = decode_cursor(text, model)
        except InvalidCursor as exc:
            assert str(exc) == "invalid cursor"
        else:
            assert isinstance(decoded, model)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300) | st.binary(max_size=200).map(lambda b: b.decode("latin-1")))
def test_any_text_is_a_cursor_or_invalid(text: str) -> None:
    for model in (ThreadCursor, MessageCursor):
        try:
            decode_cursor(text, model)
        except InvalidCursor:
            pass


@pytest.mark.parametrize("value", [[True], [1.0], [-1], [2**63], ["1"], [None]])
def test_message_seq_must_be_a_plain_non_negative_integer(value: list) -> None:
    text = base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
    with pytest.raises(InvalidCursor):
        decode_cursor(text, MessageCursor)
