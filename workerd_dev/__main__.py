"""`python -m workerd_dev`: build (or find in the cache) what a workerd run needs, and say so.

The Pyodide bundle the installed workerd runs, and the worker's vendored modules.
scripts/test runs it before the tests, so test workers start with both in the cache.
"""

from __future__ import annotations

import sys

from workerd_dev import PROJECT_DIR, cache_dir
from workerd_dev.project import vendored_modules
from workerd_dev.pyodide_bundle import BundleError, ensure_bundle
from workerd_dev.python_modules import VendorError
from workerd_dev.tools import WorkerdUnavailable, find_tools


def main() -> int:
    """Prepare the bundle and python_modules/; exit 1 with the reason when one cannot be had."""
    try:
        tools = find_tools()
        bundle = ensure_bundle(tools)
        folder, vendored = vendored_modules(PROJECT_DIR, cache_dir())
    except (BundleError, VendorError, WorkerdUnavailable) as exc:
        print(f"workerd: {exc}", file=sys.stderr)
        return 1
    print(f"workerd {tools.workerd_version}: Pyodide {bundle.pyodide_version} bundle")
    print(f"  {bundle.path} ({bundle.size:,} bytes, sha256 {bundle.sha256[:16]}…)")
    print(f"  python_modules: {len(vendored.wheels)} wheels in {folder}")
    if vendored.substitutes:
        names = ", ".join(vendored.substitutes)
        print(f"  substitutes (real packages, no Pyodide build offline): {names}")
    if vendored.standins:
        print(f"  stand-ins (no Pyodide build offline): {', '.join(vendored.standins)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
