"""`answer_message`: the message (or the error) the transport's `validate_json` gives."""

from __future__ import annotations

import json
from typing import Any

import mcp_types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from albert.mcp.call_fast_path import answer_message

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
IDS = (
    st.integers(min_value=-(2**64), max_value=2**64)
    | st.text(max_size=8)
    | st.booleans()
    | st.none()
    | st.floats(allow_nan=False)
)
ENVELOPES = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2]), "id": IDS},
    optional={
        "result": JSON_VALUES,
        "error": st.fixed_dictionaries(
            {"code": st.integers(-40000, 0), "message": st.text(max_size=8)}
        ),
        "method": st.sampled_from(["tools/call", "notifications/progress"]),
        "params": st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3),
        "extra": JSON_VALUES,
    },
)


def _outcome(data: bytes, parse: Any) -> tuple[str, Any]:
    try:
        message = parse(data)
    except ValidationError as exc:
        return "error", str(exc)
    # repr: NaN compares unequal to itself, and 1 == 1.0 == True would hide a type change.
    return type(message).__name__, repr(message.model_dump(mode="python", by_alias=True))


def _sdk(data: bytes) -> Any:
    return mcp_types.jsonrpc_message_adapter.validate_json(data, by_name=False)


@settings(max_examples=300, deadline=None)
@given(ENVELOPES)
def test_any_envelope_gives_the_sdk_message(envelope: dict[str, Any]) -> None:
    data = json.dumps(envelope).encode()
    assert _outcome(data, answer_message) == _outcome(data, _sdk)


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc":"2.0","id":1,"result":{"a":1},"result":{"b":[1.5,null,"\\u00e9"]}}',
        b'{"jsonrpc":"2.0","id":"7","result":{"x":NaN,"y":Infinity}}',
        b'{"jsonrpc":"2.0","id":1,"result":{"big":123456789012345678901234567890}}',
        b'{"jsonrpc":"2.0","id":1.0,"result":{}}',
        b'{"jsonrpc":"2.0","id":1,"result":{}',
        b"",
        b"[]",
        b'{"jsonrpc":"2.0","id":1,"result":{"s":"\\ud800"}}',
        '{"jsonrpc":"2.0","id":1,"result":{"s":"é ✓"}}'.encode(),
    ],
)
def test_edge_bodies_give_the_sdk_message_or_error(data: bytes) -> None:
    assert _outcome(data, answer_message) == _outcome(data, _sdk)


def test_the_result_values_have_the_types_the_sdk_gives() -> None:
    data = b'{"jsonrpc":"2.0","id":3,"result":{"a":[1,2.0,"x",true,null,{"b":-0.0}]}}'
    ours, sdk = answer_message(data).result, _sdk(data).result
    assert repr(ours) == repr(sdk)
