"""Abuse limits through the real runtime: new sessions per address and a tenant's model
budget, both kept in the shared limiter (the LIMITER Durable Object per key)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.chat_client import ChatClient, answer_text
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import Reply, ScriptedModelServer

SESSIONS = 5
BUDGET = 4


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer(default=Reply(text=["ok"])) as server:
        yield server


@pytest.fixture(scope="module")
def runtime(
    tmp_path_factory: pytest.TempPathFactory, runtime_kind: str, model
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp(f"abuse-limits-{runtime_kind}")
    variables = {
        "ALBERT_MODE": "production",
        "MODEL_BASE_URL": model.base_url,
        "MCP_DEFAULT_SERVER_URL": "",
        "NEW_SESSIONS_PER_IP": str(SESSIONS),
        "NEW_SESSIONS_WINDOW_SECONDS": "3600",
        "MODEL_CALLS_PER_TENANT": str(BUDGET),
        "TENANTS": json.dumps({"acme": {"name": "Acme", "model_calls_per_window": 1}}),
    }
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


def test_new_sessions_per_address_are_limited_and_renewals_are_not(runtime, runtime_kind) -> None:
    made = [httpx.post(f"{runtime.url}/api/session") for _ in range(SESSIONS)]
    assert [r.status_code for r in made] == [201] * SESSIONS
    # The probe's 57 in 3 s: every one past the limit is refused, with a Retry-After.
    refused = [httpx.post(f"{runtime.url}/api/session") for _ in range(52)]
    assert {r.status_code for r in refused} == {429}
    assert int(refused[0].headers["retry-after"]) >= 1
    # A header claiming another address changes nothing: the edge sets it, not the client.
    # wrangler dev's entry worker sets it only when the client did not (miniflare's
    # entry.worker.js), unlike Cloudflare's edge; the local runtime behaves as the edge.
    if runtime_kind == "local":
        spoofed = httpx.post(
            f"{runtime.url}/api/session", headers={"cf-connecting-ip": "198.51.100.9"}
        )
        assert spoofed.status_code == 429
    # Renewing a valid token keeps its client and is not a new session.
    token = made[0].json()["token"]
    renewed = httpx.post(f"{runtime.url}/api/session", headers={"authorization": f"Bearer {token}"})
    assert renewed.status_code == 201
    assert renewed.json()["client_id"] == made[0].json()["client_id"]
    # A bad token does not count as a renewal.
    forged = httpx.post(f"{runtime.url}/api/session", headers={"authorization": "Bearer x.y"})
    assert forged.status_code == 429


def test_the_session_count_is_kept_by_the_limiter_object_not_the_process(runtime) -> None:
    runtime.restart()
    assert httpx.post(f"{runtime.url}/api/session").status_code == 429
    assert len(runtime.object_files("LimiterDurableObject")) >= 1


async def _turns_until_refused(client: ChatClient, thread: str, most: int) -> list[dict]:
    for _ in range(most):
        frames = await client.turn(thread, "hi")
        errors = [f for f in frames if f["type"] == "error"]
        if errors:
            return errors
    return []


async def test_the_model_budget_is_per_tenant_across_clients(runtime, model) -> None:
    # The address's session budget was spent above, so the clients of this test get
    # tokens made by hand with the runtime's own signing key.
    from albert.auth.tokens import issue_token, new_client_id, parse_key
    from tests.support.runtime_process import TEST_SIGNING_KEY

    def token(tenant: str) -> str:
        key = parse_key(TEST_SIGNING_KEY)
        return issue_token(
            key, client_id=new_client_id(), tenant=tenant, expires_at=2**31, issued_at_ms=0
        )

    before = len(model.requests)
    async with (
        ChatClient(runtime.url, runtime.ws_url, token=token("default")) as first,
        ChatClient(runtime.url, runtime.ws_url, token=token("default")) as second,
        ChatClient(runtime.url, runtime.ws_url, token=token("acme")) as acme,
    ):
        for client in (first, second, acme):
            await client.connect()
        one, two, three = [await c.new_thread() for c in (first, second, acme)]
        # Two clients of one tenant share its budget of BUDGET model calls.
        assert answer_text(await first.turn(one, "hi")) == "ok"
        assert answer_text(await second.turn(two, "hi")) == "ok"
        assert answer_text(await first.turn(one, "hi")) == "ok"
        assert answer_text(await second.turn(two, "hi")) == "ok"
        [limited] = await _turns_until_refused(second, two, 1)
        assert limited["code"] == "rate_limited" and limited["retryable"]
        assert "budget" in limited["message"]
        # A fresh client of the same tenant gets no fresh budget.
        async with ChatClient(runtime.url, runtime.ws_url, token=token("default")) as third:
            await third.connect()
            [again] = await _turns_until_refused(third, await third.new_thread(), 1)
            assert again["code"] == "rate_limited"
        assert len(model.requests) - before == BUDGET
        # Another tenant has a budget of its own (here 1 call, from its tenant config).
        assert answer_text(await acme.turn(three, "hi")) == "ok"
        [acme_limited] = await _turns_until_refused(acme, three, 1)
        assert acme_limited["code"] == "rate_limited"
    assert len(model.requests) - before == BUDGET + 1
