"""A remote MCP tool behind the one Tool interface.

Name and input schema are exactly what the server listed; the description is the
server's, fenced as untrusted text attributed to the server (albert.ai.untrusted),
since the model reads it. Only `execute` is ours, and it hands the call to the
manager, which owns the connection, the health check and the reconnection.
Timeout, truncation and error capture are the ToolGuard's, as for every tool. A tool
the server marks destructive says so (`confirm_server`): the tool loop asks the user
before each call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from albert.ai.untrusted import untrusted
from albert.tools.base import ToolResult


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


Invoker = Callable[[str, RemoteToolSpec, dict[str, Any]], Awaitable[ToolResult]]


class RemoteTool:
    """A server's tool; executing it goes through the manager's invoker.

    `exposed_as` is the name the model sees when the server's own cannot be used (it
    clashes with a platform tool, or has characters model APIs refuse); the server is
    always called by its own name.
    """

    def __init__(
        self, server: str, spec: RemoteToolSpec, invoke: Invoker, exposed_as: str | None = None
    ) -> None:
        self.server = server
        self.spec = spec
        self._invoke = invoke
        self._name = exposed_as or spec.name

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return untrusted(f"MCP server {self.server}", self.spec.description)

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.spec.input_schema

    @property
    def confirm_server(self) -> str | None:
        """The server to name when asking the user first (albert.tools.base.asks_first)."""
        return self.server if self.spec.destructive else None

    async def execute(self, arguments: dict[str, Any]) -> ToolResult:
        return await self._invoke(self.server, self.spec, arguments)
