"""Cold import: the worker entry and the Durable Object module in a fresh interpreter,
versus `import pydantic, httpx` in a fresh interpreter.

Each sample is its own subprocess; the time is taken inside it around the imports only,
so interpreter start-up (the same for both) does not dilute the ratio. The MCP path (the
SDK-backed connection module, imported only once a server is configured) is timed on top
of the worker's imports, in the same subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.core import BenchSizes, Row, Spread, ratio

PROJECT_DIR = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.3

_PRELUDE = f"""
import json, sys, time
sys.path[:0] = [{str(PROJECT_DIR)!r}, {str(PROJECT_DIR / "src")!r}]
"""

BASELINE = (
    _PRELUDE
    + """
t = time.perf_counter()
import pydantic, httpx
print(json.dumps({"ms": (time.perf_counter() - t) * 1000}))
"""
)

WORKER = (
    _PRELUDE
    + """
import miniflare
miniflare.install_shims()
t = time.perf_counter()
import entry
import durable_objects.chat
worker_ms = (time.perf_counter() - t) * 1000
mcp_loaded = "mcp" in sys.modules
t = time.perf_counter()
import albert.mcp.connection
mcp_ms = (time.perf_counter() - t) * 1000
print(json.dumps({"ms": worker_ms, "mcp_ms": mcp_ms, "mcp_loaded": mcp_loaded}))
"""
)


def _env() -> dict[str, str]:
    # Both sides are timed with bytecode caches in place (a deployed worker does not
    # compile its sources on every start): with PYTHONDONTWRITEBYTECODE set in the
    # environment the warm-up would write none, and every sample would compile.
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run_script(script: str) -> Any:
    """The JSON the script prints last, run in a fresh interpreter."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_DIR,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"import failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _sample(script: str) -> dict[str, float]:
    return dict(_run_script(script))


def importtime_top(script: str, count: int = 15) -> list[tuple[str, int, int]]:
    """(module, self µs, cumulative µs) of the slowest imports by cumulative time, from
    `python -X importtime`."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", script],
        cwd=PROJECT_DIR,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative, name = line.removeprefix("import time:").split("|", 2)
        rows.append((name.strip(), int(self_us), int(cumulative)))
    return sorted(rows, key=lambda r: r[2], reverse=True)[:count]


async def run(sizes: BenchSizes) -> list[Row]:
    """Worker imports versus pydantic+httpx; the MCP path on top."""
    repeats = sizes.pick(3, 12)
    _sample(BASELINE)  # warm the file cache and bytecode caches
    _sample(WORKER)
    base, worker, mcp = [], [], []
    mcp_loaded = False
    for _ in range(repeats):
        base.append(_sample(BASELINE)["ms"])
        sample = _sample(WORKER)
        worker.append(sample["ms"])
        mcp.append(sample["mcp_ms"])
        mcp_loaded = mcp_loaded or bool(sample["mcp_loaded"])
    base_spread, worker_spread = Spread.of(base), Spread.of(worker)
    worker_ratio = ratio(worker_spread, base_spread)
    mcp_spread = Spread.of(mcp)
    return [
        Row(
            bench="cold_import",
            metric="import entry + durable_objects.chat (no MCP server configured)",
            unit="ms",
            figure=worker_spread,
            baseline=base_spread,
            baseline_label="import pydantic, httpx",
            ratio=worker_ratio,
            target=f"≤ {TARGET_RATIO:g}×",
            met=worker_ratio is not None and worker_ratio <= TARGET_RATIO,
            note="mcp imported by the worker itself!" if mcp_loaded else "mcp not imported",
        ),
        Row(
            bench="cold_import",
            metric="MCP path on top: import albert.mcp.connection (mcp SDK)",
            unit="ms",
            figure=mcp_spread,
            baseline=base_spread,
            baseline_label="import pydantic, httpx",
            ratio=ratio(mcp_spread, base_spread),
            note="paid once per isolate, off the event loop, when a server is configured",
        ),
    ]


# What the worker's import is made of, in import order: each step's CPU is what it adds to
# the steps before it, in one fresh interpreter (the first step is the baseline itself).
STEPS: list[tuple[str, str]] = [
    ("import pydantic, httpx (the baseline)", "import pydantic, httpx"),
    (
        "pydantic's BaseModel, Field, validators, TypeAdapter",
        "from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, "
        "field_validator, model_validator",
    ),
    ("asyncio", "import asyncio"),
    ("albert.protocol: frames, HTTP bodies", "import albert.protocol.frames, albert.protocol.http"),
    (
        "albert.settings, auth, admission",
        "import albert.settings, albert.auth.tokens, albert.auth.bearer, albert.auth.gateway, "
        "albert.limits.new_sessions",
    ),
    (
        "albert.analytics: service, endpoint (the catalog loads with the first event)",
        "import albert.analytics.service, albert.analytics.endpoint, albert.analytics.chat_events",
    ),
    (
        "albert.ai, albert.tools",
        "import albert.limits.model_budget, albert.ai.factory, albert.ai.tool_loop, "
        "albert.tools.local_tools",
    ),
    ("albert.mcp: config store", "import albert.mcp.config_store"),
    (
        "albert.mcp: manager (no per-server machinery, no API, no SDK)",
        "import albert.mcp.manager, albert.mcp.alarm_port, albert.mcp.oauth_store",
    ),
    ("albert.chat, albert.storage", "import albert.chat.service"),
    ("entry, durable_objects, platform glue", "import entry, durable_objects.chat"),
]


def import_steps(repeats: int) -> list[tuple[str, float]]:
    """(step, median CPU ms it adds) for STEPS, each sample a fresh interpreter."""
    timed = "".join(
        f"c = time.process_time()\n{code}\nout.append((time.process_time() - c) * 1000)\n"
        for _, code in STEPS
    )
    script = (
        _PRELUDE
        + "import miniflare\nminiflare.install_shims()\nout = []\n"
        + timed
        + "print(json.dumps(out))\n"
    )
    samples = [_run_script(script) for _ in range(repeats)]
    medians = [sorted(s[i] for s in samples)[len(samples) // 2] for i in range(len(STEPS))]
    return [(name, ms) for (name, _), ms in zip(STEPS, medians, strict=True)]


if __name__ == "__main__":
    # `python -m bench.cold_import [N]`: the worker's slowest imports, for profiling;
    # `python -m bench.cold_import --steps [N]`: the CPU each part adds, as baselines.
    if len(sys.argv) > 1 and sys.argv[1] == "--steps":
        steps = import_steps(int(sys.argv[2]) if len(sys.argv) > 2 else 7)
        base_ms = steps[0][1]
        for name, ms in steps:
            print(f"{ms:7.1f} ms CPU {ms / base_ms:5.2f}x  {name}")
        total = sum(ms for _, ms in steps)
        print(f"{total:7.1f} ms CPU {total / base_ms:5.2f}x  all (the benchmark's ratio, in CPU)")
        sys.exit(0)
    worker_only = WORKER.split("mcp_loaded =")[0]
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 25
    for module, own, cumulative in importtime_top(worker_only, limit):
        print(f"{cumulative / 1000:8.1f} ms cumulative {own / 1000:7.1f} ms self  {module}")
