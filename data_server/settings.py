"""Settings of the data server: stores, search index, chain RPC, listener, pipeline schedule."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

# Without a schedule nothing says how often runs come: stale after two days.
UNSCHEDULED_STALE_SECONDS = 2 * 24 * 3600.0
# With one: stale once two ticks passed without a run, and half of the next for it to run.
STALE_AFTER_TICKS = 2.5


def is_postgres_url(url: str) -> bool:
    """True for a libpq URL (postgresql:// or postgres://)."""
    return url.startswith(("postgresql://", "postgres://"))


class DatabaseLimits(BaseModel):
    """How long the PostgreSQL write store may take, and how a dead connection is noticed.

    Every connection (the pool's and the pipeline lease's) gets them: without them a
    server that stops answering holds a caller for as long as the kernel keeps the socket.
    """

    model_config = ConfigDict(frozen=True)

    # libpq's own floor is 2 s (1 is taken as 2).
    connect_timeout_seconds: int = Field(5, ge=2)
    statement_timeout_seconds: float = Field(30.0, gt=0)
    # A silent peer (a dropped NAT entry, a failover) is found after idle + interval x count.
    keepalives_idle_seconds: int = Field(30, ge=1)
    keepalives_interval_seconds: int = Field(10, ge=1)
    keepalives_count: int = Field(3, ge=1)
    # The pipeline lease (data_server/store/postgres.py): how long it lasts unrenewed.
    pipeline_lease_seconds: float = Field(60.0, ge=3)


class DataServerSettings(BaseModel):
    """Every knob of the data server; aliases are the environment variable names."""

    model_config = ConfigDict(populate_by_name=True, frozen=True, extra="ignore")

    # Write store filled by the pipeline: PostgreSQL when `database_url` is a
    # postgresql:// URL (replicas share it), else the SQLite file at `db_path`.
    db_path: Path = Field(Path(".state/data_server.sqlite3"), alias="DATA_SERVER_DB_PATH")
    database_url: SecretStr = Field(SecretStr(""), alias="DATABASE_URL")
    # PostgreSQL only (`DatabaseLimits`): connecting, each statement, dead-peer detection.
    database_connect_timeout_seconds: int = Field(5, alias="DATABASE_CONNECT_TIMEOUT_SECONDS", ge=2)
    database_statement_timeout_seconds: float = Field(
        30.0, alias="DATABASE_STATEMENT_TIMEOUT_SECONDS", gt=0
    )
    database_keepalives_idle_seconds: int = Field(
        30, alias="DATABASE_KEEPALIVES_IDLE_SECONDS", ge=1
    )
    database_keepalives_interval_seconds: int = Field(
        10, alias="DATABASE_KEEPALIVES_INTERVAL_SECONDS", ge=1
    )
    database_keepalives_count: int = Field(3, alias="DATABASE_KEEPALIVES_COUNT", ge=1)
    # How long a request (a tool, /healthz) waits for the write store before it answers that
    # the store is unavailable; /readyz waits `store_ready_timeout_seconds`, within the
    # healthcheck's own timeout.
    store_timeout_seconds: float = Field(10.0, alias="STORE_TIMEOUT_SECONDS", gt=0)
    store_ready_timeout_seconds: float = Field(2.0, alias="STORE_READY_TIMEOUT_SECONDS", gt=0)

    # Serving store (Typesense).
    typesense_url: str = Field("http://127.0.0.1:8108", alias="TYPESENSE_URL")
    typesense_api_key: SecretStr = Field(SecretStr("albert-dev-key"), alias="TYPESENSE_API_KEY")
    vaults_collection: str = Field("vaults", alias="TYPESENSE_VAULTS_COLLECTION")
    search_timeout_seconds: float = Field(10.0, alias="SEARCH_TIMEOUT_SECONDS", gt=0)
    # gzip answers from Typesense: off for an index beside the server (both ends spend CPU
    # on it, the wire gains nothing); on for one across a slow network.
    typesense_compressed: bool = Field(False, alias="TYPESENSE_COMPRESSED")

    # Chain access for the wallet tools: `rpc_url` serves `rpc_chain`; `rpc_urls` adds more
    # chains ({"base": "https://..."}; from the environment as a JSON object).
    rpc_url: str = Field("", alias="RPC_URL")
    rpc_chain: str = Field("ethereum", alias="RPC_CHAIN")
    rpc_urls: dict[str, str] = Field(default_factory=dict, alias="RPC_URLS")
    rpc_timeout_seconds: float = Field(10.0, alias="RPC_TIMEOUT_SECONDS", gt=0)
    multicall_batch_size: int = Field(200, alias="MULTICALL_BATCH_SIZE", ge=1, le=1000)

    # HTTP listener.
    host: str = Field("127.0.0.1", alias="DATA_SERVER_HOST")
    port: int = Field(8788, alias="DATA_SERVER_PORT", ge=0, le=65535)
    mcp_path: str = Field("/mcp", alias="DATA_SERVER_MCP_PATH")
    # One log line per HTTP request (uvicorn's access log); off by default: it costs on
    # every tool call, and failures are logged by the tools themselves.
    access_log: bool = Field(False, alias="DATA_SERVER_ACCESS_LOG")
    # Off unless set (data_server/access.py): the bearer key /mcp and /platform require,
    # and requests per client address per minute to them.
    api_key: SecretStr = Field(SecretStr(""), alias="DATA_SERVER_API_KEY")
    requests_per_minute: int = Field(0, alias="DATA_SERVER_REQUESTS_PER_MINUTE", ge=0)
    # A deployment (the image, compose.yaml) sets this: `serve` then refuses to start
    # without an API key rather than serve /mcp and /platform to anyone.
    require_api_key: bool = Field(False, alias="DATA_SERVER_REQUIRE_API_KEY")

    # Pipeline schedule: a cron expression (UTC) makes `albert-data serve` run the pipeline
    # itself (one run at a time across replicas); empty, runs come from `albert-data run`.
    pipeline_cron: str = Field("", alias="PIPELINE_CRON")
    # With a schedule: run once when the server starts too (an empty index fills at once).
    pipeline_run_at_start: bool = Field(False, alias="PIPELINE_RUN_AT_START")
    # Answer the public APIs from the recorded responses (the local stack, tests, demos).
    pipeline_offline: bool = Field(False, alias="PIPELINE_OFFLINE")
    # How old a publish, and the last run, may get before /healthz reports them as stale;
    # unset (or empty), it follows the schedule: `stale_after()`.
    stale_after_seconds: int | None = Field(None, alias="STALE_AFTER_SECONDS", ge=60)
    # With PostgreSQL, a run holds a lease this long unless renewed (see `DatabaseLimits`).
    pipeline_lease_seconds: float = Field(60.0, alias="PIPELINE_LEASE_SECONDS", ge=3)

    @field_validator("stale_after_seconds", mode="before")
    @classmethod
    def _unset_when_empty(cls, value: Any) -> Any:
        # compose.yaml passes `${STALE_AFTER_SECONDS:-}`: empty means "not set".
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("rpc_urls", mode="before")
    @classmethod
    def _parse_rpc_urls(cls, value: Any) -> Any:
        if isinstance(value, str):
            return json.loads(value) if value.strip() else {}
        return value

    @field_validator("mcp_path")
    @classmethod
    def _mcp_path_absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("mcp_path must start with '/'")
        return value.rstrip("/") or "/"

    @classmethod
    def from_env(cls, env: Mapping[str, Any]) -> DataServerSettings:
        """Build settings from environment-style names; unknown names are ignored."""
        names = {f.alias for f in cls.model_fields.values() if f.alias}
        return cls.model_validate({k: v for k, v in env.items() if k in names and v is not None})

    def stale_after(self) -> float:
        """Seconds after which the last run and publish count as stale: STALE_AFTER_SECONDS
        when set; else, with a schedule, STALE_AFTER_TICKS of its longest gap between two
        ticks (two runs missed, and time for a third to finish); else two days."""
        if self.stale_after_seconds is not None:
            return float(self.stale_after_seconds)
        if not self.pipeline_cron:
            return UNSCHEDULED_STALE_SECONDS
        from data_server.pipeline.schedule import longest_gap_seconds

        return STALE_AFTER_TICKS * longest_gap_seconds(self.pipeline_cron)

    def uses_postgres(self) -> bool:
        """True when the write store is the PostgreSQL database at `database_url`."""
        return is_postgres_url(self.database_url.get_secret_value())

    def database_limits(self) -> DatabaseLimits:
        """The PostgreSQL write store's timeouts, keepalives and pipeline lease."""
        return DatabaseLimits(
            connect_timeout_seconds=self.database_connect_timeout_seconds,
            statement_timeout_seconds=self.database_statement_timeout_seconds,
            keepalives_idle_seconds=self.database_keepalives_idle_seconds,
            keepalives_interval_seconds=self.database_keepalives_interval_seconds,
            keepalives_count=self.database_keepalives_count,
            pipeline_lease_seconds=self.pipeline_lease_seconds,
        )

    def chain_rpc_urls(self) -> dict[str, str]:
        """Chain slug → RPC URL for every chain the wallet tools can read."""
        urls = {k.lower(): v for k, v in self.rpc_urls.items() if v}
        if self.rpc_url:
            urls.setdefault(self.rpc_chain.lower(), self.rpc_url)
        return urls
