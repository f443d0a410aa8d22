"""Assemble the ten tools into one `MCPServer`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool

# The SDK's own header check (no public name), so the answer is the one its check gives.
from mcp.shared.inbound import find_invalid_x_mcp_header, x_mcp_header_map
from mcp.types import CallToolRequestParams
from pydantic import BaseModel

from data_server.mcp_server import catalog_tools, risk_tools, search, vault_tools, wallet_tools
from data_server.mcp_server.deps import ToolDeps
from data_server.mcp_server.framework import ToolOutput, ToolResult, build_tool, wire_form

INSTRUCTIONS = (
    "Vault and yield data for DeFi research. APY values are in percent. Find vaults with "
    "search_vaults (many filters) or top_yields; explain one with analyze_yield, analyze_risk "
    "and vault_history using the vault id from a search. search_protocols and search_vault_assets "
    "list protocols and underlying assets. wallet_portfolio, wallet_positions and "
    "wallet_top_positions read an EVM address on chain. Results with a risk rating come with "
    "yield-versus-risk guidelines: follow them when recommending."
)


def _bind(
    deps: ToolDeps, fn: Callable[[ToolDeps, Any], Awaitable[ToolOutput[Any]]]
) -> Callable[[Any], Awaitable[ToolOutput[Any]]]:
    async def run(params: Any) -> ToolOutput[Any]:
        return await fn(deps, params)

    return run


# (name, description, input model, output model, implementation)
_SPECS: list[tuple[str, str, type[BaseModel], type[BaseModel], Callable[..., Any]]] = [
    (
        "search_vaults",
        "Search DeFi vaults and yield pools with structured filters: chain, protocol, asset, "
        "stablecoin-only, APY range (percent), TVL range (USD), security score, risk rating, "
        "impermanent-loss risk, exposure, audits, protocol age, reward share; sort and page. "
        "Returns matching vaults with APY, TVL, security score and risk rating.",
        search.SearchVaultsInput,
        search.VaultSearchResult,
        search.search_vaults,
    ),
    (
        "analyze_yield",
        "Explain one vault's yield: base versus reward APY, sustainability, its band in the "
        "yield-versus-risk framework, recent history (mean, range, volatility) and how it ranks "
        "among comparable vaults on the same chain.",
        vault_tools.AnalyzeYieldInput,
        vault_tools.YieldAnalysis,
        vault_tools.analyze_yield,
    ),
    (
        "vault_history",
        "Daily APY and TVL history of one vault (up to 365 days), with a summary.",
        vault_tools.VaultHistoryInput,
        vault_tools.VaultHistoryResult,
        vault_tools.vault_history,
    ),
    (
        "search_protocols",
        "Find DeFi protocols by name and see them through their indexed vaults: chains, vault "
        "count, total TVL, APY spread, average security score, audits and age.",
        catalog_tools.SearchProtocolsInput,
        catalog_tools.ProtocolSearchResult,
        catalog_tools.search_protocols,
    ),
    (
        "search_vault_assets",
        "Find the tokens vaults hold (their underlying assets) by symbol or contract address: "
        "per chain, how many vaults hold it, their TVL and the best APY.",
        catalog_tools.SearchVaultAssetsInput,
        catalog_tools.TokenSearchResult,
        catalog_tools.search_vault_assets,
    ),
    (
        "top_yields",
        "The highest-APY vaults that pass sane minimums (default TVL at least $1M, APY at most "
        "1000%), optionally on one chain, for one asset, or stablecoins only.",
        search.TopYieldsInput,
        search.VaultSearchResult,
        search.top_yields,
    ),
    (
        "analyze_risk",
        "Explain one vault's security score and risk rating factor by factor: audits, protocol "
        "age, TVL, exploits, chain, impermanent loss, exposure, reward share, APY level and the "
        "source's own risk flags.",
        vault_tools.VaultIdInput,
        risk_tools.RiskAnalysis,
        risk_tools.analyze_risk,
    ),
    (
        "wallet_portfolio",
        "Summarise an EVM wallet read on chain: total USD value, value per chain, protocol and "
        "risk rating, and the value-weighted APY of its vault positions.",
        wallet_tools.WalletInput,
        wallet_tools.WalletPortfolio,
        wallet_tools.wallet_portfolio,
    ),
    (
        "wallet_positions",
        "List every non-zero native (ETH, …) and token balance and vault position of an EVM "
        "wallet, read on chain, with amounts, USD value where known, and each vault's APY and "
        "risk rating.",
        wallet_tools.WalletPositionsInput,
        wallet_tools.WalletPositionsResult,
        wallet_tools.wallet_positions,
    ),
    (
        "wallet_top_positions",
        "The largest positions of an EVM wallet by USD value, with each one's share of the wallet.",
        wallet_tools.WalletTopPositionsInput,
        wallet_tools.WalletTopPositionsResult,
        wallet_tools.wallet_top_positions,
    ),
]

TOOL_NAMES: tuple[str, ...] = tuple(spec[0] for spec in _SPECS)


def build_tools(deps: ToolDeps) -> list[Tool]:
    """The ten tools bound to their dependencies."""
    return [
        build_tool(name, description, in_model, out_model, _bind(deps, fn))
        for name, description, in_model, out_model, fn in _SPECS
    ]


def declares_param_headers(input_schema: dict[str, Any]) -> bool:
    """Whether the SDK's `Mcp-Param-*` header check has anything to compare for this schema.

    The check compares each header with the argument of an `x-mcp-header` property; a schema
    with no valid annotation (ours have none) passes every request, whatever its headers.
    """
    if find_invalid_x_mcp_header(input_schema) is not None:
        return False
    return bool(x_mcp_header_map(input_schema))


class VaultMcpServer(MCPServer):
    """MCPServer that hands the header check only the schemas it can act on, and hands the
    SDK our tool results already dumped.

    Before every `tools/call` the SDK walks the called tool's whole input schema (30
    parameters for search_vaults) looking for `x-mcp-header` annotations; without any, the
    walk can only conclude that every request passes. Here that answer is worked out once
    per tool, and the schema is not handed to the check when it declares no header: the
    check then passes the request straight away, as it would have after the walk.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._declares: dict[str, tuple[dict[str, Any], bool]] = {}

    # A private SDK method, overridden: its header walk took 334 µs of every search_vaults
    # call (30 parameters, none annotated; measured on mcp 2.3.0), now once per tool.
    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        schema = super()._tool_input_schema(name)
        if schema is None:
            return None
        known = self._declares.get(name)
        if known is None or known[0] is not schema:
            known = (schema, declares_param_headers(schema))
            self._declares[name] = known
        return schema if known[1] else None

    # A private SDK method, overridden: its walk over a dumped ten-vault page took 83 µs,
    # 6 µs on the dict (docs/performance-history.md); no public hook takes a dumped result.
    async def _handle_call_tool(self, ctx: Any, params: CallToolRequestParams) -> Any:
        # The SDK dumps a handler's model result before checking it against the protocol's
        # result model; a result of ours is handed over in that dumped form directly (the
        # SDK takes a dict as it is), so its page of vaults is not walked once more.
        result = await super()._handle_call_tool(ctx, params)
        return wire_form(result) if isinstance(result, ToolResult) else result


def build_mcp_server(deps: ToolDeps) -> MCPServer:
    """An MCPServer exposing the ten tools."""
    return VaultMcpServer(
        name="albert-vaults",
        title="Albert vault and yield data",
        instructions=INSTRUCTIONS,
        version="0.1.0",
        tools=build_tools(deps),
        # The SDK configures logging at this level; INFO would log every outbound request.
        log_level="WARNING",
    )
