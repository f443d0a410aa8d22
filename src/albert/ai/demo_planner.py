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
_MONEY = re.compile(
    r"(?P<cmp>over|above|more than|at least|>=?|under|below|less than|at most|<=?)?\s*"
    r"\$?\s*(?P<num>\d+(?:[.,]\d+)*)\s*(?P<unit>k|m|mm|b|bn|thousand|million|billion)?\b",
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
}


class Intent(BaseModel):
    """What the question asks for, as read by the rules."""

    kind: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


def _money(text: str) -> list[tuple[str, float]]:
    found = []
    for m in _MONEY.finditer(text):
        if not (m["unit"] or "$" in m.group(0) or m["cmp"]):
            continue
        value = float(m["num"].replace(",", ""))
        value *= _UNITS.get((m["unit"] or "").lower(), 1)
        cmp = (m["cmp"] or "over").lower()
        found.append(
            (
                "max" if cmp in ("under", "below", "less than", "at most", "<", "<=") else "min",
                value,
            )
        )
    return found


def _chain(text: str) -> str | None:
    lowered = text.lower()
    for word, slug in CHAINS.items():
        if re.search(rf"\b{re.escape(word)}\b", lowered):
            return slug
    return None


def _symbol(text: str) -> str | None:
    dollar = re.search(r"\$([A-Za-z][A-Za-z0-9]{1,14})\b", text)
    if dollar:
        return dollar.group(1).upper()
    about = re.search(
        r"\b(?:what is|what's|tell me about|analy[sz]e|info on|about)\s+"
        r"([A-Za-z][A-Za-z0-9]{1,14})\b",
        text,
        re.IGNORECASE,
    )
    if about and about.group(1).upper() not in _STOP:
        return about.group(1).upper()
    caps = [w for w in re.findall(r"\b[A-Z][A-Z0-9]{1,14}\b", text) if w not in _STOP]
    return caps[0] if caps else None


def _topic(text: str) -> str:
    about = re.search(r"\b(?:about|on|for)\s+([A-Za-z0-9 .$-]{2,40})", text, re.IGNORECASE)
    topic = about.group(1) if about else text
    return re.sub(r"[?!.]+$", "", topic).strip().lstrip("$")


def _prop(spec: ToolSpec, *patterns: str) -> str | None:
    """The first schema property whose name matches one of the patterns."""
    props = list((spec.parameters.get("properties") or {}).keys())
    for pattern in patterns:
        for name in props:
            if re.fullmatch(pattern, name):
                return name
    return None


def read_intent(question: str, tools: dict[str, ToolSpec]) -> Intent | None:
    """Pick the tool and arguments for a question, among the tools that exist."""
    lowered = question.lower()
    address = _ADDRESS.search(question)
    if address and "analyze_address" in tools:
        return Intent(
            kind="address", tool="analyze_address", arguments={"address": address.group(0)}
        )
    if (
        re.search(r"\b(saying|sentiment|news|feed|narrative|buzz|talk)\b", lowered)
        and "search_feed" in tools
    ):
        return Intent(kind="feed", tool="search_feed", arguments={"query": _topic(question)})
    vaultish = re.search(r"\b(vaults?|yields?|apy|apr|farm|pools?|earn)\b", lowered)
    if vaultish:
        for name in ("search_vaults", "top_yields"):
            if name in tools:
                return Intent(
                    kind="vaults", tool=name, arguments=_vault_args(question, tools[name])
                )
    screen = re.search(
        r"\b(stablecoins?|market ?cap|liquidity|holders|tokens? (over|above|with|under))\b", lowered
    )
    if screen and "search_tokens" in tools:
        return Intent(
            kind="screen",
            tool="search_tokens",
            arguments=_screen_args(question, tools["search_tokens"]),
        )
    symbol = _symbol(question)
    if symbol and "analyze_token" in tools:
        return Intent(kind="token", tool="analyze_token", arguments={"symbol": symbol})
    return None


def _screen_args(question: str, spec: ToolSpec) -> dict[str, Any]:
    lowered = question.lower()
    args: dict[str, Any] = {}
    chain = _chain(question)
    if chain and _prop(spec, "chain"):
        args["chain"] = chain
    if re.search(r"\bstablecoins?\b", lowered) and _prop(spec, "stablecoin"):
        args["stablecoin"] = True
    field = "liquidity" if "liquidity" in lowered else "market_?cap"
    for bound, value in _money(question):
        name = _prop(spec, rf"{bound}_{field}(_usd)?", rf"{field}_{bound}")
        if name:
            args[name] = value
    if re.search(r"\b(rank|ranking|ranked|top)\b", lowered) and _prop(spec, "sort_by"):
        args["sort_by"] = "rank"
    page = re.search(r"\bpage\s+(\d{1,3})\b", lowered)
    if page and _prop(spec, "page"):
        args["page"] = int(page.group(1))
    return args


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
    asset = re.search(r"\b(USDC|USDT|DAI|ETH|WETH|WBTC|STETH)\b", question, re.IGNORECASE)
    if asset:
        name = _prop(spec, "asset_symbol", "asset", "symbol")
        if name:
            args[name] = asset.group(1).upper()
    for bound, value in _money(question):
        name = _prop(spec, rf"{bound}_tvl(_usd)?")
        if name:
            args[name] = value
    return args


def _last_user_turn(messages: list[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return messages[index].content, messages[index + 1 :]
    return "", []


def render_answer(question: str, since: list[ChatMessage]) -> str:
    """An answer built only from this turn's tool results."""
    calls = {c.id: c for m in since for c in m.tool_calls}
    sections = [LABEL, ""]
    for message in since:
        if message.role != "tool":
            continue
        call = calls.get(message.tool_call_id or "")
        name = call.name if call else message.name or "tool"
        args = call.arguments if call else "{}"
        body = message.content.strip()
        if len(body) > RESULT_CHARS:
            body = body[:RESULT_CHARS] + "\n…(more in the tool result)"
        failed = body.startswith("Error:")
        heading = (
            f"**{name}** could not answer:" if failed else f"From **{name}** ({_short_args(args)}):"
        )
        sections += [heading, "", body, ""]
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
        if not already_called and tools:
            intent = read_intent(question, tools)
            if intent is not None:
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
