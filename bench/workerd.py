"""The worker on Cloudflare's own runtime, workerd (offline: workerd_dev/), against CPython.

- Import inside Pyodide: `import entry` timed inside a `workerd test` worker (a fresh
  isolate each sample), against `import pydantic, httpx` in the same Pyodide. Time does
  not advance while an isolate loads its modules, so the imports are timed in the test
  handler, where it does.
- A cold isolate: the whole `workerd test` process for a worker that imports `entry` when
  it loads, without and with a dedicated memory snapshot (what Cloudflare takes of a Python
  Worker at deploy, so a deployed cold start restores it instead of importing), against
  an empty Python worker.
- The first remote tool call of a cold isolate: a restored isolate connects to an MCP
  server on loopback, lists its tools and calls `search_vaults` with the real `mcp`
  client, importing the SDK on first use (as the worker does) or finding it in the
  snapshot; against the same connect, list and call on the warm isolate. And the
  restored cold start itself with the SDK in the snapshot, against entry's alone.
- Start to first answer: `albert serve --runtime workerd` (wrangler dev) from spawn to
  /healthz, and on to the first demo-planner answer in a new client's thread, against the
  same with the local runtime.
- CPU per demo turn: the CPU time of the workerd processes over N demo turns, against the
  local runtime's process over the same turns.
- Upload size: what wrangler uploads (src/ and the staged python_modules/), unpacked and
  gzip-compressed, against Cloudflare's Worker size limit.
"""

from __future__ import annotations

import asyncio
import gzip
import io
import os
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bench.core import BenchSizes, Row, Spread, ratio
from bench.stack import state_dir
from child_processes import descendants
from data_server.platform.app import platform_app
from tests.support.asgi_server import AsgiServer
from tests.support.chat_client import ChatClient, answer_text
from tests.support.mcp_test_server import InProcessMcpServer
from tests.support.runtime_process import RuntimeProcess
from workerd_dev import PROJECT_DIR, cache_dir
from workerd_dev.harness import Extras, run_in_workerd, run_workerd_test, write_worker
from workerd_dev.project import LOCAL_PACKAGES, stage
from workerd_dev.pyodide_bundle import Bundle, ensure_bundle
from workerd_dev.pyodide_compat import WORKER_SIZE_LIMIT, WORKER_SIZE_LIMIT_TEXT
from workerd_dev.tools import Tools, find_tools

BENCH = "workerd"
QUESTION = "What is PEPE?"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

_TIMED_IMPORT = """        import sys, time
        t = time.perf_counter()
        import {modules}
        report(ms=(time.perf_counter() - t) * 1000, modules=len(sys.modules))
"""
_NOTHING = "        report(ok=True)\n"


def _import_ms(tools: Tools, bundle: Bundle, modules_dir: Path, modules: str) -> float:
    run = run_in_workerd(tools, bundle, modules_dir, _TIMED_IMPORT.format(modules=modules))
    return float(run.results[0]["ms"])  # type: ignore[arg-type]


def import_rows(tools: Tools, bundle: Bundle, modules_dir: Path, samples: int) -> list[Row]:
    """`import entry` against `import pydantic, httpx`, inside workerd's Pyodide."""
    baseline = [_import_ms(tools, bundle, modules_dir, "pydantic, httpx") for _ in range(samples)]
    worker = [_import_ms(tools, bundle, modules_dir, "entry") for _ in range(samples)]
    base, figure = Spread.of(baseline), Spread.of(worker)
    return [
        Row(
            bench=BENCH,
            metric="import entry inside Pyodide (workerd)",
            unit="ms",
            figure=figure,
            baseline=base,
            baseline_label="import pydantic, httpx in the same Pyodide",
            ratio=ratio(figure, base),
            note=f"Pyodide {bundle.pyodide_version}; a fresh isolate per sample",
        )
    ]


def _snapshot_of(tools: Tools, bundle: Bundle, config: Path, folder: Path) -> tuple[str, ...]:
    """Save the worker's dedicated snapshot into `folder`; the options that restore it."""
    folder.mkdir()
    run_workerd_test(
        tools, bundle, config, "--python-save-snapshot", f"--python-snapshot-dir={folder}"
    )
    name = next(p.name for p in folder.iterdir())
    return f"--python-snapshot-dir={folder}", f"--python-load-snapshot={name}"


def cold_isolate_rows(tools: Tools, bundle: Bundle, modules_dir: Path, samples: int) -> list[Row]:
    """A `workerd test` process end to end, an empty worker against one importing entry,
    each started from scratch and restored from its dedicated snapshot."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        (folder / "empty").mkdir()
        (folder / "entry").mkdir()
        empty = write_worker(folder / "empty", _NOTHING, modules_dir)
        entry = write_worker(folder / "entry", _NOTHING, modules_dir, top_level="import entry")
        empty_restore = _snapshot_of(tools, bundle, empty, folder / "empty-snapshot")
        entry_restore = _snapshot_of(tools, bundle, entry, folder / "entry-snapshot")
        snapshot_bytes = sum(p.stat().st_size for p in (folder / "entry-snapshot").iterdir())

        def timed(config: Path, *extra: str) -> Spread:
            runs = [run_workerd_test(tools, bundle, config, *extra) for _ in range(samples)]
            return Spread.of([run.seconds * 1000 for run in runs])

        cold_base, cold = timed(empty), timed(entry)
        warm_base, warm = timed(empty, *empty_restore), timed(entry, *entry_restore)
    return [
        Row(
            bench=BENCH,
            metric="cold isolate, entry imported at load (workerd test, whole process)",
            unit="ms",
            figure=cold,
            baseline=cold_base,
            baseline_label="an empty Python worker",
            ratio=ratio(cold, cold_base),
            note="no snapshot: what wrangler dev does at every start",
        ),
        Row(
            bench=BENCH,
            metric="cold isolate restored from its dedicated memory snapshot",
            unit="ms",
            figure=warm,
            baseline=warm_base,
            baseline_label="an empty Python worker, restored too",
            ratio=ratio(warm, warm_base),
            note=(
                "what a deployed cold start does (python_dedicated_snapshot, on since "
                f"2025-10-16); entry's snapshot {snapshot_bytes / 2**20:.1f} MiB"
            ),
        ),
    ]


# A turn's MCP work: connect, list, call (the worker's own McpConnection, on the SDK).
_REMOTE_TURN = """        import time
        started = time.perf_counter()
        from albert.mcp.lazy_connection import connection_class
        McpConnection = await connection_class()
        loaded = time.perf_counter()

        async def remote_turn():
            conn = McpConnection(
                "vaults", MCP_URL, {}, on_lost=lambda _: None, on_tools_changed=lambda: None
            )
            await conn.connect(60)
            await conn.list_tools(60)
            result = await conn.call_tool("search_vaults", {"query": "usdc"})
            await conn.close()
            if result.is_error:
                raise RuntimeError(result.joined_text())

        await remote_turn()
        first = time.perf_counter()
        await remote_turn()
        warm = time.perf_counter()
        report(
            load_ms=(loaded - started) * 1000,
            first_ms=(first - started) * 1000,
            warm_ms=(warm - first) * 1000,
        )
"""
_SDK_AT_LOAD = "import albert.mcp.connection  # the SDK in the snapshot"


def remote_tool_rows(tools: Tools, bundle: Bundle, modules_dir: Path, samples: int) -> list[Row]:
    """A restored cold isolate's first remote tool result, the SDK imported on first use or
    kept in the snapshot, against the same calls warm; and the bare restore of each."""
    readings: dict[str, dict[str, list[float]]] = {}
    sizes: dict[str, float] = {}
    with InProcessMcpServer("vaults") as vaults, tempfile.TemporaryDirectory() as scratch:
        for kind, top_level in (
            ("lazy", "import entry"),
            ("snapshot", f"import entry\n{_SDK_AT_LOAD}"),
        ):
            got = readings.setdefault(kind, {})
            for job, body in (("restore", _NOTHING), ("remote", _REMOTE_TURN)):
                folder = Path(scratch) / f"{kind}-{job}"
                folder.mkdir()
                config = write_worker(
                    folder,
                    body,
                    modules_dir,
                    top_level=f"{top_level}\nMCP_URL = {vaults.url!r}",
                    extras=Extras(network=True),
                )
                restore = _snapshot_of(tools, bundle, config, folder / "snapshot")
                if job == "restore":
                    snapshot = folder / "snapshot"
                    sizes[kind] = sum(p.stat().st_size for p in snapshot.iterdir()) / 2**20
                for _ in range(samples):
                    run = run_workerd_test(tools, bundle, config, *restore)
                    if job == "restore":
                        got.setdefault("restore", []).append(run.seconds * 1000)
                        continue
                    for key, value in run.results[0].items():
                        got.setdefault(key, []).append(float(value))  # type: ignore[arg-type]
    lazy, kept = readings["lazy"], readings["snapshot"]
    restored, restored_base = Spread.of(kept["restore"]), Spread.of(lazy["restore"])
    rows = [
        Row(
            bench=BENCH,
            metric="cold isolate restored with the mcp SDK in its snapshot (whole process)",
            unit="ms",
            figure=restored,
            baseline=restored_base,
            baseline_label="the worker's snapshot (entry alone: the SDK imported on first use)",
            ratio=ratio(restored, restored_base),
            note=f"snapshots {sizes['snapshot']:.1f} MiB against {sizes['lazy']:.1f} MiB",
        )
    ]
    warm = Spread.of(lazy["warm_ms"] + kept["warm_ms"])
    for kind, label in (("lazy", "SDK imported on first use"), ("snapshot", "SDK in the snapshot")):
        first = Spread.of(readings[kind]["first_ms"])
        load = Spread.of(readings[kind]["load_ms"])
        rows.append(
            Row(
                bench=BENCH,
                metric=f"cold isolate to its first remote tool result ({label})",
                unit="ms",
                figure=first,
                baseline=warm,
                baseline_label="the same connect, list and call on the warm isolate",
                ratio=ratio(first, warm),
                note=f"of which loading the SDK {load.median:.0f} ms; the isolate restored",
            )
        )
    return rows


def _cpu_seconds(pids: set[int]) -> float:
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


def _serving_pids(process: RuntimeProcess) -> set[int]:
    """The processes that run the worker: workerd's, or the local runtime itself."""
    assert process.pid is not None
    if process.runtime == "local":
        return {process.pid}
    found = set()
    for pid in descendants(process.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"workerd" in cmdline and b"serve" in cmdline:
            found.add(pid)
    return found


@contextmanager
def _runtime(kind: str, platform_url: str) -> Iterator[tuple[RuntimeProcess, float]]:
    variables = {
        "ALBERT_MODE": "local",
        "PLATFORM_API_URL": platform_url,
        "MCP_DEFAULT_SERVER_URL": "",
        "CHAT_MESSAGES_PER_MINUTE": "1000000",
    }
    with state_dir(f"workerd-{kind}") as state:
        process = RuntimeProcess(state, variables, runtime=kind)
        started = time.monotonic()
        process.start()
        try:
            yield process, time.monotonic() - started
        finally:
            process.stop()


async def _answer(process: RuntimeProcess) -> float:
    """Seconds from a new client's session to the first demo answer in a new thread."""
    started = time.monotonic()
    async with ChatClient(process.url, process.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        frames = await client.turn(thread, QUESTION)
    if "PEPE" not in answer_text(frames):
        raise RuntimeError(f"the demo answer lacks the token: {answer_text(frames)[:200]}")
    return time.monotonic() - started


async def _turn_cpu(process: RuntimeProcess, turns: int) -> float:
    """CPU seconds per demo turn of the processes serving the worker."""
    async with ChatClient(process.url, process.ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        await client.turn(thread, QUESTION)  # warm: imports and first-use work done
        pids = _serving_pids(process)
        before = _cpu_seconds(pids)
        for _ in range(turns):
            await client.turn(thread, QUESTION)
        return (_cpu_seconds(pids) - before) / turns


async def serving_rows(samples: int, turns: int) -> list[Row]:
    """Start to /healthz, to the first answer, and CPU per turn, on both runtimes."""
    readings: dict[str, dict[str, list[float]]] = {}
    with AsgiServer(platform_app()) as platform:
        for kind in ("local", "workerd"):
            got = readings.setdefault(kind, {"healthy": [], "answer": [], "cpu": []})
            for _ in range(samples):
                with _runtime(kind, platform.url) as (process, healthy):
                    got["healthy"].append(healthy * 1000)
                    got["answer"].append((healthy + await _answer(process)) * 1000)
                    got["cpu"].append(await _turn_cpu(process, turns) * 1000)
    rows = []
    for key, metric, unit in (
        ("healthy", "start to /healthz 200 (albert serve --runtime workerd)", "ms"),
        ("answer", "start to the first answer (a new client, demo planner)", "ms"),
        ("cpu", f"CPU per demo turn, median of {turns}-turn runs", "ms"),
    ):
        figure, base = Spread.of(readings["workerd"][key]), Spread.of(readings["local"][key])
        rows.append(
            Row(
                bench=BENCH,
                metric=metric,
                unit=unit,
                figure=figure,
                baseline=base,
                baseline_label="the local runtime (CPython)",
                ratio=ratio(figure, base),
                note="workerd's processes only (not wrangler's Node.js)" if key == "cpu" else "",
            )
        )
    return rows


def _upload_files(modules_dir: Path) -> list[tuple[str, Path]]:
    files = [
        (p.relative_to(PROJECT_DIR / "src").as_posix(), p)
        for p in sorted((PROJECT_DIR / "src").rglob("*.py"))
        if "__pycache__" not in p.parts
    ]
    # The staged tree less what only local runs carry (the demo planner).
    local_only = {modules_dir / name for name in LOCAL_PACKAGES}
    files += [
        ("python_modules/" + p.relative_to(modules_dir).as_posix(), p)
        for p in sorted(modules_dir.rglob("*"))
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.suffix != ".pyc"
        and not local_only & set(p.parents)
    ]
    return files


def upload_rows(modules_dir: Path, standins: tuple[str, ...]) -> list[Row]:
    """The upload, unpacked and gzip-compressed, against the Worker size limit."""
    files = _upload_files(modules_dir)
    unpacked = sum(path.stat().st_size for _, path in files)
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, path in files:
            archive.add(path, arcname=name)
    compressed = len(gzip.compress(buffer.getvalue(), compresslevel=6))
    limit = Spread.of([WORKER_SIZE_LIMIT / 2**20])
    note = (
        f"{len(files)} files; {WORKER_SIZE_LIMIT_TEXT}; without "
        + ", ".join(standins)
        + " (stood in for offline; workerd_dev/pyodide_compat.py estimates them)"
    )
    figure = Spread.of([unpacked / 2**20])
    return [
        Row(
            bench=BENCH,
            metric="upload, unpacked (src/ + python_modules/)",
            unit="MiB",
            figure=figure,
            baseline=limit,
            baseline_label="Cloudflare's Worker size limit",
            ratio=ratio(figure, limit),
            target="≤ 0.5× the limit",
            met=unpacked <= WORKER_SIZE_LIMIT / 2,
            note=note,
        ),
        Row(
            bench=BENCH,
            metric="upload, gzip-compressed",
            unit="MiB",
            figure=Spread.of([compressed / 2**20]),
        ),
    ]


async def run(sizes: BenchSizes) -> list[Row]:
    """Every workerd figure, each against its baseline from the same run."""
    tools = find_tools()
    bundle = ensure_bundle(tools)
    with tempfile.TemporaryDirectory() as scratch:
        staged = stage(Path(scratch) / "stage", {}, PROJECT_DIR, cache_dir())
        modules_dir = staged.directory / "python_modules"
        samples = sizes.pick(3, 7)
        rows = await asyncio.to_thread(import_rows, tools, bundle, modules_dir, samples)
        rows += await asyncio.to_thread(cold_isolate_rows, tools, bundle, modules_dir, samples)
        rows += await asyncio.to_thread(remote_tool_rows, tools, bundle, modules_dir, samples)
        rows += upload_rows(modules_dir, staged.vendored.standins)
    rows += await serving_rows(sizes.pick(1, 3), sizes.pick(5, 20))
    return rows
