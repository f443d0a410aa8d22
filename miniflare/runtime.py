"""The local runtime: the worker and its Durable Objects behind a real ASGI server."""

from __future__ import annotations

import asyncio
import importlib
import logging
import mimetypes
import re
import sys
from collections.abc import Awaitable, Coroutine, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from albert.request_bodies import MAX_REQUEST_BODY_BYTES, BoundedBody, check_head
from albert.security_headers import with_api_headers
from albert.web import BadRequest, HttpResponse
from miniflare import install_shims
from miniflare.asset_headers import CONFIG_FILES, HeaderRules
from miniflare.asset_routing import Redirect, route
from miniflare.config import WorkerConfig
from miniflare.http import Headers, Request, Response
from miniflare.objects import DurableObjectNamespace, ObjectHost
from miniflare.websockets import LocalWebSocket

log = logging.getLogger(__name__)

# What may stay unescaped in request.url; everything else (controls, spaces, non-ASCII
# bytes) is percent-encoded as a WHATWG URL parser would.
_URL_SAFE = "/%:@!$&'()*+,;=-._~"
_HOST = re.compile(r"(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?")

Scope = dict[str, Any]
Receive = Any
Send = Any


class LocalEnv:
    """`env`: vars, secrets and bindings as attributes; unknown names are absent."""

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.__dict__.update(values)


class LocalContext:
    """The `ctx` a WorkerEntrypoint gets."""

    def __init__(self, runtime: LocalRuntime) -> None:
        self._runtime = runtime

    def waitUntil(self, work: Awaitable[Any]) -> None:
        self._runtime.wait_until(work)

    def passThroughOnException(self) -> None:
        """Nothing to pass through to locally."""


class LocalAssets:
    """The assets binding (`env.ASSETS`): the worker's own reads of the static files."""

    def __init__(self, runtime: LocalRuntime) -> None:
        self._runtime = runtime

    async def fetch(self, resource: Any, /, **options: Any) -> Response:
        """The file a URL (or a Request) names, as static assets serve it; else a 404.

        The signature of the SDK's Fetcher wrapper (`workers.fetch`): one positional
        resource, the request's options as keywords.
        """
        url = resource if isinstance(resource, str) else str(resource.url)
        path = urlsplit(url).path or "/"
        found = self._runtime.asset_for(path)
        return found if found is not None else Response("Not Found", status=404)


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$")


class LocalRuntime:
    """Loads the worker named in wrangler.toml and serves it as an ASGI app."""

    def __init__(
        self, config: WorkerConfig, state_dir: Path, overrides: Mapping[str, str] | None = None
    ) -> None:
        self.config = config
        self.state_dir = state_dir
        self._overrides = dict(overrides or {})
        self._tasks: set[asyncio.Task[Any]] = set()
        # Events delivered to objects (WebSocket messages, alarms): cancelled on shutdown.
        self._events: set[asyncio.Task[Any]] = set()
        # Open WebSocket connections: the tasks serving them, and the object's end of each.
        self._connections: dict[asyncio.Task[Any], LocalWebSocket] = {}
        self.stopping = False
        self._drained = False
        self.hosts: dict[str, ObjectHost] = {}
        self.env: LocalEnv | None = None
        self._entrypoint: Any = None
        self._asset_headers = HeaderRules.load(config.assets_dir)
        self._worker_first = [_glob(p) for p in config.run_worker_first]

    # --- start and stop ------------------------------------------------------------

    def load(self) -> None:
        """Import the worker's main module and build env and bindings."""
        install_shims()
        main = self.config.main_path
        for path in (str(self.config.project_dir), str(main.parent)):
            if path not in sys.path:
                sys.path.insert(0, path)
        module = importlib.import_module(main.stem)
        install_outbound_transport()
        values: dict[str, Any] = {**self.config.vars, **self.config.secrets, **self._overrides}
        for binding in self.config.durable_objects:
            cls = getattr(module, binding.class_name)
            host = ObjectHost(self, binding.class_name, cls, self.state_dir / "do")
            self.hosts[binding.name] = host
            values[binding.name] = DurableObjectNamespace(host)
        if self.config.assets_binding and self.config.assets_dir is not None:
            values[self.config.assets_binding] = LocalAssets(self)
        self.env = LocalEnv(values)
        entry_cls = getattr(module, "Default", None)
        if entry_cls is None:
            raise NotImplementedError(
                "the local runtime needs a WorkerEntrypoint class named Default"
            )
        self._entrypoint = entry_cls(LocalContext(self), self.env)

    async def startup(self) -> None:
        """Load the worker (if not yet) and re-arm persisted alarms."""
        if self._entrypoint is None:
            self.load()
        for host in self.hosts.values():
            host.restore_alarms()

    async def shutdown(self, grace_seconds: float = 5.0) -> None:
        """Stop cleanly (once): see `drain`."""
        await self.drain(grace_seconds)

    async def drain(self, budget_seconds: float = 1.5) -> None:
        """Stop serving within `budget_seconds`, losing nothing that was stored.

        Running events (a turn is one) are cancelled, so each turn records its `cancelled`
        outcome and sends its done frame; then objects close their connections (their
        optional `shutdown()`, a local-runtime hook: workerd has no such event); then every
        WebSocket is closed with 1001 (going away); `waitUntil` work gets what is left of
        the budget; last, storage is closed (a WAL checkpoint: the files are complete).
        """
        if self._drained:
            return
        self._drained = True
        self.stopping = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget_seconds

        def left(share: float = 1.0) -> float:
            return max(0.0, (deadline - loop.time()) * share)

        events = [t for t in self._events if not t.done()]
        for task in events:
            task.cancel()
        await _wait(events, left(0.5))
        closers = [
            asyncio.ensure_future(_close_object(instance))
            for host in self.hosts.values()
            for instance in host.instances()
        ]
        await _wait(closers, left(0.4))
        for server in list(self._connections.values()):
            server.close(1001, "server shutting down")
        await _wait(list(self._connections), left(0.3))
        await _wait([t for t in self._tasks if not t.done()], left())
        for task in [*self._tasks, *self._events, *self._connections, *closers]:
            if not task.done():
                task.cancel()
        for host in self.hosts.values():
            host.close()
        # The objects' shared outbound pool (if any object fetched): its keep-alive
        # connections close with the runtime, not whenever the process ends.
        for pool_module in ("albert.outbound.shared_pool", "miniflare.outbound_transport"):
            outbound = sys.modules.get(pool_module)
            if outbound is not None:
                await outbound.close_shared_pool()

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run work in the background, keeping a reference until it ends."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def deliver(self, event: Awaitable[Any]) -> asyncio.Task[Any] | None:
        """Run one event of an object as its own task; none are delivered once stopping."""
        if self.stopping:
            if asyncio.iscoroutine(event):
                event.close()
            return None
        task = asyncio.ensure_future(self._deliver(event))
        self._events.add(task)
        task.add_done_callback(self._events.discard)
        return task

    def wait_until(self, work: Awaitable[Any]) -> None:
        """`ctx.waitUntil`: the work outlives the response."""

        async def run() -> None:
            try:
                await work
            except Exception:
                log.exception("waitUntil work failed")

        self.spawn(run())

    # --- ASGI ----------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        elif scope["type"] == "websocket":
            await self._websocket(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    await self.startup()
                except Exception as exc:
                    log.exception("worker failed to start")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _request(self, scope: Scope, body: bytes = b"") -> Request:
        headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]])
        # As on the platform: the edge sets the client's address; a client cannot.
        client = scope.get("client")
        headers["cf-connecting-ip"] = str(client[0]) if client else "127.0.0.1"
        host = headers.get("host") or ""
        if not _HOST.fullmatch(host):
            host = "127.0.0.1"
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        # request.url keeps the path percent-encoded, as a platform request's does: the
        # decoded `path` could turn %3F into a query or carry NUL and undecodable bytes.
        raw_path = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogateescape")
        path = quote(raw_path, safe=_URL_SAFE) or "/"
        query = quote(scope.get("query_string", b""), safe=_URL_SAFE + "?")
        url = f"{scheme}://{host}{path}" + (f"?{query}" if query else "")
        return Request(url, method=scope.get("method", "GET"), headers=headers, body=body)

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = _refused_head(scope)
        body = BoundedBody(MAX_REQUEST_BODY_BYTES)
        while refusal is None:
            message = await receive()
            try:
                body.add(message.get("body", b""))
            except BadRequest as exc:
                refusal = _refusal(exc)  # the rest is never read: the connection closes
                break
            if not message.get("more_body"):
                break
        if refusal is not None:
            await _answer(send, refusal)
            return
        asset = self._asset(scope)
        if asset is not None:
            response = asset
        else:
            try:
                response = await self._entrypoint.fetch(self._request(scope, body.value()))
            except Exception:
                log.exception("worker raised")
                response = Response("Internal Server Error", status=500)
        await _answer(send, response)

    def _asset(self, scope: Scope) -> Response | None:
        """Static assets are served before the worker runs, as Workers assets are, except
        on the paths `run_worker_first` gives the worker."""
        if scope.get("method") not in ("GET", "HEAD"):
            return None
        path = scope["path"]
        if any(pattern.match(path) for pattern in self._worker_first):
            return None
        query = scope.get("query_string", b"").decode("latin-1")
        return self.asset_for(path, query)

    def _is_asset(self, relative: str) -> bool:
        """Whether `relative` names a file the assets folder serves."""
        root = self.config.assets_dir
        if root is None or Path(relative).name in CONFIG_FILES:
            return False  # the platform reads the config files; it never serves them
        try:
            target = (root / relative).resolve()
            return target.is_relative_to(root) and target.is_file()
        except (OSError, ValueError):
            return False

    def asset_for(self, path: str, query: str = "") -> Response | None:
        """The static answer for `path` with its `_headers` (a file, or a 307 to the file's
        canonical path: miniflare.asset_routing), or None when it names no file."""
        root = self.config.assets_dir
        if root is None:
            return None
        # No file has a control character (or an undecodable byte) in its name: such a
        # path is the worker's to answer (404), not a reason for the file system to fail.
        if any(ord(c) < 0x20 or c in "\x7f\ufffd\\" for c in path):
            return None
        answer = route(path, self._is_asset)
        if answer is None:
            return None
        headers = {"cache-control": "no-cache", **self._asset_headers.for_path(path)}
        if isinstance(answer, Redirect):
            location = quote(answer.path, safe=_URL_SAFE) + (f"?{query}" if query else "")
            return Response(None, status=307, headers={**headers, "location": location})
        target = root / answer.relative
        content_type = mimetypes.guess_type(target.name)[0] or "application/octet-stream"
        if content_type.startswith("text/") or content_type.endswith(("javascript", "json")):
            content_type += "; charset=utf-8"
        return Response(target.read_bytes(), headers={"content-type": content_type, **headers})

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        first = await receive()
        if first["type"] != "websocket.connect":
            return
        if self.stopping:
            await send({"type": "websocket.close", "code": 1001, "reason": "server shutting down"})
            return
        try:
            response = await self._entrypoint.fetch(self._request(scope))
        except Exception:
            log.exception("worker raised on a WebSocket upgrade")
            response = Response("Internal Server Error", status=500)
        client: LocalWebSocket | None = response.web_socket
        if response.status != 101 or client is None or client.peer is None:
            await send(
                {
                    "type": "websocket.http.response.start",
                    "status": response.status,
                    "headers": [(k.encode(), v.encode()) for k, v in response.headers.items()],
                }
            )
            await send({"type": "websocket.http.response.body", "body": response.body})
            return
        server = client.peer
        owner = self._owner_of(server)
        await send({"type": "websocket.accept"})
        writer = asyncio.ensure_future(self._pump_out(server, send))
        connection = asyncio.current_task()
        if connection is not None:
            self._connections[connection] = server
        try:
            await self._pump_in(server, owner, receive)
        finally:
            if connection is not None:
                self._connections.pop(connection, None)
            server.mark_closed()
            await asyncio.wait([writer], timeout=2)
            writer.cancel()

    def _owner_of(self, server: LocalWebSocket) -> tuple[ObjectHost, Any]:
        if server.owner is None:
            raise NotImplementedError("only WebSockets accepted by a Durable Object are supported")
        class_name, object_id = server.owner
        host = next(h for h in self.hosts.values() if h.class_name == class_name)
        return host, object_id

    async def _pump_in(
        self, server: LocalWebSocket, owner: tuple[ObjectHost, Any], receive: Receive
    ) -> None:
        host, object_id = owner
        while True:
            message = await receive()
            if message["type"] == "websocket.receive":
                payload = message.get("text")
                if payload is None:
                    payload = message.get("bytes") or b""
                # Each event is its own task: like workerd, a handler waiting on I/O
                # does not hold back the next message (a cancel can reach a running turn).
                instance = host.instance(object_id)
                self.deliver(instance.webSocketMessage(server, payload))
            elif message["type"] == "websocket.disconnect":
                code = int(message.get("code", 1005))
                host.state(object_id).forget_socket(server)
                server.closed = True
                instance = host.instance(object_id)
                handler = getattr(instance, "webSocketClose", None)
                if handler is not None:
                    self.deliver(handler(server, code, message.get("reason", ""), code == 1000))
                return

    async def _deliver(self, event: Awaitable[Any]) -> None:
        try:
            await event
        except Exception:
            log.exception("WebSocket handler raised")

    async def _pump_out(self, server: LocalWebSocket, send: Send) -> None:
        while True:
            kind, value = await server.next_outgoing()
            try:
                if kind == "text":
                    await send({"type": "websocket.send", "text": value})
                elif kind == "bytes":
                    await send({"type": "websocket.send", "bytes": value})
                else:
                    code, reason = value
                    if code != 1006:
                        await send({"type": "websocket.close", "code": code, "reason": reason})
                    return
            except Exception:
                # The browser is gone; what the object sends now is dropped, as on the platform.
                return


async def _wait(tasks: list[asyncio.Task[Any]], seconds: float) -> None:
    if tasks:
        await asyncio.wait(tasks, timeout=seconds)


async def _close_object(instance: Any) -> None:
    close = getattr(instance, "shutdown", None)
    if close is None:
        return
    try:
        await close()
    except Exception:
        log.exception("an object failed to shut down")


def _refusal(exc: BadRequest) -> Response:
    """The runtime's refusal of a head or body, as the worker's own on Cloudflare words it
    (albert.request_bodies); the connection closes after it."""
    error = HttpResponse.error(exc.status, exc.error, exc.detail)
    headers = {
        **with_api_headers(error.headers),
        "content-length": str(len(error.body)),
        "connection": "close",
    }
    return Response(error.body, status=error.status, headers=headers)


def _refused_head(scope: Scope) -> Response | None:
    """400 for a head that frames its body twice, 413 for a declared body over the bound
    (albert.request_bodies.check_head), before any of the body is read."""
    headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope.get("headers", [])]
    try:
        check_head(headers, MAX_REQUEST_BODY_BYTES)
    except BadRequest as exc:
        return _refusal(exc)
    return None


async def _answer(send: Send, response: Response) -> None:
    headers = [(k.encode(), v.encode()) for k, v in response.headers.items()]
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})


def install_outbound_transport() -> None:
    """The objects of this runtime send through its lean pool (miniflare.outbound_transport)
    unless the environment names a proxy, which only httpx's own transport goes through."""
    from urllib.request import getproxies

    from albert.outbound.shared_pool import install_object_transport

    if any(key in ("http", "https", "all") for key in getproxies()):
        install_object_transport(None)
        return
    from miniflare.outbound_transport import SharedTransport, shared_asyncio_transport

    install_object_transport(lambda: SharedTransport(shared_asyncio_transport()))
