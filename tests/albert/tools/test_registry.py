"""The registry's view of a turn's tools: specs, and how much of the context they take."""

from __future__ import annotations

import gc
from typing import Any

from pydantic import ConfigDict, Field

from albert.tools.base import LocalTool, ToolInput, ToolResult, described, spec_of
from albert.tools.registry import ToolRegistry


class _Query(ToolInput):
    symbol: str = Field(description="token symbol ✓")


async def _run(args: _Query) -> ToolResult:
    return ToolResult.text(args.symbol)


def tool(name: str, description: str = "Looks a token up.") -> LocalTool[_Query]:
    return LocalTool(name, description, _Query, _run)


class Unreferenceable:
    """A tool written with __slots__ and no weakref slot."""

    __slots__ = ("description", "input_schema", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.description = "no weak references"
        self.input_schema: dict[str, Any] = {"type": "object", "properties": {}}

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult.text("ok")


def test_specs_and_size_are_the_specs_and_their_json_length() -> None:
    tools = [tool("a"), tool("b", "Ünïcode description"), Unreferenceable("c")]
    registry = ToolRegistry(tools)  # type: ignore[list-item]
    specs, size = registry.specs_and_size()
    assert specs == [spec_of(t) for t in tools]  # type: ignore[arg-type]
    assert specs == registry.specs()
    assert size == sum(len(spec_of(t).model_dump_json()) for t in tools)  # type: ignore[arg-type]


def test_a_tool_is_described_once_and_each_tool_on_its_own() -> None:
    first, second = tool("same"), tool("same", "Another description.")
    assert described(first) is described(first)
    assert described(second)[0].description == "Another description."
    assert described(first)[0].description == "Looks a token up."
    # A per-turn registry (read_tool_result is built for every turn) gets its copy too.
    assert ToolRegistry([first]).extended([second], "local").specs() == [spec_of(second)]


def test_a_described_tool_is_forgotten_with_it() -> None:
    from albert.tools import base

    # Tools of earlier tests in this process may wait in cyclic garbage (a turn's frames):
    # collected first, so the count below changes by this tool alone.
    gc.collect()
    gone = tool("gone")
    described(gone)
    before = len(base._described)
    del gone
    gc.collect()
    assert len(base._described) == before - 1


def test_equal_tools_of_different_objects_share_one_description() -> None:
    # Every object builds its own tools; one with the same name, description and schema
    # object is described by the spec the first one got.
    first, again = tool("shared"), tool("shared")
    assert described(again)[0] is described(first)[0]
    assert described(again) == (spec_of(again), len(spec_of(again).model_dump_json()))

    # An equal schema in another dict, another name or description: a spec of its own.
    class _SameQuery(ToolInput):
        model_config = ConfigDict(**ToolInput.model_config, title="_Query")

        symbol: str = Field(description="token symbol ✓")

    other_schema = LocalTool("shared", "Looks a token up.", _SameQuery, _run)
    assert other_schema.input_schema == first.input_schema
    assert described(other_schema)[0] is not described(first)[0]
    assert described(other_schema)[0] == described(first)[0]
    assert described(tool("shared", "Changed."))[0].description == "Changed."
    assert described(tool("renamed"))[0].name == "renamed"


def test_the_shared_descriptions_stay_bounded() -> None:
    from albert.tools import base

    for index in range(base._SHARED_DESCRIPTIONS + 10):
        described(tool(f"t{index}"))
    assert len(base._shared) <= base._SHARED_DESCRIPTIONS
