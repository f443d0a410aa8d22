"""``albert-data``: the data server's command line.

    albert-data run               the same as `pipeline run`
    albert-data pipeline run      [--db PATH | --database-url URL]
                                  [--typesense-url URL --typesense-key KEY]
                                  [--collection NAME] [--offline] [--no-publish]
    albert-data pipeline check    [--db PATH] [--typesense-url URL --typesense-key KEY] [--json]
    albert-data pipeline schedule [--cron EXPR] [--max-runs N] [--offline] …

Defaults come from the data server settings (``DATABASE_URL``, ``DATA_SERVER_DB_PATH``,
``TYPESENSE_URL``,
``TYPESENSE_API_KEY``, ``TYPESENSE_VAULTS_COLLECTION``, ``PIPELINE_CRON``). ``--offline``
serves the public APIs from the recorded responses (the local stack has no internet).
A run takes the store's run lock: while another run (a replica's schedule, another
command) holds it, `run` exits with 3 and changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from albert.search.typesense_client import TypesenseClient
from data_server.settings import DataServerSettings

if TYPE_CHECKING:
    from data_server.pipeline import PipelineReport
    from data_server.store import VaultStore

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_PARTIAL = 2
EXIT_BUSY = 3


def _settings() -> DataServerSettings:
    return DataServerSettings.from_env(os.environ)


def _add_store_and_index(parser: argparse.ArgumentParser, settings: DataServerSettings) -> None:
    parser.add_argument("--db", type=Path, default=settings.db_path, help="SQLite write store")
    parser.add_argument(
        "--database-url",
        default=settings.database_url.get_secret_value(),
        help="postgresql://… write store (instead of --db)",
    )
    parser.add_argument("--typesense-url", default=settings.typesense_url)
    parser.add_argument("--typesense-key", default=settings.typesense_api_key.get_secret_value())
    parser.add_argument("--collection", default=settings.vaults_collection)


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--offline",
        action="store_true",
        help="answer the public APIs from the recorded responses (no internet needed)",
    )
    parser.add_argument("--no-publish", action="store_true", help="skip the index publish")
    parser.add_argument("--no-progress", action="store_true", help="no terminal progress bar")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    settings = _settings()
    parser = argparse.ArgumentParser(prog="albert-data", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    pipeline = commands.add_parser("pipeline", help="the vault data pipeline")
    steps = pipeline.add_subparsers(dest="step", required=True)

    for where in (steps, commands):
        run = where.add_parser("run", help="fetch, store and publish once")
        _add_store_and_index(run, settings)
        _add_run_options(run)
        run.set_defaults(handler=_cmd_run)

    check = steps.add_parser("check", help="compare the write store with the index")
    _add_store_and_index(check, settings)
    check.add_argument("--json", action="store_true", help="print the drift report as JSON")
    check.set_defaults(handler=_cmd_check)

    sched = steps.add_parser("schedule", help="run on a cron schedule until stopped")
    _add_store_and_index(sched, settings)
    _add_run_options(sched)
    sched.add_argument(
        "--cron", default=settings.pipeline_cron or "0 */6 * * *", help="cron expression, UTC"
    )
    sched.add_argument("--max-runs", type=int, default=None)
    sched.add_argument("--run-at-start", action="store_true")
    sched.set_defaults(handler=_cmd_schedule)

    serve = commands.add_parser("serve", help="run the MCP data server over HTTP")
    serve.add_argument("--host", default=settings.host)
    serve.add_argument("--port", type=int, default=settings.port)
    serve.set_defaults(handler=_cmd_serve)
    return parser


def _open_store(args: argparse.Namespace) -> VaultStore:
    from data_server.store import open_store

    return open_store(args.database_url, args.db, limits=_settings().database_limits())


def _index_client(args: argparse.Namespace) -> TypesenseClient | None:
    if getattr(args, "no_publish", False):
        return None
    return TypesenseClient(args.typesense_url, args.typesense_key)


async def _run_once(args: argparse.Namespace) -> int:
    from data_server.pipeline import (
        RichProgress,
        default_processors,
        offline_http,
        offline_processors,
        run_pipeline,
    )
    from data_server.pipeline.progress import NullProgress
    from data_server.pipeline.service import run_with_lock
    from data_server.store import PipelineLockLost

    sources = offline_processors() if args.offline else default_processors()
    http = offline_http() if args.offline else None
    client = _index_client(args)
    progress = NullProgress() if args.no_progress else RichProgress()

    async def job() -> PipelineReport:
        if isinstance(progress, RichProgress):
            with progress:
                return await run_pipeline(
                    sources, store, client, progress, http=http, collection=args.collection
                )
        return await run_pipeline(
            sources, store, client, progress, http=http, collection=args.collection
        )

    try:
        with _open_store(args) as store:
            found = await run_with_lock(store, job)
    except PipelineLockLost as exc:
        print(f"{exc}; its run is left failed or abandoned")
        return EXIT_FAILED
    finally:
        if http is not None:
            await http.aclose()
        if client is not None:
            await client.aclose()
    if found is None:
        print("another pipeline run holds the store's run lock; nothing done")
        return EXIT_BUSY
    report = found
    run = report.run
    print(f"run {run.id}: {run.status} in {report.duration_s:.1f}s")
    for source in run.sources:
        state = "ok" if source.ok else f"FAILED: {source.error}"
        print(
            f"  {source.source:10} {state}; {source.vaults} vaults (+{source.inserted} new, "
            f"{source.updated} updated), {source.history_points} history points, "
            f"{len(source.warnings)} warnings"
        )
    mode = "changes since the last publish" if report.incremental else "the whole store"
    print(f"  sent {report.upserted} documents ({mode}), deleted {report.deleted}")
    if run.publication is not None:
        pub = run.publication
        print(f"  published {pub.count} documents to '{pub.collection}' (store revision "
              f"{pub.revision}, checksum {pub.checksum[:12]})")  # fmt: skip
    if report.publish_error:
        print(f"  publish: {report.publish_error}")
    return {"ok": EXIT_OK, "partial": EXIT_PARTIAL}.get(run.status, EXIT_FAILED)


def _cmd_run(args: argparse.Namespace) -> int:
    return asyncio.run(_run_once(args))


async def _check(args: argparse.Namespace) -> int:
    from data_server.pipeline import check

    async with TypesenseClient(args.typesense_url, args.typesense_key) as client:
        with _open_store(args) as store:
            report = await check(store, client, collection=args.collection)
    print(report.model_dump_json(indent=2) if args.json else report.summary())
    return EXIT_OK if report.ok else EXIT_FAILED


def _cmd_check(args: argparse.Namespace) -> int:
    return asyncio.run(_check(args))


async def _schedule(args: argparse.Namespace) -> int:
    from data_server.pipeline import ScheduleSettings, schedule

    settings = ScheduleSettings(
        cron=args.cron, run_at_start=args.run_at_start, max_runs=args.max_runs
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)

    def report(fired: datetime, outcome: object) -> None:
        text = outcome if isinstance(outcome, BaseException) else f"exit {outcome}"
        print(f"[{fired.isoformat()}] scheduled run: {text}", flush=True)

    print(f"pipeline scheduled with cron {settings.cron!r} (UTC); Ctrl-C stops", flush=True)
    runs = await schedule(lambda: _run_once(args), settings, stop, on_result=report)
    print(f"schedule stopped after {runs} runs")
    return EXIT_OK


def _cmd_schedule(args: argparse.Namespace) -> int:
    return asyncio.run(_schedule(args))


def _cmd_serve(args: argparse.Namespace) -> int:
    from data_server.app import serve

    return serve(_settings().model_copy(update={"host": args.host, "port": args.port}))


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``albert-data``."""
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


if __name__ == "__main__":
    sys.exit(main())
