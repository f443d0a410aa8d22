"""Compile the local chain's Solidity contracts with the pinned solc-js (npm `solc`).

The compiled runtime code is committed next to the sources (`contracts/artifacts.json`), so
neither `albert dev` nor the tests need a compiler; `tests/data_server/localchain/
test_contracts.py` recompiles and checks that the committed artifacts are exactly what the
pinned compiler makes of the committed sources.

    uv run python -m data_server.localchain.compile          # rewrite artifacts.json
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from albert.tools.keccak import keccak256

CONTRACTS_DIR = Path(__file__).parent / "contracts"
ARTIFACTS_FILE = CONTRACTS_DIR / "artifacts.json"
PROJECT_DIR = Path(__file__).resolve().parents[2]
SOURCES = ("SeedToken.sol", "SeedVault.sol", "EnsRegistry.sol", "EnsResolver.sol")
SETTINGS: dict[str, Any] = {
    "optimizer": {"enabled": True, "runs": 200},
    # Pinned so the bytecode does not change with the compiler's default; anvil runs later forks.
    "evmVersion": "cancun",
    "outputSelection": {"*": {"*": ["abi", "evm.deployedBytecode.object"]}},
}

# Reads standard-JSON input on stdin, writes the compiler version and output on stdout.
_RUNNER = """
const solc = require('solc');
let input = '';
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  const output = JSON.parse(solc.compile(input));
  process.stdout.write(JSON.stringify({version: solc.version(), output}));
});
"""


class CompileError(RuntimeError):
    """solc-js is missing or the sources do not compile."""


def node_binary() -> str:
    """The Node.js that `npm ci` pinned into node_modules, else the one on PATH."""
    pinned = PROJECT_DIR / "node_modules" / ".bin" / "node"
    if pinned.exists():
        return str(pinned)
    found = shutil.which("node")
    if found is None:
        raise CompileError("Node.js is not installed (scripts/bootstrap installs it with npm)")
    return found


def compile_contracts() -> dict[str, Any]:
    """Compile every source; the artifacts document (compiler, settings, per-contract code)."""
    sources = {name: {"content": (CONTRACTS_DIR / name).read_text()} for name in SOURCES}
    request = json.dumps({"language": "Solidity", "sources": sources, "settings": SETTINGS})
    if not (PROJECT_DIR / "node_modules" / "solc").exists():
        raise CompileError("solc-js is not installed: run scripts/bootstrap (npm ci)")
    done = subprocess.run(
        [node_binary(), "-e", _RUNNER],
        input=request.encode(),
        capture_output=True,
        cwd=PROJECT_DIR,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise CompileError(done.stderr.decode(errors="replace")[-2000:])
    result = json.loads(done.stdout)
    errors = [e for e in result["output"].get("errors", []) if e.get("severity") == "error"]
    if errors:
        raise CompileError("\n".join(e.get("formattedMessage", e["message"]) for e in errors))
    contracts: dict[str, Any] = {}
    for source in SOURCES:
        name = source.removesuffix(".sol")
        compiled = result["output"]["contracts"][source][name]
        contracts[name] = {
            "source": source,
            "source_keccak256": "0x" + keccak256(sources[source]["content"].encode()).hex(),
            "abi": compiled["abi"],
            "runtime_bytecode": "0x" + compiled["evm"]["deployedBytecode"]["object"],
        }
    return {
        "compiler": f"solc-js {result['version']}",
        "settings": SETTINGS,
        "contracts": contracts,
    }


def write_artifacts(path: Path = ARTIFACTS_FILE) -> dict[str, Any]:
    """Compile and write the artifacts file."""
    artifacts = compile_contracts()
    path.write_text(json.dumps(artifacts, indent=1, sort_keys=True) + "\n")
    return artifacts


def main() -> int:
    """Rewrite contracts/artifacts.json from the sources."""
    try:
        artifacts = write_artifacts()
    except CompileError as exc:
        print(f"compile failed: {exc}", file=sys.stderr)
        return 1
    sizes = ", ".join(
        f"{name} {len(c['runtime_bytecode']) // 2 - 1} bytes"
        for name, c in artifacts["contracts"].items()
    )
    print(f"{artifacts['compiler']}: {sizes}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
