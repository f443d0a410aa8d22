"""A remote MCP tool behind the one Tool interface.

Name and input schema are exactly what the server listed; the description is the
server's, fenced as untrusted text attributed to the server (albert.ai.untrusted),
since the model reads it. Only `execute` is ours, and it hands the call to the server
of that name (albert.mcp.server.McpServer), which owns the connection, the health check
and the recovery. Timeout, truncation and error capture are the ToolGuard's, as for
every tool. What a turn adds is composed around it (`remote_tool`, with the wrappers of
albert.tools.capabilities): another name when the server's own cannot be offered, and
the user's approval before each call of a tool the server marks destructive.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from albert.ai.untrusted import untrusted
from albert.tools.base import Tool, ToolResult
from albert.tools.capabilities import ApprovalRequired, Renamed


class RemoteToolSpec(BaseModel):
    """One tool as a server listed it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    name: str
    description: str
    input_schema: dict[str, Any] = Field(description="As sent by the server, untouched")
    idempotent: bool = Field(False, description="annotations.idempotentHint: safe to replay")
    destructive: bool = Field(
        False,
        description="annotations.destructiveHint true and readOnlyHint not true: the user "
        "confirms each call before it runs",
    )
    task_required: bool = Field(
        False, description='execution.taskSupport "required": runs only as a task (not offered)'
    )


# Runs one of a server's tools: (server name, the tool as listed, arguments).
Invoker = Callable[[str, RemoteToolSpec, dict[str, Any]], Awaitable[ToolResult]]


class RemoteTool:
    """A server's tool, under the name it listed; executing it goes through `invoke`."""

    def __init__(self, server: str, spec: RemoteToolSpec, invoke: Invoker) -> None:
        self.server = server
        self.spec = spec
        self._invoke = invoke

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def description(self) -> str:
        return untrusted(f"MCP server {self.server}", self.spec.description)

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.spec.input_schema

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return await self._invoke(self.server, self.spec, arguments)


def remote_tool(
    server: str, spec: RemoteToolSpec, invoke: Invoker, *, name: str | None = None
) -> Tool:
    """A server's tool as a turn offers it: as `name` when that differs from its own, and
    asking the user first when the server marks it destructive."""
    tool: Tool = RemoteTool(server, spec, invoke)
    if name is not None and name != spec.name:
        tool = Renamed(tool, name)
    if spec.destructive:
        tool = ApprovalRequired(tool, server)
    return tool
