"""Wrangler's [build] command (wrangler.toml): workerd_dev/worker_build.py does the work.

Wrangler runs this with whatever python3 is on PATH, outside the project's venv, so the
checkout is put on sys.path first; the step needs the standard library alone.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workerd_dev.worker_build import main

if __name__ == "__main__":
    sys.exit(main())
