"""The browser's vendored modules are the pinned npm packages, with their licences."""

from __future__ import annotations

import json

import pytest

from scripts.vendor_web import MODULES, ROOT, TEST_MODULES, TEST_VENDOR, VENDOR, copies, pinned


def test_every_vendored_module_is_pinned_exactly_and_carries_its_licence() -> None:
    versions = pinned()
    assert set(versions) == {*MODULES, *TEST_MODULES}
    for name, version in versions.items():
        assert version[0].isdigit(), f"{name} is pinned to an exact version, not {version}"
        served = name in MODULES
        folder = (VENDOR if served else TEST_VENDOR) / name
        module = f"{name}.js" if served else TEST_MODULES[name][0]
        assert (folder / module).is_file()
        assert any(p.name.startswith("LICENSE") for p in folder.iterdir())
        listed = (folder.parent / "README.md").read_text()
        assert f"`{name}` {version}" in listed
    lock = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    assert all(lock[f"node_modules/{n}"]["version"] == v for n, v in versions.items())


def test_the_vendored_files_are_the_installed_packages_files() -> None:
    pairs = [(source, target) for source, target in copies() if source.exists()]
    if not pairs:
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


def test_test_only_scripts_are_not_under_the_served_folder() -> None:
    # axe-core is for the browser tests: nothing under web/ (what users get) names it.
    assert not (VENDOR / "axe-core").exists()
    for path in (ROOT / "web").rglob("*"):
        if path.is_file() and path.suffix in {".js", ".html"}:
            assert "axe-core" not in path.read_text(), path
