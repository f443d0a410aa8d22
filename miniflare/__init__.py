"""The local runtime: a stand-in for the Workers API under CPython. It hosts the worker's own
WorkerEntrypoint and DurableObject classes with real HTTP and WebSockets (served by
uvicorn: server.py) and one SQLite file per object.

It implements only the slice of the Workers API the project uses and fails loudly
(NotImplementedError naming the feature) on anything else. Cloudflare's own runtime,
workerd, runs the same worker offline too (workerd_dev/, `albert serve --runtime workerd`),
and is the truth this stand-in is tested against; the `albert` command that runs either is
local_stack/.
"""

from __future__ import annotations

import sys
from pathlib import Path

SHIMS_DIR = Path(__file__).parent / "shims"


def install_shims() -> None:
    """Make `workers`, `js` and `pyodide.ffi` resolve to the local runtime's stand-ins."""
    path = str(SHIMS_DIR)
    if path not in sys.path:
        sys.path.insert(0, path)
