"""DefiLlama yields: ``GET https://yields.llama.fi/pools`` and ``/chart/{pool}``.

DefiLlama reports APY in **percent** already, so values pass through unchanged.

``parse`` accepts the rows as the API serves them (camelCase, ``pool``) and as common
exporters store them (snake_case such as ``tvl_usd``/``il_risk``, ``poolId`` or
``pool_id_defillama`` for the id), because recorded responses come in both spellings.
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Generator
from operator import attrgetter
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

import httpx
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from data_server.processors.base import (
    ProcessorResult,
    RawBatch,
    chain_slug,
    day_start,
    describe_error,
    drain,
    get_json,
    parse_time,
    to_float,
    vault_id,
)
from data_server.security import secured_vault
from data_server.vaults.model import (
    SOURCE_OUTLIER_FLAG,
    HistoryPoint,
    Vault,
    YieldPrediction,
    YieldTrend,
)

SOURCE = "defillama"
YIELDS_URL = "https://yields.llama.fi"


def _alias(*names: str) -> Any:
    return Field(None, validation_alias=AliasChoices(*names))


class PoolRow(BaseModel):
    """One /pools row in either spelling."""

    model_config = ConfigDict(extra="ignore")

    pool: str = Field(validation_alias=AliasChoices("pool", "poolId", "pool_id_defillama"))
    chain: str
    project: str = Field(validation_alias=AliasChoices("project", "protocol_slug"))
    symbol: str = ""
    tvl_usd: float | None = _alias("tvlUsd", "tvl_usd")
    apy: float | None = _alias("apy")
    apy_base: float | None = _alias("apyBase", "apy_base")
    apy_reward: float | None = _alias("apyReward", "apy_reward")
    stablecoin: bool | None = _alias("stablecoin")
    il_risk: str | None = _alias("ilRisk", "il_risk")
    exposure: str | None = _alias("exposure")
    underlying_tokens: list[str] | None = _alias("underlyingTokens", "underlying_tokens")
    pool_meta: str | None = _alias("poolMeta", "pool_meta")
    url: str | None = _alias("url", "defiLlamaUrl")
    # Mirrors that keep a fetch time per row name it `scrapedAt`.
    timestamp: str | None = _alias("timestamp", "scrapedAt")
    count: int | None = _alias("count")
    outlier: bool | None = _alias("outlier")
    pool_old: str | None = _alias("pool_old", "poolOld")
    apy_mean_30d: float | None = _alias("apyMean30d", "apy_mean_30d")
    apy_pct_1d: float | None = _alias("apyPct1D", "apy_pct_1d")
    apy_pct_7d: float | None = _alias("apyPct7D", "apy_pct_7d")
    apy_pct_30d: float | None = _alias("apyPct30D", "apy_pct_30d")
    il_7d: float | None = _alias("il7d", "il_7d")
    reward_tokens: list[str] | None = _alias("rewardTokens", "reward_tokens")
    predictions: dict[str, Any] | None = _alias("predictions")

    @field_validator(
        "tvl_usd",
        "apy",
        "apy_base",
        "apy_reward",
        "apy_mean_30d",
        "apy_pct_1d",
        "apy_pct_7d",
        "apy_pct_30d",
        "il_7d",
        mode="before",
    )
    @classmethod
    def _finite(cls, value: Any) -> float | None:
        return to_float(value)

    @field_validator("predictions", mode="before")
    @classmethod
    def _predictions(cls, value: Any) -> dict[str, Any] | None:
        # Exports written from pandas keep it as the dict's Python repr: read as a literal.
        if isinstance(value, str) and len(value) <= 500:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                return None
        return value if isinstance(value, dict) else None

    def trend(self) -> YieldTrend | None:
        """The row's APY trend, or None when it carries none of it."""
        found = self.predictions or {}
        prediction = None
        if found.get("predictedClass") is not None:
            prediction = YieldPrediction(
                predicted_class=str(found["predictedClass"])[:40],
                probability=to_float(found.get("predictedProbability")),
                confidence=_int_or_none(found.get("binnedConfidence")),
            )
        trend = YieldTrend(
            apy_mean_30d=self.apy_mean_30d,
            apy_change_1d=self.apy_pct_1d,
            apy_change_7d=self.apy_pct_7d,
            apy_change_30d=self.apy_pct_30d,
            il_7d=self.il_7d,
            reward_tokens=[t.lower() for t in self.reward_tokens or [] if isinstance(t, str)][:10],
            prediction=prediction,
        )
        return None if trend == YieldTrend() else trend


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# The models' own validators, without the Python wrappers of `model_validate` and of
# `HistoryPoint(...)` (the same validation and instances): ~0.5-0.8 µs less per row and per
# point, one of each for every pool of /pools.
_validate_row = PoolRow.__pydantic_validator__.validate_python
_validate_point = HistoryPoint.__pydantic_validator__.validate_python


class ChartRow(BaseModel):
    """One /chart/{pool} row (``timestamp`` as ISO time or as a plain date)."""

    model_config = ConfigDict(extra="ignore")

    timestamp: str
    tvl_usd: float | None = _alias("tvlUsd", "tvl_usd")
    apy: float | None = _alias("apy")

    @field_validator("tvl_usd", "apy", mode="before")
    @classmethod
    def _finite(cls, value: Any) -> float | None:
        return to_float(value)


def _rows(body: Any) -> list[Any]:
    """The row list of a response: ``{"data": [...]}``, ``{"pools": [...]}`` or a bare list."""
    if isinstance(body, list):
        return body
    if isinstance(body, dict):
        for key in ("data", "pools"):
            if isinstance(body.get(key), list):
                return body[key]
    return []


def _symbols(symbol: str) -> list[str]:
    return [part.strip().upper() for part in symbol.split("-") if part.strip()]


# Query values a source's page link carries when it was built from a field it did not have
# ("…&factory=undefined"): such a link is broken, so the pool's DefiLlama page is used.
_BROKEN_VALUES = frozenset({"undefined", "null", "none", "nan"})


def _page_url(url: str | None) -> str | None:
    """The source's page link of a pool, unless it is not http(s) or visibly broken."""
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    values = [v.lower() for _, v in parse_qsl(parts.query, keep_blank_values=True)]
    if any(v in _BROKEN_VALUES for v in values) or "/undefined" in parts.path.lower():
        return None
    return url


def _address(row: PoolRow) -> str | None:
    for candidate in (row.pool_old, row.pool):
        if candidate and candidate.startswith("0x") and len(candidate) >= 42:
            return candidate[:42].lower()
    return None


class DefiLlamaProcessor:
    """Pools from DefiLlama yields, with daily history for a chosen set of pools."""

    name: ClassVar[str] = SOURCE

    def __init__(
        self,
        *,
        base_url: str = YIELDS_URL,
        chart_pools: list[str] | None = None,
        chart_limit: int = 10,
        chart_concurrency: int = 4,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.chart_pools = chart_pools
        self.chart_limit = chart_limit
        self.chart_concurrency = chart_concurrency

    def _chart_targets(self, rows: list[Any]) -> list[str]:
        if self.chart_pools is not None:
            return list(self.chart_pools)
        parsed = []
        for row in rows:
            try:
                parsed.append(PoolRow.model_validate(row))
            except ValueError:
                continue
        parsed.sort(key=lambda r: r.tvl_usd or 0.0, reverse=True)
        return [r.pool for r in parsed[: self.chart_limit]]

    async def fetch(self, client: httpx.AsyncClient) -> RawBatch:
        """GET /pools (required), then /chart/{pool} for the chart targets (each optional)."""
        batch = RawBatch(source=SOURCE)
        batch.responses["pools"] = await get_json(client, f"{self.base_url}/pools")
        targets = self._chart_targets(_rows(batch.body("pools")))
        limiter = asyncio.Semaphore(self.chart_concurrency)

        async def one(pool: str) -> None:
            async with limiter:
                try:
                    batch.responses[f"chart:{pool}"] = await get_json(
                        client, f"{self.base_url}/chart/{pool}"
                    )
                except (httpx.HTTPError, ValueError) as exc:
                    batch.warnings.append(f"chart {pool}: {describe_error(exc)}")

        await asyncio.gather(*(one(pool) for pool in targets))
        return batch

    def parse(self, raw: RawBatch) -> ProcessorResult:
        """Normalise pools (percent APY as reported) and chart rows into records."""
        return drain(self.parse_slices(raw, 1 << 30))

    def parse_slices(
        self, raw: RawBatch, size: int
    ) -> Generator[list[Vault], None, ProcessorResult]:
        """`parse`, yielding the vaults `size` at a time as they are built, by id.

        Each vault is yielded once, in its final form (of pools listed twice, the newer
        row), so a pipeline can store and publish a slice while the next is built. The
        result it returns is the one `parse` returns, every vault included.
        """
        result = ProcessorResult(source=SOURCE)
        fallback_time = raw.received_at("pools") or 0
        rows: list[PoolRow] = []
        for index, item in enumerate(_rows(raw.body("pools"))):
            try:
                rows.append(_validate_row(item))
            except ValueError as exc:
                result.warnings.append(f"pool row {index}: {exc.__class__.__name__}")

        # Days of history of a project's longest-listed pool: a lower bound of its age.
        project_days: dict[str, int] = {}
        for row in rows:
            if row.count:
                project_days[row.project] = max(project_days.get(row.project, 0), row.count)

        # Which row each vault comes from: the newest, the later one on a tie.
        winners: dict[str, int] = {}
        chains: list[str] = []
        updated: list[int] = []
        pool_to_id: dict[str, str] = {}
        for index, row in enumerate(rows):
            chains.append(chain_slug(row.chain))
            updated.append(parse_time(row.timestamp) or fallback_time)
            vid = vault_id(SOURCE, chains[index], row.pool)
            pool_to_id[row.pool] = vid
            current = winners.get(vid)
            if current is None or updated[index] >= updated[current]:
                winners[vid] = index

        # By id: a slice is then one id range of the store, and the index receives the
        # documents in the order a publish of the whole store sends them.
        vaults: list[Vault] = []
        for vid in sorted(winners):
            index = winners[vid]
            row = rows[index]
            days = project_days.get(row.project)
            vaults.append(self._vault(row, vid, chains[index], updated[index], days))
            if len(vaults) % size == 0:
                yield vaults[-size:]
        if len(vaults) % size:
            yield vaults[len(vaults) - len(vaults) % size :]
        result.vaults = vaults

        points: dict[tuple[str, int], HistoryPoint] = {}
        for name, response in raw.responses.items():
            if not name.startswith("chart:"):
                continue
            pool = name.removeprefix("chart:")
            vid = pool_to_id.get(pool)
            if vid is None:
                result.warnings.append(f"chart {pool}: pool not in /pools, skipped")
                continue
            for item in _rows(response.body):
                try:
                    chart = ChartRow.model_validate(item)
                except ValueError:
                    continue
                ts = parse_time(chart.timestamp)
                if ts is None:
                    continue
                point = _validate_point(
                    {
                        "vault_id": vid,
                        "timestamp": day_start(ts),
                        "apy": chart.apy,
                        "tvl_usd": chart.tvl_usd,
                    }
                )
                points[(vid, point.timestamp)] = point
        for vault in result.vaults:
            key = (vault.id, day_start(vault.updated_at))
            if key not in points:  # a chart's point of that day stays
                points[key] = _validate_point(
                    {
                        "vault_id": vault.id,
                        "timestamp": key[1],
                        "apy": vault.apy,
                        "tvl_usd": vault.tvl_usd,
                    }
                )
        result.history = sorted(points.values(), key=attrgetter("vault_id", "timestamp"))
        return result

    def _vault(
        self, row: PoolRow, vid: str, chain: str, updated: int, project_days: int | None
    ) -> Vault:
        name = row.symbol if not row.pool_meta else f"{row.symbol} ({row.pool_meta})"
        fields = {
            "id": vid,
            "source": SOURCE,
            "name": name or row.pool,
            "protocol": row.project.lower(),
            "chain": chain,
            "address": _address(row),
            "asset_symbols": _symbols(row.symbol),
            "underlying_tokens": [t.lower() for t in row.underlying_tokens or []],
            "apy": row.apy,
            "apy_base": row.apy_base,
            "apy_reward": row.apy_reward,
            "tvl_usd": row.tvl_usd,
            "stablecoin": bool(row.stablecoin),
            "il_risk": (row.il_risk or "").lower() == "yes",
            "exposure": "single" if (row.exposure or "").lower() == "single" else "multi",
            "url": _page_url(row.url) or f"https://defillama.com/yields/pool/{row.pool}",
            "trend": row.trend(),
            "updated_at": updated,
        }
        flags = [SOURCE_OUTLIER_FLAG] if row.outlier else None
        return secured_vault(fields, protocol_age_days=project_days, source_flags=flags)
