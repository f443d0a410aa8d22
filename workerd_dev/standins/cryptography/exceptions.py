"""`cryptography.exceptions`, as far as the `mcp` SDK names it at import.

The real module is the first thing of cryptography's Rust core to load, and that core
draws one value of entropy when it starts (a hash map's seed). The Workers SDK counts
on exactly that draw when the module is imported at a worker's top level, where entropy
is refused but for the draws it allows (its import patch for `cryptography.exceptions`),
so the stand-in draws it too: a top-level import of the `mcp` client then behaves here
as it does with Pyodide's build, and a memory snapshot can be taken with it.
"""

import os

os.urandom(1)


class InvalidTag(Exception):
    """Raised by the real package when a sealed value fails verification."""
