"""Where the programs a workerd run needs are: the pinned Node.js, wrangler and workerd
(`npm ci`, package.json) and Debian's `capnp` (scripts/bootstrap installs both)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from workerd_dev import PROJECT_DIR

BOOTSTRAP_HINT = "run scripts/bootstrap (it installs the pinned npm packages and capnproto)"


class WorkerdUnavailable(RuntimeError):
    """Something a workerd run needs is missing; the message says what and how to get it."""


@dataclass(frozen=True)
class Tools:
    """The programs of one project checkout."""

    node: Path
    wrangler_cli: Path
    workerd: Path
    workerd_version: str

    def wrangler(self, *args: str) -> list[str]:
        """A wrangler command line run by the pinned Node.js (wrangler needs ≥ 22.12).

        wrangler's own launcher (bin/wrangler.js) only starts a second Node.js on
        wrangler-dist/cli.js with `--no-warnings`; starting that one directly makes it our
        child, which dies with its starter (child_processes), and its workerd with it.
        """
        return [str(self.node), "--no-warnings", str(self.wrangler_cli), *args]


def _require(path: Path, what: str) -> Path:
    if not path.exists():
        raise WorkerdUnavailable(f"{what} is missing ({path}): {BOOTSTRAP_HINT}")
    return path


def find_tools(project_dir: Path = PROJECT_DIR) -> Tools:
    """The pinned tools under `project_dir/node_modules`, or WorkerdUnavailable."""
    modules = project_dir / "node_modules"
    # wrangler 4 needs Node.js ≥ 22.12, which package.json brings on Linux as the
    # optional `node-linux-*` package (.bin/node); the machine's own may be older.
    node = modules / ".bin" / "node"
    if not node.exists():
        found = shutil.which("node")
        if found is None:
            raise WorkerdUnavailable(f"Node.js is not installed: {BOOTSTRAP_HINT}")
        node = Path(found)
    wrangler_cli = _require(modules / "wrangler" / "wrangler-dist" / "cli.js", "wrangler")
    workerd = _require(modules / ".bin" / "workerd", "workerd")
    manifest = _require(modules / "workerd" / "package.json", "workerd's package.json")
    version = str(json.loads(manifest.read_text())["version"])
    return Tools(node=node, wrangler_cli=wrangler_cli, workerd=workerd, workerd_version=version)


def capnp() -> Path:
    """Cap'n Proto's compiler (Debian's `capnproto`), which writes the Pyodide bundle."""
    found = shutil.which("capnp")
    if found is None:
        raise WorkerdUnavailable(f"`capnp` is not installed: {BOOTSTRAP_HINT}")
    return Path(found)


def npm() -> Path:
    """npm, which fetches the `pyodide` package from the registry."""
    found = shutil.which("npm")
    if found is None:
        raise WorkerdUnavailable(f"npm is not installed: {BOOTSTRAP_HINT}")
    return Path(found)
