"""One JSON Schema document for the whole wire protocol, for clients in other languages."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import models_json_schema

from albert.protocol import http
from albert.protocol.frames import ClientFrame, ServerFrame

BODIES = [
    http.SessionRequest,
    http.SessionResponse,
    http.RevokeRequest,
    http.RevokeResponse,
    http.ThreadCreate,
    http.ThreadUpdate,
    http.Thread,
    http.ThreadPage,
    http.ThreadDetail,
    http.Message,
    http.ErrorBody,
]


def protocol_schema() -> dict[str, Any]:
    """Client frames, server frames and HTTP bodies, with shared definitions."""
    _, bodies = models_json_schema(
        [(m, "serialization") for m in BODIES], ref_template="#/$defs/{model}"
    )
    client = TypeAdapter(ClientFrame).json_schema(ref_template="#/$defs/{model}")
    server = TypeAdapter(ServerFrame).json_schema(ref_template="#/$defs/{model}")
    defs: dict[str, Any] = {}
    for part in (bodies, client, server):
        defs.update(part.pop("$defs", {}))
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Albert wire protocol",
        "$defs": {**defs, "ClientFrame": client, "ServerFrame": server},
    }
