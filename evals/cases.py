"""The question set: what each question must call, say and not say, as data files.

Each workload is one JSON file under `evals/cases/`: a list of cases. A case names the
tool calls it expects (a tool, or alternatives; arguments that must match; for a token
screen, the filter the arguments must compile to), the facts the answer must carry (each
must also be in this turn's tool results), phrases it must not contain, and, for the
failure-policy cases, the stack profile to run under and the failure it must report. A
follow-up case gives the earlier turns of its conversation (`before`): they are asked in the
same thread first, and only the last question is scored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    TypeAdapter,
    field_validator,
    model_validator,
)

CASES_DIR = Path(__file__).resolve().parent / "cases"

Workload = Literal[
    "token_analysis",
    "address_analysis",
    "token_search",
    "feed_search",
    "vaults",
    "wallet",
    "failure",
    "followup",
    "negation",
    "parts",
    "time_windows",
    "amounts",
    "comparisons",
    "exploits",
    "limits",
    "small_talk",
]
FinishReason = Literal["stop", "step_limit", "error", "cancelled", "length"]

# A fact is one phrase, or a list of alternatives of which one must be present.
Fact = str | list[str]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ExpectedCall(_Strict):
    """One tool call the answer needs.

    `arguments` must match the call's arguments key by key (strings case-insensitively, numbers
    numerically, lists as sets); a value may be `{"$contains": "aave"}` (substring of a string
    argument) or `{"$in": [...]}` (one of). With `exact`, the call must have no other arguments.
    `compiled_filter` is for search_tokens: the call's arguments must compile, through the
    project's own compiler, to exactly this Typesense filter.
    """

    tool: str | list[str] = Field(description="Tool name, or alternatives")
    arguments: dict[str, Any] = Field(default_factory=dict)
    exact: bool = False
    compiled_filter: str | None = None

    @property
    def names(self) -> list[str]:
        """The acceptable tool names."""
        return [self.tool] if isinstance(self.tool, str) else list(self.tool)


class Case(_Strict):
    """One question and what a grounded answer to it looks like."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    workload: Workload
    question: str = Field(min_length=1)
    before: list[Annotated[str, StringConstraints(min_length=1)]] = Field(
        default_factory=list,
        description="Earlier user turns, asked in the same thread first; not scored",
    )
    profile: str = Field("default", description="Stack profile the question runs against")
    calls: list[ExpectedCall] = Field(default_factory=list)
    no_tool_calls: bool = Field(False, description="The answer must not call any tool")
    forbid_tools: list[str] = Field(default_factory=list)
    facts: list[Fact] = Field(
        default_factory=list,
        description="Must be in the answer and in this turn's tool results",
    )
    mentions: list[Fact] = Field(
        default_factory=list,
        description="Must be in the answer; statements about what could not be checked",
    )
    must_not_include: list[str] = Field(default_factory=list)
    tool_error: bool | None = Field(
        None, description="True: a tool must fail; False: every tool must succeed"
    )
    truncated: bool | None = Field(None, description="True: a tool result must be cut")
    finish_reason: FinishReason = "stop"
    max_steps: int = Field(5, ge=1)
    note: str = ""

    @field_validator("facts", "mentions")
    @classmethod
    def _no_empty_alternatives(cls, value: list[Fact]) -> list[Fact]:
        for fact in value:
            if isinstance(fact, list) and not fact:
                raise ValueError("a list of alternatives needs at least one phrase")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        if self.no_tool_calls and self.calls:
            raise ValueError("no_tool_calls contradicts expected calls")
        return self


_case_list: TypeAdapter[list[Case]] = TypeAdapter(list[Case])


def load_file(path: Path) -> list[Case]:
    """The cases of one JSON file."""
    return _case_list.validate_python(json.loads(path.read_text()))


def load_cases(directory: Path = CASES_DIR) -> list[Case]:
    """Every case of every file in `directory`, ids unique across files."""
    cases: list[Case] = []
    for path in sorted(directory.glob("*.json")):
        cases += load_file(path)
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise ValueError(f"duplicate case id {case.id!r}")
        seen.add(case.id)
    return cases
