"""Scoring one answered question: right tools, right arguments, grounded facts and figures.

The scorer sees only what a user could see plus the full tool results of the turn (read back
from the thread): it never trusts the answer. What a user sees is the answer and the results
the chat draws as cards (web/js/cards.js: a result with structured content of a kind it
draws), each counted as its whole result, since the card is drawn from the result itself. A
fact counts when it is seen AND in this turn's tool results; a figure in the answer's own
words counts as ungrounded when no tool result, tool argument or the question itself backs
it (a card's figures are the tool's by construction).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from albert.tools.token_search.compiler import compile_filter
from albert.tools.token_search.query import TokenSearchQuery
from evals.cases import Case, ExpectedCall, Fact
from evals.numbers import Quantity, backs, extract, parse_single, ungrounded


class ToolCallRecord(BaseModel):
    """A tool call of the turn, as its tool_call frame said."""

    call_id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResultRecord(BaseModel):
    """A tool result of the turn: frame flags plus the full text read back from the thread."""

    call_id: str = ""
    name: str
    ok: bool
    truncated: bool = False
    content: str = ""
    card: str | None = Field(
        None, description="The card the chat draws of it (its kind), if any: it is seen"
    )


class TurnRecord(BaseModel):
    """Everything observed while one question was answered (the last of its thread)."""

    question: str
    before: list[str] = Field(
        default_factory=list, description="Earlier turns of the thread; context, never scored"
    )
    answer: str = ""
    calls: list[ToolCallRecord] = Field(default_factory=list)
    results: list[ToolResultRecord] = Field(default_factory=list)
    finish_reason: str | None = None
    steps: int = 0
    latency_s: float = 0.0
    error: str | None = Field(None, description="An error frame, or the client's own failure")


class Check(BaseModel):
    """One scored aspect of an answer."""

    name: str
    ok: bool
    detail: str = ""


class CaseScore(BaseModel):
    """The verdict on one case."""

    case_id: str
    workload: str
    profile: str
    passed: bool
    checks: list[Check]
    tools_called: list[str]
    ungrounded: list[str]
    facts_found: int
    facts_total: int
    steps: int
    finish_reason: str | None
    latency_s: float

    def check(self, name: str) -> Check | None:
        """The check called `name`, if it was scored."""
        return next((c for c in self.checks if c.name == name), None)


# --- text matching ---------------------------------------------------------------------


def _norm(text: str) -> str:
    text = text.replace("\u2212", "-").replace("\u2013", "-").replace("\u00a0", " ")
    text = re.sub(r"[*_`]", "", text)  # markdown emphasis must not hide a phrase
    return " ".join(text.lower().split())


def phrase_in(phrase: str, text: str) -> bool:
    """True when the phrase is in the text; a lone figure also matches the same figure written
    differently (`$3.36B` is found in "3.36 billion dollars")."""
    if _norm(phrase) in _norm(text):
        return True
    figure = parse_single(phrase)
    if figure is None:
        return False
    return any(_same_figure(figure, q) for q in extract(text))


def _same_figure(fact: Quantity, seen: Quantity) -> bool:
    return seen.kind != "date" and backs(seen, fact)


def _alternatives(fact: Fact) -> list[str]:
    return [fact] if isinstance(fact, str) else list(fact)


# --- arguments -------------------------------------------------------------------------


def _value_matches(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict) and len(expected) == 1:
        ((op, operand),) = expected.items()
        if op == "$contains":
            return isinstance(actual, str) and _norm(str(operand)) in _norm(actual)
        if op == "$in":
            return any(_value_matches(option, actual) for option in operand)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, int | float) and isinstance(actual, int | float):
        return abs(float(expected) - float(actual)) <= 1e-9 * max(1.0, abs(float(expected)))
    if isinstance(expected, str) and isinstance(actual, str):
        return _norm(expected) == _norm(actual)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(
            any(_value_matches(e, a) for a in actual) for e in expected
        )
    return bool(expected == actual)


def argument_problems(expected: ExpectedCall, actual: dict[str, Any]) -> list[str]:
    """Why a call's arguments do not satisfy the expectation (empty when they do)."""
    problems = []
    for key, value in expected.arguments.items():
        if key not in actual:
            problems.append(f"{key} missing")
        elif not _value_matches(value, actual[key]):
            problems.append(f"{key}={json.dumps(actual[key])} (want {json.dumps(value)})")
    if expected.exact:
        extra = sorted(set(actual) - set(expected.arguments))
        problems += [f"unexpected {key}={json.dumps(actual[key])}" for key in extra]
    if expected.compiled_filter is not None:
        try:
            compiled = compile_filter(TokenSearchQuery.model_validate(actual))
        except ValidationError as exc:
            problems.append(f"arguments do not validate: {exc.errors()[0]['msg']}")
        else:
            if compiled != expected.compiled_filter:
                problems.append(f"filter {compiled!r} (want {expected.compiled_filter!r})")
    return problems


# --- the scorer ------------------------------------------------------------------------

# Cards of catalogue lookups are drawn only when no other result of the turn has a card
# (web/js/cards.js `LOOKUPS`).
LOOKUP_CARDS = frozenset({"protocols", "assets"})


def seen_text(turn: TurnRecord) -> str:
    """What a user sees of the turn: the answer, and the results drawn as cards."""
    cards = [r for r in turn.results if r.ok and r.card]
    if any(r.card not in LOOKUP_CARDS for r in cards):
        cards = [r for r in cards if r.card not in LOOKUP_CARDS]
    return "\n".join([turn.answer, *(r.content for r in cards)])


def grounding_sources(turn: TurnRecord) -> list[str]:
    """Texts a figure in the answer may come from: tool results, tool arguments, the question."""
    sources = [r.content for r in turn.results]
    sources += [json.dumps(c.arguments) for c in turn.calls]
    sources += [_argument_numbers(c.arguments) for c in turn.calls]
    sources.append(turn.question)
    return sources


def _argument_numbers(arguments: dict[str, Any]) -> str:
    # JSON writes 1000000.0; the planner or a model may echo it as 1,000,000.
    numbers = [
        v for v in arguments.values() if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    return " ".join(f"{v:,}" for v in numbers)


def score(case: Case, turn: TurnRecord) -> CaseScore:
    """Score one answered question against its case."""
    checks: list[Check] = []
    names = [c.name for c in turn.calls]
    if turn.error:
        checks.append(Check(name="no_error", ok=False, detail=turn.error))

    # Tools and arguments.
    missing_tools = [e.names for e in case.calls if not set(e.names) & set(names)]
    forbidden = [n for n in names if n in case.forbid_tools]
    tool_problems = [f"not called: {' or '.join(m)}" for m in missing_tools]
    tool_problems += [f"forbidden: {n}" for n in forbidden]
    if case.no_tool_calls and names:
        tool_problems.append(f"no tool should be called, got {', '.join(names)}")
    checks.append(Check(name="tools", ok=not tool_problems, detail="; ".join(tool_problems)))

    arg_problems: list[str] = []
    for expected in case.calls:
        candidates = [c for c in turn.calls if c.name in expected.names]
        if not candidates:
            continue
        per_call = [argument_problems(expected, c.arguments) for c in candidates]
        if not any(not p for p in per_call):
            arg_problems.append(f"{candidates[0].name}: " + ", ".join(per_call[0]))
    if any(e.arguments or e.exact or e.compiled_filter for e in case.calls):
        checks.append(Check(name="arguments", ok=not arg_problems, detail="; ".join(arg_problems)))

    # Facts: seen (in the answer or a card) and in this turn's tool results.
    results_text = "\n".join(r.content for r in turn.results)
    seen = seen_text(turn)
    found = 0
    fact_problems = []
    for fact in case.facts:
        options = _alternatives(fact)
        in_answer = [p for p in options if phrase_in(p, seen)]
        grounded = [p for p in in_answer if phrase_in(p, results_text)]
        if grounded:
            found += 1
        elif in_answer:
            fact_problems.append(f"{in_answer[0]!r} is in the answer but in no tool result")
        else:
            fact_problems.append(f"missing {' | '.join(repr(p) for p in options)}")
    if case.facts:
        checks.append(Check(name="facts", ok=not fact_problems, detail="; ".join(fact_problems)))

    mention_problems = [
        f"missing {' | '.join(repr(p) for p in _alternatives(m))}"
        for m in case.mentions
        if not any(phrase_in(p, seen) for p in _alternatives(m))
    ]
    if case.mentions:
        checks.append(
            Check(name="mentions", ok=not mention_problems, detail="; ".join(mention_problems))
        )

    said = [p for p in case.must_not_include if _norm(p) in _norm(seen)]
    if case.must_not_include:
        checks.append(Check(name="must_not_include", ok=not said, detail=", ".join(said)))

    # Figures and dates with no source.
    loose = ungrounded(turn.answer, grounding_sources(turn))
    checks.append(
        Check(name="grounded_numbers", ok=not loose, detail=", ".join(q.text for q in loose))
    )

    if case.tool_error is not None:
        failed = [r.name for r in turn.results if not r.ok]
        ok = bool(failed) if case.tool_error else not failed
        detail = f"failed: {', '.join(failed) or 'none'}"
        checks.append(Check(name="tool_error", ok=ok, detail=detail))
    if case.truncated is not None:
        cut = any(r.truncated for r in turn.results)
        checks.append(
            Check(name="truncated", ok=cut == case.truncated, detail=f"result cut: {cut}")
        )

    finish_ok = turn.finish_reason == case.finish_reason and turn.steps <= case.max_steps
    checks.append(
        Check(
            name="finish",
            ok=finish_ok,
            detail=f"{turn.finish_reason} after {turn.steps} step(s)",
        )
    )
    return CaseScore(
        case_id=case.id,
        workload=case.workload,
        profile=case.profile,
        passed=all(c.ok for c in checks),
        checks=checks,
        tools_called=names,
        ungrounded=[q.text for q in loose],
        facts_found=found,
        facts_total=len(case.facts),
        steps=turn.steps,
        finish_reason=turn.finish_reason,
        latency_s=turn.latency_s,
    )
