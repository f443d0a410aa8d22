"""What a tool may carry besides the one Tool interface, each as a small wrapper around it.

- `Renamed`: offered to the model under another name; the tool inside is still called by
  its own (a remote tool whose name clashes with a platform tool's, or has characters
  model APIs refuse).
- `ApprovalRequired`: the user agrees before each call (albert.ai.tool_loop asks, naming
  the server; a remote tool its server marks destructive).

A wrapper hands everything else to the tool inside, so wrappers compose; what a tool
carries is read with `asks_first`, never from attributes a tool may claim.
"""

from __future__ import annotations

from typing import Any

from albert.tools.base import Tool, ToolResult


class WrappedTool:
    """A tool with one thing added; everything else is the tool inside's."""

    def __init__(self, inner: Tool) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def description(self) -> str:
        return self.inner.description

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.inner.input_schema

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return await self.inner.execute(arguments)


class Renamed(WrappedTool):
    """Offered to the model as `name`; the tool inside runs under its own."""

    def __init__(self, inner: Tool, name: str) -> None:
        super().__init__(inner)
        self._name = name

    @property
    def name(self) -> str:
        return self._name


class ApprovalRequired(WrappedTool):
    """Runs only after the user agreed to this call; `server` is named when asking."""

    def __init__(self, inner: Tool, server: str) -> None:
        super().__init__(inner)
        self.server = server


def asks_first(tool: Tool) -> str | None:
    """The server to name when the user must agree before each call of `tool`, else None."""
    layer: Tool = tool
    while isinstance(layer, WrappedTool):
        if isinstance(layer, ApprovalRequired):
            return layer.server or None
        layer = layer.inner
    return None
