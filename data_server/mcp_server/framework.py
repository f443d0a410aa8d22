"""How a tool of this server is declared: a pydantic input model, an output model, a handler.

The SDK's `MCPServer` derives schemas from a function signature; our tools have dozens of
flattened parameters, so the input schema comes straight from a pydantic model instead
(`Tool` with our own `FuncMetadata`). Arguments are validated by that model inside the
tool, so a bad value comes back as a short `isError` result in our words rather than a
pydantic dump. The output model gives the advertised `outputSchema` (in the compact form of
`output_schema.py`), and every successful result carries `structuredContent` plus readable
text. The structured content is the output model's own dump, valid by construction, so the
SDK is given the schema without the model and does not validate the same payload again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from mcp.server.mcpserver.tools import Tool

# The SDK's implementation module, kept: its public `add_tool` derives a schema from a
# signature, and `def f(params: SearchVaultsInput)` advertises one nested `params` object
# instead of search_vaults' 30 flat parameters (measured on mcp 2.3.0).
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ConfigDict, ValidationError

from albert.search import TypesenseError
from data_server.coaching import CoachItem, guidelines_block
from data_server.mcp_server.output_schema import output_schema
from data_server.redaction import index_unavailable, public_text
from data_server.store.calls import UNAVAILABLE_MESSAGE, StoreUnavailable
from data_server.wallets.rpc import RpcError

log = logging.getLogger(__name__)

InT = TypeVar("InT", bound=BaseModel)
OutT = TypeVar("OutT", bound=BaseModel)


class ToolFailure(Exception):
    """A failure the caller can act on; its message is returned as the error text."""


class StrictInput(BaseModel):
    """Base of every tool input: unknown parameters are refused so typos surface, and
    Infinity/NaN (which raw JSON-RPC can carry) are refused as numbers."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


@dataclass
class ToolOutput(Generic[OutT]):
    """What a handler returns: structured data, a readable summary, items to coach on."""

    data: OutT
    text: str
    coach: list[CoachItem] = field(default_factory=list)


class _RawArguments(ArgModelBase):
    """Hands the raw arguments to the tool untouched; our own model validates them."""

    model_config = ConfigDict(extra="allow")

    def model_dump_one_level(self) -> dict[str, Any]:
        return {"arguments": dict(self.model_extra or {})}


def validation_message(exc: ValidationError) -> str:
    """One readable line per invalid parameter, for the model to fix its call."""
    lines = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown parameter"
        lines.append(f"{where}: {message}")
    return "; ".join(lines)


class ToolResult(CallToolResult):
    """A result built here: its structured content is an output model's JSON-mode dump."""


def wire_form(result: ToolResult) -> dict[str, Any]:
    """The result as the SDK dumps it (`by_alias`, JSON mode, no None fields), with the
    structured content taken as it is: it is JSON already, and walking it again was one
    of the five passes the SDK and this server made over every page of vaults."""
    out = result.model_dump(
        by_alias=True, mode="json", exclude_none=True, exclude={"structured_content"}
    )
    if result.structured_content is not None:
        out["structuredContent"] = result.structured_content
    return out


def error_result(message: str) -> ToolResult:
    """A tool error the model can read and recover from."""
    return ToolResult(content=[TextContent(type="text", text=f"Error: {message}")], is_error=True)


def success_result(output: ToolOutput[Any]) -> ToolResult:
    """Readable text, a guidelines part when a risk rating is present, structured content."""
    content = [TextContent(type="text", text=output.text)]
    guidelines = guidelines_block(output.coach)
    if guidelines is not None:
        content.append(TextContent(type="text", text=guidelines))
    return ToolResult(content=content, structured_content=output.data.model_dump(mode="json"))


def build_tool(
    name: str,
    description: str,
    input_model: type[InT],
    output_model: type[OutT],
    handler: Callable[[InT], Awaitable[ToolOutput[OutT]]],
    *,
    title: str | None = None,
) -> Tool:
    """An SDK Tool whose schemas come from the two models and whose errors are tool results."""

    async def call(arguments: dict[str, Any]) -> ToolResult:
        try:
            params = input_model.model_validate(arguments)
        except ValidationError as exc:
            return error_result(f"invalid arguments for {name}: {validation_message(exc)}")
        try:
            output = await handler(params)
        except ToolFailure as exc:
            return error_result(public_text(str(exc)))
        except TypesenseError as exc:
            log.warning("tool %s: search index error: %s", name, exc)
            return error_result(index_unavailable(exc))
        except RpcError as exc:
            return error_result(public_text(f"chain RPC failed: {exc}"))
        except StoreUnavailable as exc:
            log.warning("tool %s: %s", name, exc)
            return error_result(UNAVAILABLE_MESSAGE)
        except Exception:
            # The SDK would answer "Error executing tool X": the caller learns nothing,
            # and the traceback would be nowhere but in its wording.
            log.exception("tool %s failed", name)
            return error_result(f"{name} failed on the server; try again shortly")
        return success_result(output)

    schema = input_model.model_json_schema()
    schema.pop("title", None)
    # A schema without a model is advertised but not re-validated by the SDK.
    metadata = FuncMetadata(arg_model=_RawArguments, output_schema=output_schema(output_model))
    return Tool(
        fn=call,
        name=name,
        title=title,
        description=description,
        parameters=schema,
        fn_metadata=metadata,
        is_async=True,
        annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
