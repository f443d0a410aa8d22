"""Makes `import mcp` slow on purpose in a process started with this folder on PYTHONPATH.

Python imports `sitecustomize` at start-up. This one puts a finder first on
`sys.meta_path` that sleeps ALBERT_TEST_SLOW_IMPORT_SECONDS when the `mcp` package
is looked up, which happens under the import lock of `mcp` while
`albert.mcp.connection` already sits half-built in `sys.modules`: the window in
which another object must not take that module for a finished one. Each lookup
is appended to ALBERT_TEST_IMPORT_LOG (one line per import of `mcp`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType

DELAY_SECONDS = float(os.environ.get("ALBERT_TEST_SLOW_IMPORT_SECONDS", "0") or 0)
IMPORT_LOG = os.environ.get("ALBERT_TEST_IMPORT_LOG", "")


class SlowMcpImport(MetaPathFinder):
    """Sleeps before the real finders look for `mcp`; finds nothing itself."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname == "mcp":
            if IMPORT_LOG:
                with open(IMPORT_LOG, "a", encoding="utf-8") as log:
                    log.write(f"{time.time():.3f}\n")
            time.sleep(DELAY_SECONDS)
        return None


if DELAY_SECONDS > 0:
    sys.meta_path.insert(0, SlowMcpImport())
