"""A contract module's tests as cases: run by pytest here, and inside workerd too.

A case is a `test_*` coroutine function of the module that takes `platform` and, at
most, the arguments its `parametrize` marks give; each parametrized combination is a case
of its own. tests/cloudflare/test_on_workerd.py runs the cases on a real Durable Object
inside workerd, where pytest's fixtures do not exist.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from tests.cloudflare.platform import Platform


@dataclass(frozen=True)
class Case:
    """One test with one set of parameters."""

    id: str
    function: Callable[..., Awaitable[None]]
    params: dict[str, Any]

    async def run(self, platform: Platform) -> None:
        await self.function(platform, **self.params)


def _grids(function: Callable[..., Any]) -> list[list[tuple[str, dict[str, Any]]]]:
    """Each parametrize mark as its list of (id, arguments)."""
    grids = []
    for mark in getattr(function, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names, values = mark.args[0], mark.args[1]
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        ids = mark.kwargs.get("ids")
        grid = []
        for index, value in enumerate(values):
            value = getattr(value, "values", value)  # a pytest.param's values
            row = value if len(names) > 1 else (value,)
            label = str(ids[index]) if isinstance(ids, list | tuple) else str(index)
            grid.append((label, dict(zip(names, row, strict=True))))
        grids.append(grid)
    return grids


def cases(module: ModuleType) -> list[Case]:
    """The module's contract cases, in definition order."""
    found = []
    for name, function in vars(module).items():
        if not name.startswith("test_") or not inspect.iscoroutinefunction(function):
            continue
        wanted = set(inspect.signature(function).parameters) - {"platform"}
        grids = _grids(function)
        given = {key for grid in grids for _, args in grid[:1] for key in args}
        if "platform" not in inspect.signature(function).parameters or wanted - given:
            continue  # needs a fixture only pytest has
        for combination in itertools.product(*grids):
            params: dict[str, Any] = {}
            for _, args in combination:
                params.update(args)
            labels = "-".join(label for label, _ in combination)
            found.append(Case(f"{name}[{labels}]" if labels else name, function, params))
    return found
