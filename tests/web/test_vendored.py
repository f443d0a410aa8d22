"""The browser's vendored modules are the pinned npm packages, with their licences."""

from __future__ import annotations

import json

import pytest

from scripts.vendor_web import MODULES, ROOT, VENDOR, copies, pinned


def test_every_vendored_module_is_pinned_exactly_and_carries_its_licence() -> None:
    versions = pinned()
    assert set(versions) == set(MODULES)
    for name, version in versions.items():
        assert version[0].isdigit(), f"{name} is pinned to an exact version, not {version}"
        folder = VENDOR / name
        assert (folder / f"{name}.js").is_file()
        assert any(p.name.startswith("LICENSE") for p in folder.iterdir())
    listed = (VENDOR / "README.md").read_text()
    assert all(f"`{name}` {version}" in listed for name, version in versions.items())
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    assert all(lock[f"node_modules/{n}"]["version"] == v for n, v in versions.items())


def test_the_vendored_files_are_the_installed_packages_files() -> None:
    pairs = copies()
    if not all(source.exists() for source, _ in pairs):
        pytest.skip("node_modules is not installed (scripts/bootstrap installs it)")
    for source, target in pairs:
        assert target.read_bytes() == source.read_bytes(), f"{target}: run scripts/vendor_web.py"


def test_the_chat_imports_only_vendored_or_own_modules() -> None:
    for module in (ROOT / "web" / "js").glob("*.js"):
        for line in module.read_text().splitlines():
            if line.startswith("import ") and " from " in line:
                target = line.rsplit(" from ", 1)[1].strip(' ";')
                assert target.startswith(("./", "../vendor/")), (module.name, target)
                assert (module.parent / target).resolve().is_file(), (module.name, target)
