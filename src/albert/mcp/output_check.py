"""A fast, one-sided check of a tool's structured result against its advertised `outputSchema`.

The `mcp` client validates every successful result against the tool's `outputSchema` with
the pure-Python `jsonschema` package. That check guards the worker against a remote server
(untrusted) sending structured content that breaks its own contract, and it is most of the
client's CPU per call: `jsonschema` walks the schema per instance node, building a validator
object for each one (~300 for a ten-vault page).

`compile_check` turns a schema into nested closures once, when the tool's schema is first
used. The closures run no code made from the schema (no `eval`, no generated source), so a
hostile schema can only make the check say "not shown valid". The check is one-sided:

* True means the instance is valid under JSON Schema 2020-12, the draft the SDK uses for a
  schema without `$schema`: every keyword the check understands is applied exactly, and a
  schema with any keyword it does not understand is not compiled at all (None).
* False means only "not shown valid": the SDK's own `jsonschema` validator then runs as
  before and decides, with its own error message.

So every result the SDK refused before is still refused, with the same message, and every
result it accepted is still accepted; the common case (a valid result) just costs less.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], bool]

# Keywords that only annotate: they never make an instance invalid.
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
     "writeOnly", "format"}
)  # fmt: skip
_TYPE_NAMES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_DRAFT_2020_12 = {
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2020-12/schema#",
}
_DEFS_PREFIX = "#/$defs/"
_MAX_DEPTH = 64


class _Unsupported(Exception):
    """The schema uses something the fast check does not apply exactly."""


def compile_check(schema: Any) -> Check | None:
    """A one-sided check for `schema`, or None when the schema is outside what it covers."""
    if not isinstance(schema, dict):
        return None
    draft = schema.get("$schema")
    if draft is not None and draft not in _DRAFT_2020_12:
        return None
    defs = schema.get("$defs", {})
    if not isinstance(defs, dict):
        return None
    compiled: dict[str, Check] = {}

    def ref(name: str) -> Check:
        # Resolved at call time, so recursive definitions compile.
        def check(value: Any) -> bool:
            return compiled[name](value)

        return check

    try:
        for name, definition in defs.items():
            compiled[name] = _compile(definition, defs, ref, 0)
        root = {k: v for k, v in schema.items() if k not in ("$schema", "$defs")}
        return _compile(root, defs, ref, 0)
    except (_Unsupported, re.error, TypeError, ValueError, RecursionError):
        return None


def _compile(node: Any, defs: dict[str, Any], ref: Callable[[str], Check], depth: int) -> Check:
    if depth > _MAX_DEPTH:
        raise _Unsupported("nested too deeply")
    if node is True:
        return _always
    if node is False:
        return _never
    if not isinstance(node, dict):
        raise _Unsupported("a schema is an object or a boolean")
    checks: list[Check] = []
    for key, value in node.items():
        if key in _ANNOTATIONS:
            continue
        make = _KEYWORDS.get(key)
        if make is None:
            raise _Unsupported(key)
        made = make(node, value, defs, ref, depth + 1)
        if made is not None:
            checks.append(made)
    return _all(checks)


def _always(_value: Any) -> bool:
    return True


def _never(_value: Any) -> bool:
    return False


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    def check(value: Any) -> bool:
        for one in frozen:
            if not one(value):
                return False
        return True

    return check


# --- types ------------------------------------------------------------------------------
# Only the exact Python types a JSON parser produces are recognised; anything else is
# "not shown valid" and goes to the full validator.


_CLASSES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "object": (dict,),
    "array": (list,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type(_node: dict[str, Any], value: Any, *_: Any) -> Check:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or not set(names) <= _TYPE_NAMES:
        raise _Unsupported("type")
    # By exact class: `type(True) is bool`, never int, so a bool is no number here either.
    classes = frozenset(cls for name in names for cls in _CLASSES[name])
    if "integer" in names and "number" not in names:
        # JSON Schema counts 1.0 as an integer.
        return lambda v: type(v) in classes or (type(v) is float and v.is_integer())
    if len(classes) == 1:
        (only,) = classes
        return lambda v: type(v) is only
    return lambda v: type(v) in classes


# --- values -----------------------------------------------------------------------------


def _scalar_key(value: Any) -> tuple[str, Any] | None:
    """A hashable key under which JSON Schema's equality holds (1 == 1.0, True != 1)."""
    kind = type(value)
    if value is None:
        return ("null", None)
    if kind is bool:
        return ("bool", value)
    if kind is int or kind is float:
        return ("number", value)
    if kind is str:
        return ("string", value)
    return None


def _enum(_node: dict[str, Any], value: Any, *_: Any) -> Check:
    if not isinstance(value, list):
        raise _Unsupported("enum")
    allowed = set()
    for item in value:
        key = _scalar_key(item)
        if key is None or (key[0] == "number" and key[1] != key[1]):  # objects, arrays, NaN
            raise _Unsupported("enum of non-scalars")
        allowed.add(key)
    frozen = frozenset(allowed)
    return lambda v: _scalar_key(v) in frozen


def _const(node: dict[str, Any], value: Any, *rest: Any) -> Check:
    return _enum(node, [value], *rest)


def _number_bound(compare: Callable[[float, float], bool], keyword: str) -> Any:
    def make(_node: dict[str, Any], bound: Any, *_: Any) -> Check:
        if type(bound) not in (int, float) or bound != bound:
            raise _Unsupported(keyword)

        def check(v: Any) -> bool:
            kind = type(v)
            if kind is int or kind is float:
                return compare(v, bound)
            # Bounds apply to numbers only; a bool or an odd numeric type is left to the SDK.
            return kind is not bool and not isinstance(v, int | float)

        return check

    return make


def _count_bound(kind: type, least: bool, keyword: str) -> Any:
    def make(_node: dict[str, Any], bound: Any, *_: Any) -> Check:
        if type(bound) is not int or bound < 0:
            raise _Unsupported(keyword)

        def check(v: Any) -> bool:
            if type(v) is not kind:
                return not isinstance(v, kind)  # a subclass is left to the SDK
            return len(v) >= bound if least else len(v) <= bound

        return check

    return make


def _pattern(_node: dict[str, Any], value: Any, *_: Any) -> Check:
    if not isinstance(value, str):
        raise _Unsupported("pattern")
    # The SDK's jsonschema searches with Python's `re`, as this does.
    compiled = re.compile(value)

    def check(v: Any) -> bool:
        if type(v) is not str:
            return not isinstance(v, str)
        return compiled.search(v) is not None

    return check


# --- objects ----------------------------------------------------------------------------


def _properties(
    node: dict[str, Any], value: Any, defs: dict[str, Any], ref: Any, depth: int
) -> Check:
    if not isinstance(value, dict):
        raise _Unsupported("properties")
    subs = {name: _compile(sub, defs, ref, depth) for name, sub in value.items()}

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return not isinstance(v, dict)
        for name, sub in subs.items():
            if name in v and not sub(v[name]):
                return False
        return True

    return check


def _required(_node: dict[str, Any], value: Any, *_: Any) -> Check:
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        raise _Unsupported("required")
    names = tuple(value)

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return not isinstance(v, dict)
        for name in names:
            if name not in v:
                return False
        return True

    return check


def _additional(
    node: dict[str, Any], value: Any, defs: dict[str, Any], ref: Any, depth: int
) -> Check:
    if "patternProperties" in node:
        raise _Unsupported("additionalProperties with patternProperties")
    known = node.get("properties", {})
    if not isinstance(known, dict):
        raise _Unsupported("properties")
    names = frozenset(known)
    sub = _compile(value, defs, ref, depth)

    def check(v: Any) -> bool:
        if type(v) is not dict:
            return not isinstance(v, dict)
        for name, item in v.items():
            if name not in names and not sub(item):
                return False
        return True

    return check


# --- arrays -----------------------------------------------------------------------------


def _items(node: dict[str, Any], value: Any, defs: dict[str, Any], ref: Any, depth: int) -> Check:
    if "prefixItems" in node or isinstance(value, list):
        raise _Unsupported("tuple items")
    sub = _compile(value, defs, ref, depth)

    def check(v: Any) -> bool:
        if type(v) is not list:
            return not isinstance(v, list)
        for item in v:
            if not sub(item):
                return False
        return True

    return check


# --- combinations -----------------------------------------------------------------------


def _any_of(_node: dict[str, Any], value: Any, defs: dict[str, Any], ref: Any, depth: int) -> Check:
    # A branch shown valid proves the union valid; no branch shown valid proves nothing,
    # which is the one-sided answer this check gives anyway. (`oneOf` and `not` need a
    # branch shown invalid, which a one-sided check cannot give: they are not compiled.)
    if not isinstance(value, list) or not value:
        raise _Unsupported("anyOf")
    branches = tuple(_compile(sub, defs, ref, depth) for sub in value)
    return lambda v: any(branch(v) for branch in branches)


def _all_of(_node: dict[str, Any], value: Any, defs: dict[str, Any], ref: Any, depth: int) -> Check:
    if not isinstance(value, list) or not value:
        raise _Unsupported("allOf")
    return _all([_compile(sub, defs, ref, depth) for sub in value])


def _ref(_node: dict[str, Any], value: Any, defs: dict[str, Any], ref: Any, _depth: int) -> Check:
    if not isinstance(value, str) or not value.startswith(_DEFS_PREFIX):
        raise _Unsupported("$ref outside #/$defs")
    name = value.removeprefix(_DEFS_PREFIX)
    if name not in defs or "/" in name or "~" in name or "%" in name:
        raise _Unsupported("$ref target")
    return ref(name)  # type: ignore[no-any-return]


def _ignore(*_: Any) -> None:
    return None


_KEYWORDS: dict[str, Callable[..., Check | None]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "minimum": _number_bound(lambda v, b: v >= b, "minimum"),
    "maximum": _number_bound(lambda v, b: v <= b, "maximum"),
    "exclusiveMinimum": _number_bound(lambda v, b: v > b, "exclusiveMinimum"),
    "exclusiveMaximum": _number_bound(lambda v, b: v < b, "exclusiveMaximum"),
    "minLength": _count_bound(str, True, "minLength"),
    "maxLength": _count_bound(str, False, "maxLength"),
    "pattern": _pattern,
    "minItems": _count_bound(list, True, "minItems"),
    "maxItems": _count_bound(list, False, "maxItems"),
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "items": _items,
    "anyOf": _any_of,
    "allOf": _all_of,
    "$ref": _ref,
    # Handled at the root (definitions are compiled by name, reached through `$ref`).
    "$defs": _ignore,
}
