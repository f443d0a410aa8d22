"""The Typesense ``vaults`` collection: its schema, the document of a vault, and publish.

Documents are the flattened :class:`~data_server.vaults.model.Vault` (document id = vault id)
plus fields derived for filtering and sorting: ``reward_share`` (percent of the APY paid as
rewards) and the security inputs ``audits`` and ``protocol_age_days``. Unknown values are
left out of a document rather than sent as null, so numeric filters such as ``apy:>5``
never match a vault whose APY is unknown.

The fields the tools only display (``DISPLAY_FIELDS``: ``address``, ``url``, ``apy_reward``,
``share_price``, ``exploits``, ``source_flags``) are not sent: Typesense would store them
with every document of every publish (a quarter of the bytes it parses). A document carries
instead the store ``revision`` of the vault row it was built from, and the tools read those
fields from that row's record: the current row, or, once the vault has changed since, the
copy the store keeps of the replaced row (``superseded_records``) until a publish that
succeeds no longer needs it. So every hit shows one publish's values, whole, even when a
failed publish left the store ahead of the index.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import TypeAdapter, ValidationError
from pydantic_core import from_json, to_json
from typing_extensions import TypedDict

from albert.search.typesense_client import TypesenseClient, TypesenseError
from data_server.store import Publication, VaultStore
from data_server.vaults.model import Vault, is_outlier

log = logging.getLogger(__name__)

COLLECTION = "vaults"
# Documents per import request: large enough that requests are few, small enough that the
# first batch (encoded before anything overlaps) is short and memory stays bounded.
BATCH_SIZE = 2500
SAMPLE_SIZE = 20

# Fields whose published values the staleness check compares with the store.
SAMPLE_FIELDS = ("apy", "apy_base", "apy_reward", "tvl_usd", "security_score", "updated_at")
# What a publish keeps of each document it sent: its id and the sampled values.
_COMPARED_FIELDS = ("id", *SAMPLE_FIELDS)
# Fields the tools only display: read from the store's record of a document's row.
DISPLAY_FIELDS = (
    "address",
    "url",
    "apy_reward",
    "share_price",
    "exploits",
    "source_flags",
    "trend",
)


def _field(name: str, type_: str, **options: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **options}


def collection_schema(name: str = COLLECTION) -> dict[str, Any]:
    """The explicit schema of the vaults collection.

    Typesense indexes only what the tools query: fields they filter, sort or search on.
    Fields the tools only display (``DISPLAY_FIELDS``) are not in the documents at all; a
    collection created before still declares them, stored and not indexed, and keeps
    working (its documents of older publishes carry them). Facets are ``chain``
    (the known-chain check counts vaults per chain) and ``source`` (what each source has in
    the index); strings filter without one. Indexing a field costs Typesense CPU on every
    publish.
    """
    optional = {"optional": True}
    return {
        "name": name,
        "fields": [
            _field("name", "string"),
            _field("source", "string", facet=True),
            _field("protocol", "string"),
            _field("chain", "string", facet=True),
            _field("asset_symbols", "string[]"),
            _field("underlying_tokens", "string[]", **optional),
            _field("stablecoin", "bool"),
            _field("il_risk", "bool"),
            _field("exposure", "string"),
            _field("risk_rating", "string", **optional),
            _field("status", "string"),
            _field("apy", "float", **optional),
            _field("apy_base", "float", **optional),
            _field("reward_share", "float", **optional),
            _field("tvl_usd", "float", **optional),
            _field("security_score", "float", **optional),
            _field("protocol_age_days", "int32", **optional),
            _field("audits", "int32", **optional),
            # Likely broken data (albert data_server.vaults.model.is_outlier): left out of
            # "highest APY" rankings unless asked for.
            _field("outlier", "bool", **optional),
            _field("updated_at", "int64"),
            # Which publish wrote the document; older ones are removed after a full publish.
            _field("publish_seq", "int64"),
        ],
        "default_sorting_field": "updated_at",
    }


async def ensure_schema(client: TypesenseClient, collection: str = COLLECTION) -> bool:
    """Create the collection, or recreate it when it lacks a field of the current schema.

    Every publish rewrites every document, so recreating loses nothing but the time until
    the import ends. Returns True when the collection was (re)created.
    """
    schema = collection_schema(collection)
    try:
        info = await client.retrieve_collection(collection)
    except TypesenseError as exc:
        if exc.status != 404:
            raise
    else:
        present = {(f.get("name"), f.get("type")) for f in info.fields}
        if all((f["name"], f["type"]) in present for f in schema["fields"]):
            return False
        await client.drop_collection(collection)
    await client.ensure_collection(schema)
    return True


def reward_share(vault: Vault) -> float | None:
    """Percent of the total APY paid as rewards, when both are known and the APY is positive."""
    return _reward_share(vault.apy, vault.apy_reward)


def _reward_share(apy: float | None, apy_reward: float | None) -> float | None:
    if apy is None or apy_reward is None or apy <= 0:
        return None
    return round(100.0 * apy_reward / apy, 4)


def document(vault: Vault) -> dict[str, Any]:
    """The index document of a vault (None values omitted)."""
    return record_document(vault.model_dump())


def record_document(record: Mapping[str, Any]) -> dict[str, Any]:
    """The index document of a vault in its stored JSON form (None values omitted).

    The publish reads stored records, which were validated when written, so it builds
    documents from their parsed JSON without a model per row.
    """
    inputs = record.get("security_inputs") or {}
    apy, apy_reward = record.get("apy"), record.get("apy_reward")
    doc: dict[str, Any] = {
        "id": record["id"],
        "name": record["name"],
        "source": record["source"],
        "protocol": record["protocol"],
        "chain": record["chain"],
        "address": record.get("address"),
        "asset_symbols": list(record.get("asset_symbols") or []),
        "underlying_tokens": list(record.get("underlying_tokens") or []),
        "stablecoin": record.get("stablecoin", False),
        "il_risk": record.get("il_risk", False),
        "exposure": record.get("exposure", "single"),
        "risk_rating": record.get("risk_rating"),
        "status": record.get("status", "active"),
        "source_flags": list(inputs.get("source_flags") or []),
        "apy": apy,
        "apy_base": record.get("apy_base"),
        "apy_reward": apy_reward,
        "reward_share": _reward_share(apy, apy_reward),
        "tvl_usd": record.get("tvl_usd"),
        "share_price": record.get("share_price"),
        "security_score": record.get("security_score"),
        "protocol_age_days": inputs.get("protocol_age_days"),
        "audits": inputs.get("audits"),
        "exploits": inputs.get("exploits"),
        "url": record.get("url"),
        "trend": record.get("trend"),
        "outlier": is_outlier(apy, inputs.get("source_flags")),
        "updated_at": record["updated_at"],
    }
    return {k: v for k, v in doc.items() if v is not None}


class _DisplayInputs(TypedDict, total=False):
    exploits: Any
    source_flags: Any


class _DisplayRecord(TypedDict, total=False):
    """The keys of a stored record `display_fields` reads; values as `from_json` gives them."""

    address: Any
    url: Any
    apy_reward: Any
    share_price: Any
    trend: Any
    security_inputs: _DisplayInputs | None


_DISPLAY_RECORD = TypeAdapter(_DisplayRecord)


def display_fields_of_json(record: str | bytes) -> dict[str, Any]:
    """`display_fields` of a record in its stored JSON, the other keys skipped as they are read.

    A search reads this for every hit: building the whole record as dicts first was about
    half the cost of reading a hit's display fields. A record of another shape (a
    `security_inputs` that is not an object) is read whole, as before.
    """
    try:
        return display_fields(_DISPLAY_RECORD.validate_json(record))
    except ValidationError:
        return display_fields(from_json(record))


def display_fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """The display fields of a vault in its stored JSON form, as `record_document` has
    them: None and empty ones left out."""
    inputs = record.get("security_inputs") or {}
    values = {
        "address": record.get("address"),
        "url": record.get("url"),
        "apy_reward": record.get("apy_reward"),
        "share_price": record.get("share_price"),
        "exploits": inputs.get("exploits"),
        "source_flags": inputs.get("source_flags") or None,
        "trend": record.get("trend"),
    }
    return {name: value for name, value in values.items() if value is not None}


def vault_document(vault: Vault) -> dict[str, Any]:
    """The document publish sends of a vault: `record_document` of its stored JSON
    without the display fields, built from the vault itself.

    The pipeline has each vault in hand when it writes it: this skips decoding the JSON
    it just encoded. A float JSON cannot carry (infinity, NaN) is stored as null, so it is
    left out here as well; the keys come in `record_document`'s order, so the encoded
    document is the same bytes. The lists are the vault's own (encode, do not modify).
    """
    inputs = vault.security_inputs
    apy = _finite(vault.apy)
    doc: dict[str, Any] = {
        "id": vault.id,
        "name": vault.name,
        "source": vault.source,
        "protocol": vault.protocol,
        "chain": vault.chain,
        "asset_symbols": vault.asset_symbols,
        "underlying_tokens": vault.underlying_tokens,
        "stablecoin": vault.stablecoin,
        "il_risk": vault.il_risk,
        "exposure": vault.exposure,
    }
    if vault.risk_rating is not None:
        doc["risk_rating"] = vault.risk_rating
    doc["status"] = vault.status
    for name, value in (
        ("apy", apy),
        ("apy_base", _finite(vault.apy_base)),
        ("reward_share", _reward_share(apy, _finite(vault.apy_reward))),
        ("tvl_usd", _finite(vault.tvl_usd)),
        ("security_score", _finite(vault.security_score)),
    ):
        if value is not None:
            doc[name] = value
    if inputs is not None:
        if inputs.protocol_age_days is not None:
            doc["protocol_age_days"] = inputs.protocol_age_days
        if inputs.audits is not None:
            doc["audits"] = inputs.audits
    doc["outlier"] = is_outlier(apy, inputs.source_flags if inputs is not None else None)
    doc["updated_at"] = vault.updated_at
    return doc


def _finite(value: float | None) -> float | None:
    return value if value is None or math.isfinite(value) else None


def _spread(rows: list[dict[str, Any]], size: int = SAMPLE_SIZE) -> list[dict[str, Any]]:
    if not rows:
        return []
    step = max(len(rows) // size, 1)
    return rows[::step][:size]


@dataclass
class DocumentBatch:
    """One import request's worth of vaults, encoded as JSONL documents."""

    body: bytes
    # Per document: its id and the values the staleness check compares (None when absent).
    compared: list[dict[str, Any]]
    # Per document: the store revision of the row it was built from.
    revisions: list[int]


def encode_records(records: Iterable[tuple[str, str, int]], seq: int) -> DocumentBatch:
    """(id, stored record JSON, row revision) triples as JSONL documents of publish `seq`."""
    return _encode(
        (
            (*_published(record_document(from_json(record))), revision)
            for _, record, revision in records
        ),
        seq,
    )


def _published(doc: dict[str, Any]) -> tuple[dict[str, Any], float | None]:
    """A full document without its display fields, and its reward APY (a sampled value)."""
    apy_reward = doc.get("apy_reward")
    for name in DISPLAY_FIELDS:
        doc.pop(name, None)
    return doc, apy_reward


def encode_vaults(vaults: Iterable[Vault], seq: int, revisions: Mapping[str, int]) -> DocumentBatch:
    """Vaults whose rows have these revisions as JSONL documents of publish `seq`: the
    bytes `encode_records` makes of their stored JSON."""
    return _encode(
        (
            (vault_document(vault), _finite(vault.apy_reward), revisions[vault.id])
            for vault in vaults
        ),
        seq,
    )


def _encode(docs: Iterable[tuple[dict[str, Any], float | None, int]], seq: int) -> DocumentBatch:
    lines: list[bytes] = []
    compared: list[dict[str, Any]] = []
    revisions: list[int] = []
    for doc, apy_reward, revision in docs:
        doc["publish_seq"] = seq
        doc["revision"] = revision
        lines.append(to_json(doc))
        get = doc.get
        row = {field: get(field) for field in _COMPARED_FIELDS}
        row["apy_reward"] = apy_reward  # a display field: kept out of the document
        compared.append(row)
        revisions.append(revision)
    return DocumentBatch(body=b"\n".join(lines), compared=compared, revisions=revisions)


class RecordSource(Protocol):
    """The vault rows documents were built from (the write store)."""

    def records_at(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], str]:
        """Record JSON by (vault id, row revision); rows it no longer has are left out."""
        ...


def display_at(
    store: RecordSource, keys: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The display fields of the rows documents were built from, by (vault id, row
    revision), in one read of the store; rows it no longer has are left out."""
    return {key: display_fields_of_json(record) for key, record in store.records_at(keys).items()}


def with_display(docs: list[dict[str, Any]], store: RecordSource) -> list[dict[str, Any]]:
    """Index documents with their display fields added from the rows they were built from.

    A document keeps any display field it carries itself (documents of a publish from
    before the fields left the index).
    """
    keys = [(doc["id"], doc["revision"]) for doc in docs if "revision" in doc]
    display = display_at(store, keys) if keys else {}
    out = []
    for doc in docs:
        fields = display.get((doc.get("id"), doc.get("revision")))  # type: ignore[arg-type]
        if fields is None:
            out.append(doc)
            continue
        # A document always had its source flags, empty ones too.
        out.append({"source_flags": [], **fields, **doc})
    return out


_NOTHING = object()


class Publisher:
    """One publish of the write store, which can be fed while the store is being written.

    The pipeline hands over each slice of vaults once its store transaction has committed
    (`push`), so Typesense indexes one slice while the next is merged; `finish` then pushes
    every stored vault not pushed yet, removes documents of earlier publishes and records
    the publication. Only a finished publish removes anything: a run that fails or is
    cancelled midway leaves the index holding every document it held, some of them newer,
    and never a vault the store has not committed.

    Imports run one at a time in a task of their own, at most `queue_size` batches behind
    the pipeline. Import refusals do not raise: they are recorded as the publication's
    error (the staleness check then sees the gap). An import that raises (Typesense
    unreachable) stops the publish: later batches are dropped and `finish` raises it.
    """

    def __init__(
        self,
        store: VaultStore,
        client: TypesenseClient,
        *,
        collection: str = COLLECTION,
        run_id: str | None = None,
        batch_size: int = BATCH_SIZE,
        queue_size: int = 8,
        since_revision: int | None = None,
    ) -> None:
        """`since_revision` makes the publish incremental: the index is taken to hold every
        row up to that store revision (the last successful publish's), so only rows
        changed after it are sent and nothing else is removed but the vaults handed to
        `remove`. Without it, the whole store is sent and older documents are removed."""
        self.store = store
        self.since_revision = since_revision
        self._gone: set[str] = set()
        self.deleted = 0
        self.client = client
        self.collection = collection
        self.run_id = run_id
        self.batch_size = batch_size
        # Which publish wrote a document: `finish` removes the ones written before.
        self.seq = time.time_ns() // 1000
        self._queue: asyncio.Queue[DocumentBatch | None] = asyncio.Queue(queue_size)
        self._task: asyncio.Task[None] | None = None
        self._sent: set[str] = set()
        # Accepted documents by id (a vault pushed twice counts once, as the store has it).
        self._pushed: dict[str, dict[str, Any]] = {}
        # The row revision each accepted document was built from, by id.
        self._revisions: dict[str, int] = {}
        self._failures: list[str] = []
        self._error: Exception | None = None
        # A batch taken from the queue that did not fit into the import being joined.
        self._held: DocumentBatch | object | None = _NOTHING

    @property
    def upserted(self) -> int:
        """Documents the index accepted in this publish."""
        return len(self._pushed)

    def remove(self, vault_ids: Iterable[str]) -> None:
        """Vaults the store no longer has: their documents go when the publish finishes."""
        self._gone.update(vault_ids)
        self._start()

    @property
    def started(self) -> bool:
        """True once anything was handed over (or `finish` began)."""
        return self._task is not None

    async def push(self, batch: DocumentBatch) -> None:
        """Queue documents of vaults whose store write has committed."""
        if not batch.compared:
            return
        self._start()
        self._sent.update(row["id"] for row in batch.compared)
        await self._queue.put(batch)

    def _start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._import_all())

    async def _import_all(self) -> None:
        try:
            # Before any document is sent: the store keeps replaced rows from now on.
            await asyncio.to_thread(self.store.publish_begins)
            await ensure_schema(self.client, self.collection)
        except Exception as exc:  # reported by `finish`, like a failed import
            self._error = exc
        while (batch := await self._next_batch()) is not None:
            if self._error is not None:
                continue  # drained, so `push` never waits on a stopped publish
            try:
                summary = await self.client.import_jsonl(self.collection, batch.body, "upsert")
            except Exception as exc:
                self._error = exc
                continue
            refused = {f.line for f in summary.failures}
            for i, row in enumerate(batch.compared):
                if i not in refused:
                    self._pushed[row["id"]] = row
                    self._revisions[row["id"]] = batch.revisions[i]
            self._failures.extend(
                f"{batch.compared[f.line]['id']}: {f.error}" for f in summary.failures[:5]
            )

    async def _next_batch(self) -> DocumentBatch | None:
        """The next import: what is queued joined up to `batch_size` documents (None: end).

        The pipeline's slices are small so that indexing starts early; when Typesense is
        the slower side, slices wait in the queue and go out together, in fewer requests.
        """
        first = self._held
        self._held = _NOTHING
        if first is _NOTHING:
            first = await self._queue.get()
        if first is None:
            return None
        assert isinstance(first, DocumentBatch)
        parts, count = [first], len(first.compared)
        while count < self.batch_size and not self._queue.empty():
            following = self._queue.get_nowait()
            if following is None or count + len(following.compared) > self.batch_size:
                self._held = following  # the end, or the start of the next import
                break
            parts.append(following)
            count += len(following.compared)
        if len(parts) == 1:
            return first
        return DocumentBatch(
            body=b"\n".join(part.body for part in parts),
            compared=[row for part in parts for row in part.compared],
            revisions=[revision for part in parts for revision in part.revisions],
        )

    def _encode_stored(self, vault_ids: list[str]) -> DocumentBatch:
        return encode_records(self.store.published_records(vault_ids), self.seq)

    async def finish(self) -> Publication:
        """Push every stored vault not pushed yet, remove older documents, record it all."""
        self._start()
        # Vaults this run did not write (a failed source's, or ones a source no longer
        # lists) are published as stored; the next batch is encoded during an import.
        stored = await asyncio.to_thread(
            lambda: self.store.vault_ids(since_revision=self.since_revision)
        )
        missing = [vault_id for vault_id in stored if vault_id not in self._sent]
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            await self.push(await asyncio.to_thread(self._encode_stored, chunk))
        # The store's checksum (a read of every row) is taken while the last import runs.
        fingerprint = asyncio.create_task(asyncio.to_thread(self.store.fingerprint))
        try:
            await self._queue.put(None)
            assert self._task is not None
            await self._task
        finally:
            checksum = await fingerprint
        if self._error is not None:
            raise self._error
        for vault_id in sorted(self._gone):
            self.deleted += await self.client.delete_document(self.collection, vault_id)
        if self.since_revision is None:
            try:
                self.deleted += await self.client.delete_documents(
                    self.collection, f"publish_seq:<{self.seq}"
                )
            except TypesenseError as exc:
                if exc.status != 404:
                    raise
        # The index holds this publish's documents only: replaced rows that none of them
        # was built from are no longer read.
        try:
            await asyncio.to_thread(self.store.drop_superseded, self._revisions)
        except Exception as exc:  # they only take room until the next publish drops them
            log.warning("superseded vault rows not removed: %s", exc)
        info = await self.client.retrieve_collection(self.collection)
        error = None
        if self._failures:
            error = f"{len(self._failures)}+ documents refused: " + "; ".join(self._failures[:5])
        pushed = [self._pushed[vault_id] for vault_id in sorted(self._pushed)]
        publication = Publication(
            run_id=self.run_id,
            collection=self.collection,
            published_at=time.time(),
            count=info.num_documents,
            newest_updated_at=max((row["updated_at"] for row in pushed), default=None),
            revision=checksum.revision,
            checksum=checksum.checksum,
            sample=_spread(pushed),
            error=error,
        )
        return await asyncio.to_thread(self.store.record_publication, publication)

    async def abort(self) -> None:
        """Stop a publish that will not be finished (a crash or cancellation midway)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.wait({self._task})


async def publish(
    store: VaultStore,
    client: TypesenseClient,
    *,
    collection: str = COLLECTION,
    run_id: str | None = None,
    batch_size: int = BATCH_SIZE,
) -> Publication:
    """Push the whole write store to the index and record the publication.

    Batches are encoded in a worker thread while the previous one is being indexed, so
    building documents overlaps with Typesense's own work. Import refusals do not raise:
    they are recorded as the publication's error (and the staleness check will then see
    the gap). Typesense being unreachable does raise.
    """
    publisher = Publisher(
        store, client, collection=collection, run_id=run_id, batch_size=batch_size
    )
    try:
        return await publisher.finish()
    finally:
        await publisher.abort()
