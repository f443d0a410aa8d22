"""The Python/JavaScript boundary: turning JS values into plain Python and back.

Every adapter in this package converts at the boundary with these helpers, so
the core only ever sees dicts, lists, str, int, float, bytes and None.

`pyodide.ffi` and `js` are looked up when a helper runs, not when this module is
imported: under Cloudflare they are Pyodide's modules, in the local runtime its
stand-ins (miniflare/shims), and in the conformance tests faithful fakes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

_NOT_AVAILABLE = (ImportError, NotImplementedError, AttributeError)
_PLAIN = frozenset({str, int, float, bool, bytes, type(None)})


def _module_attr(module_name: str, name: str) -> Any:
    try:
        module = __import__(module_name, fromlist=[name])
        return getattr(module, name)
    except _NOT_AVAILABLE:
        return None


def _ffi_attr(name: str) -> Any:
    return _module_attr("pyodide.ffi", name)


def js_null() -> Any:
    """JavaScript `null` (Python None crosses as `undefined`, which SQL bindings reject)."""
    return _ffi_attr("jsnull")


def create_proxy(obj: Any) -> Any:
    """A PyProxy of `obj` that lives until its `destroy()`; None where no JS boundary exists.

    A Python object passed straight to a JS function is only *borrowed* by it:
    Pyodide destroys that proxy when the call returns (or when the Promise it
    returns settles). Anything JS keeps past the call needs one of these.
    """
    make = _ffi_attr("create_proxy")
    if make is None:
        return None
    proxy = make(obj)
    # Under CPython the `pyodide-py` package's stub hands the object back: no boundary, so
    # nothing to keep alive or destroy.
    return None if proxy is obj else proxy


def js_binding(binding: Any) -> Any:
    """The JS object behind the Workers SDK's wrapper of a binding, else `binding` itself.

    The SDK wraps a Durable Object's `ctx.storage` so that every argument is converted
    as for RPC: a Python callable becomes a `create_proxy` that nothing ever destroys.
    Its public `python_to_rpc` hands back the JS object a wrapper holds (and a JS object
    as it is); where no SDK is loaded (the local runtime, the fakes) nothing is wrapped.
    """
    unwrap = _module_attr("workers", "python_to_rpc")
    return binding if unwrap is None else unwrap(binding)


def is_js_nullish(value: Any) -> bool:
    """True for None, JS `null` and JS `undefined`."""
    if value is None:
        return True
    null = js_null()
    if null is not None and value is null:
        return True
    return type(value).__name__ in ("JsNull", "JsUndefined")


def to_js_bytes(data: bytes | bytearray | memoryview) -> Any:
    """A Uint8Array holding `data` (a Python bytes object would cross as an opaque proxy)."""
    to_js = _ffi_attr("to_js")
    raw = bytes(data)
    return raw if to_js is None else to_js(raw)


def to_js_array(items: Iterable[Any]) -> Any:
    """A JS Array of `items`, for a parameter the platform types as an array.

    A Python list crosses into JS as a proxy, which such a parameter refuses
    (`ctx.acceptWebSocket(ws, tags)`: "parameter 2 is not of type 'Array'"). The local
    runtime's `to_js` gives its own array type, which its stand-ins insist on alike.
    """
    to_js = _ffi_attr("to_js")
    values = list(items)
    return values if to_js is None else to_js(values)


def to_js_object(value: Any) -> Any:
    """A plain JS object tree (dicts become Objects, not Maps; None becomes null)."""
    to_js = _ffi_attr("to_js")
    if to_js is None:
        return value
    null = js_null()
    value = _none_to_null(value, null)
    js = sys.modules.get("js")
    object_ctor = getattr(js, "Object", None) if js is not None else None
    if object_ctor is None:
        return to_js(value)
    return to_js(value, dict_converter=object_ctor.fromEntries)


def _none_to_null(value: Any, null: Any) -> Any:
    if value is None:
        return null
    if isinstance(value, dict):
        return {k: _none_to_null(v, null) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_none_to_null(v, null) for v in value]
    return value


def py_value(value: Any) -> Any:
    """Deep conversion of a JS value (proxy or already converted) into plain Python.

    null/undefined → None, ArrayBuffer and typed arrays → bytes, arrays → list,
    objects → dict; primitives pass through unchanged.
    """
    # Primitives first: they are nearly every value of a result set, and the
    # null check below looks up the FFI module.
    kind = type(value)
    if value is None or kind in _PLAIN:
        return value
    # A dict or list (a proxy never is one): already Python, only the values may need
    # converting. Rows of the local runtime's SQL arrive like this, in a list subclass
    # that also has the `to_py()` of a JS array.
    if kind is dict or isinstance(value, dict):
        return {str(k): v if type(v) in _PLAIN else py_value(v) for k, v in value.items()}
    if kind is list or isinstance(value, list):
        return [v if type(v) in _PLAIN else py_value(v) for v in value]
    return _js_value(value)


def _js_value(value: Any) -> Any:
    """`py_value` of anything but a primitive or a plain dict/list."""
    if isinstance(value, str | bool | int | float | bytes):
        return value
    if is_js_nullish(value):
        return None
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    to_bytes = _method(value, "to_bytes")
    if to_bytes is not None:
        return bytes(to_bytes())
    to_py = _method(value, "to_py")
    if to_py is not None:
        return py_value(to_py())
    if isinstance(value, dict):
        return {str(k): py_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [py_value(v) for v in value]
    return value


def _method(value: Any, name: str) -> Any:
    try:
        found = getattr(value, name)
    except Exception:
        # A JsProxy raises for a missing JS property; so may a closed resource.
        return None
    return found if callable(found) else None
