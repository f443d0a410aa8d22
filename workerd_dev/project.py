"""The project as `wrangler dev` runs it on workerd offline: a staged copy, never the checkout.

The stage (a folder of the run's state) holds a wrangler config generated from the
project's wrangler.toml and a python_modules/ of its own:

- the config adds `python_workers_development` (the `dev` Pyodide bundle: see
  workerd_dev.pyodide_bundle), points `main` and the assets at the checkout, carries
  the run's vars, and leaves out what cannot run offline: the Workers AI binding (its
  local mode calls Cloudflare) and the `[build]` step (done here instead);
- python_modules/ is workerd_dev.python_modules' closure (kept in the cache per
  uv.lock) plus the first-party packages outside src/ (workerd_dev.worker_build's copy),
  and the demo planner, which only local runs carry.

wrangler.toml itself is never changed, and the checkout's python_modules/ (a deploy's
`pywrangler sync`) is never touched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workerd_dev import PROJECT_DIR, cache_dir, write_atomically
from workerd_dev.pyodide_bundle import COMPAT_FLAGS
from workerd_dev.python_modules import Vendored, vendor
from workerd_dev.substitutes import STANDINS_DIR, SUBSTITUTES
from workerd_dev.worker_build import PACKAGES, copy_packages

CONFIG_NAME = "wrangler.json"
# First-party packages the local runs carry and an upload never does (the demo planner
# answers only where no model is configured).
LOCAL_PACKAGES = ("demo_planner",)
# Bindings whose local mode needs Cloudflare's network; a local run goes without them.
OFFLINE_DROPPED = ("ai",)


@dataclass(frozen=True)
class StagedProject:
    """A staged project: `wrangler dev --config <config>` runs it."""

    directory: Path
    config: Path
    vendored: Vendored


def staged_config(project_dir: Path, variables: Mapping[str, str]) -> dict[str, Any]:
    """wrangler.toml as a local workerd run needs it (the deploy config is unchanged)."""
    config: dict[str, Any] = tomllib.loads((project_dir / "wrangler.toml").read_text())
    config["main"] = str((project_dir / config["main"]).resolve())
    flags = list(config.get("compatibility_flags", []))
    config["compatibility_flags"] = flags + [f for f in COMPAT_FLAGS if f not in flags]
    assets = config.get("assets")
    if assets is not None and "directory" in assets:
        assets["directory"] = str((project_dir / assets["directory"]).resolve())
    for key in ("build", *OFFLINE_DROPPED):
        config.pop(key, None)
    config["vars"] = {**config.get("vars", {}), **dict(variables)}
    return config


def _lock_digest(project_dir: Path) -> str:
    # The lock, and what stands in for the packages it cannot give offline.
    digest = hashlib.sha256((project_dir / "uv.lock").read_bytes())
    digest.update(json.dumps(SUBSTITUTES, default=vars, sort_keys=True).encode())
    for path in sorted(STANDINS_DIR.rglob("*.py")):
        digest.update(path.relative_to(STANDINS_DIR).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def vendored_modules(project_dir: Path, cache: Path) -> tuple[Path, Vendored]:
    """The closure for this uv.lock, vendored once into the cache.

    Written beside its final name and renamed into place, manifest last: two runs that
    start together (two test workers) each build a copy, and one of them is kept.
    """
    folder = cache / "python_modules" / _lock_digest(project_dir)
    manifest = folder.with_suffix(".json")
    if not (manifest.exists() and folder.is_dir()):
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent) as scratch:
            built = Path(scratch) / "python_modules"
            result = vendor(built, project_dir, cache)
            with contextlib.suppress(OSError):  # another run renamed its copy first
                built.rename(folder)
        write_atomically(
            manifest,
            json.dumps(
                {
                    "wheels": result.wheels,
                    "standins": result.standins,
                    "substitutes": result.substitutes,
                }
            ),
        )
    data = json.loads(manifest.read_text())
    return folder, Vendored(
        tuple(data["wheels"]), tuple(data["standins"]), tuple(data.get("substitutes", ()))
    )


def stage(
    stage_dir: Path,
    variables: Mapping[str, str],
    project_dir: Path = PROJECT_DIR,
    cache: Path | None = None,
) -> StagedProject:
    """Write the staged project into `stage_dir` (its python_modules/ replaced)."""
    cache = cache or cache_dir()
    stage_dir.mkdir(parents=True, exist_ok=True)
    source, vendored = vendored_modules(project_dir, cache)
    modules = stage_dir / "python_modules"
    if modules.exists():
        shutil.rmtree(modules)
    shutil.copytree(source, modules)
    copy_packages(project_dir, modules, (*PACKAGES, *LOCAL_PACKAGES))
    config = stage_dir / CONFIG_NAME
    config.write_text(json.dumps(staged_config(project_dir, variables), indent=2))
    return StagedProject(directory=stage_dir, config=config, vendored=vendored)
