"""Reference implementation of the platform's own analysis services (tokens, addresses, feed)."""

from data_server.platform.app import platform_app
from data_server.platform.data import PlatformData

__all__ = ["PlatformData", "platform_app"]
