"""python_modules/ for local workerd runs: the locked closure from PyPI, loud stand-ins."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import httpx
import pytest

from workerd_dev.python_modules import (
    VendorError,
    fetch_wheel,
    unpack_wheel,
    vendor,
    write_standin,
)
from workerd_dev.substitutes import STANDIN_MARKER


def test_the_closure_is_vendored_with_pyodides_pydantic_core(
    tmp_path: Path, fresh_cache: Path
) -> None:
    into = tmp_path / "python_modules"
    result = vendor(into, cache=fresh_cache)
    for package in ("pydantic", "pydantic_core", "httpx", "mcp", "jwt", "workers"):
        assert (into / package / "__init__.py").is_file(), package
    # The compiled core is the Pyodide build from PyPI, not this machine's.
    built = [p.name for p in (into / "pydantic_core").glob("_pydantic_core*.so")]
    assert built and all("emscripten" in name and "wasm32" in name for name in built), built
    assert any(w.startswith("workers_runtime_sdk-") for w in result.wheels)
    assert set(result.standins) == {"cffi", "cryptography"}
    assert result.substitutes == ("rpds-py",)
    # rpds-py's place is taken by real packages from PyPI, at their locked versions.
    assert any(w.startswith("pyrsistent_as_rpds_py-") for w in result.wheels)
    assert any(w.startswith("pyrsistent-") and w.endswith("-none-any.whl") for w in result.wheels)
    for module in ("rpds", "_cffi_backend"):
        assert STANDIN_MARKER in (into / module / "__init__.py").read_text()
    # cryptography: the client-only stand-in, as kept in workerd_dev/standins.
    assert (into / "cryptography" / "hazmat" / "primitives" / "kdf" / "hkdf.py").is_file()
    assert not (into / "cryptography" / "x509").exists()
    # Vendoring never fills a folder that holds something else.
    with pytest.raises(VendorError):
        vendor(into, cache=fresh_cache)


def test_a_stand_in_fails_its_import_naming_the_package(tmp_path: Path) -> None:
    assert write_standin("rpds-py", tmp_path) == ["rpds"]
    # First on the path, ahead of this venv's real rpds-py.
    probe = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import rpds"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert probe.returncode == 1
    assert "ModuleNotFoundError: rpds-py has no Pyodide build reachable offline" in probe.stderr


def test_a_download_that_does_not_match_the_lock_is_refused(tmp_path: Path) -> None:
    good = b"the real wheel"
    wheel = {
        "url": "https://files.example/pkg-1.0-py3-none-any.whl",
        "hash": "sha256:" + hashlib.sha256(good).hexdigest(),
    }
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=b"tampered"))
    with httpx.Client(transport=transport) as client, pytest.raises(VendorError):
        fetch_wheel(wheel, tmp_path, client)
    assert not (tmp_path / "wheels" / "pkg-1.0-py3-none-any.whl").exists()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, content=good))
    with httpx.Client(transport=transport) as client:
        assert fetch_wheel(wheel, tmp_path, client).read_bytes() == good


def test_a_wheel_unpacks_as_pip_target_does_and_never_outside(tmp_path: Path) -> None:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/__init__.py", "x = 1\n")
        archive.writestr("pkg-1.0.dist-info/METADATA", "Name: pkg\n")
        archive.writestr("pkg-1.0.data/purelib/extra.py", "y = 2\n")
        archive.writestr("pkg-1.0.data/scripts/tool", "#!/bin/sh\n")
        archive.writestr("../escape.py", "z = 3\n")
    into = tmp_path / "site"
    unpack_wheel(wheel, into)
    found = sorted(str(p.relative_to(into)) for p in into.rglob("*") if p.is_file())
    assert found == ["extra.py", "pkg-1.0.dist-info/METADATA", "pkg/__init__.py"]
    assert not (tmp_path / "escape.py").exists()
