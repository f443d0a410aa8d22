"""A running local stack for end-to-end tests: runtime process, scripted model, platform."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from data_server.platform.app import platform_app
from tests.support.asgi_server import AsgiServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import ScriptedModelServer

MAX_MESSAGE_CHARS = 500


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
    tmp_path_factory: pytest.TempPathFactory, model: ScriptedModelServer, platform: AsgiServer
) -> Iterator[RuntimeProcess]:
    state: Path = tmp_path_factory.mktemp("runtime-state")
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "PLATFORM_API_URL": platform.url,
        "MAX_MESSAGE_CHARS": str(MAX_MESSAGE_CHARS),
        "TOOL_TIMEOUT_SECONDS": "5",
    }
    with RuntimeProcess(state, variables) as process:
        yield process


@pytest.fixture(autouse=True)
def _fresh_script(model: ScriptedModelServer) -> None:
    model.replies.clear()
