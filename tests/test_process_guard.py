"""The session guard fails a run that leaves a process behind, even one that detached
itself, and a SIGTERM to a session still stops what its fixtures started."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.support.process_guard import is_alive, wait_gone

ROOT = Path(__file__).resolve().parents[1]

LEAKY_TEST = '''
import os, subprocess, sys, time
from pathlib import Path

DAEMON = """
import os, sys, time
if os.fork():
    os._exit(0)          # the middle process ends: the daemon is reparented away from pytest
os.setsid()              # and leaves the session and process group too
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(600)
"""

def test_leaves_a_daemon_behind():
    pid_file = Path({pid_file!r})
    subprocess.run([sys.executable, "-c", DAEMON, str(pid_file)], check=True, timeout=30)
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    daemon = int(pid_file.read_text())
    ppid = int(open(f"/proc/{{daemon}}/stat").read().rsplit(")", 1)[1].split()[1])
    assert ppid != os.getpid()
'''

CLEAN_TEST = """
import subprocess, sys

def test_stops_what_it_starts():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    child.kill()
    child.wait()
"""


def run_inner(tmp_path: Path, code: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_inner.py").write_text(textwrap.dedent(code))
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "tests.support.process_guard",
            "-p",
            "no:cacheprovider",
            str(tmp_path / "test_inner.py"),
        ],
        cwd=tmp_path,
        # The outer session's marker is inherited: should the inner guard miss the daemon,
        # this session's guard still finds it.
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_run_that_leaves_a_detached_process_fails_and_the_process_is_ended(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "daemon.pid"
    done = run_inner(tmp_path, LEAKY_TEST.format(pid_file=str(pid_file)))
    daemon = int(pid_file.read_text())
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "1 passed" in output  # the test itself passed: the guard failed the run
    assert "process guard: 1 process(es) of this test session survived it" in output
    assert f"pid {daemon}" in output
    assert wait_gone([daemon], 5) == set() and not is_alive(daemon)


def test_a_run_that_stops_what_it_starts_passes(tmp_path: Path) -> None:
    done = run_inner(tmp_path, CLEAN_TEST)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "process guard" not in output


FIXTURE_TEST = '''
import sys, time
import pytest
from child_processes import ChildProcess

GRACEFUL = """
import pathlib, signal, sys, time
def bye(*_):
    pathlib.Path(sys.argv[1]).write_text("graceful")
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
pathlib.Path(sys.argv[2]).write_text("ready")
time.sleep(600)
"""

@pytest.fixture(scope="session")
def server():
    with ChildProcess([sys.executable, "-c", GRACEFUL, {stopped!r}, {ready!r}]) as child:
        yield child

def test_runs_long(server):
    time.sleep(600)
'''


def test_sigterm_to_a_session_stops_what_its_fixtures_started(tmp_path: Path) -> None:
    stopped, ready = tmp_path / "stopped", tmp_path / "ready"
    code = FIXTURE_TEST.format(stopped=str(stopped), ready=str(ready))
    (tmp_path / "test_inner.py").write_text(code)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    inner = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.support.process_guard",
         "-p", "no:cacheprovider", str(tmp_path / "test_inner.py")],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    try:
        for _ in range(600):
            if ready.exists() or inner.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), inner.communicate(timeout=10)[0]
        inner.send_signal(signal.SIGTERM)
        output = inner.communicate(timeout=60)[0]
    finally:
        if inner.poll() is None:
            inner.kill()
            inner.wait(timeout=10)
    assert inner.returncode == 2, output  # interrupted: torn down and reported
    assert stopped.read_text() == "graceful", output
    assert "process guard" not in output
