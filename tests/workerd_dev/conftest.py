"""workerd_dev's tests: a cache of their own, seeded with the downloads the shared one has."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from workerd_dev import cache_dir
from workerd_dev.tools import Tools, WorkerdUnavailable, find_tools


@pytest.fixture(scope="session")
def tools() -> Tools:
    try:
        return find_tools()
    except WorkerdUnavailable as exc:  # pragma: no cover - scripts/bootstrap installs them
        pytest.fail(str(exc))


@pytest.fixture
def fresh_cache(tmp_path: Path) -> Iterator[Path]:
    """An empty cache but for the registry downloads (npm tarballs, wheels) already fetched."""
    cache = tmp_path / "cache"
    for folder in ("npm", "wheels"):
        source = cache_dir() / folder
        if source.is_dir():
            shutil.copytree(source, cache / folder)
    yield cache
