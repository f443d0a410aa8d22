"""Time expressions in a question, and the trend a vault's history shows.

A question says when in many ways: a count of units ("last 90 days", "past 3 months"), a
named span ("last week", "this year", "a fortnight", "year to date"), a starting point
("since March", "since 2026-02-01", "since the start of the year"), or only a direction
("going up or down?", "trending", "lately"). Each is read as a `TimeWindow`: its words, its
length in days when it has one (a starting point is counted to today), and whether it asks
which way something moved. The plan gives the window to the history tool; where no tool of
the plan takes it, the answer says so rather than dropping it.

The trend is read back from the history tool's own summary line (first and last APY, the
range, the TVL change), in words, quoting only the figures the tool wrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from demo_planner import vocabulary as voc
from demo_planner.numbers import Numbers
from demo_planner.text import Token, phrase_tokens

MAX_DAYS = 365
# "since last week/month/quarter/year": one such span back, in days.
_LAST_UNITS = {"week": 7, "month": 30, "quarter": 90, "year": 365}
# Words between "since" and its point in time ("since the start of March", "since early May").
_SINCE_MODIFIERS = frozenset("the early late mid start beginning end of last".split())
_SPANS = sorted(
    ((phrase_tokens(p), days) for p, days in voc.NAMED_SPANS.items()), key=lambda x: -len(x[0])
)
_LEADS = sorted(
    {phrase_tokens(p) for p in (*voc.WINDOW_BEFORE, *voc.SPAN_LEADS)}, key=len, reverse=True
)
_TRENDS = sorted({phrase_tokens(p) for p in voc.TREND_PHRASES}, key=len, reverse=True)
_SOFT = sorted({phrase_tokens(p) for p in voc.SOFT_WINDOWS}, key=len, reverse=True)


@dataclass(frozen=True)
class TimeWindow:
    """A time expression: its words, its length in days (None: none said), and whether it
    asks for a direction ("going up or down?")."""

    text: str
    start: int
    end: int
    days: int | None
    trend: bool = False
    since: str = ""  # the starting point as written ("March"), for "since" windows

    @property
    def tokens(self) -> set[int]:
        """The token indices the expression covers."""
        return set(range(self.start, self.end + 1))


def read_windows(tokens: list[Token], numbers: Numbers, today: date) -> list[TimeWindow]:
    """Every time expression of the question, left to right, none overlapping."""
    words = [t.low for t in tokens]
    taken: set[int] = set()
    found: list[TimeWindow] = []

    def add(
        start: int, end: int, days: int | None, *, trend: bool = False, since: str = ""
    ) -> None:
        if taken & set(range(start, end + 1)):
            return
        text = " ".join(t.text for t in tokens[start : end + 1])
        found.append(TimeWindow(text, start, end, days, trend, since))
        taken.update(range(start, end + 1))

    for value, start, end in numbers.windows_days:
        lead = _lead_before(words, start)
        add(start - lead, end, int(value))
    for value, start, end in numbers.windows_hours:
        add(start - _lead_before(words, start), end, max(1, round(value / 24)))
    for i in range(len(words)):
        if i in taken or i in numbers.consumed:
            continue
        since = _since(tokens, words, i, today)
        if since is not None:
            end, days, said = since
            add(i, end, days, since=said)
            continue
        for phrase, days in _SPANS:
            if tuple(words[i : i + len(phrase)]) == phrase:
                if days == voc.YEAR_TO_DATE:
                    days = _days_between(date(today.year, 1, 1), today)
                lead = _lead_before(words, i)
                add(i - lead, i + len(phrase) - 1, days)
                break
    for phrases, trend in ((_TRENDS, True), (_SOFT, False)):
        for i in range(len(words)):
            for phrase in phrases:
                if i not in taken and tuple(words[i : i + len(phrase)]) == phrase:
                    add(i, i + len(phrase) - 1, None, trend=trend)
                    break
    return sorted(found, key=lambda w: w.start)


def _lead_before(words: list[str], start: int) -> int:
    """How many words before `start` introduce the window ("over the last", "in the past")."""
    probe = start
    for phrase in _LEADS:
        n = len(phrase)
        if probe - n >= 0 and tuple(words[probe - n : probe]) == phrase:
            return start - (probe - n)
    return 0


def _since(
    tokens: list[Token], words: list[str], i: int, today: date
) -> tuple[int, int, str] | None:
    """'since March', 'since march 2026', 'since 2026-02-01', 'since the start of the year',
    'from January': (last token, days to today, the starting point as written)."""
    if words[i] not in voc.SINCE_WORDS:
        return None
    j = i + 1
    while j < len(words) and words[j] in _SINCE_MODIFIERS:
        j += 1
    if j >= len(words):
        return None
    word = words[j]
    said_from = " ".join(t.text for t in tokens[i + 1 : j + 1])
    if words[j - 1] == "last" and word in _LAST_UNITS:
        return j, _LAST_UNITS[word], said_from  # "since last month": a month back
    if word in voc.MONTHS:
        month = voc.MONTHS[word]
        year = today.year if (month, 1) <= (today.month, today.day) else today.year - 1
        end = j
        if j + 1 < len(words) and re.fullmatch(r"(19|20)\d{2}", words[j + 1]):
            year, end = int(words[j + 1]), j + 1
            said_from = " ".join(t.text for t in tokens[i + 1 : end + 1])
        if words[i] == "from" and end == j and j == i + 1 and word == "may":
            return None  # "from may" is too often not a date
        start = _day_in(year, month, words[i + 1 : j])
        return end, _days_between(start, today), said_from
    if word in ("year", "ytd"):
        return j, _days_between(date(today.year, 1, 1), today), said_from
    if word in ("month",):
        return j, _days_between(date(today.year, today.month, 1), today), said_from
    if re.fullmatch(r"(19|20)\d{2}", word) and words[j + 1 : j + 5][::2] == ["-", "-"]:
        # "since 2026-02-01", tokenised as 2026 - 02 - 01
        try:
            start = date(int(word), int(words[j + 2]), int(words[j + 4]))
        except ValueError:
            return None
        said = " ".join(t.text for t in tokens[i + 1 : j + 5]).replace(" - ", "-")
        return j + 4, _days_between(start, today), said
    if re.fullmatch(r"(19|20)\d{2}", word):
        return j, _days_between(date(int(word), 1, 1), today), said_from
    return None


def _day_in(year: int, month: int, modifiers: list[str]) -> date:
    """The first day meant by 'March', 'early March', 'mid March', 'late March'."""
    day = 15 if "mid" in modifiers else 20 if "late" in modifiers or "end" in modifiers else 1
    return date(year, month, day)


def _days_between(start: date, today: date) -> int:
    return max(1, (today - start).days + 1)


# --- the trend a history result shows ------------------------------------------------------

_APY_LINE = re.compile(
    r"APY (?P<first>[\d.]+)% → (?P<last>[\d.]+)% \(mean (?P<mean>[\d.]+)%, "
    r"min (?P<min>[\d.]+)%, max (?P<max>[\d.]+)%\)"
)
_TVL_LINE = re.compile(r"TVL change: (?P<tvl>[-+]?[\d.]+)%")
_HEAD = re.compile(
    r"History of (?P<name>.+?): (?P<points>\d+) daily points?, (?P<first>\S+) to (?P<last>\S+)"
)
# A move smaller than this share of the mean APY reads as flat.
FLAT_SHARE = 0.1


def trend_lines(text: str) -> list[str]:
    """The direction a vault_history result shows, in words, with the tool's own figures;
    empty when the text is no history summary."""
    head, apy = _HEAD.search(text), _APY_LINE.search(text)
    if head is None or apy is None:
        return []
    name = head["name"]
    first, last, mean = float(apy["first"]), float(apy["last"]), float(apy["mean"])
    if int(head["points"]) < 2:
        return [
            f"**Trend of {name}:** only one daily point is on record ({head['first']}), "
            "so there is no direction to read yet."
        ]
    span = f"from {head['first']} to {head['last']}"
    moved = last - first
    if abs(moved) <= FLAT_SHARE * max(mean, 0.01):
        way = f"roughly flat {span}: {apy['first']}% then, {apy['last']}% at the end"
    elif moved > 0:
        way = f"going up {span}: from {apy['first']}% to {apy['last']}%"
    else:
        way = f"going down {span}: from {apy['first']}% to {apy['last']}%"
    line = f"**Trend of {name}:** the APY is {way} (low {apy['min']}%, high {apy['max']}%)."
    tvl = _TVL_LINE.search(text)
    if tvl is not None:
        change = float(tvl["tvl"])
        grew = "grew" if change > 0 else "shrank" if change < 0 else "held level"
        line += f" TVL {grew} over the same days (change {tvl['tvl']}%)."
    return [line]
