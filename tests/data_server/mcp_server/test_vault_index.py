"""A search answer read straight into vault hits reads as document-by-document parsing does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from data_server.mcp_server.vault_index import (
    VaultHit,
    _as_hit,
    _IndexedVault,
    _read_document,
    hit_from_document,
    page_from_answer,
)

TEXT = st.text(max_size=12)
NUMBER = st.one_of(st.integers(-(10**6), 10**9), st.floats(-1e6, 1e9, allow_nan=False))
# Each field: values of its type, null, and values it may or may not take (coerced or refused).
VALUES: dict[str, st.SearchStrategy[Any]] = {
    "id": TEXT,
    "name": TEXT,
    "protocol": TEXT,
    "chain": TEXT,
    "asset_symbols": st.lists(TEXT, max_size=3),
    "underlying_tokens": st.lists(TEXT, max_size=2),
    "source_flags": st.lists(TEXT, max_size=2),
    "stablecoin": st.booleans(),
    "il_risk": st.booleans(),
    "apy": NUMBER,
    "apy_base": NUMBER,
    "apy_reward": NUMBER,
    "reward_share": NUMBER,
    "tvl_usd": NUMBER,
    "security_score": NUMBER,
    "audits": st.integers(0, 20),
    "updated_at": st.integers(0, 2 * 10**9),
    "risk_rating": st.sampled_from(["low", "medium", "high", "very_high"]),
    "exposure": st.sampled_from(["single", "multi"]),
}
ODD = st.sampled_from([None, "x", "5", "true", 1, 0, 2.5, [1], ["a", None], {"a": 1}, True])
DOCUMENT = st.fixed_dictionaries(
    {},
    optional={
        **{name: st.one_of(values, values, st.none(), ODD) for name, values in VALUES.items()},
        "publish_seq": st.integers(0, 10**16),
        "unknown_field": ODD,
    },
)
REQUIRED = {"id": "s:c:v", "name": "USDC vault", "protocol": "aave-v3", "chain": "base"}


def answer(documents: list[dict[str, Any]], **extra: Any) -> bytes:
    hits = [{"document": d, "highlight": {}, "highlights": [], "text_match": 1} for d in documents]
    body = {"found": 41, "page": 1, "search_time_ms": 2, "hits": hits, **extra}
    return json.dumps(body).encode()


def one_by_one(documents: list[dict[str, Any]]) -> list[VaultHit] | type[ValidationError]:
    try:
        return [hit_from_document(d) for d in documents]
    except ValidationError:
        return ValidationError


@settings(max_examples=300, deadline=None)  # a shared, loaded machine; the count bounds it
@given(st.lists(DOCUMENT, max_size=4), st.booleans())
def test_a_page_reads_as_its_documents_one_by_one(
    documents: list[dict[str, Any]], complete: bool
) -> None:
    if complete:
        documents = [
            {**d, **{k: v for k, v in REQUIRED.items() if d.get(k) is None}} for d in documents
        ]
    expected = one_by_one(documents)
    if expected is ValidationError:
        with pytest.raises(ValidationError):
            page_from_answer(answer(documents))
        return
    found, hits, facets = page_from_answer(answer(documents, facet_counts=[{"field_name": "x"}]))
    assert (found, facets) == (41, [{"field_name": "x"}])
    assert hits == expected
    assert [type(h) for h in hits] == [VaultHit] * len(hits)


def test_nulls_where_a_hit_has_a_default_read_as_the_default() -> None:
    document = {**REQUIRED, "asset_symbols": None, "stablecoin": None, "apy": 10.0}
    _, [hit], _ = page_from_answer(answer([{**document, "apy_reward": 4.0}]))
    assert hit.asset_symbols == [] and hit.stablecoin is False
    assert hit.reward_share == 40.0  # worked out from the APYs, as before


def test_an_answer_without_its_page_fields_is_refused() -> None:
    with pytest.raises(ValidationError):
        page_from_answer(json.dumps({"found": 1, "hits": []}).encode())


def _plain_hit(document: dict[str, Any]) -> VaultHit:
    """The hit a plain validation of the document makes, its reward share worked out."""
    hit = VaultHit.model_validate({k: v for k, v in document.items() if v is not None})
    if hit.reward_share is None and hit.apy and hit.apy_reward is not None and hit.apy > 0:
        hit = hit.model_copy(update={"reward_share": round(100.0 * hit.apy_reward / hit.apy, 4)})
    return hit


@settings(max_examples=300, deadline=None)  # a shared, loaded machine; the count bounds it
@given(DOCUMENT, st.one_of(st.none(), st.integers(0, 10**6)))
def test_a_hit_is_the_model_a_plain_validation_makes(
    document: dict[str, Any], revision: int | None
) -> None:
    document = {**document, **{k: v for k, v in REQUIRED.items() if document.get(k) is None}}
    if revision is not None:
        document["revision"] = revision
    try:
        expected = _plain_hit(document)
    except ValidationError:
        with pytest.raises(ValidationError):
            hit_from_document(document)
        return
    hit = hit_from_document(document)
    assert type(hit) is VaultHit
    assert hit.model_dump() == expected.model_dump()
    assert hit.model_fields_set == expected.model_fields_set
    assert hit.__pydantic_extra__ == expected.__pydantic_extra__
    assert hit.__pydantic_private__ == expected.__pydantic_private__
    assert hit.model_dump_json() == expected.model_dump_json()


def test_a_hit_is_built_anew_and_its_document_keeps_its_class() -> None:
    document = _read_document({**REQUIRED, "revision": 3})
    hit = _as_hit(document, {"address": "0xabc"})
    assert type(document) is _IndexedVault and type(hit) is VaultHit and hit is not document
    assert hit.address == "0xabc" and "address" in hit.model_fields_set
    assert "revision" not in hit.model_dump()
