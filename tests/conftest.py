"""Session-wide fixtures, and the guard that fails the run if any process of it survives."""

pytest_plugins = [
    "tests.typesense_fixture",
    "tests.postgres_fixture",
    "tests.localchain_fixture",
    "tests.support.process_guard",
    "tests.support.ports",
]
