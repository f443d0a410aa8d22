"""Protocol processors: each fetches one public API and normalises it into vault records."""

from data_server.processors.base import Processor, ProcessorResult, RawBatch, run_processor
from data_server.processors.beefy import BeefyProcessor
from data_server.processors.defillama import DefiLlamaProcessor
from data_server.processors.yearn import YearnProcessor

__all__ = [
    "BeefyProcessor",
    "DefiLlamaProcessor",
    "Processor",
    "ProcessorResult",
    "RawBatch",
    "YearnProcessor",
    "run_processor",
]
