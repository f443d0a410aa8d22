"""What stands in for the packages no Pyodide build of can be had offline, proven on its own.

rpds-py's substitute is real code (pyrsistent-as-rpds-py): jsonschema validates with it,
under CPython and inside workerd. The cryptography stand-in holds only the names the `mcp`
client imports; any use of one writes STANDIN_CALLED to the run's output and raises, which
the conformance suite's runtimes check for when they stop (tests/support/runtime_process).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.runtime_process import StandInCalled, check_no_standin_called
from workerd_dev import PROJECT_DIR, cache_dir
from workerd_dev.harness import run_in_workerd
from workerd_dev.project import stage, vendored_modules
from workerd_dev.pyodide_bundle import ensure_bundle
from workerd_dev.substitutes import STANDIN_CALLED
from workerd_dev.tools import Tools

# Output schemas as the data server declares them, checked the way the mcp client checks
# a tool's structured result (jsonschema, on referencing, on rpds).
_VALIDATE = """
import jsonschema
schema = {
    "type": "object",
    "properties": {"vaults": {"type": "array", "items": {"$ref": "#/$defs/Vault"}}},
    "required": ["vaults"],
    "$defs": {"Vault": {"type": "object", "properties": {"apy": {"type": "number"}},
                        "required": ["apy"]}},
}
jsonschema.validate({"vaults": [{"apy": 4.2}]}, schema)
try:
    jsonschema.validate({"vaults": [{"apy": "high"}]}, schema)
    bad = "accepted"
except jsonschema.ValidationError as exc:
    bad = exc.message
import rpds
"""


@pytest.fixture(scope="module")
def modules() -> Path:
    return vendored_modules(PROJECT_DIR, cache_dir())[0]


def test_jsonschema_validates_on_the_rpds_substitute_under_cpython(modules: Path) -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(modules)!r})\n"
        + _VALIDATE
        + "print(rpds.__file__, rpds.is_pure_pyrsistent_as_rpds, repr(bad))\n"
    )
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert probe.returncode == 0, probe.stderr
    where, pure, bad = probe.stdout.split(" ", 2)
    assert where.startswith(str(modules)) and pure == "True"
    assert "'high' is not of type 'number'" in bad


def test_inside_workerd_the_client_loads_validates_and_a_used_stand_in_says_so(
    tools: Tools, tmp_path: Path
) -> None:
    staged = stage(tmp_path / "stage", {})
    body = "\n".join(
        "        " + line
        for line in (
            _VALIDATE
            + """
import mcp, mcp.client.streamable_http  # the client's whole import path
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
try:
    AESGCM(b"0" * 32)
    used = "made"
except RuntimeError as exc:
    used = type(exc).__name__
try:
    from cryptography import x509
    x509_found = True
except ModuleNotFoundError:
    x509_found = False
import jwt.algorithms  # offers HS256 alone when cryptography is not there
report(
    bad=bad, used=used, x509_found=x509_found, jwt_crypto=jwt.algorithms.has_crypto,
    rpds=rpds.__name__,
)
"""
        ).splitlines()
    )
    run = run_in_workerd(
        tools, ensure_bundle(tools), staged.directory / "python_modules", body + "\n"
    )
    [result] = run.results
    assert "'high' is not of type 'number'" in str(result["bad"])
    assert result["used"] == "StandInCalled" and result["x509_found"] is False
    assert result["jwt_crypto"] is False
    # The use reached workerd's output, where a runtime's log would hold it.
    assert f"{STANDIN_CALLED}: cryptography.hazmat.primitives.ciphers.aead.AESGCM" in run.output


def test_a_runtime_log_naming_a_used_stand_in_fails_the_run(tmp_path: Path) -> None:
    log = tmp_path / "runtime.log"
    log.write_text("[wrangler:info] Ready\nGET /healthz 200\n")
    check_no_standin_called(log)
    with log.open("a") as out:
        out.write(f"{STANDIN_CALLED}: cryptography.hazmat.primitives.hashes.SHA256 is …\n")
    with pytest.raises(StandInCalled, match=r"hashes\.SHA256"):
        check_no_standin_called(log)
