"""Context budgets: older tool results go first, then older turns; the newest turn stays."""

from albert.ai.context_budget import budget_chars, fit_context
from albert.ai.model import ChatMessage, ChatToolCall


def _turn(n: int, result_chars: int) -> list[ChatMessage]:
    call = ChatToolCall(id=f"c{n}", name="dump", arguments="{}")
    return [
        ChatMessage(role="user", content=f"question {n}"),
        ChatMessage(role="assistant", tool_calls=[call]),
        ChatMessage(role="tool", content="r" * result_chars, tool_call_id=f"c{n}", name="dump"),
        ChatMessage(role="assistant", content=f"answer {n}"),
    ]


SYSTEM = ChatMessage(role="system", content="be grounded")


def test_messages_that_fit_are_untouched() -> None:
    messages = [SYSTEM, *_turn(1, 100)]
    assert fit_context(messages, 10_000) is messages


def test_older_tool_results_are_stubbed_first_with_a_way_back() -> None:
    messages = [
        SYSTEM,
        *_turn(1, 30_000),
        *_turn(2, 30_000),
        ChatMessage(role="user", content="now"),
    ]
    fitted = fit_context(messages, 40_000)
    tools = [m for m in fitted if m.role == "tool"]
    assert tools[0].content.startswith("[Earlier result of dump (30,000 characters)")
    assert 'call_id "c1"' in tools[0].content
    assert len(fitted) == len(messages)
    assert sum(len(m.content) for m in fitted) <= 40_000


def test_the_newest_steps_result_stays_whole_and_old_turns_drop_if_needed() -> None:
    current = [
        ChatMessage(role="user", content="now"),
        ChatMessage(
            role="assistant", tool_calls=[ChatToolCall(id="n", name="dump", arguments="{}")]
        ),
        ChatMessage(role="tool", content="n" * 20_000, tool_call_id="n", name="dump"),
    ]
    history = [m for i in range(30) for m in _turn(i, 10)]
    messages = [SYSTEM, *history, *current]
    fitted = fit_context(messages, 21_000)
    assert fitted[0] == SYSTEM
    assert fitted[-3:] == current
    assert len(fitted) < len(messages)


def test_budget_leaves_room_for_the_answer_and_the_tool_schemas() -> None:
    assert budget_chars(128_000, 0) == (128_000 - 4_000) * 4
    assert budget_chars(128_000, 10_000) == (128_000 - 4_000) * 4 - 10_000
