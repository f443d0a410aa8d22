"""What every stand-in name does when used: say so, loudly, and refuse."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

STANDIN_CALLED = "ALBERT_WORKERD_STANDIN_CALLED"


class StandInCalled(RuntimeError):
    """A stand-in was used: the code path needs the real package."""


def refuse(name: str) -> NoReturn:
    """Report the use of `name` on stderr (the run's log) and raise StandInCalled."""
    message = (
        f"{STANDIN_CALLED}: {name} is a stand-in on workerd offline (cryptography has no "
        "Pyodide build reachable offline); this code path needs the real package"
    )
    print(message, file=sys.stderr, flush=True)
    raise StandInCalled(message)


class StandIn:
    """A class whose instances cannot be made: making one is refused."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        refuse(f"{type(self).__module__}.{type(self).__qualname__}")
