"""Amounts, percentages, ranges and comparators in a question, read as conditions.

`read_numbers` finds every quantity (`$5M`, `10k`, `35%`, `half`, `a quarter`, `two
million`, `a year`), then what each one is: a condition with a comparator ("above 5M",
"at least a year", "between 5 and 15%", "10M+"), a count of results ("top 5"), a page
("page 2") or a look-back window ("last 90 days", "24h"). Which field a condition is about
is decided later (`binding.py`), from where the field is mentioned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

from demo_planner import vocabulary as voc
from demo_planner.text import Token, phrase_tokens

Unit = Literal["usd", "percent", "plain", "days", "hours", "fraction"]
Side = Literal["min", "max", "range", "eq"]

_NUMBER = re.compile(r"^([$€])?(\d[\d,]*(?:\.\d+)?)([a-z%]*)(\+?)$")


@dataclass(frozen=True)
class Quantity:
    """One number as written, with its unit, over tokens start..end (inclusive)."""

    value: float
    unit: Unit
    start: int
    end: int
    magnitude: bool = False
    plus: bool = False

    @property
    def bare(self) -> bool:
        """A plain number with nothing around it that says what it is."""
        return self.unit == "plain" and not self.magnitude and not self.plus


@dataclass(frozen=True)
class Condition:
    """A compared quantity: `low`/`high` by side, over tokens start..end (comparators included)."""

    side: Side
    low: float | None
    high: float | None
    unit: Unit
    start: int
    end: int
    text: str
    strict: bool = False
    comparator_first: bool = False
    bare: bool = False

    @property
    def value(self) -> float:
        """The single value of a one-sided or equality condition."""
        return self.low if self.low is not None else self.high  # type: ignore[return-value]


@dataclass
class Numbers:
    """Everything numeric read from a question."""

    conditions: list[Condition] = field(default_factory=list)
    counts: list[tuple[int, int, int]] = field(default_factory=list)  # (n, start, end)
    page: int | None = None
    page_span: tuple[int, int] | None = None
    windows_days: list[tuple[float, int, int]] = field(default_factory=list)
    windows_hours: list[tuple[float, int, int]] = field(default_factory=list)
    consumed: set[int] = field(default_factory=set)


def _phrases(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    return sorted({phrase_tokens(w) for w in words if phrase_tokens(w)}, key=len, reverse=True)


_MIN_BEFORE = _phrases(voc.MIN_COMPARATORS)
_MAX_BEFORE = _phrases(voc.MAX_COMPARATORS)
_MIN_AFTER = _phrases(voc.MIN_AFTER)
_MAX_AFTER = _phrases(voc.MAX_AFTER)
_STRICT = {phrase_tokens(w) for w in voc.STRICT_COMPARATORS}
_FRACTIONS = sorted(
    ((phrase_tokens(k), v) for k, v in voc.FRACTIONS.items()), key=lambda kv: -len(kv[0])
)
_WINDOW_BEFORE = _phrases(voc.WINDOW_BEFORE)
_PERCENT = _phrases(voc.PERCENT_WORDS)
_CURRENCY = _phrases(voc.CURRENCY_WORDS)


def _ends_with(words: list[str], end: int, phrases: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The longest phrase ending just before index `end`, or ()."""
    for phrase in phrases:
        n = len(phrase)
        if end - n >= 0 and tuple(words[end - n : end]) == phrase:
            return phrase
    return ()


def _starts_with(words: list[str], start: int, phrases: list[tuple[str, ...]]) -> tuple[str, ...]:
    for phrase in phrases:
        if tuple(words[start : start + len(phrase)]) == phrase:
            return phrase
    return ()


def _units_after(words: list[str], i: int, q: Quantity) -> Quantity:
    """Extend a quantity over the magnitude and unit words that follow it."""
    value, unit, end, magnitude, plus = q.value, q.unit, q.end, q.magnitude, q.plus
    j = end + 1
    if j < len(words) and words[j] in voc.HUNDRED_WORDS and unit in ("plain", "usd"):
        value, j, end = value * 100, j + 1, j
    if j < len(words) and words[j] in voc.MAGNITUDES and not magnitude and unit != "percent":
        value *= voc.MAGNITUDES[words[j]]
        magnitude, end, j = True, j, j + 1
    pct = _starts_with(words, j, _PERCENT)
    cur = _starts_with(words, j, _CURRENCY) if not pct else ()
    if pct and unit in ("plain", "fraction"):
        unit, end = "percent", j + len(pct) - 1
    elif cur and unit in ("plain",):
        unit, end = "usd", j + len(cur) - 1
    elif j < len(words) and words[j] in voc.DURATION_DAYS and unit in ("plain", "fraction"):
        if not magnitude:
            value, unit, end = value * voc.DURATION_DAYS[words[j]], "days", j
            if j + 1 < len(words) and words[j + 1] == "old":
                end = j
    elif j < len(words) and words[j] in voc.HOUR_WORDS and unit == "plain" and not magnitude:
        unit, end = "hours", j
    if end + 1 < len(words) and words[end + 1] == "+":
        plus, end = True, end + 1
    return Quantity(value, unit, q.start, end, magnitude, plus)


def _numeric(token: Token) -> Quantity | None:
    m = _NUMBER.match(token.low)
    if not m:
        return None
    currency, digits, suffix, plus = m.groups()
    try:
        value = float(digits.rstrip(",").replace(",", ""))
    except ValueError:
        return None
    unit: Unit = "usd" if currency else "plain"
    magnitude = False
    if suffix in voc.MAGNITUDES:
        value *= voc.MAGNITUDES[suffix]
        magnitude = True
    elif suffix == "%":
        unit = "percent"
    elif suffix in voc.DURATION_DAYS and not currency:
        value, unit = value * voc.DURATION_DAYS[suffix], "days"
    elif suffix in voc.HOUR_WORDS and not currency:
        unit = "hours"
    elif suffix == "x":
        pass
    elif suffix:
        return None  # 1st, 3crv, v3: not an amount
    return Quantity(value, unit, token.index, token.index, magnitude, bool(plus))


def _written(words: list[str], i: int) -> Quantity | None:
    """Number words at i: 'twenty five', 'five hundred thousand', 'a million', 'half', 'a year'."""
    return _fraction(words, i) or _one(words, i) or _number_words(words, i)


def _fraction(words: list[str], i: int) -> Quantity | None:
    """'half', 'a quarter'; 'half a million', 'a quarter of a billion', 'half a year'."""
    for phrase, fraction in _FRACTIONS:
        if tuple(words[i : i + len(phrase)]) != phrase:
            continue
        end = i + len(phrase) - 1
        nxt = words[end + 1 : end + 3]
        skip = 2 if nxt[:2] == ["of", "a"] else 1 if nxt[:1] in (["a"], ["of"]) else 0
        after = words[end + 1 + skip] if end + 1 + skip < len(words) else ""
        if (skip and after in voc.MAGNITUDES) or after in voc.DURATION_DAYS:
            return Quantity(fraction, "plain", i, end + skip)
        return Quantity(fraction, "fraction", i, end)
    return None


def _one(words: list[str], i: int) -> Quantity | None:
    """'a million', 'a hundred', 'a year' ('a m' is not a million)."""
    if words[i] not in voc.ONE_WORDS:
        return None
    nxt = words[i + 1] if i + 1 < len(words) else ""
    magnitude = nxt in voc.MAGNITUDES or nxt in voc.HUNDRED_WORDS or nxt in voc.DURATION_DAYS
    return Quantity(1.0, "plain", i, i) if magnitude and len(nxt) > 1 else None


def _number_words(words: list[str], i: int) -> Quantity | None:
    """'seven', 'twenty five' (the magnitude after it is read by `_units_after`)."""
    if words[i] not in voc.NUMBER_WORDS:
        return None
    value, end = float(voc.NUMBER_WORDS[words[i]]), i
    if value >= 20 and value % 10 == 0 and end + 1 < len(words):
        unit = voc.NUMBER_WORDS.get(words[end + 1])
        if unit is not None and unit < 10:
            value, end = value + unit, end + 1
    return Quantity(value, "plain", i, end)


def read_quantities(tokens: list[Token]) -> list[Quantity]:
    """Every quantity in the tokens, left to right, none overlapping."""
    words = [t.low for t in tokens]
    out: list[Quantity] = []
    i = 0
    while i < len(tokens):
        q = _numeric(tokens[i]) if tokens[i].is_number else _written(words, i)
        if q is None:
            i += 1
            continue
        q = _units_after(words, i, q)
        out.append(q)
        i = q.end + 1
    return out


def _window_before(words: list[str], start: int) -> bool:
    probe = start
    if probe > 0 and words[probe - 1] == "the":
        probe -= 1
    return bool(_ends_with(words, probe, _WINDOW_BEFORE))


def read_numbers(tokens: list[Token]) -> Numbers:
    """Conditions, counts, page and windows of a question."""
    words = [t.low for t in tokens]
    found = Numbers()
    quantities = read_quantities(tokens)
    used: set[int] = set()
    for k, q in enumerate(quantities):
        if k in used or _page(words, q, found) or _window(words, tokens, q, found):
            continue
        if _count(words, q, found):
            continue
        cond, span_used = _condition(words, tokens, quantities, k)
        used |= span_used
        if cond is None or (cond.bare and 1900 <= cond.value <= 2100 and cond.value.is_integer()):
            continue  # nothing, or a year rather than an amount
        found.conditions.append(cond)
        found.consumed |= set(range(cond.start, cond.end + 1))
    return found


def add_implicit_ratios(numbers: Numbers, words: list[str], ratio_starts: list[int]) -> None:
    """'volume exceeds their market cap': a comparator right before a ratio field, with no
    number, compares it with one (each start is where a ratio field's mention begins)."""
    for start in ratio_starts:
        if start - 1 in numbers.consumed:
            continue
        for phrases, side in ((_MIN_BEFORE, "min"), (_MAX_BEFORE, "max")):
            cmp = _ends_with(words, start, phrases)
            if not cmp:
                continue
            first = start - len(cmp)
            numbers.conditions.append(
                Condition(
                    side=side,  # type: ignore[arg-type]
                    low=1.0 if side == "min" else None,
                    high=1.0 if side == "max" else None,
                    unit="fraction",
                    start=first,
                    end=start - 1,
                    text=" ".join(cmp),
                    strict=tuple(cmp) in _STRICT,
                    comparator_first=True,
                )
            )
            numbers.consumed |= set(range(first, start))
            break


def _page(words: list[str], q: Quantity, found: Numbers) -> bool:
    """'page 2'."""
    if q.start > 0 and words[q.start - 1] in voc.PAGE_WORDS and q.bare:
        found.page = int(q.value)
        found.page_span = (q.start - 1, q.start)
        found.consumed |= {q.start - 1, q.start}
        return True
    return False


def _window(words: list[str], tokens: list[Token], q: Quantity, found: Numbers) -> bool:
    """'last 90 days', 'past 24 hours', '24h', 'its history over 30 days'."""
    if q.unit not in ("days", "hours"):
        return False
    cmp = _ends_with(words, q.start, _MIN_BEFORE + _MAX_BEFORE)
    lead = words[q.start - len(cmp) - 1] if q.start - len(cmp) > 0 else ""
    about_history = lead in voc.WINDOW_LEADS or (
        bool(set(words) & set(voc.WINDOW_LEADS)) and not set(words) & set(voc.AGE_WORDS)
    )
    if cmp in (("over",), ("within",)) and about_history:
        cmp = ()  # a window, not a bound
    if cmp or not (_window_before(words, q.start) or tokens[q.start].is_number):
        return False
    target = found.windows_days if q.unit == "days" else found.windows_hours
    target.append((q.value, q.start, q.end))
    found.consumed |= set(range(q.start, q.end + 1))
    return True


def _count(words: list[str], q: Quantity, found: Numbers) -> bool:
    """'top 5', '5 largest', 'first 10': how many results, not a condition."""
    if not (q.bare and q.value.is_integer() and 0 < q.value <= 100):
        return False
    before = words[q.start - 1] if q.start > 0 else ""
    after = words[q.end + 1] if q.end + 1 < len(words) else ""
    compared = _ends_with(words, q.start, _MIN_BEFORE + _MAX_BEFORE)
    if before in voc.COUNT_BEFORE or (after in voc.COUNT_AFTER and not compared):
        found.counts.append((int(q.value), q.start, q.end))
        found.consumed |= set(range(q.start, q.end + 1))
        return True
    return False


def _condition(
    words: list[str], tokens: list[Token], quantities: list[Quantity], k: int
) -> tuple[Condition | None, set[int]]:
    q = quantities[k]
    nxt = quantities[k + 1] if k + 1 < len(quantities) else None
    start = q.start
    # between A and B / from A to B / A-B / A to B
    if nxt is not None:
        gap = words[q.end + 1 : nxt.start]
        lead = words[q.start - 1] if q.start > 0 else ""
        joined = len(gap) == 1 and gap[0] in voc.RANGE_JOIN
        ranged = joined and (
            lead in voc.RANGE_WORDS
            or (lead in voc.RANGE_FROM and gap[0] != "and")
            or gap[0] in ("-", "–", "—", "to", "through")
        )
        if ranged:
            low, high = _align(q, nxt)
            if lead in voc.RANGE_WORDS + voc.RANGE_FROM:
                start = q.start - 1
            lo, hi = sorted((low.value, high.value))
            text = " ".join(t.text for t in tokens[start : nxt.end + 1])
            cond = Condition("range", lo, hi, high.unit, start, nxt.end, text)
            return cond, {k, k + 1}
    cmp_min = _ends_with(words, q.start, _MIN_BEFORE)
    cmp_max = _ends_with(words, q.start, _MAX_BEFORE)
    # "more than" vs "no more than": the longer phrase wins.
    is_min = len(cmp_min) >= len(cmp_max)
    cmp = cmp_min if is_min else cmp_max
    side: Side = "eq"
    strict = False
    end = q.end
    if cmp:
        side = "min" if is_min else "max"
        strict = cmp in _STRICT
        start = q.start - len(cmp)
    else:
        after_min = _starts_with(words, q.end + 1, _MIN_AFTER)
        after_max = _starts_with(words, q.end + 1, _MAX_AFTER)
        if q.plus:
            side = "min"
        elif after_min:
            side, end = "min", q.end + len(after_min)
        elif after_max:
            side, end = "max", q.end + len(after_max)
    text = " ".join(t.text for t in tokens[start : end + 1])
    cond = Condition(
        side,
        q.value if side in ("min", "eq") else None,
        q.value if side == "max" else None,
        q.unit,
        start,
        end,
        text,
        strict=strict,
        comparator_first=bool(cmp),
        bare=q.bare and side == "eq",
    )
    return cond, {k}


def _align(low: Quantity, high: Quantity) -> tuple[Quantity, Quantity]:
    """A range's two ends in one unit and scale: 'between 100 and 500 million', '5-10%'."""
    if low.unit == "plain" and high.unit != "plain":
        low = replace(low, unit=high.unit)
    if high.unit == "plain" and low.unit != "plain":
        high = replace(high, unit=low.unit)
    if high.magnitude and not low.magnitude and low.value < high.value:
        scale = _scale_of(high.value)
        if low.value * scale <= high.value:
            low = replace(low, value=low.value * scale, magnitude=True)
    return low, high


def _scale_of(value: float) -> float:
    for scale in (1e12, 1e9, 1e6, 1e3):
        if value >= scale:
            return scale
    return 1.0
