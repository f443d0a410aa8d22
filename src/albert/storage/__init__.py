"""Storage: the SQL port and the thread store built on it."""
