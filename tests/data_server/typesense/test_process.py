"""The Typesense child process: start, health, persistence across restarts, clean stop."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import httpx
import pytest

import data_server.typesense.process as process_module
from child_processes import ChildProcess
from data_server.typesense.process import TypesenseProcess, TypesenseStartError, free_port
from tests.typesense_fixture import TypesenseServer

KEY = "process-test-key"


def _headers(key: str) -> dict[str, str]:
    return {"X-TYPESENSE-API-KEY": key}


def test_shared_fixture_is_healthy(typesense_server: TypesenseServer) -> None:
    resp = httpx.get(f"{typesense_server.url}/health", timeout=5)
    assert resp.json() == {"ok": True}
    resp = httpx.get(f"{typesense_server.url}/collections", timeout=5)
    assert resp.status_code == 401  # the key is enforced
    resp = httpx.get(
        f"{typesense_server.url}/collections", headers=_headers(typesense_server.api_key), timeout=5
    )
    assert resp.status_code == 200


def test_start_stop_and_data_survives_restart(tmp_path: Path) -> None:
    data_dir = tmp_path / "ts"
    schema = {"name": "persist", "fields": [{"name": "title", "type": "string"}]}
    with TypesenseProcess(data_dir, KEY) as server:
        assert server.running
        assert server.url.startswith("http://127.0.0.1:")
        pid = server.pid
        r = httpx.post(f"{server.url}/collections", json=schema, headers=_headers(KEY), timeout=5)
        assert r.status_code == 201, r.text
        r = httpx.post(
            f"{server.url}/collections/persist/documents",
            json={"id": "1", "title": "kept across restarts"},
            headers=_headers(KEY),
            timeout=5,
        )
        assert r.status_code == 201, r.text
        url = server.url
    assert not server.running
    assert pid is not None
    # The port is released once stop() returns.
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/health", timeout=1)

    with TypesenseProcess(data_dir, KEY) as again:
        r = httpx.get(
            f"{again.url}/collections/persist/documents/1", headers=_headers(KEY), timeout=5
        )
        assert r.status_code == 200, r.text
        assert r.json()["title"] == "kept across restarts"
    assert (data_dir / "typesense.log").stat().st_size > 0


def test_a_write_it_answered_survives_a_sigkill(tmp_path: Path) -> None:
    # `albert dev` gives Typesense ~1 s to stop and then kills it: that must lose nothing.
    data_dir = tmp_path / "killed"
    schema = {"name": "kept", "fields": [{"name": "title", "type": "string"}]}
    with TypesenseProcess(data_dir, KEY) as server:
        r = httpx.post(f"{server.url}/collections", json=schema, headers=_headers(KEY), timeout=5)
        assert r.status_code == 201, r.text
        r = httpx.post(
            f"{server.url}/collections/kept/documents",
            json={"id": "1", "title": "written just before the kill"},
            headers=_headers(KEY),
            timeout=5,
        )
        assert r.status_code == 201, r.text
        assert server.child is not None
        server.child.kill()
    with TypesenseProcess(data_dir, KEY) as again:
        r = httpx.get(f"{again.url}/collections/kept/documents/1", headers=_headers(KEY), timeout=5)
        assert r.status_code == 200, r.text
        assert r.json()["title"] == "written just before the kill"


def test_busy_port_is_refused_not_mistaken_for_ours(
    typesense_server: TypesenseServer, tmp_path: Path
) -> None:
    port = int(typesense_server.url.rsplit(":", 1)[1])
    proc = TypesenseProcess(tmp_path / "busy", KEY, port=port)
    with pytest.raises(TypesenseStartError, match="already in use"):
        proc.start(timeout=20)
    assert not proc.running


def test_a_picked_port_taken_before_the_server_listens_is_picked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proc = TypesenseProcess(tmp_path / "raced", KEY)
    lost = proc.port
    # The race: the port was free when checked, and another server listened on it before
    # Typesense could.
    monkeypatch.setattr(process_module, "port_is_free", lambda port, host="": True)
    with socket.create_server(("127.0.0.1", lost)):
        try:
            proc.start(timeout=30)
            assert proc.port != lost
            assert httpx.get(f"{proc.url}/health", timeout=5).json() == {"ok": True}
        finally:
            proc.stop()
    assert "Address already in use" in proc.log_path.read_text()


def test_child_that_dies_reports_its_log_tail(tmp_path: Path) -> None:
    data_dir = tmp_path / "broken"
    data_dir.mkdir()
    # Typesense keeps its store in <data-dir>/db; a plain file there makes it exit at start-up.
    (data_dir / "db").write_text("not a directory")
    (data_dir / "meta").write_text("not a directory")
    proc = TypesenseProcess(data_dir, KEY)
    started = time.monotonic()
    with pytest.raises(TypesenseStartError, match="exited with code") as info:
        proc.start(timeout=20)
    assert time.monotonic() - started < 20
    assert "Typesense" in str(info.value).split("\n", 1)[1]  # the log tail is included
    assert not proc.running


def test_timeout_stops_the_child(tmp_path: Path) -> None:
    proc = TypesenseProcess(tmp_path / "slow", KEY)
    with pytest.raises(TypesenseStartError, match="not healthy after"):
        proc.start(timeout=0)
    assert not proc.running


def test_requires_api_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="api_key"):
        TypesenseProcess(tmp_path, "")


def test_free_port_is_bindable() -> None:
    import socket

    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_command_line_runs_until_sigterm(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    port = free_port()
    cli = ChildProcess(
        [
            sys.executable,
            "-m",
            "data_server.typesense",
            "--data-dir",
            str(tmp_path / "cli"),
            "--port",
            str(port),
            "--api-key",
            KEY,
        ],
        stdout=subprocess.PIPE,
        grace=15,
    )
    with cli:
        assert cli.popen.stdout is not None
        line = cli.popen.stdout.readline().decode()  # printed once healthy (start() is bounded)
        assert f"Typesense ready at http://127.0.0.1:{port}" in line, line
        assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=5).json() == {"ok": True}
        os.kill(cli.popen.pid, signal.SIGTERM)
        assert cli.popen.wait(timeout=15) == 0
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)


def test_server_is_stopped_when_the_interpreter_exits(tmp_path: Path) -> None:
    import subprocess
    import sys

    port = free_port()
    script = (
        "from pathlib import Path\n"
        "from data_server.typesense.process import TypesenseProcess\n"
        f"p = TypesenseProcess(Path({str(tmp_path / 'exit')!r}), {KEY!r}, port={port})\n"
        "p.start()\n"
        "print(p.pid, flush=True)\n"  # exits without stop()
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    pid = int(done.stdout.strip())
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
