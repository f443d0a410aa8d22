"""From a reading to a plan: which tools, with which arguments, in which steps.

A plan has up to three tool steps, all within the tool loop's step cap:

1. lookups — only when a vault question names something the planner cannot place yet
   (`names.py`);
2. the main calls — the route's tool, with every condition bound to its field;
3. follow-ups — calls fed by the main results: the history, risk or yield analysis of the
   vault a search found ("APY history of the highest-TVL USDT vault"), the analysis of
   the token a screen found ("analyse the biggest gainer today"), or the other check of an
   address (the address check when the token index has no token there, the token analysis
   when the address check says it is a token contract).

A question with several parts ("what's AAVE at and any news on it?", `clauses.py`) is a
plan per part; the parts share the steps, so the whole stays within the cap. A question
asking what no tool can do (`capabilities.py`) gets the nearest thing the tools can do,
or none; small talk (`small_talk.py`) gets no call at all.

The plan is rebuilt from the question at every step (with what the turn has returned so
far), so each step's calls follow from the same reading.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from demo_planner import vocabulary as voc
from demo_planner.amounts import Amount, said_back
from demo_planner.binding import Binding, bind_fields, look_back_days, sort_request
from demo_planner.capabilities import Gap, find_gap
from demo_planner.clauses import split_question
from demo_planner.comparisons import COMPARE_MIN_TVL, compares
from demo_planner.exploits import asks_about_exploits, hack_word, not_in_register
from demo_planner.lexicon import PhraseTable, ToolLexicon, phrase_table
from demo_planner.named_vaults import named_vault
from demo_planner.names import (
    Candidate,
    NameIndex,
    Resolved,
    candidates,
    needs_name_lookup,
    protocol_matches,
    resolve,
)
from demo_planner.negation import negator_at
from demo_planner.reading import Reading, read
from demo_planner.small_talk import Kind, small_talk
from demo_planner.text import is_ticker_shaped, without_possessive
from demo_planner.tickers import feed_topic, token_symbols
from demo_planner.timeframes import MAX_DAYS
from demo_planner.vault_table import vault_rows

VAULT_TOOLS = ("search_vaults", "top_yields", "search_protocols")
VAULT_ID_TOOLS = ("analyze_yield", "analyze_risk", "vault_history")
WALLET_TOOLS = ("wallet_portfolio", "wallet_positions", "wallet_top_positions")
CATALOGUE_TOOL = "search_protocols"
ASSET_LOOKUP_TOOL = "search_vault_assets"
CATALOGUE_LIMIT = 50
MAX_FOLLOW = 3
TOKEN_HIT = re.compile(r"^\d+\. .*?\(([A-Za-z0-9.$_-]{1,20})\):", re.MULTILINE)

VAULTS_UNAVAILABLE = (
    "I cannot check vault or yield data right now: the vault tools are not available (the "
    "vault data server is not connected). I have not guessed any vault, APY or TVL figures; "
    "ask again once it is back."
)
SCREEN_UNAVAILABLE = (
    "I cannot run a token screen right now: no token search with market filters is "
    "available, so I have not listed any tokens."
)


@dataclass
class Call:
    """One planned tool call (`part`: which part of the question it answers)."""

    tool: str
    arguments: dict[str, Any]
    part: int = 0


@dataclass
class Band:
    """A quoted APY and the guideline band it falls in."""

    apy: float
    low: float
    high: float
    label: str


@dataclass
class Follow:
    """Calls to make with what the main calls return."""

    tools: list[str]
    source: str  # "vault", "token" or "address"
    count: int = 1
    days: int | None = None


@dataclass
class Plan:
    """What to call, in which step, and what to tell the user about it."""

    route: str
    lookups: list[Call] = field(default_factory=list)
    main: list[Call] = field(default_factory=list)
    follow: Follow | None = None
    notes: list[str] = field(default_factory=list)
    band: Band | None = None
    unavailable: str | None = None
    resolved: list[Resolved] = field(default_factory=list)
    vault_name: str = ""  # a vault named by its own name, searched as text
    parts: list[Plan] = field(default_factory=list)  # a question of several parts
    said: str = ""  # this part of the question as the user wrote it
    leads: list[str] = field(default_factory=list)  # how the question was read, said first
    reply: Kind | None = None  # small talk: what it said
    gap: Gap | None = None  # something asked that no tool can do
    compare: list[str] = field(default_factory=list)  # the side each main call searches
    compare_what: str = ""
    compare_where: str = "on"  # "on base" for chains, "for Aave" for protocols and assets
    trend: bool = False  # say which way the history went
    amount: Amount | None = None  # an amount to place, weighed against the vaults found
    exploit_names: list[str] = field(default_factory=list)  # an exploit question's names
    probe: str = ""  # an address asked of the token index before the address check
    asked: list[str] = field(default_factory=list)  # risk factors a yes/no question asks

    def all_parts(self) -> list[Plan]:
        """The plans of the question's parts (itself when it has one part)."""
        return self.parts or [self]

    @property
    def asks(self) -> bool:
        """Whether the plan calls any tool or answers by itself (not small talk, not
        unmatched)."""
        return self.route not in ("none", "social")


@dataclass
class Context:
    """The tools of this turn, read once per step."""

    lexicons: dict[str, ToolLexicon]
    table: PhraseTable
    names: NameIndex
    today: date = field(default_factory=lambda: datetime.now(UTC).date())

    def has(self, tool: str) -> bool:
        return tool in self.lexicons

    def known(self, kind: str) -> set[str]:
        out: set[str] = set()
        for lex in self.lexicons.values():
            out |= lex.known.get(kind, set())
        return out


def chain_phrases(lexicons: dict[str, ToolLexicon], names: NameIndex) -> dict[str, str]:
    """Every way of writing a chain the tools or the index know."""
    phrases = {**voc.CHAIN_NAMES, **voc.CHAIN_SHORT}
    for lex in lexicons.values():
        for value in lex.known.get("chain", set()):
            if value.islower() and value not in voc.CHAIN_SHORT:
                phrases.setdefault(value, value)
    for chain in names.chains:
        phrases.setdefault(chain, chain)
    return phrases


def make_context(
    lexicons: dict[str, ToolLexicon], names: NameIndex, today: date | None = None
) -> Context:
    """The phrase table of the offered tools and the known chains (`today` dates "since
    March")."""
    table = phrase_table(list(lexicons.values()), chain_phrases(lexicons, names))
    return Context(lexicons, table, names, today or datetime.now(UTC).date())


def make_plan(question: str, ctx: Context, *, lookups_done: bool, split: bool = True) -> Plan:
    """The plan for a question with the tools and names known now: a plan per part when it
    asks several things (`split`)."""
    if split:
        parts = split_question(question)
        if len(parts) > 1:
            plan = _parts_plan([(p.text, p.said) for p in parts], ctx, lookups_done)
            if plan is not None:
                return plan
    reading = read(question, ctx.table, ctx.today)
    said = small_talk(question, asks_for_data=_asks_for_data(reading, ctx))
    if said is not None:
        return Plan("social", reply=said)
    plan = _route(reading, ctx, lookups_done)
    _finish(plan, reading, ctx)
    return plan


def _parts_plan(parts: list[tuple[str, str]], ctx: Context, lookups_done: bool) -> Plan | None:
    """One plan per part; None when the parts come to one question after all (a part that
    only greets, or asks exactly what an earlier part asks)."""
    plans: list[Plan] = []
    seen: list[tuple[str, str]] = []
    for text, said in parts:
        plan = make_plan(text, ctx, lookups_done=lookups_done, split=False)
        if plan.route == "social":
            continue  # "hey there, what's ETH at?": the greeting needs no answer of its own
        calls = [(c.tool, repr(sorted(c.arguments.items()))) for c in plan.main]
        if calls and all(c in seen for c in calls) and plan.follow is None:
            continue
        seen += calls
        plan.said = said
        plans.append(plan)
    if len(plans) < 2:
        return None
    for index, plan in enumerate(plans):
        for call in [*plan.lookups, *plan.main]:
            call.part = index
    return Plan("parts", parts=plans)


def _asks_for_data(reading: Reading, ctx: Context) -> bool:
    """Whether anything in the question is for a tool: an entity, a number, a field, a
    chain, a cue word or a name."""
    ent = reading.entities
    # A bare number word with nothing around it ("nice one") asks for nothing.
    conditions = [c for c in reading.numbers.conditions if not c.bare]
    if ent.addresses or ent.ens_names or ent.vault_ids or conditions:
        return True
    if reading.numbers.counts or reading.mentions or reading.amounts or reading.windows:
        return True
    # Cue words that need a subject to ask anything: "thanks, that's helpful" reads as a
    # judgement, "that's all" as a list, "tell me about" as protocol talk.
    modifiers = {"wallet", "wallet_list", "wallet_top", "judgement", "protocol_talk"}
    words = reading.words
    for cue, spans in reading.cues.items():
        if cue in modifiers:
            continue
        # "cheers, that was useful": a cue word ("was") that is small talk's own.
        if any(any(words[i] not in voc.SOCIAL_FILLER for i in range(s, e + 1)) for s, e in spans):
            return True
    return bool(token_symbols(reading, names=False)) or bool(_named_words(reading, ctx))


def _named_words(reading: Reading, ctx: Context) -> list[str]:
    schema = {"protocol": ctx.known("protocol"), "asset": ctx.known("asset")}
    social = {w for phrases in voc.SOCIAL_PHRASES.values() for p in phrases for w in p.split()}
    return [
        c.text
        for c in candidates(reading, _known_name(ctx, schema))
        if c.text.lower() not in social and c.text.lower() not in voc.SOCIAL_FILLER
    ]


def _route(reading: Reading, ctx: Context, lookups_done: bool) -> Plan:
    """The plan for one question (or one part of one)."""
    ent = reading.entities
    gap = find_gap(reading.words, _named_tokens(reading), vault_words=reading.has("vault"))
    if gap is not None and gap.nearest == "none":
        return Plan("gap", gap=gap)
    if ent.vault_ids:
        return _with_gap(_vault_id_plan(reading, ctx), gap)
    plan = _address_plan(reading, ctx) if ent.ens_names or ent.addresses else None
    if plan is not None:
        return _with_gap(plan, gap)
    if gap is not None and gap.nearest == "token":
        symbols = list(gap.tickers)
        if symbols and ctx.has("analyze_token"):
            calls = [Call("analyze_token", {"symbol": s}) for s in symbols[:3]]
            return Plan("token", main=calls, gap=gap)
        return Plan("gap", gap=gap)
    if reading.has("feed") and ctx.has("search_feed"):
        # "any news on the Bybit hack?" asks for the news, not the register.
        return Plan("feed", main=[Call("search_feed", {"query": feed_topic(reading)})])
    if asks_about_exploits(reading.words) and not _hack_negated(reading):
        return _exploit_plan(reading, ctx, lookups_done)
    band = _quoted_apy(reading, ctx)
    if band is not None:
        return _band_plan(reading, ctx, band, lookups_done)
    if gap is not None and gap.nearest in ("history", "vaults"):
        if not any(ctx.has(t) for t in VAULT_TOOLS):
            return Plan("vaults", unavailable=VAULTS_UNAVAILABLE, gap=gap)
        return _with_gap(
            _vault_plan(reading, ctx, lookups_done, history=gap.nearest == "history"), gap
        )
    return _topic_plan(reading, ctx, lookups_done)


def _named_tokens(reading: Reading) -> list[str]:
    """Tokens a question names, tickers written in lowercase too ("will usdc depeg?")."""
    symbols = token_symbols(reading)
    for word in reading.words:
        if word in voc.COMMON_TICKERS and word.upper() not in symbols:
            symbols.append(word.upper())
    return symbols


def _with_gap(plan: Plan, gap: Gap | None) -> Plan:
    plan.gap = gap
    return plan


def _hack_negated(reading: Reading) -> bool:
    """'protocols that haven't been hacked': a condition on a search, not a question."""
    words = reading.words
    for i, word in enumerate(words):
        if word in voc.HACK_WORDS:
            if any(negator_at(words, k) for k in range(max(0, i - 3), i)):
                return True
            if i + 1 < len(words) and words[i + 1] == "free":
                return True
    return False


def _finish(plan: Plan, reading: Reading, ctx: Context) -> None:
    """What the answer says about how the question was read, and what no call took: time
    windows, an amount, a risk level, an exploit condition."""
    if plan.gap is not None and plan.route != "gap":
        plan.leads.insert(0, plan.gap.reply)
    calls = [*plan.main]
    windows = [w for w in reading.dated() if not _window_taken(w.days, calls, plan)]
    for w in reading.dated():
        if w.since and w not in windows:
            plan.leads.append(f"Read “{w.text}” as the last {_days_taken(calls, plan)} days.")
        if w not in windows and (w.days or 0) > MAX_DAYS:
            plan.notes.append(
                f"“{w.text}”: the history goes back at most {MAX_DAYS} days, so it covers "
                f"the last {MAX_DAYS}"
            )
    windows_used = [c.arguments.get("price_change_window") for c in calls]
    used = next((w for w in windows_used if w), None)
    for w in windows:
        if used is not None:
            plan.notes.append(
                f"“{w.text}”: price changes have windows of 1h, 24h and 7d only, so this is "
                f"not applied (the {used} change is used)"
            )
            continue
        plan.notes.append(
            f"“{w.text}”: {_tools_said(calls, plan)} cannot look back over a time window, so "
            "this is not applied"
        )
    vaults = plan.route in ("vaults", "band")
    for amount in [a for a in reading.amounts if a.placed]:
        plan.leads.append(said_back(amount))
        if vaults and plan.main:
            plan.amount = plan.amount or amount
    if reading.appetite is not None and plan.route not in ("gap", "social", "none"):
        if _risk_capped(plan) or reading.appetite.level == "high":
            plan.leads.append(reading.appetite.said_back())
        elif plan.main or plan.lookups:
            plan.notes.append(
                f"“{reading.appetite.text}”: {_tools_said(calls, plan)} cannot filter by risk "
                "rating"
            )
    if _hack_negated(reading) and plan.main:
        plan.notes.append(
            "“never hacked”: no tool filters by exploit history; a vault's risk analysis "
            "counts its protocol's exploits (ask “has <protocol> been hacked?”)"
        )


def _window_taken(days: int | None, calls: list[Call], plan: Plan) -> bool:
    """Whether a call of the plan carries a time window: a history window (the search's
    follow-up counts), a price-change window, or a token's 24h figures for "today"."""
    if plan.follow is not None and plan.follow.days is not None:
        return True
    # A price change's window is 1h, 24h or 7d: another length ("last month") is not taken.
    window = {1: "24h", 7: "7d"}.get(days or 0)
    for call in calls:
        if "days" in call.arguments:
            return True
        if window and call.arguments.get("price_change_window") == window:
            return True
        if window and str(call.arguments.get("sort_by", "")).endswith(f"_{window}"):
            return True
        if call.tool == "analyze_token" and days == 1:
            return True
    return False


def _days_taken(calls: list[Call], plan: Plan) -> int:
    """The history window a call of the plan takes (the tool's limit applied)."""
    for call in calls:
        if "days" in call.arguments:
            return int(call.arguments["days"])
    days = plan.follow.days if plan.follow is not None and plan.follow.days else MAX_DAYS
    return min(days, MAX_DAYS)


def _tools_said(calls: list[Call], plan: Plan) -> str:
    tools = sorted({c.tool for c in calls})
    return ", ".join(tools) if tools else "no tool of this answer"


def _risk_capped(plan: Plan) -> bool:
    return any("max_risk_rating" in c.arguments or "risk_ratings" in c.arguments for c in plan.main)


def _topic_plan(reading: Reading, ctx: Context, lookups_done: bool) -> Plan:
    """Vaults, a token screen, or tokens by ticker: whichever the question is about."""
    domain = _domain(reading, ctx)
    if domain == "vault":
        if not any(ctx.has(t) for t in VAULT_TOOLS):
            return Plan("vaults", unavailable=VAULTS_UNAVAILABLE)
        return _vault_plan(reading, ctx, lookups_done)
    if domain == "screen":
        lex = ctx.lexicons.get("search_tokens")
        if lex is None or not lex.families:
            return Plan("screen", unavailable=SCREEN_UNAVAILABLE)
        return _screen_plan(reading, ctx, lex)
    symbols = token_symbols(reading)
    if symbols and ctx.has("analyze_token"):
        return Plan("token", main=[Call("analyze_token", {"symbol": s}) for s in symbols[:3]])
    return Plan("none")


# --- routing ---------------------------------------------------------------------------


def _protocol_names(reading: Reading, ctx: Context) -> int:
    """Name-shaped words that are known protocols ('Compare Aave and Compound for USDC')."""
    slugs = ctx.names.known_protocols(ctx.known("protocol"))
    words = [t.text for t in reading.tokens]
    used = reading.consumed()
    count = 0
    for t in reading.tokens:
        if t.index in used or is_ticker_shaped(t.text) or t.low in voc.STOPWORDS:
            continue
        if protocol_matches(words, t.index, slugs)[0]:
            count += 1
    return count


def _domain(reading: Reading, ctx: Context) -> str | None:
    """Vault question, token screen, or neither, by cue words and field mentions."""
    if (
        set(reading.words) & voc.PEG_WORDS
        and not reading.has("token_list")
        and not reading.has("vault")
        and token_symbols(reading, names=False)
    ):
        return None  # "is USDe still pegged?" asks how one token trades, not for a screen
    vault_families, token_families = _families_by_domain(ctx)
    vault = len(reading.cues.get("vault", [])) + _unnamed_percentages(reading)
    screen = len(reading.cues.get("token_list", []))
    trend = reading.in_windows()
    chains = [c for c, negated in reading.chains() if not negated]
    words = _outside_windows(reading)
    if len(chains) >= 2 and compares(words) and (not screen or set(words) & voc.VALUE_WORDS):
        vault += 2  # "where's USDC better, polygon or base?": where it earns more
    for m in reading.mentions:
        if m.start in trend:
            continue  # "rising or falling?" asks a direction, it is no filter
        if m.kind in ("family", "flag", "enum", "sort"):
            if m.key in vault_families:
                vault += 1
            elif m.key in token_families:
                screen += 1
    vault += _protocol_names(reading, ctx)
    # "I have 50k USDC, where should I put it?": money to place is a yield question.
    vault += 2 * sum(1 for a in reading.amounts if a.placed)
    if vault and vault >= screen:
        return "vault"
    if not screen:
        return None
    listing = reading.has("token_list") or any(m.kind == "sort" for m in reading.mentions)
    compared = [c for c in reading.numbers.conditions if not c.bare]
    if not listing and not compared and token_symbols(reading, names=False):
        return None  # "market cap of MKR" asks about one token
    return "screen"


def _families_by_domain(ctx: Context) -> tuple[set[str], set[str]]:
    """Field families only the vault tools have, and those only the token screen has."""
    token_families = set(voc.TOKEN_FAMILIES)
    screen_lex = ctx.lexicons.get("search_tokens")
    if screen_lex is not None and screen_lex.families:
        token_families = (screen_lex.families | screen_lex.sortable()) - {"tvl", "apy"}
    vault_families: set[str] = set()
    for name in VAULT_TOOLS:
        lex = ctx.lexicons.get(name)
        if lex is not None:
            vault_families |= lex.families | lex.sortable() | set(lex.flags) | set(lex.enums)
    vault_families -= token_families | {"stablecoin", "page", "value"}
    # Without the vault tools, still tell a vault question (to say it cannot be checked).
    return vault_families or set(voc.VAULT_FAMILIES), token_families


def _unnamed_percentages(reading: Reading) -> int:
    """A percentage that names no field is a yield ("7% on DAI") unless a price moved."""
    if any(m.kind == "family" and m.key == "price_change" for m in reading.mentions):
        return 0
    families = [m for m in reading.mentions if m.kind == "family"]
    return sum(
        1
        for cond in reading.numbers.conditions
        if cond.unit == "percent" and not any(m.gap(cond.start, cond.end) <= 3 for m in families)
    )


# --- vault ids ---------------------------------------------------------------------------


def _analysis_tools(reading: Reading, default: str) -> list[str]:
    """Which per-vault analyses the question asks for, in a stable order."""
    return _wanted_analyses(reading) or [default]


def _wanted_analyses(reading: Reading) -> list[str]:
    """The per-vault analyses the question asks for by name, in a stable order: a time
    window asks for the history, an exploit or a property asked ("is it audited?") for the
    risk analysis."""
    free = _free_cues(reading)
    asked = bool(_asked_flags(reading)) or asks_about_exploits(reading.words)
    wanted = []
    if reading.windows or ("history" in free and not (asked and _weak_history(reading))):
        wanted.append("vault_history")
    if "risk" in free or asked:
        wanted.append("analyze_risk")
    if "yield_source" in free:
        wanted.append("analyze_yield")
    return wanted


def _weak_history(reading: Reading) -> bool:
    """'has it been audited?', 'was it exploited?': the auxiliary is the only history word."""
    words = reading.words
    spans = reading.cues.get("history", [])
    return all(e == s and words[s] in ("was", "been") for s, e in spans)


def _asked_flags(reading: Reading) -> set[int]:
    """Flags a yes/no clause asks of its subject ("is it audited?", "does the top pool have
    IL?"): asked, not filters. An existence question ("are there audited vaults?") filters."""
    words = reading.words
    asked = set()
    for m in reading.mentions_of("flag"):
        k = m.start - 1
        while k >= 0 and words[k] not in voc.CLAUSE_BREAK_WORDS:
            k -= 1
        first = words[k + 1] if k + 1 < m.start else ""
        second = words[k + 2] if k + 2 < m.start else ""
        # The flag ends its clause: the predicate ("is it audited?"), not a word of the
        # subject ("are stablecoin vaults on base safe?").
        j = m.end + 1
        while j < len(words) and words[j] in ("or", "not", "at", "all", "yet", "ever", "too"):
            j += 1
        ends = j >= len(words) or words[j] in voc.CLAUSE_BREAK_WORDS
        if first in voc.AUXILIARIES and second and second != "there" and ends:
            asked.add(m.start)
    return asked


def _free_cues(reading: Reading, hide: tuple[str, ...] | None = None) -> set[str]:
    """Cue lists with a phrase outside the tokens read as numbers or field mentions (or only
    the mention kinds in `hide`)."""
    if hide is None:
        used = reading.consumed()
    else:
        used = set(reading.numbers.consumed) | {
            i for m in reading.mentions if m.kind in hide for i in range(m.start, m.end + 1)
        }
    out = set()
    for cue, spans in reading.cues.items():
        # A one-word cue must be free; a longer one ("analyze the yield") may share a word.
        if any(not set(range(s, e + 1)) <= used if e > s else s not in used for s, e in spans):
            out.add(cue)
    return out


def _vault_id_plan(reading: Reading, ctx: Context) -> Plan:
    tools = [t for t in _analysis_tools(reading, "analyze_yield") if ctx.has(t)]
    if not tools:
        tools = [t for t in VAULT_ID_TOOLS if ctx.has(t)][:1]
    if not tools:
        return Plan("vault", unavailable=VAULTS_UNAVAILABLE)
    calls = []
    for vault_id in reading.entities.vault_ids[:3]:
        for tool in tools:
            args: dict[str, Any] = {ctx.lexicons[tool].roles.get("vault_id", "vault_id"): vault_id}
            b = bind_fields(reading, _days_only(ctx.lexicons[tool]))
            args.update(b.arguments)
            calls.append(Call(tool, args))
    return Plan("vault", main=calls)


def _days_only(lex: ToolLexicon) -> ToolLexicon:
    """The tool's lexicon with only its days window (a vault id question filters nothing)."""
    return ToolLexicon(
        tool=lex.tool,
        description=lex.description,
        roles={k: v for k, v in lex.roles.items() if k == "days"},
        bounds=lex.bounds,
    )


# --- addresses and names ---------------------------------------------------------------------


def _address_plan(reading: Reading, ctx: Context) -> Plan | None:
    ent = reading.entities
    owners = [*ent.addresses, *ent.ens_names]
    wallet_ok = any(ctx.has(t) for t in WALLET_TOOLS)
    if ent.ens_names or reading.has("wallet"):
        if not wallet_ok:
            if ent.ens_names:
                return Plan(
                    "wallet",
                    unavailable=(
                        "I cannot read wallets right now: the wallet tools are not available "
                        "(the vault data server is not connected), so I cannot look up "
                        f"{', '.join(ent.ens_names)}."
                    ),
                )
        else:
            return _wallet_plan(reading, ctx, owners)
    if not ent.addresses:
        return None
    return _contract_or_address_plan(reading, ctx)


def _contract_or_address_plan(reading: Reading, ctx: Context) -> Plan | None:
    """An address asked about as a token ("what's 0x… trading at?", "0x… on base") is
    looked up in the token index first, and checked as an address only if no token is on
    record there; any other goes to the address check, which looks the address up among
    Ethereum token contracts itself and, when it finds one, says to use the token analysis:
    the planner does, as a follow-up."""
    addresses = reading.entities.addresses
    token_lex = ctx.lexicons.get("analyze_token")
    token_chains = token_lex.known.get("chain", set()) if token_lex is not None else set()
    chains = [c for c, negated in reading.chains() if not negated and c in token_chains]
    tokenish = bool(set(reading.words) & voc.TOKEN_ADDRESS_WORDS) or bool(chains)
    if tokenish and token_lex is not None:
        chain = chains[0] if chains else "ethereum"
        plan = Plan(
            "token", main=[Call("analyze_token", {"chain": chain, "address": addresses[0]})]
        )
        plan.probe = addresses[0]
        if ctx.has("analyze_address"):
            plan.follow = Follow(["analyze_address"], "address")
        return plan
    if ctx.has("analyze_address"):
        plan = Plan(
            "address", main=[Call("analyze_address", {"address": a}) for a in addresses[:3]]
        )
        if token_lex is not None:
            plan.follow = Follow(["analyze_token"], "address")
        return plan
    return None


def _wallet_plan(reading: Reading, ctx: Context, owners: list[str]) -> Plan:
    """Portfolio, positions or top positions, by what the question asks."""
    free = _free_cues(reading, hide=())
    counted = bool(reading.numbers.counts)
    if "wallet_top" in free or counted or sort_request(reading) is not None:
        order = ["wallet_top_positions", "wallet_positions", "wallet_portfolio"]
    elif "wallet_list" in free:
        order = ["wallet_positions", "wallet_top_positions", "wallet_portfolio"]
    else:
        order = ["wallet_portfolio", "wallet_positions", "wallet_top_positions"]
    order = [t for t in order if ctx.has(t)]
    bindings = [bind_fields(reading, ctx.lexicons[t]) for t in order]
    # Only a value bound ("worth over $1k") that another tool takes changes the choice.
    best = max(range(len(order)), key=lambda i: (len(bindings[i].used_conditions), -i))
    chosen, binding = order[best], bindings[best]
    notes = list(binding.unbound)
    binding.arguments.pop(ctx.lexicons[chosen].roles.get("sort", ""), None)
    calls = []
    for owner in owners[:3]:
        field = ctx.lexicons[chosen].roles.get("address", "address")
        calls.append(Call(chosen, {field: owner, **binding.arguments}))
    return Plan("wallet", main=calls, notes=notes)


# --- quoted APY ------------------------------------------------------------------------------


def _quoted_apy(reading: Reading, ctx: Context) -> Band | None:
    """'is a 35% APY on a new farm worth it?': a quoted APY and a judgement asked of it
    (not a condition: 'above 8%' filters, '8% … good deal?' asks)."""
    # "worth" may also read as the value field; only numbers and filters hide a judgement.
    if "judgement" not in _free_cues(reading, hide=("flag", "enum")):
        return None
    percent = [c for c in reading.numbers.conditions if c.unit == "percent"]
    if len(percent) != 1 or percent[0].side != "eq":
        return None
    cond = percent[0]
    near = sorted(
        (m.gap(cond.start, cond.end), m.key)
        for m in reading.mentions
        if m.kind == "family" and m.gap(cond.start, cond.end) <= 3
    )
    if near and near[0][1] not in ("apy", "base_apy"):
        return None
    if not near and _domain(reading, ctx) != "vault":
        return None
    value = cond.value
    for low, high, label in voc.GUIDELINE_BANDS:
        if low <= value < high or (value == 40.0 and high == 40.0):
            return Band(value, low, high, label)
    low, high, label = voc.GUIDELINE_BANDS[-1]
    return Band(value, low, high, label)


def _band_plan(reading: Reading, ctx: Context, band: Band, lookups_done: bool) -> Plan:
    """Vaults in the quoted APY's band, so the answer carries the worded guideline."""
    if not ctx.has("search_vaults"):
        if not any(ctx.has(t) for t in VAULT_TOOLS):
            return Plan("band", band=band, unavailable=VAULTS_UNAVAILABLE)
        return Plan("band", band=band)
    lex = ctx.lexicons["search_vaults"]
    skip = {i for i, c in enumerate(reading.numbers.conditions) if c.unit == "percent"}
    plan = Plan("band", band=band)
    binding = bind_fields(reading, lex, skip=skip)
    names = _names(reading, ctx, plan, lookups_done)
    if plan.lookups:
        return plan
    binding.unbound += _apply_names(binding, lex, names)
    binding.arguments["min_apy"] = band.low
    if band.high < 1000:
        binding.arguments["max_apy"] = band.high
    plan.main = [Call("search_vaults", binding.arguments)]
    plan.notes += binding.unbound
    return plan


# --- vaults -------------------------------------------------------------------------------


def _names(reading: Reading, ctx: Context, plan: Plan, lookups_done: bool) -> list[Resolved]:
    """Resolve the question's names; fills plan.lookups when the index must be asked first."""
    schema = {"protocol": ctx.known("protocol"), "asset": ctx.known("asset")}
    cands = candidates(reading, _known_name(ctx, schema))
    if not cands:
        return []
    can_look = not lookups_done and (ctx.has(CATALOGUE_TOOL) or ctx.has(ASSET_LOOKUP_TOOL))
    resolved, pending = resolve(
        reading, cands, ctx.names, schema, need_catalogue=can_look and ctx.has(CATALOGUE_TOOL)
    )
    if pending and can_look:
        plan.lookups = _lookups(reading, ctx, schema, [c for c in cands if c.text in pending])
        if plan.lookups:
            return []
    # The lookups failed or were cut: a word written as a ticker is still the user's asset.
    for c in cands:
        if c.text in pending:
            kind = "asset" if c.ticker else "unknown"
            values = [c.text.upper()] if c.ticker else []
            resolved.append(Resolved(c.text, kind, values, c.negated, c.index))
    plan.resolved = resolved
    plan.notes += [
        f"“{r.word}”: no asset, protocol or chain of that name in the vault index, "
        "so I did not filter on it"
        for r in resolved
        if r.kind == "unknown"
    ]
    return resolved


def _lookups(
    reading: Reading, ctx: Context, schema: dict[str, set[str]], pending: list[Candidate]
) -> list[Call]:
    """The catalogue if it is not cached, each name asked of the catalogue, and an asset
    lookup per word not looked up yet."""
    calls = []
    if ctx.has(CATALOGUE_TOOL) and not ctx.names.has_catalogue():
        calls.append(Call(CATALOGUE_TOOL, {"limit": CATALOGUE_LIMIT}))
    slugs = ctx.names.known_protocols(schema["protocol"])
    words = [t.text for t in reading.tokens]
    for c in pending:
        if not c.ticker and ctx.has(CATALOGUE_TOOL) and needs_name_lookup(c.text, slugs, ctx.names):
            calls.append(Call(CATALOGUE_TOOL, {"query": c.text, "limit": CATALOGUE_LIMIT}))
        if not ctx.has(ASSET_LOOKUP_TOOL) or ctx.names.asset_lookup(c.text) is not None:
            continue
        # A name the schema already knows as a protocol needs no asset lookup.
        if not c.ticker and protocol_matches(words, c.index, slugs)[0]:
            continue
        calls.append(Call(ASSET_LOOKUP_TOOL, {"query": c.text}))
    return calls


def _known_name(ctx: Context, schema: dict[str, set[str]]) -> Callable[[str], bool]:
    slugs = ctx.names.known_protocols(schema["protocol"])
    assets = {a.upper() for a in schema["asset"]}

    def known(word: str) -> bool:
        if word.upper() in assets or ctx.names.asset_lookup(word):
            return True
        return bool(protocol_matches([word], 0, slugs)[0])

    return known


def _apply_names(binding: Binding, lex: ToolLexicon, names: list[Resolved]) -> list[str]:
    """Set the protocol and asset fields from resolved names; notes for what does not fit."""
    notes: list[str] = []
    protocols = [r for r in names if r.kind == "protocol" and not r.negated]
    excluded = [s for r in names if r.kind == "protocol" and r.negated for s in r.values]
    assets = _unique([[r.values[0]] for r in names if r.kind == "asset" and not r.negated])
    if protocols:
        slugs = [s for r in protocols for s in r.values]
        if lex.has("protocol"):
            binding.arguments[lex.roles["protocol"]] = slugs[0]
            if len(slugs) > 1 and lex.has("protocols"):
                binding.arguments[lex.roles["protocols"]] = slugs[1:]
        else:
            notes.append(
                f"protocol {', '.join(r.word for r in protocols)}: {lex.tool} cannot filter by "
                "protocol"
            )
    if excluded and lex.has("exclude_protocols"):
        binding.arguments[lex.roles["exclude_protocols"]] = excluded
    elif excluded:
        words = [r.word for r in names if r.kind == "protocol" and r.negated]
        notes.append(f"leaving out {', '.join(words)}: {lex.tool} cannot exclude protocols")
    if assets:
        if len(assets) > 1 and lex.has("assets"):
            binding.arguments[lex.roles["assets"]] = assets
        elif lex.has("asset"):
            binding.arguments[lex.roles["asset"]] = assets[0]
            if len(assets) > 1:
                notes.append(f"assets {', '.join(assets[1:])}: {lex.tool} takes one asset")
        else:
            notes.append(f"asset {', '.join(assets)}: {lex.tool} cannot filter by asset")
    return notes


def _compare_groups(names: list[Resolved], reading: Reading) -> list[list[Resolved]] | None:
    """'Compare Aave and Morpho yields for WETH': one search per protocol (or per asset)."""
    # "which" alone lists ("which vaults hold USDC and USDT?"); these ask between sides.
    comparing = bool(set(_outside_windows(reading)) & (voc.COMPARE_WORDS - {"which"}))
    if not comparing:
        return None
    for kind in ("protocol", "asset"):
        group = [r for r in names if r.kind == kind and not r.negated]
        if len(group) >= 2:
            others = [r for r in names if r not in group]
            return [[r, *others] for r in group[:3]]
    return None


def _vault_plan(
    reading: Reading, ctx: Context, lookups_done: bool, *, history: bool = False
) -> Plan:
    """Vault searches (one per side of a comparison), and the analyses of the vault found
    that the question asks for (`history`: its history, whatever the words)."""
    if (
        _is_protocol_question(reading, ctx)
        and not _asks_of_vaults(reading, ctx)
        and not (history or reading.amounts or asks_about_exploits(reading.words))
    ):
        return _protocol_plan(reading, ctx)
    plan = Plan("vaults")
    names = _names(reading, ctx, plan, lookups_done)
    if plan.lookups:
        return plan
    order = _vault_tool_order(reading, ctx)
    if not order or _only_protocols_named(reading, names):
        plan.route = "protocols"
        return _protocol_plan(reading, ctx)
    asked_at = _asked_flags(reading)
    plan.asked = [
        voc.ASKED_FACTORS[m.key]
        for m in reading.mentions_of("flag")
        if m.start in asked_at and m.key in voc.ASKED_FACTORS
    ]
    judged = _judged_protocols(reading, names)
    if judged:
        # "is Yearn safe?", "is Aave audited?": the protocol's largest vault, analysed.
        plan.main = _largest_vaults(ctx, judged)
        if plan.main and ctx.has("analyze_risk"):
            plan.follow = Follow(["analyze_risk"], "vault", count=len(plan.main))
        return plan
    asked = _asked_flags(reading)
    filters = reading
    if asked:
        filters = dataclasses.replace(
            reading, mentions=[m for m in reading.mentions if m.start not in asked]
        )
    named = named_vault(reading, names)
    if named is not None and ctx.has("search_vaults"):
        # "the Syrup USDC vault": its name is searched as text, its words are no filters.
        order = ["search_vaults"]
        names = [r for r in names if r.index not in named.indices]
        plan.resolved = [r for r in plan.resolved if r.index not in named.indices]
        plan.vault_name = named.text
    chains = [c for c, negated in reading.chains() if not negated]
    by_chain = len(chains) >= 2 and compares(_outside_windows(reading)) and named is None
    if by_chain and ctx.has("search_vaults"):
        order = ["search_vaults"]
    groups: list[tuple[str | None, list[Resolved]]]
    if by_chain:
        groups = [(chain, names) for chain in chains[:3]]
    else:
        groups = [(None, g) for g in (_compare_groups(names, reading) or [names])]
    placed = any(a.placed for a in reading.amounts)
    single = (by_chain or placed) and _one_asset(reading, names)
    for chain, group in groups:
        bindings = []
        for tool in order:
            lex = ctx.lexicons[tool]
            b = bind_fields(filters, lex, known_chains=ctx.names.chains)
            if named is not None:
                b.arguments[lex.roles.get("query", "query")] = named.text
                b.arguments.pop(lex.roles.get("sort", ""), None)
            # Names the tool cannot filter by count against it, like unbound conditions.
            b.unbound += _apply_names(b, lex, group)
            if chain is not None:
                _one_chain(b, lex, chain)
            _apply_appetite(b, lex, reading)
            exposure = [f for f in lex.enums.get("exposure", []) if "single" in f.values]
            if single and exposure and exposure[0].name not in b.arguments:
                b.arguments[exposure[0].name] = "single"
                b.bound += 1
            bindings.append(b)
        best = max(range(len(order)), key=lambda i: (bindings[i].score(), -i))
        tool, binding = order[best], bindings[best]
        if tool == "search_vaults" and "sort_by" not in binding.arguments and named is None:
            if _wants_best_yield(reading) or by_chain or placed:
                binding.arguments["sort_by"] = "apy"
        if by_chain and tool == "search_vaults":
            binding.arguments.setdefault("min_tvl_usd", COMPARE_MIN_TVL)
        plan.main.append(Call(tool, binding.arguments))
        for note in binding.unbound:
            if note not in plan.notes:
                plan.notes.append(note)
    if by_chain:
        plan.compare = list(chains[:3])
        plan.leads.append(_chain_compare_lead(plan.main))
    elif len(groups) > 1:
        plan.compare = [_said(reading, g[0]) for _, g in groups]  # each leads with its side
    if plan.compare:
        plan.compare_what = _compared_what(names)
        plan.compare_where = "on" if by_chain else "for"
    plan.follow = _vault_follow(
        reading, ctx, named=named is not None, history=history, asked=bool(asked)
    )
    plan.trend = plan.follow is not None and "vault_history" in plan.follow.tools
    return plan


def _exploit_plan(reading: Reading, ctx: Context, lookups_done: bool) -> Plan:
    """'has Euler been hacked?': the protocol's largest vault, then its risk analysis, whose
    exploits factor is the hacks register's count; and the news feed for the story."""
    plan = Plan("exploits")
    names = _names(reading, ctx, plan, lookups_done)
    if plan.lookups:
        return plan
    plan.notes = [n for n in plan.notes if "no asset, protocol or chain" not in n]
    protocols = [r for r in names if r.kind == "protocol" and not r.negated]
    slugs = _unique([r.values for r in protocols])[:MAX_FOLLOW]
    asked = [r.word for r in names if not r.negated] or _subject_words(reading)
    plan.exploit_names = asked
    plan.main = _largest_vaults(ctx, slugs)
    if plan.main and ctx.has("analyze_risk"):
        plan.follow = Follow(["analyze_risk"], "vault", count=len(slugs))
    unplaced = [r.word for r in names if r.kind != "protocol" and not r.negated]
    if unplaced or not names:
        plan.leads.append(
            not_in_register(unplaced)
            if unplaced
            else "No tool lists the hacks register: it shows per protocol, in a vault's risk "
            "analysis. Ask about one protocol (“has Aave been hacked?”); the news feed's "
            "items are below."
        )
    if ctx.has("search_feed"):
        word = hack_word(reading.words)
        topic = " ".join([*[a for a in asked[:2] if a.lower() != word], word])
        plan.main.append(Call("search_feed", {"query": topic}))
    return plan


def _largest_vaults(ctx: Context, slugs: list[str]) -> list[Call]:
    """One search per protocol slug for its largest vault, whose risk analysis speaks for
    the protocol (audits, age, exploits are the protocol's)."""
    lex = ctx.lexicons.get("search_vaults")
    if lex is None:
        return []
    calls = []
    for slug in slugs:
        args: dict[str, Any] = {lex.roles.get("protocol", "protocol"): slug}
        if lex.has("sort"):
            args[lex.roles["sort"]] = "tvl_usd"
        if lex.has("count"):
            args[lex.roles["count"]] = 1
        calls.append(Call("search_vaults", args))
    return calls


def _judged_protocols(reading: Reading, names: list[Resolved]) -> list[str]:
    """The protocols a yes/no question judges ("is Yearn safe?", "is Aave audited?"), or
    none when it asks for vaults (a vault noun, an asset, a condition)."""
    words = reading.words
    if not words or words[0] not in voc.AUXILIARIES | {"how"}:
        return []
    if words[0] == "how" and (len(words) < 2 or words[1] not in ("safe", "risky", "secure")):
        return []
    judging = "risk" in _free_cues(reading, hide=()) or bool(_asked_flags(reading))
    if not judging or set(words) & voc.VAULT_SUBJECT_NOUNS or reading.numbers.conditions:
        return []
    if any(r.kind != "protocol" for r in names if not r.negated):
        return []
    return _unique([r.values for r in names if not r.negated])[:MAX_FOLLOW]


def _subject_words(reading: Reading) -> list[str]:
    """Words written as a name when the index placed none ("was Ronin drained?")."""
    return [c.text for c in candidates(reading)]


def _said(reading: Reading, name: Resolved) -> str:
    """A name as written, every word of it ("Rocket Pool")."""
    tokens = reading.tokens[name.index : name.index + name.used]
    return " ".join(t.text for t in tokens if t.text[:1].isalnum()) or name.word


def _compared_what(names: list[Resolved]) -> str:
    """What a comparison of vault searches weighs: one asset's yield, or yield."""
    assets = _unique([[r.values[0]] for r in names if r.kind == "asset" and not r.negated])
    return f"{assets[0]} yield" if len(assets) == 1 else "yield"


def _chain_compare_lead(calls: list[Call]) -> str:
    args = calls[0].arguments if calls else {}
    single = " single-asset" if args.get("exposure") == "single" else ""
    return (
        f"Compared chain by chain: one search per chain of its{single} vaults, by APY, "
        f"among vaults with at least ${args.get('min_tvl_usd', COMPARE_MIN_TVL):,.0f} TVL "
        "(so a tiny pool's APY does not decide)."
    )


def _outside_windows(reading: Reading) -> list[str]:
    """The question's words but its time expressions ("up or down" asks no comparison)."""
    inside = reading.in_windows()
    return [w for i, w in enumerate(reading.words) if i not in inside]


def _one_chain(b: Binding, lex: ToolLexicon, chain: str) -> None:
    """A comparison side's search: only its own chain."""
    for role in ("chains", "chain"):
        b.arguments.pop(lex.roles.get(role, ""), None)
    b.unbound = [n for n in b.unbound if not n.startswith("chains ")]
    if lex.has("chain"):
        b.arguments[lex.roles["chain"]] = chain
    elif lex.has("chains"):
        b.arguments[lex.roles["chains"]] = [chain]


def _one_asset(reading: Reading, names: list[Resolved]) -> bool:
    """A question about one asset's own vaults: one asset named, no pair or LP asked."""
    assets = {r.values[0] for r in names if r.kind == "asset" and not r.negated}
    if len(assets) != 1 or set(reading.words) & voc.MULTI_ASSET_WORDS:
        return False
    return not any(m.kind == "enum" and m.key == "exposure" for m in reading.mentions)


def _apply_appetite(b: Binding, lex: ToolLexicon, reading: Reading) -> None:
    """The risk level the question accepts ("nothing sketchy") as the highest rating, where
    the tool takes one and the question set none itself."""
    appetite = reading.appetite
    if appetite is None or appetite.level == "high":
        return
    fields = [f for f in lex.enums.get("risk_rating", []) if f.is_max and not f.is_list]
    if not fields or any(f.name in b.arguments for f in lex.enums.get("risk_rating", [])):
        return
    b.arguments[fields[0].name] = appetite.level
    b.bound += 1


def _only_protocols_named(reading: Reading, names: list[Resolved]) -> bool:
    """'Tell me about Aave': a protocol named and nothing asked of its vaults."""
    if not names or any(r.kind != "protocol" for r in names) or not reading.has("protocol_talk"):
        return False
    asked = reading.has("vault") or reading.numbers.conditions or reading.numbers.counts
    return not asked and not [m for m in reading.mentions if m.kind != "chain"]


def _wants_best_yield(reading: Reading) -> bool:
    words = set(reading.words)
    return bool(words & {"best", "top", "highest", "juiciest"}) and not any(
        m.kind in ("sort", "by") for m in reading.mentions
    )


def _vault_tool_order(reading: Reading, ctx: Context) -> list[str]:
    best = _wants_best_yield(reading)
    want = sort_request(reading)
    if want is not None and want[0] not in ("apy",):
        best = False
    order = ["top_yields", "search_vaults"] if best else ["search_vaults", "top_yields"]
    return [t for t in order if ctx.has(t)]


def _is_protocol_question(reading: Reading, ctx: Context) -> bool:
    if not ctx.has("search_protocols"):
        return False
    words = reading.words
    vault_nouns = {"vault", "vaults", "pool", "pools", "farm", "farms", "yields", "yield", "apy",
                   "apr", "apys"}  # fmt: skip
    if reading.has("protocol"):
        for i, w in enumerate(words):
            if w in vault_nouns:
                before = words[i - 1] if i else ""
                if before not in (
                    "have",
                    "has",
                    "with",
                    "offer",
                    "offers",
                    "run",
                    "runs",
                    "their",
                    "any",
                    "most",
                    "many",
                ):
                    return False
        return True
    # "TVL of Aave v3", "how much total value locked does curve have", "how big is Convex"
    tvl = any(m.kind == "family" and m.key == "tvl" for m in reading.mentions)
    if not tvl and set(words) & {"big", "large", "size", "biggest", "largest"}:
        tvl = _protocol_names(reading, ctx) > 0 and not reading.numbers.counts
    if tvl and not (set(words) & vault_nouns) and not reading.numbers.conditions:
        schema = {"protocol": ctx.known("protocol"), "asset": ctx.known("asset")}
        return bool(candidates(reading, _known_name(ctx, schema)))
    return False


def _asks_of_vaults(reading: Reading, ctx: Context) -> bool:
    """'audited protocols with yields above 10%': conditions only a vault search can take."""
    vaults = ctx.lexicons.get("search_vaults")
    if vaults is None:
        return False
    protocols = bind_fields(reading, ctx.lexicons["search_protocols"])
    searched = bind_fields(reading, vaults)
    vault_only = set(vaults.flags) | set(vaults.enums)
    flags = any(m.kind in ("flag", "enum") and m.key in vault_only for m in reading.mentions)
    return flags or (bool(protocols.unbound) and len(searched.unbound) < len(protocols.unbound))


def _protocol_plan(reading: Reading, ctx: Context) -> Plan:
    lex = ctx.lexicons["search_protocols"]
    binding = bind_fields(reading, lex, known_chains=ctx.names.chains)
    binding.arguments.pop(lex.roles.get("sort", ""), None)
    schema = {"protocol": ctx.known("protocol"), "asset": ctx.known("asset")}
    named = candidates(reading, _known_name(ctx, schema))
    tokens = reading.words
    words = []
    for c in named:
        if c.text.lower() in voc.PROTOCOL_FILLER:
            continue
        words.append(c.text.lower())
        # "Aave v3": the version is part of the name the catalogue matches.
        after = tokens[c.index + 1] if c.index + 1 < len(tokens) else ""
        if re.fullmatch(r"v\d+", after):
            words.append(after)
    args: dict[str, Any] = {}
    if words and lex.has("query"):
        args[lex.roles["query"]] = " ".join(words)
    args.update(binding.arguments)
    return Plan("protocols", main=[Call("search_protocols", args)], notes=binding.unbound)


def _vault_follow(
    reading: Reading,
    ctx: Context,
    *,
    named: bool = False,
    history: bool = False,
    asked: bool = False,
) -> Follow | None:
    """History, risk or yield analysis of the vault(s) a search finds, when asked (of the
    one vault named by its own name, the search's best match). A time window, a forecast
    answered with history, or a property asked of it ("is it audited?") asks it of the
    first vault found even where no word picks one."""
    wanted = _wanted_analyses(reading)
    if history and "vault_history" not in wanted:
        wanted.insert(0, "vault_history")
    if not wanted:
        return None
    words = [without_possessive(w) for w in reading.words]
    singular = any(w in voc.VAULT_NOUNS_SINGULAR for w in words) or "its" in words or "it" in words
    counted = reading.numbers.counts[0][0] if reading.numbers.counts else 0
    picked = named or any(w in voc.SINGULAR_PICK for w in words)
    implied = history or asked or bool(reading.windows)
    if not (singular and picked) and not counted and not implied:
        return None
    tools = [t for t in wanted if ctx.has(t)]
    if not tools:
        return None
    days = look_back_days(reading)
    return Follow(tools, "vault", min(counted or 1, MAX_FOLLOW), days)


def follow_calls(
    plan: Plan, ctx: Context, main: list[tuple[str, dict[str, Any], str]]
) -> list[Call]:
    """The follow-up calls, fed by the main calls and their results, each (tool, arguments,
    result text): vault ids or token symbols found, or the other check of an address."""
    f = plan.follow
    if f is None:
        return []
    results = [text for _, _, text in main]
    if f.source == "token":
        symbols = _unique(TOKEN_HIT.findall(text) for text in results)
        return [Call(tool, {"symbol": s}) for s in symbols[: f.count] for tool in f.tools]
    if f.source == "address":
        return _address_follow(main, ctx)
    ids = _unique([row.vault_id for row in vault_rows(text)] for text in results)
    calls = []
    for vault_id in ids[: f.count]:
        for tool in f.tools:
            args: dict[str, Any] = {ctx.lexicons[tool].roles.get("vault_id", "vault_id"): vault_id}
            days_field = ctx.lexicons[tool].roles.get("days")
            if f.days and days_field:
                args[days_field] = _clamped(f.days, ctx.lexicons[tool].bounds.get(days_field))
            calls.append(Call(tool, args))
    return calls


def _address_follow(main: list[tuple[str, dict[str, Any], str]], ctx: Context) -> list[Call]:
    """The address check of an address the token index has no token for; the token analysis
    of one the address check says is a token contract (it says "use the token analysis")."""
    calls = []
    for tool, args, text in main:
        address = str(args.get("address", ""))
        if not address:
            continue
        if tool == "analyze_token" and text.startswith("Error:") and ctx.has("analyze_address"):
            calls.append(Call("analyze_address", {"address": address}))
        elif (
            tool == "analyze_address"
            and "use the token analysis" in text
            and ctx.has("analyze_token")
        ):
            calls.append(Call("analyze_token", {"chain": "ethereum", "address": address}))
    return calls


def _unique(groups: Iterable[list[str]]) -> list[str]:
    out: list[str] = []
    for group in groups:
        out += [item for item in group if item not in out]
    return out


def _clamped(value: int, bounds: tuple[float | None, float | None] | None) -> int:
    low, high = bounds or (None, None)
    if high is not None:
        value = min(value, int(high))
    if low is not None:
        value = max(value, int(low))
    return value


# --- token screens -------------------------------------------------------------------------


def _screen_plan(reading: Reading, ctx: Context, lex: ToolLexicon) -> Plan:
    binding = bind_fields(reading, lex)
    plan = Plan("screen", main=[Call("search_tokens", binding.arguments)], notes=binding.unbound)
    free = _free_cues(reading)
    words = reading.words
    singular = any(w in ("the", "this", "that") for w in words) and any(
        w in voc.SINGULAR_PICK for w in words
    )
    counted = reading.numbers.counts[0][0] if reading.numbers.counts else 0
    if "follow_token" in free and (singular or counted) and ctx.has("analyze_token"):
        plan.follow = Follow(["analyze_token"], "token", min(counted or 1, MAX_FOLLOW))
    return plan
