"""Two data-server replicas over one PostgreSQL and one Typesense: the pipeline schedules
itself in `serve`, one run at a time across them, and both answer the same."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
from mcp import Client

from albert.search.typesense_client import TypesenseClient
from data_server.app import create_app
from data_server.settings import DataServerSettings
from data_server.store import open_store
from tests.data_server.mcp_server.servers import UvicornThread
from tests.support.ports import reserve
from tests.typesense_fixture import TypesenseServer, unique_name

RUN_TIMEOUT_SECONDS = 120.0


@contextmanager
def _replica(settings: DataServerSettings) -> Iterator[str]:
    sock = reserve()
    port = int(sock.getsockname()[1])
    server = UvicornThread(create_app(settings.model_copy(update={"port": port})), sock)
    try:
        server.start()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def _wait_for_finished_run(base_url: str) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
    with httpx.Client(base_url=base_url, timeout=30) as http:
        while time.monotonic() < deadline:
            pipeline = http.get("/healthz").json()["pipeline"]
            last = pipeline["last_run"]
            if last is not None and last["finished_at"] is not None:
                return pipeline
            time.sleep(0.5)
    raise AssertionError(f"no pipeline run finished within {RUN_TIMEOUT_SECONDS} s")


async def _tool(url: str, name: str, arguments: dict[str, Any]) -> Any:
    async with Client(url) as client:
        result = await client.call_tool(name, arguments)
    assert not result.is_error, result
    return result.structured_content


async def test_two_replicas_schedule_one_run_at_a_time_and_answer_alike(
    postgres_database: Callable[[], str], typesense_server: TypesenseServer
) -> None:
    url = postgres_database()
    collection = unique_name("replicas")
    settings = DataServerSettings(
        DATABASE_URL=url,
        TYPESENSE_URL=typesense_server.url,
        TYPESENSE_API_KEY=typesense_server.api_key,
        TYPESENSE_VAULTS_COLLECTION=collection,
        PIPELINE_CRON="* * * * * */2",  # every two seconds: both replicas tick
        PIPELINE_OFFLINE=True,
    )
    try:
        with ExitStack() as stack:
            first = stack.enter_context(_replica(settings))
            second = stack.enter_context(_replica(settings))
            health = _wait_for_finished_run(first)
            assert health["scheduled"] == settings.pipeline_cron
            assert health["stale"] is False and health["age_seconds"] < RUN_TIMEOUT_SECONDS
            with open_store(url) as store:
                with_history = store._rows("SELECT vault_id FROM history LIMIT 1")[0][0]
            # Both read the same store and the same index.
            answers = []
            for base in (first, second):
                mcp = base + settings.mcp_path
                answers.append(
                    (
                        await _tool(mcp, "vault_history", {"vault_id": with_history, "days": 365}),
                        await _tool(mcp, "analyze_risk", {"vault_id": with_history}),
                    )
                )
            # Later runs over the same recordings change nothing, so neither may the answers.
            assert answers[0] == answers[1]
            assert answers[0][0]["points"], answers[0][0]
            async with httpx.AsyncClient(timeout=30) as http:
                other = (await http.get(second + "/healthz")).json()["pipeline"]
            assert other["last_run"] is not None
        # Stopped: every run the two schedules made is in the log, and none overlapped.
        with open_store(url) as store:
            runs = sorted(store.runs(limit=100), key=lambda run: run.started_at)
        assert runs and all(run.finished_at is not None for run in runs)
        for earlier, later in itertools.pairwise(runs):
            assert earlier.finished_at is not None and later.started_at >= earlier.finished_at
    finally:
        async with TypesenseClient(typesense_server.url, typesense_server.api_key) as client:
            await client.drop_collection(collection)
