"""The router's requests to chat objects (the ChatObjects port) over the CHAT namespace."""

from __future__ import annotations

from typing import Any

from albert.cloudflare.http import post_to_object

# Requests between the worker and its objects never leave the platform; the host is
# only there because a Request needs a URL.
_INTERNAL_ORIGIN = "https://chat.internal"


class NamespaceChatObjects:
    """ChatObjects over a Durable Object namespace: the name picks the object."""

    def __init__(self, namespace: Any) -> None:
        self._namespace = namespace

    async def post(
        self, object_name: str, path: str, *, token: str, body: bytes
    ) -> tuple[int, bytes]:
        stub = self._namespace.get(self._namespace.idFromName(object_name))
        headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
        status, text = await post_to_object(stub, _INTERNAL_ORIGIN + path, body.decode(), headers)
        return status, text.encode()
