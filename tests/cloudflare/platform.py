"""One runtime's view of a Durable Object, as the port conformance tests drive it.

Kept apart from conftest.py (which builds the local runtime's and the fakes' views) so the
contract modules import nothing else: they also run inside workerd
(tests/cloudflare/test_on_workerd.py), where neither exists.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Platform:
    """One runtime's view of a Durable Object, as the conformance tests drive it."""

    name: str
    ctx: Any
    alarms_fired: list[float]
    frames: Callable[[Any], list[tuple[str, Any]]]
    binary_message: Callable[[bytes], Any]
    wake: Callable[[], Any]
    # What the platform keeps the object alive for, after waitUntil calls.
    kept_alive: Callable[[], list[Any]] = list
    # The object's env, and in it a namespace of the object's own class whose objects
    # answer a request with its method and body ("POST hi"); None where there is none.
    env: Any = None
    namespace: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
