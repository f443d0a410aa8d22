"""The vault tools' lines, read once for the whole planner; and a page of vaults as an
answer shows it: a lead sentence, then a table.

The vault tools answer with a head line (`103 vaults match; page 1 of 11, sorted by
apy:desc.`) and one line per vault (data_server/mcp_server/search.py `vault_line`); this
module is the planner's one reader of that line (`vault_rows`: the names it learns, the
ids its follow-ups and pointers use). The answer keeps every figure as the tool wrote it;
it only leaves out what a reader does not need (index ids) and links a vault's name to its
page when the tool gave one.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_HEAD = re.compile(
    r"^(?P<found>[\d,]+) vaults match; page (?P<page>\d+) of (?P<pages>\d+), "
    r"sorted by (?P<key>[a-z_]+):(?P<direction>asc|desc)\.$"
)
_LINE = re.compile(
    r"^- (?P<name>.+) \[(?P<protocol>[^\[\]]+) on (?P<chain>[^\[\]]+)\] assets (?P<assets>[^;]*); "
    r"APY (?P<apy>[^ ;]+) \(base (?P<base>[^,]+), rewards (?P<rewards>[^)]+)\); "
    r"TVL (?P<tvl>[^;]+); security (?P<security>[^;]+); risk (?P<risk>[^;]+)"
    r"(?P<outlier>; likely outlier)?; id (?P<id>\S+?)"
    r"(?:; page (?P<url>https://\S+))?$",
    re.MULTILINE,
)
_KEYS = {
    "apy": "APY",
    "apy_base": "base APY",
    "apy_reward": "reward APY",
    "tvl_usd": "TVL",
    "security_score": "security score",
}


class VaultRow(NamedTuple):
    """One vault line, as the tool wrote its fields."""

    name: str
    protocol: str
    chain: str
    assets: str
    apy: str
    base: str
    rewards: str
    tvl: str
    security: str
    risk: str
    url: str | None
    outlier: bool
    vault_id: str


class VaultPage(NamedTuple):
    """A page of a vault search: how many matched, where this page is, its rows."""

    found: str
    page: int
    pages: int
    key: str
    direction: str
    rows: list[VaultRow]
    rest: str  # what follows the vault lines (the guidelines), as the tool wrote it


def vault_rows(text: str) -> list[VaultRow]:
    """Every vault line in a tool's text, in order (wherever the tool put them)."""
    return [_row(found) for found in _LINE.finditer(text)]


def _row(found: re.Match[str]) -> VaultRow:
    return VaultRow(
        name=found["name"],
        protocol=found["protocol"],
        chain=found["chain"],
        assets=found["assets"],
        apy=found["apy"],
        base=found["base"],
        rewards=found["rewards"],
        tvl=found["tvl"],
        security=found["security"],
        risk=found["risk"],
        url=found["url"],
        outlier=found["outlier"] is not None,
        vault_id=found["id"],
    )


def read_page(text: str) -> VaultPage | None:
    """The page a vault tool answered, or None when the text is not one."""
    lines = text.strip().split("\n")
    head = _HEAD.match(lines[0]) if lines else None
    if head is None:
        return None
    rows: list[VaultRow] = []
    index = 1
    while index < len(lines) and (found := _LINE.match(lines[index])) is not None:
        rows.append(_row(found))
        index += 1
    if not rows:
        return None
    return VaultPage(
        found=head["found"],
        page=int(head["page"]),
        pages=int(head["pages"]),
        key=head["key"],
        direction=head["direction"],
        rows=rows,
        rest="\n".join(lines[index:]).strip(),
    )


def lead_sentence(page: VaultPage) -> str:
    """One sentence that answers: how many matched, and which vault leads the order."""
    first = page.rows[0]
    key = _KEYS.get(page.key, page.key.replace("_", " ").strip())
    order = "highest" if page.direction == "desc" else "lowest"
    if page.key == "_text_match":
        order, key = "closest", "match to the name"
    leader = f"**{_cell(first.name)}** ({first.protocol} on {first.chain})"
    figures = f"{first.apy} APY and {first.tvl} TVL"
    matched = "vault matches" if page.found == "1" else "vaults match"
    if page.page > 1:
        return (
            f"{page.found} {matched}; on page {page.page} of {page.pages} ({order} {key} "
            f"first), {leader} comes first with {figures}."
        )
    return f"{page.found} {matched}; by {order} {key}, {leader} leads with {figures}."


def table(page: VaultPage) -> list[str]:
    """The page's vaults as a Markdown table, figures as the tool wrote them."""
    lines = [
        "| Vault | Protocol | Chain | APY | Base | Rewards | TVL | Risk |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in page.rows:
        name = _cell(row.name)
        if row.url is not None:
            name = f"[{name}]({row.url})"
        risk = row.risk if row.security == "n/a" else f"{row.risk} ({row.security})"
        if row.outlier:
            risk += ", likely outlier"
        figures = [row.protocol, row.chain, row.apy, row.base, row.rewards, row.tvl, risk]
        lines.append("| " + " | ".join([name, *map(_cell, figures)]) + " |")
    return lines


def more_line(page: VaultPage) -> str | None:
    """Where the rest of the results are, when there are more pages."""
    if page.page >= page.pages:
        return None
    return f"Page {page.page} of {page.pages}: ask for the next page to see more."


def _cell(text: str) -> str:
    # A table cell ends at a pipe; Markdown emphasis in a vault name is the name's.
    return text.replace("|", "\\|").replace("*", "\\*")
