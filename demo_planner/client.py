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
from demo_planner.followups import (
    FollowUp,
    NameKinds,
    is_acknowledgement,
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
from demo_planner.rendering import (
    acknowledgement_text,
    band_only_answer,
    help_text,
    purpose_of,
    render_answer,
    unavailable_answer,
)

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

    def __init__(self, chunk_words: int = 3, clock: Callable[[], float] | None = None) -> None:
        self._chunk_words = chunk_words
        self._counter = 0
        self.names = NameIndex(clock=clock) if clock else NameIndex()
        self._lexicons: dict[str, tuple[str, ToolLexicon]] = {}

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

    def learn(self, since: list[ChatMessage]) -> None:
        """Remember what this turn's results said about the indexed names."""
        calls = {c.id: c for m in since for c in m.tool_calls}
        for message in since:
            if message.role != "tool" or message.content.startswith("Error:"):
                continue
            call = calls.get(message.tool_call_id or "")
            if call is None:
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
        ctx = make_context(self.lexicons(tools), self.names)
        schema_assets = {a.upper() for a in ctx.known("asset")}

        def is_asset(word: str) -> bool:
            return word.upper() in schema_assets or bool(self.names.asset_lookup(word))

        kinds = NameKinds(lambda: self.names.known_protocols(ctx.known("protocol")), is_asset)

        def answerable(question: str) -> bool:
            return make_plan(question, ctx, lookups_done=True).route != "none"

        readings: dict[str, Reading] = {}

        def reader(question: str) -> Reading:
            # Each message is read as a refinement and again as the next one's previous.
            if question not in readings:
                readings[question] = read(question, ctx.table)
            return readings[question]

        return resolve_chain(questions, reader, kinds, answerable)

    def plan(self, question: str, tools: list[ToolSpec], since: list[ChatMessage]) -> Plan:
        """The plan for the question, given this turn's results so far."""
        self.learn(since)
        ctx = make_context(self.lexicons(tools), self.names)
        done = {purpose_of(c.id) for m in since for c in m.tool_calls}
        return make_plan(question, ctx, lookups_done="lookup" in done)

    def next_calls(
        self, question: str, tools: list[ToolSpec], since: list[ChatMessage]
    ) -> tuple[str, list[Call], Plan]:
        """The next step's calls (step name and calls), or no calls when it is time to answer."""
        plan = self.plan(question, tools, since)
        done = {purpose_of(c.id) for m in since for c in m.tool_calls}
        if not tools:
            return "answer", [], plan
        if "lookup" not in done and "main" not in done and plan.lookups:
            return "lookup", plan.lookups, plan
        if "main" not in done and plan.main:
            return "main", plan.main, plan
        if "main" in done and "follow" not in done and plan.follow is not None:
            calls_by_id = {c.id: c for m in since for c in m.tool_calls}
            results = [
                m.content
                for m in since
                if m.role == "tool"
                and purpose_of(m.tool_call_id or "") == "main"
                and m.tool_call_id in calls_by_id
            ]
            ctx = make_context(self.lexicons(tools), self.names)
            follow = follow_calls(plan, ctx, results)
            if follow:
                return "follow", follow, plan
        return "answer", [], plan

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        question, since = last_user_turn(request.messages)
        self.learn(since)
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
                yield ToolCallRequest(
                    call=ChatToolCall(
                        id=f"demo_{step}_{self._counter}",
                        name=call.tool,
                        arguments=json.dumps(call.arguments),
                    )
                )
            yield StepFinished(reason="tool_calls")
            return
        called = any(m.role == "tool" for m in since)
        if called:
            text = render_answer(question, since, plan, followup)
        elif plan.band is not None:
            text = band_only_answer(plan)
        elif plan.unavailable:
            text = unavailable_answer(plan.unavailable)
        elif is_acknowledgement(question):
            text = acknowledgement_text(previous)
        else:
            text = help_text({t.name: t for t in request.tools}, previous)
        for chunk in self._chunks(text):
            yield TextDelta(text=chunk)
        yield StepFinished(reason="stop")

    def _chunks(self, text: str) -> list[str]:
        words = re.split(r"(?<=\s)", text)
        return [
            "".join(words[i : i + self._chunk_words])
            for i in range(0, len(words), self._chunk_words)
        ]
