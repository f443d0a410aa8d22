"""Wrangler's [build] step: check python_modules/ is a pywrangler sync, then add durable_objects/.

Wrangler uploads the main module's folder (src/) and python_modules/ from the
project root, which the Python Workers runtime adds to sys.path. pywrangler fills
python_modules/ with the vendored [project.dependencies] and the Workers SDK
(workers-runtime-sdk); this step adds the durable_objects package beside them,
fresh on every build.

An upload of a tree pywrangler never synced has no `workers` module: from the
compatibility date in wrangler.toml on, the runtime no longer brings its own
(`enable_python_external_sdk`), so every request would fail at import. A bare
`npx wrangler deploy` runs this step but not the sync, so the step refuses to
build until python_modules/ holds the SDK and every runtime dependency. The
offline dry-run test, which cannot sync (pywrangler needs the Pyodide index),
skips the refusal with ALBERT_ALLOW_UNSYNCED_BUILD=1; nothing else should.

Standard library only (plus `packaging` for dependency markers, where present):
wrangler runs it (through scripts/build_worker.py) with whatever python3 is on PATH,
outside the project's venv. workerd_dev's own __init__ is standard library only too.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from workerd_dev import PROJECT_DIR

ROOT = PROJECT_DIR
PACKAGES = ("durable_objects",)
SDK_DISTRIBUTION = "workers-runtime-sdk"
SDK_PACKAGE = "workers"
ALLOW_UNSYNCED_ENV = "ALBERT_ALLOW_UNSYNCED_BUILD"
DEPLOY_COMMAND = "uv run pywrangler deploy"

_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def normalize(name: str) -> str:
    """PEP 503 name normalisation (dist-info folders spell names with underscores)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class SyncReport:
    """What python_modules/ lacks to be a complete pywrangler sync."""

    missing: tuple[str, ...]

    @property
    def complete(self) -> bool:
        """True when the SDK and every runtime dependency are vendored."""
        return not self.missing


class UnsyncedUpload(RuntimeError):
    """python_modules/ was not filled by pywrangler: the upload could not import."""

    def __init__(self, report: SyncReport) -> None:
        super().__init__(refusal_message(report))
        self.report = report


# The environment markers of the Python Workers runtime (Python 3.14 on Pyodide).
PYODIDE_MARKERS = {
    "implementation_name": "cpython",
    "os_name": "posix",
    "platform_machine": "wasm32",
    "platform_python_implementation": "CPython",
    "platform_system": "Emscripten",
    "python_full_version": "3.14.2",
    "python_version": "3.14",
    "sys_platform": "emscripten",
}


def _applies_on_pyodide(spec: str) -> bool:
    # A dependency whose marker excludes Pyodide is not vendored by pywrangler. Markers
    # need `packaging`, which wrangler's python3 may lack: then such an entry is not
    # required (the rest of the check still stands).
    if ";" not in spec:
        return True
    try:
        from packaging.requirements import Requirement
    except ImportError:
        return False
    marker = Requirement(spec).marker
    return marker is None or marker.evaluate({**PYODIDE_MARKERS, "extra": ""})


def runtime_dependencies(root: Path = ROOT) -> list[str]:
    """Normalised names in [project.dependencies] that pywrangler vendors for Pyodide."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    names = []
    for spec in project.get("dependencies", []):
        match = _NAME.match(spec)
        if match and _applies_on_pyodide(spec):
            names.append(normalize(match.group(1)))
    return names


def vendored_distributions(vendor: Path) -> set[str]:
    """Normalised names of the distributions installed in python_modules/."""
    if not vendor.is_dir():
        return set()
    found = set()
    for entry in vendor.iterdir():
        if entry.is_dir() and entry.name.endswith(".dist-info"):
            found.add(normalize(entry.name.removesuffix(".dist-info").rsplit("-", 1)[0]))
    return found


def check_sync(root: Path = ROOT) -> SyncReport:
    """Compare python_modules/ with what a pywrangler sync puts there."""
    vendor = root / "python_modules"
    installed = vendored_distributions(vendor)
    missing: list[str] = []
    sdk_ok = SDK_DISTRIBUTION in installed and (vendor / SDK_PACKAGE / "__init__.py").is_file()
    if not sdk_ok:
        missing.append(f"{SDK_DISTRIBUTION} (the `{SDK_PACKAGE}` module)")
    for name in runtime_dependencies(root):
        if name not in installed and name != SDK_DISTRIBUTION:
            missing.append(name)
    return SyncReport(tuple(missing))


def refusal_message(report: SyncReport) -> str:
    """Why the build stops, and the command that makes it work."""
    return (
        "build_worker: refusing to build: python_modules/ is not a pywrangler sync.\n"
        f"  missing: {', '.join(report.missing)}\n"
        "  The Python Workers runtime has no built-in `workers` module at this\n"
        "  compatibility date and the dependencies are not vendored, so an upload of\n"
        "  this tree fails every request at import (ModuleNotFoundError).\n"
        f"  Deploy with `{DEPLOY_COMMAND}`: it syncs python_modules/ for Pyodide,\n"
        "  then runs wrangler (and this step). For a bare `npx wrangler deploy` or\n"
        "  `--dry-run`, run `uv run pywrangler sync` first."
    )


def build(root: Path = ROOT, *, allow_unsynced: bool = False) -> list[Path]:
    """Copy each first-party package outside src/ into python_modules/; return the files.

    Raises UnsyncedUpload when python_modules/ is not a pywrangler sync, unless
    `allow_unsynced` (the offline dry run only).
    """
    report = check_sync(root)
    if not report.complete and not allow_unsynced:
        raise UnsyncedUpload(report)
    return copy_packages(root, root / "python_modules")


def copy_packages(root: Path, vendor: Path, names: tuple[str, ...] = PACKAGES) -> list[Path]:
    """Copy first-party packages outside src/ into `vendor`, fresh; return the files."""
    copied: list[Path] = []
    for name in names:
        source = root / name
        target = vendor / name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for path in sorted(source.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            dest = target / path.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            copied.append(dest)
    return copied


def main(root: Path = ROOT) -> int:
    """Entry point for wrangler's [build] command."""
    allow = os.environ.get(ALLOW_UNSYNCED_ENV) == "1"
    try:
        files = build(root, allow_unsynced=allow)
    except UnsyncedUpload as exc:
        print(str(exc), file=sys.stderr)
        return 1
    report = check_sync(root)
    if not report.complete:
        print(
            f"build_worker: WARNING: python_modules/ is not a pywrangler sync "
            f"(missing: {', '.join(report.missing)}); built anyway because "
            f"{ALLOW_UNSYNCED_ENV}=1. This bundle cannot serve requests.",
            file=sys.stderr,
        )
    print(f"build_worker: {len(files)} module(s) copied into python_modules/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
