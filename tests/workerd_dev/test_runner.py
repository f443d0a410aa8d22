"""`albert serve --runtime workerd`: wrangler and both of its workerd processes stop with it,
on SIGTERM (cleanly, state kept) and when it is SIGKILLed (nothing left behind)."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx

from tests.support.process_guard import descendants, read_process, wait_gone
from tests.support.runtime_process import RuntimeProcess


def _tree(process: RuntimeProcess) -> tuple[set[int], list[str]]:
    assert process.pid is not None
    below = descendants(process.pid)
    lines = [info.cmdline for pid in below if (info := read_process(pid)) is not None]
    return below, lines


def test_sigterm_stops_wrangler_and_workerd_and_a_restart_keeps_the_threads(
    tmp_path: Path,
) -> None:
    with RuntimeProcess(tmp_path, {"ALBERT_MODE": "local"}, runtime="workerd") as process:
        below, lines = _tree(process)
        assert any("wrangler-dist/cli.js" in line for line in lines), lines
        assert any("workerd serve" in line for line in lines), lines
        token = httpx.post(f"{process.url}/api/session").json()["token"]
        auth = {"authorization": f"Bearer {token}"}
        # A fresh object's first request waits while the isolate loads the MCP SDK for the
        # default server (seconds inside Pyodide, more on a loaded machine).
        made = httpx.post(
            f"{process.url}/api/threads", json={"title": "kept"}, headers=auth, timeout=30
        )
        assert made.status_code == 201
        assert process.child is not None
        os.kill(process.child.popen.pid, signal.SIGTERM)
        assert process.child.popen.wait(timeout=20) == 0
        assert wait_gone(below, 5) == set()
        process.child = None
        process.start()
        listing = httpx.get(f"{process.url}/api/threads", headers=auth, timeout=30).json()
        assert [t["title"] for t in listing["threads"]] == ["kept"]


def test_sigkill_takes_wrangler_and_every_workerd_with_it(tmp_path: Path) -> None:
    with RuntimeProcess(tmp_path, {"ALBERT_MODE": "local"}, runtime="workerd") as process:
        below, lines = _tree(process)
        assert sum("workerd serve" in line for line in lines) >= 1, lines
        process.kill()  # SIGKILL to `albert` alone: no cleanup of its own can run
        assert wait_gone(below, 5) == set()
