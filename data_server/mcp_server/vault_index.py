"""Read access to the Typesense `vaults` collection for the MCP tools.

Documents are the flattened `Vault` records the pipeline publishes. Parsing is tolerant:
a field the document lacks is None here, so a schema that grows does not break the tools.

The fields the tools only display (`data_server.vaults.index.DISPLAY_FIELDS`) are not in
the documents: a document carries the store revision of the vault row it was built from,
and a hit takes those fields from that row's record (kept by the store while a document
may refer to it), so it shows one publish's values, whole. A document that carries them
itself (a publish from before they left the index) keeps its own. If they cannot be read,
hits come without them: the search still answers.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from albert.search import SearchParams, SearchResponse, TypesenseClient, TypesenseError
from albert.search.filters import equals
from data_server.coaching import CoachItem
from data_server.store.calls import StoreCalls
from data_server.vaults.index import RecordSource, display_at
from data_server.vaults.model import Vault

log = logging.getLogger(__name__)

# Text fields a free-text query searches, most specific first.
QUERY_BY = "name,protocol,asset_symbols"
MAX_PER_PAGE = 250


class VaultHit(BaseModel):
    """One vault as the tools return it (APY values in percent)."""

    id: str
    name: str
    protocol: str
    chain: str
    source: str | None = None
    address: str | None = None
    asset_symbols: list[str] = Field(default_factory=list)
    underlying_tokens: list[str] = Field(default_factory=list)
    apy: float | None = Field(None, description="Total APY, percent")
    apy_base: float | None = Field(None, description="Base APY, percent")
    apy_reward: float | None = Field(None, description="Reward APY, percent")
    reward_share: float | None = Field(None, description="Share of APY paid as rewards, percent")
    tvl_usd: float | None = None
    share_price: float | None = None
    stablecoin: bool = False
    il_risk: bool = False
    exposure: str | None = None
    security_score: float | None = Field(None, description="0 (worst) to 100 (best)")
    risk_rating: str | None = None
    audits: int | None = None
    protocol_age_days: int | None = None
    exploits: int | None = None
    source_flags: list[str] = Field(default_factory=list)
    status: str | None = None
    url: str | None = None
    outlier: bool = Field(False, description="Likely broken data: an absurd APY, or flagged")
    # As the store's record has it (a display field, read without validation): see
    # `YieldTrend` for its keys.
    trend: dict[str, Any] | None = Field(None, description="The source's APY trend and forecast")
    updated_at: int | None = None

    def coach_item(self) -> CoachItem:
        """The fields the coaching reads."""
        return CoachItem(
            name=self.name,
            apy=self.apy,
            risk_rating=self.risk_rating,
            chain=self.chain,
            protocol=self.protocol,
        )

    def to_vault(self) -> Vault:
        """Back to the shared record (for the wallet reader)."""
        return Vault(
            id=self.id,
            source=self.source or "index",
            name=self.name,
            protocol=self.protocol,
            chain=self.chain,
            address=self.address,
            asset_symbols=self.asset_symbols,
            underlying_tokens=self.underlying_tokens,
            apy=self.apy,
            apy_base=self.apy_base,
            apy_reward=self.apy_reward,
            tvl_usd=self.tvl_usd,
            share_price=self.share_price,
            stablecoin=self.stablecoin,
            il_risk=self.il_risk,
            exposure="multi" if self.exposure == "multi" else "single",
            security_score=self.security_score,
            risk_rating=self.risk_rating if self.risk_rating in _RATINGS else None,  # type: ignore[arg-type]
            url=self.url,
            trend=self.trend,
            updated_at=self.updated_at or 0,
        )


_RATINGS = {"low", "medium", "high", "very_high"}


class _IndexedVault(VaultHit):
    """A hit as its document has it: with the store revision of the row it was built from."""

    revision: int | None = None


# Read once: `model_fields` on the class is a descriptor call, per key of every hit.
_DOCUMENT_FIELDS = frozenset(_IndexedVault.model_fields)
# The display fields, with the value a hit has when its document lacks one.
_DISPLAY_DEFAULTS: dict[str, Any] = {
    "address": None,
    "url": None,
    "apy_reward": None,
    "share_price": None,
    "exploits": None,
    "source_flags": [],
    "trend": None,
}


def _read_document(doc: dict[str, Any]) -> _IndexedVault:
    data = {k: v for k, v in doc.items() if k in _DOCUMENT_FIELDS and v is not None}
    return _IndexedVault.model_validate(data)


def _as_hit(doc: _IndexedVault, display: dict[str, Any] | None) -> VaultHit:
    """The tools' hit of a document, its display fields added where it lacks them.

    The hit is built from the document's validated values (all but `revision`), as
    `model_construct` builds a model, without its per-field pass over defaults: every
    field has its value already (that pass cost more than the rest of reading a hit).
    """
    values, fields_set = doc.__dict__, doc.__pydantic_fields_set__
    del values["revision"]
    fields_set.discard("revision")
    if display:
        for name, value in display.items():
            # Values of a validated vault's record.
            if values[name] == _DISPLAY_DEFAULTS[name]:
                values[name] = value
                fields_set.add(name)
    hit = _new_hit(VaultHit)
    _set_state(hit, "__dict__", values)
    _set_state(hit, "__pydantic_fields_set__", fields_set)
    _set_state(hit, "__pydantic_extra__", None)
    _set_state(hit, "__pydantic_private__", None)
    return _with_reward_share(hit)


_new_hit = VaultHit.__new__
_set_state = object.__setattr__


def hit_from_document(doc: dict[str, Any]) -> VaultHit:
    """Parse one index document; unknown fields are ignored, missing ones are None."""
    return _as_hit(_read_document(doc), None)


def _with_reward_share(hit: VaultHit) -> VaultHit:
    """The hit, with its reward share worked out from its APYs when the index has none."""
    if hit.reward_share is None and hit.apy and hit.apy_reward is not None and hit.apy > 0:
        hit = hit.model_copy(update={"reward_share": round(100.0 * hit.apy_reward / hit.apy, 4)})
    return hit


class _IndexedHit(BaseModel):
    document: _IndexedVault


class _IndexedPage(BaseModel):
    """A Typesense answer read straight into vault hits (unknown fields ignored)."""

    found: int
    page: int
    search_time_ms: int
    hits: list[_IndexedHit] = Field(default_factory=list)
    facet_counts: list[dict[str, Any]] = Field(default_factory=list)


def page_from_answer(body: bytes) -> tuple[int, list[VaultHit], list[dict[str, Any]]]:
    """(found, hits, facet counts) of a search answer, each hit as `hit_from_document` reads it."""
    found, docs, facets = _documents_of_answer(body)
    return found, [_as_hit(doc, None) for doc in docs], facets


def _documents_of_answer(body: bytes) -> tuple[int, list[_IndexedVault], list[dict[str, Any]]]:
    """(found, documents, facet counts) of a search answer.

    The answer is validated in one pass from the bytes. A document with a null where the
    hit has a non-null default (a list, a flag) fails that pass; the page is then read
    document by document, nulls dropped, exactly as `hit_from_document` does.
    """
    try:
        page = _IndexedPage.model_validate_json(body)
    except ValidationError:
        response = SearchResponse.model_validate_json(body)
        docs = [_read_document(h.document) for h in response.hits]
        return response.found, docs, response.facet_counts
    return page.found, [h.document for h in page.hits], page.facet_counts


# The tools read documents only: Typesense is asked for no highlight or snippet (both
# formats), which spares it the work and the answer the bytes on every text query.
NO_HIGHLIGHTS = {"highlight_fields": "none", "enable_highlight_v1": "false"}


def search_params(
    *,
    q: str | None = None,
    filter_by: str = "",
    sort_by: str | None = None,
    page: int = 1,
    per_page: int = 10,
    facet_by: str | None = None,
    query_by: str = QUERY_BY,
) -> SearchParams:
    """The Typesense query a vault search sends."""
    return SearchParams(
        q=q or "*",
        query_by=query_by,
        filter_by=filter_by or None,
        sort_by=sort_by,
        page=page,
        per_page=per_page,
        facet_by=facet_by,
        max_facet_values=100 if facet_by else None,
        extra=NO_HIGHLIGHTS,
    )


class SearchPage(BaseModel):
    """One page of vault hits and the total match count."""

    found: int
    hits: list[VaultHit]


class VaultIndex:
    """Queries one vaults collection through the shared Typesense client."""

    def __init__(
        self,
        client: TypesenseClient,
        collection: str,
        display: RecordSource | None = None,
        calls: StoreCalls | None = None,
    ) -> None:
        """`display` is the write store the display fields are read from, through `calls`
        (bounded reads in worker threads; made here when not given)."""
        self.client = client
        self.collection = collection
        self.display = display
        self._calls = calls or (StoreCalls(display) if display is not None else None)

    async def _hits(self, docs: list[_IndexedVault]) -> list[VaultHit]:
        """The documents as hits, with the display fields of their rows (one read)."""
        display: dict[tuple[str, int], dict[str, Any]] = {}
        keys = [(doc.id, doc.revision) for doc in docs if doc.revision is not None]
        if keys and self.display is not None and self._calls is not None:
            # In a worker thread, bounded: a store that does not answer (PostgreSQL
            # stopped, SQLite busy with a pipeline write) must not hold the event loop.
            try:
                display = await self._calls(display_at, self.display, keys)
            except Exception as exc:  # the search still answers, without these fields
                log.warning("display fields not read, hits shown without them: %s", exc)
        if not display:
            return [_as_hit(doc, None) for doc in docs]
        return [_as_hit(doc, display.get((doc.id, doc.revision or 0))) for doc in docs]

    async def search(
        self,
        *,
        q: str | None = None,
        filter_by: str = "",
        sort_by: str | None = None,
        page: int = 1,
        per_page: int = 10,
        facet_by: str | None = None,
        query_by: str = QUERY_BY,
    ) -> tuple[SearchPage, list[dict[str, Any]]]:
        """One page of vaults (and raw facet counts when facet_by is given)."""
        params = search_params(
            q=q,
            filter_by=filter_by,
            sort_by=sort_by,
            page=page,
            per_page=per_page,
            facet_by=facet_by,
            query_by=query_by,
        )
        found, docs, facets = _documents_of_answer(
            await self.client.search_body(self.collection, params)
        )
        return SearchPage(found=found, hits=await self._hits(docs)), facets

    async def scan(
        self,
        *,
        q: str | None = None,
        filter_by: str = "",
        sort_by: str | None = None,
        max_hits: int = 1000,
        query_by: str = QUERY_BY,
    ) -> tuple[int, list[VaultHit]]:
        """Up to `max_hits` matching vaults over as few pages as possible (bounded)."""
        hits: list[VaultHit] = []
        found = 0
        pages = max(1, -(-max_hits // MAX_PER_PAGE))
        for page in range(1, pages + 1):
            result, _ = await self.search(
                q=q,
                filter_by=filter_by,
                sort_by=sort_by,
                page=page,
                per_page=MAX_PER_PAGE,
                query_by=query_by,
            )
            found = result.found
            hits.extend(result.hits)
            if len(hits) >= min(found, max_hits) or not result.hits:
                break
        return found, hits[:max_hits]

    async def get(self, vault_id: str) -> VaultHit | None:
        """One vault by id, or None when the index does not have it."""
        try:
            doc = await self.client.get_document(self.collection, vault_id)
        except TypesenseError as exc:
            if exc.status == 404:
                return None
            raise
        return (await self._hits([_read_document(doc)]))[0]

    async def get_many(self, vault_ids: Sequence[str]) -> dict[str, VaultHit]:
        """Vaults by id; ids the index does not have are left out."""
        out: dict[str, VaultHit] = {}
        for vault_id in vault_ids:
            hit = await self.get(vault_id)
            if hit is not None:
                out[vault_id] = hit
        return out

    async def vaults_with_addresses(self, chain: str) -> list[Vault]:
        """Every vault on `chain` with a known contract address (the wallet reader's catalog)."""
        _, hits = await self.scan(filter_by=equals("chain", chain), max_hits=5000)
        return [h.to_vault() for h in hits if h.address]
