"""What /proc says about processes: who descends from whom, and which ports they listen on.

Linux only; where /proc cannot be read every answer is empty.
"""

from __future__ import annotations

import os
from pathlib import Path

_TCP_LISTEN = "0A"


def descendants(root: int) -> set[int]:
    """Living processes whose chain of parents leads to `root` (not `root` itself), from
    /proc (none where it cannot be read)."""
    parents: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir("/proc") if e.isdigit()]
    except OSError:
        return set()
    for entry in entries:
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name (field 2) may hold spaces and parentheses: parse after its end.
        fields = stat[stat.rfind(")") + 2 :].split()
        if fields[0] not in ("Z", "X"):
            parents.setdefault(int(fields[1]), []).append(int(entry))
    found: set[int] = set()
    queue = [root]
    while queue:
        for child in parents.get(queue.pop(), []):
            if child not in found:
                found.add(child)
                queue.append(child)
    return found


def socket_inodes(pids: set[int]) -> set[str]:
    """Inodes of the sockets these processes hold open (skipping any gone or not ours)."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue  # gone, or not ours to read
        inodes.update(link[8:-1] for link in links if link.startswith("socket:["))
    return inodes


def listening_ports(inodes: set[str]) -> set[int]:
    """Ports of the listening TCP sockets among these socket inodes, read from /proc/net."""
    ports: set[int] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == _TCP_LISTEN and fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def can_read_fds() -> bool:
    """Whether this system shows processes' descriptors under /proc."""
    return Path("/proc/self/fd").is_dir()
