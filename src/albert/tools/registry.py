"""The tool registry the AI service reads: local tools with remote tools merged over them."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from albert.tools.base import Tool, ToolSpec, described
from albert.tools.quarantine import Rejection, sanitised, vet

log = logging.getLogger(__name__)


class ToolRegistry:
    """Named tools for one turn; later sources win on a name clash."""

    def __init__(self, local: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources: dict[str, str] = {}
        self.rejected: list[Rejection] = []
        for tool in local:
            self._tools[tool.name] = tool
            self._sources[tool.name] = "local"

    def merge(self, tools: Iterable[Tool], source: str) -> list[Rejection]:
        """Add tools from another source; later sources win a name clash (logged).

        Every tool passes the quarantine gate first; the ones that fail are left out,
        logged, kept in `rejected` and returned.
        """
        taken = {sanitised(name): name for name in self._tools}
        rejected: list[Rejection] = []
        for tool in tools:
            rejection = vet(tool, source, taken)
            if rejection is not None:
                log.warning(
                    "tool %s from %s left out: %s", rejection.tool, source, rejection.reason
                )
                rejected.append(rejection)
                continue
            if tool.name in self._tools:
                log.info(
                    "tool %s from %s replaces the one from %s",
                    tool.name,
                    source,
                    self._sources[tool.name],
                )
            self._tools[tool.name] = tool
            self._sources[tool.name] = source
            taken[sanitised(tool.name)] = tool.name
        self.rejected.extend(rejected)
        return rejected

    def extended(self, tools: Iterable[Tool], source: str) -> ToolRegistry:
        """A copy with more tools merged in; this registry is left as it was."""
        copy = ToolRegistry()
        copy._tools = dict(self._tools)
        copy._sources = dict(self._sources)
        copy.rejected = list(self.rejected)
        copy.merge(tools, source)
        return copy

    def get(self, name: str) -> Tool | None:
        """The tool of that name, if callable now."""
        return self._tools.get(name)

    def source_of(self, name: str) -> str | None:
        """'local' or the remote server's name."""
        return self._sources.get(name)

    def names(self) -> list[str]:
        """Tool names, in registration order."""
        return list(self._tools)

    def specs(self) -> list[ToolSpec]:
        """What the model is told, schemas untouched."""
        return [described(t)[0] for t in self._tools.values()]

    def specs_and_size(self) -> tuple[list[ToolSpec], int]:
        """`specs()`, and how many characters their JSON takes in all."""
        pairs = [described(t) for t in self._tools.values()]
        return [spec for spec, _ in pairs], sum(size for _, size in pairs)

    def __len__(self) -> int:
        return len(self._tools)
