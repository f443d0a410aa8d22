"""The local runtime's stand-ins take what the real Workers SDK takes, and refuse what it refuses.

The SDK (`workers-runtime-sdk`, the `workers` package pywrangler vendors) cannot be
imported under CPython (it needs `js` and `pyodide`), so its signatures are read from
its installed source with `ast`: the real thing, at the locked version. On Cloudflare,
a Durable Object stub and the ASSETS binding are wrapped so that their `fetch` is
`workers.fetch` bound to the binding; the stand-ins must accept exactly its calls.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from miniflare import install_shims
from miniflare.config import load_config
from miniflare.http import Request, Response
from miniflare.objects import DurableObjectNamespace, DurableObjectStub, ObjectHost
from miniflare.runtime import LocalAssets, LocalRuntime

install_shims()
from workers import DurableObject, WorkerEntrypoint  # noqa: E402  (the shim, after install)

Shape = list[tuple[str, str]]
PROJECT = Path(__file__).resolve().parents[2]


def sdk_source(module: str) -> ast.Module:
    """The installed SDK's module `workers/<module>.py`, parsed."""
    dist = metadata.distribution("workers-runtime-sdk")
    path = Path(str(dist.locate_file(f"workers/{module}.py")))
    return ast.parse(path.read_text())


def sdk_function(module: str, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    node: Any = sdk_source(module)
    for part in qualname.split("."):
        node = next(
            child
            for child in node.body
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and child.name == part
        )
    return node


def sdk_shape(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Shape:
    """(kind, name) of each parameter, as inspect names the kinds; `self` left out."""
    args = function.args
    shape: Shape = [("POSITIONAL_ONLY", a.arg) for a in args.posonlyargs]
    shape += [("POSITIONAL_OR_KEYWORD", a.arg) for a in args.args]
    if args.vararg:
        shape.append(("VAR_POSITIONAL", args.vararg.arg))
    shape += [("KEYWORD_ONLY", a.arg) for a in args.kwonlyargs]
    if args.kwarg:
        shape.append(("VAR_KEYWORD", args.kwarg.arg))
    return [p for p in shape if p[1] != "self"]


def shim_shape(function: Callable[..., Any]) -> Shape:
    parameters = inspect.signature(function).parameters.values()
    return [(p.kind.name, p.name) for p in parameters if p.name != "self"]


def positional_names(shape: Shape) -> list[str]:
    return [name for kind, name in shape if kind.startswith("POSITIONAL")]


@pytest.mark.parametrize(
    "shim", [DurableObjectStub.fetch, LocalAssets.fetch], ids=["stub.fetch", "ASSETS.fetch"]
)
def test_binding_fetch_takes_one_resource_and_keyword_options_as_the_sdk_does(shim) -> None:
    sdk = sdk_shape(sdk_function("fetch", "fetch"))
    assert len(positional_names(sdk)) == 1 and sdk[-1][0] == "VAR_KEYWORD", sdk
    ours = shim_shape(shim)
    assert len(positional_names(ours)) == 1 and ours[-1][0] == "VAR_KEYWORD", ours
    # Nothing else may be passed by position: a JS-style `fetch(url, init)` must fail.
    assert not any(kind == "VAR_POSITIONAL" for kind, _ in ours)


@pytest.mark.parametrize(
    ("shim", "module", "qualname"),
    [
        (Response.__init__, "response", "Response.__init__"),
        (DurableObject.__init__, "entrypoints", "DurableObject.__init__"),
        (WorkerEntrypoint.__init__, "entrypoints", "WorkerEntrypoint.__init__"),
    ],
)
def test_constructors_have_the_sdks_parameters(shim, module: str, qualname: str) -> None:
    assert shim_shape(shim) == sdk_shape(sdk_function(module, qualname))


def test_request_methods_the_worker_calls_exist_on_the_sdks_request() -> None:
    sdk = {
        node.name
        for node in sdk_function("request", "Request").body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    # arrayBuffer is the JS Request's, reached through `js_object` (albert.cloudflare.http).
    ours = {
        name
        for name, member in vars(Request).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    } - {"arrayBuffer"}
    assert ours <= sdk, ours - sdk


async def test_a_js_style_fetch_with_an_init_object_is_refused(tmp_path: Path) -> None:
    class Echo:
        def __init__(self, ctx: Any, env: Any) -> None: ...

        async def fetch(self, request: Request) -> Response:
            return Response(f"{request.method} {await request.text()}")

    runtime = LocalRuntime(load_config(PROJECT), tmp_path)
    host = ObjectHost(runtime, "Echo", Echo, tmp_path / "do")
    stub = DurableObjectNamespace(host).getByName("a")
    with pytest.raises(TypeError):
        await stub.fetch("https://x.internal/", {"method": "POST", "body": "hi"})  # type: ignore[call-arg]
    answer = await stub.fetch("https://x.internal/", method="POST", body="hi")
    assert await answer.text() == "POST hi"
    host.close()


def _storage_wrapper_class() -> str:
    """The class the SDK wraps a Durable Object's `ctx.storage` in (read from its source)."""
    getattr_ = sdk_function("entrypoints", "DurableObjectContext.__getattr__")
    for node in ast.walk(getattr_):
        if (
            isinstance(node, ast.If)
            and "DurableObjectStorage" in ast.unparse(node.test)
            and isinstance(node.body[0], ast.Assign)
            and isinstance(node.body[0].value, ast.Call)
        ):
            return ast.unparse(node.body[0].value.func)
    raise AssertionError("the SDK no longer wraps ctx.storage where it did")


def test_python_to_rpc_gives_the_js_storage_behind_the_sdks_wrapper() -> None:
    # albert.cloudflare.ffi.js_binding relies on it: the wrapper's transactionSync would
    # keep every callback alive (it converts a callable with a create_proxy).
    wrapper = _storage_wrapper_class()
    exported = next(
        node.value
        for node in sdk_source("__init__").body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__"
    )
    assert "python_to_rpc" in ast.literal_eval(exported)
    init = sdk_function("rpc", f"{wrapper}.__init__")
    held = {
        ast.unparse(target)
        for node in ast.walk(init)
        if isinstance(node, ast.Assign) and ast.unparse(node.value) == init.args.args[1].arg
        for target in node.targets
    }
    returns = [
        ast.unparse(node.body[0].value)
        for node in sdk_function("rpc", "python_to_rpc").body
        if isinstance(node, ast.If)
        and ast.unparse(node.test).startswith("isinstance(value")
        and ast.unparse(node.test).endswith(f"{wrapper})")
        and isinstance(node.body[0], ast.Return)
        and node.body[0].value is not None
    ]
    assert [r.replace("value.", "self.") for r in returns] == sorted(held), (returns, held)


def test_a_response_has_the_sdks_js_object() -> None:
    # The worker reads the client end of an upgrade as `response.js_object.webSocket`.
    sdk_properties = {
        node.name
        for node in sdk_function("response", "FetchResponse").body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d) == "property" for d in node.decorator_list)
    }
    assert "js_object" in sdk_properties
    assert isinstance(inspect.getattr_static(Response, "js_object"), property)
