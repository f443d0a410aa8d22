"""The wheel ships every package it lists, and each of its modules imports from the wheel
alone: nothing it ships reaches for a folder it leaves out (scripts/, tests/).

The wheel is built offline (`uv build --offline`: hatchling comes from uv's cache, where
scripts/bootstrap's `uv sync` left it), then unpacked and imported in a subprocess whose
sys.path has the unpacked wheel in place of the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Modules that stand in for other top-level names (`workers`, `js`, `cryptography`) on a
# sys.path of their own, or run a command when imported.
NOT_IMPORTED_BY_NAME = ("miniflare/shims/", "workerd_dev/standins/")

IMPORT_ALL = """
import importlib, json, sys
from pathlib import Path

site, root, names = Path(sys.argv[1]), Path(sys.argv[2]).resolve(), json.loads(sys.argv[3])
# The editable install puts the checkout on sys.path: only the wheel may answer.
sys.path[:] = [site.as_posix()] + [
    p for p in sys.path if p and Path(p).resolve() not in (root, root / "src")
]
import miniflare

miniflare.install_shims()  # the worker's modules import `workers` and `js`, as under Pyodide
outside = []
for name in names:
    module = importlib.import_module(name)
    where = getattr(module, "__file__", None) or ""
    if not Path(where).resolve().is_relative_to(site.resolve()):
        outside.append(f"{name}: {where}")
print(json.dumps({"imported": len(names), "outside": outside}))
"""


def uv() -> list[str]:
    """The uv that runs this session (`uv run` says where), else the one on PATH."""
    found = os.environ.get("UV") or shutil.which("uv")
    if found is None:
        pytest.fail("no uv: scripts/bootstrap installs it")
    return [found]


def module_names(site: Path, packages: list[str]) -> list[str]:
    """Every importable module of the shipped packages, by dotted name."""
    names = []
    for package in packages:
        for path in sorted((site / package).rglob("*.py")):
            relative = path.relative_to(site).as_posix()
            if path.name == "__main__.py" or relative.startswith(NOT_IMPORTED_BY_NAME):
                continue
            parts = list(path.relative_to(site).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            names.append(".".join(parts))
    return names


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [*uv(), "build", "--wheel", "--offline", "--out-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    [built] = out.glob("*.whl")
    return built


def shipped_packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    listed = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    return [Path(folder).name for folder in listed]


def test_the_wheel_ships_the_listed_packages_and_nothing_else(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        tops = {name.split("/", 1)[0] for name in archive.namelist()}
    tops = {top for top in tops if not top.endswith(".dist-info")}
    assert tops == set(shipped_packages())
    assert not tops & {"scripts", "tests", "bench", "evals"}


def test_every_module_of_the_wheel_imports_from_the_wheel(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    names = module_names(site, shipped_packages())
    assert len(names) > 200
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, str(site), str(ROOT), json.dumps(names)],
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"imported": len(names), "outside": []}
