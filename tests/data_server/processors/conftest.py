"""Helpers for processor tests: run a processor's real fetch step against the recordings."""

from __future__ import annotations

import httpx

from data_server.fixtures import Handler, fixture_handler, offline_transport
from data_server.processors import Processor, ProcessorResult, run_processor


async def run_offline(processor: Processor, handler: Handler = fixture_handler) -> ProcessorResult:
    """Fetch through an httpx.MockTransport serving the fixture files, then parse."""
    async with httpx.AsyncClient(transport=offline_transport(handler)) as client:
        return await run_processor(processor, client)
