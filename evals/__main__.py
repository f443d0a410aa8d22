"""`python -m evals run`: ask the question set, score the answers, print and save the report."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console

from child_processes import exit_on_signals
from evals.cases import load_cases
from evals.report import print_report, write_json
from evals.runner import ModelOptions, run_eval


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evals", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the question set against the local stack")
    run.add_argument(
        "--url", help="a running worker, e.g. http://127.0.0.1:8787 (default: start albert dev)"
    )
    run.add_argument("--model-url", default="", help="OpenAI-compatible base URL (MODEL_BASE_URL)")
    run.add_argument(
        "--model-key",
        default=None,
        help="API key (MODEL_API_KEY); default: the EVAL_MODEL_API_KEY environment variable",
    )
    run.add_argument("--model", default="", help="model name (MODEL_NAME)")
    run.add_argument("--json", type=Path, help="write the full report here")
    run.add_argument("--case", action="append", default=[], help="only these case ids")
    run.add_argument("--workload", action="append", default=[], help="only these workloads")
    run.add_argument("--concurrency", type=int, default=4)
    run.add_argument("--turn-timeout", type=float, default=90.0, help="seconds per question")
    run.add_argument("--state-dir", type=Path, help="keep the stacks' state and logs here")
    run.add_argument(
        "--min-pass-rate", type=float, default=0.0, help="exit 1 below this rate (0 to 1)"
    )
    sub.add_parser("list", help="list the questions")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit code."""
    args = _parser().parse_args(argv)
    # SIGTERM unwinds like Ctrl-C: every process started for the run is stopped on the way out.
    exit_on_signals()
    # Piped output (CI logs) gets a table wide enough to read.
    console = Console() if sys.stdout.isatty() else Console(width=170)
    cases = load_cases()
    if args.command == "list":
        for case in cases:
            console.print(f"{case.id:32} {case.workload:16} {case.profile:14} {case.question}")
            # Earlier turns of a follow-up case, in the order they are asked, under its id.
            for number, earlier in enumerate(case.before, start=1):
                console.print(
                    f"{'':32} {'':16} {'':14} before {number}: {earlier}", style="dim", markup=False
                )
        return 0
    if args.case:
        cases = [c for c in cases if c.id in set(args.case)]
    if args.workload:
        cases = [c for c in cases if c.workload in set(args.workload)]
    if not cases:
        console.print("[red]no case matches[/]")
        return 2
    key = args.model_key if args.model_key is not None else os.environ.get("EVAL_MODEL_API_KEY", "")
    model = ModelOptions(base_url=args.model_url, api_key=key, name=args.model)
    with console.status(f"asking {len(cases)} questions…"):
        report = run_eval(
            cases,
            url=args.url,
            model=model,
            state_dir=args.state_dir,
            concurrency=args.concurrency,
            turn_timeout=args.turn_timeout,
        )
    print_report(report, console)
    if args.json:
        write_json(report, args.json)
        console.print(f"report written to {args.json}")
    return 1 if report.totals.pass_rate < args.min_pass_rate else 0


if __name__ == "__main__":
    sys.exit(main())
