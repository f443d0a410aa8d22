"""Local stand-in for `pyodide.ffi`: values cross no JS boundary here."""

from __future__ import annotations

from typing import Any

# In Pyodide, jsnull is JS `null`; in the local runtime the SQL layer takes None.
jsnull: Any = None


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"the local runtime does not implement pyodide.ffi.{name}")
