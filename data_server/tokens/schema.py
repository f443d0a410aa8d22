"""The Typesense `tokens` collection: one document per token deployment (chain + address)."""

from __future__ import annotations

from typing import Any

TOKENS_COLLECTION = "tokens"

# A token without a market-cap rank (e.g. a DEX-only token) gets this rank so that the
# default `rank:asc` order lists it after every ranked token. Renderers show it as "unranked".
UNRANKED = 1_000_000_000

# `optional` fields are absent when the source does not measure them; they are never filled
# with made-up values. Numeric fields are sortable by default in Typesense.
_FIELDS: list[dict[str, Any]] = [
    {"name": "chain", "type": "string", "facet": True},
    {"name": "address", "type": "string"},
    {"name": "symbol", "type": "string"},
    {"name": "name", "type": "string"},
    {"name": "rank", "type": "int32"},
    {"name": "price_usd", "type": "float", "optional": True},
    {"name": "marketcap", "type": "float", "optional": True},
    {"name": "fdv", "type": "float", "optional": True},
    {"name": "liquidity", "type": "float", "optional": True},
    {"name": "volume_24h", "type": "float", "optional": True},
    {"name": "vol_mcap_ratio", "type": "float", "optional": True},
    {"name": "authenticity_score", "type": "int32"},
    {"name": "holders", "type": "int64", "optional": True},
    {"name": "stablecoin", "type": "bool", "facet": True},
    {"name": "price_change_1h", "type": "float", "optional": True},
    {"name": "price_change_24h", "type": "float", "optional": True},
    {"name": "price_change_7d", "type": "float", "optional": True},
    {"name": "image", "type": "string", "optional": True, "index": False},
    {"name": "coingecko_id", "type": "string", "optional": True},
    {"name": "source", "type": "string", "facet": True},
    {"name": "as_of", "type": "int64"},
    {"name": "authenticity_method", "type": "string", "index": False, "optional": True},
]


def tokens_schema(name: str = TOKENS_COLLECTION) -> dict[str, Any]:
    """The collection schema, optionally under another name (tests, blue/green publishing).

    Typesense applies the default sorting field in descending order when a search has no
    `sort_by`; searches that want top-ranked tokens first must send `rank:asc`.
    """
    return {
        "name": name,
        "fields": [dict(f) for f in _FIELDS],
        "default_sorting_field": "rank",
    }


def field_types(schema: dict[str, Any] | None = None) -> dict[str, str]:
    """Field name to Typesense type, `id` included (every document has it)."""
    fields = (schema or tokens_schema())["fields"]
    return {"id": "string", **{f["name"]: f["type"] for f in fields}}
