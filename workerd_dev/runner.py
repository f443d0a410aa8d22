"""`wrangler dev` on workerd, offline, as a child process: `albert serve/dev --runtime workerd`.

wrangler starts workerd through miniflare, which has no option for workerd's Pyodide
bundle cache; `MINIFLARE_WORKERD_PATH` (miniflare's own override of the binary) names a
two-line wrapper that adds `--pyodide-bundle-disk-cache-dir` and runs the pinned
workerd. Everything else is wrangler's own: assets, Durable Objects, persistence.

Objects' storage persists under `<state-dir>/workerd/state` (`--persist-to`), so a
restart keeps threads, as a deployment does. wrangler's output (and the worker's logs
and tracebacks) goes to this process's standard output.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from child_processes import ChildProcess, answers_http
from miniflare.config import load_config
from workerd_dev import PROJECT_DIR, cache_dir
from workerd_dev.project import StagedProject, stage
from workerd_dev.pyodide_bundle import Bundle, ensure_bundle
from workerd_dev.tools import Tools, find_tools

# The first start compiles Pyodide and imports the worker; later ones are quicker.
START_SECONDS = 120.0
STOP_GRACE_SECONDS = 5.0
# How often a serving command checks that wrangler still runs.
WATCH_SECONDS = 0.5


def workerd_wrapper(tools: Tools, bundle: Bundle, cache: Path) -> Path:
    """An executable that runs the pinned workerd with the bundle cache added.

    workerd is wrangler's child: it must not outlive it. Where util-linux's `setpriv` is
    present it arms SIGKILL on its parent's death (wrangler, a child of ours that dies
    with us), so even a SIGKILLed `albert` leaves no workerd behind.
    """
    setpriv = shutil.which("setpriv")
    prefix = f"{shlex.quote(setpriv)} --pdeathsig KILL -- " if setpriv else ""
    path = cache / "bin" / f"workerd-{tools.workerd_version}-{bundle.sha256[:12]}"
    text = (
        "#!/bin/sh\n"
        f'exec {prefix}{shlex.quote(str(tools.workerd))} "$@" '
        f"--pyodide-bundle-disk-cache-dir={shlex.quote(str(bundle.directory))}\n"
    )
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".part")
        partial.write_text(text)
        partial.chmod(0o755)
        partial.replace(path)
    return path


def run_variables(project_dir: Path, overrides: Mapping[str, str]) -> dict[str, str]:
    """The run's vars: `.dev.vars` secrets, then the command line's overrides."""
    return {**load_config(project_dir).secrets, **dict(overrides)}


class WorkerdDev:
    """The staged worker under `wrangler dev` on `host:port`; `start()`, then `stop()`."""

    def __init__(
        self,
        state_dir: Path,
        host: str,
        port: int,
        variables: Mapping[str, str],
        project_dir: Path = PROJECT_DIR,
    ) -> None:
        self.state_dir = state_dir
        self.host = host
        self.port = port
        self.variables = dict(variables)
        self.project_dir = project_dir
        self.child: ChildProcess | None = None
        self.staged: StagedProject | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = START_SECONDS) -> WorkerdDev:
        """Build what is missing, start wrangler and wait until /healthz answers 200."""
        tools = find_tools(self.project_dir)
        cache = cache_dir()
        bundle = ensure_bundle(tools, cache)
        root = self.state_dir / "workerd"
        self.staged = stage(root / "project", self.variables, self.project_dir, cache)
        (root / "tmp").mkdir(exist_ok=True)
        args = tools.wrangler(
            "dev",
            "--config",
            str(self.staged.config),
            "--ip",
            self.host,
            "--port",
            str(self.port),
            "--persist-to",
            str(root / "state"),
            "--show-interactive-dev-session=false",
            # info: requests and the worker's own logs, not the 900-line table of modules.
            "--log-level",
            "info",
        )
        env = {
            "MINIFLARE_WORKERD_PATH": str(workerd_wrapper(tools, bundle, cache)),
            "WRANGLER_SEND_METRICS": "false",
            # No request to Cloudflare for the `request.cf` data: its placeholder is used.
            "CLOUDFLARE_CF_FETCH_ENABLED": "false",
            # wrangler's own logs and settings, and miniflare's scratch folders, stay with
            # the run, not in the home folder or the system's /tmp.
            "XDG_CONFIG_HOME": str(root / "config"),
            "TMPDIR": str(root / "tmp"),
            "PATH": f"{tools.node.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        self.child = ChildProcess(
            args,
            name="wrangler dev (workerd)",
            cwd=self.staged.directory,
            env=env,
            stdout=sys.stdout,
            grace=STOP_GRACE_SECONDS,
        ).start()
        self.child.wait_ready(answers_http(f"{self.url}/healthz", healthy_only=True), timeout)
        return self

    def stop(self) -> int | None:
        """Stop wrangler and its workerd (one process group); the exit code."""
        if self.child is None:
            return None
        code = self.child.stop()
        self.child = None
        return code


def serve_on_workerd(
    project_dir: Path, state_dir: Path, host: str, port: int, overrides: Mapping[str, str]
) -> None:
    """Blocking entry of `albert serve --runtime workerd`: serve until a stop signal.

    A stop signal (SIGTERM, SIGINT) arrives here as KeyboardInterrupt (see
    child_processes.exit_on_signals); wrangler and workerd are stopped on the way out.
    """
    worker = WorkerdDev(state_dir, host, port, run_variables(project_dir, overrides), project_dir)
    print(f"Starting the worker on workerd (wrangler dev) on {worker.url}…", flush=True)
    try:
        worker.start()
        print(f"Albert worker on {worker.url} (workerd)", flush=True)
        while worker.child is not None and worker.child.running:
            time.sleep(WATCH_SECONDS)
        raise SystemExit("wrangler dev exited on its own; its output is above")
    finally:
        worker.stop()
