"""Address analysis: labels, recorded facts and risk flags for a wallet or contract."""

from __future__ import annotations

from albert.tools.addresses import EVM_CHAINS
from albert.tools.platform_client import (
    AddressAnalysis,
    AddressRiskFlag,
    AddressRiskLevel,
    TokenIdentity,
)
from data_server.platform.data import AddressRecord, PlatformData
from data_server.platform.tokens import TokenIndex

SCOPE = (
    "EVM address; records are Ethereum mainnet facts (the same address on "
    f"{', '.join(c for c in EVM_CHAINS if c != 'ethereum')} is not covered)"
)
_NEVER_RECORDED = ["transaction counts", "first/last activity dates", "token balances"]
_LEVELS: tuple[AddressRiskLevel, ...] = ("none_known", "low", "moderate", "high", "critical")
_SEVERITY_TO_LEVEL: dict[str, AddressRiskLevel] = {
    "info": "none_known",
    "low": "low",
    "moderate": "moderate",
    "high": "high",
    "critical": "critical",
}


class AddressBook:
    """Looks up what is on record about an address."""

    def __init__(self, data: PlatformData, tokens: TokenIndex) -> None:
        self._records = {r.address.lower(): r for r in data.addresses}
        self._tokens = tokens

    def analyse(self, checksum_address: str) -> AddressAnalysis:
        """The analysis of an already validated, checksummed EVM address."""
        record = self._records.get(checksum_address.lower())
        token = self._tokens.identity_of_contract("ethereum", checksum_address)
        if record is None and token is None:
            return AddressAnalysis(
                address=checksum_address,
                known=False,
                scope=SCOPE,
                summary=(
                    "No data on record for this address: it carries no label, no known "
                    "incident and is not a token contract we track. That is not a clean bill "
                    "of health; it only means this service knows nothing about it."
                ),
                risk_level="unknown",
                not_on_record=["labels", "risk flags", *_NEVER_RECORDED],
            )
        return self._known(checksum_address, record, token)

    def _known(
        self, address: str, record: AddressRecord | None, token: TokenIdentity | None
    ) -> AddressAnalysis:
        labels = list(record.labels) if record else []
        flags: list[AddressRiskFlag] = list(record.risk_flags) if record else []
        if token is not None:
            labels.append(f"Token contract: {token.name} ({token.symbol})")
            if not any(f.code == "token_contract" for f in flags):
                flags.append(
                    AddressRiskFlag(
                        code="token_contract",
                        severity="info",
                        reason=(
                            f"The {token.symbol} token contract; use the token analysis for "
                            "its market and risk read."
                        ),
                        source="token contract list (fixtures/README.md)",
                    )
                )
        level = _level(flags)
        not_on_record = [
            name
            for name, value in (
                ("transaction counts", record.activity_counts if record else None),
                ("token balances", record.tokens_held if record else None),
                ("last activity date", record.last_seen if record else None),
            )
            if value is None
        ]
        return AddressAnalysis(
            address=address,
            known=True,
            scope=SCOPE,
            summary=_summary(labels, record, level),
            labels=labels,
            entity=record.entity if record else (token.name if token else None),
            category=record.category if record else "token_contract",
            is_contract=record.is_contract if record else True,
            first_seen=record.first_seen if record else None,
            last_seen=record.last_seen if record else None,
            activity_counts=record.activity_counts if record else None,
            tokens_held=record.tokens_held if record else None,
            token=token,
            facts=list(record.facts) if record else [],
            risk_level=level,
            risk_flags=flags,
            not_on_record=not_on_record,
        )


def _level(flags: list[AddressRiskFlag]) -> AddressRiskLevel:
    worst: AddressRiskLevel = "none_known"
    for flag in flags:
        level = _SEVERITY_TO_LEVEL[flag.severity]
        if _LEVELS.index(level) > _LEVELS.index(worst):
            worst = level
    return worst


def _summary(labels: list[str], record: AddressRecord | None, level: str) -> str:
    name = labels[0] if labels else "Known address"
    category = (record.category if record else "token_contract") or "address"
    if level in ("critical", "high"):
        reasons = "; ".join(
            f.reason
            for f in (record.risk_flags if record else [])
            if f.severity in ("critical", "high")
        )
        return f"{name} ({category.replace('_', ' ')}): {level} risk. {reasons}"
    return f"{name} ({category.replace('_', ' ')}): no risk flags beyond informational notes."
