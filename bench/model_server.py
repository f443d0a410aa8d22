"""The scripted OpenAI-compatible model in a process of its own, answering by a fixed policy.

Run apart from the benchmark's clients so the model's own CPU time does not share an
interpreter (and its lock) with the code doing the timing:

    python -m bench.model_server --port P --policy text --tokens 1000
    python -m bench.model_server --port P --policy tools --steps 5

`text` answers every request with N short tokens. `tools` answers a turn's first
`steps - 1` requests with one `read_tool_result` call (an instant local tool) and the
last with a short text; the step is read from the request itself (tool messages after the
last user message), so any number of clients can share one server.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any

from child_processes import ChildProcess, answers_http
from tests.support.asgi_server import AsgiServer
from tests.support.ports import free_port
from tests.support.scripted_model import Reply, ScriptedModelServer, ScriptedToolCall

PROJECT_DIR = Path(__file__).resolve().parent.parent
INSTANT_TOOL = "read_tool_result"


def token_reply(tokens: int) -> Reply:
    """An answer of `tokens` short text chunks."""
    return Reply(text=[f"t{i} " for i in range(tokens)], completion_tokens=tokens)


def tool_step_of(request: dict[str, Any]) -> int:
    """How many tool results the current turn has seen (messages after the last user one)."""
    messages = request.get("messages", [])
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    return sum(1 for m in messages[last_user + 1 :] if m.get("role") == "tool")


class _PolicyReplies:
    """Stands in for the server's reply queue: each pop looks at the request just recorded."""

    def __init__(self, server: ScriptedModelServer, policy: str, tokens: int, steps: int) -> None:
        self._server = server
        self._policy = policy
        self._text = token_reply(tokens)
        self._steps = steps

    def __bool__(self) -> bool:
        return True

    def popleft(self) -> Reply:
        if self._policy == "text":
            return self._text
        # The request was appended just before this pop, with no await in between.
        done = tool_step_of(self._server.requests[-1])
        if done < self._steps - 1:
            call = ScriptedToolCall(
                name=INSTANT_TOOL, arguments={"call_id": f"bench-missing-{done}", "offset": 0}
            )
            return Reply(tool_calls=[call])
        return Reply(text=["Done."])


def serve(port: int, policy: str, tokens: int, steps: int) -> None:
    """Serve until SIGTERM/SIGINT."""
    server = ScriptedModelServer()
    # Only the newest request matters to the policy; keep memory flat over long runs.
    server.requests = deque(maxlen=4)  # type: ignore[assignment]
    server.replies = _PolicyReplies(server, policy, tokens, steps)  # type: ignore[assignment]
    # The parent picked the port, so it knows where to connect before we are up.
    server._http = AsgiServer(server._app, port=port)
    server.port = port
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    print(f"ready {port}", flush=True)
    stop.wait()
    server.stop()


class ModelProcess:
    """The policy model server as a child process on a free port (the project's runner)."""

    def __init__(self, policy: str = "text", tokens: int = 8, steps: int = 5) -> None:
        self.port = free_port()
        self.args = ["--policy", policy, "--tokens", str(tokens), "--steps", str(steps)]
        self._child: ChildProcess | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int:
        """The process id of the running server (for /proc readings)."""
        if self._child is None or self._child.pid is None:
            raise RuntimeError("model server not running")
        return self._child.pid

    def start(self, timeout: float = 20.0) -> ModelProcess:
        """Launch and wait until it answers."""
        self._child = ChildProcess(
            [sys.executable, "-m", "bench.model_server", "--port", str(self.port), *self.args],
            name="bench model server",
            env={"PYTHONPATH": f"{PROJECT_DIR}:{PROJECT_DIR / 'src'}"},
            grace=10.0,
        ).start()
        # Only our child's answer counts, not another server that took the port meanwhile.
        probe = answers_http(f"http://127.0.0.1:{self.port}/")
        self._child.wait_ready(probe, timeout, "up", port=self.port)
        return self

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after the grace."""
        child, self._child = self._child, None
        if child is not None:
            child.stop()

    def __enter__(self) -> ModelProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    """Command line of the model process."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--policy", choices=["text", "tools"], default="text")
    parser.add_argument("--tokens", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    serve(args.port, args.policy, args.tokens, args.steps)


if __name__ == "__main__":
    main()
