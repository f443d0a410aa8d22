"""The MCP alarm port on a Durable Object's `ctx.storage` alarm."""

from __future__ import annotations

from typing import Any

from albert.cloudflare.ffi import py_value


class WorkersAlarm:
    """`ctx.storage.setAlarm/getAlarm/deleteAlarm` behind albert.mcp.alarms.AlarmPort."""

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


def env_secret_lookup(env: Any) -> Any:
    """Read one MCP_SECRET_* by name from the env object.

    Only names of that shape are read at all; whether one may be sent, and where, is
    the MCP_SECRETS binding's decision (albert.mcp.secret_binding), made before this.
    """

    def lookup(name: str) -> str | None:
        if not name.startswith("MCP_SECRET_"):
            return None
        value = getattr(env, name, None)
        return None if value is None else str(value)

    return lookup
