"""The pinned anvil runs with no network at all, writes nothing outside its log, and stops."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import data_server.localchain.anvil as anvil_module
from data_server.localchain.anvil import AnvilProcess, binary_path
from tests.localchain_fixture import require_anvil, rpc

# Run inside a network namespace with only loopback: any download or telemetry would fail.
_PROBE = """
import sys
from pathlib import Path
from data_server.localchain.anvil import AnvilProcess
with AnvilProcess("base", Path(sys.argv[1])) as node:
    import httpx
    answer = httpx.post(node.url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_chainId",
                                        "params": []}).json()
    print("chain id", int(answer["result"], 16))
"""


def _no_network_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None or shutil.which("ip") is None:
        return []
    probe = subprocess.run(
        [unshare, "-n", "ip", "link", "set", "lo", "up"], capture_output=True, timeout=10
    )
    return (
        [unshare, "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "--"]
        if (probe.returncode == 0)
        else []
    )


def test_anvil_starts_and_answers_inside_a_namespace_without_network(tmp_path: Path) -> None:
    require_anvil()
    prefix = _no_network_prefix()
    if not prefix:
        pytest.skip("this machine refuses `unshare -n`")
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [*prefix, sys.executable, "-c", _PROBE, str(tmp_path / "logs")],
        capture_output=True,
        timeout=60,
        env={**os.environ, "HOME": str(home), "PYTHONPATH": os.pathsep.join(sys.path)},
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert b"chain id 8453" in done.stdout
    # Nothing cached or configured in the home folder (no foundry config, no telemetry id).
    assert list(home.iterdir()) == []


def test_the_node_serves_its_chain_id_and_is_gone_after_stop(tmp_path: Path) -> None:
    require_anvil()
    node = AnvilProcess("ethereum", tmp_path).start()
    pid = node.pid
    try:
        assert int(str(rpc(node.url, "eth_chainId", [])), 16) == 1
        assert "--fork-url" not in node.command() and str(binary_path()) == node.command()[0]
    finally:
        node.stop()
    assert pid is not None and not Path(f"/proc/{pid}").exists()
    assert "Listening on 127.0.0.1" in node.log_path.read_text()


def test_a_picked_port_taken_before_the_node_listens_is_picked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_anvil()
    node = AnvilProcess("base", tmp_path)
    lost = node.port
    # The race: the port was free when checked, and another server listened on it first.
    monkeypatch.setattr(anvil_module, "port_is_free", lambda port, host="": True)
    with socket.create_server(("127.0.0.1", lost)):
        node.start()
        try:
            assert node.port != lost
            assert int(str(rpc(node.url, "eth_chainId", [])), 16) == 8453
        finally:
            node.stop()
    assert "Address already in use" in node.log_path.read_text()
