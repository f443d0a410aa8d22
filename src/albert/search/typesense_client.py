"""A small async client for the Typesense 0.24 HTTP API, built on httpx.

Why not the `typesense` PyPI client: it is synchronous, pulls in `requests`, and would
add to the worker's cold start; httpx is already imported by the worker, so this module
costs almost nothing extra. It is also used by the data server's vault index, so it stays
general: collections, JSONL imports, searches, documents and aliases.

Every non-2xx answer from Typesense becomes `TypesenseError(status, message)`; a server that
cannot be reached (refused, timed out) becomes `TypesenseConnectionError` (status None).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Iterable, Mapping
from types import TracebackType
from typing import Any, Literal
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=2.0)
API_KEY_HEADER = "X-TYPESENSE-API-KEY"
# What a client sends for answers without gzip (`TypesenseClient(compressed=False)`).
UNCOMPRESSED = {"Accept-Encoding": "identity"}

ImportAction = Literal["create", "upsert", "update", "emplace"]
# The answer line of an imported document, by far the most common one.
_IMPORTED = '{"success":true}'


class TypesenseError(Exception):
    """Typesense answered with an error status (or, for subclasses, could not be reached)."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(f"Typesense {status}: {message}" if status else f"Typesense: {message}")
        self.status = status
        self.message = message


class TypesenseConnectionError(TypesenseError):
    """The server could not be reached or did not answer in time."""

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


class SearchParams(BaseModel):
    """Parameters of one search request; None values are not sent."""

    model_config = ConfigDict(extra="forbid")

    q: str = "*"
    query_by: str | None = None
    filter_by: str | None = None
    sort_by: str | None = None
    facet_by: str | None = None
    page: int = Field(1, ge=1)
    per_page: int = Field(10, ge=0, le=250)
    include_fields: str | None = None
    exclude_fields: str | None = None
    prefix: bool | None = None
    num_typos: int | None = Field(None, ge=0, le=2)
    max_facet_values: int | None = Field(None, ge=1)
    # Any other documented search parameter, sent verbatim.
    extra: dict[str, str] = Field(default_factory=dict)

    def to_query(self) -> dict[str, str]:
        """The URL query parameters Typesense expects."""
        out: dict[str, str] = {}
        for key, value in self.model_dump(exclude={"extra"}, exclude_none=True).items():
            out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        out.update(self.extra)
        return out


class SearchHighlight(BaseModel):
    """Where and how a field matched the query."""

    model_config = ConfigDict(extra="allow")

    field: str
    snippet: str | None = None
    matched_tokens: list[Any] = Field(default_factory=list)


class SearchHit(BaseModel):
    """One matching document."""

    model_config = ConfigDict(extra="allow")

    document: dict[str, Any]
    highlights: list[SearchHighlight] = Field(default_factory=list)
    text_match: int | None = None


class SearchResponse(BaseModel):
    """One page of search results."""

    model_config = ConfigDict(extra="allow")

    found: int
    out_of: int | None = None
    page: int
    search_time_ms: int
    hits: list[SearchHit] = Field(default_factory=list)
    facet_counts: list[dict[str, Any]] = Field(default_factory=list)


class ImportFailure(BaseModel):
    """A document Typesense refused during an import, with its reason."""

    line: int = Field(description="0-based position of the document in the import")
    error: str
    document: str | None = None


class ImportSummary(BaseModel):
    """Outcome of a JSONL import: how many documents went in, and which did not."""

    ok: int
    failures: list[ImportFailure] = Field(default_factory=list)

    @property
    def all_ok(self) -> bool:
        """True when no document was refused."""
        return not self.failures


class CollectionInfo(BaseModel):
    """What GET /collections/{name} says about a collection."""

    model_config = ConfigDict(extra="allow")

    name: str
    num_documents: int
    fields: list[dict[str, Any]] = Field(default_factory=list)
    default_sorting_field: str | None = None
    created_at: int | None = None


class TypesenseClient:
    """Async Typesense API client; pass an `httpx.AsyncClient` to share one (you close it)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        http: httpx.AsyncClient | None = None,
        *,
        timeout: httpx.Timeout | float = DEFAULT_TIMEOUT,
        compressed: bool = True,
    ) -> None:
        """`compressed=False` asks Typesense for uncompressed answers (`Accept-Encoding:
        identity`): for a Typesense beside the caller, where gzip costs CPU at both ends
        (~0.05-0.09 ms per vault search page at the caller) and saves no time on the wire.
        The answers' bytes are the same once decoded."""
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._base_headers = {API_KEY_HEADER: api_key}
        if not compressed:
            self._base_headers.update(UNCOMPRESSED)
        self._owns_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=timeout)
        self._timeout = timeout

    async def aclose(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> TypesenseClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
        content: bytes | None = None,
        content_type: str | None = None,
    ) -> httpx.Response:
        headers = dict(self._base_headers)
        if content_type:
            headers["Content-Type"] = content_type
        return await self._answer(
            self._http.request(
                method,
                request_url(self.base_url, path, params),
                json=json_body,
                content=content,
                headers=headers,
                timeout=self._timeout,
            )
        )

    async def _answer(self, sending: Awaitable[httpx.Response]) -> httpx.Response:
        """The response of `sending`; transport failures and error statuses as our errors."""
        try:
            resp = await sending
        except httpx.TimeoutException as exc:
            raise TypesenseConnectionError(f"timed out: {type(exc).__name__}") from exc
        except httpx.TransportError as exc:
            raise TypesenseConnectionError(
                f"cannot reach {_without_credentials(self.base_url)}: {type(exc).__name__}"
            ) from exc
        if resp.status_code >= 400:
            raise TypesenseError(resp.status_code, _error_message(resp))
        return resp

    async def health(self) -> bool:
        """True when the server says it is ready."""
        resp = await self._request("GET", "/health")
        return bool(resp.json().get("ok"))

    async def create_collection(self, schema: Mapping[str, Any]) -> CollectionInfo:
        """Create a collection from a schema; 409 if it exists."""
        resp = await self._request("POST", "/collections", json_body=dict(schema))
        return CollectionInfo.model_validate(resp.json())

    async def retrieve_collection(self, name: str) -> CollectionInfo:
        """Schema and document count of a collection; 404 if missing."""
        resp = await self._request("GET", f"/collections/{_seg(name)}")
        return CollectionInfo.model_validate(resp.json())

    async def list_collections(self) -> list[CollectionInfo]:
        """Every collection on the server."""
        resp = await self._request("GET", "/collections")
        return [CollectionInfo.model_validate(c) for c in resp.json()]

    async def drop_collection(self, name: str) -> bool:
        """Delete a collection; returns False if it did not exist."""
        try:
            await self._request("DELETE", f"/collections/{_seg(name)}")
        except TypesenseError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def ensure_collection(self, schema: Mapping[str, Any]) -> CollectionInfo:
        """Create the collection unless one of that name exists (its schema is not compared)."""
        try:
            return await self.retrieve_collection(str(schema["name"]))
        except TypesenseError as exc:
            if exc.status != 404:
                raise
        try:
            return await self.create_collection(schema)
        except TypesenseError as exc:
            # Created concurrently by someone else between the two calls.
            if exc.status == 409:
                return await self.retrieve_collection(str(schema["name"]))
            raise

    async def import_documents(
        self,
        collection: str,
        docs: Iterable[Mapping[str, Any]],
        action: ImportAction = "upsert",
    ) -> ImportSummary:
        """Import documents as JSONL; per-document refusals are reported, not raised."""
        lines = [json.dumps(dict(d), separators=(",", ":"), ensure_ascii=False) for d in docs]
        if not lines:
            return ImportSummary(ok=0)
        return await self.import_jsonl(collection, "\n".join(lines).encode(), action)

    async def import_jsonl(
        self, collection: str, body: bytes, action: ImportAction = "upsert"
    ) -> ImportSummary:
        """Import documents already encoded as JSONL, one per line, in one request.

        For callers that encode their own documents (a bulk publish); refusals are
        reported by line, as for `import_documents`.
        """
        if not body.strip():
            return ImportSummary(ok=0)
        resp = await self._request(
            "POST",
            f"/collections/{_seg(collection)}/documents/import",
            params={"action": action},
            content=body,
            content_type="text/plain",
        )
        ok = 0
        failures: list[ImportFailure] = []
        for i, raw in enumerate(resp.text.splitlines()):
            if raw == _IMPORTED:
                ok += 1
                continue
            if not raw.strip():
                continue
            item = json.loads(raw)
            if item.get("success"):
                ok += 1
            else:
                error = str(item.get("error", "unknown"))
                failures.append(ImportFailure(line=i, error=error, document=item.get("document")))
        return ImportSummary(ok=ok, failures=failures)

    async def search(self, collection: str, params: SearchParams) -> SearchResponse:
        """Run one search and return the requested page."""
        # Straight from the bytes: no intermediate dicts for hits and highlights.
        return SearchResponse.model_validate_json(await self.search_body(collection, params))

    async def search_body(self, collection: str, params: SearchParams) -> bytes:
        """Run one search and return Typesense's JSON answer as it came (for a caller that
        validates the page straight into models of its own documents)."""
        url = request_url(
            self.base_url, f"/collections/{_seg(collection)}/documents/search", params.to_query()
        )
        search = self._http.get(url, headers=self._base_headers, timeout=self._timeout)
        return (await self._answer(search)).content

    async def get_document(self, collection: str, doc_id: str) -> dict[str, Any]:
        """One document by id; 404 if missing."""
        resp = await self._request(
            "GET", f"/collections/{_seg(collection)}/documents/{_seg(doc_id)}"
        )
        return dict(resp.json())

    async def delete_documents(self, collection: str, filter_by: str) -> int:
        """Delete every document matching a filter; returns how many went."""
        resp = await self._request(
            "DELETE",
            f"/collections/{_seg(collection)}/documents",
            params={"filter_by": filter_by},
        )
        return int(resp.json().get("num_deleted", 0))

    async def delete_document(self, collection: str, doc_id: str) -> bool:
        """Delete one document by id; False when there was none."""
        try:
            await self._request(
                "DELETE", f"/collections/{_seg(collection)}/documents/{_seg(doc_id)}"
            )
        except TypesenseError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def upsert_alias(self, alias: str, collection: str) -> None:
        """Point an alias at a collection (atomic switch for blue/green publishing)."""
        await self._request(
            "PUT", f"/aliases/{_seg(alias)}", json_body={"collection_name": collection}
        )

    async def retrieve_alias(self, alias: str) -> str | None:
        """The collection an alias points at, or None if the alias does not exist."""
        try:
            resp = await self._request("GET", f"/aliases/{_seg(alias)}")
        except TypesenseError as exc:
            if exc.status == 404:
                return None
            raise
        return str(resp.json()["collection_name"])


def request_url(base_url: str, path: str, params: Mapping[str, str] | None) -> str:
    """The request URL with its query encoded, byte for byte as httpx's `params=` would.

    httpx encodes `params` with the same `urlencode`, then merges the result into the URL
    by parsing and re-validating the whole query: ~0.15 ms of CPU on every vault search.
    """
    url = f"{base_url}{path}"
    return f"{url}?{urlencode(params)}" if params else url


def _without_credentials(url: str) -> str:
    """The URL for a message: its `user:password@` (a TYPESENSE_URL may carry one) left out."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _seg(value: str) -> str:
    """A URL path segment, percent-encoded."""
    return quote(value, safe="")


def _error_message(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:500] or resp.reason_phrase
    if isinstance(body, dict) and "message" in body:
        return str(body["message"])
    return resp.text[:500]
