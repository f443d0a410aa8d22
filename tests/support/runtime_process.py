"""The local runtime as a real process on a free port, restartable like a deployment."""

from __future__ import annotations

from pathlib import Path
from types import TracebackType

from local_stack.local_process import PROJECT_DIR, LocalProcess
from workerd_dev.substitutes import STANDIN_CALLED

__all__ = [
    "PROJECT_DIR",
    "TEST_SIGNING_KEY",
    "RuntimeProcess",
    "StandInCalled",
    "check_no_standin_called",
]

TEST_SIGNING_KEY = "test:albert-test-signing-key-0123456789"


class StandInCalled(AssertionError):
    """The worker used a stand-in of a package that has no Pyodide build offline."""


def check_no_standin_called(log_path: Path) -> None:
    """Fail when the run's log says a stand-in was used (workerd_dev/standins): the code
    path that reached it cannot run on Cloudflare as tested."""
    if not log_path.exists():
        return
    used = [
        line.strip()
        for line in log_path.read_text(errors="replace").splitlines()
        if STANDIN_CALLED in line
    ]
    if used:
        raise StandInCalled("a stand-in was used on workerd: " + " | ".join(used[:5]))


class RuntimeProcess(LocalProcess):
    """`albert serve` (or `albert dev`) for a test: every test runtime can sign sessions."""

    def __init__(
        self,
        state_dir: Path,
        variables: dict[str, str] | None = None,
        port: int | None = None,
        *,
        command: str = "serve",
        env: dict[str, str] | None = None,
        data_port: int | None = None,
        runtime: str = "local",
    ) -> None:
        super().__init__(
            state_dir,
            {"AUTH_SIGNING_KEY": TEST_SIGNING_KEY, **(variables or {})},
            port,
            command=command,
            log_name="runtime.log",
            env=env,
            data_port=data_port,
            runtime=runtime,
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop, and fail the run if the worker used a stand-in while it ran."""
        super().__exit__(exc_type, exc, tb)
        check_no_standin_called(self.log_path)
