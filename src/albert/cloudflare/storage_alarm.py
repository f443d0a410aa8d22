"""The MCP alarm port on a Durable Object's `ctx.storage` alarm."""

from __future__ import annotations

from typing import Any

from albert.cloudflare.ffi import py_value


class WorkersAlarm:
    """`ctx.storage.setAlarm/getAlarm/deleteAlarm` behind albert.mcp.alarm_port.AlarmPort."""

    def __init__(self, storage: Any) -> None:
        self._storage = storage

    async def set_alarm(self, at_ms: int) -> None:
        await self._storage.setAlarm(at_ms)

    async def get_alarm(self) -> int | None:
        # Unset is JS null (None or jsnull, by SDK version); a set time is a JS number.
        value = py_value(await self._storage.getAlarm())
        return None if value is None else int(value)

    async def delete_alarm(self) -> None:
        await self._storage.deleteAlarm()
