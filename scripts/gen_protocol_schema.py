"""Write docs/protocol.schema.json from the pydantic models (a test fails when it is stale)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src")]

from albert.protocol.schema import protocol_schema  # noqa: E402

TARGET = ROOT / "docs" / "protocol.schema.json"


def render() -> str:
    """The file's exact content."""
    return json.dumps(protocol_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    TARGET.parent.mkdir(exist_ok=True)
    TARGET.write_text(render())
    print(f"wrote {TARGET.relative_to(ROOT)}")
