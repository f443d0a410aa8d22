"""The offline demo planner: a deterministic, rule-based stand-in for a model.

Used when no model gateway is configured, so the local stack answers real
questions without a key. It reads intents and entities from the question
(a token symbol, an EVM address, a chain, money amounts, vault words), calls
the matching tools that exist this turn, and renders their results. It never
invents facts: every answer is built from tool results and says it is a demo.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

from pydantic import BaseModel, Field

from albert.ai.model import (
    ChatMessage,
    ChatToolCall,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.tools.base import ToolSpec

LABEL = (
    "*Demo planner — no language model is configured; "
    "this answer is assembled by rules from tool results.*"
)
RESULT_CHARS = 2_500

CHAINS = {
    "ethereum": "ethereum",
    "eth mainnet": "ethereum",
    "mainnet": "ethereum",
    "base": "base",
    "arbitrum": "arbitrum",
    "optimism": "optimism",
    "polygon": "polygon",
    "bsc": "bsc",
    "bnb chain": "bsc",
    "avalanche": "avalanche",
    "solana": "solana",
}
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{40}\b")
_VAULT_ID = re.compile(r"\b[a-z0-9][a-z0-9_-]*:[a-z0-9][a-z0-9_-]*:[^\s?,;!]+", re.IGNORECASE)
_MONEY = re.compile(
    r"(?P<cmp>over|above|more than|greater than|at least|>=?|under|below|less than|at most|"
    r"<=?)?\s*(?P<cur>\$)?\s*(?P<num>\d+(?:[.,]\d+)*)\s*"
    r"(?P<unit>k|m|mm|b|bn|thousand|million|billion)?\b",
    re.IGNORECASE,
)
_UNITS = {
    "k": 1e3,
    "thousand": 1e3,
    "m": 1e6,
    "mm": 1e6,
    "million": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
}
_MAX_WORDS = ("under", "below", "less than", "at most", "<", "<=")
_STRICT_WORDS = ("over", "above", "more than", "greater than", "under", "below", "less than")
# Upper-case words that are not tickers.
_STOP = {
    "WHAT",
    "IS",
    "THE",
    "A",
    "AN",
    "TOKEN",
    "COIN",
    "ABOUT",
    "TELL",
    "ME",
    "OF",
    "ON",
    "WHO",
    "HOW",
    "DOES",
    "DO",
    "IT",
    "AND",
    "FOR",
    "TO",
    "IN",
    "PRICE",
    "ANALYSE",
    "ANALYZE",
    "ANALYSIS",
    "RISKY",
    "SAFE",
    "SHOW",
    "FIND",
    "GIVE",
    "ANY",
    "MARKET",
    "I",
    "APY",
    "APR",
    "TVL",
    "USD",
    "DEX",
    "ATH",
    "ATL",
    "FDV",
    "AI",
    "SEC",
    "CEO",
    "NFT",
    "EVM",
    "ERC",
    "DAO",
    "OK",
    "ETF",
    "DEFI",
    "UTC",
    "CEX",
    "KYC",
    "FYI",
    "PLS",
    "TLDR",
    "VS",
    "MY",
    "OR",
}
# Everyday names of a few assets, for questions that do not use the ticker.
_NAMES = {
    "bitcoin": "BTC",
    "ether": "ETH",
    "ethereum": "ETH",
    "chainlink": "LINK",
    "uniswap": "UNI",
    "dogecoin": "DOGE",
    "shiba inu": "SHIB",
    "tether": "USDT",
    "solana": "SOL",
}
_FEED_WORDS = re.compile(
    r"\b(saying|says|sentiment|news|headlines?|feed|narratives?|buzz|talk|talking|rumou?rs?|"
    r"latest on|happening|mood|hype|chatter)\b"
)
_VAULT_WORDS = re.compile(
    r"\b(vaults?|yields?|apy|apr|farms?|farming|pools?|earn|earning|staking|tvl|protocols?|"
    r"total value locked)\b"
)
_WALLET_WORDS = re.compile(
    r"\b(portfolio|holdings?|holds?|holding|positions?|balances?|worth|net worth|assets)\b"
)
_SCREEN_WORDS = re.compile(
    r"\b(stablecoins?|market ?caps?|mcap|liquidity|holders|authenticity|gainers|losers|"
    r"tokens|coins|volume)\b"
)
# Filler and intent words left out of a feed search and of protocol names.
_FILLER = set(
    """a about all an and any anything are around at be been buzz can chatter could crypto
    currently do does feed for from get give has have headlines headline hear how i in is it
    its latest market me mood my narrative narratives new news now of on or people please
    right rumor rumors rumour rumours saying says sentiment show talk talking tell that the
    there these this to today vs was week what whats what's when where which who why with
    you happening hype lately recent recently going there's""".split()
)
_SCREEN_FIELDS = (
    ("liquidity", r"liquidity|liquid"),
    ("authenticity_score", r"authenticity|authentic"),
    ("vol_mcap_ratio", r"volume|vol/mcap|turnover"),
    ("holders", r"holders?"),
    ("market_cap", r"market ?cap|mcap|valuation"),
)


class Intent(BaseModel):
    """What the question asks for, as read by the rules."""

    kind: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


def _money(text: str) -> list[tuple[str, float]]:
    return [(bound, value) for bound, value, _, _ in _amounts(text)]


def _amounts(text: str) -> list[tuple[str, float, bool, re.Match[str]]]:
    """Compared amounts: (min|max, value, strict comparison, match)."""
    found = []
    between = re.search(
        r"\bbetween\s+\$?\s*(\d+(?:[.,]\d+)*)\s*(k|m|mm|b|bn|thousand|million|billion)?\b"
        r"\s+and\s+\$?\s*(\d+(?:[.,]\d+)*)\s*(k|m|mm|b|bn|thousand|million|billion)?\b",
        text,
        re.IGNORECASE,
    )
    if between:
        low_unit = between[2] or between[4]
        for bound, num, unit in (("min", between[1], low_unit), ("max", between[3], between[4])):
            value = float(num.replace(",", "")) * _UNITS.get((unit or "").lower(), 1)
            found.append((bound, value, False, between))
        text = text[: between.start()] + " " * len(between.group(0)) + text[between.end() :]
    for m in _MONEY.finditer(text):
        if not (m["unit"] or m["cur"] or m["cmp"]):
            continue
        if re.match(r"\s*(%|percent|h\b|d\b|hours?|days?)", text[m.end() :], re.IGNORECASE):
            continue
        if re.search(r"\b(page|top|first)\s*$", text[: m.start("num")], re.IGNORECASE):
            continue
        value = float(m["num"].replace(",", ""))
        value *= _UNITS.get((m["unit"] or "").lower(), 1)
        cmp = (m["cmp"] or "over").lower()
        bound = "max" if cmp in _MAX_WORDS else "min"
        found.append((bound, value, cmp in _STRICT_WORDS, m))
    return found


def _chain(text: str) -> str | None:
    lowered = text.lower()
    for word, slug in CHAINS.items():
        if re.search(rf"\b{re.escape(word)}\b", lowered):
            return slug
    return None


def _symbols(text: str, *, names: bool = True) -> list[str]:
    """Tickers in the question, in order: $PEPE, PEPE, 'what is pepe', everyday names."""
    found: list[str] = []

    def add(symbol: str) -> None:
        symbol = symbol.upper()
        if symbol not in found and symbol not in _STOP:
            found.append(symbol)

    for m in re.finditer(r"\$([A-Za-z][A-Za-z0-9]{1,14})\b", text):
        add(m.group(1))
    for word in re.findall(r"(?<![$\w])([A-Z][A-Z0-9]{1,14})\b", text):
        add(word)
    if not found:
        about = re.search(
            r"\b(?:what is|what's|tell me about|analy[sz]e|info on|about|ticker)\s+"
            r"([A-Za-z][A-Za-z0-9]{1,14})\b",
            text,
            re.IGNORECASE,
        )
        if about and about.group(1).upper() not in _STOP | {"THIS", "THAT", "MY"}:
            add(about.group(1))
    if not found and names:
        lowered = text.lower()
        for name, symbol in _NAMES.items():
            if re.search(rf"\b{name}\b", lowered):
                add(symbol)
    return found


def _symbol(text: str) -> str | None:
    symbols = _symbols(text)
    return symbols[0] if symbols else None


def _content_words(text: str, *, drop: set[str] = frozenset()) -> list[str]:
    words = re.findall(r"[A-Za-z0-9$][A-Za-z0-9.$'-]*", text)
    out = []
    for word in words:
        bare = word.strip(".'-").lstrip("$")
        if bare and bare.lower() not in _FILLER | drop:
            out.append(bare)
    return out


def _topic(text: str) -> str:
    """The topic of a feed question: its content words, filler and intent words left out."""
    words = _content_words(text)
    return " ".join(words) if words else re.sub(r"[?!.]+$", "", text).strip()


def _prop(spec: ToolSpec, *patterns: str) -> str | None:
    """The first schema property whose name matches one of the patterns."""
    props = list((spec.parameters.get("properties") or {}).keys())
    for pattern in patterns:
        for name in props:
            if re.fullmatch(pattern, name):
                return name
    return None


def _is_token_screen(spec: ToolSpec) -> bool:
    """A token search that takes market filters (a vault server's asset search does not)."""
    return _prop(spec, r"min_market_cap(_usd)?") is not None


_PROTOCOL_FILLER = {
    "protocol",
    "protocols",
    "defi",
    "vaults",
    "yields",
    "apy",
    "tvl",
    "total",
    "value",
    "locked",
    "much",
    "big",
    "size",
    "current",
}
VAULT_TOOLS = ("search_vaults", "top_yields", "search_protocols")
WALLET_TOOLS = ("wallet_portfolio", "wallet_positions", "wallet_top_positions")


def read_intent(question: str, tools: dict[str, ToolSpec]) -> Intent | None:
    """Pick the tool and arguments for a question, among the tools that exist."""
    intents = read_intents(question, tools)
    return intents[0] if intents else None


def read_intents(question: str, tools: dict[str, ToolSpec]) -> list[Intent]:
    """The tool calls a question needs (more than one to compare tokens)."""
    lowered = question.lower()
    vault_id = _VAULT_ID.search(question)
    if vault_id and not question[vault_id.start() :].lower().startswith(("http", "0x")):
        intent = _vault_id_intent(lowered, vault_id.group(0).rstrip("."), tools)
        return [intent] if intent else []
    address = _ADDRESS.search(question)
    if address:
        intent = _address_intent(question, address.group(0), tools)
        return [intent] if intent else []
    if _FEED_WORDS.search(lowered) and "search_feed" in tools:
        return [Intent(kind="feed", tool="search_feed", arguments={"query": _topic(question)})]
    if _VAULT_WORDS.search(lowered):
        # A vault question with no vault tools gets a plain "cannot check", not a token read.
        intent = _vault_intent(question, tools)
        return [intent] if intent else []
    screen = _SCREEN_WORDS.search(lowered)
    listing = re.search(r"\b(tokens|coins|stablecoins|gainers|losers|movers)\b", lowered)
    if screen and not listing and not _amounts(question) and _symbols(question, names=False):
        # "market cap of MKR" asks about one token, not for a screen.
        screen = None
    if screen:
        spec = tools.get("search_tokens")
        if spec is None or not _is_token_screen(spec):
            return []
        return [Intent(kind="screen", tool="search_tokens", arguments=_screen_args(question, spec))]
    if "analyze_token" in tools:
        return [
            Intent(kind="token", tool="analyze_token", arguments={"symbol": symbol})
            for symbol in _symbols(question)[:3]
        ]
    return []


def unavailable_note(question: str, tools: dict[str, ToolSpec]) -> str | None:
    """What cannot be checked now, when the question needs tools this session lacks."""
    lowered = question.lower()
    if _VAULT_WORDS.search(lowered) or _VAULT_ID.search(question):
        if not any(name in tools for name in VAULT_TOOLS):
            return (
                "I cannot check vault or yield data right now: the vault tools are not "
                "available (the vault data server is not connected). I have not guessed any "
                "vault, APY or TVL figures; ask again once it is back."
            )
    if _SCREEN_WORDS.search(lowered):
        spec = tools.get("search_tokens")
        if spec is None or not _is_token_screen(spec):
            return (
                "I cannot run a token screen right now: no token search with market filters "
                "is available, so I have not listed any tokens."
            )
    return None


def _vault_id_intent(lowered: str, vault_id: str, tools: dict[str, ToolSpec]) -> Intent | None:
    if re.search(r"\b(history|historical|over time|trend|chart|past|last \d+ days)\b", lowered):
        order = ("vault_history", "analyze_yield", "analyze_risk")
    elif re.search(r"\b(risk|risky|safe|safety|score|security|audit)", lowered):
        order = ("analyze_risk", "analyze_yield", "vault_history")
    else:
        order = ("analyze_yield", "analyze_risk", "vault_history")
    for name in order:
        if name in tools:
            args: dict[str, Any] = {"vault_id": vault_id}
            days = re.search(r"\b(\d{1,3})\s*(days?|d)\b", lowered)
            field = _prop(tools[name], "days", "history_days")
            if days and field:
                args[field] = int(days.group(1))
            return Intent(kind="vault", tool=name, arguments=args)
    return None


def _address_intent(question: str, address: str, tools: dict[str, ToolSpec]) -> Intent | None:
    lowered = question.lower()
    if _WALLET_WORDS.search(lowered):
        if re.search(r"\b(biggest|largest|top|main|major)\b", lowered):
            order = ("wallet_top_positions", "wallet_positions", "wallet_portfolio")
        elif re.search(r"\b(list|all|every|each|positions)\b", lowered):
            order = ("wallet_positions", "wallet_portfolio", "wallet_top_positions")
        else:
            order = ("wallet_portfolio", "wallet_positions", "wallet_top_positions")
        for name in order:
            if name in tools:
                args: dict[str, Any] = {"address": address}
                chain = _chain(question)
                if chain and _prop(tools[name], "chains"):
                    args["chains"] = [chain]
                return Intent(kind="wallet", tool=name, arguments=args)
    chain = _chain(question)
    tokenish = re.search(r"\b(token|coin|contract)\b", lowered)
    if tokenish and chain and "analyze_token" in tools:
        return Intent(
            kind="token", tool="analyze_token", arguments={"chain": chain, "address": address}
        )
    if "analyze_address" in tools:
        return Intent(kind="address", tool="analyze_address", arguments={"address": address})
    return None


def _vault_intent(question: str, tools: dict[str, ToolSpec]) -> Intent | None:
    lowered = question.lower()
    names = _content_words(question, drop=_PROTOCOL_FILLER)
    names = [n for n in names if n.lower() not in CHAINS]
    # "TVL of Aave v3" names a protocol without saying "protocol".
    tvl_of = re.search(r"\b(tvl|total value locked)\b", lowered) and not re.search(
        r"\b(vaults?|pools?|farms?|yields?|apy|apr)\b", lowered
    )
    protocolish = re.search(r"\bprotocols?\b", lowered) or (tvl_of and names)
    if protocolish and "search_protocols" in tools:
        spec = tools["search_protocols"]
        args: dict[str, Any] = {}
        chain = _chain(question)
        if names and _prop(spec, "query"):
            args["query"] = " ".join(names).lower()
        if chain and _prop(spec, "chain"):
            args["chain"] = chain
        return Intent(kind="protocols", tool="search_protocols", arguments=args)
    best = re.search(r"\b(top|best|highest|most|max|maximum|juiciest)\b", lowered)
    order = ("top_yields", "search_vaults") if best else ("search_vaults", "top_yields")
    for name in order:
        if name in tools:
            return Intent(kind="vaults", tool=name, arguments=_vault_args(question, tools[name]))
    return None


def _screen_args(question: str, spec: ToolSpec) -> dict[str, Any]:
    lowered = question.lower()
    args: dict[str, Any] = {}
    chain = _chain(question)
    if chain and _prop(spec, "chain"):
        args["chain"] = chain
    if re.search(
        r"\b(non-?stablecoins?|no stablecoins|excluding stablecoins|not stablecoins)", lowered
    ):
        if _prop(spec, "stablecoin"):
            args["stablecoin"] = False
    elif re.search(r"\bstablecoins?\b", lowered) and _prop(spec, "stablecoin"):
        args["stablecoin"] = True
    for bound, value, strict, match in _amounts(question):
        field = _screen_field(lowered, match.start(), match.end())
        if field == "vol_mcap_ratio" and value > 10:
            field = "market_cap"
        elif field == "market_cap" and value < 10 and re.search(r"\b(volume|ratio)", lowered):
            field = "vol_mcap_ratio"
        if field in ("authenticity_score", "holders"):
            integer = int(value)
            if strict:
                integer += -1 if bound == "max" else 1
            name = _prop(spec, rf"{bound}_{field}")
            if name:
                args[name] = integer
            continue
        name = _prop(spec, rf"{bound}_{field.replace('market_cap', 'market_?cap')}(_usd)?")
        if name:
            args[name] = value
    _price_change(lowered, spec, args)
    _sort(lowered, spec, args)
    page = re.search(r"\bpage\s+(\d{1,3})\b", lowered)
    if page and _prop(spec, "page"):
        args["page"] = int(page.group(1))
    return args


def _screen_field(lowered: str, start: int, end: int) -> str:
    """The market field an amount is about: the nearest field word after it, else before."""
    after = lowered[end : end + 30]
    before = lowered[max(0, start - 45) : start]
    for window, pick in ((after, min), (before, max)):
        hits = []
        for field, pattern in _SCREEN_FIELDS:
            for m in re.finditer(rf"\b(?:{pattern})", window):
                hits.append((m.start(), field))
        if hits:
            return pick(hits)[1]
    return "market_cap"


def _price_change(lowered: str, spec: ToolSpec, args: dict[str, Any]) -> None:
    window = None
    if re.search(r"\b(hour|1h|60 minutes)\b", lowered):
        window = "1h"
    elif re.search(r"\b(week|7d|7 days|seven days)\b", lowered):
        window = "7d"
    elif re.search(r"\b(day|24h|24 hours|today|daily)\b", lowered):
        window = "24h"
    pct = re.search(r"(\d+(?:\.\d+)?)\s*(%|percent)", lowered)
    down = re.search(
        r"\b(fell|fallen|drop|dropped|down|lost|losers?|dumped|declined|crashed)\b", lowered
    )
    up = re.search(r"\b(rose|risen|up|gained|gainers?|pumped|rallied|climbed|jumped)\b", lowered)
    if pct and (down or up) and _prop(spec, "price_change_window"):
        value = float(pct.group(1))
        args["price_change_window"] = window or "24h"
        if down:
            args["max_price_change_pct"] = -value
        else:
            args["min_price_change_pct"] = value
    elif (down or up) and re.search(r"\b(gainers?|losers?|movers?|biggest|most)\b", lowered):
        if _prop(spec, "sort_by"):
            args["sort_by"] = f"price_change_{window or '24h'}"
            if down and _prop(spec, "sort_direction"):
                args["sort_direction"] = "asc"


def _sort(lowered: str, spec: ToolSpec, args: dict[str, Any]) -> None:
    if "sort_by" in args or not _prop(spec, "sort_by"):
        return
    if re.search(r"\b(by|most|highest|top)\s+(liquidity|liquid)\b", lowered):
        args["sort_by"] = "liquidity"
    elif re.search(r"\b(by|most|highest)\s+(24h\s+)?(trading\s+)?volume\b", lowered):
        args["sort_by"] = "volume_24h"
    elif re.search(r"\bmost holders\b|\bby holders\b", lowered):
        args["sort_by"] = "holders"
    elif re.search(r"\b(rank|ranking|ranked|top|largest|biggest)\b", lowered):
        args["sort_by"] = "rank"


def _vault_args(question: str, spec: ToolSpec) -> dict[str, Any]:
    lowered = question.lower()
    args: dict[str, Any] = {}
    chain = _chain(question)
    if chain and _prop(spec, "chain"):
        args[_prop(spec, "chain") or "chain"] = chain
    if re.search(r"\bstable(coin)?s?\b", lowered):
        name = _prop(spec, "stablecoin_only", "stablecoin")
        if name:
            args[name] = True
    assets = [s for s in _symbols(question, names=False) if s.lower() not in CHAINS]
    asset_field = _prop(spec, "asset_symbol", "asset", "symbol")
    if assets and asset_field:
        args[asset_field] = assets[0]
    protocol = re.search(r"\b([A-Za-z][\w.-]+)\s+(?:vaults?|pools?|farms?)\b", question)
    protocol_field = _prop(spec, "protocol")
    if protocol and protocol_field:
        word = protocol.group(1)
        if (
            word.lower()
            not in _FILLER | {"stablecoin", "stablecoins", "stable", "yield", "best", "top"}
            and word.lower() not in CHAINS
            and word.upper() != args.get(asset_field or "", "")
            and not word.isupper()
        ):
            args[protocol_field] = word.lower()
    for bound, value, _, _ in _amounts(question):
        name = _prop(spec, rf"{bound}_tvl(_usd)?")
        if name:
            args[name] = value
    return args


def _last_user_turn(messages: list[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return messages[index].content, messages[index + 1 :]
    return "", []


_CUT = re.compile(r"\[… result cut: ([\d,]+) of ([\d,]+) characters shown")


def render_answer(question: str, since: list[ChatMessage]) -> str:
    """An answer built only from this turn's tool results; failures and cuts said plainly."""
    calls = {c.id: c for m in since for c in m.tool_calls}
    sections = [LABEL, ""]
    for message in since:
        if message.role != "tool":
            continue
        call = calls.get(message.tool_call_id or "")
        name = call.name if call else message.name or "tool"
        args = call.arguments if call else "{}"
        full = message.content.strip()
        body = full
        if len(body) > RESULT_CHARS:
            body = body[:RESULT_CHARS] + "\n…(more in the tool result)"
        if full.startswith("Error:"):
            sections += [
                f"**{name}** could not answer, so I could not check this "
                "and have not filled the gap with guesses:",
                "",
                body,
                "",
            ]
            continue
        sections += [f"From **{name}** ({_short_args(args)}):", "", body, ""]
        cut = _CUT.search(full)
        if cut:
            sections += [
                f"Note: the {name} result was cut before it reached me ({cut.group(1)} of "
                f"{cut.group(2)} characters shown). I could not check the rest, so anything "
                "beyond what is shown above is not covered by this answer.",
                "",
            ]
    if len(sections) == 2:
        sections.append("No tool result came back for this question.")
    return "\n".join(sections).rstrip() + "\n"


def _short_args(arguments: str) -> str:
    try:
        data = json.loads(arguments or "{}")
    except ValueError:
        return arguments
    return ", ".join(f"{k}={v}" for k, v in data.items()) or "no arguments"


def help_text(tools: dict[str, ToolSpec]) -> str:
    """What the planner can do with the tools available now."""
    examples = {
        "analyze_token": "“What is PEPE?”",
        "analyze_address": "“Is 0x… risky?”",
        "search_tokens": "“Stablecoins over $1M market cap on ethereum”",
        "search_feed": "“What is the market saying about Aave?”",
        "search_vaults": "“USDC vaults on base”",
        "top_yields": "“Top stablecoin yields”",
    }
    lines = [LABEL, "", "I could not match that question to a tool. Try, for example:"]
    lines += [f"- {text}" for name, text in examples.items() if name in tools]
    if len(lines) == 3:
        lines = [LABEL, "", "No tools are available right now, so I cannot look anything up."]
    return "\n".join(lines) + "\n"


class DemoPlanner:
    """A ModelClient that plans tool calls by rules and renders their results."""

    def __init__(self, chunk_words: int = 3) -> None:
        self._chunk_words = chunk_words
        self._counter = 0

    @property
    def model_name(self) -> str:
        return "demo-planner"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        question, since = _last_user_turn(request.messages)
        tools = {t.name: t for t in request.tools}
        already_called = any(m.role == "tool" for m in since)
        if not already_called:
            intents = read_intents(question, tools)
            note = None if intents else unavailable_note(question, tools)
            if intents:
                for intent in intents:
                    self._counter += 1
                    yield ToolCallRequest(
                        call=ChatToolCall(
                            id=f"demo_{self._counter}",
                            name=intent.tool,
                            arguments=json.dumps(intent.arguments),
                        )
                    )
                yield StepFinished(reason="tool_calls")
                return
            if note:
                for chunk in self._chunks(f"{LABEL}\n\n{note}\n"):
                    yield TextDelta(text=chunk)
                yield StepFinished(reason="stop")
                return
        text = render_answer(question, since) if already_called else help_text(tools)
        for chunk in self._chunks(text):
            yield TextDelta(text=chunk)
        yield StepFinished(reason="stop")

    def _chunks(self, text: str) -> list[str]:
        words = re.split(r"(?<=\s)", text)
        return [
            "".join(words[i : i + self._chunk_words])
            for i in range(0, len(words), self._chunk_words)
        ]
