"""The async Typesense client against a real Typesense server."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from albert.search.typesense_client import (
    SearchParams,
    TypesenseClient,
    TypesenseConnectionError,
    TypesenseError,
    request_url,
)
from tests.typesense_fixture import TypesenseServer, unique_name

_TOOK = re.compile(rb'"search_time_ms":\d+')


def _schema(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "fields": [
            {"name": "title", "type": "string"},
            {"name": "score", "type": "int32"},
            {"name": "tag", "type": "string", "facet": True},
        ],
        "default_sorting_field": "score",
    }


DOCS = [
    {"id": str(i), "title": f"vault number {i}", "score": i, "tag": "odd" if i % 2 else "even"}
    for i in range(1, 26)
]


@pytest.fixture
async def client(typesense_server: TypesenseServer) -> AsyncIterator[TypesenseClient]:
    async with TypesenseClient(typesense_server.url, typesense_server.api_key) as c:
        yield c


async def test_collection_lifecycle(client: TypesenseClient) -> None:
    name = unique_name("lifecycle")
    created = await client.create_collection(_schema(name))
    assert created.name == name and created.num_documents == 0
    assert created.default_sorting_field == "score"
    with pytest.raises(TypesenseError) as info:
        await client.create_collection(_schema(name))
    assert info.value.status == 409
    again = await client.ensure_collection(_schema(name))
    assert again.name == name
    assert name in {c.name for c in await client.list_collections()}
    assert await client.drop_collection(name) is True
    assert await client.drop_collection(name) is False
    with pytest.raises(TypesenseError) as info:
        await client.retrieve_collection(name)
    assert info.value.status == 404
    assert "Not Found" in info.value.message or "not found" in info.value.message.lower()


async def test_ensure_creates_missing(client: TypesenseClient) -> None:
    name = unique_name("ensure")
    info = await client.ensure_collection(_schema(name))
    assert info.name == name
    assert (await client.retrieve_collection(name)).num_documents == 0


async def test_import_reports_failures_and_upserts(client: TypesenseClient) -> None:
    name = unique_name("imports")
    await client.create_collection(_schema(name))
    bad = {"id": "bad", "title": "no score"}
    summary = await client.import_documents(name, [*DOCS[:5], bad, DOCS[5]])
    assert summary.ok == 6
    assert len(summary.failures) == 1
    assert summary.failures[0].line == 5
    assert "score" in summary.failures[0].error
    assert not summary.all_ok
    # Upsert is idempotent: same docs again, count unchanged.
    summary = await client.import_documents(name, DOCS)
    assert summary.ok == len(DOCS) and summary.all_ok
    assert (await client.retrieve_collection(name)).num_documents == len(DOCS)
    assert (await client.import_documents(name, [])).ok == 0
    # action=create refuses existing ids.
    summary = await client.import_documents(name, DOCS[:2], action="create")
    assert summary.ok == 0 and len(summary.failures) == 2


async def test_search_paging_filter_highlights(client: TypesenseClient) -> None:
    name = unique_name("search")
    await client.create_collection(_schema(name))
    await client.import_documents(name, DOCS)
    page1 = await client.search(
        name, SearchParams(q="*", query_by="title", filter_by="tag:=odd", sort_by="score:desc")
    )
    assert page1.found == 13
    assert page1.page == 1
    assert [h.document["score"] for h in page1.hits] == [25, 23, 21, 19, 17, 15, 13, 11, 9, 7]
    page2 = await client.search(
        name,
        SearchParams(q="*", query_by="title", filter_by="tag:=odd", sort_by="score:desc", page=2),
    )
    assert [h.document["score"] for h in page2.hits] == [5, 3, 1]
    text = await client.search(name, SearchParams(q="number 7", query_by="title"))
    assert text.hits[0].document["id"] == "7"
    assert text.hits[0].highlights and text.hits[0].highlights[0].field == "title"
    assert "<mark>" in (text.hits[0].highlights[0].snippet or "")
    assert text.search_time_ms >= 0


async def test_uncompressed_answers_are_the_same_bytes(
    client: TypesenseClient, typesense_server: TypesenseServer
) -> None:
    name = unique_name("identity")
    await client.create_collection(_schema(name))
    await client.import_documents(name, DOCS)
    encodings: list[str | None] = []

    async def seen(response: httpx.Response) -> None:
        encodings.append(response.headers.get("content-encoding"))

    hooks = {"response": [seen]}
    async with (
        httpx.AsyncClient(event_hooks=hooks) as zipped_http,
        httpx.AsyncClient(event_hooks=hooks) as plain_http,
    ):
        zipped = TypesenseClient(typesense_server.url, typesense_server.api_key, http=zipped_http)
        plain = TypesenseClient(
            typesense_server.url, typesense_server.api_key, http=plain_http, compressed=False
        )
        for params in (
            SearchParams(q="*", query_by="title", filter_by="tag:=odd", sort_by="score:desc"),
            SearchParams(q="vault", query_by="title", per_page=25, facet_by="tag"),
        ):
            answers = [await c.search_body(name, params) for c in (zipped, plain)]
            # The one field that may differ between two runs of the same search: its time.
            zipped_body, plain_body = (_TOOK.sub(b'"search_time_ms":_', a) for a in answers)
            assert zipped_body == plain_body
            assert _TOOK.search(answers[0]) and _TOOK.search(answers[1])
        assert (await zipped.get_document(name, "3")) == (await plain.get_document(name, "3"))
    # Typesense gzips what the default client accepts, and not for the other one.
    assert encodings == ["gzip", None, "gzip", None, "gzip", None]


async def test_bad_filter_is_a_typed_error(client: TypesenseClient) -> None:
    name = unique_name("badfilter")
    await client.create_collection(_schema(name))
    with pytest.raises(TypesenseError) as info:
        await client.search(name, SearchParams(q="*", query_by="title", filter_by="nope:=1"))
    assert info.value.status == 404 or info.value.status == 400
    assert "nope" in info.value.message


async def test_documents_and_aliases(client: TypesenseClient) -> None:
    name = unique_name("docs")
    alias = unique_name("alias")
    await client.create_collection(_schema(name))
    await client.import_documents(name, DOCS)
    assert (await client.get_document(name, "3"))["title"] == "vault number 3"
    assert await client.delete_documents(name, "score:<=10") == 10
    assert (await client.retrieve_collection(name)).num_documents == 15
    assert await client.retrieve_alias(alias) is None
    await client.upsert_alias(alias, name)
    assert await client.retrieve_alias(alias) == name
    via_alias = await client.search(alias, SearchParams(q="*", query_by="title"))
    assert via_alias.found == 15


async def test_wrong_key_is_401(typesense_server: TypesenseServer) -> None:
    async with TypesenseClient(typesense_server.url, "wrong") as c:
        with pytest.raises(TypesenseError) as info:
            await c.list_collections()
    assert info.value.status == 401


async def test_unreachable_server_fails_fast(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    started = time.monotonic()
    async with TypesenseClient(url, "k") as c:
        with pytest.raises(TypesenseConnectionError) as info:
            await c.health()
    assert time.monotonic() - started < 3
    assert info.value.status is None
    assert "cannot reach" in info.value.message


async def test_shared_http_client_is_left_open(typesense_server: TypesenseServer) -> None:
    async with httpx.AsyncClient() as http:
        c = TypesenseClient(typesense_server.url, typesense_server.api_key, http)
        assert await c.health() is True
        await c.aclose()
        assert not http.is_closed


def test_search_params_query() -> None:
    q = SearchParams(q="eth", query_by="name", prefix=False, extra={"infix": "off"}).to_query()
    assert q == {
        "q": "eth",
        "query_by": "name",
        "page": "1",
        "per_page": "10",
        "prefix": "false",
        "infix": "off",
    }


@settings(deadline=None)  # a shared, loaded machine; the example count bounds it
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=20),
        st.text(max_size=60),
        max_size=6,
    )
)
def test_request_url_is_the_url_httpx_builds_from_params(params: dict[str, str]) -> None:
    base, path = "http://127.0.0.1:8108", "/collections/v%C3%A4ults/documents/search"
    # What a client's request(url, params=...) builds: the Request merges the params.
    expected = httpx.Request("GET", base + path, params=params).url
    built = httpx.Request("GET", request_url(base, path, params)).url
    assert built.raw_path == expected.raw_path
    assert built == expected


def test_request_url_of_a_filtered_search() -> None:
    query = SearchParams(
        q="usdc lending", filter_by="chain:=[`base`] && apy:>=3.5", sort_by="apy:desc"
    ).to_query()
    url = request_url("http://ts:8108", "/collections/vaults/documents/search", query)
    assert url == (
        "http://ts:8108/collections/vaults/documents/search?q=usdc+lending"
        "&filter_by=chain%3A%3D%5B%60base%60%5D+%26%26+apy%3A%3E%3D3.5&sort_by=apy%3Adesc"
        "&page=1&per_page=10"
    )
