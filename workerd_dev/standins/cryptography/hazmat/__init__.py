"""Stand-in package (see cryptography/__init__.py)."""
