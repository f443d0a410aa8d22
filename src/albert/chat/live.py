"""The frames of a running turn, numbered and kept so a reconnecting browser can catch up."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

# A frame of a running turn (`albert.protocol.frames`: it has thread_id, turn_id and seq).
F = TypeVar("F", bound=BaseModel)


class LiveTurn:
    """One running turn: every frame gets the next `seq` and is kept until the turn ends.

    A browser that reconnects mid-turn sends the highest seq it applied; it gets the
    frames after that, then the live rest, so no text is lost or repeated.
    """

    def __init__(
        self, thread_id: str, turn_id: str, send_all: Callable[[BaseModel, str], None]
    ) -> None:
        self.thread_id = thread_id
        self.turn_id = turn_id
        self._send_all = send_all
        self._frames: list[str] = []

    def emit(self, kind: type[F], **fields: Any) -> F:
        """Make the turn's next frame of `kind` (ids and seq filled in), keep it, and send it
        to every socket."""
        # Built numbered, not numbered by a copy afterwards: one model per frame.
        frame = kind(
            thread_id=self.thread_id, turn_id=self.turn_id, seq=len(self._frames) + 1, **fields
        )
        text = frame.model_dump_json()
        self._frames.append(text)
        self._send_all(frame, text)
        return frame

    def frames_after(self, seq: int) -> list[str]:
        """Serialised frames with a seq above `seq`, in order."""
        return self._frames[seq:]

    @property
    def last_seq(self) -> int:
        return len(self._frames)
