"""`wrangler deploy --dry-run` builds the worker's bundle offline, with every module it imports.

Runs the wrangler pinned in package.json (installed by `npm ci` in scripts/bootstrap)
on a copy of the project, inside a network namespace with no network at all when
the machine allows one (`unshare -n`). Skipped only where Node.js is absent.

pywrangler's sync step (vendoring pyproject's dependencies into python_modules/)
needs the Pyodide package index and a Pyodide interpreter from the network, so it
is not part of this test; wrangler's part, which uploads src/, python_modules/ and
the [build] step's durable_objects copy, is. The [build] step refuses a tree that
was never synced (such an upload could not import `workers`); this test alone
passes its escape, ALBERT_ALLOW_UNSYNCED_BUILD=1, and also shows the refusal
reaching wrangler's output without it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cloudflare.import_graph import first_party_closure
from workerd_dev.worker_build import ALLOW_UNSYNCED_ENV

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / "node_modules" / ".bin"
# workerd_dev: the [build] command (scripts/build_worker.py) runs its worker_build module.
COPIED = (
    "wrangler.toml",
    "pyproject.toml",
    "src",
    "durable_objects",
    "web",
    "scripts",
    "workerd_dev",
)

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


def _wrangler_dry_run(
    work: Path, out: Path, *, allow_unsynced: bool
) -> tuple[subprocess.CompletedProcess[str], bool]:
    wrangler = BIN / "wrangler"
    assert wrangler.exists(), "the pinned wrangler is missing: run `npm ci` (scripts/bootstrap)"
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "WRANGLER_SEND_METRICS": "false",
        "CI": "true",
        "HOME": str(work / "home"),
        "XDG_CONFIG_HOME": str(work / "home" / ".config"),
    }
    env.pop(ALLOW_UNSYNCED_ENV, None)
    if allow_unsynced:
        env[ALLOW_UNSYNCED_ENV] = "1"
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
    return result, bool(offline)


def _copy_project(work: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, work / name, ignore=ignore)
        else:
            shutil.copy2(source, work / name)


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, bool, Path]:
    """Run the dry run once: (bundle, wrangler's output, ran without a network, project copy)."""
    work = tmp_path_factory.mktemp("project")
    _copy_project(work)
    out = work / "dist"
    result, offline = _wrangler_dry_run(work, out, allow_unsynced=True)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    return out, output, offline, work


def test_an_unsynced_tree_is_refused_by_the_build_step(tmp_path: Path) -> None:
    # What `npx wrangler deploy` without pywrangler would upload: no workers SDK.
    _copy_project(tmp_path)
    out = tmp_path / "dist"
    result, _ = _wrangler_dry_run(tmp_path, out, allow_unsynced=False)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output[-4000:]
    assert "refusing to build: python_modules/ is not a pywrangler sync" in output
    assert "`uv run pywrangler deploy`" in output
    assert not (out / "entry.py").exists()


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
    # The escape is loud: the bundle of an unsynced tree is said to be unable to run.
    assert "This bundle cannot serve requests" in output
    assert "Vendored Modules" in output
    for binding in ("env.CHAT (ChatDurableObject)", "env.AI", "env.ASSETS", "env.WORKERS_AI_MODEL"):
        assert binding in output
    if not offline:
        pytest.skip("ran with the machine's network: this machine refuses `unshare -n`")
