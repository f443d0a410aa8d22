"""Local stand-in for `pyodide.ffi`: values cross no JS boundary here."""

from __future__ import annotations

from typing import Any

from miniflare.storage import JsArray

# In Pyodide, jsnull is JS `null`; in the local runtime the SQL layer takes None.
jsnull: Any = None

_PRIMITIVES = (str, int, float, bool, type(None))


def to_js(value: Any, **_options: Any) -> Any:
    """Pyodide's `to_js` for the values the adapters convert: arrays and bytes.

    A list or tuple becomes a JsArray, the local runtime's JS array: a stand-in whose
    platform API takes an array (`ctx.acceptWebSocket`'s tags) refuses a Python list, as
    workerd does. Bytes stay bytes (the local SQL binds them; there is no Uint8Array).
    """
    if isinstance(value, list | tuple):
        return JsArray(to_js(item) for item in value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, (*_PRIMITIVES, JsArray)):
        return value
    raise NotImplementedError(
        f"the local runtime's to_js converts arrays and bytes only, not {type(value).__name__}"
    )


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotImplementedError(f"the local runtime does not implement pyodide.ffi.{name}")
