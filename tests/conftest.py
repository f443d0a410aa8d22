"""Session-wide fixtures and the guard that fails the run if any process of it survives."""

import pytest

from miniflare.process import exit_on_signals

pytest_plugins = ["tests.typesense_fixture", "tests.support.process_guard"]


def pytest_configure(config: pytest.Config) -> None:
    # SIGTERM (a CI runner, a killed terminal) unwinds pytest like Ctrl-C does, so every
    # fixture stops what it started; SIGKILL is covered by the children's parent-death signal.
    exit_on_signals()
