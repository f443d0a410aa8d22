"""Storage: list 50 of 10,000 threads and load a 1,000-message thread through the object's
HTTP API, versus the bare sqlite3 queries on the same file.

The object's SQLite file is seeded directly through the project's ThreadStore (on the
runtime's own SqlStorage) while the runtime is stopped, then the runtime is started on
that state folder. The HTTP hop itself (GET /healthz: router only, no object) is measured
separately, and the target is judged on the time the object adds beyond that hop.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import httpx

from albert.cloudflare.sql import WorkersSql
from albert.protocol.http import ToolCallRecord
from albert.storage.migrations import THREADS, migrate
from albert.storage.threads import ThreadStore
from bench.core import BenchSizes, Row, Spread, Stopwatch, ratio
from bench.stack import running_runtime, runtime_vars, state_dir
from miniflare.storage import SqlStorage

TARGET_RATIO = 2.0
PAGE = 50
BIG_THREAD = "big-thread"
LIST_SQL = (
    "SELECT id, title, created_at, updated_at FROM threads "
    "ORDER BY updated_at DESC, id DESC LIMIT ?"
)
THREAD_SQL = "SELECT id, title, created_at, updated_at FROM threads WHERE id = ?"
MESSAGES_SQL = "SELECT * FROM messages WHERE thread_id = ? AND seq > ? ORDER BY seq LIMIT ?"


class StepClock:
    """A clock that moves 1 ms per reading, so every row has its own time."""

    def __init__(self, start_ms: int = 1_760_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        self._now += 1
        return self._now

    def monotonic(self) -> float:
        return self._now / 1000


def seed(path: Path, threads: int, messages: int) -> None:
    """Fill an object's SQLite file: `threads` threads, one of them with `messages` messages."""
    storage = SqlStorage(path)
    # Seeding speed is not what is measured; the runtime reopens the file with its defaults.
    storage.exec("PRAGMA synchronous=OFF")
    sql = WorkersSql(storage)
    migrate(sql, THREADS)
    store = ThreadStore(sql, StepClock())
    store.create_thread(BIG_THREAD, "A long research session")
    turn = 0
    while turn * 4 < messages:
        turn_id = f"turn{turn}"
        call = ToolCallRecord(
            id=f"call{turn}", name="search_vaults", arguments='{"query": "usdc", "chain": "base"}'
        )
        parts = [
            ("user", "What are the best USDC vaults on Base right now, and how risky are they?"),
            ("assistant", ""),
            ("tool", "vault " * 300),
            ("assistant", "Here are the five largest USDC vaults on Base by TVL. " * 15),
        ]
        for index, (role, content) in enumerate(parts):
            if turn * 4 + index >= messages:
                break
            store.add_message(
                message_id=f"m{turn}_{index}",
                thread_id=BIG_THREAD,
                turn_id=turn_id,
                role=role,
                content=content,
                tool_calls=[call] if index == 1 else None,
                tool_call_id=call.id if role == "tool" else None,
                name=call.name if role == "tool" else None,
                finish_reason="stop" if index == 3 else None,
            )
        turn += 1
    for index in range(threads - 1):
        store.create_thread(f"t{index:05d}", f"Research question number {index}")
    storage.close()


def _object_file(state: Path) -> Path:
    files = sorted((state / "do" / "ChatDurableObject").glob("*.sqlite"))
    if len(files) != 1:
        raise RuntimeError(f"expected one object file, found {files}")
    return files[0]


def _timed(samples: int, action: object) -> list[float]:
    out = []
    for _ in range(samples):
        watch = Stopwatch()
        action()  # type: ignore[operator]
        out.append(watch.ms)
    return out


async def run(sizes: BenchSizes) -> list[Row]:
    """List and load through HTTP and bare; the hop separately."""
    # Plain blocking calls: the sync client adds the least of its own to every request.
    return await asyncio.to_thread(measure, sizes)


def measure(sizes: BenchSizes) -> list[Row]:
    """The storage benchmark, synchronously."""
    threads = sizes.pick(2_000, 10_000)
    messages = 1_000
    repeats = sizes.pick(15, 40)
    variables = runtime_vars("http://127.0.0.1:9/v1", MAX_PAGE_SIZE=str(messages))
    with state_dir("storage") as state:
        with (
            running_runtime(state, variables) as runtime,
            httpx.Client(base_url=runtime.url) as http,
        ):
            # The first request makes the object, its file and its schema.
            token = http.post("/api/session", json={}).json()["token"]
            http.headers["authorization"] = f"Bearer {token}"
            http.post("/api/threads", json={}).raise_for_status()
        path = _object_file(state)
        seed(path, threads, messages)
        with (
            running_runtime(state, variables) as runtime,
            httpx.Client(base_url=runtime.url) as http,
        ):
            http.headers["authorization"] = f"Bearer {token}"
            bare = sqlite3.connect(f"file:{path}?mode=ro", uri=True)

            def http_list() -> None:
                body = http.get("/api/threads", params={"limit": PAGE}).json()
                assert len(body["threads"]) == PAGE, body

            def bare_list() -> None:
                assert len(bare.execute(LIST_SQL, (PAGE + 1,)).fetchall()) == PAGE + 1

            def http_load() -> None:
                body = http.get(f"/api/threads/{BIG_THREAD}", params={"limit": messages}).json()
                assert len(body["messages"]) == messages, len(body["messages"])

            def bare_load() -> None:
                assert bare.execute(THREAD_SQL, (BIG_THREAD,)).fetchone() is not None
                rows = bare.execute(MESSAGES_SQL, (BIG_THREAD, 0, messages + 1)).fetchall()
                assert len(rows) == messages

            def hop() -> None:
                http.get("/healthz").raise_for_status()

            for action in (hop, http_list, bare_list, http_load, bare_load):
                _timed(3, action)  # warm-up: object awake, pages cached
            hops, lists, bare_lists, loads, bare_loads = [], [], [], [], []
            for _ in range(repeats):  # interleaved, so drift hits every series alike
                hops += _timed(1, hop)
                lists += _timed(1, http_list)
                bare_lists += _timed(1, bare_list)
                loads += _timed(1, http_load)
                bare_loads += _timed(1, bare_load)
            bare.close()
    hop_spread = Spread.of(hops)
    rows = [
        Row(
            bench="storage",
            metric="HTTP hop: GET /healthz round trip (router, no object)",
            unit="ms",
            figure=hop_spread,
        )
    ]
    for metric, through, direct in (
        (f"list {PAGE} of {threads:,} threads", lists, bare_lists),
        (f"load a {messages:,}-message thread", loads, bare_loads),
    ):
        net = Spread.of([max(t - hop_spread.median, 0.0) for t in through])
        direct_spread = Spread.of(direct)
        net_ratio = ratio(net, direct_spread)
        raw_ratio = ratio(Spread.of(through), direct_spread)
        rows.append(
            Row(
                bench="storage",
                metric=f"{metric}, HTTP minus the hop",
                unit="ms",
                figure=net,
                baseline=direct_spread,
                baseline_label="bare sqlite3 on the same file",
                ratio=net_ratio,
                target=f"≤ {TARGET_RATIO:g}×",
                met=net_ratio is not None and net_ratio <= TARGET_RATIO,
                note=f"with the hop: {Spread.of(through).median:.2f} ms ({raw_ratio or 0:.1f}×)",
            )
        )
    return rows
