"""A loopback TCP proxy that can cut every open connection, as a network drop would.

Stopping it and starting it again on the same port looks, to a client, exactly
like the server behind it dying and coming back, but without the seconds a
Python server process takes to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket


def _closed_gate(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:`port` (0: a free one) that does not listen yet.

    A port picked by the kernel is bound without SO_REUSEADDR, so no other socket can
    share it; a port given again (a restart) needs it, as its last connections may
    linger in TIME_WAIT.
    """
    # IPPROTO_TCP, so asyncio sets TCP_NODELAY on its connections (see listening_socket).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock


class TcpProxy:
    """Forwards 127.0.0.1:port to a target port; `drop_all()` resets live connections."""

    def __init__(self, target_port: int, port: int | None = None, ready_at: float = 0.0) -> None:
        self.target_port = target_port
        # Held, bound but not listening, while the gate is closed: connections are refused
        # as by a server that is down, and no other server can take the port meanwhile.
        self._sock: socket.socket | None = _closed_gate(port or 0)
        self.port = int(self._sock.getsockname()[1])
        # Loop time before which connections are held open but unanswered: a server
        # that accepts early and takes a while to come up.
        self.ready_at = ready_at
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> TcpProxy:
        sock, self._sock = self._sock or _closed_gate(self.port), None
        # Now, as a listener normally is: its connections inherit it, so their TIME_WAIT
        # remnants do not keep a restart from binding the port again.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.listen()
        self._server = await asyncio.start_server(self._accept, sock=sock)
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.CancelledError):
            await self._serve(reader, writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(72_000):  # an hour at most; re-read each time: a test may move it
            if loop.time() >= self.ready_at:
                break
            await asyncio.sleep(0.05)
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}
        pumps = [
            asyncio.ensure_future(self._pump(reader, up_writer)),
            asyncio.ensure_future(self._pump(up_reader, writer)),
        ]
        for task in pumps:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for w in (writer, up_writer):
            self._close(w)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.CancelledError):
            for _ in range(1_000_000):
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()

    def _close(self, writer: asyncio.StreamWriter) -> None:
        self._writers.discard(writer)
        with contextlib.suppress(Exception):
            writer.transport.abort()

    def drop_all(self) -> int:
        """Abort every open connection at once; returns how many were cut."""
        writers = list(self._writers)
        for writer in writers:
            self._close(writer)
        return len(writers)

    @property
    def listening(self) -> bool:
        return self._server is not None

    async def stop(self) -> None:
        """Stop listening and cut every connection: to clients, the server is gone."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        if self._sock is not None:  # never opened: the reservation goes
            self._sock.close()
            self._sock = None
        self.drop_all()
        if server is not None:
            await server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
