"""The committed contract artifacts are exactly what the pinned solc-js makes of the sources."""

from __future__ import annotations

import json
import shutil

import pytest

from albert.tools.keccak import keccak256
from data_server.localchain.compile import (
    ARTIFACTS_FILE,
    CONTRACTS_DIR,
    PROJECT_DIR,
    SOURCES,
    compile_contracts,
)


def _committed() -> dict:
    return json.loads(ARTIFACTS_FILE.read_text())


def test_artifacts_name_their_compiler_and_match_the_committed_sources() -> None:
    artifacts = _committed()
    pinned = json.loads((PROJECT_DIR / "package.json").read_text())["devDependencies"]["solc"]
    assert artifacts["compiler"].startswith(f"solc-js {pinned}+commit.")
    assert sorted(c["source"] for c in artifacts["contracts"].values()) == sorted(SOURCES)
    for contract in artifacts["contracts"].values():
        source = (CONTRACTS_DIR / contract["source"]).read_bytes()
        assert contract["source_keccak256"] == "0x" + keccak256(source).hex(), contract["source"]
        assert contract["runtime_bytecode"].startswith("0x6080")


@pytest.mark.timeout(300)
def test_recompiling_with_the_pinned_solc_js_gives_the_committed_artifacts() -> None:
    if shutil.which("node") is None and not (PROJECT_DIR / "node_modules/.bin/node").exists():
        pytest.skip("Node.js is not installed, so scripts/bootstrap installed no solc-js")
    assert compile_contracts() == _committed()
