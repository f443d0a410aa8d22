"""The Cloudflare adapter layer: the only code that touches `js`, `pyodide` or `workers`.

Under CPython the local runtime (miniflare/) provides faithful stand-ins for
those modules, so this same code runs in tests and in the local stack.
"""
