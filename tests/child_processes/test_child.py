"""The process runner: groups, bounded grace then SIGKILL, exit and signal paths, and
children that die with a starter killed by SIGKILL (checked through /proc)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from child_processes import ChildProcess, Children, ChildStartError, parent_death_signal_available
from tests.support.process_guard import descendants, is_alive, wait_gone

PROJECT_DIR = Path(__file__).resolve().parents[2]

# A child that ignores SIGTERM and starts a grandchild in its own group, then prints both.
STUBBORN = """
import signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(grandchild.pid, flush=True)
time.sleep(600)
"""

# A starter that uses the runner to start a child in a session of its own (out of reach of
# any group kill), prints the child's pid, then waits: the test decides how it ends.
STARTER = """
import sys, time
from child_processes import ChildProcess, exit_on_signals
exit_on_signals()
child = ChildProcess(
    [sys.executable, "-c", {child_code!r}], name="sleeper", log_path={log!r}
).start()
print(child.pid, flush=True)
{then}
"""

# A child that stops gracefully on SIGTERM and says so in a file.
GRACEFUL = """
import signal, sys, time, pathlib
def bye(*_):
    pathlib.Path(sys.argv[1]).write_text("graceful")
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
time.sleep(600)
"""


def python(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code), *args]


def read_pid(child: ChildProcess) -> int:
    assert child.popen.stdout is not None
    line = child.popen.stdout.readline().decode().strip()
    assert line.isdigit(), f"no pid printed: {line!r} {child.log_tail()}"
    return int(line)


def starter(tmp_path: Path, then: str, child_code: str = "import time; time.sleep(600)") -> list:
    code = STARTER.format(child_code=child_code, log=str(tmp_path / "child.log"), then=then)
    return python(code)


def test_stop_ends_the_whole_group_with_sigkill_after_the_grace() -> None:
    child = ChildProcess(python(STUBBORN), name="stubborn", stdout=subprocess.PIPE).start()
    grandchild = read_pid(child)
    started = time.monotonic()
    code = child.stop(grace=0.5)
    assert code == -signal.SIGKILL  # SIGTERM was ignored: the grace ran out
    assert 0.5 <= time.monotonic() - started < 5
    assert wait_gone([grandchild], 5) == set()


def test_a_child_runs_in_a_process_group_and_session_of_its_own() -> None:
    with ChildProcess(python("import time; time.sleep(600)"), name="sleeper") as child:
        assert child.pid is not None
        assert os.getpgid(child.pid) == child.pid != os.getpgid(0)
        assert os.getsid(child.pid) == child.pid


@pytest.mark.skipif(not parent_death_signal_available(), reason="needs Linux prctl")
def test_children_die_with_a_starter_killed_by_sigkill(tmp_path: Path) -> None:
    run = ChildProcess(
        starter(tmp_path, "time.sleep(600)"),
        name="starter",
        stdout=subprocess.PIPE,
        env={"PYTHONPATH": str(PROJECT_DIR)},
    ).start()
    grandchild = read_pid(run)
    assert is_alive(grandchild) and grandchild in descendants(os.getpid())
    # The grandchild has a session of its own: no group kill reaches it, only the kernel.
    assert os.getsid(grandchild) == grandchild
    os.kill(run.popen.pid, signal.SIGKILL)
    run.popen.wait(timeout=5)
    assert wait_gone([grandchild], 5) == set()
    run.stop()


def test_children_are_stopped_when_the_starter_just_exits(tmp_path: Path) -> None:
    done = subprocess.run(
        starter(tmp_path, "sys.exit(3)", GRACEFUL.replace("sys.argv[1]", repr(str(tmp_path)))),
        capture_output=True,
        text=True,
        timeout=30,
        cwd=PROJECT_DIR,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert wait_gone([int(done.stdout.strip())], 5) == set()


def test_sigterm_to_the_starter_stops_its_children_gracefully(tmp_path: Path) -> None:
    mark = tmp_path / "stopped"
    graceful = GRACEFUL.replace("sys.argv[1]", repr(str(mark)))
    run = ChildProcess(
        starter(tmp_path, "time.sleep(600)", graceful),
        name="starter",
        stdout=subprocess.PIPE,
        env={"PYTHONPATH": str(PROJECT_DIR)},
    ).start()
    grandchild = read_pid(run)
    time.sleep(0.3)  # the child installs its SIGTERM handler
    os.kill(run.popen.pid, signal.SIGTERM)
    # exit_on_signals: SIGTERM unwinds the starter, and its atexit stops the child with
    # SIGTERM first (the graceful path), not with the parent-death SIGKILL.
    assert run.popen.wait(timeout=10) != 0
    assert wait_gone([grandchild], 5) == set()
    assert mark.read_text() == "graceful"
    run.stop()


def test_children_stop_newest_first_within_one_deadline() -> None:
    children = Children()
    for _ in range(3):
        children.spawn(python(STUBBORN), name="stubborn", stdout=subprocess.PIPE)
    grandchildren = [read_pid(c) for c in children]
    started = time.monotonic()
    children.stop(grace=0.5)
    # One shared deadline, not one grace per child.
    assert time.monotonic() - started < 3
    assert all(not c.running for c in children)
    assert wait_gone(grandchildren, 5) == set()


def test_an_early_exit_is_reported_with_the_log(tmp_path: Path) -> None:
    child = ChildProcess(
        python("import sys; print('no config here'); sys.exit(2)"),
        name="broken",
        log_path=tmp_path / "broken.log",
    ).start()
    with pytest.raises(ChildStartError, match=r"broken exited with code 2[\s\S]*no config here"):
        child.wait_ready(lambda: False, timeout=10)
    assert not child.running


def test_a_child_never_ready_is_stopped_after_the_timeout() -> None:
    child = ChildProcess(python("import time; time.sleep(600)"), name="slow").start()
    pid = child.pid
    with pytest.raises(ChildStartError, match=r"slow was not ready after 0\.3 s"):
        child.wait_ready(lambda: False, timeout=0.3)
    assert pid is not None and wait_gone([pid], 5) == set()


def test_listens_on_tells_the_childs_own_port_from_any_other() -> None:
    serve = (
        "import socket, sys, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
        "print(s.getsockname()[1], flush=True); time.sleep(600)\n"
    )
    child = ChildProcess(python(serve), name="listener", stdout=subprocess.PIPE).start()
    try:
        assert child.popen.stdout is not None
        port = int(child.popen.stdout.readline())
        assert child.listens_on(port)
        with socket.socket() as other:
            other.bind(("127.0.0.1", 0))
            other.listen()
            assert not child.listens_on(other.getsockname()[1])
    finally:
        child.stop()


def test_a_foreign_server_on_the_port_does_not_make_a_child_ready() -> None:
    # The free port was taken by someone else before the child could bind it: the probe
    # answers, but readiness must wait for the child itself, and time out here.
    with socket.socket() as foreign:
        foreign.bind(("127.0.0.1", 0))
        foreign.listen()
        port = foreign.getsockname()[1]
        child = ChildProcess(python("import time; time.sleep(600)"), name="late").start()
        with pytest.raises(ChildStartError, match="late was not ready"):
            child.wait_ready(lambda: True, timeout=0.5, port=port)
        assert not child.running
