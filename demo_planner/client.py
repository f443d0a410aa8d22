"""The demo planner as a model client: plans tool calls by rules and renders their results.

Used when no model gateway is configured, so the local stack answers real questions without a
key. Each model step, it rebuilds the plan from the question and what this turn has returned
so far, and either asks for the next step's calls (ids `demo_<step>_<n>`, step being
lookup, main or follow) or writes the answer from the results. It never invents facts: every
answer is built from tool results and says it is a demo.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable
from datetime import UTC, date, datetime
from typing import Any

from albert.ai.model import (
    ChatMessage,
    ChatToolCall,
    ModelEvent,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.ai.untrusted import unfenced
from albert.tools.base import ToolSpec
from demo_planner.answers import compose, part_of
from demo_planner.followups import (
    FollowUp,
    NameKinds,
    resolve_chain,
    user_questions,
)
from demo_planner.lexicon import ToolLexicon, build_lexicon
from demo_planner.names import NameIndex
from demo_planner.plans import (
    ASSET_LOOKUP_TOOL,
    CATALOGUE_TOOL,
    Call,
    Plan,
    follow_calls,
    make_context,
    make_plan,
)
from demo_planner.pointers import point_into
from demo_planner.reading import Reading, read
from demo_planner.rendering import purpose_of

STEPS = ("lookup", "main", "follow")


def last_user_turn(messages: list[ChatMessage]) -> tuple[str, list[ChatMessage]]:
    """The last user message and everything after it (this turn's calls and results).

    Results come fenced as untrusted text; the planner reads the text inside, as a model
    reads through the fence (albert.ai.untrusted.unfenced)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return messages[index].content, [_read(m) for m in messages[index + 1 :]]
    return "", []


def _read(message: ChatMessage) -> ChatMessage:
    if message.role != "tool":
        return message
    return message.model_copy(update={"content": unfenced(message.content)})


class DemoPlanner:
    """A ModelClient that plans tool calls by rules and renders their results."""

    def __init__(
        self,
        chunk_words: int = 3,
        clock: Callable[[], float] | None = None,
        today: Callable[[], date] | None = None,
    ) -> None:
        self._chunk_words = chunk_words
        self._counter = 0
        self.names = NameIndex(clock=clock) if clock else NameIndex()
        self._lexicons: dict[str, tuple[str, ToolLexicon]] = {}
        # The date "since March" counts from (a test pins it).
        self._today = today or (lambda: datetime.now(UTC).date())

    @property
    def model_name(self) -> str:
        return "demo-planner"

    def lexicons(self, tools: list[ToolSpec]) -> dict[str, ToolLexicon]:
        """Each offered tool's lexicon, rebuilt only when its schema changes."""
        out = {}
        for spec in tools:
            digest = hashlib.sha256(
                json.dumps([spec.description, spec.parameters], sort_keys=True).encode()
            ).hexdigest()
            cached = self._lexicons.get(spec.name)
            if cached is None or cached[0] != digest:
                cached = (digest, build_lexicon(spec))
                self._lexicons[spec.name] = cached
            out[spec.name] = cached[1]
        return out

    def learn(self, since: list[ChatMessage], *, lookups_only: bool = False) -> None:
        """Remember what this turn's results said about the indexed names (`lookups_only`:
        only what its lookup step returned)."""
        calls = {c.id: c for m in since for c in m.tool_calls}
        for message in since:
            if message.role != "tool" or message.content.startswith("Error:"):
                continue
            call = calls.get(message.tool_call_id or "")
            if call is None or (lookups_only and purpose_of(call.id) != "lookup"):
                continue
            try:
                query = str(json.loads(call.arguments).get("query") or "")
            except (ValueError, AttributeError):
                query = ""
            if call.name == CATALOGUE_TOOL and purpose_of(call.id) == "lookup":
                self.names.learn_catalogue(message.content, query or None)
            elif call.name == ASSET_LOOKUP_TOOL and query:
                self.names.learn_assets(query, message.content)
            self.names.learn_vault_lines(message.content)

    def follow_up(
        self, messages: list[ChatMessage], tools: list[ToolSpec]
    ) -> tuple[str | None, FollowUp | None]:
        """The previous question as resolved, and the last user message read as a refinement
        of it (None when it stands alone), from the conversation's user messages only."""
        questions = user_questions(messages)
        if len(questions) < 2:
            return None, None
        ctx = make_context(self.lexicons(tools), self.names, self._today())
        schema_assets = {a.upper() for a in ctx.known("asset")}

        def is_asset(word: str) -> bool:
            return word.upper() in schema_assets or bool(self.names.asset_lookup(word))

        kinds = NameKinds(lambda: self.names.known_protocols(ctx.known("protocol")), is_asset)

        def answerable(question: str) -> bool:
            return make_plan(question, ctx, lookups_done=True).asks

        readings: dict[str, Reading] = {}

        def reader(question: str) -> Reading:
            # Each message is read as a refinement and again as the next one's previous.
            if question not in readings:
                readings[question] = read(question, ctx.table, ctx.today)
            return readings[question]

        return resolve_chain(questions, reader, kinds, answerable)

    def plan(self, question: str, tools: list[ToolSpec], since: list[ChatMessage]) -> Plan:
        """The plan for the question, given this turn's results so far. Within a turn only
        its lookups teach names: a name learned from its own search results would change
        the plan between its steps (a follow-up lost to a lookup that can no longer run)."""
        self.learn(since, lookups_only=True)
        ctx = make_context(self.lexicons(tools), self.names, self._today())
        done = {purpose_of(c.id) for m in since for c in m.tool_calls}
        return make_plan(question, ctx, lookups_done="lookup" in done)

    def next_calls(
        self, question: str, tools: list[ToolSpec], since: list[ChatMessage]
    ) -> tuple[str, list[Call], Plan]:
        """The next step's calls (step name and calls), or no calls when it is time to answer.
        The parts of a question share each step: their lookups, then their main calls, then
        each part's follow-ups from its own main results."""
        plan = self.plan(question, tools, since)
        done = {purpose_of(c.id) for m in since for c in m.tool_calls}
        if not tools:
            return "answer", [], plan
        parts = plan.all_parts()
        lookups = _unique_calls(c for p in parts for c in p.lookups)
        if "lookup" not in done and "main" not in done and lookups:
            return "lookup", lookups, plan
        main = [c for p in parts for c in p.main]
        if "main" not in done and main:
            return "main", main, plan
        if "main" in done and "follow" not in done:
            ctx = make_context(self.lexicons(tools), self.names, self._today())
            follow = []
            for index, part in enumerate(parts):
                if part.follow is None:
                    continue
                for call in follow_calls(part, ctx, _main_results(since, index)):
                    call.part = index
                    follow.append(call)
            if follow:
                return "follow", follow, plan
        return "answer", [], plan

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        question, since = last_user_turn(request.messages)
        self.learn(since, lookups_only=True)
        previous, followup = self.follow_up(request.messages, request.tools)
        if followup is not None:
            question = followup.question
        else:
            pointed = point_into(question, request.messages)
            if pointed is not None:
                followup = FollowUp(
                    previous="",
                    question=pointed.question,
                    changes=[f"“{pointed.words}” as {pointed.vault} from earlier results"],
                    shown=pointed.shown,
                )
                question = pointed.question
        step, calls, plan = self.next_calls(question, request.tools, since)
        if calls:
            for call in calls:
                self._counter += 1
                # A part's calls carry its number, so each part's answer finds its own.
                suffix = f"_p{call.part}" if plan.parts else ""
                yield ToolCallRequest(
                    call=ChatToolCall(
                        id=f"demo_{step}_{self._counter}{suffix}",
                        name=call.tool,
                        arguments=json.dumps(call.arguments),
                    )
                )
            yield StepFinished(reason="tool_calls")
            return
        # The turn is over: what its results say about names serves the next questions.
        self.learn(since)
        tools = {t.name: t for t in request.tools}
        text = compose(question, since, plan, followup, tools, previous)
        for chunk in self._chunks(text):
            yield TextDelta(text=chunk)
        yield StepFinished(reason="stop")

    def _chunks(self, text: str) -> list[str]:
        words = re.split(r"(?<=\s)", text)
        return [
            "".join(words[i : i + self._chunk_words])
            for i in range(0, len(words), self._chunk_words)
        ]


def _unique_calls(calls: Any) -> list[Call]:
    """Calls without repeats (two parts may ask the index about the same name)."""
    out: list[Call] = []
    seen: set[str] = set()
    for call in calls:
        key = call.tool + json.dumps(call.arguments, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(call)
    return out


def _main_results(since: list[ChatMessage], part: int) -> list[tuple[str, dict[str, Any], str]]:
    """The main calls of one part of the question, each with its arguments and result."""
    results = {m.tool_call_id: m.content for m in since if m.role == "tool"}
    out = []
    for message in since:
        for call in message.tool_calls:
            if purpose_of(call.id) != "main" or part_of(call.id) != part:
                continue
            if call.id not in results:
                continue
            try:
                arguments = json.loads(call.arguments)
            except ValueError:
                arguments = {}
            out.append((call.name, arguments, results[call.id]))
    return out
