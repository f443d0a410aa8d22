"""The answer to a whole question, around the rendering of its tool results.

`rendering.py` turns one plan's tool results into text. This module puts an answer
together around it: how the question was read (an amount said back, a risk level, a time
window, what cannot be done), what the results add up to (a comparison's verdict, the
trend of a history, an amount weighed against the vaults found, the hacks register's
count), and for a question of several parts one section per part. Every figure in those
lines is copied from this turn's tool results or from the question.
"""

from __future__ import annotations

import dataclasses
import re

from albert.ai.model import ChatMessage, ChatToolCall
from albert.tools.base import ToolSpec
from demo_planner.amounts import sizing_lines
from demo_planner.capabilities import nearest_examples
from demo_planner.comparisons import sides_from, verdict_lines
from demo_planner.exploits import register_entries, register_lines
from demo_planner.followups import FollowUp
from demo_planner.plans import Plan
from demo_planner.rendering import (
    HELP_EXAMPLES,
    LABEL,
    band_only_answer,
    follow_up_line,
    help_text,
    purpose_of,
    render_answer,
    unavailable_answer,
)
from demo_planner.small_talk import reply
from demo_planner.text import ADDRESS
from demo_planner.timeframes import trend_lines
from demo_planner.vault_table import vault_rows

_FIGURE = re.compile(r"\d")


def part_of(call_id: str) -> int:
    """The part of the question a call answers, from its id (demo_<step>_<n>_p<part>)."""
    last = call_id.rsplit("_", 1)[-1]
    return int(last[1:]) if last.startswith("p") and last[1:].isdigit() else 0


def compose(
    question: str,
    since: list[ChatMessage],
    plan: Plan,
    followup: FollowUp | None,
    tools: dict[str, ToolSpec],
    previous: str | None,
) -> str:
    """The whole answer: labelled, read-as lines first, then each part's results."""
    if not any(m.role == "tool" for m in since):
        return _without_results(plan, tools, previous)
    sections = [LABEL, ""]
    if followup is not None:
        sections += [follow_up_line(followup), ""]
    parts = plan.all_parts()
    for index, part in enumerate(parts):
        messages = _messages_of(since, index) if plan.parts else since
        if plan.parts:
            sections += [f"**{index + 1}. “{part.said.strip()}”**", ""]
        sections += _part_answer(part.said or question, messages, part)
    return "\n".join(sections).rstrip() + "\n"


def _without_results(plan: Plan, tools: dict[str, ToolSpec], previous: str | None) -> str:
    """An answer with no tool result: small talk, a thing no tool does, or the help."""
    examples = [f"“{text}”" for name, text in HELP_EXAMPLES.items() if name in tools]
    if plan.reply is not None:
        # Small talk calls no tool, so its examples carry no figure no result could back.
        examples = [e for e in examples if not _FIGURE.search(ADDRESS.sub("", e))]
        return "\n".join([LABEL, "", *reply(plan.reply, examples, previous)]) + "\n"
    gap = plan.gap or next((p.gap for p in plan.all_parts() if p.gap is not None), None)
    if gap is not None and not any(p.main for p in plan.all_parts()):
        lines = [LABEL, "", gap.reply, "", "What I can do instead, for example:"]
        lines += [f"- {e}" for e in nearest_examples([*gap.tickers, *_tickers(plan)])]
        return "\n".join(lines) + "\n"
    if plan.band is not None:
        return band_only_answer(plan)
    if plan.unavailable:
        text = unavailable_answer(plan.unavailable)
        return text if gap is None else text.replace(LABEL, f"{LABEL}\n\n{gap.reply}", 1)
    return help_text(tools, previous)


def _tickers(plan: Plan) -> list[str]:
    return [str(c.arguments["symbol"]) for c in plan.main if "symbol" in c.arguments]


def _messages_of(since: list[ChatMessage], part: int) -> list[ChatMessage]:
    """This turn's calls and results that answer one part (lookups go with the first)."""
    out: list[ChatMessage] = []
    for message in since:
        if message.role == "assistant" and message.tool_calls:
            calls = [c for c in message.tool_calls if _belongs(c.id, part)]
            if calls:
                out.append(message.model_copy(update={"tool_calls": calls}))
        elif message.role == "tool" and _belongs(message.tool_call_id or "", part):
            out.append(message)
    return out


def _belongs(call_id: str, part: int) -> bool:
    if purpose_of(call_id) == "lookup":
        return part == 0
    return part_of(call_id) == part


def _part_answer(question: str, since: list[ChatMessage], plan: Plan) -> list[str]:
    """One plan's answer: read-as lines, what the results add up to, then the results."""
    if not any(m.role == "tool" for m in since):
        # A part with no call of its own: what it asks cannot be looked up, said plainly.
        if plan.gap is not None:
            return [plan.gap.reply, ""]
        if plan.unavailable:
            return [plan.unavailable, ""]
        return ["I could not match this part to a tool, so it is not answered here.", ""]
    calls = [c for m in since for c in m.tool_calls]
    results = {m.tool_call_id: m.content for m in since if m.role == "tool"}
    lines = list(plan.leads)
    since, shown = _address_results(since, plan, calls, results)
    if shown:
        lines.append(shown)
    lines += _findings(plan, calls, results)
    if lines:
        lines.append("")
    body_plan = plan
    if plan.follow is not None and plan.follow.source == "address":
        body_plan = _without_follow(plan)
    body = render_answer(question, since, body_plan)
    return [*lines, body.removeprefix(LABEL).strip("\n"), ""]


def _address_results(
    since: list[ChatMessage], plan: Plan, calls: list[ChatToolCall], results: dict[str, str]
) -> tuple[list[ChatMessage], str]:
    """An address's two checks as one answer: a token-index lookup that found no token is
    said in words (not shown as a failure), and the check that followed it is shown as
    an answer of its own, not as a search's follow-up."""
    if plan.follow is None or plan.follow.source != "address":
        return since, ""
    said = ""
    dropped: set[str] = set()
    for call in calls:
        text = results.get(call.id, "")
        if plan.probe and call.name == "analyze_token" and text.startswith("Error:"):
            dropped.add(call.id)
            said = (
                f"No token is on record at {plan.probe} in the token index, so I checked it "
                "as an address instead."
            )
    out = []
    for message in since:
        if message.role == "tool" and message.tool_call_id in dropped:
            continue
        if message.role == "assistant" and message.tool_calls:
            kept = [_as_main(c) for c in message.tool_calls if c.id not in dropped]
            if kept:
                out.append(message.model_copy(update={"tool_calls": kept}))
            continue
        if message.role == "tool" and message.tool_call_id:
            message = message.model_copy(update={"tool_call_id": _main_id(message.tool_call_id)})
        out.append(message)
    return out, said


def _as_main(call: ChatToolCall) -> ChatToolCall:
    return call.model_copy(update={"id": _main_id(call.id)})


def _main_id(call_id: str) -> str:
    return call_id.replace("demo_follow_", "demo_main_", 1)


def _without_follow(plan: Plan) -> Plan:
    return dataclasses.replace(plan, follow=None)


def _asked_lines(keys: list[str], risk_results: list[str]) -> list[str]:
    """The risk analysis's own lines for the factors a yes/no question asked, quoted."""
    quoted = []
    for text in risk_results:
        for line in text.splitlines():
            label = line[2:].split(":", 1)[0].lower() if line.startswith("- ") else ""
            if label and any(key in label for key in keys) and line not in quoted:
                quoted.append(line)
    if not quoted:
        return []
    return ["**What you asked, from the risk analysis:**", *quoted]


def _findings(plan: Plan, calls: list[ChatToolCall], results: dict[str, str]) -> list[str]:
    """What the results add up to, in words, with their own figures."""
    main = [c for c in calls if purpose_of(c.id) == "main"]
    follow = [c for c in calls if purpose_of(c.id) == "follow"]
    lines: list[str] = []
    if plan.compare:
        searches = [c for c in main if c.name in ("search_vaults", "top_yields")]
        texts = [results.get(c.id) for c in searches]
        if len(texts) == len(plan.compare):
            sides = sides_from(plan.compare, texts)
            lines += verdict_lines(sides, plan.compare_what, plan.compare_where)
    if plan.exploit_names:
        risk = [results.get(c.id, "") for c in follow if c.name == "analyze_risk"]
        lines += register_lines(register_entries(risk), plan.exploit_names)
    if plan.asked:
        risk = [results.get(c.id, "") for c in calls if c.name == "analyze_risk"]
        lines += _asked_lines(plan.asked, risk)
    if plan.trend:
        for call in calls:
            if call.name == "vault_history":
                lines += trend_lines(results.get(call.id, ""))
    if plan.amount is not None:
        rows = [row for c in main for row in vault_rows(results.get(c.id, ""))]
        lines += sizing_lines(plan.amount, rows)
    return lines
