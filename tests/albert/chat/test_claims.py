"""Claiming anonymous work: two real objects (SQLite files), the router's three steps.

Crashes are made where they hurt: after the import and before the commit, in the middle
of the import (half the rows written), and by a change to the anonymous object between
the steps. After each, both objects start again from their files and the claim is run
again: every thread, message, tool output and MCP config ends up exactly once in the
user's object, and the anonymous object ends empty, with the pointer.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from albert.auth.claim import claim_anonymous_work
from albert.auth.identify import Authenticator
from albert.auth.tokens import Identity, issue_token
from albert.chat.claims import CLOSE_SESSION_CLAIMED
from albert.chat.service import ChatService
from albert.composition import build_chat_service
from albert.mcp.configs import McpServerIn
from albert.settings import Settings
from albert.storage.threads import ToolOutputs
from albert.web import HttpRequest
from miniflare import install_shims
from tests.support.object_sql import object_sql

install_shims()

ENV = {"ALBERT_MODE": "local", "MCP_CONNECT_WAIT_SECONDS": "0"}
SETTINGS = Settings.from_env(ENV)
NOW = 1_900_000_000
ANON = Identity(client_id="c_" + "a" * 24, tenant="default", expires_at=NOW + 3600)
USER = Identity(client_id=ANON.client_id, tenant="default", expires_at=NOW + 3600, user_id="u1")


def token_of(identity: Identity) -> str:
    return issue_token(
        SETTINGS.signing_keys()[0],
        client_id=identity.client_id,
        tenant=identity.tenant,
        expires_at=identity.expires_at,
        issued_at_ms=NOW * 1000,
        user_id=identity.user_id,
    )


class Socket:
    def __init__(self) -> None:
        self.closed: tuple[int, str] | None = None

    def send(self, text: str) -> None:
        pass

    def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


class Hub:
    def __init__(self) -> None:
        self.open: list[Socket] = [Socket()]

    def sockets(self) -> list[Socket]:
        return [s for s in self.open if s.closed is None]


class Objects:
    """The two objects on their files, reached as the router reaches them (ChatObjects)."""

    def __init__(self, root: Path, http: httpx.AsyncClient) -> None:
        self._root = root
        self._http = http
        self.services: dict[str, ChatService] = {}
        self.hubs: dict[str, Hub] = {}
        self.calls: list[str] = []
        self._auth = Authenticator(SETTINGS)
        self.start()

    def start(self) -> None:
        """(Re)start both objects from their SQLite files, as after an eviction or crash."""
        for identity in (ANON, USER):
            name = identity.object_name
            path = self._root / (name.replace("/", "_") + ".sqlite")
            self.hubs[name] = Hub()
            self.services[name] = build_chat_service(
                sql=object_sql(path), hub=self.hubs[name], env=ENV, http=self._http
            )

    async def restart(self) -> None:
        for service in self.services.values():
            await service.close()
        self.start()

    async def post(self, object_name: str, path: str, *, token: str, body: bytes):
        self.calls.append(f"{object_name} {path}")
        request = HttpRequest(
            method="POST", path=path, headers={"authorization": f"Bearer {token}"}, body=body
        )
        identity = await self._auth.identify(request, NOW)  # the object checks its caller
        response = await self.services[object_name].handle_http(request, identity)
        return response.status, response.body

    @property
    def anon(self) -> ChatService:
        return self.services[ANON.object_name]

    @property
    def user(self) -> ChatService:
        return self.services[USER.object_name]


@pytest.fixture
async def objects(tmp_path: Path) -> AsyncIterator[Objects]:
    async with httpx.AsyncClient() as http:
        world = Objects(tmp_path, http)
        yield world
        for service in world.services.values():
            await service.close()


def seed_anonymous(service: ChatService) -> dict[str, int]:
    """Two threads with messages and a tool output, two MCP configs; returns the counts."""
    store = service.store
    for n in (1, 2):
        thread = store.create_thread(f"t_anon{n}", f"anonymous thread {n}").id
        store.add_message(
            message_id=f"m{n}",
            thread_id=thread,
            turn_id=f"m{n}",
            role="user",
            content=f"question {n}",
        )
        store.add_message(
            message_id=f"m{n}:r1:a1",
            thread_id=thread,
            turn_id=f"m{n}",
            role="assistant",
            content=f"answer {n}",
        )
    ToolOutputs(service_sql(service), _Clock()).save(
        call_id="call_0", thread_id="t_anon1", name="search_vaults", content="x" * 100
    )
    assert service.mcp is not None
    for name, port in (("vaults2", 9), ("shared", 10)):
        service.mcp.store.put(McpServerIn(name=name, url=f"http://127.0.0.1:{port}/mcp"))
    return {"threads": 2, "messages": 4, "tool_outputs": 1, "mcp": 2}


def seed_user(service: ChatService) -> None:
    """The account already has a thread, a message id that collides, and a same-named config."""
    store = service.store
    store.create_thread("t_user1", "from another device")
    store.add_message(
        message_id="m1",
        thread_id="t_user1",
        turn_id="m1",
        role="user",
        content="the account's own m1",
    )
    assert service.mcp is not None
    service.mcp.store.put(McpServerIn(name="shared", url="http://127.0.0.1:11/mcp"))


class _Clock:
    def now_ms(self) -> int:
        return NOW * 1000


def service_sql(service: ChatService):
    return service.store._sql  # the object's SQL, for seeding and counting


def count(service: ChatService, table: str) -> int:
    return int(service_sql(service).execute(f"SELECT COUNT(*) AS n FROM {table}")[0]["n"])


def assert_moved_exactly_once(world: Objects) -> None:
    user, anon = world.user, world.anon
    titles = sorted(t.title for t in user.store.list_threads(50)[0])
    assert titles == ["anonymous thread 1", "anonymous thread 2", "from another device"]
    assert count(user, "messages") == 5  # the account's one + the four moved
    assert count(user, "tool_outputs") == 1
    contents = sorted(
        r["content"] for r in service_sql(user).execute("SELECT content FROM messages")
    )
    assert contents == ["answer 1", "answer 2", "question 1", "question 2", "the account's own m1"]
    # Resending m1 in the moved thread is still recognised as the same message there.
    moved = {
        r["thread_id"]
        for r in service_sql(user).execute(
            "SELECT thread_id FROM messages WHERE content = 'question 1'"
        )
    }
    assert moved == {"t_anon1"}
    assert user.mcp is not None
    configs = {c.name: c.url for c in user.mcp.store.client_configs()}
    assert configs == {
        "shared": "http://127.0.0.1:11/mcp",  # the account's own keeps its name
        "shared-2": "http://127.0.0.1:10/mcp",  # the anonymous one of that name is kept too
        "vaults2": "http://127.0.0.1:9/mcp",
    }
    # The anonymous object is empty and points at the user's object.
    for table in ("threads", "messages", "tool_outputs", "mcp_servers"):
        assert count(anon, table) == 0, table
    assert anon.claims.claimed_by == USER.object_name


async def claim(world: Objects):
    return await claim_anonymous_work(
        world, anonymous=ANON, anonymous_token=token_of(ANON), user=USER, user_token=token_of(USER)
    )


async def test_a_claim_moves_everything_once_and_a_repeat_changes_nothing(objects) -> None:
    seed_anonymous(objects.anon)
    seed_user(objects.user)
    outcome = await claim(objects)
    assert (outcome.status, outcome.threads, outcome.mcp_servers) == ("claimed", 2, 2)
    assert_moved_exactly_once(objects)
    # The anonymous object's open socket was closed, and it now answers 410.
    socket = objects.hubs[ANON.object_name].open[0]
    assert socket.closed is not None and socket.closed[0] == CLOSE_SESSION_CLAIMED
    gone = await objects.anon.handle_http(HttpRequest(method="GET", path="/api/threads"), ANON)
    assert gone.status == 410 and json.loads(gone.body)["error"] == "session_claimed"
    # Again, and again after both objects restart: nothing moves twice.
    assert (await claim(objects)).status == "already_claimed"
    await objects.restart()
    assert (await claim(objects)).status == "already_claimed"
    assert_moved_exactly_once(objects)


class CrashAt(Exception):
    """The router died here."""


class Crashing(Objects):
    """Objects whose caller dies at a chosen step, once."""

    crash_before: str | None = None
    half_import: bool = False

    async def post(self, object_name: str, path: str, *, token: str, body: bytes):
        step = path.rsplit("/", 1)[-1]
        if step == self.crash_before:
            self.crash_before = None
            if step == "import" and self.half_import:
                await super().post(object_name, path, token=token, body=_half(body))
            raise CrashAt(step)
        return await super().post(object_name, path, token=token, body=body)


def _half(body: bytes) -> bytes:
    """The import cut off halfway: half the messages, no tool outputs, one config."""
    data = json.loads(body)
    threads = data["export"]["threads"]
    threads["messages"] = threads["messages"][: len(threads["messages"]) // 2]
    threads["tool_outputs"] = []
    data["export"]["mcp_servers"] = data["export"]["mcp_servers"][:1]
    return json.dumps(data).encode()


@pytest.fixture
async def crashing(tmp_path: Path) -> AsyncIterator[Crashing]:
    async with httpx.AsyncClient() as http:
        world = Crashing(tmp_path, http)
        yield world
        for service in world.services.values():
            await service.close()


@pytest.mark.parametrize("step", ["import", "commit"])
async def test_a_crash_before_a_step_then_a_restart_loses_and_doubles_nothing(
    crashing: Crashing, step: str
) -> None:
    seed_anonymous(crashing.anon)
    seed_user(crashing.user)
    crashing.crash_before = step
    with pytest.raises(CrashAt):
        await claim(crashing)
    if step == "commit":
        # The copies are in the account already; the originals are still where they were.
        assert count(crashing.user, "messages") == 5 and count(crashing.anon, "messages") == 4
    await crashing.restart()
    outcome = await claim(crashing)
    assert outcome.status == "claimed"
    assert_moved_exactly_once(crashing)


async def test_a_crash_in_the_middle_of_the_import(crashing: Crashing) -> None:
    seed_anonymous(crashing.anon)
    seed_user(crashing.user)
    crashing.crash_before, crashing.half_import = "import", True
    with pytest.raises(CrashAt):
        await claim(crashing)
    assert count(crashing.user, "messages") == 1 + 2  # half of it landed
    await crashing.restart()
    assert (await claim(crashing)).status == "claimed"
    assert_moved_exactly_once(crashing)


class Typing(Objects):
    """The anonymous browser writes between the import and the commit, once."""

    typed = False

    async def post(self, object_name: str, path: str, *, token: str, body: bytes):
        if path.endswith("/commit") and not self.typed:
            self.typed = True
            self.anon.store.add_message(
                message_id="m3",
                thread_id="t_anon2",
                turn_id="m3",
                role="user",
                content="typed meanwhile",
            )
        return await super().post(object_name, path, token=token, body=body)


async def test_work_done_between_the_steps_is_moved_too(tmp_path: Path) -> None:
    async with httpx.AsyncClient() as http:
        world = Typing(tmp_path, http)
        try:
            seed_anonymous(world.anon)
            outcome = await claim(world)
            assert outcome.status == "claimed"
            assert world.calls[-3:] == [
                f"{ANON.object_name} /internal/claim/export",
                f"{USER.object_name} /internal/claim/import",
                f"{ANON.object_name} /internal/claim/commit",
            ]
            assert len(world.calls) == 6  # the first commit was refused: export again
            rows = service_sql(world.user).execute("SELECT content FROM messages ORDER BY seq")
            assert [r["content"] for r in rows] == [
                "question 1",
                "answer 1",
                "question 2",
                "answer 2",
                "typed meanwhile",
            ]
            assert count(world.anon, "messages") == 0
        finally:
            for service in world.services.values():
                await service.close()


async def test_a_running_turn_leaves_the_claim_pending_until_it_ends(objects) -> None:
    seed_anonymous(objects.anon)
    journal = objects.anon.turns.journal
    journal.begin(turn_id="m9", thread_id="t_anon1", run="r1")
    outcome = await claim(objects)
    assert outcome.status == "pending" and "signing in again" in (outcome.detail or "")
    # The account has the copies already; the anonymous object still has everything.
    assert count(objects.user, "messages") == 4 and count(objects.anon, "messages") == 4
    journal.end("m9")
    assert (await claim(objects)).status == "claimed"
    assert count(objects.user, "messages") == 4 and count(objects.anon, "messages") == 0


async def test_each_step_is_only_for_its_own_caller(objects) -> None:
    seed_anonymous(objects.anon)
    wrong = [
        (ANON.object_name, "/internal/claim/export", token_of(USER)),
        (ANON.object_name, "/internal/claim/commit", token_of(USER)),
        (USER.object_name, "/internal/claim/import", token_of(ANON)),
    ]
    for name, path, token in wrong:
        status, _ = await objects.post(name, path, token=token, body=b"{}")
        assert status == 403, path
    status, _ = await objects.post(
        USER.object_name, "/internal/claim/import", token=token_of(USER), body=b'{"nope": 1}'
    )
    assert status == 422
    status, _ = await objects.post(
        ANON.object_name,
        "/internal/claim/commit",
        token=token_of(ANON),
        body=json.dumps({"digest": "0" * 64, "to": USER.object_name}).encode(),
    )
    assert status == 409  # a digest of nothing it holds: nothing is deleted
    assert count(objects.anon, "messages") == 4


async def test_an_object_claimed_by_another_account_stays_theirs(objects) -> None:
    seed_anonymous(objects.anon)
    assert (await claim(objects)).status == "claimed"
    other = Identity(client_id=ANON.client_id, tenant="default", expires_at=NOW + 60, user_id="u2")
    outcome = await claim_anonymous_work(
        objects,
        anonymous=ANON,
        anonymous_token=token_of(ANON),
        user=other,
        user_token=token_of(other),
    )
    assert outcome.status == "refused"
