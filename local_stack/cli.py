"""The `albert` command: `albert dev` runs the local stack, `albert serve` the worker alone."""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from pathlib import Path

from child_processes import exit_on_signals, reserve_port
from local_stack.answers import answerer_line
from miniflare.server import run

PROJECT_DIR = Path(__file__).resolve().parent.parent


# Libraries that log a line per request or per MCP session at INFO: noise in a chat
# server's log (their warnings and errors still show). httpx carries the worker's
# outbound requests, httpx2 the MCP SDK's, `mcp` is the SDK on both ends.
QUIET_LOGGERS = ("httpx", "httpx2", "mcp")
RUNTIMES = ("local", "workerd")


def quiet_library_logs() -> None:
    """Raise the per-request loggers of the HTTP clients and the MCP SDK to WARNING."""
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)


def _overrides(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise SystemExit(f"--var expects NAME=VALUE, got {pair!r}")
        key, value = pair.split("=", 1)
        out[key] = value
    return out


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="albert", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (
        ("serve", "serve the worker and its Durable Objects on loopback"),
        ("dev", "run the local stack (worker, data server, Typesense, demo data, browser chat)"),
    ):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument("--host", default="127.0.0.1")
        cmd.add_argument("--port", type=int, default=8787)
        cmd.add_argument("--state-dir", type=Path, default=PROJECT_DIR / ".state")
        cmd.add_argument("--project-dir", type=Path, default=PROJECT_DIR)
        cmd.add_argument(
            "--runtime",
            choices=RUNTIMES,
            default="local",
            help="run the worker in this CPython process ('local'), or on Cloudflare's own "
            "runtime, workerd, under `wrangler dev` offline ('workerd'; see workerd_dev/)",
        )
        cmd.add_argument(
            "--var",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="override a var or secret of wrangler.toml/.dev.vars",
        )
        if name == "dev":
            cmd.add_argument(
                "--data-port",
                type=int,
                default=None,
                help="data server port (default 8788, or any free port if 8788 is taken; "
                "a port given here is used or the start fails)",
            )
            cmd.add_argument(
                "--chains",
                default="ethereum,base",
                help="local EVM chains to run, comma-separated ('' for none); one anvil each",
            )
    return parser


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `albert` command."""
    args = _parser().parse_args(argv if argv is not None else sys.argv[1:])
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    quiet_library_logs()
    if not (args.project_dir / "wrangler.toml").exists():
        raise SystemExit(f"no wrangler.toml in {args.project_dir}")
    overrides = _overrides(args.var)
    # While serving, miniflare.server handles SIGTERM/SIGINT itself; before that (start-up,
    # seeding) they unwind like Ctrl-C, and whatever was started is stopped on the way out.
    exit_on_signals()
    try:
        if args.command == "dev":
            from local_stack.stack import run_stack

            run_stack(
                args.project_dir,
                args.state_dir,
                args.host,
                args.port,
                overrides,
                data_port=args.data_port,
                chains=[c.strip().lower() for c in args.chains.split(",") if c.strip()],
                runtime=args.runtime,
            )
            return
        sock = reserve_port(args.host, args.port, "--port")
        if args.runtime == "workerd":
            sock.close()  # wrangler binds it itself, moments from now
            from workerd_dev.runner import serve_on_workerd

            print(answerer_line(args.project_dir, overrides), flush=True)
            serve_on_workerd(args.project_dir, args.state_dir, args.host, args.port, overrides)
            return
        print(f"Albert worker on http://{args.host}:{args.port}", flush=True)
        print(answerer_line(args.project_dir, overrides), flush=True)
        run(args.project_dir, args.state_dir, args.host, sock, overrides)
    except KeyboardInterrupt:
        # A stop asked for by a signal is a clean stop.
        print("stopped", flush=True)
    finally:
        # Everything was closed explicitly by now (storage, sockets, children). The
        # interpreter's last garbage collection over the whole heap would take ~0.4 s of
        # the 2 s a stop may take, and find nothing left to close.
        gc.freeze()


if __name__ == "__main__":
    main()
