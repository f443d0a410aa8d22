"""The compact output schema accepts exactly what pydantic's schema accepts, for every tool."""

from __future__ import annotations

import random
from typing import Any, Literal

import pytest
from jsonschema.validators import validator_for
from pydantic import BaseModel, Field
from referencing import Registry

from data_server.mcp_server.output_schema import compact, output_schema
from data_server.mcp_server.server import _SPECS

OUTPUT_MODELS = {name: out for name, _, _, out, _ in _SPECS}


def validator(schema: dict[str, Any]) -> Any:
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=Registry())


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = {
            **root["$defs"][node["$ref"].split("/")[-1]],
            **{k: v for k, v in node.items() if k != "$ref"},
        }
    return node


def instance(node: Any, root: dict[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value shaped by `node`, wrong about one time in twelve (type, null, missing keys)."""
    if rng.random() < 1 / 12 or depth > 8:
        return rng.choice([None, "x", 1, 2.5, True, [], {}])
    node = _resolve(node, root)
    if "anyOf" in node:
        return instance(rng.choice(node["anyOf"]), root, rng, depth + 1)
    if "allOf" in node:
        return instance(node["allOf"][0], root, rng, depth + 1)
    if "enum" in node:
        return rng.choice(node["enum"])
    if "const" in node:
        return node["const"]
    kind = node.get("type")
    if isinstance(kind, list):
        kind = rng.choice(kind)
    if kind == "object" or "properties" in node:
        props = node.get("properties", {})
        out = {
            key: instance(sub, root, rng, depth + 1)
            for key, sub in props.items()
            if key in node.get("required", []) or rng.random() < 0.7
        }
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for i in range(rng.randint(0, 3)):
                out[f"k{i}"] = instance(extra, root, rng, depth + 1)
        return out
    if kind == "array":
        return [
            instance(node.get("items", {}), root, rng, depth + 1) for _ in range(rng.randint(0, 3))
        ]
    if kind == "string":
        return rng.choice(["", "usdc", "0xabc"])
    if kind == "integer":
        return rng.choice([0, 3, -1, 10**6])
    if kind == "number":
        return rng.choice([0, 1.5, -2.25, 1e9])
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    return rng.choice([None, "x", 1])


@pytest.mark.parametrize("tool", sorted(OUTPUT_MODELS))
def test_compact_schema_accepts_exactly_what_the_model_schema_accepts(tool: str) -> None:
    original = OUTPUT_MODELS[tool].model_json_schema()
    compacted = output_schema(OUTPUT_MODELS[tool])
    assert compacted["type"] == "object"
    slow, fast = validator(original), validator(compacted)
    rng = random.Random(tool)
    verdicts = []
    for _ in range(200):
        value = instance(original, original, rng)
        verdict = slow.is_valid(value)
        assert fast.is_valid(value) == verdict, value
        verdicts.append(verdict)
    # The generator must exercise both sides, or the comparison proves nothing.
    assert any(verdicts) and not all(verdicts)


class _Inner(BaseModel):
    name: str
    level: Literal["low", "high"] | None = None


class _Node(BaseModel):
    value: int
    children: list[_Node] = Field(default_factory=list)


class _Outer(BaseModel):
    score: float | None = Field(None, ge=0, le=100, description="0–100")
    inner: _Inner | None = None
    inners: list[_Inner] = Field(default_factory=list)
    tree: _Node | None = None
    kind: Literal["a"] | None = None


def test_nullable_fields_become_type_lists_and_refs_are_inlined() -> None:
    schema = compact(_Outer.model_json_schema())
    props = schema["properties"]
    assert props["score"] == {
        "default": None,
        "description": "0–100",
        "maximum": 100,
        "minimum": 0,
        "title": "Score",
        "type": ["number", "null"],
    }
    assert props["inner"]["type"] == ["object", "null"]
    assert props["inner"]["properties"]["level"]["enum"] == ["low", "high", None]
    assert props["inners"]["items"]["properties"]["name"] == {"title": "Name", "type": "string"}
    assert props["kind"]["enum"] == ["a", None]
    # A recursive model cannot be inlined: it stays a reference into $defs.
    assert set(schema["$defs"]) == {"_Node"}
    assert "$ref" in str(props["tree"])


def test_recursive_and_nullable_values_validate_the_same() -> None:
    original = _Outer.model_json_schema()
    slow, fast = validator(original), validator(compact(original))
    cases: list[Any] = [
        {},
        {"score": None, "inner": None, "kind": None},
        {"score": 101},
        {"score": "1"},
        {"inner": {"name": "n", "level": None}},
        {"inner": {"name": "n", "level": "mid"}},
        {"inner": {"level": "low"}},
        {"kind": "b"},
        {"tree": {"value": 1, "children": [{"value": 2, "children": [{"value": "x"}]}]}},
        {"tree": {"value": 1, "children": [{"value": 2}]}},
        {"inners": [{"name": "a"}, {"name": None}]},
    ]
    for case in cases:
        assert fast.is_valid(case) == slow.is_valid(case), case
