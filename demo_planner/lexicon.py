"""What each offered tool can be asked, read from its input schema.

For every tool of the turn, its JSON schema is read once: numeric bounds become field
families with a side and a unit (`min_liquidity_usd` → family `liquidity`, side `min`, unit
`usd`), booleans become flags, enums become values the question can name (sort fields,
windows, risk ratings, exposure), and quoted examples in descriptions ('aave-v3',
'USDC') become known values of that field. Field roles (chain, protocol, asset, address,
vault id, page, count) are recognised by the schema's naming conventions.

The phrases that mention a family are the family's own words plus the synonym table of
`vocabulary.py`; a question's mentions are found with one longest-match scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from albert.tools.base import ToolSpec
from demo_planner import vocabulary as voc
from demo_planner.text import Token, phrase_tokens

FieldUnit = Literal["usd", "percent", "ratio", "score", "count", "days", "plain"]

_WINDOW_SUFFIX = re.compile(r"_(1h|24h|7d|30d)$")
_QUOTED = re.compile(r"'([A-Za-z0-9][A-Za-z0-9._+-]{0,40})'")
# Schema naming conventions of the roles the planner fills from names, not numbers.
ROLES: dict[str, tuple[str, ...]] = {
    "chain": ("chain",),
    "chains": ("chains",),
    "exclude_chains": ("exclude_chains",),
    "protocol": ("protocol",),
    "protocols": ("protocols",),
    "exclude_protocols": ("exclude_protocols",),
    "asset": ("asset_symbol", "asset", "underlying"),
    "assets": ("asset_symbols",),
    "symbol": ("symbol", "ticker"),
    "token": ("token",),
    "query": ("query", "q", "search"),
    "address": ("address", "wallet", "wallet_address"),
    "vault_id": ("vault_id", "id"),
    "days": ("days", "history_days", "window_days"),
    "page": ("page",),
    "count": ("limit", "per_page", "top_n", "count"),
    "sort": ("sort_by", "order_by", "sort"),
    "direction": ("sort_direction", "order", "direction"),
    "window": ("price_change_window", "window"),
}


# Roles whose values are names the question may use: role → the kind of name.
_NAMED_ROLES = {
    "chain": "chain", "chains": "chain", "protocol": "protocol", "protocols": "protocol",
    "asset": "asset", "assets": "asset",
}  # fmt: skip


@dataclass(frozen=True)
class NumericField:
    """A bound the tool takes: `min_tvl_usd` is family tvl, side min, unit usd."""

    name: str
    family: str
    side: Literal["min", "max"]
    unit: FieldUnit
    integer: bool
    minimum: float | None = None
    maximum: float | None = None


@dataclass(frozen=True)
class EnumField:
    """A field taking one (or a list) of named values."""

    name: str
    family: str
    values: tuple[str, ...]
    is_list: bool
    is_max: bool


@dataclass
class ToolLexicon:
    """One tool's fields, by what they mean."""

    tool: str
    description: str
    numeric: dict[tuple[str, str], NumericField] = field(default_factory=dict)
    flags: dict[str, str] = field(default_factory=dict)
    enums: dict[str, list[EnumField]] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)
    sort_values: dict[tuple[str, str | None], str] = field(default_factory=dict)
    windows: tuple[str, ...] = ()
    known: dict[str, set[str]] = field(default_factory=dict)
    closed: set[str] = field(default_factory=set)
    bounds: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)

    @property
    def families(self) -> set[str]:
        """Every numeric family this tool can bound."""
        return {family for family, _ in self.numeric}

    def has(self, role: str) -> bool:
        return role in self.roles

    def sortable(self) -> set[str]:
        return {family for family, _ in self.sort_values}


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Follow $ref and drop the null branch of anyOf: the field's own schema."""
    seen = 0
    while seen < 8:
        seen += 1
        if "$ref" in schema:
            schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
            continue
        options = [o for o in schema.get("anyOf", []) if o.get("type") != "null"]
        if options and len(options) == 1:
            merged = {k: v for k, v in schema.items() if k != "anyOf"}
            schema = {**options[0], **merged}
            continue
        break
    return schema


def _family(name: str) -> str:
    family = re.sub(r"^(min|max)_", "", name)
    family = re.sub(r"_(usd|pct|percent|days|only)$", "", family)
    return family


def _unit(name: str, schema: dict[str, Any], description: str) -> FieldUnit:
    low = description.lower()
    if name.endswith("_usd") or " usd" in low or "us dollars" in low:
        return "usd"
    if name.endswith("_days") or "days" in name:
        return "days"
    if "ratio" in name:
        return "ratio"
    if name.endswith(("_pct", "_percent")) or "percent" in low:
        return "percent"
    if re.search(r"0\s*(\(worst\))?\s*(-|–|to)\s*100", low) or name.endswith("_score"):
        return "score"
    if schema.get("type") == "integer" or "number of" in low:
        return "count"
    return "plain"


def _role(name: str) -> str | None:
    for role, names in ROLES.items():
        if name in names:
            return role
    return None


def _sort_family(value: str, families: set[str]) -> tuple[str, str | None]:
    """The family and window a sort value orders by: 'price_change_24h' → price_change, 24h."""
    window = None
    m = _WINDOW_SUFFIX.search(value)
    if m:
        window, value = m.group(1), value[: m.start()]
    base = re.sub(r"_(usd|at|pct)$", "", value)
    words = set(base.split("_"))
    letters = base.replace("_", "")
    for family in sorted(families | set(voc.FAMILY_SYNONYMS)):
        if set(family.split("_")) == words or family.replace("_", "") == letters:
            return family, window
        for phrase in voc.FAMILY_SYNONYMS.get(family, ()):
            if phrase.replace(" ", "") == letters:
                return family, window
    return base, window


@dataclass(frozen=True)
class _Property:
    """One schema property, resolved: its own type, enum (or its items' enum) and text."""

    name: str
    schema: dict[str, Any]
    description: str
    kind: str | None
    enum: tuple[str, ...]
    is_list: bool


def _property(name: str, raw: dict[str, Any], defs: dict[str, Any]) -> _Property:
    schema = _resolve(raw, defs)
    kind = schema.get("type")
    enum = schema.get("enum")
    if kind == "array":
        enum = _resolve(schema.get("items", {}), defs).get("enum", enum)
    description = str(raw.get("description") or schema.get("description") or "")
    values = tuple(str(v) for v in enum or ())
    return _Property(name, schema, description, kind, values, kind == "array")


def build_lexicon(spec: ToolSpec) -> ToolLexicon:
    """Read one tool's input schema."""
    params = spec.parameters or {}
    defs = params.get("$defs", {})
    lex = ToolLexicon(tool=spec.name, description=spec.description or "")
    sort_enum: tuple[str, ...] = ()
    for name, raw in (params.get("properties") or {}).items():
        prop = _property(name, raw, defs)
        role = _role(name)
        if role:
            _add_role(lex, role, prop)
            if role == "sort":
                sort_enum = prop.enum
        elif prop.kind == "boolean":
            lex.flags[_family(name)] = name
        elif prop.enum:
            _add_enum(lex, prop)
        elif prop.kind in ("number", "integer"):
            _add_numeric(lex, prop)
    families = lex.families | set(lex.flags)
    for value in sort_enum:
        lex.sort_values[_sort_family(value, families)] = value
    return lex


def _add_role(lex: ToolLexicon, role: str, prop: _Property) -> None:
    lex.roles[role] = prop.name
    quoted = set(_QUOTED.findall(prop.description)) | set(prop.enum)
    named = _NAMED_ROLES.get(role)
    if quoted and named:
        lex.known.setdefault(named, set()).update(quoted)
        if prop.enum:
            lex.closed.add(named)
    if role == "window" and prop.enum:
        lex.windows = prop.enum
    lex.bounds[prop.name] = (prop.schema.get("minimum"), prop.schema.get("maximum"))


def _add_enum(lex: ToolLexicon, prop: _Property) -> None:
    family = _family(prop.name)
    if prop.is_list:
        family = family.removesuffix("s")  # risk_ratings and max_risk_rating: one family
    field = EnumField(prop.name, family, prop.enum, prop.is_list, prop.name.startswith("max_"))
    lex.enums.setdefault(family, []).append(field)


def _add_numeric(lex: ToolLexicon, prop: _Property) -> None:
    name = prop.name
    side = "min" if name.startswith("min_") else "max" if name.startswith("max_") else None
    if side is None:
        return
    lex.numeric[(_family(name), side)] = NumericField(
        name,
        _family(name),
        side,
        _unit(name, prop.schema, prop.description),
        prop.kind == "integer",
        prop.schema.get("minimum"),
        prop.schema.get("maximum"),
    )


# --- mentions --------------------------------------------------------------------------


@dataclass(frozen=True)
class Mention:
    """A phrase of the question that names something a tool field can take."""

    kind: Literal["family", "flag", "enum", "chain", "window", "sort", "superlative", "by"]
    key: str
    start: int
    end: int
    value: str = ""
    sign: int = 1

    def gap(self, start: int, end: int) -> int:
        """Tokens strictly between this mention and the span start..end."""
        if self.end < start:
            return start - self.end - 1
        if end < self.start:
            return self.start - end - 1
        return 0


@dataclass
class PhraseTable:
    """Phrase (as token texts) → what it mentions; longest match wins."""

    entries: dict[tuple[str, ...], list[tuple[str, str, str, int]]] = field(default_factory=dict)
    longest: int = 1

    def add(
        self, phrase: str | tuple[str, ...], kind: str, key: str, value: str = "", sign: int = 1
    ) -> None:
        words = phrase if isinstance(phrase, tuple) else phrase_tokens(phrase)
        if not words:
            return
        bucket = self.entries.setdefault(words, [])
        if (kind, key, value, sign) not in bucket:
            bucket.append((kind, key, value, sign))
        self.longest = max(self.longest, len(words))


def phrase_table(lexicons: list[ToolLexicon], chains: dict[str, str]) -> PhraseTable:
    """Every phrase a question may use for the fields of the offered tools."""
    table = PhraseTable()
    _family_phrases(table, lexicons)
    _flag_phrases(table, lexicons)
    _enum_phrases(table, lexicons)
    _order_phrases(table, lexicons)
    for phrase, slug in chains.items():
        table.add(phrase, "chain", slug)
    return table


def _family_phrases(table: PhraseTable, lexicons: list[ToolLexicon]) -> None:
    families: set[str] = set(voc.FAMILY_SYNONYMS)
    for lex in lexicons:
        families |= lex.families | lex.sortable()
    for family in families:
        table.add(family.replace("_", " "), "family", family)
        for phrase in voc.FAMILY_SYNONYMS.get(family, ()):
            table.add(phrase, "family", family)
    for word in voc.PRICE_UP:
        table.add(word, "family", "price_change", sign=1)
    for word in voc.PRICE_DOWN:
        table.add(word, "family", "price_change", sign=-1)


def _flag_phrases(table: PhraseTable, lexicons: list[ToolLexicon]) -> None:
    flags: set[str] = set(voc.FLAG_SYNONYMS)
    for lex in lexicons:
        flags |= set(lex.flags)
    for family in flags:
        table.add(family.replace("_", " "), "flag", family)
        for phrase in voc.FLAG_SYNONYMS.get(family, ()):
            table.add(phrase, "flag", family)
        for phrase in voc.FLAG_OFF_WORDS.get(family, ()):
            table.add(phrase, "flag", family, sign=-1)


def _enum_phrases(table: PhraseTable, lexicons: list[ToolLexicon]) -> None:
    values: dict[str, set[str]] = {}
    for lex in lexicons:
        for family, fields in lex.enums.items():
            for f in fields:
                values.setdefault(family, set()).update(f.values)
    for family, named in values.items():
        synonyms = voc.ENUM_SYNONYMS.get(family, {})
        head = family.split("_")[0]
        for value in named:
            # The value with its field's head word: "medium risk", "single exposure".
            table.add(f"{value.replace('_', ' ')} {head}", "enum", family, value)
            for phrase in synonyms.get(value, ()):
                table.add(phrase, "enum", family, value)


def _order_phrases(table: PhraseTable, lexicons: list[ToolLexicon]) -> None:
    for phrase, value in voc.WINDOWS.items():
        table.add(phrase, "window", "window", value)
    for lex in lexicons:
        for value in lex.windows:
            table.add(value, "window", "window", value)
    for phrase, (family, direction) in voc.SORT_WORDS.items():
        table.add(phrase, "sort", family, direction)
    for word in voc.SUPERLATIVES_DESC:
        table.add(word, "superlative", "desc")
    for word in voc.SUPERLATIVES_ASC:
        table.add(word, "superlative", "asc")
    for phrase in voc.SORT_BY_WORDS:
        table.add(phrase, "by", "by")
    for lex in lexicons:
        # The schema's own sort values as written ("apy_base" reads "apy base").
        for (family, _), value in lex.sort_values.items():
            table.add(value.replace("_", " "), "family", family)


def find_mentions(tokens: list[Token], table: PhraseTable, skip: set[int]) -> list[Mention]:
    """Longest-match scan of the tokens not already read as numbers."""
    words = [t.low for t in tokens]
    out: list[Mention] = []
    i = 0
    while i < len(tokens):
        if i in skip:
            i += 1
            continue
        hit = None
        for n in range(min(table.longest, len(tokens) - i), 0, -1):
            span = range(i, i + n)
            if any(j in skip for j in span):
                continue
            entries = table.entries.get(tuple(words[i : i + n]))
            if entries:
                hit = (n, entries)
                break
        if hit is None:
            i += 1
            continue
        n, entries = hit
        for kind, key, value, sign in entries:
            out.append(Mention(kind, key, i, i + n - 1, value, sign))  # type: ignore[arg-type]
        i += n
    return out
