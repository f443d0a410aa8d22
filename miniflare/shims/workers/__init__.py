"""Local stand-in for the Python Workers SDK (`from workers import ...`)."""

from __future__ import annotations

from typing import Any

from miniflare.http import Request, Response


class WorkerEntrypoint:
    """Base of the worker's default export."""

    def __init__(self, ctx: Any, env: Any) -> None:
        self.ctx = ctx
        self.env = env


class DurableObject:
    """Base of Durable Object classes."""

    def __init__(self, ctx: Any, env: Any) -> None:
        self.ctx = ctx
        self.env = env


__all__ = ["DurableObject", "Request", "Response", "WorkerEntrypoint"]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"the local runtime does not implement workers.{name}")
