"""Client-only stand-ins for packages no Pyodide build of can be had offline.

Copied into the staged python_modules/ of local workerd runs (workerd_dev.python_modules),
never uploaded: a deploy's `pywrangler sync` vendors Pyodide's real builds.
"""
