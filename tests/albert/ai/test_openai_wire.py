"""Decoding of streamed chat-completion chunks."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from albert.ai.model import ModelError
from albert.ai.openai_wire import (
    MAX_REF_DEPTH,
    StreamedStep,
    decode_chunk,
    inline_refs,
    tool_payload,
)
from albert.tools.base import ToolSpec

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(), json_values, max_size=5), st.booleans())
def test_a_chunk_decodes_as_json_loads_does(payload: dict, ascii_only: bool) -> None:
    data = json.dumps(payload, ensure_ascii=ascii_only)
    assert decode_chunk(data, "the model") == json.loads(data)


def test_a_surrogate_pair_split_between_chunks_is_still_decoded() -> None:
    # Some gateways cut an emoji's UTF-16 pair in two; json.loads takes each half.
    first = decode_chunk('{"choices":[{"delta":{"content":"\\ud83d"}}]}', "the model")
    second = decode_chunk('{"choices":[{"delta":{"content":"\\ude00"}}]}', "the model")
    text = first["choices"][0]["delta"]["content"] + second["choices"][0]["delta"]["content"]
    assert text.encode("utf-16", "surrogatepass").decode("utf-16") == "😀"


@pytest.mark.parametrize("data", ['{"a":1}x', "{'a': 1}", "[1,]", '{"a":"x\ty"}', ""])
def test_malformed_chunks_are_bad_responses(data: str) -> None:
    with pytest.raises(ModelError, match="malformed stream chunk") as caught:
        decode_chunk(data, "the model")
    assert caught.value.kind == "bad_response"


def test_a_chunk_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(ModelError, match="not an object"):
        decode_chunk("[1, 2]", "the model")


CHUNKS = [
    {"choices": [{"index": 0, "delta": {"content": "Hel"}}]},
    {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
    {"choices": [{"index": 0, "delta": {"content": None}, "finish_reason": None}]},
    {"choices": [], "usage": {"prompt_tokens": 3}},
    {"choices": None},
    {},
    {"choices": [{"delta": {"content": "a"}}, {"delta": {"content": "b"}}]},
    {"choices": [{"delta": {"content": 7}}]},
    {"choices": [{"delta": {}, "finish_reason": "stop"}]},
    {
        "choices": [
            {
                "delta": {
                    "content": "x",
                    "tool_calls": [
                        {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a"'}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    },
    {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}}]},
]


def test_choices_text_reads_chunks_as_read_choices_does() -> None:
    fast, reference = StreamedStep(), StreamedStep()
    for chunk in CHUNKS:
        text = fast.choices_text(chunk)
        assert text == "".join(delta.text for delta in reference.read_choices(chunk))
    assert fast.finish_reason == reference.finish_reason == "tool_calls"
    assert (
        [(c.id, c.name, c.arguments) for c in fast.calls.values()]
        == [(c.id, c.name, c.arguments) for c in reference.calls.values()]
        == [("c1", "f", ['{"a"', ":1}"])]
    )


# --- references inlined for the model -------------------------------------------------


def test_local_references_are_inlined_and_the_definitions_dropped() -> None:
    schema = {
        "type": "object",
        "properties": {
            "chain": {"$ref": "#/$defs/Chain", "description": "where"},
            "legacy": {"$ref": "#/definitions/Sort"},
            "many": {"type": "array", "items": {"$ref": "#/$defs/Chain"}},
        },
        "$defs": {"Chain": {"type": "string", "enum": ["ethereum", "base"]}},
        "definitions": {"Sort": {"type": "string"}},
    }
    original = json.dumps(schema, sort_keys=True)
    inlined = inline_refs(schema)
    assert "$ref" not in json.dumps(inlined) and "$defs" not in inlined
    assert "definitions" not in inlined
    assert inlined["properties"]["chain"] == {
        "type": "string",
        "enum": ["ethereum", "base"],
        "description": "where",
    }
    assert inlined["properties"]["many"]["items"]["enum"] == ["ethereum", "base"]
    assert json.dumps(schema, sort_keys=True) == original  # the tool's own schema kept


def test_a_recursive_definition_is_cut_at_a_bound_not_followed_forever() -> None:
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"child": {"$ref": "#/$defs/Node"}, "a": {"$ref": "#/$defs/A"}},
            },
            "A": {"$ref": "#/$defs/B"},
            "B": {"$ref": "#/$defs/A"},
        },
    }
    inlined = inline_refs(schema)
    text = json.dumps(inlined)
    assert "$ref" not in text and len(text) < 200_000
    depth, node = 0, inlined["properties"]["node"]
    while "child" in node.get("properties", {}):
        node, depth = node["properties"]["child"], depth + 1
    assert depth == MAX_REF_DEPTH and node == {"type": "object"}


def test_a_reference_to_nothing_local_is_left_and_schemas_without_any_are_the_same_object() -> None:
    remote = {"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}}
    assert inline_refs(remote) == remote
    plain = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert inline_refs(plain) is plain


def test_a_definition_referring_to_itself_many_times_stays_small() -> None:
    children = {f"c{i}": {"$ref": "#/$defs/N"} for i in range(6)}
    schema = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/N"}},
        "$defs": {"N": {"type": "object", "properties": children}},
    }
    text = json.dumps(inline_refs(schema))
    assert "$ref" not in text and len(text) < 100_000  # 6 ** 8 expansions otherwise


def test_a_tool_entry_is_made_once_per_spec_and_each_spec_gets_its_own() -> None:
    schema = {
        "type": "object",
        "properties": {"chain": {"$ref": "#/$defs/Chain"}},
        "$defs": {"Chain": {"type": "string"}},
    }
    spec = ToolSpec(name="t", description="d", parameters=schema)
    entry = tool_payload(spec)
    assert entry == {
        "type": "function",
        "function": {
            "name": "t",
            "description": "d",
            "parameters": {"type": "object", "properties": {"chain": {"type": "string"}}},
        },
    }
    assert tool_payload(spec) is entry
    other = ToolSpec(name="u", description="e", parameters={"type": "object"})
    assert tool_payload(other)["function"] == {
        "name": "u",
        "description": "e",
        "parameters": {"type": "object"},
    }
    assert tool_payload(spec) is entry
