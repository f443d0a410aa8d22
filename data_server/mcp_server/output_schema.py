"""The advertised `outputSchema` of a tool: its output model's JSON Schema, in a compact form.

The `mcp` client validates every successful result against the advertised schema with the
pure-Python `jsonschema` package, and that validation costs in proportion to the subschemas
it enters: each `$ref` is a registry lookup and each `anyOf` of "X or null" enters one or two
more subschemas, for every field of every vault in a page. pydantic writes each optional
field as exactly that pair, so a ten-vault page was validated through ~550 subschemas.

`compact` rewrites the schema into an equivalent one (the same instances pass, the same
fail): local `$ref`s into `$defs` are inlined where the definition is not recursive, and
`anyOf: [S, {"type": "null"}]` becomes S with `null` added to its `type` (and to its `enum`)
when S is restricted to one type. Descriptions, titles and defaults stay where they were.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

_DEFS_PREFIX = "#/$defs/"
_NULL = {"type": "null"}
# Keywords of a branch that can move next to `type: [T, "null"]` unchanged: each one either
# constrains only instances of T (so null is not affected) or is an annotation.
_MERGEABLE = frozenset(
    {
        "type", "enum", "const", "title", "description", "default", "examples", "format",
        "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
        "minLength", "maxLength", "pattern",
        "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains",
        "properties", "required", "additionalProperties", "patternProperties",
        "minProperties", "maxProperties", "propertyNames",
    }
)  # fmt: skip


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The compact JSON Schema of a tool's output model (object root)."""
    return compact(model.model_json_schema())


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """An equivalent schema with non-recursive local refs inlined and nullable unions flattened."""
    defs: dict[str, Any] = schema.get("$defs", {})
    recursive = {name for name in defs if _reaches(defs, name, name, set())}
    out = _rewrite({k: v for k, v in schema.items() if k != "$defs"}, defs, recursive)
    kept = {name: _rewrite(defs[name], defs, recursive) for name in sorted(recursive)}
    if kept:
        out["$defs"] = kept
    return out


def _ref_name(node: Any) -> str | None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
            return ref.removeprefix(_DEFS_PREFIX)
    return None


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        name = _ref_name(node)
        if name is not None:
            found.add(name)
        for value in node.values():
            found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _reaches(defs: dict[str, Any], start: str, target: str, seen: set[str]) -> bool:
    for name in _refs(defs.get(start, {})):
        if name == target:
            return True
        if name not in seen and name in defs:
            seen.add(name)
            if _reaches(defs, name, target, seen):
                return True
    return False


def _rewrite(node: Any, defs: dict[str, Any], recursive: set[str]) -> Any:
    if isinstance(node, list):
        return [_rewrite(item, defs, recursive) for item in node]
    if not isinstance(node, dict):
        return node
    name = _ref_name(node)
    if name is not None and name in defs and name not in recursive:
        # Siblings of a $ref apply together with it (2020-12), so they merge over the target.
        target = _rewrite(defs[name], defs, recursive)
        siblings = {k: _rewrite(v, defs, recursive) for k, v in node.items() if k != "$ref"}
        if not siblings:
            return target
        if set(siblings) <= {"title", "description", "default", "examples"}:
            return {**target, **siblings}
        return {"allOf": [target], **siblings}
    out = {key: _rewrite(value, defs, recursive) for key, value in node.items()}
    return _flatten_nullable(out)


def _flatten_nullable(node: dict[str, Any]) -> dict[str, Any]:
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or _NULL not in branches:
        return node
    other = branches[0] if branches[1] == _NULL else branches[1]
    if not isinstance(other, dict) or not isinstance(other.get("type"), str):
        return node
    if not set(other) <= _MERGEABLE:
        return node
    # Keys of the union itself (description, default, …) must not clash with the branch's.
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if set(rest) & set(other):
        return node
    merged = {**rest, **other, "type": [other["type"], "null"]}
    if "const" in merged:
        merged["enum"] = [merged.pop("const"), None]
    elif "enum" in merged:
        merged["enum"] = [*merged["enum"], None]
    return merged
