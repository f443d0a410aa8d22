"""The conformance suite: the same end-to-end tests on both runtimes of the worker.

Every module here runs twice, once per runtime: `local` (miniflare/, our CPython stand-in
for the Workers runtime) and `workerd` (Cloudflare's own runtime under `wrangler dev`,
offline: workerd_dev/). Where the two differ, workerd is right and the stand-in is fixed.

A module's `runtime` fixture takes `runtime_kind` and passes it to RuntimeProcess; the
default one below serves the scripted model and the reference platform services.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from data_server.platform.app import platform_app
from tests.support.asgi_server import AsgiServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import ScriptedModelServer

RUNTIMES = ("local", "workerd")
MAX_MESSAGE_CHARS = 500


@pytest.fixture(scope="module", params=RUNTIMES)
def runtime_kind(request: pytest.FixtureRequest) -> str:
    """The runtime the module's worker runs on (each module runs once per runtime)."""
    return str(request.param)


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def platform() -> Iterator[AsgiServer]:
    with AsgiServer(platform_app()) as server:
        yield server


@pytest.fixture(scope="module")
def runtime(
    tmp_path_factory: pytest.TempPathFactory,
    runtime_kind: str,
    model: ScriptedModelServer,
    platform: AsgiServer,
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp(f"runtime-{runtime_kind}")
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "PLATFORM_API_URL": platform.url,
        "MAX_MESSAGE_CHARS": str(MAX_MESSAGE_CHARS),
        "TOOL_TIMEOUT_SECONDS": "5",
    }
    with RuntimeProcess(state, variables, runtime=runtime_kind) as process:
        yield process


@pytest.fixture(autouse=True)
def _fresh_script(model: ScriptedModelServer) -> None:
    model.replies.clear()
