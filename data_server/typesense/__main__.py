"""`python -m data_server.typesense --data-dir DIR [--port N]`: run Typesense in the foreground."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from data_server.typesense.process import TypesenseProcess, default_api_key


def main(argv: list[str] | None = None) -> int:
    """Start the server, print its URL, and stop it on Ctrl-C or SIGTERM."""
    parser = argparse.ArgumentParser(prog="python -m data_server.typesense")
    parser.add_argument("--data-dir", type=Path, default=Path(".state/typesense"))
    parser.add_argument("--port", type=int, default=8108)
    parser.add_argument("--api-key", default=default_api_key())
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)

    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    with TypesenseProcess(args.data_dir, args.api_key, args.port) as server:
        server.start(timeout=args.timeout)
        print(f"Typesense ready at {server.url} (data in {server.data_dir}, log {server.log_path})")
        try:
            while not done.wait(1.0) and server.running:
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
