"""scripts/ holds entry points only: each runs from a fresh clone as its users run it."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def test_the_build_step_builds_its_own_checkout_on_a_bare_python(tmp_path: Path) -> None:
    # wrangler runs `python3 scripts/build_worker.py` in the project it deploys, with no
    # venv: `-S` leaves out every installed package (this checkout's editable install too),
    # so only the standard library and the copy are importable, and the copy is built.
    copy = tmp_path / "project"
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("scripts", "workerd_dev", "durable_objects"):
        shutil.copytree(ROOT / name, copy / name, ignore=ignore)
    (copy / "pyproject.toml").write_text('[project]\nname = "probe"\nversion = "0"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["ALBERT_ALLOW_UNSYNCED_BUILD"] = "1"
    done = subprocess.run(
        [sys.executable, "-S", str(copy / "scripts" / "build_worker.py")],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (copy / "python_modules" / "durable_objects" / "chat.py").is_file()
    assert (
        not (ROOT / "python_modules" / "durable_objects").exists()
        or (ROOT / "python_modules" / "workers").exists()
    )


def test_the_compat_check_runs_as_documented() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPTS / "check_pyodide_compat.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "what a deploy installs" in done.stdout


def test_the_python_scripts_define_no_logic_of_their_own() -> None:
    # Entry points import what they run from a package the wheel ships.
    thin = ("build_worker.py", "check_pyodide_compat.py")
    for name in thin:
        tree = ast.parse((SCRIPTS / name).read_text())
        defined = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        assert defined == [], name
