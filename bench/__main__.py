"""`python -m bench [--quick] [--only NAME ...] [--json PATH]`: run the benchmarks, print a
table, write the results as JSON."""

from __future__ import annotations

import argparse
import asyncio
import datetime
import importlib
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bench.core import Benchmark, BenchSizes, Row, Spread
from child_processes import exit_on_signals

PROJECT_DIR = Path(__file__).resolve().parent.parent


def _lazy(module: str) -> Callable[[BenchSizes], Awaitable[list[Row]]]:
    # Imported when run, so `--only` pays for nothing else and a broken one fails alone.
    async def run(sizes: BenchSizes) -> list[Row]:
        loaded = importlib.import_module(f"bench.{module}")
        return list(await loaded.run(sizes))

    return run


def benchmarks() -> list[Benchmark]:
    """Every benchmark, in the order they run."""
    return [
        Benchmark("streaming", "Streaming overhead", _lazy("streaming")),
        Benchmark("tool_loop", "Tool-loop overhead", _lazy("tool_loop")),
        Benchmark("storage", "Storage through the object's HTTP API", _lazy("storage")),
        Benchmark("cold_import", "Cold import", _lazy("cold_import")),
        Benchmark("concurrency", "Concurrent WebSocket clients", _lazy("concurrency")),
        Benchmark("data_server", "Data server: search and ingest", _lazy("data_server")),
        Benchmark("write_store", "Write store: PostgreSQL against SQLite", _lazy("write_store")),
        Benchmark("mcp_recovery", "MCP recovery after a restart", _lazy("mcp_recovery")),
        Benchmark("workerd", "The worker on workerd, against CPython", _lazy("workerd")),
    ]


class Failure(BaseModel):
    """A benchmark that could not finish."""

    bench: str
    error: str


class Report(BaseModel):
    """Everything one run measured."""

    started_at: str
    quick: bool
    machine: dict[str, str]
    duration_s: float
    rows: list[Row]
    failures: list[Failure]


def _fmt(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _spread(spread: Spread | None, unit: str) -> str:
    if spread is None:
        return ""
    if spread.n == 1 or spread.min == spread.max:
        return f"{_fmt(spread.median)} {unit}"
    return f"{_fmt(spread.median)} {unit} [{_fmt(spread.min)}–{_fmt(spread.max)}]"


def render(rows: list[Row], failures: list[Failure], console: Console) -> None:
    """The results as one table (median [min–max])."""
    table = Table(title=escape("Albert benchmarks: median [min–max]"), show_lines=True)
    for column in ("bench", "metric", "figure", "baseline", "ratio", "target", "met"):
        table.add_column(column, overflow="fold")
    for row in rows:
        met = {True: "[green]yes[/]", False: "[red]no[/]", None: "–"}[row.met]
        baseline = _spread(row.baseline, row.unit)
        if row.baseline_label:
            baseline = f"{baseline}\n({row.baseline_label})"
        table.add_row(
            row.bench,
            escape(row.metric) + (f"\n[dim]{escape(row.note)}[/]" if row.note else ""),
            escape(_spread(row.figure, row.unit)),
            escape(baseline),
            f"{row.ratio:.2f}×" if row.ratio is not None else "",
            row.target,
            met,
        )
    console.print(table)
    for failure in failures:
        console.print(f"[red]{failure.bench} failed:[/] {failure.error}")


def markdown(rows: list[Row]) -> str:
    """The results as a Markdown table, for the README."""
    lines = [
        "| benchmark | figure (median [min–max]) | baseline | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        baseline = _spread(row.baseline, row.unit)
        if row.baseline_label:
            baseline = f"{baseline} ({row.baseline_label})"
        met = {True: "yes", False: "**no**", None: "–"}[row.met]
        cells = [
            f"{row.bench}: {row.metric}",
            _spread(row.figure, row.unit),
            baseline,
            f"{row.ratio:.2f}×" if row.ratio is not None else "",
            row.target,
            met,
        ]
        lines.append("| " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    return "\n".join(lines) + "\n"


def _machine() -> dict[str, str]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": str(os.cpu_count()),
        "load_average_1m": f"{os.getloadavg()[0]:.2f}",
        "state_root": os.environ.get("BENCH_STATE_ROOT", "") or "system temp folder",
    }


async def run_all(selected: list[Benchmark], sizes: BenchSizes, console: Console) -> Report:
    """Run the selected benchmarks one after the other; a failure does not stop the rest."""
    started = time.monotonic()
    machine = _machine()  # the load average before this run adds its own
    started_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    rows: list[Row] = []
    failures: list[Failure] = []
    for bench in selected:
        console.print(f"[bold]{bench.title}[/] …")
        began = time.monotonic()
        try:
            produced = await bench.run(sizes)
        except Exception as exc:
            failures.append(Failure(bench=bench.name, error=f"{type(exc).__name__}: {exc}"))
            console.print(traceback.format_exc(), markup=False, highlight=False)
            continue
        rows.extend(produced)
        console.print(f"  done in {time.monotonic() - began:.1f} s")
    return Report(
        started_at=started_at,
        quick=sizes.quick,
        machine=machine,
        duration_s=round(time.monotonic() - started, 1),
        rows=rows,
        failures=failures,
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point; exit status 1 when a benchmark failed to run (not when a target is missed)."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="run only these (repeatable)"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the results here")
    parser.add_argument(
        "--markdown",
        type=Path,
        default=None,
        metavar="JSON",
        help="print the results of an earlier run (its JSON file) as a Markdown table",
    )
    args = parser.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C: every process started for the run is stopped on the way out.
    exit_on_signals()
    if args.markdown is not None:
        saved = Report.model_validate_json(args.markdown.read_text())
        print(markdown(saved.rows), end="")
        return 0
    for path in (str(PROJECT_DIR), str(PROJECT_DIR / "src")):
        if path not in sys.path:
            sys.path.insert(0, path)
    available = benchmarks()
    names = {b.name for b in available}
    unknown = [n for n in args.only if n not in names]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {sorted(names)}")
    selected = [b for b in available if not args.only or b.name in args.only]
    console = Console(width=max(Console().width, 150))
    report = asyncio.run(run_all(selected, BenchSizes(quick=args.quick), console))
    render(report.rows, report.failures, console)
    console.print(f"{len(report.rows)} figures in {report.duration_s:.0f} s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n")
        console.print(f"written to {args.json}")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
