"""What every protocol processor shares: the result record, the fetch/parse contract, helpers.

A processor has two steps. ``fetch`` speaks HTTP (httpx, the public API's real URLs) and
returns the raw JSON bodies it received, untouched. ``parse`` is pure: raw bodies in,
normalised :class:`~data_server.vaults.model.Vault` and
:class:`~data_server.vaults.model.HistoryPoint` records out. Keeping them apart lets tests
drive ``fetch`` through ``httpx.MockTransport`` with recorded responses, and lets ``parse``
be checked without any HTTP at all.
"""

from __future__ import annotations

import math
import re
from collections.abc import Generator
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Any, ClassVar, Protocol, runtime_checkable

import httpx
from pydantic import BaseModel, Field
from pydantic_core import from_json

from data_server.vaults.model import HistoryPoint, Vault

DAY = 86_400

# Fractions become percent here and nowhere else, so the factor has one name.
FRACTION_TO_PERCENT = 100.0

_CHAIN_ALIASES = {
    "bsc": "bsc",
    "binance": "bsc",
    "bnb": "bsc",
    "op_bnb": "opbnb",
    "opbnb": "opbnb",
    "op-bnb": "opbnb",
    "avax": "avalanche",
    "avalanche": "avalanche",
    "matic": "polygon",
    "polygon": "polygon",
    "arbitrum": "arbitrum",
    "arbitrum one": "arbitrum",
    "optimism": "optimism",
    "op mainnet": "optimism",
    "ethereum": "ethereum",
    "mainnet": "ethereum",
    "eth": "ethereum",
    "gnosis": "gnosis",
    "xdai": "gnosis",
    "zksync era": "zksync",
    "zksync": "zksync",
    # DefiLlama's names of these chains carry a suffix nobody types.
    "hyperliquid l1": "hyperliquid",
    "plume mainnet": "plume",
}

# EVM chain ids used by Yearn and by Beefy's /tvl endpoint.
CHAIN_IDS: dict[int, str] = {
    1: "ethereum",
    10: "optimism",
    56: "bsc",
    100: "gnosis",
    137: "polygon",
    250: "fantom",
    252: "fraxtal",
    324: "zksync",
    8453: "base",
    42161: "arbitrum",
    43114: "avalanche",
    59144: "linea",
    146: "sonic",
    747474: "katana",
}


# A source names a few dozen chains over thousands of rows: each spelling is worked out once.
@lru_cache(maxsize=1024)
def chain_slug(name: str) -> str:
    """Normalise a chain name from any source to one lowercase slug ('Op_bnb' → 'opbnb')."""
    key = name.strip().lower()
    if key in _CHAIN_ALIASES:
        return _CHAIN_ALIASES[key]
    return _CHAIN_SEPARATORS.sub("-", key)


_CHAIN_SEPARATORS = re.compile(r"[\s_]+")


def vault_id(source: str, chain: str, native_id: str) -> str:
    """The stable vault id: '{source}:{chain}:{native id}'."""
    return f"{source}:{chain}:{native_id}"


def to_float(value: Any) -> float | None:
    """A finite float, or None for missing, null, NaN and non-numeric values."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def fraction_to_percent(value: Any) -> float | None:
    """Convert a fraction (0.05) to percent (5.0); None stays None."""
    number = to_float(value)
    return None if number is None else number * FRACTION_TO_PERCENT


def day_start(ts: int) -> int:
    """Unix seconds rounded down to 00:00 UTC of that day."""
    return ts - ts % DAY


def parse_time(value: Any) -> int | None:
    """Unix seconds from an ISO-8601 string, a 'YYYY-MM-DD' date, or a number (s or ms)."""
    if value is None:
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = int(value)
        return number // 1000 if number > 10_000_000_000 else number
    if isinstance(value, str) and value:
        return _parse_iso(value)
    return None


# A source's rows mostly share a handful of timestamps (one snapshot time, one per day of
# a chart), so each distinct text is parsed once.
@lru_cache(maxsize=4096)
def _parse_iso(value: str) -> int | None:
    text = value.strip().replace("Z", "+00:00")
    # Go-style timestamps carry nanoseconds; Python parses at most microseconds.
    text = _SUB_MICROSECONDS.sub(lambda m: m.group(1), text)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp())


_SUB_MICROSECONDS = re.compile(r"(\.\d{6})\d+")


def response_time(response: httpx.Response) -> int:
    """When the server produced a response: its Date header, else the local clock."""
    header = response.headers.get("date")
    if header:
        try:
            return int(parsedate_to_datetime(header).timestamp())
        except (TypeError, ValueError):
            pass
    return int(datetime.now(UTC).timestamp())


class RawResponse(BaseModel):
    """One HTTP response body as received, with the URL and the time it describes."""

    url: str
    status_code: int
    received_at: int = Field(description="Unix seconds from the response Date header")
    body: Any = None


class RawBatch(BaseModel):
    """Everything a processor's fetch step received, keyed by endpoint name."""

    source: str
    responses: dict[str, RawResponse] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)

    def body(self, name: str) -> Any:
        """The body of a named endpoint, or None when it was absent or failed."""
        response = self.responses.get(name)
        return None if response is None else response.body

    def received_at(self, name: str) -> int | None:
        """The Date of a named endpoint's response, or None."""
        response = self.responses.get(name)
        return None if response is None else response.received_at


class ProcessorResult(BaseModel):
    """The normalised output of one processor run."""

    source: str
    vaults: list[Vault] = Field(default_factory=list)
    history: list[HistoryPoint] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


def describe_error(exc: BaseException) -> str:
    """One line naming an error: its type and the first line of its message."""
    lines = str(exc).splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}".rstrip(": ")


async def get_json(
    client: httpx.AsyncClient, url: str, *, params: dict[str, str] | None = None
) -> RawResponse:
    """GET a JSON endpoint; raise for HTTP errors so the caller decides what is fatal."""
    response = await client.get(url, params=params)
    response.raise_for_status()
    try:
        # pydantic-core's parser reads a large body (DefiLlama's /pools) in under half the
        # time of json.loads, to the same Python values.
        body = from_json(response.content)
    except ValueError as exc:
        raise ValueError(f"invalid JSON from {response.request.url}: {exc}") from exc
    return RawResponse(
        url=str(response.request.url),
        status_code=response.status_code,
        received_at=response_time(response),
        body=body,
    )


async def get_optional_json(
    client: httpx.AsyncClient, url: str, batch: RawBatch, name: str
) -> None:
    """GET an endpoint the processor can do without; a failure becomes a warning."""
    try:
        batch.responses[name] = await get_json(client, url)
    except (httpx.HTTPError, ValueError) as exc:
        batch.warnings.append(f"{name}: {describe_error(exc)}")


@runtime_checkable
class Processor(Protocol):
    """A source of vaults: fetch raw bodies over HTTP, parse them into records."""

    name: ClassVar[str]

    async def fetch(self, client: httpx.AsyncClient) -> RawBatch:
        """Fetch every endpoint this source needs; raise when the main one fails."""
        ...

    def parse(self, raw: RawBatch) -> ProcessorResult:
        """Turn raw bodies into normalised records (pure, no I/O)."""
        ...


@runtime_checkable
class SlicedProcessor(Processor, Protocol):
    """A processor that can hand over its vaults in slices while it parses (a large source)."""

    def parse_slices(
        self, raw: RawBatch, size: int
    ) -> Generator[list[Vault], None, ProcessorResult]:
        """Yield each vault once, final, `size` at a time; return what `parse` returns."""
        ...


def drain(slices: Generator[Any, None, ProcessorResult]) -> ProcessorResult:
    """Run a slice generator to its end and return its result."""
    while True:
        try:
            next(slices)
        except StopIteration as stop:
            return stop.value


async def run_processor(processor: Processor, client: httpx.AsyncClient) -> ProcessorResult:
    """Fetch then parse; fetch warnings are carried into the result."""
    raw = await processor.fetch(client)
    result = processor.parse(raw)
    result.warnings[:0] = raw.warnings
    return result


# USD stablecoins by symbol (uppercase), for sources that carry no stablecoin flag.
STABLECOIN_SYMBOLS = frozenset(
    {
        "USDC", "USDT", "DAI", "FRAX", "FRXUSD", "SFRXUSD", "LUSD", "CRVUSD", "SCRVUSD", "GHO",
        "USDE", "SUSDE", "USDS", "SUSDS", "PYUSD", "TUSD", "USDBC", "USDC.E", "USDCE",
        "ARBUSDCE", "AXLUSDC", "USD+", "USDZ", "DOLA", "SDOLA", "MIM", "MAI", "EUSD", "MKUSD",
        "GYD", "USDF", "SUSDF", "MSUSD", "BOLD", "USDA", "FDUSD", "RLUSD", "USD0", "USDX",
        "DEUSD", "RUSD", "WUSDM", "USDM", "GUSDC", "TRUSD", "USDAF", "REUSD", "FXUSD", "USR",
    }
)  # fmt: skip


def is_stable_set(symbols: list[str]) -> bool:
    """True when every symbol is a known USD stablecoin (and there is at least one)."""
    return bool(symbols) and all(s.upper() in STABLECOIN_SYMBOLS for s in symbols)
