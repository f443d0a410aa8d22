"""Can every runtime dependency of the worker be installed under Pyodide, and how big is it?

`uv run python scripts/check_pyodide_compat.py`: workerd_dev/pyodide_compat.py does the
work and says what it prints; exit status 1 when a package cannot be installed or the
upload would be over the Worker size limit.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from workerd_dev.pyodide_compat import main

if __name__ == "__main__":
    sys.exit(main())
