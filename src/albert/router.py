"""The worker router's decisions, free of platform types.

It answers health and session requests itself and, for every other API request,
names the client whose Durable Object must handle it.
"""

from __future__ import annotations

import re
import secrets

from pydantic import BaseModel, ConfigDict

from albert.protocol.http import SessionResponse
from albert.web import HttpRequest, HttpResponse

CLIENT_HEADER = "x-albert-client"
CLIENT_ID = re.compile(r"^c_[A-Za-z0-9_-]{16,64}$")


class Forward(BaseModel):
    """Send the request to this client's object."""

    model_config = ConfigDict(frozen=True)

    client_id: str


def new_client_id() -> str:
    """An unguessable client id."""
    return "c_" + secrets.token_urlsafe(18)


def route(request: HttpRequest) -> HttpResponse | Forward:
    """Answer the request here, or say which client's object gets it."""
    if request.path == "/healthz":
        return HttpResponse.json({"ok": True})
    if request.path == "/api/session":
        if request.method != "POST":
            return HttpResponse.error(405, "method_not_allowed", "use POST")
        return HttpResponse.json(SessionResponse(client_id=new_client_id()), status=201)
    if not request.path.startswith("/api/"):
        return HttpResponse.error(404, "not_found", "no such route")
    client_id = request.headers.get(CLIENT_HEADER) or request.query.get("client_id")
    if not client_id:
        return HttpResponse.error(401, "unauthorized", "missing client id: call POST /api/session")
    if not CLIENT_ID.match(client_id):
        return HttpResponse.error(401, "unauthorized", "malformed client id")
    return Forward(client_id=client_id)
