"""The staged project: wrangler.toml as a local workerd run needs it, never the deploy config."""

from __future__ import annotations

import tomllib
from pathlib import Path

from workerd_dev import PROJECT_DIR
from workerd_dev.project import stage, staged_config


def test_the_dev_release_is_asked_for_only_in_the_staged_config() -> None:
    deployed = tomllib.loads((PROJECT_DIR / "wrangler.toml").read_text())
    assert "python_workers_development" not in deployed["compatibility_flags"]
    config = staged_config(PROJECT_DIR, {"ALBERT_MODE": "local", "EXTRA": "1"})
    assert (
        config["compatibility_flags"][: len(deployed["compatibility_flags"])]
        == (deployed["compatibility_flags"])
    )
    assert "python_workers_development" in config["compatibility_flags"]
    assert Path(config["main"]).is_file() and Path(config["main"]).is_absolute()
    assert Path(config["assets"]["directory"]) == (PROJECT_DIR / "web").resolve()
    # Offline: no Workers AI (its local mode calls Cloudflare), no [build] (done by stage).
    assert "ai" not in config and "build" not in config
    assert config["vars"]["ALBERT_MODE"] == "local" and config["vars"]["EXTRA"] == "1"
    assert config["durable_objects"] == deployed["durable_objects"]
    assert config["migrations"] == deployed["migrations"]


def test_staging_fills_its_own_python_modules_and_leaves_the_checkouts_alone(
    tmp_path: Path, fresh_cache: Path
) -> None:
    checkout_modules = PROJECT_DIR / "python_modules"
    before = sorted(checkout_modules.rglob("*")) if checkout_modules.exists() else None
    staged = stage(tmp_path / "stage", {"ALBERT_MODE": "local"}, cache=fresh_cache)
    modules = staged.directory / "python_modules"
    assert (modules / "durable_objects" / "chat.py").read_text() == (
        PROJECT_DIR / "durable_objects" / "chat.py"
    ).read_text()
    assert (modules / "pydantic" / "__init__.py").is_file()
    assert staged.config.is_file()
    after = sorted(checkout_modules.rglob("*")) if checkout_modules.exists() else None
    assert before == after
    # A second stage reuses the vendored closure and replaces the copy.
    (modules / "stale.py").write_text("")
    stage(tmp_path / "stage", {"ALBERT_MODE": "local"}, cache=fresh_cache)
    assert not (modules / "stale.py").exists()
