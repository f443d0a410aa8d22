"""Binding what a question says to one tool's arguments.

Each numeric condition goes to the field mention nearest to it (a comparator-first
condition, "liquidity above 5M", looks back first; a number-first one, "over $1M market
cap", looks ahead first; a clause break between them counts as distance). If that nearest
mention is a field the tool cannot bound that way, the condition is reported as not
applied, never moved to another field. Flags, enum values, sort orders, windows, counts
and chains bind the same way. What could not be bound is returned as notes for the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from demo_planner import vocabulary as voc
from demo_planner.lexicon import EnumField, Mention, NumericField, ToolLexicon
from demo_planner.numbers import Condition
from demo_planner.reading import Reading
from demo_planner.text import CLAUSE_BREAKS

# A condition this far (in weighted tokens) from every field mention is unattached.
MAX_DISTANCE = 6.0
# Words that may follow a trailing superlative ("moved the most today").
_AFTER_SUPERLATIVE = ("today", "on", "in", "this", "over", "across", "right", "now", "lately",
                      "recently", "of", "among", "for", "these", "days", "week", "at")  # fmt: skip
# Comparator words that name a field themselves.
_FIELD_WORDS = {"older": "protocol_age", "younger": "protocol_age", "newer": "protocol_age",
                "longer": "protocol_age"}  # fmt: skip
_BACK_WORDS = ("of", "is", "are", "at", "with", "has", "have", "was", "in", "to", "be")


@dataclass
class Binding:
    """A tool's arguments, and what of the question they could not carry."""

    tool: str
    arguments: dict[str, Any] = field(default_factory=dict)
    bound: int = 0
    unbound: list[str] = field(default_factory=list)
    used_conditions: set[int] = field(default_factory=set)

    def score(self) -> tuple[int, int]:
        """More conditions carried and fewer left out is better."""
        return (self.bound, -len(self.unbound))


def _distance(reading: Reading, cond: Condition, mention: Mention) -> float:
    words = reading.words
    if mention.end < cond.start:
        between = range(mention.end + 1, cond.start)
        bias = 0.0 if cond.comparator_first else 0.5
    else:
        between = range(cond.end + 1, mention.start)
        bias = 0.5 if cond.comparator_first else 0.0
        if mention.start == cond.end + 1 and words[mention.start] in ("of", "times"):
            return -0.5  # "a quarter of their market cap": attached to the number
    gap = 0.0
    for i in between:
        w = words[i]
        if w in CLAUSE_BREAKS:
            gap += 2.5
        elif w in _BACK_WORDS or w == "the" or w == "a":
            gap += 0.3
        else:
            gap += 1.0
    return gap + bias


def _compatible(cond: Condition, f: NumericField) -> bool:
    unit = cond.unit
    if f.unit == "usd":
        return unit in ("usd", "plain")
    if f.unit == "percent":
        return unit in ("percent", "fraction", "plain") and not (
            unit == "plain" and cond.value > 1e4
        )
    if f.unit == "ratio":
        return unit in ("plain", "fraction", "percent")
    if f.unit == "score":
        return unit in ("plain", "percent") and 0 <= cond.value <= 100
    if f.unit == "count":
        return unit == "plain"
    if f.unit == "days":
        return unit in ("days", "plain")
    return unit == "plain"


def _convert(value: float, cond: Condition, f: NumericField) -> float:
    if f.unit == "percent" and cond.unit == "fraction":
        return value * 100
    if f.unit == "ratio" and cond.unit == "percent":
        return value / 100
    return value


def _number(value: float, f: NumericField, strict: bool) -> float | int:
    if f.integer:
        rounded = round(value)
        if strict and rounded == value:
            rounded += 1 if f.side == "min" else -1
        value = rounded
    if f.minimum is not None:
        value = max(value, f.minimum)
    if f.maximum is not None:
        value = min(value, f.maximum)
    return int(value) if f.integer else float(value)


def _sides(cond: Condition, sign: int) -> list[tuple[str, float, bool]]:
    """(side, value, strict) pairs a condition sets, with a falling-price sign applied."""
    if cond.side == "range":
        pairs = [("min", cond.low or 0.0, False), ("max", cond.high or 0.0, False)]
    elif cond.side == "max":
        pairs = [("max", cond.value, cond.strict)]
    else:
        pairs = [("min", cond.value, cond.strict)]
    if sign < 0:
        flipped = {"min": "max", "max": "min"}
        pairs = [(flipped[s], -v, strict) for s, v, strict in pairs]
    return pairs


def _describe(family: str) -> str:
    return family.replace("_", " ")


def bind_conditions(reading: Reading, lex: ToolLexicon, b: Binding, *, skip: set[int]) -> None:
    """Numeric conditions → min_/max_ fields, each to its nearest mention."""
    mentions = _numeric_mentions(reading)
    taken: set[tuple[str, str]] = set()
    for ci, cond in enumerate(reading.numbers.conditions):
        if ci in skip:
            continue
        options = _options(reading, cond, mentions)
        if options is None:
            continue  # a bare number with no field next to it ("1 ETH")
        if _bind_one(cond, options, mentions, lex, taken, b):
            b.used_conditions.add(ci)


def _numeric_mentions(reading: Reading) -> list[Mention]:
    mentions = [m for m in reading.mentions if m.kind == "family"]
    # A comparator that names its field ("older than a year") is a mention inside the condition.
    for cond in reading.numbers.conditions:
        mentions += _inner_mentions(reading, cond)
    return mentions


def _options(
    reading: Reading, cond: Condition, mentions: list[Mention]
) -> list[tuple[float, int]] | None:
    """Mentions a condition may be about, nearest first (None: a bare number, leave it)."""
    options = []
    for mi, m in enumerate(mentions):
        if _share_of(reading, cond, m):
            continue
        dist = _distance(reading, cond, m)
        if cond.unit == "fraction" and m.start == cond.end + 1:
            dist = 0.0  # "twice their market cap": what the multiple is of comes right after
        if dist <= MAX_DISTANCE:
            options.append((dist, mi))
    options.sort()
    if cond.bare:
        options = [(d, mi) for d, mi in options if d <= 0.6]
        return options or None
    return options


def _bind_one(
    cond: Condition,
    options: list[tuple[float, int]],
    mentions: list[Mention],
    lex: ToolLexicon,
    taken: set[tuple[str, str]],
    b: Binding,
) -> bool:
    placed, refused = _place(cond, options, mentions, lex, taken, b)
    if placed:
        return True
    if refused:
        b.unbound.append(refused)
    elif options:
        b.unbound.append(f"“{cond.text}”: {lex.tool} has no free field for it")
    else:
        # No field named anywhere near: the unit's usual field for this tool.
        family = _default_family(cond, lex)
        fields = _fields_for(cond, 1, family, lex) if family else None
        if fields and not any((f.family, f.side) in taken for f, _, _ in fields):
            _apply(fields, cond, b)
            taken |= {(f.family, f.side) for f, _, _ in fields}
            return True
        b.unbound.append(f"“{cond.text}”: I could not tell which field it is about")
    return False


def _share_of(reading: Reading, cond: Condition, mention: Mention) -> bool:
    """'more than half of the APY' is a share of the APY, not an APY."""
    words = reading.words
    return (
        cond.unit == "fraction"
        and mention.start > cond.end + 1
        and cond.end + 1 < len(words)
        and words[cond.end + 1] == "of"
    )


def _inner_mentions(reading: Reading, cond: Condition) -> list[Mention]:
    words = reading.words
    out = []
    for i in range(cond.start, cond.end + 1):
        entry = _FIELD_WORDS.get(words[i])
        if entry:
            out.append(Mention("family", entry, cond.start, cond.end))
    return out


def _place(
    cond: Condition,
    options: list[tuple[float, int]],
    mentions: list[Mention],
    lex: ToolLexicon,
    taken: set[tuple[str, str]],
    b: Binding,
) -> tuple[bool, str | None]:
    """Bind to the nearest mention that takes it; if the nearest ones cannot, say why."""
    refused: str | None = None
    nearest = options[0][0] if options else 0.0
    for dist, mi in options:
        m = mentions[mi]
        fields = _fields_for(cond, m.sign, m.key, lex)
        if fields is None:
            if dist <= nearest + 0.01:
                refused = refused or _refusal(cond, m.key, lex)
            continue
        if any((f.family, f.side) in taken for f, _, _ in fields):
            continue
        if refused and dist > nearest + 0.01:
            break
        _apply(fields, cond, b)
        taken |= {(f.family, f.side) for f, _, _ in fields}
        return True, None
    return False, refused


def _fields_for(
    cond: Condition, sign: int, family: str, lex: ToolLexicon
) -> list[tuple[NumericField, float, bool]] | None:
    out = []
    for side, value, strict in _sides(cond, sign):
        f = lex.numeric.get((family, side))
        if f is None or not _compatible(cond, f):
            return None
        out.append((f, value, strict))
    return out


def _refusal(cond: Condition, family: str, lex: ToolLexicon) -> str:
    sides = [s for (fam, s) in lex.numeric if fam == family]
    if not sides:
        return (
            f"“{cond.text}” ({_describe(family)}): {lex.tool} cannot filter by {_describe(family)}"
        )
    only = "minimum" if sides == ["min"] else "maximum"
    if len(sides) == 1 and cond.side in ("min", "max", "eq", "range"):
        return (
            f"“{cond.text}” ({_describe(family)}): {lex.tool} takes only a {only} "
            f"{_describe(family)}, so this condition is not applied"
        )
    return f"“{cond.text}” ({_describe(family)}): not a value {lex.tool} accepts for it"


def _default_family(cond: Condition, lex: ToolLexicon) -> str | None:
    key = cond.unit
    if cond.unit == "plain":
        if cond.value < 1000:
            return None
        key = "magnitude"
    for family in voc.UNIT_DEFAULTS.get(key, ()):
        if family in lex.families:
            return family
    return None


def _apply(fields: list[tuple[NumericField, float, bool]], cond: Condition, b: Binding) -> None:
    for f, value, strict in fields:
        b.arguments[f.name] = _number(_convert(value, cond, f), f, strict)
    b.bound += 1


def bind_flags(reading: Reading, lex: ToolLexicon, b: Binding) -> None:
    """Boolean fields named in the question ('stablecoin', 'no IL', 'audited')."""
    seen: set[str] = set()
    flags = reading.mentions_of("flag")
    # "no audits", "lacking audits": the audit count negated is the audited flag off.
    flags += [
        Mention("flag", "audited", m.start, m.end, sign=1)
        for m in reading.mentions_of("family")
        if m.key == "audits" and m.start in reading.negated
    ]
    for m in flags:
        if m.key in seen:
            continue
        # A negation of an "off" word turns it on: "skip unaudited" keeps the audited.
        on = (m.sign > 0) != (m.start in reading.negated)
        name = lex.flags.get(m.key)
        if name is None:
            continue
        seen.add(m.key)
        if name.endswith("_only") and not on:
            b.unbound.append(
                f"“not {_describe(m.key)}”: {lex.tool} can only restrict to {_describe(m.key)}s"
            )
            continue
        b.arguments[name] = on
        b.bound += 1


def bind_negated_fields(reading: Reading, lex: ToolLexicon, b: Binding) -> None:
    """'no rewards', 'without emissions': a share the question wants at none, as the
    tool's maximum of 0 (a count or an amount negated says nothing a bound can carry)."""
    conditioned = {i for c in reading.numbers.conditions for i in range(c.start, c.end + 1)}
    for m in reading.mentions_of("family"):
        if m.start not in reading.negated or m.key == "audits":
            continue
        if any(abs(i - m.start) <= 3 for i in conditioned):
            continue  # "no more than 20% rewards" is a bound, read as one
        f = lex.numeric.get((m.key, "max"))
        if f is None or f.unit != "percent":
            continue
        if f.name not in b.arguments:
            b.arguments[f.name] = 0.0
            b.bound += 1


def bind_enums(reading: Reading, lex: ToolLexicon, b: Binding) -> None:
    """Named values of enum fields ('single-asset', 'low risk', 'vault positions')."""
    words = reading.words
    for m in reading.mentions_of("enum"):
        fields = lex.enums.get(m.key)
        if not fields:
            continue
        window = " ".join(words[max(0, m.start - 3) : m.end + 4])
        at_most = any(
            w in window
            for w in (
                "or lower",
                "or less",
                "at most",
                "up to",
                "no more than",
                "or better",
                "max",
                "no higher than",
                "or safer",
            )
        )
        if m.start in reading.negated:
            _bind_negated_enum(m, fields, lex, b)
            continue
        choice = _enum_field(fields, m.value, prefer_max=at_most or m.value == "low")
        if choice is None or m.value not in choice.values:
            continue
        b.arguments[choice.name] = [m.value] if choice.is_list else m.value
        b.bound += 1


def _bind_negated_enum(m: Mention, fields: list[EnumField], lex: ToolLexicon, b: Binding) -> None:
    """'no LP pools', 'not high risk': every other value of the field, where it takes them;
    on an ordered field (one with a maximum), a high value negated is the one below it."""
    for f in fields:
        k = f.values.index(m.value) if m.value in f.values else -1
        if f.is_max and k >= 1 and 2 * k >= len(f.values):
            b.arguments[f.name] = f.values[k - 1]
            b.bound += 1
            return
    for f in sorted(fields, key=lambda f: not f.is_list):
        others = [v for v in f.values if v != m.value]
        if m.value not in f.values or not others:
            continue
        if f.is_list:
            b.arguments[f.name] = others
        elif len(others) == 1 and not f.is_max:
            b.arguments[f.name] = others[0]
        else:
            continue
        b.bound += 1
        return
    b.unbound.append(
        f"“not {m.value.replace('_', ' ')}” ({_describe(m.key)}): {lex.tool} cannot leave "
        "out one value"
    )


def _enum_field(fields: list, value: str, *, prefer_max: bool):  # type: ignore[no-untyped-def]
    ranked = sorted(fields, key=lambda f: (f.is_max != prefer_max, f.is_list))
    for f in ranked:
        if value in f.values:
            return f
    return None


def bind_sort(reading: Reading, lex: ToolLexicon, b: Binding) -> None:
    """Orders asked for: 'highest TVL', 'by holders', 'safest', 'biggest gainers', 'largest'."""
    if not lex.has("sort"):
        return
    want = sort_request(reading, lex)
    if want is None:
        return
    family, direction = want
    window = _window(reading, lex) if family == "price_change" else None
    value = lex.sort_values.get((family, window)) or lex.sort_values.get((family, None))
    if value is None:
        # 'by volume' where the schema sorts by volume_24h only: the window it has.
        windows = [v for (f, _), v in lex.sort_values.items() if f == family]
        value = lex.sort_values.get((family, "24h")) or (windows[0] if len(windows) == 1 else None)
    if value is None:
        b.unbound.append(f"sorting by {_describe(family)}: {lex.tool} cannot sort by it")
        return
    b.arguments[lex.roles["sort"]] = value
    # Directions are asked as "largest first" or "smallest first"; rank 1 is the largest.
    order = {"desc": "asc", "asc": "desc"}[direction] if family == "rank" else direction
    # "ascending"/"descending" said outright is the schema's own direction, as said.
    said = set(reading.words) & {"ascending", "asc", "descending", "desc"}
    if len(said) == 1:
        order = "asc" if said <= {"ascending", "asc"} else "desc"
    natural = "asc" if family == "rank" else "desc"
    if order != natural and lex.has("direction"):
        b.arguments[lex.roles["direction"]] = order


def sort_request(reading: Reading, lex: ToolLexicon | None = None) -> tuple[str, str] | None:
    """(family, direction) of the order the question asks for, if any; the direction says
    largest first (desc) or smallest first (asc)."""
    mentions = sorted(reading.mentions, key=lambda m: m.start)
    for m in mentions:
        if m.kind == "sort":
            return m.key, m.value
    return _sort_by(reading, mentions) or _superlative(reading, mentions) or _size(reading, lex)


def _sort_by(reading: Reading, mentions: list[Mention]) -> tuple[str, str] | None:
    """'sorted by holders'; 'cheapest tokens by market cap' (the superlative picks the end)."""
    families = [m for m in mentions if m.kind == "family"]
    superlatives = [m.key for m in mentions if m.kind == "superlative"]
    for m in mentions:
        if m.kind == "by":
            after = [f for f in families if f.start > m.end and f.start - m.end <= 3]
            if after:
                return after[0].key, superlatives[0] if superlatives else "desc"
    return None


def _superlative(reading: Reading, mentions: list[Mention]) -> tuple[str, str] | None:
    """'highest TVL', 'lowest APY'; 'which vaults pay the most', 'moved the most today'."""
    families = [m for m in mentions if m.kind == "family"]
    for m in mentions:
        if m.kind != "superlative":
            continue
        after = [f for f in families if 0 <= f.start - m.end <= 3]
        if after:
            return after[0].key, m.key
        before = [f for f in families if 0 <= m.start - f.end <= 2]
        nxt = reading.words[m.end + 1] if m.end + 1 < len(reading.words) else ""
        if before and (not nxt[:1].isalpha() or nxt in _AFTER_SUPERLATIVE):
            return before[-1].key, m.key
    return None


def _size(reading: Reading, lex: ToolLexicon | None) -> tuple[str, str] | None:
    """'largest vaults', 'biggest stablecoins': the tool's own size field."""
    if not any(w in voc.SIZE_WORDS for w in reading.words):
        return None
    if lex is None:
        return "size", "desc"
    for family in voc.SIZE_FAMILIES:
        if family in lex.sortable():
            return family, "desc"
    return None


def _window(reading: Reading, lex: ToolLexicon) -> str | None:
    for m in reading.mentions_of("window"):
        return m.value
    for hours, _, _ in reading.numbers.windows_hours:
        return {1: "1h", 24: "24h"}.get(int(hours))
    for days, _, _ in reading.numbers.windows_days:
        return {1: "24h", 7: "7d"}.get(int(days))
    return None


def bind_window(reading: Reading, lex: ToolLexicon, b: Binding) -> None:
    """The price-change window, when a price-change bound was set."""
    name = lex.roles.get("window")
    if not name:
        return
    bounds = [f.name for (fam, _), f in lex.numeric.items() if fam == "price_change"]
    if any(n in b.arguments for n in bounds):
        window = _window(reading, lex) or "24h"
        if lex.windows and window not in lex.windows:
            b.unbound.append(f"the {window} window: {lex.tool} has only {', '.join(lex.windows)}")
            window = "24h"
        b.arguments[name] = window


def bind_counts(reading: Reading, lex: ToolLexicon, b: Binding) -> None:
    """'top 5' → limit/per_page; 'page 2' → page."""
    name = lex.roles.get("count")
    if name and reading.numbers.counts:
        n = reading.numbers.counts[0][0]
        low, high = lex.bounds.get(name, (None, None))
        if high is not None:
            n = min(n, int(high))
        if low is not None:
            n = max(n, int(low))
        b.arguments[name] = n
    page = lex.roles.get("page")
    if page and reading.numbers.page:
        b.arguments[page] = reading.numbers.page


def bind_days(reading: Reading, lex: ToolLexicon, b: Binding) -> None:
    """'over the last 90 days' → the tool's days window."""
    name = lex.roles.get("days")
    if not name:
        return
    days = look_back_days(reading)
    if days is None:
        return
    low, high = lex.bounds.get(name, (None, None))
    if high is not None and days > high:
        b.unbound.append(f"{days} days of history: {lex.tool} goes back at most {int(high)} days")
        days = int(high)
    if low is not None:
        days = max(days, int(low))
    b.arguments[name] = days


def look_back_days(reading: Reading) -> int | None:
    """The history window asked for: 'last 90 days', 'over the past month', 'since March'."""
    dated = reading.dated()
    if dated and dated[0].days:
        return dated[0].days
    if reading.numbers.windows_days:
        return int(reading.numbers.windows_days[0][0])
    text = " ".join(reading.words)
    for phrase, days in voc.DAY_WINDOWS.items():
        if f" {phrase} " in f" {text} ":
            return days
    return None


def bind_chains(reading: Reading, lex: ToolLexicon, b: Binding, known: set[str]) -> None:
    """Chains named ('on base', 'not on bsc') → chain / chains / exclude_chains."""
    chains = reading.chains()
    wanted = [c for c, negated in chains if not negated]
    excluded = [c for c, negated in chains if negated]
    allowed = lex.known.get("chain") if "chain" in lex.closed else None
    usable = []
    for chain in wanted:
        if allowed is not None and chain not in allowed:
            b.unbound.append(
                f"chain “{chain}”: {lex.tool} covers only {', '.join(sorted(allowed))}"
            )
            continue
        usable.append(chain)
    if usable:
        if len(usable) > 1 and lex.has("chains"):
            b.arguments[lex.roles["chains"]] = usable
        elif lex.has("chain"):
            b.arguments[lex.roles["chain"]] = usable[0]
            if len(usable) > 1:
                b.unbound.append(f"chains {', '.join(usable[1:])}: {lex.tool} takes one chain")
        elif lex.has("chains"):
            b.arguments[lex.roles["chains"]] = usable
        else:
            b.unbound.append(f"chain “{usable[0]}”: {lex.tool} cannot filter by chain")
            return
        b.bound += 1
    if excluded:
        if lex.has("exclude_chains"):
            b.arguments[lex.roles["exclude_chains"]] = excluded
            b.bound += 1
        else:
            b.unbound.append(f"leaving out {', '.join(excluded)}: {lex.tool} cannot exclude chains")


def bind_fields(
    reading: Reading,
    lex: ToolLexicon,
    *,
    skip: set[int] | None = None,
    known_chains: set[str] | None = None,
) -> Binding:
    """Everything the question says that this tool's fields can carry."""
    b = Binding(lex.tool)
    bind_chains(reading, lex, b, known_chains or set())
    bind_flags(reading, lex, b)
    bind_negated_fields(reading, lex, b)
    bind_enums(reading, lex, b)
    bind_conditions(reading, lex, b, skip=skip or set())
    bind_window(reading, lex, b)
    bind_sort(reading, lex, b)
    bind_counts(reading, lex, b)
    bind_days(reading, lex, b)
    return b
