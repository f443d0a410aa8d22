"""The Pyodide compatibility check: on the project's own lock, and on locks made to fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import check_pyodide_compat as compat

PROJECT = Path(__file__).resolve().parents[2]


def test_every_runtime_dependency_installs_under_pyodide() -> None:
    verdicts, notes = compat.check(PROJECT)
    by_name = {v.name: v for v in verdicts}
    missing = [f"{v.name}: {v.detail}" for v in verdicts if v.kind == "missing"]
    assert missing == []
    # The closure is the real one: the worker's own deps and the MCP client's.
    for name in ("pydantic", "pydantic-core", "httpx", "anyio", "h11", "mcp", "httpx2"):
        assert name in by_name
    assert by_name["pydantic-core"].kind == "pyodide"
    assert by_name["httpx"].kind == "pure"
    # Markers are evaluated for Emscripten: httpx2's fetch backend is in, uvicorn is out.
    assert "httpx2-jsfetch" in by_name
    assert "uvicorn" not in by_name and "truststore" not in by_name
    assert any("pydantic-core" in note for note in notes)


def test_main_reports_success(capsys: pytest.CaptureFixture[str]) -> None:
    assert compat.main() == 0
    assert "all pure Python or shipped by Pyodide 314.0.6" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("filename", "pure"),
    [
        ("httpx-0.28.1-py3-none-any.whl", True),
        ("six-1.16.0-py2.py3-none-any.whl", True),
        ("pydantic_core-2.41.5-cp314-cp314-pyemscripten_2026_0_wasm32.whl", False),
        ("orjson-3.10.0-cp311-cp311-manylinux_2_17_x86_64.whl", False),
        ("cryptography-47.0.0-cp314-abi3-manylinux_2_28_x86_64.whl", False),
    ],
)
def test_wheel_tags(filename: str, pure: bool) -> None:
    assert compat.is_pure_wheel(filename) is pure


def _write_project(root: Path, deps: list[str], packages: str) -> None:
    quoted = ", ".join(f'"{d}"' for d in deps)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "probe"\nversion = "0"\ndependencies = [{quoted}]\n'
    )
    (root / "uv.lock").write_text("version = 1\n" + packages)


def _package(name: str, version: str, wheels: list[str], deps: str = "") -> str:
    wheel_lines = ", ".join(f'{{ url = "https://files.example/{w}" }}' for w in wheels)
    return (
        f'\n[[package]]\nname = "{name}"\nversion = "{version}"\n'
        f"dependencies = [{deps}]\nwheels = [{wheel_lines}]\n"
    )


def test_a_native_package_pyodide_does_not_ship_fails(tmp_path: Path) -> None:
    _write_project(
        tmp_path,
        ["fastjson"],
        _package(
            "fastjson",
            "1.0",
            ["fastjson-1.0-cp311-cp311-manylinux_2_17_x86_64.whl"],
            '{ name = "uvloop", marker = "sys_platform != \'emscripten\'" }, { name = "orjson" }',
        )
        + _package("uvloop", "0.21", ["uvloop-0.21-cp311-cp311-manylinux_2_17_x86_64.whl"])
        + _package("orjson", "3.10.0", ["orjson-3.10.0-cp311-cp311-manylinux_2_17_x86_64.whl"]),
    )
    verdicts, _ = compat.check(tmp_path)
    kinds = {v.name: v.kind for v in verdicts}
    assert kinds == {"fastjson": "missing", "orjson": "pyodide"}


def test_a_source_only_package_fails(tmp_path: Path) -> None:
    _write_project(tmp_path, ["oldlib"], _package("oldlib", "0.1", []))
    [verdict] = compat.check(tmp_path)[0]
    assert verdict.kind == "missing" and "source distribution" in verdict.detail
