"""The analyze_address tool: the platform's address analysis, summarised for the model."""

from __future__ import annotations

import httpx
from pydantic import Field, field_validator

from albert.settings import Settings
from albert.tools.addresses import EVM_CHAINS, AddressError, to_checksum_address
from albert.tools.base import LocalTool, ToolInput, ToolResult
from albert.tools.platform_client import AddressAnalysis, PlatformClient, PlatformError

DESCRIPTION = (
    "Risk and activity read on a wallet or contract address: labels (exchange wallet, "
    "exploiter, token contract, ...), recorded facts with their sources, first/last seen when "
    "known, and risk flags with reasons. Use it for questions like 'is 0x... risky?' or 'whose "
    f"address is this?'. Accepts EVM addresses only ({', '.join(EVM_CHAINS)}): 0x plus 40 hex "
    "digits. Solana, Bitcoin and other non-EVM addresses are not supported. An address with "
    "no record gets an explicit 'no data on record' answer: report that, do not guess."
)


class AddressAnalysisInput(ToolInput):
    """Arguments of analyze_address."""

    address: str = Field(
        min_length=1,
        max_length=100,
        description=(
            "The EVM address to analyse, exactly as the user gave it: 0x followed by 40 hex "
            "digits. Mixed case must pass the EIP-55 checksum; all-lowercase is accepted. "
            "Solana/Bitcoin addresses and ENS names are not accepted."
        ),
    )

    @field_validator("address")
    @classmethod
    def _evm_address(cls, value: str) -> str:
        try:
            return to_checksum_address(value)
        except AddressError as exc:
            raise ValueError(str(exc)) from exc


def address_analysis_tool(settings: Settings, http: httpx.AsyncClient) -> LocalTool:
    """The analyze_address tool over the platform's address analysis service."""
    client = PlatformClient(
        settings.platform_api_url,
        http,
        timeout=settings.tool_timeout_seconds,
        api_key=settings.data_server_api_key.get_secret_value(),
    )

    async def run(args: AddressAnalysisInput) -> ToolResult:
        try:
            analysis = await client.address(args.address)
        except PlatformError as exc:
            return ToolResult.error(f"address analysis failed: {exc.message}")
        return ToolResult.text(
            summarise_address(analysis), structured={"address": analysis.model_dump(mode="json")}
        )

    return LocalTool("analyze_address", DESCRIPTION, AddressAnalysisInput, run)


def summarise_address(a: AddressAnalysis) -> str:
    """A short readable summary of an address analysis."""
    if not a.known:
        return (
            f"{a.address}: {a.summary}\n"
            f"Scope: {a.scope}.\nNot on record: {', '.join(a.not_on_record)}."
        )
    lines = [f"{a.address}: {', '.join(a.labels) or 'known address'}"]
    details = _details(a)
    if details:
        lines.append("; ".join(details) + ".")
    lines.append(f"Risk level: {a.risk_level.replace('_', ' ').upper()}")
    for flag in a.risk_flags:
        lines.append(f"- [{flag.severity}] {flag.code}: {flag.reason} (source: {flag.source})")
    lines += _records(a)
    if a.not_on_record:
        lines.append(f"Not on record: {', '.join(a.not_on_record)}.")
    lines.append(f"Scope: {a.scope}.")
    return "\n".join(lines)


def _details(a: AddressAnalysis) -> list[str]:
    """Who the address is: entity, category, kind of account, when it was active."""
    details = []
    if a.entity:
        details.append(f"entity {a.entity}")
    if a.category:
        details.append(f"category {a.category.replace('_', ' ')}")
    if a.is_contract is not None:
        details.append("contract" if a.is_contract else "externally owned account")
    if a.first_seen:
        details.append(f"first seen {a.first_seen}")
    if a.last_seen:
        details.append(f"last seen {a.last_seen}")
    return details


def _records(a: AddressAnalysis) -> list[str]:
    """What is on record about it: facts, activity counts, token holdings."""
    lines = []
    if a.facts:
        lines.append("Facts on record:")
        lines += [f"- {fact.text} (source: {fact.source})" for fact in a.facts]
    if a.activity_counts:
        counts = ", ".join(f"{k}: {v:,}" for k, v in a.activity_counts.items())
        lines.append(f"Activity: {counts}.")
    if a.tokens_held:
        held = ", ".join(f"{h.amount:,.4g} {h.symbol} (as of {h.as_of})" for h in a.tokens_held)
        lines.append(f"Tokens held: {held}.")
    return lines
