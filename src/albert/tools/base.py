"""The one tool interface: a named operation with a JSON schema and an async execute."""

import functools
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from albert.protocol.frames import within_bound
from albert.validation import validation_message


class TextPart(BaseModel):
    """One text content part of a tool result."""

    model_config = ConfigDict(defer_build=True)

    type: Literal["text"] = "text"
    text: str


CUT_NOTE = (
    "\n\n[… result cut: {shown:,} of {total:,} characters shown. "
    "The rest was not sent to you; say so if it matters.]"
)


class Cut(BaseModel):
    """A result's text was cut to fit: the model sees its first `shown` of `total` chars."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    shown: int = Field(ge=0)
    total: int = Field(ge=0)


class ToolResult(BaseModel):
    """A tool's result: the tool's own words, and Albert's notes about them, kept apart.

    `content` (and `structured`) are what the tool produced. The other fields are ours:
    the model reads them outside the tool's untrusted-text fence (albert.tools.fence),
    and no code ever has to find them again inside the tool's text.
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    content: list[TextPart]
    is_error: bool = False
    structured: dict[str, Any] | None = None
    # Albert wrote the whole result (a refusal, a timeout, a failure): nothing to fence.
    own_words: bool = False
    # Albert's line before the tool's text (a page read back says which call and where).
    preface: str = ""
    # Who the fence names when it is not the tool itself (a page of an earlier output).
    fence_label: str | None = None
    cut: Cut | None = None
    duration_ms: float = 0.0

    @classmethod
    def text(cls, text: str, *, structured: dict[str, Any] | None = None) -> "ToolResult":
        """A single-part successful result."""
        return cls(content=[TextPart(text=text)], structured=structured)

    @classmethod
    def error(cls, message: str) -> "ToolResult":
        """A short error result the model can read and recover from."""
        return cls(content=[TextPart(text=f"Error: {message}")], is_error=True)

    def presentable(self) -> dict[str, Any] | None:
        """The structured content the chat may draw from: a successful result's, when its
        JSON is at most the frame's bound (albert.protocol.frames.MAX_STRUCTURED_CHARS);
        None otherwise."""
        if self.is_error or self.own_words or not self.structured:
            return None
        return self.structured if within_bound(self.structured) else None

    def joined_text(self) -> str:
        """The tool's whole text: its parts joined."""
        return "\n\n".join(part.text for part in self.content)

    @property
    def truncated(self) -> bool:
        """The model sees only the start of the text."""
        return self.cut is not None

    def shown_text(self) -> str:
        """The tool's text as far as the model sees it."""
        text = self.joined_text()
        return text if self.cut is None else text[: self.cut.shown]

    def cut_note(self) -> str:
        """Our note after a cut text (empty when nothing was cut)."""
        if self.cut is None:
            return ""
        return CUT_NOTE.format(shown=self.cut.shown, total=self.cut.total)

    def cut_to(self, max_chars: int) -> "ToolResult":
        """This result, its text cut to `max_chars` when longer (a prefix, so the model can
        read on from where it stopped)."""
        total = len(self.joined_text())
        if total <= max_chars:
            return self
        return self.model_copy(update={"cut": Cut(shown=max_chars, total=total)})


@runtime_checkable
class Tool(Protocol):
    """A named operation the model can call."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> dict[str, Any]:
        """JSON Schema of the arguments, exactly as the model will see it."""
        ...

    async def execute(self, arguments: dict[str, Any]) -> "ToolResult": ...


InputT = TypeVar("InputT", bound=BaseModel)


class ToolInput(BaseModel):
    """Base for tool input models: unknown fields are refused, so typos surface."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


@functools.lru_cache(maxsize=256)
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    # Some tools are built per turn (read_tool_result); their schema need not be.
    return model.model_json_schema()


class LocalTool(Generic[InputT]):
    """A tool implemented by a Python function taking a validated pydantic model."""

    def __init__(
        self,
        name: str,
        description: str,
        input_model: type[InputT],
        run: Callable[[InputT], Awaitable[ToolResult]],
    ) -> None:
        self._name = name
        self._description = description
        self._input_model = input_model
        self._run = run
        self._schema = _schema_of(input_model)

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    @property
    def input_schema(self) -> dict[str, Any]:
        return self._schema

    async def execute(self, arguments: dict[str, Any]) -> "ToolResult":
        try:
            parsed = self._input_model.model_validate(arguments)
        except ValidationError as exc:
            return ToolResult.error(
                f"invalid arguments for {self._name}: {validation_message(exc)}"
            )
        return await self._run(parsed)


class ToolSpec(BaseModel):
    """What the model is told about a tool."""

    model_config = ConfigDict(defer_build=True)

    name: str
    description: str
    parameters: dict[str, Any] = Field(description="JSON Schema of the arguments")


def spec_of(tool: Tool) -> ToolSpec:
    """The model-facing description of a tool, schema untouched."""
    return ToolSpec(name=tool.name, description=tool.description, parameters=tool.input_schema)


# A tool's name, description and schema do not change once it is built, and every turn
# describes and measures each of its tools: that is done once per tool object.
_described: weakref.WeakKeyDictionary[Any, tuple[ToolSpec, int]] = weakref.WeakKeyDictionary()


# Every object builds its own tool objects, but their names, descriptions and schemas are
# the same (a local tool's schema is one dict per input model, see `_schema_of`): a tool
# object first seen is described from the spec an equal tool already has, once per
# process rather than once per object's first turn. Keyed by the schema's identity; the
# entry holds the schema, so that identity cannot pass to another dict while it is kept.
_SHARED_DESCRIPTIONS = 512
_shared: dict[tuple[str, str, int], tuple[dict[str, Any], ToolSpec, int]] = {}


def _describe(tool: Tool) -> tuple[ToolSpec, int]:
    name, description, schema = tool.name, tool.description, tool.input_schema
    key = (name, description, id(schema))
    found = _shared.get(key)
    if found is not None and found[0] is schema:
        return found[1], found[2]
    spec = spec_of(tool)
    size = len(spec.model_dump_json())
    if type(schema) is dict:
        if len(_shared) >= _SHARED_DESCRIPTIONS:
            _shared.clear()  # remote tools come and go: the cache stays bounded
        _shared[key] = (schema, spec, size)
    return spec, size


def described(tool: Tool) -> tuple[ToolSpec, int]:
    """The tool's spec and the length of that spec's JSON (the share of the context it
    takes), made once per tool object (and shared by equal tools of other objects)."""
    try:
        found = _described.get(tool)
    except TypeError:  # a tool that cannot be weakly referenced is described every time
        spec = spec_of(tool)
        return spec, len(spec.model_dump_json())
    if found is None:
        found = _described[tool] = _describe(tool)
    return found
