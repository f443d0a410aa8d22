"""The local runtime: hosts the worker's own WorkerEntrypoint and DurableObject classes
under CPython, with real HTTP and WebSockets and one SQLite file per object.

Cloudflare's `wrangler dev` needs to download the Pyodide bundle at start-up;
this runtime implements only the slice of the Workers API the project uses and
fails loudly (NotImplementedError naming the feature) on anything else.
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
