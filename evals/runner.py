"""Runs the question set against a stack and scores every answer."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pydantic import BaseModel, Field

from evals.cases import Case
from evals.client import EvalClient
from evals.scorer import CaseScore, TurnRecord, score
from evals.stack import PROFILES, HangingServer, StackProcess, free_port, profile_variables


class ModelOptions(BaseModel):
    """An OpenAI-compatible model for the worker; empty means the demo planner."""

    base_url: str = ""
    api_key: str = ""
    name: str = ""

    def variables(self) -> dict[str, str]:
        """The worker vars that select this model."""
        if not self.base_url:
            return {}
        out = {"MODEL_BASE_URL": self.base_url, "MODEL_API_KEY": self.api_key}
        if self.name:
            out["MODEL_NAME"] = self.name
        return out


class CaseResult(BaseModel):
    """A case's score with the turn it was scored on."""

    score: CaseScore
    turn: TurnRecord


class Totals(BaseModel):
    """The set's summary."""

    cases: int
    passed: int
    pass_rate: float
    skipped: int
    by_workload: dict[str, str] = Field(description="passed/total per workload")
    by_check: dict[str, str] = Field(description="passed/scored per check")
    ungrounded_numbers: int
    median_latency_s: float | None
    max_latency_s: float | None


class EvalReport(BaseModel):
    """Everything a run produced."""

    model: str
    totals: Totals
    results: list[CaseResult]
    skipped: dict[str, str] = Field(default_factory=dict, description="case id → why")


Progress = Callable[[CaseResult], None]

# Each client of a run is a fresh Durable Object whose MCP connection starts with its
# first turn; give that connection time to come up instead of scoring the start-up race
# (the product's default wait is one second). The bound is generous because a fresh
# object's first connect imports the MCP SDK, which took over 5 s on a loaded 2-core
# machine; a server that is down fails its connect at once, so nothing waits it out.
#
# A run asks about 150 messages from a few clients: at the product's per-client rate (20 a
# minute) most of its time went to waiting out that limit, which says nothing of the
# answers. The stacks a run starts allow more; against a given URL the client still waits
# as a user would (EvalClient).
STACK_VARIABLES = {"MCP_CONNECT_WAIT_SECONDS": "20", "CHAT_MESSAGES_PER_MINUTE": "600"}


async def ask_all(
    base_url: str,
    cases: Sequence[Case],
    *,
    concurrency: int = 4,
    turn_timeout: float = 60.0,
    progress: Progress | None = None,
) -> list[CaseResult]:
    """Ask every case in a fresh thread (a few clients in parallel) and score its last turn."""
    if not cases:
        return []
    queue: asyncio.Queue[Case] = asyncio.Queue()
    for case in cases:
        queue.put_nowait(case)
    results: dict[str, CaseResult] = {}

    async def worker() -> None:
        async with EvalClient(base_url, turn_timeout=turn_timeout) as client:
            while not queue.empty():
                case = queue.get_nowait()
                try:
                    turn = await client.ask(case.question, case.before)
                except Exception as exc:  # a broken socket fails this case, not the run
                    turn = TurnRecord(
                        question=case.question,
                        before=case.before,
                        error=f"{type(exc).__name__}: {exc}",
                    )
                result = CaseResult(score=score(case, turn), turn=turn)
                results[case.id] = result
                if progress is not None:
                    progress(result)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(cases))))))
    return [results[c.id] for c in cases if c.id in results]


@contextmanager
def profile_stacks(
    profiles: set[str],
    *,
    state_dir: Path,
    model: ModelOptions,
    url: str | None = None,
) -> Iterator[dict[str, str]]:
    """Base URLs of running stacks, one per profile that can run; stopped on exit.

    With `url`, only the default profile runs (the failure profiles need a stack started
    here, whose vars can be changed).
    """
    if url is not None:
        yield {"default": url}
        return
    with ExitStack() as stack:
        variables = {**STACK_VARIABLES, **model.variables()}
        base = stack.enter_context(
            StackProcess(state_dir / "default", command="dev", variables=variables)
        )
        urls = {"default": base.url}
        failure_profiles = sorted(p for p in profiles if p != "default")
        if failure_profiles:
            hanging = stack.enter_context(HangingServer())
            closed_port = free_port()
            for name in failure_profiles:
                variables = profile_variables(PROFILES[name], base, closed_port, hanging.url)
                worker = StackProcess(
                    state_dir / name, command="serve", variables=variables, log_name="worker.log"
                )
                urls[name] = stack.enter_context(worker).url
        yield urls


def summarise(results: list[CaseResult], skipped: dict[str, str], model: str) -> EvalReport:
    """Totals per workload and per check."""
    passed = sum(r.score.passed for r in results)
    workloads: dict[str, list[bool]] = defaultdict(list)
    checks: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        workloads[r.score.workload].append(r.score.passed)
        for check in r.score.checks:
            checks[check.name].append(check.ok)
    latencies = [r.turn.latency_s for r in results if r.turn.finish_reason is not None]
    totals = Totals(
        cases=len(results),
        passed=passed,
        pass_rate=round(passed / len(results), 4) if results else 0.0,
        skipped=len(skipped),
        by_workload={k: f"{sum(v)}/{len(v)}" for k, v in sorted(workloads.items())},
        by_check={k: f"{sum(v)}/{len(v)}" for k, v in checks.items()},
        ungrounded_numbers=sum(len(r.score.ungrounded) for r in results),
        median_latency_s=round(statistics.median(latencies), 3) if latencies else None,
        max_latency_s=max(latencies) if latencies else None,
    )
    return EvalReport(model=model, totals=totals, results=results, skipped=skipped)


def run_eval(
    cases: Sequence[Case],
    *,
    url: str | None = None,
    model: ModelOptions | None = None,
    state_dir: Path | None = None,
    concurrency: int = 4,
    turn_timeout: float = 60.0,
    progress: Progress | None = None,
) -> EvalReport:
    """Start the stacks the cases need (unless `url` is given), ask, score, summarise."""
    model = model or ModelOptions()
    skipped: dict[str, str] = {}
    runnable = []
    for case in cases:
        if case.profile not in PROFILES:
            skipped[case.id] = f"unknown profile {case.profile!r}"
        elif url is not None and case.profile != "default":
            skipped[case.id] = f"profile {case.profile} needs a stack started by the runner"
        else:
            runnable.append(case)
    profiles = {c.profile for c in runnable}
    label = model.name or ("OpenAI-compatible model" if model.base_url else "demo-planner")
    if not runnable:
        return summarise([], skipped, label)
    with ExitStack() as stack:
        if state_dir is None:
            state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="evals-")))
        with profile_stacks(profiles, state_dir=state_dir, model=model, url=url) as urls:

            async def ask_every_profile() -> list[CaseResult]:
                groups = [
                    ask_all(
                        urls[name],
                        [c for c in runnable if c.profile == name],
                        concurrency=concurrency,
                        turn_timeout=turn_timeout,
                        progress=progress,
                    )
                    for name in sorted(profiles)
                ]
                return [r for group in await asyncio.gather(*groups) for r in group]

            results = asyncio.run(ask_every_profile())
    order = {c.id: i for i, c in enumerate(cases)}
    results.sort(key=lambda r: order[r.score.case_id])
    return summarise(results, skipped, label)
