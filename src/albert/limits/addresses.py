"""The address a per-address limit counts (new sessions here, the data server's limits)."""

import ipaddress


def address_bucket(raw: str) -> str | None:
    """The address a per-address limit counts: IPv4 as it is (an IPv4-mapped IPv6 too), IPv6
    by its /64, the block one subscriber usually holds; None when `raw` is no address."""
    try:
        ip = ipaddress.ip_address(raw)
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)
