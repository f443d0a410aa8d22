"""`cryptography.exceptions`, as far as the `mcp` SDK names it at import."""


class InvalidTag(Exception):
    """Raised by the real package when a sealed value fails verification."""
