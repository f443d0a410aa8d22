"""The tool loop: stream a model step, run the tools it asks for, feed results back.

At most `max_steps` model calls per turn. The last allowed call is made with
tools disabled and a note to answer from what is known, so a turn that hits the
cap still ends in an answer instead of silence. A call to a remote tool whose
arguments carry another source's output at length is refused, not run
(albert.tools.provenance). A call to a remote tool its server marks destructive runs
only once the user agrees (the turn's ToolConfirmer); declined or unanswered, it is not
run and the model is told why. At most `max_calls_per_step` calls of one step run; the
rest are answered, unrun, with a note saying so. What a tool returned reaches the model
fenced as untrusted text (albert.tools.fence); the carry check compares arguments with the
text inside the fences, which is what the model read.
"""

import asyncio
import json
import math
import re
import secrets
from functools import partial
from typing import Any, Literal, NamedTuple, Protocol

from albert.ai.context_budget import budget_chars, fit_context
from albert.ai.model import (
    ChatMessage,
    ChatToolCall,
    ModelClient,
    ModelError,
    ModelRequest,
    StepFinished,
    TextDelta,
    ToolCallRequest,
)
from albert.ai.untrusted import neutralise, unfenced
from albert.protocol.frames import ToolDecision, Usage
from albert.tools.base import TextPart, ToolResult
from albert.tools.capabilities import asks_first
from albert.tools.fence import for_model
from albert.tools.guard import ToolGuard
from albert.tools.progress import reporting
from albert.tools.provenance import Carried, OutputLedger
from albert.tools.read_tool_result import NAME as READ_TOOL
from albert.tools.registry import ToolRegistry

STEP_CAP_NOTE = (
    "You have used every tool step available for this answer. Do not call tools. "
    "Answer now from the tool results above; say plainly what you could not check."
)

# "refusal": the model declined (OpenAI streams its words as `delta.refusal`).
Outcome = Literal["stop", "step_limit", "length", "refusal"]
# A last step's finish reason that is an outcome of its own; any other is "stop".
_OUTCOMES: dict[str, Outcome] = {"length": "length", "refusal": "refusal"}

# A call id the model makes is kept only if it is short and plain: the `confirm` frame
# carries it back (at most 1,024 characters), read_tool_result takes it as an argument (at
# most 128), and it is stored and shown. Anything else (an id of 5,000 characters, control
# characters, a lone surrogate SQLite cannot encode) is replaced by one of ours.
CALL_ID_MAX_CHARS = 128
_PLAIN_ID = re.compile(r"[A-Za-z0-9_.:-]+")


class TurnObserver(Protocol):
    """Receives the turn as it happens: the chat service streams and persists from here."""

    async def on_text(self, step: int, delta: str) -> None: ...

    async def on_step_end(
        self, step: int, text: str, calls: list[ChatToolCall], finish_reason: str
    ) -> None:
        """A model step finished; `calls` are the tools about to run (empty at the end)."""
        ...

    async def on_tool_call(
        self, step: int, call: ChatToolCall, arguments: dict[str, Any], source: str
    ) -> None:
        """A tool is about to run; `source` is "local" or the MCP server it comes from."""
        ...

    async def on_tool_result(
        self, step: int, call: ChatToolCall, outcome: ToolResult, source: str
    ) -> None: ...

    def on_tool_progress(
        self,
        step: int,
        call: ChatToolCall,
        progress: float,
        total: float | None,
        message: str | None,
    ) -> None:
        """A running tool reported progress (remote tools: the server's notifications)."""
        ...


class ToolConfirmer(Protocol):
    """Asks the user whether one call of a tool its server marks destructive may run."""

    @property
    def timeout_seconds(self) -> float:
        """How long an answer is waited for."""
        ...

    async def confirm(
        self, step: int, call: ChatToolCall, server: str, arguments: dict[str, Any]
    ) -> ToolDecision:
        """The user's decision: approved, declined, or timeout (no answer in time)."""
        ...


class TurnResult(NamedTuple):
    """How a turn ended."""

    finish_reason: Outcome
    steps: int
    usage: Usage
    text: str


class PartialTurn(NamedTuple):
    """How far an interrupted turn got: the step it was in, and that step's text so far."""

    step: int
    text: str


class StepState:
    """Text streamed so far in the current step, kept for partial saves."""

    def __init__(self) -> None:
        self.step = 0
        self.text: list[str] = []

    @property
    def partial_text(self) -> str:
        return "".join(self.text)


def parse_arguments(raw: str) -> dict[str, Any] | str:
    """Decode the model's argument JSON; a string return is the error to report."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return "the arguments were not valid JSON"
    if not isinstance(value, dict):
        return "the arguments must be a JSON object"
    return value


class StallBounds(NamedTuple):
    """How long the model may stay silent before its first chunk and between chunks."""

    first_chunk_seconds: float = 30.0
    chunk_seconds: float = 20.0


class ToolLoop:
    """Runs one turn of the agent against a model client and a tool registry."""

    def __init__(
        self,
        model: ModelClient,
        guard: ToolGuard,
        *,
        max_steps: int,
        stall: StallBounds | None = None,
        context_tokens: int = 128_000,
        max_calls_per_step: int = 16,
    ) -> None:
        self._model = model
        self._guard = guard
        self._max_steps = max_steps
        self._max_calls = max_calls_per_step
        self._stall = stall or StallBounds()
        self._context_tokens = context_tokens
        self._state = StepState()
        self._ledger = OutputLedger()

    def partial(self) -> PartialTurn:
        """What the turn has done so far, for ending it when the loop was interrupted."""
        return PartialTurn(step=self._state.step, text=self._state.partial_text)

    async def run(
        self,
        messages: list[ChatMessage],
        registry: ToolRegistry,
        observer: TurnObserver,
        confirmer: ToolConfirmer | None = None,
    ) -> TurnResult:
        """Run until the model answers without tools or the step cap is reached.

        Without a `confirmer` nobody can be asked, so tools that need a yes do not run.
        """
        conversation = list(messages)
        self._ledger = _ledger_of(conversation, registry)
        usage = Usage()
        hit_cap = False
        step, text, finish = 0, "", "stop"
        # The turn's tools do not change while it runs: described and measured once.
        specs, specs_chars = registry.specs_and_size()
        # Ids the history already names count as taken: a gateway that numbers calls anew
        # each turn ("call_0") would otherwise make read_tool_result find another turn's
        # output, and the model would read two results under one id.
        taken = _ids_in(conversation)
        for step in range(1, self._max_steps + 1):
            # Reaching the last step means every earlier step asked for tools: this
            # call gets no tools and is told to answer from what it has.
            last_step = step == self._max_steps
            hit_cap = last_step and step > 1
            tools = [] if last_step else specs
            messages = (
                [*conversation, ChatMessage(role="system", content=STEP_CAP_NOTE)]
                if hit_cap
                else conversation
            )
            tools_chars = 0 if last_step else specs_chars
            request = ModelRequest(
                messages=fit_context(messages, budget_chars(self._context_tokens, tools_chars)),
                tools=tools,
            )
            text, calls, finish, step_usage = await self._stream_step(step, request, observer)
            usage = Usage(
                prompt_tokens=usage.prompt_tokens + step_usage.prompt_tokens,
                completion_tokens=usage.completion_tokens + step_usage.completion_tokens,
            )
            if last_step:
                calls = []  # tools were off; calls made anyway are not run
            calls = _unique_ids(calls, taken)
            await observer.on_step_end(step, text, calls, finish)
            if not calls:
                break
            conversation.append(ChatMessage(role="assistant", content=text, tool_calls=calls))
            conversation.extend(await self._run_tools(step, calls, registry, observer, confirmer))
        outcome: Outcome = "step_limit" if hit_cap else _OUTCOMES.get(finish, "stop")
        return TurnResult(finish_reason=outcome, steps=step, usage=usage, text=text)

    async def _stream_step(
        self, step: int, request: ModelRequest, observer: TurnObserver
    ) -> tuple[str, list[ChatToolCall], str, Usage]:
        self._state = StepState()
        self._state.step = step
        calls: list[ChatToolCall] = []
        finish = "stop"
        usage = Usage()
        stream = self._model.stream(request)
        loop = asyncio.get_running_loop()
        started = False
        bound = self._stall.chunk_seconds
        # One deadline per step. Moving it cancels a timer and arms another, a few µs per
        # token at streaming rates, so it moves at most every `slack` seconds and lands
        # `slack` further out: a stall is still reported no sooner than `bound` after the
        # last event, and at most `slack` later.
        slack = bound / 50
        armed = -math.inf
        try:
            async with asyncio.timeout(self._stall.first_chunk_seconds) as deadline:
                async for event in stream:
                    started = True
                    now = loop.time()
                    if now - armed >= slack:
                        deadline.reschedule(now + bound + slack)
                        armed = now
                    if isinstance(event, TextDelta):
                        self._state.text.append(event.text)
                        await observer.on_text(step, event.text)
                    elif isinstance(event, ToolCallRequest):
                        calls.append(event.call)
                    elif isinstance(event, StepFinished):
                        finish = event.reason
                        usage = Usage(
                            prompt_tokens=event.prompt_tokens,
                            completion_tokens=event.completion_tokens,
                        )
        except TimeoutError:
            what, bound = (
                ("sent more", self._stall.chunk_seconds)
                if started
                else ("started answering", self._stall.first_chunk_seconds)
            )
            raise ModelError(
                "timeout", f"the model stalled: it has not {what} for {bound:g} s"
            ) from None
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
        return self._state.partial_text, calls, finish, usage

    async def _run_tools(
        self,
        step: int,
        calls: list[ChatToolCall],
        registry: ToolRegistry,
        observer: TurnObserver,
        confirmer: ToolConfirmer | None,
    ) -> list[ChatMessage]:
        async def one(call: ChatToolCall, over_limit: bool) -> ChatMessage:
            arguments = parse_arguments(call.arguments)
            tool = registry.get(call.name)
            source = registry.source_of(call.name) or "unknown"
            await observer.on_tool_call(
                step, call, arguments if isinstance(arguments, dict) else {}, source
            )
            carried = (
                self._ledger.carried(source, arguments)
                if isinstance(arguments, dict) and source != "local" and not over_limit
                else None
            )
            if over_limit:
                outcome = _immediate(_not_run(_over_limit(call.name, self._max_calls)))
            elif isinstance(arguments, str):
                outcome = _immediate(ToolResult.error(f"{call.name}: {arguments}"))
            elif tool is None:
                outcome = _immediate(
                    ToolResult.error(
                        f"no tool named {call.name!r} is available now; "
                        "answer without it or use another tool"
                    )
                )
            elif carried is not None:
                outcome = _immediate(ToolResult.error(_carry_refusal(call.name, carried)))
            else:
                # Local tools never ask, whatever they claim: they are read-only.
                server = asks_first(tool) if source != "local" else None
                refusal = (
                    await _ask(step, call, server, arguments, confirmer)
                    if server is not None
                    else None
                )
                if refusal is None:
                    with reporting(partial(observer.on_tool_progress, step, call)):
                        outcome = await self._guard.run(tool, arguments)
                else:
                    outcome = _immediate(refusal)
            await observer.on_tool_result(step, call, outcome, source)
            content = for_model(call.name, source, outcome)
            # What the model read of the tool's words: inside the fence, neutralised.
            shown = outcome.shown_text()
            self._ledger.record_output(
                call.name, source, shown if outcome.own_words else neutralise(shown)
            )
            if outcome.cut is not None and registry.get(READ_TOOL) is not None:
                content += (
                    f'\n[To read on, call {READ_TOOL} with call_id "{call.id}" '
                    f"and offset {outcome.cut.shown}.]"
                )
            return ChatMessage(
                role="tool",
                content=content,
                tool_call_id=call.id,
                name=call.name,
                structured=outcome.presentable(),
            )

        # Calls of one step are independent by contract, so they run side by side; the
        # bound keeps how many run (and wait for the user) at once from being the model's
        # choice. Those over it still get a result: every call in the history has one.
        runs = [asyncio.ensure_future(one(c, i >= self._max_calls)) for i, c in enumerate(calls)]
        try:
            return list(await asyncio.gather(*runs))
        except Exception:
            # The observer failed one call (e.g. storage refused its result): the turn ends
            # here, and no sibling may go on sending or storing after its end.
            for run in runs:
                run.cancel()
            raise


def _unique_ids(calls: list[ChatToolCall], taken: set[str]) -> list[ChatToolCall]:
    """The calls, each with a plain id no other call of the conversation has (`taken`,
    updated).

    Everything after the model names a call by its id: its stored message, the browser's
    card, the user's confirmation. A model that gives two calls one id would otherwise
    have one answer settle both (while the card showed one of them) and its second
    result stored over the first; an id the frames cannot carry back could never be
    confirmed. The renamed calls are the ones the history keeps, so the assistant message
    and the tool results sent back to the model name the same ids.
    """
    unique: list[ChatToolCall] = []
    for call in calls:
        call_id = _own_id(call.id, taken)
        taken.add(call_id)
        unique.append(call if call_id == call.id else call.model_copy(update={"id": call_id}))
    return unique


def _ids_in(conversation: list[ChatMessage]) -> set[str]:
    """Every call id the conversation so far names (its calls and their results)."""
    ids = {m.tool_call_id for m in conversation if m.tool_call_id}
    ids.update(c.id for m in conversation for c in m.tool_calls or ())
    return ids


def _own_id(model_id: str, taken: set[str]) -> str:
    if _is_plain(model_id):
        call_id, n = model_id, 1
        while call_id in taken:
            n += 1
            call_id = f"{model_id}-{n}"
        if len(call_id) <= CALL_ID_MAX_CHARS:
            return call_id
    # Random, not counted: a thread's stored outputs are looked up by call id across
    # turns, and a counter restarting each turn would name an older call.
    call_id = f"call_{secrets.token_hex(8)}"
    while call_id in taken:
        call_id = f"call_{secrets.token_hex(8)}"
    return call_id


def _is_plain(call_id: str) -> bool:
    return len(call_id) <= CALL_ID_MAX_CHARS and _PLAIN_ID.fullmatch(call_id) is not None


def _over_limit(name: str, bound: int) -> str:
    return (
        f"{name} was not run: one step may call at most {bound} tools and this call came "
        "after that many. Call it again in a later step if it is still needed."
    )


def _ledger_of(conversation: list[ChatMessage], registry: ToolRegistry) -> OutputLedger:
    """What the model has seen so far: the user's words and every earlier tool output."""
    ledger = OutputLedger()
    for message in conversation:
        if message.role == "user":
            ledger.record_user(message.content)
        elif message.role == "tool":
            name = message.name or "an earlier tool"
            source = registry.source_of(name) or "earlier"
            ledger.record_output(name, source, unfenced(message.content))
    return ledger


def _carry_refusal(name: str, carried: Carried) -> str:
    where = "a local tool" if carried.source == "local" else f"the {carried.source} server"
    return (
        f"{name} was not run: its arguments repeat {carried.chars} characters of the output "
        f"of {carried.tool} ({where}). One tool's output is never sent on to another "
        "server's tool. If the user asked for that, say it cannot be done this way."
    )


async def _ask(
    step: int,
    call: ChatToolCall,
    server: str,
    arguments: dict[str, Any],
    confirmer: ToolConfirmer | None,
) -> ToolResult | None:
    """None when the user lets the call run; else the result that says why it did not."""
    if confirmer is None:
        return _not_run(
            f"{call.name} was not run: the {server} server marks it destructive, so it "
            "needs the user's confirmation, and none can be asked here."
        )
    decision = await confirmer.confirm(step, call, server, arguments)
    if decision == "approved":
        return None
    if decision == "declined":
        return _not_run(
            f"The user declined to run {call.name} (a destructive tool of the {server} "
            "server); it was not run. Do not call it again for this request; say it was "
            "not done."
        )
    return _not_run(
        f"No confirmation within {confirmer.timeout_seconds:g} s; {call.name} was not run. "
        "Tell the user it needs their confirmation and that they can ask again."
    )


def _not_run(text: str) -> ToolResult:
    # An error result (the tool did nothing), without the "Error:" of a failure.
    return ToolResult(content=[TextPart(text=text)], is_error=True)


def _immediate(result: ToolResult) -> ToolResult:
    """A result the loop writes instead of running the tool: our words, not the tool's."""
    return result.model_copy(update={"own_words": True})
