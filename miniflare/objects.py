"""Durable Object namespaces, ids, stubs and state in the local runtime."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import secrets
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from miniflare.http import Headers, Request, Response
from miniflare.storage import DurableObjectStorage, JsArray, close_all
from miniflare.websockets import LocalWebSocket

if TYPE_CHECKING:
    from miniflare.runtime import LocalRuntime

log = logging.getLogger(__name__)
ALARM_RETRIES = 3
# Bytes each object's SQLite database may hold, as the platform limits an object's storage
# (unset: no limit). A write past it fails as on a full disk, so storage failures can be
# tried against the real runtime.
STORAGE_LIMIT_ENV = "ALBERT_LOCAL_OBJECT_MAX_BYTES"


def storage_limit() -> int | None:
    """The per-object storage limit from the environment, if one is set."""
    value = os.environ.get(STORAGE_LIMIT_ENV, "").strip()
    return int(value) if value else None


class DurableObjectId:
    """A 64-hex-digit object id; ids from the same name are equal, as on the platform."""

    def __init__(self, hex_id: str, name: str | None = None) -> None:
        self._hex = hex_id
        self.name = name

    def toString(self) -> str:
        return self._hex

    def equals(self, other: DurableObjectId) -> bool:
        return self._hex == other._hex

    def __str__(self) -> str:
        return self._hex


def _not_of_type(position: int, kind: str) -> str:
    return (
        f"Failed to execute 'acceptWebSocket' on 'DurableObjectState': "
        f"parameter {position} is not of type '{kind}'."
    )


class DurableObjectState:
    """`ctx` of a Durable Object: id, storage, sockets, waitUntil."""

    def __init__(
        self,
        runtime: LocalRuntime,
        class_name: str,
        object_id: DurableObjectId,
        storage: DurableObjectStorage,
    ) -> None:
        self.id = object_id
        self.storage = storage
        self._runtime = runtime
        self._class_name = class_name
        self._sockets: list[LocalWebSocket] = []

    def acceptWebSocket(self, ws: LocalWebSocket, tags: JsArray | None = None) -> None:
        """Take `ws` into the object's keeping, with `tags` as a JS array (`to_js`).

        workerd refuses a Python list (it crosses as a proxy, not an Array): so does this.
        """
        if not isinstance(ws, LocalWebSocket):
            raise TypeError(_not_of_type(1, "WebSocket"))
        if tags is not None and not isinstance(tags, JsArray):
            raise TypeError(_not_of_type(2, "Array"))
        ws.tags = [str(tag) for tag in tags or []]
        ws.owner = (self._class_name, self.id)
        self._sockets.append(ws)

    def getWebSockets(self, tag: str | None = None) -> list[LocalWebSocket]:
        """The accepted sockets whose connection has not ended, as workerd lists them: one
        we started closing (readyState CLOSING) is listed until the peer answers."""
        return [ws for ws in self._sockets if not ws.gone and (tag is None or tag in ws.tags)]

    def forget_socket(self, ws: LocalWebSocket) -> None:
        """The socket closed for good."""
        if ws in self._sockets:
            self._sockets.remove(ws)

    def waitUntil(self, work: Awaitable[Any]) -> None:
        self._runtime.wait_until(work)

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"the local runtime does not implement ctx.{name}")


class ObjectHost:
    """One Durable Object class: its instances (at most one per id) and their alarms."""

    def __init__(self, runtime: LocalRuntime, class_name: str, cls: type, state_dir: Path) -> None:
        self._runtime = runtime
        self.class_name = class_name
        self._cls = cls
        self._dir = state_dir / class_name
        self._instances: dict[str, Any] = {}
        self._states: dict[str, DurableObjectState] = {}
        self._alarm_handles: dict[str, asyncio.TimerHandle] = {}

    def id_from_name(self, name: str) -> DurableObjectId:
        digest = hashlib.sha256(f"{self.class_name}:{name}".encode()).hexdigest()
        return DurableObjectId(digest, name)

    def instance(self, object_id: DurableObjectId) -> Any:
        """The live instance for an id, constructed on first use (never twice)."""
        key = object_id.toString()
        found = self._instances.get(key)
        if found is not None:
            return found
        state = self._states.get(key)
        if state is None:
            storage = DurableObjectStorage(
                self._dir / f"{key}.sqlite",
                lambda when, k=key: self._schedule_alarm(k, when),
                storage_limit(),
            )
            state = DurableObjectState(self._runtime, self.class_name, object_id, storage)
            self._states[key] = state
        # After an eviction the new instance gets the same state: hibernated sockets,
        # open storage and alarms outlive the instance, as on the platform.
        instance = self._cls(state, self._runtime.env)
        self._instances[key] = instance
        return instance

    def instances(self) -> list[Any]:
        """The live instances of this class."""
        return list(self._instances.values())

    def evict(self, object_id: DurableObjectId) -> None:
        """Drop the instance as hibernation would; its sockets and storage stay."""
        self._instances.pop(object_id.toString(), None)

    def state(self, object_id: DurableObjectId) -> DurableObjectState:
        self.instance(object_id)
        return self._states[object_id.toString()]

    def restore_alarms(self) -> None:
        """Re-arm alarms persisted by an earlier run."""
        if not self._dir.exists():
            return
        for alarm_file in self._dir.glob("*.alarm.json"):
            key = alarm_file.name.removesuffix(".alarm.json")
            storage = DurableObjectStorage(self._dir / f"{key}.sqlite", lambda _when: None)
            when = storage.stored_alarm()
            storage.sql.close()
            if when is not None:
                self._schedule_alarm(key, when)

    def _schedule_alarm(self, key: str, when: int | None) -> None:
        handle = self._alarm_handles.pop(key, None)
        if handle is not None:
            handle.cancel()
        if when is None:
            return
        delay = max(0.0, when / 1000 - time.time())
        loop = asyncio.get_running_loop()
        self._alarm_handles[key] = loop.call_later(
            delay, lambda: self._runtime.deliver(self._fire_alarm(key, when))
        )

    async def _fire_alarm(self, key: str, when: int) -> None:
        self._alarm_handles.pop(key, None)
        object_id = DurableObjectId(key)
        instance = self.instance(object_id)
        storage = self._states[key].storage
        for attempt in range(1, ALARM_RETRIES + 1):
            try:
                await instance.alarm()
                break
            except Exception:
                # The platform retries a failing alarm with backoff; so do we, briefly.
                log.exception(
                    "alarm of %s/%s failed (attempt %d)", self.class_name, key[:8], attempt
                )
                await asyncio.sleep(0.1 * 2**attempt)
        storage.clear_fired_alarm(when)

    def close(self) -> None:
        """Cancel the pending alarms and close every object's storage (the caller blocks
        meanwhile: no event of an object runs while its file closes)."""
        for handle in self._alarm_handles.values():
            handle.cancel()
        close_all([state.storage.sql for state in self._states.values()])
        self._instances.clear()
        self._states.clear()


class DurableObjectStub:
    """What `namespace.get(id)` returns: requests go to that one instance."""

    def __init__(self, host: ObjectHost, object_id: DurableObjectId) -> None:
        self._host = host
        self.id = object_id
        self.name = object_id.name

    async def fetch(self, resource: Request | str, /, **options: Any) -> Response:
        """`stub.fetch(request)`, or `stub.fetch(url, method=…, headers=…, body=…)`.

        The Workers SDK's signature (its stub wrapper calls `workers.fetch`): one
        positional resource, the request's options as keywords. A JS-style
        `fetch(url, init)` is a TypeError here as it is on Cloudflare.
        """
        if isinstance(resource, str):
            body = options.get("body") or b""
            resource = Request(
                resource,
                method=str(options.get("method") or "GET"),
                headers=Headers(dict(options.get("headers") or {})),
                body=body.encode() if isinstance(body, str) else bytes(body),
            )
        instance = self._host.instance(self.id)
        return await instance.fetch(resource)


class DurableObjectNamespace:
    """The `env.CHAT`-style binding of one Durable Object class."""

    def __init__(self, host: ObjectHost) -> None:
        self._host = host

    def idFromName(self, name: str) -> DurableObjectId:
        return self._host.id_from_name(name)

    def idFromString(self, hex_id: str) -> DurableObjectId:
        if len(hex_id) != 64 or any(c not in "0123456789abcdef" for c in hex_id):
            raise TypeError("Invalid Durable Object ID: must be 64 hex digits")
        return DurableObjectId(hex_id)

    def newUniqueId(self) -> DurableObjectId:
        return DurableObjectId(secrets.token_hex(32))

    def get(self, object_id: DurableObjectId) -> DurableObjectStub:
        return DurableObjectStub(self._host, object_id)

    def getByName(self, name: str) -> DurableObjectStub:
        return self.get(self.idFromName(name))

    def __getattr__(self, name: str) -> Any:
        raise NotImplementedError(f"the local runtime does not implement namespace.{name}")
