"""The storage and alarm ports' contracts, and every binding call, on a real Durable Object.

tests/cloudflare/test_storage_port.py and test_alarm_port.py hold the adapters to their
contracts, and test_binding_calls.py holds each binding call to the shape the platform
takes, against the local runtime and against fakes of the JS objects; here their very
cases run inside workerd, each in the fetch handler of a Durable Object of its own, with
its real ctx (SQL, transactionSync, alarms, WebSockets) and env (a namespace of the same
class, a text var) as the Workers SDK wraps them (workerd_dev.harness), all in one
`workerd test` run. A difference between the stand-ins and the platform fails here.

What a case reads of the platform from outside the object (what `waitUntil` keeps alive)
cannot be seen from inside workerd: such a case is skipped here, saying so.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.cloudflare import test_alarm_port, test_binding_calls, test_storage_port
from tests.cloudflare.contract import cases
from workerd_dev import PROJECT_DIR
from workerd_dev.harness import Extras, run_in_workerd
from workerd_dev.project import stage
from workerd_dev.pyodide_bundle import ensure_bundle
from workerd_dev.python_modules import vendor_locked
from workerd_dev.tools import find_tools

SUITES: dict[str, ModuleType] = {
    "storage": test_storage_port,
    "alarms": test_alarm_port,
    "bindings": test_binding_calls,
}
CARRIED = (
    "tests/__init__.py",
    "tests/cloudflare/__init__.py",
    "tests/cloudflare/contract.py",
    "tests/cloudflare/platform.py",
    "tests/cloudflare/test_storage_port.py",
    "tests/cloudflare/test_alarm_port.py",
    "tests/cloudflare/test_binding_calls.py",
)
# The env's text var the binding cases read (wrangler's [vars] are text bindings).
TEXT_BINDINGS = (("ALBERT_MODE", "production"),)

RUNNER = '''
import asyncio
import json
import traceback

import pytest
from workers import DurableObject, Response

from tests.cloudflare import test_alarm_port, test_binding_calls, test_storage_port
from tests.cloudflare.contract import cases
from tests.cloudflare.platform import Platform

SUITES = {"storage": test_storage_port, "alarms": test_alarm_port, "bindings": test_binding_calls}
CASES = {f"{suite}::{case.id}": case for suite, module in SUITES.items() for case in cases(module)}


class NotObservable(Exception):
    """What the platform does outside the object cannot be read from inside it."""


def unobservable(*_args):
    raise NotObservable("what waitUntil keeps alive is not observable from inside workerd")


class Probe(DurableObject):
    def __init__(self, ctx, env):
        super().__init__(ctx, env)
        self.fired = []

    async def alarm(self, *_info):
        self.fired.append(asyncio.get_running_loop().time())

    async def fetch(self, request):
        key = request.headers.get("x-case")
        if key is None:
            # A case's own request to an object of the namespace: its method and body.
            return Response(f"{request.method} {await request.text()}")
        case = CASES[key]
        platform = Platform(
            name="workerd",
            ctx=self.ctx,
            alarms_fired=self.fired,
            frames=unobservable,
            binary_message=lambda data: data,
            wake=lambda: self.ctx,
            kept_alive=unobservable,
            env=self.env,
            namespace=self.env.OBJECTS,
        )
        try:
            await case.run(platform)
            outcome = {"ok": True}
        except (NotObservable, pytest.skip.Exception) as exc:
            outcome = {"ok": None, "detail": str(exc)}
        except BaseException as exc:
            detail = "".join(traceback.format_exception(exc))
            outcome = {"ok": False, "detail": detail[-3000:]}
        return Response(json.dumps(outcome))
'''

# Each case on an object of its own: a fresh database and alarm, as each test gets locally.
BODY = """        for key in CASES:
            answer = await self.env.OBJECTS.getByName(key).fetch(
                "https://harness.internal/", headers={"x-case": key}
            )
            report(case=key, **json.loads(await answer.text()))
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
            text_bindings=TEXT_BINDINGS,
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


@pytest.mark.parametrize(
    "case",
    [f"{suite}::{case.id}" for suite, module in SUITES.items() for case in cases(module)],
)
def test_the_contract_holds_on_workerd(outcomes, case: str) -> None:
    assert case in outcomes, sorted(outcomes)
    outcome = outcomes[case]
    if outcome["ok"] is None:
        pytest.skip(str(outcome["detail"]))
    assert outcome["ok"], outcome.get("detail")
