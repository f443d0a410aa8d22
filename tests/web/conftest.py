"""Browser tests: the local runtime as a process, a scripted model, and headless Chromium."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from data_server.platform.app import platform_app
from tests.support.asgi_server import AsgiServer
from tests.support.runtime_process import RuntimeProcess
from tests.support.scripted_model import ScriptedModelServer

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedModelServer]:
    with ScriptedModelServer() as server:
        yield server


@pytest.fixture(scope="module")
def platform() -> Iterator[AsgiServer]:
    with AsgiServer(platform_app()) as server:
        yield server


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("browser-runtime")


@pytest.fixture(scope="module")
def events_log(state_dir: Path) -> Path:
    return state_dir / "analytics" / "events.jsonl"


@pytest.fixture(scope="module")
def runtime(
    state_dir: Path, events_log: Path, model: ScriptedModelServer, platform: AsgiServer
) -> Iterator[RuntimeProcess]:
    variables = {
        "ALBERT_MODE": "local",
        "MODEL_BASE_URL": model.base_url,
        "MODEL_API_KEY": "test-key",
        "PLATFORM_API_URL": platform.url,
        "TOOL_TIMEOUT_SECONDS": "5",
        "ANALYTICS_LOG_PATH": str(events_log),
        "ANALYTICS_API_KEY": "",
    }
    with RuntimeProcess(state_dir, variables) as process:
        yield process


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists() and shutil.which("chromium") is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(autouse=True)
def _fresh_script(model: ScriptedModelServer) -> None:
    model.replies.clear()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
