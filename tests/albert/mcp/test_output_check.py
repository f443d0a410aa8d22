"""The fast output check: it never accepts what `jsonschema` refuses, and it covers our schemas.

The check sits in front of the SDK's `jsonschema` validator of tool results (remote results
are untrusted): True must mean valid, False hands the decision to `jsonschema`. The property
tests draw schemas from every keyword the check compiles and instances near them, and compare
with `jsonschema` itself, the validator the SDK uses.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for
from referencing import Registry

from albert.mcp.connection import McpConnection, _CheckedFirst
from albert.mcp.output_check import compile_check
from data_server.mcp_server.output_schema import output_schema
from data_server.mcp_server.server import _SPECS
from tests.support.mcp_test_server import (
    SEARCH_VAULTS_SCHEMA,
    VAULT_PAGE_OUTPUT_SCHEMA,
    VAULT_PAGES,
    InProcessMcpServer,
)


def jsonschema_valid(schema: Any, instance: Any) -> bool:
    """What the SDK's validator says (same class choice, same empty registry)."""
    validator = validator_for(schema)(schema, registry=Registry())
    return next(iter(validator.iter_errors(instance)), None) is None


# --- instances and schemas ------------------------------------------------------------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 1.0, -1.0, 2.5, 1e300]),
    st.text(max_size=4),
    st.sampled_from(["a", "b", "low", "ethereum", "", "0x1"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "c", "id", "apy", "x"]), inner, max_size=4),
    ),
    max_leaves=12,
)

TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]
bounds = st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False))
leaf_schemas = st.one_of(
    st.booleans(),
    st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)),
    st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(TYPES), min_size=1, max_size=3)),
    st.builds(lambda vs: {"enum": vs}, st.lists(scalars.filter(lambda v: v == v), min_size=1)),
    st.builds(lambda v: {"const": v}, scalars.filter(lambda v: v == v)),
    st.builds(
        lambda k, b: {k: b},
        st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
        bounds,
    ),
    st.builds(
        lambda k, n: {k: n},
        st.sampled_from(["minLength", "maxLength", "minItems", "maxItems"]),
        st.integers(0, 3),
    ),
    st.builds(lambda p: {"pattern": p}, st.sampled_from(["^a", "b$", "[0-9]", "^$", "."])),
    st.just({"description": "annotation only", "title": "T", "default": 3, "format": "email"}),
)


def _combine(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    names = st.sampled_from(["a", "b", "c", "id", "apy"])
    return st.one_of(
        st.builds(
            lambda props, req, extra: {
                "type": "object",
                "properties": props,
                "required": req,
                **({} if extra is None else {"additionalProperties": extra}),
            },
            st.dictionaries(names, inner, max_size=3),
            st.lists(names, max_size=2, unique=True),
            st.one_of(st.none(), st.booleans(), inner),
        ),
        st.builds(lambda items: {"items": items}, inner),
        st.builds(lambda items: {"type": "array", "items": items, "maxItems": 3}, inner),
        st.builds(lambda bs: {"anyOf": bs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda bs: {"allOf": bs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(
            lambda a, b: {**a, **b} if isinstance(a, dict) and isinstance(b, dict) else a,
            inner,
            inner,
        ),
    )


schemas = st.recursive(leaf_schemas, _combine, max_leaves=8)
OUR_SCHEMAS = [output_schema(spec[3]) for spec in _SPECS]


def _with_defs(schema: Any) -> dict[str, Any]:
    """The schema reached through a `$ref` into `$defs`, with a sibling keyword."""
    return {"$defs": {"Node": schema}, "$ref": "#/$defs/Node", "description": "via a ref"}


# --- the one-sided property -----------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas, instance=json_values)
def test_the_check_never_accepts_what_jsonschema_refuses(schema: Any, instance: Any) -> None:
    for candidate in (schema, _with_defs(schema)):
        check = compile_check(candidate if isinstance(candidate, dict) else {"allOf": [candidate]})
        assert check is not None, candidate  # every drawn keyword is one the check compiles
        if check(instance):
            assert jsonschema_valid(candidate, instance), (candidate, instance)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_near_misses_of_our_own_results_are_never_accepted(data: st.DataObject) -> None:
    # A valid search page with one value swapped for an arbitrary one.
    schema = output_schema(_SPECS[0][3])
    page = copy.deepcopy(VALID_SEARCH_PAGE)
    vault = page["vaults"][data.draw(st.integers(0, len(page["vaults"]) - 1))]
    key = data.draw(st.sampled_from(sorted(vault)))
    vault[key] = data.draw(json_values)
    check = compile_check(schema)
    assert check is not None
    # On this schema the check is exact, not only one-sided: a refusal is a real one.
    assert check(page) == jsonschema_valid(schema, page), (key, vault[key])


VALID_VAULT = {
    "id": "defillama:base:pool-1",
    "name": "USDC lending",
    "protocol": "aave-v3",
    "chain": "base",
    "source": "defillama",
    "address": None,
    "asset_symbols": ["USDC"],
    "underlying_tokens": [],
    "apy": 4.25,
    "apy_base": 4,
    "apy_reward": None,
    "reward_share": None,
    "tvl_usd": 12_500_000.5,
    "share_price": None,
    "stablecoin": True,
    "il_risk": False,
    "exposure": "single",
    "security_score": 81.0,
    "risk_rating": "low",
    "audits": 3,
    "protocol_age_days": 1200,
    "exploits": 0,
    "source_flags": [],
    "status": "active",
    "url": None,
    "updated_at": 1_764_000_000,
}
VALID_SEARCH_PAGE = {
    "found": 120,
    "page": 1,
    "per_page": 10,
    "total_pages": 12,
    "filter_by": "chain:=[base] && status:=active",
    "sort_by": "tvl_usd:desc",
    "vaults": [VALID_VAULT, {**VALID_VAULT, "id": "x:y:z", "apy": 1.0, "audits": 1.0}],
}


def test_our_tools_results_take_the_fast_path() -> None:
    """Every output schema of the data server compiles, and a real page passes the check."""
    for spec, schema in zip(_SPECS, OUR_SCHEMAS, strict=True):
        assert compile_check(schema) is not None, spec[0]
    check = compile_check(OUR_SCHEMAS[0])
    assert check is not None and check(VALID_SEARCH_PAGE)
    assert jsonschema_valid(OUR_SCHEMAS[0], VALID_SEARCH_PAGE)


def test_refusals_match_jsonschema_on_the_test_servers_schemas() -> None:
    check = compile_check(VAULT_PAGE_OUTPUT_SCHEMA)
    assert check is not None
    for name, page in VAULT_PAGES.items():
        assert check(page) == jsonschema_valid(VAULT_PAGE_OUTPUT_SCHEMA, page), name
    args = compile_check(SEARCH_VAULTS_SCHEMA)  # uniqueItems: not covered
    assert args is None


@pytest.mark.parametrize(
    "schema",
    [
        {"oneOf": [{"type": "string"}]},
        {"not": {"type": "string"}},
        {"$id": "https://example.com/s", "type": "object"},
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "array", "prefixItems": [{"type": "string"}]},
        {"type": "array", "uniqueItems": True},
        {"$ref": "https://example.com/other.json"},
        {"$ref": "#/$defs/Missing", "$defs": {}},
        {"$dynamicRef": "#node"},
        {"enum": [{"a": 1}]},
        {"type": "strng"},
        {"pattern": "("},
        {"minimum": "3"},
        {"if": {"type": "string"}, "then": {"minLength": 1}},
        "not a schema",
    ],
)
def test_what_the_check_does_not_cover_is_left_to_jsonschema(schema: Any) -> None:
    assert compile_check(schema) is None


def test_recursive_definitions_are_checked_through_refs() -> None:
    schema = {
        "$defs": {
            "Tree": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
                "required": ["children"],
            }
        },
        "$ref": "#/$defs/Tree",
    }
    check = compile_check(schema)
    assert check is not None
    assert check({"children": [{"children": []}, {"children": [{"children": []}]}]})
    assert not check({"children": [{"children": [{}]}]})
    assert not jsonschema_valid(schema, {"children": [{"children": [{}]}]})


# --- through the real SDK -------------------------------------------------------------


@pytest.fixture
def structured_server() -> Any:
    with InProcessMcpServer("structured") as server:
        yield server


async def _call(url: str, breaking: str, *, fast: bool) -> tuple[Any, str | None]:
    """One vault_page call through McpConnection; (result or None, error text or None)."""
    connection = McpConnection(
        "structured", url, {}, on_lost=lambda _: None, on_tools_changed=lambda: None
    )
    await connection.connect(within=10)
    try:
        client = connection._require()
        if not fast:
            # The SDK's own validator alone, as before the check existed.
            del client.session._output_schema_validator
        await connection.list_tools(within=10)
        try:
            result = await connection.call_tool("vault_page", {"break": breaking})
        except RuntimeError as exc:
            return None, str(exc)
        validator = client.session._output_schema_validator("vault_page", VAULT_PAGE_OUTPUT_SCHEMA)
        assert isinstance(validator, _CheckedFirst) == fast
        return result, None
    finally:
        await connection.close()


@pytest.mark.parametrize("breaking", sorted(VAULT_PAGES))
def test_a_remote_result_is_accepted_or_refused_exactly_as_the_sdk_alone_does(
    structured_server: InProcessMcpServer, breaking: str
) -> None:
    fast_result, fast_error = asyncio.run(_call(structured_server.url, breaking, fast=True))
    sdk_result, sdk_error = asyncio.run(_call(structured_server.url, breaking, fast=False))
    assert fast_error == sdk_error
    if breaking == "none":
        assert fast_error is None
        assert fast_result.structured == sdk_result.structured == VAULT_PAGES["none"]
    else:
        assert fast_error is not None
        assert fast_error.startswith("Invalid structured content returned by tool vault_page")
