"""Search-store access: a small async Typesense HTTP client."""

from albert.search.typesense_client import (
    CollectionInfo,
    ImportFailure,
    ImportSummary,
    SearchHighlight,
    SearchHit,
    SearchParams,
    SearchResponse,
    TypesenseClient,
    TypesenseConnectionError,
    TypesenseError,
)

__all__ = [
    "CollectionInfo",
    "ImportFailure",
    "ImportSummary",
    "SearchHighlight",
    "SearchHit",
    "SearchParams",
    "SearchResponse",
    "TypesenseClient",
    "TypesenseConnectionError",
    "TypesenseError",
]
