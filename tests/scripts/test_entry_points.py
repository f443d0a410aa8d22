"""scripts/ holds entry points only: each runs from a fresh clone as its users run it."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"


def test_the_build_step_runs_on_a_bare_python_outside_the_venv(tmp_path: Path) -> None:
    # wrangler runs `python3 scripts/build_worker.py` with no venv: `-S` leaves out every
    # installed package, so only the standard library and the checkout are importable.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("ALBERT_ALLOW_UNSYNCED_BUILD", None)
    done = subprocess.run(
        [sys.executable, "-S", str(SCRIPTS / "build_worker.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert done.returncode in (0, 1) and "build_worker:" in output


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
