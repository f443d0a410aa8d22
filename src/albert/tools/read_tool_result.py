"""read_tool_result: page through a tool output that was cut before it reached the model.

A page is the stored output as the tool produced it; our line before it (the result's
`preface`) says which call and which characters. The model gets the page fenced, naming
the call it came from (albert.tools.fence).
"""

from pydantic import Field

from albert.storage.threads import ToolOutputs
from albert.tools.base import LocalTool, TextPart, ToolInput, ToolResult

NAME = "read_tool_result"
PAGE_CHARS = 20_000


class ReadToolResultInput(ToolInput):
    """Which stored output to read, and from where."""

    call_id: str = Field(
        min_length=1,
        max_length=128,
        description="call_id of an earlier tool call in this conversation whose result was cut.",
    )
    offset: int = Field(
        0,
        ge=0,
        description="Character offset to start reading at; a cut result says where it stopped.",
    )


def read_tool_result_tool(
    outputs: ToolOutputs, thread_id: str, page_chars: int = PAGE_CHARS
) -> LocalTool:
    """The tool for one thread: it can only read that thread's outputs."""

    async def run(args: ReadToolResultInput) -> ToolResult:
        found = outputs.read(thread_id, args.call_id, args.offset, page_chars)
        if found is None:
            return ToolResult.error(
                f"no stored tool output with call_id {args.call_id!r} in this conversation"
            )
        part, total = found
        if args.offset >= total:
            return ToolResult.error(f"offset {args.offset} is past the end ({total:,} characters)")
        end = args.offset + len(part)
        tail = f"next offset {end}" if end < total else "this is the end"
        return ToolResult(
            content=[TextPart(text=part)],
            preface=f"[{args.call_id}: characters {args.offset:,}–{end:,} of {total:,}; {tail}]\n",
            fence_label=f"output of call {args.call_id} read back",
        )

    return LocalTool(
        NAME,
        "Read more of an earlier tool result that was cut to fit (it says so when it was). "
        f"Returns up to {page_chars:,} characters from the given offset.",
        ReadToolResultInput,
        run,
    )
