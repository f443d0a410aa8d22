"""The worker on Cloudflare's own runtime, workerd, offline: the truth `miniflare/` must match.

workerd (npm `workerd`, the version wrangler pins) runs Python Workers when it has a
Pyodide runtime bundle. Its release bundles are downloaded and checked against hashes
compiled into the binary, which an offline machine cannot satisfy; the compatibility
flag `python_workers_development` selects the release named `dev` instead, which workerd
reads from its bundle disk cache without a hash check. This package builds that bundle
from registry packages, vendors the worker's dependencies from PyPI, stages a copy of
the project whose wrangler config adds the flag (the deployed `wrangler.toml` never has
it) and runs `wrangler dev` on it:

- `tools.py`: where the pinned Node.js, wrangler, workerd and `capnp` are;
- `pyodide_bundle.py` (+ `bundle.capnp`): the `dev` bundle, built and checked against the
  Pyodide version workerd asks for;
- `python_modules.py`: python_modules/ for local runs, from uv.lock and PyPI, with loud
  stand-ins for the packages that have no Pyodide build reachable offline;
- `project.py`: the staged project (generated wrangler config, vendored modules);
- `runner.py`: `wrangler dev` as a child process of `albert serve/dev --runtime workerd`.

The cache lives outside the repository (`$ALBERT_CACHE_DIR`, else `$XDG_CACHE_HOME/albert`,
else `~/.cache/albert`): nothing built here can end up in an upload.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent


def write_atomically(path: Path, text: str) -> None:
    """Write a file of the cache so that a concurrent reader sees all of it or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    partial.write_text(text)
    partial.replace(path)


def cache_dir() -> Path:
    """The folder everything built or downloaded for workerd runs is kept in."""
    explicit = os.environ.get("ALBERT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "albert"
