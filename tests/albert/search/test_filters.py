"""The filter helpers against a real Typesense 0.24: quoting and OR-group precedence."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from albert.search.filters import (
    FilterValueError,
    all_of,
    any_of,
    compare,
    contains,
    equals,
    none_of,
    number_range,
    one_of,
)
from albert.search.typesense_client import SearchParams, TypesenseClient
from tests.typesense_fixture import TypesenseServer, unique_name

TAGS = ["plain", "a,b", "two words", "x && y:=1", "[1..2]", "(paren)", "colon:value"]


@pytest.fixture
async def collection(
    typesense_server: TypesenseServer,
) -> AsyncIterator[tuple[TypesenseClient, str]]:
    name = unique_name("filters")
    async with TypesenseClient(typesense_server.url, typesense_server.api_key) as client:
        await client.create_collection(
            {
                "name": name,
                "fields": [
                    {"name": "tag", "type": "string", "facet": True},
                    {"name": "chain", "type": "string"},
                    {"name": "n", "type": "float"},
                    {"name": "stable", "type": "bool"},
                ],
            }
        )
        docs = [
            {
                "id": str(i),
                "tag": tag,
                "chain": ["base", "arbitrum", "ethereum"][i % 3],
                "n": i * 1.5 - 3,
                "stable": i % 2 == 0,
            }
            for i, tag in enumerate(TAGS)
        ]
        summary = await client.import_documents(name, docs)
        assert summary.all_ok
        yield client, name
        await client.drop_collection(name)


async def _ids(client: TypesenseClient, name: str, filter_by: str | None) -> set[str]:
    resp = await client.search(
        name, SearchParams(q="*", query_by="tag", filter_by=filter_by, per_page=50)
    )
    return {h.document["id"] for h in resp.hits}


async def test_quoted_values_match_exactly(collection: tuple[TypesenseClient, str]) -> None:
    client, name = collection
    for i, tag in enumerate(TAGS):
        assert await _ids(client, name, equals("tag", tag)) == {str(i)}, tag
    assert await _ids(client, name, one_of("tag", ["a,b", "two words"])) == {"1", "2"}


async def test_or_group_precedence(collection: tuple[TypesenseClient, str]) -> None:
    client, name = collection
    grouped = all_of(["stable:=true", any_of(["chain:=base", "chain:=arbitrum"])])
    expected = {str(i) for i in range(len(TAGS)) if i % 2 == 0 and i % 3 in (0, 1)}
    assert await _ids(client, name, grouped) == expected
    # Without the parentheses Typesense reads left to right and the answer differs:
    # (stable && base) || arbitrum.
    naive = "stable:=true && chain:=base || chain:=arbitrum"
    assert await _ids(client, name, naive) != expected


async def test_numeric_ranges_with_negatives(collection: tuple[TypesenseClient, str]) -> None:
    client, name = collection
    values = {str(i): i * 1.5 - 3 for i in range(len(TAGS))}
    f = number_range("n", -1.5, 3.0)
    assert f == "n:[-1.5..3]"
    assert await _ids(client, name, f) == {k for k, v in values.items() if -1.5 <= v <= 3}
    assert await _ids(client, name, number_range("n", None, -1.5)) == {
        k for k, v in values.items() if v <= -1.5
    }


async def test_an_and_group_inside_an_or_keeps_its_meaning(
    collection: tuple[TypesenseClient, str],
) -> None:
    client, name = collection
    # Either on base, or both stable and on ethereum; the AND group comes second on purpose:
    # unparenthesised, left to right, it would read (base || stable) && ethereum.
    either = any_of(["chain:=base", all_of(["stable:=true", "chain:=ethereum"])])
    assert either == "(chain:=base || (stable:=true && chain:=ethereum))"
    expected = {str(i) for i in range(len(TAGS)) if i % 3 == 0 or (i % 2 == 0 and i % 3 == 2)}
    assert await _ids(client, name, either) == expected
    naive = "chain:=base || stable:=true && chain:=ethereum"
    assert await _ids(client, name, naive) != expected


async def test_exclusions_token_matches_and_comparisons(
    collection: tuple[TypesenseClient, str],
) -> None:
    client, name = collection
    everyone = set(map(str, range(len(TAGS))))
    assert await _ids(client, name, none_of("tag", ["a,b", "two words"])) == everyone - {"1", "2"}
    assert await _ids(client, name, contains("tag", "words")) == {"2"}
    assert await _ids(client, name, compare("n", ">", 0)) == {
        str(i) for i in range(len(TAGS)) if i * 1.5 - 3 > 0
    }
    assert await _ids(client, name, compare("n", "=", 0)) == {"2"}


def test_comparisons_are_the_five_typesense_reads() -> None:
    assert compare("apy", ">=", 2.5e-7) == "apy:>=0.00000025"
    assert compare("tvl_usd", "<=", 1e6) == "tvl_usd:<=1000000"
    with pytest.raises(FilterValueError, match="unsupported comparison"):
        compare("apy", "!=", 1)
    with pytest.raises(FilterValueError, match="empty list"):
        none_of("chain", [])
