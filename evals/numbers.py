"""Numbers and dates in answer text, and whether each one is backed by a tool result.

The extractor reads what a reader would take as a figure: `$1.2M`, `3.4%`, `1,234.5`,
`0.00000799`, `420.69T`, `#30`, `2.5 billion`. It deliberately does not read digits that are
part of something else: contract addresses and hashes, URLs, vault ids, tickers and pool
names with digits (`CL100`, `USD0`), time windows (`24h`, `7d`), clock times, list numbers
at the start of a line. Dates (`2024-05-27`, `May 27, 2024`, `27 May 2024`, a bare year) are
dates, not amounts: a date is grounded only by the same date, never by a price.

A figure is grounded when some source quantity rounds to it at the precision it is written
with (`$3.4B` is backed by `$3.36B`; `$3.5B` is not). The sign is ignored because prose says
"down 0.44%" for `-0.44%`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

Kind = Literal["money", "percent", "number", "date"]

# Bare integers up to this value (no unit, no decimals) are counts and list positions
# ("3 vaults", "top 5"), not facts worth checking.
SMALL_COUNT = 10

_MONTHS = {
    name: index
    for index, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<mon>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"

# Things that contain digits but are not figures; replaced by blanks before reading numbers.
_IDENTIFIERS = [
    re.compile(r"https?://\S+"),
    re.compile(r"\b0x[0-9a-fA-F]{6,}\b"),
    # A shortened address ("0x0741…3215", "Is 0x… risky?") names an address too.
    re.compile(r"\b0x[0-9a-fA-F]*(?:…|\.\.\.)[0-9a-fA-F]*"),
    re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"),
]
# Blanked after dates are read (a timestamp looks like a vault id to the second pattern).
_NOT_FIGURES = [
    re.compile(r"\b[\w.-]+:[\w.-]+:[\w.:/-]+"),  # vault ids: source:chain:native-id
    re.compile(r"\b[1-9A-HJ-NP-Za-km-z]{32,44}\b"),  # base58 (Solana mints)
    re.compile(r"\b\d{1,2}:\d{2}(?::\d{2})?\b"),  # clock times
    re.compile(r"(?m)^\s*\d{1,3}[.)](?=\s)"),  # list numbering
]

_ISO_DATE = re.compile(
    r"\b(?P<y>(?:19|20)\d{2})-(?P<m>\d{2})-(?P<d>\d{2})(?:[T ]\d{2}:\d{2}(?::\d{2})?Z?)?\b"
)
_MONTH_DAY_YEAR = re.compile(
    rf"\b{_MONTH}\s+(?P<d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y>(?:19|20)\d{{2}})\b", re.I
)
_DAY_MONTH_YEAR = re.compile(
    rf"\b(?P<d>\d{{1,2}})(?:st|nd|rd|th)?\s+{_MONTH}\s+(?P<y>(?:19|20)\d{{2}})\b", re.I
)
_MONTH_YEAR = re.compile(rf"\b{_MONTH}\s+(?P<y>(?:19|20)\d{{2}})\b", re.I)

_SCALES = {
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "mn": 1e6,
    "mm": 1e6,
    "million": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "t": 1e12,
    "trillion": 1e12,
}
_FIGURE = re.compile(
    r"(?<![\w.,/:])(?P<neg>[-−–]\s?)?(?P<hash>\#)?(?P<cur>\$|US\$|USD\s)?\s?"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:\s?(?P<suf>thousand|million|billion|trillion|bn|mn|mm|[KkMBT])(?![A-Za-z0-9]))?"
    r"(?P<pct>\s?%|\s?percent\b|\s?pct\b)?"
    r"(?P<x>x\b)?"
    r"(?![A-Za-z0-9_])"
)
# A number immediately after letters or before letters is part of a name (CL100, 24h, v3).
_GLUED_BEFORE = re.compile(r"[A-Za-z_][-−–]?$")


class Quantity(BaseModel):
    """One figure read from text."""

    model_config = ConfigDict(frozen=True)

    text: str
    kind: Kind
    value: float = 0.0
    # Half a unit of the last written digit, in the value's own scale: the rounding slack.
    tolerance: float = 0.0
    date: str | None = None  # YYYY, YYYY-MM or YYYY-MM-DD for kind == "date"


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _dates(text: str) -> tuple[list[tuple[int, Quantity]], str]:
    found: list[tuple[int, Quantity]] = []
    for pattern in (_ISO_DATE, _MONTH_DAY_YEAR, _DAY_MONTH_YEAR, _MONTH_YEAR):
        for match in pattern.finditer(text):
            parts = match.groupdict()
            if "m" in parts:
                month = int(parts["m"])
            else:
                month = _MONTHS[parts["mon"].lower().rstrip(".")]
            day = parts.get("d")
            iso = f"{parts['y']}-{month:02d}" + (f"-{int(day):02d}" if day else "")
            found.append((match.start(), Quantity(text=match.group(0), kind="date", date=iso)))
            text = _blank(text, match.start(), match.end())
    return found, text


def extract(text: str) -> list[Quantity]:
    """Every figure and date in `text`, in reading order."""
    for pattern in _IDENTIFIERS:
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    found, text = _dates(text)
    for pattern in _NOT_FIGURES:
        text = pattern.sub(lambda m: " " * len(m.group(0)), text)
    for match in _FIGURE.finditer(text):
        if _GLUED_BEFORE.search(text[: match.start()]):
            continue
        raw = match["num"].replace(",", "")
        decimals = len(raw.split(".", 1)[1]) if "." in raw else 0
        suffix = (match["suf"] or "").lower()
        scale = _SCALES.get(suffix, 1.0)
        number = float(raw)
        kind: Kind = "number"
        if match["pct"]:
            kind = "percent"
        elif match["cur"]:
            kind = "money"
        plain = not (match["cur"] or match["pct"] or suffix or match["hash"] or match["x"])
        if plain and decimals == 0 and "," not in match["num"]:
            if 1900 <= number <= 2100:
                year = Quantity(text=match.group(0).strip(), kind="date", date=raw)
                found.append((match.start(), year))
                continue
            if number <= SMALL_COUNT:
                continue
        figure = Quantity(
            text=match.group(0).strip(),
            kind=kind,
            value=number * scale,
            tolerance=0.5 * 10.0**-decimals * scale,
        )
        found.append((match.start(), figure))
    return [q for _, q in sorted(found, key=lambda item: item[0])]


def _date_backed(q: Quantity, sources: Iterable[Quantity]) -> bool:
    assert q.date is not None
    return any(s.date is not None and s.date.startswith(q.date) for s in sources)


def backs(source: Quantity, claim: Quantity) -> bool:
    """True when `source` rounds to `claim` at the precision `claim` is written with."""
    if claim.kind == "date" or source.kind == "date":
        return False
    a, b = abs(claim.value), abs(source.value)
    return math.isclose(a, b, rel_tol=1e-9) or abs(a - b) <= claim.tolerance * (1 + 1e-9)


def is_grounded(claim: Quantity, sources: list[Quantity]) -> bool:
    """True when some source quantity backs the claim (dates only by dates)."""
    if claim.kind == "date":
        return _date_backed(claim, sources)
    return any(backs(s, claim) for s in sources)


def ungrounded(answer: str, sources: Iterable[str]) -> list[Quantity]:
    """The figures and dates of `answer` that no source text backs."""
    pool = [q for text in sources for q in extract(text)]
    return [q for q in extract(answer) if not is_grounded(q, pool)]


def parse_single(text: str) -> Quantity | None:
    """The one figure in a short text like `$3.36B`, or None when it is not just a figure."""
    quantities = [q for q in extract(text) if q.kind != "date"]
    if len(quantities) != 1:
        return None
    stripped = re.sub(r"[\s$%,.#\-−–]|US|USD|percent", "", text, flags=re.I)
    rest = re.sub(r"\d|thousand|million|billion|trillion|bn|mn|mm|[KkMBTx]", "", stripped)
    return quantities[0] if not rest else None
