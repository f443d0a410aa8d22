"""The `tools/call` fast path answers exactly what the SDK's own path answers.

Two data servers over the same store and published collection, one with the fast path and
one without (the plain SDK), both real uvicorn servers on loopback. The same requests go to
both (the SDK client's own request as the template, then every way of getting it wrong)
and the answers are compared: status, the headers that matter, and the body as JSON.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pydantic_core
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent
from mcp_types.version import LATEST_MODERN_VERSION

from albert.mcp.connection import McpConnection
from albert.search import TypesenseError
from data_server.mcp_server import build_mcp_server
from data_server.mcp_server.call_fast_path import ToolCallFastPath, shape_result
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import ToolResult, wire_form
from data_server.mcp_server.search import SearchVaultsInput
from data_server.mcp_server.vault_index import VaultIndex
from tests.data_server.mcp_server.servers import (
    AppServer,
    drop_collection,
    publish_store,
    running_app,
    seeded_store,
)
from tests.typesense_fixture import TypesenseServer, unique_name

# Response headers whose values may differ between two servers answering the same thing.
_VARYING = {"date", "server", "content-length"}


@dataclass(frozen=True)
class Pair:
    """The app with the fast path, and the same app on the SDK's path alone."""

    fast: AppServer
    sdk: AppServer


@pytest.fixture(scope="module")
def pair(
    typesense_server: TypesenseServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Pair]:
    folder: Path = tmp_path_factory.mktemp("fast_path")
    collection = unique_name("fastpath")
    store = asyncio.run(seeded_store(folder / "store.sqlite3"))
    try:
        asyncio.run(publish_store(store, typesense_server, collection))
        with (
            running_app(typesense_server, store, collection, fast_path=True) as fast,
            running_app(typesense_server, store, collection, fast_path=False) as sdk,
        ):
            yield Pair(fast, sdk)
    finally:
        store.close()
        drop_collection(typesense_server, collection)


def _fast_path(server: AppServer) -> ToolCallFastPath:
    """The fast path instance in a running app's middleware stack."""
    layer: Any = server.app.middleware_stack
    while layer is not None and not isinstance(layer, ToolCallFastPath):
        layer = getattr(layer, "app", None)
    assert isinstance(layer, ToolCallFastPath)
    return layer


async def _template(server: AppServer) -> tuple[dict[str, str], dict[str, Any]]:
    """The headers and body the SDK's client sends for a `tools/call`."""
    seen: list[httpx2.Request] = []

    async def record(request: httpx2.Request) -> None:
        if request.method == "POST":
            seen.append(request)

    http = httpx2.AsyncClient(event_hooks={"request": [record]})
    async with http, Client(streamable_http_client(server.mcp_url, http_client=http)) as client:
        seen.clear()
        await client.call_tool("search_vaults", {"chain": "ethereum", "per_page": 2})
    (request,) = [r for r in seen if b'"tools/call"' in r.content]
    headers = {
        k: v
        for k, v in request.headers.items()
        if k.lower() not in {"content-length", "host", "transfer-encoding", "connection"}
    }
    return headers, json.loads(request.content)


@pytest.fixture(scope="module")
def template(pair: Pair) -> tuple[dict[str, str], dict[str, Any]]:
    return asyncio.run(_template(pair.sdk))


@dataclass(frozen=True)
class Answer:
    status: int
    headers: dict[str, str]
    body: Any


def _answer(response: httpx.Response) -> Answer:
    headers = {k: v for k, v in response.headers.items() if k not in _VARYING}
    if "mcp-session-id" in headers:  # a new session on the handshake-era path: random
        headers["mcp-session-id"] = "<issued>"
    try:
        body: Any = response.json()
    except ValueError:
        body = response.content
    return Answer(response.status_code, headers, body)


def _send(
    server: AppServer,
    body: bytes | Any,
    headers: dict[str, str] | list[tuple[str, str]],
    method: str = "POST",
) -> Answer:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    with httpx.Client(timeout=30) as http:
        response = http.request(method, server.mcp_url, content=content, headers=headers)
    return _answer(response)


def _both(pair: Pair, body: bytes | Any, headers: Any, method: str = "POST") -> Answer:
    fast, sdk = _send(pair.fast, body, headers, method), _send(pair.sdk, body, headers, method)
    assert fast == sdk, (body, headers)
    return fast


def _call(template: dict[str, Any], **changes: Any) -> dict[str, Any]:
    body = json.loads(json.dumps(template))
    for key, value in changes.items():
        if value is _DROP:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def _params(template: dict[str, Any], **changes: Any) -> dict[str, Any]:
    params = dict(template["params"])
    for key, value in changes.items():
        if value is _DROP:
            params.pop(key, None)
        else:
            params[key] = value
    return _call(template, params=params)


_DROP = object()


def test_the_sdk_client_gets_the_same_results(pair: Pair) -> None:
    calls = [
        ("search_vaults", {"chain": "ethereum", "per_page": 3}),
        ("search_vaults", {"query": "usdc", "sort_by": "apy"}),
        ("search_vaults", {"stablecoin_only": True, "max_risk_rating": "medium"}),
        ("search_vaults", {"chain": "not-a-chain"}),
        ("search_vaults", {"per_page": "many"}),
        ("search_vaults", {"typo": 1}),
        ("top_yields", {"chain": "base"}),
        ("analyze_risk", {"vault_id": "test:base:unrated"}),
        ("analyze_risk", {"vault_id": "nope"}),
        ("search_protocols", {"query": "aave"}),
        ("no_such_tool", {}),
    ]

    async def run(server: AppServer) -> list[Any]:
        out: list[Any] = []
        async with Client(server.mcp_url) as client:
            for name, arguments in calls:
                try:
                    result = await client.call_tool(name, arguments)
                except Exception as exc:  # the SDK client raises for JSON-RPC errors
                    out.append(("raised", type(exc).__name__, str(exc)))
                else:
                    out.append(result.model_dump(mode="json"))
        return out

    before = _fast_path(pair.fast).answered
    fast, sdk = asyncio.run(run(pair.fast)), asyncio.run(run(pair.sdk))
    assert fast == sdk
    assert any(not r.get("isError", r.get("is_error")) for r in fast if isinstance(r, dict))
    # The fast path answered the calls of known tools (the unknown one went to the SDK).
    assert _fast_path(pair.fast).answered - before == len(calls) - 1


def test_the_worker_connection_gets_the_same_results(pair: Pair) -> None:
    async def run(server: AppServer) -> list[Any]:
        connection = McpConnection(
            "vaults", server.mcp_url, {}, on_lost=lambda _: None, on_tools_changed=lambda: None
        )
        await connection.connect(within=30)
        try:
            await connection.list_tools(within=30)
            out = []
            for arguments in ({"query": "eth", "min_apy": 3}, {"protocol": "aave-v3"}, {"x": 1}):
                result = await connection.call_tool("search_vaults", arguments)
                out.append((result.is_error, result.structured, result.texts))
            return out
        finally:
            await connection.close()

    assert asyncio.run(run(pair.fast)) == asyncio.run(run(pair.sdk))


def test_well_formed_calls_answer_alike(
    pair: Pair, template: tuple[dict[str, str], dict[str, Any]]
) -> None:
    headers, body = template
    before = _fast_path(pair.fast).answered
    ok = _both(pair, body, headers)
    assert ok.status == 200 and ok.headers["content-type"] == "application/json"
    assert ok.body["result"]["structuredContent"]["vaults"]
    for request_id in ("abc", 0, -7, 2**40, "", 1.0):
        _both(pair, _call(body, id=request_id), headers)
    for arguments in ({}, None, {"query": "ünïcödé ✓"}, {"query": "\ud800"}, {"per_page": 0}):
        _both(pair, _params(body, arguments=arguments), headers)
    _both(pair, _params(body, arguments=_DROP), headers)
    _both(
        pair,
        _params(body, name="analyze_yield", arguments={"vault_id": "test:base:unrated"}),
        headers,
    )
    # Extra members the SDK's models ignore or keep.
    _both(pair, _call(body, extra="x"), headers)
    _both(pair, _params(body, extra={"a": 1}), headers)
    assert _fast_path(pair.fast).answered - before >= 12


def test_refused_and_odd_requests_answer_alike(
    pair: Pair, template: tuple[dict[str, str], dict[str, Any]]
) -> None:
    headers, body = template
    raw = json.dumps(body).encode()
    # The body: not JSON, not one request, not a tools/call, a malformed envelope.
    for bad in (b"", b"{", b"[]", b"null", b"3", b"\xff\xfe", json.dumps([body]).encode()):
        _both(pair, bad, headers)
    _both(pair, _call(body, id=_DROP), headers)  # a notification
    _both(pair, _call(body, id=None), headers)
    _both(pair, _call(body, id=[1]), headers)
    _both(pair, _call(body, jsonrpc="1.0"), headers)
    _both(pair, _call(body, method="tools/list"), headers)
    _both(pair, _call(body, method="no/such/method"), headers)
    _both(pair, _call(body, method=_DROP), headers)
    _both(pair, _call(body, params=_DROP), headers)
    _both(pair, _call(body, params=[1, 2]), headers)
    _both(pair, _call(body, params="x"), headers)
    _both(pair, _params(body, name=_DROP), headers)
    _both(pair, _params(body, name=7), headers)
    _both(pair, _params(body, name="no_such_tool"), headers)
    _both(pair, _params(body, arguments=[1]), headers)
    _both(pair, _params(body, arguments="chain=base"), headers)
    _both(pair, _params(body, requestState="forged"), headers)
    _both(pair, _params(body, _meta=_DROP), headers)
    _both(pair, _params(body, _meta={}), headers)
    _both(pair, _params(body, _meta="x"), headers)
    meta = dict(body["params"].get("_meta") or {})
    for key in list(meta):
        _both(pair, _params(body, _meta={k: v for k, v in meta.items() if k != key}), headers)
        _both(pair, _params(body, _meta={**meta, key: 12}), headers)
    _both(pair, _params(body, _meta={**meta, "progressToken": "p1"}), headers)
    # Headers: protocol version, Accept, Content-Type, Host, Origin, routing headers.
    version = next(v for k, v in headers.items() if k.lower() == "mcp-protocol-version")
    plain = {k: v for k, v in headers.items() if k.lower() != "mcp-protocol-version"}
    _both(pair, raw, plain)
    for value in ("2025-06-18", "2099-01-01", "", version.lower() + "x", "2026-7-28"):
        _both(pair, raw, {**plain, "mcp-protocol-version": value})
    _both(pair, raw, [*headers.items(), ("mcp-protocol-version", version)])
    for accept in ("text/event-stream", "text/html", "*/*", "application/*", "application/json"):
        _both(pair, raw, {**headers, "accept": accept})
    _both(pair, raw, {k: v for k, v in headers.items() if k.lower() != "accept"})
    for content_type in ("text/plain", "application/json; charset=utf-8", "application/jsonx"):
        _both(pair, raw, {**headers, "content-type": content_type})
    _both(pair, raw, {k: v for k, v in headers.items() if k.lower() != "content-type"})
    _both(pair, raw, {**headers, "host": "evil.example"})
    _both(pair, raw, {**headers, "origin": "http://evil.example"})
    _both(pair, raw, {**headers, "origin": "http://127.0.0.1:1"})
    _both(pair, raw, {**headers, "mcp-method": "tools/list"})
    _both(pair, raw, {**headers, "mcp-name": "top_yields"})
    _both(pair, raw, {**headers, "mcp-param-chain": "base"})
    _both(pair, raw, {**headers, "mcp-session-id": "0123456789abcdef"})
    _both(pair, raw, {**plain, "mcp-session-id": "0123456789abcdef"})
    # Other methods of HTTP on the same path.
    for method in ("GET", "DELETE", "PUT"):
        _both(pair, b"", headers, method)


def test_size_limits_answer_alike(
    pair: Pair, template: tuple[dict[str, str], dict[str, Any]]
) -> None:
    headers, body = template
    limit = _fast_path(pair.fast)._max_body
    big = _params(body, arguments={"query": "x" * (limit + 10)})
    _both(pair, big, headers)
    # A body sent in chunks, without a declared length, under and over the limit.
    for size in (10, limit + 10):
        payload = json.dumps(_params(body, arguments={"query": "y" * size})).encode()

        def answer(server: AppServer, payload: bytes = payload) -> Answer:
            async def chunks() -> AsyncIterator[bytes]:
                for start in range(0, len(payload), 65536):
                    yield payload[start : start + 65536]

            async def post() -> Answer:
                async with httpx.AsyncClient(timeout=30) as http:
                    return _answer(
                        await http.post(server.mcp_url, content=chunks(), headers=headers)
                    )

            return asyncio.run(post())

        assert answer(pair.fast) == answer(pair.sdk)


class _BrokenClient:
    """A search index client that fails in a given way."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def search_body(self, *args: Any, **kwargs: Any) -> bytes:
        raise self.error


def test_tools_that_fail_answer_alike(
    pair: Pair, template: tuple[dict[str, str], dict[str, Any]]
) -> None:
    headers, body = template
    indexes = [pair.fast.app.state.deps.index, pair.sdk.app.state.deps.index]
    clients = [index.client for index in indexes]
    try:
        for error in (
            TypesenseError(503, "overloaded"),  # our error result
            RuntimeError("index exploded"),  # the SDK's error result for a crash
            MCPError(code=-32050, message="refused by policy"),  # a JSON-RPC error
            ValueError("bad"),
        ):
            for index in indexes:
                index.client = _BrokenClient(error)
            answer = _both(pair, body, headers)
            assert "error" in answer.body or answer.body["result"].get("isError"), answer
    finally:
        for index, client in zip(indexes, clients, strict=True):
            index.client = client


_FIELDS = sorted(SearchVaultsInput.model_fields)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_VALUES = (
    _JSON
    | st.sampled_from(["ethereum", "base", "arbitrum", "aave-v3", "usdc", "eth", "apy", "tvl_usd"])
    | st.sampled_from(["low", "medium", "high", "very_high", "multi", "single"])
    | st.integers(min_value=0, max_value=300)
    | st.lists(st.sampled_from(["ethereum", "base", "USDC", "WETH"]), max_size=3)
)
_ARGUMENTS = (
    st.dictionaries(st.sampled_from(_FIELDS) | st.text(max_size=8), _VALUES, max_size=5) | _JSON
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(arguments=_ARGUMENTS, tool=st.sampled_from(["search_vaults", "top_yields"]))
def test_any_arguments_answer_alike(
    pair: Pair, template: tuple[dict[str, str], dict[str, Any]], arguments: Any, tool: str
) -> None:
    headers, body = template
    _both(pair, _params(body, name=tool, arguments=arguments), headers)


_PAGE = st.dictionaries(st.text(max_size=8), _JSON | st.floats(), max_size=6)
_SERVER = build_mcp_server(ToolDeps(index=VaultIndex(None, "unused")))  # type: ignore[arg-type]
_RUNNER = ServerRunner(
    _SERVER._lowlevel_server, Connection.from_envelope(LATEST_MODERN_VERSION, None, None), None
)


@settings(max_examples=300, deadline=None)
@given(
    structured=_PAGE,
    texts=st.lists(st.text(max_size=20), min_size=1, max_size=3),
    is_error=st.booleans(),
)
def test_our_results_are_shaped_as_the_runner_shapes_them(
    structured: dict[str, Any], texts: list[str], is_error: bool
) -> None:
    # JSON mode, as an output model's `model_dump(mode="json")` gives it (NaN as null).
    page = pydantic_core.to_jsonable_python(structured, inf_nan_mode="null")
    result = wire_form(
        ToolResult(
            content=[TextContent(type="text", text=t) for t in texts],
            structured_content=page,
            is_error=is_error,
        )
    )
    expected = _RUNNER._serialize("tools/call", LATEST_MODERN_VERSION, result)
    assert shape_result(_RUNNER, LATEST_MODERN_VERSION, result) == expected
