"""workerd's dev Pyodide bundle: built from the npm package, reproducibly, and run by workerd."""

from __future__ import annotations

import hashlib
import tarfile
from pathlib import Path

import pytest

from workerd_dev.pyodide_bundle import (
    PATCHES,
    PYODIDE_VERSION,
    BundleError,
    build,
    ensure_bundle,
    fetch_pyodide,
    patch_runtime,
    probe,
)
from workerd_dev.tools import Tools


def _asm_mjs(cache: Path) -> str:
    with tarfile.open(fetch_pyodide(PYODIDE_VERSION, cache)) as archive:
        member = archive.extractfile("package/pyodide.asm.mjs")
        assert member is not None
        return member.read().decode()


def test_every_patch_fits_the_pinned_pyodide_and_leaves_none_of_its_targets(
    fresh_cache: Path,
) -> None:
    source = _asm_mjs(fresh_cache)
    patched = patch_runtime(source)
    for patch in PATCHES:
        assert patch.find in source
        assert patch.replace in patched
    # The runtime imports the factory by name and the wrappers from workerd's module.
    assert "export { _createPyodideModule }" in patched
    assert "from 'pyodide-internal:builtin_wrappers'" in patched
    assert "crypto.getRandomValues(" not in patched and "eval(func)" not in patched


def test_a_pyodide_the_patches_do_not_fit_is_refused_by_name() -> None:
    with pytest.raises(BundleError) as refused:
        patch_runtime("export default _createPyodideModule; Date.now()")
    message = str(refused.value)
    assert "'new WebAssembly.Module'" in message and "'function loadLibData(){'" in message
    assert "'Date.now'" not in message


def test_two_builds_are_byte_identical(tmp_path: Path, fresh_cache: Path) -> None:
    first = build(PYODIDE_VERSION, fresh_cache)
    other = tmp_path / "other"
    (other / "npm").mkdir(parents=True)
    tarball = fetch_pyodide(PYODIDE_VERSION, fresh_cache)
    (other / "npm" / tarball.name).write_bytes(tarball.read_bytes())
    second = build(PYODIDE_VERSION, other)
    assert first.path != second.path
    assert first.sha256 == second.sha256 == hashlib.sha256(second.path.read_bytes()).hexdigest()
    assert 5_000_000 < first.size < 50_000_000


def test_the_installed_workerd_runs_python_on_the_bundle(tools: Tools, fresh_cache: Path) -> None:
    bundle = ensure_bundle(tools, fresh_cache)
    result = probe(tools, bundle)
    assert result.ran, result.output[-2000:]
    assert result.pyodide == bundle.pyodide_version
    assert result.python is not None and result.python.startswith("3.14.")


def test_a_wrong_first_guess_is_corrected_by_what_workerd_asks_for(
    tools: Tools, fresh_cache: Path
) -> None:
    wanted = ensure_bundle(tools, fresh_cache).pyodide_version
    other = "314.0.7" if wanted != "314.0.7" else "314.0.5"
    wrong = build(other, fresh_cache)
    refused = probe(tools, wrong)
    assert not refused.ran and refused.expected == wanted, refused.output[-2000:]
    # Asked afresh (nothing remembered), a wrong guess ends with the bundle workerd runs.
    (fresh_cache / "bundles" / f"workerd-{tools.workerd_version}.json").unlink()
    assert ensure_bundle(tools, fresh_cache, guess=other).pyodide_version == wanted
