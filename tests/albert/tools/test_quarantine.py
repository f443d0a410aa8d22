"""The quarantine gate: a malformed tool is left out alone; its siblings keep working."""

from __future__ import annotations

from typing import Any

import pytest

from albert.tools.base import ToolResult
from albert.tools.registry import ToolRegistry


class RawTool:
    """A tool with a schema exactly as some remote server might send it."""

    def __init__(self, name: str, schema: Any) -> None:
        self.name = name
        self.description = "remote"
        self.input_schema = schema

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("ok")


GOOD = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_bad_names_and_schemas_are_rejected_and_the_rest_merge() -> None:
    registry = ToolRegistry()
    rejected = registry.merge(
        [
            RawTool("fine_tool", GOOD),
            RawTool("x" * 100, GOOD),
            RawTool("has space", GOOD),
            RawTool("bad_schema", {"type": "object", "properties": {"q": {"type": "strng"}}}),
            RawTool("not_object", {"type": "array"}),
            RawTool("weird", ["not", "a", "schema"]),
            RawTool("Fine-Tool", GOOD),
            RawTool("also_fine", {"type": "object"}),
        ],
        source="vaults",
    )
    assert registry.names() == ["fine_tool", "also_fine"]
    reasons = {r.tool: r.reason for r in rejected}
    assert reasons["x" * 80] == "its name is 100 characters (64 at most)"
    assert "characters model APIs refuse" in reasons["has space"]
    assert "not valid JSON Schema" in reasons["bad_schema"]
    assert "must describe an object" in reasons["not_object"]
    assert "not a JSON object" in reasons["weird"]
    assert "clashes with 'fine_tool'" in reasons["Fine-Tool"]
    assert all(r.source == "vaults" for r in rejected)
    assert registry.rejected == rejected


def test_a_remote_tool_may_still_replace_a_local_one_of_the_same_name() -> None:
    registry = ToolRegistry([RawTool("search", GOOD)])
    assert registry.merge([RawTool("search", {"type": "object"})], source="remote") == []
    assert registry.source_of("search") == "remote"
    assert registry.get("search").input_schema == {"type": "object"}  # type: ignore[union-attr]


@pytest.fixture
def encoded(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every schema the quarantine JSON-encodes (its check), in order."""
    from albert.tools import quarantine

    seen: list[object] = []
    real_dumps = quarantine.json.dumps

    def counting(value: Any, **kwargs: Any) -> str:
        seen.append(value)
        return real_dumps(value, **kwargs)

    monkeypatch.setattr(quarantine.json, "dumps", counting)
    return seen


def test_a_tool_vetted_again_keeps_its_verdict_and_its_clash_check(encoded: list[object]) -> None:
    # Schema dicts of their own: a verdict on GOOD itself may be kept from another test.
    good, bad = RawTool("fine", dict(GOOD)), RawTool("broken", {"type": "array"})
    for _ in range(3):  # one turn after another, as `extended` does
        registry = ToolRegistry().extended([good, bad], "local")
        assert registry.names() == ["fine"]
        assert [r.tool for r in registry.rejected] == ["broken"]
    assert len(encoded) == 2  # each tool's schema checked once
    # A name clash depends on the other tools, so it is still checked every time.
    clash = ToolRegistry([RawTool("Fine", GOOD)]).extended([good], "remote")
    assert clash.names() == ["Fine"]
    assert "clashes with 'Fine'" in clash.rejected[0].reason


def test_tools_of_other_objects_over_the_same_schema_take_its_verdict(
    encoded: list[object],
) -> None:
    good, bad = dict(GOOD), {"type": "array"}
    for _ in range(3):  # each object builds its own tool objects over one schema per model
        registry = ToolRegistry().extended([RawTool("fine", good), RawTool("no", bad)], "local")
        assert registry.names() == ["fine"]
        assert [r.tool for r in registry.rejected] == ["no"]
    assert encoded == [good, bad]
    # An equal schema in another dict is checked on its own (its verdict is the same).
    again = ToolRegistry().extended([RawTool("fine", dict(GOOD))], "local")
    assert again.names() == ["fine"]
    assert len(encoded) == 3
