"""`wrangler deploy --dry-run` builds the worker's bundle offline, with every module it imports.

Runs the wrangler pinned in package.json (installed by `npm ci` in scripts/bootstrap)
on a copy of the project, inside a network namespace with no network at all when
the machine allows one (`unshare -n`). Skipped only where Node.js is absent.

pywrangler's sync step (vendoring pyproject's dependencies into python_modules/)
needs the Pyodide package index and a Pyodide interpreter from the network, so it
is not part of this test; wrangler's part, which uploads src/, python_modules/ and
the [build] step's durable_objects copy, is.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cloudflare.import_graph import first_party_closure

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
COPIED = ("wrangler.toml", "pyproject.toml", "src", "durable_objects", "web", "scripts")

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None and not (BIN / "node").exists(),
    reason="Node.js is not installed: wrangler cannot run here",
)


def _offline_prefix() -> list[str]:
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True, check=False, timeout=10)
    return [unshare, "-n"] if probe.returncode == 0 else []


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bool, Path]:
    """Run the dry run once: (bundle, wrangler's output, ran without a network, project copy)."""
    wrangler = BIN / "wrangler"
    assert wrangler.exists(), "the pinned wrangler is missing: run `npm ci` (scripts/bootstrap)"
    work = tmp_path_factory.mktemp("project")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, work / name, ignore=ignore)
        else:
            shutil.copy2(source, work / name)
    out = work / "dist"
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "WRANGLER_SEND_METRICS": "false",
        "CI": "true",
        "HOME": str(work / "home"),
        "XDG_CONFIG_HOME": str(work / "home" / ".config"),
    }
    offline = _offline_prefix()
    result = subprocess.run(
        [*offline, str(wrangler), "deploy", "--dry-run", "--outdir", str(out)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    return out, output, bool(offline), work


def test_the_bundle_has_every_module_the_worker_imports(
    dry_run: tuple[Path, str, bool, Path],
) -> None:
    out, _, _, work = dry_run
    # Compared with the copy wrangler built from (the work tree may change meanwhile).
    assert (out / "entry.py").read_text() == (work / "src" / "entry.py").read_text()
    reached = first_party_closure(work / "src" / "entry.py", [work / "src", work])
    assert "durable_objects.chat" in reached and "albert.cloudflare.sockets" in reached
    missing = []
    for name, source in reached.items():
        if source.is_relative_to(work / "src"):
            bundled = out / source.relative_to(work / "src")
        else:
            # durable_objects/ lives outside src/: the [build] step vendors it.
            bundled = out / "python_modules" / source.relative_to(work)
        if not bundled.exists() or bundled.read_bytes() != source.read_bytes():
            missing.append(name)
    assert missing == []


def test_nothing_local_only_is_uploaded(dry_run: tuple[Path, str, bool, Path]) -> None:
    out, _, _, _ = dry_run
    uploaded = {p.relative_to(out).parts[0] for p in out.rglob("*.py")}
    assert uploaded <= {"entry.py", "albert", "python_modules"}
    vendored = {p.name for p in (out / "python_modules").iterdir()}
    assert vendored == {"durable_objects"}


def test_bindings_and_build_step_as_configured(dry_run: tuple[Path, str, bool, Path]) -> None:
    _, output, offline, _ = dry_run
    assert "[custom build] Running: python3 scripts/build_worker.py" in output
    assert "Vendored Modules" in output
    for binding in ("env.CHAT (ChatDurableObject)", "env.AI", "env.ASSETS", "env.WORKERS_AI_MODEL"):
        assert binding in output
    if not offline:
        pytest.skip("ran with the machine's network: this machine refuses `unshare -n`")
