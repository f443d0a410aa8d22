"""What local workerd runs vendor in place of the packages no Pyodide build of is offline.

workerd_dev.python_modules writes them into the staged python_modules/ (never the
project's); workerd_dev.pyodide_compat names them in its table of what a deploy installs
beside what was tested.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STANDIN_MARKER = "ALBERT_WORKERD_STANDIN"
STANDINS_DIR = Path(__file__).resolve().parent / "standins"
# What `cryptography/standin.py` writes to stderr when a stand-in is used.
STANDIN_CALLED = "ALBERT_WORKERD_STANDIN_CALLED"


@dataclass(frozen=True)
class Substitute:
    """A real package vendored in place of one that has no Pyodide build offline."""

    locked: tuple[str, ...]
    modules: dict[str, str]


# rpds-py's module, served by pyrsistent-as-rpds-py (the wheel ships the adapter as
# `pyrsistent_as_rpds`; its `auto` module would try `rpds` first, i.e. itself).
SUBSTITUTES: dict[str, Substitute] = {
    "rpds-py": Substitute(
        locked=("pyrsistent-as-rpds-py", "pyrsistent"),
        modules={
            "rpds/__init__.py": (
                f"# {STANDIN_MARKER}: rpds-py's API from pyrsistent-as-rpds-py (PyPI, pure\n"
                "# Python), for local workerd runs only; a deploy vendors Pyodide's rpds-py.\n"
                "from pyrsistent_as_rpds.pure import *  # noqa: F403\n"
                "\n"
                "is_pure_pyrsistent_as_rpds = True\n"
            ),
        },
    ),
}
# Client-only stand-ins kept as source in workerd_dev/standins/.
CLIENT_STANDINS = ("cryptography",)


def offline_substitutes() -> dict[str, str]:
    """What the local workerd runs vendor in place of each package no offline build of
    exists (name → words, for the table of what a deploy installs)."""
    words = {name: "stand-in (import fails)" for name in ("cffi", "cryptography", "rpds-py")}
    for name in CLIENT_STANDINS:
        words[name] = "client-only stand-in"
    for name, substitute in SUBSTITUTES.items():
        words[name] = "substitute: " + ", ".join(substitute.locked)
    return words
