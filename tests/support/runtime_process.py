"""The local runtime as a real process on a free port, restartable like a deployment."""

from __future__ import annotations

from pathlib import Path

from miniflare.process import PROJECT_DIR, LocalProcess

__all__ = ["PROJECT_DIR", "TEST_SIGNING_KEY", "RuntimeProcess"]

TEST_SIGNING_KEY = "test:albert-test-signing-key-0123456789"


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
