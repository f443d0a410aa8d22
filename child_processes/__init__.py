"""Every process the project starts goes through this package, so none outlives its starter.

A child is started in a process group (and session) of its own, so a terminal's Ctrl-C
reaches only its starter, and stopping it reaches everything it started in its group.
Four layers end it, from the most graceful to the last resort:

1. `ChildProcess.stop()` (also on `with` exit): its stop signal (SIGTERM unless told
   otherwise) to the whole group, `grace` seconds, then SIGKILL to the group.
2. `stop_all()` at interpreter exit (`atexit`): every child still registered is stopped
   the same way, all signalled first and then waited for within one shared deadline.
3. `exit_on_signals()` in a command's `main`: SIGTERM and SIGHUP unwind the program the way
   Ctrl-C does (KeyboardInterrupt), so `finally` blocks and layer 2 run.
4. When the starter dies without unwinding (SIGKILL, a crash), the kernel kills the child:
   on Linux every child is started with `prctl(PR_SET_PDEATHSIG, SIGKILL)` (via ctypes).
   Each level arms its own children, so the chain cascades: pytest → `albert dev` →
   Typesense all go when the first one is SIGKILLed.

Why a parent-death signal and not a watchdog pipe: a pipe only helps a child that reads it.
Typesense (and a local chain such as anvil) are foreign binaries, so a pipe would need a
Python watchdog process between starter and child: one more interpreter per child, and one
more process that can itself be left behind. PR_SET_PDEATHSIG costs nothing, works for any
binary and is delivered even when the starter is SIGKILLed. Its one catch: the "parent" is
the *thread* that forked the child, so a child started from a short-lived thread would be
killed when that thread ends. The signal is therefore armed only for children started from
the main thread; others still have layers 1-3. Where `prctl` does not exist (not Linux),
layer 4 is absent too.

Registering another child is one line, and it is then covered by every layer above:

    anvil = ChildProcess(["anvil", "--port", str(port)], name="anvil",
                         log_path=state_dir / "anvil.log").start()

Wait for it with `wait_ready(answers_http(url))`. A stack that owns several children keeps
them in a `Children` (`children.spawn([...], name=...)`), which stops them newest first
within one deadline (what `albert dev` does on SIGTERM). A server binary on a loopback
port is a `ServerProcess` (server.py): its wrappers name the command and the readiness
probe, and share the start, the retry on a lost port and the stop.

Modules: `child.py` (one child, layers 1 and 4), `group.py` (layers 2 and 3, `Children`),
`server.py` (`ServerProcess`), `ports.py` (free ports, held ports), `port_races.py` (a
picked port taken first), `proc.py` (what /proc says). A leaf: it imports none of the
project's other packages.
"""

from child_processes.child import (
    DEFAULT_GRACE_SECONDS,
    ChildProcess,
    ChildStartError,
    answers_http,
    live_children,
    parent_death_signal_available,
    read_log_tail,
)
from child_processes.group import Children, exit_on_signals, stop_all, stop_children
from child_processes.port_races import PORT_ATTEMPTS, start_on_free_ports
from child_processes.ports import (
    LOOPBACK,
    PortTaken,
    free_port,
    listening_socket,
    port_is_free,
    reserve_port,
)
from child_processes.proc import descendants
from child_processes.server import ServerProcess

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "LOOPBACK",
    "PORT_ATTEMPTS",
    "ChildProcess",
    "ChildStartError",
    "Children",
    "PortTaken",
    "ServerProcess",
    "answers_http",
    "descendants",
    "exit_on_signals",
    "free_port",
    "listening_socket",
    "live_children",
    "parent_death_signal_available",
    "port_is_free",
    "read_log_tail",
    "reserve_port",
    "start_on_free_ports",
    "stop_all",
    "stop_children",
]
