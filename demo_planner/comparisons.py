"""Comparisons: "is USDC yield better on Arbitrum or Base?", "Aave vs Morpho for WETH".

A comparison names two or more sides of one kind (chains, protocols or assets) and asks
between them ("or", "vs", "compare", "better", "which"). Each side gets a search of its own
with every other condition of the question, so one side's large vaults cannot crowd the
other's out of a merged list. A question about one asset's yield compares that asset's
own vaults (single-asset: an LP pool pays for holding a second token too), ranked by APY
among vaults of at least the top-yields floor's TVL, said in the answer.

The verdict is read from the results: each side's best APY among the vaults listed
(likely outliers left out), quoted as the tool wrote it, with the vault it belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass

from demo_planner import vocabulary as voc
from demo_planner.vault_table import VaultRow, vault_rows

# The TVL floor of a cross-chain yield comparison, the same as the top-yields tool's own
# default: a tiny pool's APY says little about where a deposit earns more.
COMPARE_MIN_TVL = 1_000_000.0


def compares(words: list[str]) -> bool:
    """Whether the question asks between its sides ("or", "vs", "better", "which")."""
    return bool(set(words) & voc.COMPARE_WORDS)


@dataclass(frozen=True)
class Side:
    """One side of a comparison and its best vault."""

    label: str
    best: VaultRow | None
    failed: bool = False


def sides_from(labels: list[str], results: list[str | None]) -> list[Side]:
    """Each side's best vault by APY from its own search (None: no result came back)."""
    out = []
    for label, text in zip(labels, results, strict=True):
        if text is None or text.startswith("Error:"):
            out.append(Side(label, None, failed=True))
            continue
        rows = [r for r in vault_rows(text) if not r.outlier and _apy(r.apy) is not None]
        best = max(rows, key=lambda r: _apy(r.apy) or 0.0, default=None)
        out.append(Side(label, best))
    return out


def verdict_lines(sides: list[Side], what: str, where: str = "on") -> list[str]:
    """The comparison's verdict in words (`what`: what is compared, "USDC yield"; `where`:
    how a side is named, "on base" for a chain, "for Aave" for a protocol or an asset)."""
    if len(sides) < 2:
        return []
    failed = [s.label for s in sides if s.failed]
    if failed:
        return [
            f"**Verdict:** I could not compare: the search for {', '.join(failed)} did not "
            "answer, and I will not judge from one side."
        ]
    found = [s for s in sides if s.best is not None]
    empty = [s.label for s in sides if s.best is None]
    if not found:
        return [f"**Verdict:** no vault matched for any side ({', '.join(empty)})."]
    ranked = sorted(found, key=_best_apy, reverse=True)
    lead = ranked[0]
    assert lead.best is not None
    quoted = [f"{_best(s)} {where} {s.label}" if s.best else "" for s in ranked]
    if len(ranked) > 1 and ranked[1].best and ranked[1].best.apy == lead.best.apy:
        head = f"**Verdict:** {lead.label} and {ranked[1].label} are level for {what}"
    else:
        head = f"**Verdict:** {lead.label} pays more for {what}"
    line = f"{head}: the best APY listed is {quoted[0]}"
    if len(quoted) > 1:
        line += ", against " + "; ".join(quoted[1:])
    line += "."
    lines = [line]
    if empty:
        lines.append(f"Nothing matched {where} {', '.join(empty)}.")
    lines.append(
        "That compares the best APY of each side's list only; risk ratings and TVL are in "
        "the results below."
    )
    return lines


def _best_apy(side: Side) -> float:
    return (_apy(side.best.apy) if side.best is not None else None) or 0.0


def _best(side: Side) -> str:
    row = side.best
    assert row is not None
    return f"{row.apy} ({row.name}, {row.protocol}, TVL {row.tvl})"


def _apy(text: str) -> float | None:
    try:
        return float(text.rstrip("%").replace(",", ""))
    except ValueError:
        return None
