"""Claiming anonymous work at sign-in, the router's side: export, import, commit.

The steps and why a crash anywhere loses and doubles nothing are in
albert.chat.claims (the objects' side). Here the router runs them in order through
the ChatObjects port, each object called with a token for its own identity, and
starts again from the export when the anonymous object changed in between.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from albert.auth.tokens import Identity
from albert.protocol.http import ClaimOutcome

log = logging.getLogger(__name__)

ATTEMPTS = 3
RETRY_PAUSE_SECONDS = 0.2


class ChatObjects(Protocol):
    """Requests from the router to a client's or user's chat object."""

    async def post(
        self, object_name: str, path: str, *, token: str, body: bytes
    ) -> tuple[int, bytes]:
        """POST `body` to `path` of the named object with `token` as the bearer."""
        ...


class _ThreadsHead(BaseModel):
    model_config = ConfigDict(extra="ignore", defer_build=True)

    threads: list[dict[str, object]] = Field(default_factory=list)


class _ExportHead(BaseModel):
    """What the router reads of an export; the rest goes on to the user's object as is."""

    model_config = ConfigDict(extra="ignore", defer_build=True)

    claimed_by: str | None = None
    digest: str = ""
    threads: _ThreadsHead = Field(default_factory=_ThreadsHead)
    mcp_servers: list[dict[str, object]] = Field(default_factory=list)


async def claim_anonymous_work(
    objects: ChatObjects,
    *,
    anonymous: Identity,
    anonymous_token: str,
    user: Identity,
    user_token: str,
) -> ClaimOutcome:
    """Move the anonymous object's threads and MCP configs into the user's object."""
    source, target = anonymous.object_name, user.object_name
    for attempt in range(1, ATTEMPTS + 1):
        status, raw = await objects.post(
            source, "/internal/claim/export", token=anonymous_token, body=b"{}"
        )
        if status != 200:
            return _pending(f"the anonymous session could not be read (HTTP {status})")
        try:
            head = _ExportHead.model_validate_json(raw)
        except ValidationError:
            return _pending("the anonymous session sent an unreadable export")
        if head.claimed_by is not None:
            if head.claimed_by == target:
                return ClaimOutcome(status="already_claimed")
            return ClaimOutcome(status="refused", detail="claimed by another account already")
        body = b'{"source": ' + json.dumps(source).encode() + b', "export": ' + raw + b"}"
        status, _ = await objects.post(
            target, "/internal/claim/import", token=user_token, body=body
        )
        if status != 200:
            return _pending(f"the account could not take the threads (HTTP {status})")
        commit = json.dumps({"digest": head.digest, "to": target}).encode()
        status, answer = await objects.post(
            source, "/internal/claim/commit", token=anonymous_token, body=commit
        )
        if status == 200:
            log.info("claimed anonymous work: %d thread(s)", len(head.threads.threads))
            return ClaimOutcome(
                status="claimed",
                threads=len(head.threads.threads),
                mcp_servers=len(head.mcp_servers),
            )
        error = _error_code(answer)
        if status == 409 and error == "claimed_elsewhere":
            return ClaimOutcome(status="refused", detail="claimed by another account already")
        if status != 409 or attempt == ATTEMPTS:
            break
        # claim_changed or claim_busy: the session was used meanwhile; export again.
        await asyncio.sleep(RETRY_PAUSE_SECONDS * attempt)
    return _pending(
        "the anonymous session kept changing (or a reply was still running); its threads "
        "are in the account, and signing in again finishes the move"
    )


def _pending(detail: str) -> ClaimOutcome:
    log.warning("claim left pending: %s", detail)
    return ClaimOutcome(status="pending", detail=detail)


def _error_code(body: bytes) -> str | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value.get("error") if isinstance(value, dict) else None
