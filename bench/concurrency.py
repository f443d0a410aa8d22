"""Concurrency: many WebSocket clients, several turns each, against one local runtime.

Every client has its own session (so its own Durable Object), socket and thread, and asks
its turns one after the other with a short pause between them (a person reading the
answer, compressed). Latency is compared with one client alone on the same runtime.
Afterwards each thread is read back over HTTP: a turn counts as lost unless its done frame
arrived and both the user's message and a complete answer are stored. The runtime's
resident memory is sampled from /proc throughout.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time

import httpx

from bench.core import (
    BenchSizes,
    Row,
    Spread,
    Stopwatch,
    cpu_seconds,
    percentile,
    read_rss_kib,
)
from bench.model_server import ModelProcess
from bench.stack import running_runtime, runtime_pid, runtime_vars, state_dir
from tests.support.chat_client import ChatClient

P99_TARGET_MS = 50.0
RSS_PER_CLIENT_TARGET_MIB = 0.5
TURN_TIMEOUT_S = 120.0
SETUP_TIMEOUT_S = 60.0


class RssSampler:
    """Peak RSS of a process, read every `interval` seconds on a thread."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = read_rss_kib(self.pid)
            if rss is not None:
                self.peak_kib = max(self.peak_kib, rss)
            self._stop.wait(self.interval)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


class ClientRun:
    """One simulated user: its latencies and what it could not confirm."""

    def __init__(self) -> None:
        self.latencies_ms: list[float] = []
        self.errors: list[str] = []
        self.thread_id = ""
        self.answered = 0


class Gate:
    """Setup is throttled and finished by every client before any turn starts, so the
    measurement is of turns, not of a thousand objects being created at once."""

    def __init__(self, clients: int, setup_concurrency: int = 20) -> None:
        self.setup = asyncio.Semaphore(setup_concurrency)
        self.start = asyncio.Event()
        self._waiting = clients

    def arrived(self) -> None:
        """One client is ready (or gave up); the last one opens the gate."""
        self._waiting -= 1
        if self._waiting <= 0:
            self.start.set()


async def _one_client(
    url: str, ws_url: str, turns: int, pause_s: float, gate: Gate, run: ClientRun
) -> None:
    client = ChatClient(url, ws_url)
    client.http.timeout = httpx.Timeout(SETUP_TIMEOUT_S)
    try:
        try:
            async with gate.setup:
                await client.__aenter__()
                await client.connect()
                run.thread_id = await client.new_thread()
        finally:
            gate.arrived()
        await gate.start.wait()
        await _ask_turns(client, turns, pause_s, run)
    finally:
        await client.__aexit__(None, None, None)


async def _ask_turns(client: ChatClient, turns: int, pause_s: float, run: ClientRun) -> None:
    # Spread the first messages so the clients do not march in lockstep.
    await asyncio.sleep(random.uniform(0, pause_s))
    for index in range(turns):
        watch = Stopwatch()
        try:
            frames = await client.frames_until(
                "done",
                timeout=TURN_TIMEOUT_S,
                turn_id=await client.ask(run.thread_id, f"Question {index}"),
            )
        except (AssertionError, TimeoutError) as exc:
            run.errors.append(f"turn {index}: {exc}"[:200])
            continue
        run.latencies_ms.append(watch.ms)
        errors = [f for f in frames if f["type"] == "error"]
        if errors:
            run.errors.append(f"turn {index}: {errors[0]['code']}: {errors[0]['message']}"[:200])
        else:
            run.answered += 1
        await asyncio.sleep(random.uniform(0.5 * pause_s, 1.5 * pause_s))
    stored = await client.thread(run.thread_id, limit=200)
    users = sum(1 for m in stored["messages"] if m["role"] == "user")
    answers = sum(
        1 for m in stored["messages"] if m["role"] == "assistant" and m["status"] == "complete"
    )
    run.answered = min(run.answered, users, answers)


async def _single(url: str, ws_url: str, turns: int) -> list[float]:
    async with ChatClient(url, ws_url) as client:
        await client.connect()
        thread = await client.new_thread()
        out = []
        for index in range(turns + 2):
            watch = Stopwatch()
            await client.turn(thread, f"Question {index}")
            if index >= 2:
                out.append(watch.ms)
        return out


async def run(sizes: BenchSizes) -> list[Row]:
    """Single-client latency, then all clients at once."""
    clients = sizes.pick(100, 1000)
    turns = 5
    # Every user sends a message every few seconds: far busier than people are.
    pause_s = sizes.pick(1, 5)
    with (
        ModelProcess(policy="text", tokens=8) as model,
        state_dir("concurrency") as state,
        running_runtime(state, runtime_vars(model.base_url)) as runtime,
    ):
        pid = runtime_pid(runtime)
        single = await _single(runtime.url, runtime.ws_url, sizes.pick(10, 20))
        idle_kib = read_rss_kib(pid) or 0
        runs = [ClientRun() for _ in range(clients)]
        gate = Gate(clients)
        with RssSampler(pid) as rss:
            tasks = [
                asyncio.create_task(
                    _one_client(runtime.url, runtime.ws_url, turns, pause_s, gate, r)
                )
                for r in runs
            ]
            await asyncio.wait_for(gate.start.wait(), clients * SETUP_TIMEOUT_S)
            began = time.monotonic()
            runtime_cpu, own_cpu = cpu_seconds(pid), time.process_time()
            model_cpu = cpu_seconds(model.pid)
            done, pending = await asyncio.wait(tasks, timeout=turns * TURN_TIMEOUT_S)
            for task in pending:
                task.cancel()
            failures = [t.exception() for t in done if t.exception() is not None]
            wall_s = time.monotonic() - began
            runtime_cpu = cpu_seconds(pid) - runtime_cpu
            model_cpu = cpu_seconds(model.pid) - model_cpu
            own_cpu = time.process_time() - own_cpu
        peak_kib = rss.peak_kib
    latencies = [ms for r in runs for ms in r.latencies_ms]
    # A client's first turn also wakes its object (service, tools, first model connection).
    warm = [ms for r in runs for ms in r.latencies_ms[1:]] or [float("nan")]
    single_spread = Spread.of(single)
    base = single_spread.median
    added = [ms - base for ms in latencies] or [float("nan")]
    lost = clients * turns - sum(r.answered for r in runs)
    errors = [e for r in runs for e in r.errors] + [repr(f) for f in failures]
    for error in errors[:10]:
        # A lost turn must be explainable from the run's own output.
        print(f"  lost or failed: {error}", flush=True)
    p50, p99 = percentile(added, 50), percentile(added, 99)
    per_client_mib = (peak_kib - idle_kib) / 1024 / clients
    note = (
        f"{clients} clients × {turns} turns, {pause_s:g} s mean pause; {wall_s:.0f} s wall, "
        f"{len(latencies) / wall_s:.0f} turns/s; "
        f"turn p50 {percentile(latencies, 50):.0f} ms, p99 {percentile(latencies, 99):.0f} ms"
        if latencies
        else "no turn completed"
    )
    note += (
        f"; CPU during the turns: runtime {runtime_cpu / wall_s:.0%} of a core, "
        f"model {model_cpu / wall_s:.0%}, clients {own_cpu / wall_s:.0%}"
    )
    if latencies:
        # Steadier than the tail on a shared machine: what each turn cost the runtime.
        note += f"; runtime CPU per turn {runtime_cpu / len(latencies) * 1000:.2f} ms"
    if failures:
        note += f"; {len(failures)} clients failed: {failures[0]!r}"[:200]
    return [
        Row(
            bench="concurrency",
            metric="turns lost (no done frame, or not stored)",
            unit="turns",
            figure=Spread.of([float(lost)]),
            target="0",
            met=lost == 0,
            note=note,
        ),
        Row(
            bench="concurrency",
            metric="added latency per turn, p50",
            unit="ms",
            figure=Spread(median=p50, min=min(added), max=max(added), n=len(added)),
            baseline=single_spread,
            baseline_label="one client alone, turn latency",
        ),
        Row(
            bench="concurrency",
            metric="added latency per turn, p99",
            unit="ms",
            figure=Spread(median=p99, min=min(added), max=max(added), n=len(added)),
            baseline=single_spread,
            baseline_label="one client alone, turn latency",
            target=f"≤ {P99_TARGET_MS:g} ms",
            met=p99 <= P99_TARGET_MS,
            note=f"without each client's first turn: p99 {percentile(warm, 99) - base:.0f} ms",
        ),
        Row(
            bench="concurrency",
            metric="runtime peak RSS",
            unit="MiB",
            figure=Spread.of([peak_kib / 1024]),
            baseline=Spread.of([idle_kib / 1024]),
            baseline_label="after the single-client turns",
        ),
        Row(
            bench="concurrency",
            metric="runtime RSS per connected client (peak over idle)",
            unit="MiB",
            figure=Spread.of([per_client_mib]),
            target=f"≤ {RSS_PER_CLIENT_TARGET_MIB:g} MiB",
            met=per_client_mib <= RSS_PER_CLIENT_TARGET_MIB,
            note=f"{clients} clients connected at once, each with its own object and thread",
        ),
    ]
