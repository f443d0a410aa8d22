"""The run's report: a rich table for people, JSON for machines."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from evals.runner import CaseResult, EvalReport


def _mark(result: CaseResult, check: str) -> str:
    found = result.score.check(check)
    if found is None:
        return "[dim]–[/]"
    return "[green]✓[/]" if found.ok else "[red]✗[/]"


def table(report: EvalReport) -> Table:
    """One row per case: tools, arguments, facts, ungrounded figures, steps, finish, latency."""
    t = Table(title=f"Grounding evaluation — {report.model}", show_lines=False)
    for column in ("case", "workload", "profile", "tools", "args", "facts", "ungrounded"):
        t.add_column(column)
    for column in ("steps", "finish", "latency", "result"):
        t.add_column(column, justify="right" if column in ("steps", "latency") else "left")
    for r in report.results:
        s = r.score
        facts = f"{s.facts_found}/{s.facts_total}" if s.facts_total else "–"
        loose = ", ".join(s.ungrounded[:3]) + ("…" if len(s.ungrounded) > 3 else "")
        t.add_row(
            s.case_id,
            s.workload,
            s.profile,
            _mark(r, "tools"),
            _mark(r, "arguments"),
            facts if s.check("facts") is None or s.check("facts").ok else f"[red]{facts}[/]",
            f"[red]{loose}[/]" if loose else "0",
            str(s.steps),
            s.finish_reason or "–",
            f"{r.turn.latency_s:.2f}s",
            "[green]pass[/]" if s.passed else "[red]FAIL[/]",
        )
    return t


def print_report(report: EvalReport, console: Console | None = None) -> None:
    """The table, the failures with their reasons, and the totals."""
    console = console or Console()
    console.print(table(report))
    failures = [r for r in report.results if not r.score.passed]
    for r in failures:
        reasons = "; ".join(f"{c.name}: {c.detail}" for c in r.score.checks if not c.ok)
        console.print(f"[red]✗ {r.score.case_id}[/] {reasons}")
    for case_id, why in report.skipped.items():
        console.print(f"[yellow]skipped {case_id}[/]: {why}")
    t = report.totals
    console.print(
        f"\n[bold]{t.passed}/{t.cases} passed ({t.pass_rate:.1%})[/], {t.skipped} skipped; "
        f"ungrounded figures: {t.ungrounded_numbers}; latency median "
        f"{t.median_latency_s}s, max {t.max_latency_s}s"
    )
    console.print("by workload: " + ", ".join(f"{k} {v}" for k, v in t.by_workload.items()))
    console.print("by check: " + ", ".join(f"{k} {v}" for k, v in t.by_check.items()))


def write_json(report: EvalReport, path: Path) -> None:
    """The whole report, answers and tool results included, as JSON."""
    path.write_text(report.model_dump_json(indent=2))
