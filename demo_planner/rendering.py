"""The demo planner's answers: built only from this turn's tool results, always labelled.

A result the chat shows as a card (its structured content, drawn by web/js/cards.js) gets
one lead sentence here (`leads.py`); the card holds the rest. A result without one is
quoted. Failures and cut results are said plainly, with each tool named in words, never by
its internal name; conditions the planner could not apply and names the index does not
hold are listed instead of silently dropped; a quoted APY is answered with the worded
guideline band the data server returned next to the results.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from albert.ai.model import ChatMessage, ChatToolCall
from albert.tools.base import ToolSpec
from demo_planner.followups import FollowUp
from demo_planner.leads import PLAIN_NAMES, lead, plain_name
from demo_planner.plans import ASSET_LOOKUP_TOOL, CATALOGUE_TOOL, Plan
from demo_planner.vault_table import lead_sentence, more_line, read_page, table

LABEL = (
    "*Demo planner — no language model is configured; "
    "this answer is assembled by rules from tool results.*"
)
RESULT_CHARS = 2_500
# What each tool's answer is headed with (a tool not named here: its name).
TITLES = {
    "analyze_token": "Token analysis",
    "analyze_address": "Address check",
    "search_tokens": "Tokens found",
    "search_feed": "What the market says",
    "wallet_top_positions": "Top positions",
    "wallet_positions": "Positions",
    "wallet_portfolio": "Portfolio",
    "vault_history": "History",
    "analyze_risk": "Risk analysis",
    "analyze_yield": "Yield analysis",
    "search_vaults": "Vault search",
    "top_yields": "Top yields",
    "search_protocols": "Protocols",
    "search_vault_assets": "Assets",
}
MORE = "\n…(more in the tool result)"
# The data server appends its yield-versus-risk guidelines after a rated result's own text
# (data_server/coaching.py); a long result is cut before them, not through them, so a wallet
# with many holdings still gets the guidelines that weigh the yields it shows.
_GUIDELINES = "\n\n## Yield-versus-risk guidelines\n"
_CUT = re.compile(r"\[… result cut: ([\d,]+) of ([\d,]+) characters shown")
_TOOL_NAMES = re.compile(r"\b(" + "|".join(sorted(PLAIN_NAMES, key=len, reverse=True)) + r")\b")
# What an error text must not carry into an answer: a parameter or field name (snake_case,
# `name=value`), an index id (`source:chain:…`), a path.
_INTERNAL = re.compile(r"\b[a-z]+_[a-z0-9_]+\b|\w=\S|\b\w+:\w+:[\w-]{6,}|\w/\w+\.py\b")


def in_words(text: str) -> str:
    """`text` with each tool named in words ("search_vaults takes…" → "the vault search
    takes…")."""
    return _TOOL_NAMES.sub(lambda m: plain_name(m.group(1)), text)


def plain_reason(error: str) -> str | None:
    """A tool's error as an answer may quote it, or None when it names internals (a
    parameter, an id, a path) the reader cannot act on."""
    text = in_words(error.removeprefix("Error:").strip())
    return None if not text or _INTERNAL.search(text) else text


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def purpose_of(call_id: str) -> str:
    """The plan step a call belongs to, from the id the planner gave it (demo_<step>_<n>)."""
    parts = call_id.split("_")
    return parts[1] if len(parts) >= 3 and parts[0] == "demo" else "main"


def _quoted(value: float) -> str:
    """'a 35% APY', with 'an' before numbers read with a vowel sound (8, 11, 18, 80…)."""
    text = f"{value:g}"
    article = "an" if text.startswith("8") or text.split(".")[0] in ("11", "18") else "a"
    return f"{article} {text}% APY"


def _band_line(plan: Plan, results: Iterable[str]) -> str | None:
    band = plan.band
    if band is None:
        return None
    key = band.label.split(" — ")[0].lower()
    for text in results:
        for line in text.splitlines():
            if line.startswith("- ") and key in line.lower() and ":" in line:
                return line[2:].strip()
    return None


def render_answer(
    question: str, since: list[ChatMessage], plan: Plan, followup: FollowUp | None = None
) -> str:
    """An answer built only from this turn's tool results; failures and cuts said plainly.
    A follow-up's answer first says how it was read, so the user can see what was kept."""
    calls = {c.id: c for m in since for c in m.tool_calls}
    tool_messages = [m for m in since if m.role == "tool"]
    sections = [LABEL, ""]
    if followup is not None:
        sections += [follow_up_line(followup), ""]
    sections += _band_intro(plan, [m.content for m in tool_messages])
    looked = [r for r in plan.resolved if r.kind != "unknown"]
    if looked:
        parts = [f"{r.word} → {r.kind} {', '.join(r.values)}" for r in looked]
        sections += ["Names checked against the vault index: " + "; ".join(parts) + ".", ""]
    if plan.vault_name:
        sections += [f"“{plan.vault_name}” is read as a vault's name and searched as text.", ""]
    followed = False
    for message in tool_messages:
        call = calls.get(message.tool_call_id or "")
        purpose = purpose_of(call.id) if call else "main"
        if purpose == "follow" and not followed:
            sections += ["Then, for what that search found first:", ""]
            followed = True
        sections += _result_section(message, call, purpose)
    ran_main = any(purpose_of(c.id) == "main" for c in calls.values())
    if plan.follow is not None and not followed and ran_main:
        what = ", ".join(plain_name(t) for t in plan.follow.tools)
        sections += [
            f"The search returned nothing to follow up on, so I did not run {what}.",
            "",
        ]
    if plan.notes:
        sections += ["Not applied (I could not map these to what the tools can filter):"]
        sections += [f"- {in_words(note)}" for note in plan.notes]
        sections.append("")
    if len(sections) == (4 if followup is not None else 2):
        sections.append("No tool result came back for this question.")
    return "\n".join(sections).rstrip() + "\n"


def follow_up_line(followup: FollowUp) -> str:
    """'Taking “…” from your previous question, with “on base” instead of “on ethereum”.'
    A question that points into earlier results has no previous question of its own:
    'Reading “the first one” as WETH-USDC from earlier results: “…”.'"""
    question = followup.shown or followup.question
    if not followup.previous:
        return f"Reading {'; '.join(followup.changes)}: “{question}”."
    return (
        f"Taking “{followup.previous}” from your previous question, with "
        f"{'; '.join(followup.changes)}. Read as: “{question}”."
    )


def _band_intro(plan: Plan, bodies: list[str]) -> list[str]:
    """The quoted APY's band, in the guideline's own words when a result carried them."""
    band = plan.band
    if band is None:
        return []
    worded = _band_line(plan, bodies)
    quoted = _quoted(band.apy)
    if worded:
        lines = [
            f"You quoted {quoted}. In the yield-versus-risk guidelines returned with the "
            f"results, that falls in this band: {worded}",
            "",
        ]
    else:
        lines = [
            f"You quoted {quoted}: in the product's yield-versus-risk guideline that is the "
            f"band {band.label}.",
            "",
        ]
    if plan.main:
        lines += ["Vaults in the same APY band, with their risk ratings, for comparison:", ""]
    return lines


def _result_section(message: ChatMessage, call: ChatToolCall | None, purpose: str) -> list[str]:
    """One tool result as the answer shows it: lookups folded, failures and cuts said."""
    name = call.name if call else message.name or "tool"
    full = message.content.strip()
    if purpose == "lookup" and name in (CATALOGUE_TOOL, ASSET_LOOKUP_TOOL):
        if not _failed(full):
            return []
        reason = plain_reason(full[:300])
        said = f": {reason}" if reason else "."
        return [f"The name lookup ({plain_name(name)}) failed{said}", ""]
    if _failed(full):
        reason = plain_reason(_shown(full))
        return [
            f"{_capital(plain_name(name))} could not answer, so I could not check this "
            "and have not filled the gap with guesses" + (":" if reason else "."),
            "",
            *([reason, ""] if reason else []),
        ]
    sentence = lead(name, message.structured) if message.structured else None
    page = read_page(full) if sentence is None else None
    if sentence is not None:
        lines = [sentence, ""]
    elif page is not None:
        lines = [lead_sentence(page), "", *table(page), ""]
        more = more_line(page)
        if more is not None:
            lines += [more, ""]
        if page.rest:
            lines += [_shown(page.rest), ""]
    else:
        lines = [f"**{TITLES.get(name, 'Result')}**:", "", _shown(full), ""]
    cut = _CUT.search(full)
    if cut:
        lines += [
            f"Note: {plain_name(name)}'s result was cut before it reached me (result cut: "
            f"{cut.group(1)} of {cut.group(2)} characters shown). I could not check the "
            "rest, so anything beyond what is shown above is not covered by this answer.",
            "",
        ]
    return lines


def _cut(text: str) -> str:
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS] + MORE


def _shown(full: str) -> str:
    """What the answer quotes of a result: at most RESULT_CHARS of its text, and as much
    of its guidelines section."""
    if len(full) <= RESULT_CHARS:
        return full
    head, marker, guidelines = full.partition(_GUIDELINES)
    if not marker:
        return _cut(full)
    return _cut(head) + _cut(marker + guidelines)


def _failed(text: str) -> bool:
    return text.startswith("Error:")


def unavailable_answer(text: str) -> str:
    """A labelled answer saying what cannot be checked now."""
    return f"{LABEL}\n\n{text}\n"


def band_only_answer(plan: Plan) -> str:
    """A quoted APY's band when no vault search can back it with results."""
    assert plan.band is not None
    band = plan.band
    lines = [
        LABEL,
        "",
        f"You quoted {_quoted(band.apy)}: in the product's yield-versus-risk guideline that is "
        f"the band {band.label}.",
    ]
    if plan.unavailable:
        lines += ["", plan.unavailable]
    return "\n".join(lines) + "\n"


def acknowledgement_text(previous: str | None) -> str:
    """The reply to a message that only thanks or agrees: no plan, no example figures."""
    lines = [
        LABEL,
        "",
        "Glad to help. Ask me anything else about tokens, addresses, vaults or wallets.",
    ]
    if previous:
        lines += [
            "",
            "To change your previous question, name only what to change, for example "
            "“and on base?” or “what about Aave?”.",
        ]
    return "\n".join(lines) + "\n"


# One question per tool that the help offers: each answers with data in the demo world
# (tests/e2e/test_local_stack.py asks every one): the address is a recorded exploiter's,
# the ENS name one of the local chain's fixture wallets.
HELP_EXAMPLES = {
    "analyze_token": "What is PEPE?",
    "analyze_address": "Is 0x47666Fab8bd0Ac7003bce3f5C3585383F09486E2 risky?",
    "search_tokens": "Stablecoins over $1M market cap on ethereum",
    "search_feed": "What is the market saying about Aave?",
    "search_vaults": "USDC vaults on base with TVL above $10M",
    "top_yields": "Top stablecoin yields",
    "wallet_top_positions": "Top 5 positions by value for yield-farmer.eth",
}


def help_text(tools: dict[str, ToolSpec], previous: str | None = None) -> str:
    """What the planner can do with the tools available now; after an answered question,
    also how to refine it (a message that is no refinement never repeats its plan)."""
    lines = [LABEL, "", "I could not match that question to a tool. Try, for example:"]
    lines += [f"- “{text}”" for name, text in HELP_EXAMPLES.items() if name in tools]
    if len(lines) == 3:
        lines = [LABEL, "", "No tools are available right now, so I cannot look anything up."]
    elif previous:
        lines += [
            "",
            f"To change your previous question (“{previous}”), name only what to change, "
            "for example “and on base?”, “only above 10% APY”, “top 3” or “what about "
            "Morpho?”.",
        ]
    return "\n".join(lines) + "\n"
