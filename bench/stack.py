"""The pieces a benchmark runs against: the local runtime as a process, and its clients."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.runtime_process import RuntimeProcess

# High enough that no benchmark client is ever throttled; the limiter still runs.
UNTHROTTLED = "1000000"


def runtime_vars(model_url: str, **extra: str) -> dict[str, str]:
    """Vars of a benchmark runtime: the given model, no MCP server, no rate limiting."""
    return {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model_url,
        # Nothing listens here; no benchmark calls a platform tool.
        "PLATFORM_API_URL": "http://127.0.0.1:9/platform",
        "MCP_DEFAULT_SERVER_URL": "",
        "CHAT_MESSAGES_PER_MINUTE": UNTHROTTLED,
        "MCP_CHANGES_PER_MINUTE": UNTHROTTLED,
        **extra,
    }


@contextmanager
def state_dir(prefix: str) -> Iterator[Path]:
    """A fresh state folder, removed afterwards (under $BENCH_STATE_ROOT when set, e.g. a
    tmpfs, to tell disk flushes from CPU)."""
    root = os.environ.get("BENCH_STATE_ROOT") or None
    with tempfile.TemporaryDirectory(prefix=f"albert-bench-{prefix}-", dir=root) as folder:
        yield Path(folder)


@contextmanager
def running_runtime(state: Path, variables: dict[str, str]) -> Iterator[RuntimeProcess]:
    """`albert serve` on a free port over `state`, stopped on exit."""
    process = RuntimeProcess(state, variables)
    process.start(timeout=60)
    try:
        yield process
    finally:
        process.stop()


def runtime_pid(process: RuntimeProcess) -> int:
    """The process id of a running runtime (for /proc readings)."""
    if process.pid is None:
        raise RuntimeError("runtime not running")
    return process.pid
