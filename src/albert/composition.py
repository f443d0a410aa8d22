"""The composition root: where one client's chat object is built from its parts and wired.

The one place that picks the implementations: the settings (the tenant's overrides
applied), the model client (counted against the tenant's budget when it costs
something), the local tools, the MCP servers' store, manager and HTTP API, analytics,
and the ChatService over them. The platform's ports come in as arguments (the Durable
Object passes Cloudflare's, tests their own), so nothing here knows which runtime it is on.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from albert.ai.factory import model_client
from albert.ai.model import ModelClient
from albert.analytics.service import AnalyticsService, Defer
from albert.chat.service import ChatService
from albert.chat.socket_policy import SocketPolicy
from albert.clock import Clock, SystemClock
from albert.limits.model_budget import BudgetedModel
from albert.limits.shared import InMemoryLimiter, SharedLimiter
from albert.mcp.access import McpAccess
from albert.mcp.alarm_port import AlarmPort, LoopAlarm
from albert.mcp.config_store import McpConfigStore
from albert.mcp.manager import McpManager
from albert.ports import SocketHub
from albert.settings import Settings
from albert.storage.ports import SqlStorage
from albert.tools.base import Tool
from albert.tools.local_tools import build_local_tools

if TYPE_CHECKING:
    from albert.mcp.api import McpApi
    from albert.mcp.secret_binding import RawSecretLookup, SecretBinding
    from albert.mcp.ssrf import Resolver


def build_chat_service(
    *,
    sql: SqlStorage,
    hub: SocketHub,
    env: Mapping[str, Any],
    http: httpx.AsyncClient,
    clock: Clock | None = None,
    extra_tools: Sequence[Tool] = (),
    defer: Defer | None = None,
    alarms: AlarmPort | None = None,
    secrets: RawSecretLookup | None = None,
    tenant: str = "default",
    model: ModelClient | None = None,
    limiter: SharedLimiter | None = None,
    object_id: str | None = None,
) -> ChatService:
    """Build one client's ChatService from the platform's ports and env.

    `defer` runs work after the response (the object's `ctx.waitUntil`); without it,
    analytics batches go out as background tasks. `model` overrides the client the
    settings pick (the platform's Workers AI binding). `limiter` counts the tenant's
    model calls across objects (albert.limits.model_budget); without it, this process's buckets.
    `object_id`: the platform's id of this object (64 hex digits), which an MCP server's
    OAuth callback is routed by; without it no server can be authorized.
    """
    settings = Settings.from_env(env).for_tenant(tenant)
    clock = clock or SystemClock()
    hub = SocketPolicy(hub, clock, settings.max_sockets_per_client)
    mcp = _mcp_api(
        sql=sql,
        settings=settings,
        clock=clock,
        http=http,
        local_tools=[*build_local_tools(settings, http), *extra_tools],
        hub=hub,
        alarms=alarms,
        secrets=secrets or (lambda _name: None),
        object_id=object_id,
    )
    return ChatService(
        sql=sql,
        clock=clock,
        settings=settings,
        model=_budgeted(
            settings, model or model_client(settings, http), model is not None, limiter, clock
        ),
        tools=mcp.manager,
        hub=hub,
        mcp=mcp,
        analytics=AnalyticsService.from_settings(
            settings, http=http, defer=defer, clock=clock, sql=sql
        ),
    )


def _budgeted(
    settings: Settings,
    model: ModelClient,
    given: bool,
    limiter: SharedLimiter | None,
    clock: Clock,
) -> ModelClient:
    """The model, counted against the tenant's budget when it costs something."""
    # The demo planner costs nothing; a gateway or the platform's model does.
    paid = given or not settings.uses_demo_planner
    budget = settings.model_budget()
    if budget is None or not paid:
        return model
    return BudgetedModel(
        model,
        limiter or InMemoryLimiter(clock),
        tenant=settings.tenant_key,
        allowed=budget,
        window_seconds=settings.model_budget_window_seconds,
    )


def _mcp_api(
    *,
    sql: SqlStorage,
    settings: Settings,
    clock: Clock,
    http: httpx.AsyncClient,
    local_tools: Sequence[Tool],
    hub: SocketHub,
    alarms: AlarmPort | None,
    secrets: RawSecretLookup,
    object_id: str | None,
) -> McpAccess:
    """The client's MCP servers: config store, manager (the turns' ToolProvider), HTTP API."""
    store = McpConfigStore(sql, settings, clock.now_ms)
    edges = _McpEdges(settings, http, secrets)
    # Without the platform's alarm (tests, other hosts) retries ride the event loop.
    loop_alarm: LoopAlarm | None = None
    if alarms is None:
        alarms = loop_alarm = LoopAlarm()
    manager = McpManager(
        store=store,
        settings=settings,
        local_tools=local_tools,
        alarms=alarms,
        secrets=edges,
        hub=hub,
        resolver=edges.resolve,
        clock=clock,
        sql=sql,
    )
    if loop_alarm is not None:
        loop_alarm.bind(manager.on_alarm)

    def api() -> McpApi:
        from albert.mcp.api import McpApi

        return McpApi(
            store,
            manager,
            settings,
            edges.resolve,
            secrets=edges.binding,
            seal=_state_sealer(settings, object_id),
        )

    return McpAccess(store, manager, api)


def _state_sealer(settings: Settings, object_id: str | None) -> Callable[[str], str] | None:
    """Makes the OAuth state of this object's authorizations (albert.mcp.oauth_state)."""
    keys = settings.signing_keys()
    if object_id is None or not keys:
        return None
    from albert.mcp.oauth_state import seal

    return functools.partial(seal, object_id, key=keys[0])


class _McpEdges:
    """The SSRF checks' DNS resolver and the secret bindings of one object's MCP servers,
    made (each once, synchronously) when a server or the MCP API first needs them: an
    object whose client has no server never imports their modules."""

    def __init__(
        self, settings: Settings, http: httpx.AsyncClient, secrets: RawSecretLookup
    ) -> None:
        self._settings = settings
        self._http = http
        self._secrets = secrets

    @functools.cached_property
    def binding(self) -> SecretBinding:
        """MCP_SECRETS for this tenant (a setting that does not parse binds nothing)."""
        from albert.mcp.secret_binding import SecretBinding

        settings = self._settings
        return SecretBinding.from_setting(
            settings.mcp_secrets_json, settings.tenant_key, self._secrets
        )

    @functools.cached_property
    def resolver(self) -> Resolver:
        """DoH in production, the system's locally (albert.mcp.ssrf.resolver_for)."""
        from albert.mcp.ssrf import resolver_for

        settings = self._settings
        return resolver_for(
            settings.mcp_dns_resolver, settings.mode, self._http, settings.mcp_doh_url
        )

    def value_for(self, name: str, url: str) -> str:
        """The secret's value for a connection to `url`, or SecretRefused."""
        return self.binding.value_for(name, url)

    async def resolve(self, host: str) -> list[str]:
        """The host's addresses, for the SSRF checks."""
        return await self.resolver(host)
