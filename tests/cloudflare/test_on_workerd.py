"""The storage port's contract on a real Durable Object inside workerd.

tests/cloudflare/test_storage_port.py holds the SQL adapter to its contract against the
local runtime and against fakes of the JS objects; here its very cases run inside
workerd, in a Durable Object's fetch handler, with the object's real `ctx.storage.sql` and
`transactionSync` as the Workers SDK wraps them (workerd_dev.harness). A difference between
the fakes and the platform fails here.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cloudflare import test_storage_port
from tests.cloudflare.contract import cases
from workerd_dev import PROJECT_DIR
from workerd_dev.harness import Extras, run_in_workerd
from workerd_dev.project import stage
from workerd_dev.pyodide_bundle import ensure_bundle
from workerd_dev.python_modules import vendor_locked
from workerd_dev.tools import find_tools

SUITE = test_storage_port
CARRIED = (
    "tests/__init__.py",
    "tests/cloudflare/__init__.py",
    "tests/cloudflare/contract.py",
    "tests/cloudflare/platform.py",
    "tests/cloudflare/test_storage_port.py",
)

RUNNER = """
import json
import traceback

from workers import DurableObject, Response

from tests.cloudflare import test_storage_port as suite
from tests.cloudflare.contract import cases
from tests.cloudflare.platform import Platform

CASES = {case.id: case for case in cases(suite)}


class Probe(DurableObject):
    async def fetch(self, request):
        case = CASES[request.headers.get("x-case")]
        platform = Platform(
            name="workerd",
            ctx=self.ctx,
            alarms_fired=[],
            frames=lambda ws: [],
            binary_message=lambda data: data,
            wake=lambda: self.ctx,
        )
        try:
            await case.run(platform)
            outcome = {"ok": True}
        except BaseException as exc:
            detail = "".join(traceback.format_exception(exc))
            outcome = {"ok": False, "detail": detail[-3000:]}
        return Response(json.dumps(outcome))
"""

# Each case on an object of its own: a fresh database, as each test gets locally.
BODY = """        for case_id in CASES:
            answer = await self.env.OBJECTS.getByName(case_id).fetch(
                "https://harness.internal/", headers={"x-case": case_id}
            )
            report(case=case_id, **json.loads(await answer.text()))
"""


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[str, dict[str, Any]]]:
    tools = find_tools()
    bundle = ensure_bundle(tools)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        staged = stage(folder / "stage", {}, PROJECT_DIR)
        vendor_locked(["pytest"], folder / "pytest")
        extras = Extras(
            modules=tuple((name, PROJECT_DIR / name) for name in CARRIED),
            python_modules=(folder / "pytest",),
            durable_object="Probe",
        )
        run = run_in_workerd(
            tools,
            bundle,
            staged.directory / "python_modules",
            BODY,
            top_level=RUNNER,
            extras=extras,
        )
    yield {str(result["case"]): result for result in run.results}


@pytest.mark.parametrize("case", [case.id for case in cases(SUITE)])
def test_the_storage_contract_holds_on_workerd(outcomes, case: str) -> None:
    assert case in outcomes, sorted(outcomes)
    assert outcomes[case]["ok"], outcomes[case].get("detail")
