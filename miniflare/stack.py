"""`albert dev`: the whole local stack with its embedded defaults."""

from __future__ import annotations

from pathlib import Path

from miniflare.server import run

LOCAL_DEFAULTS = {"ALBERT_MODE": "local"}


def run_stack(
    project_dir: Path, state_dir: Path, host: str, port: int, overrides: dict[str, str]
) -> None:
    """Start every part of the local stack and serve the browser chat."""
    values = {**LOCAL_DEFAULTS, **overrides}
    print(f"Albert local stack: open http://{host}:{port}/", flush=True)
    run(project_dir, state_dir, host, port, values)
