"""The vault pipeline: processors → write store → serving index, scheduled and checked."""

from data_server.pipeline.check import DriftIssue, DriftReport, ValueMismatch, check
from data_server.pipeline.progress import NullProgress, PipelineProgress, RichProgress
from data_server.pipeline.run import (
    PipelineReport,
    default_processors,
    offline_http,
    offline_processors,
    run_pipeline,
)
from data_server.pipeline.schedule import ScheduleSettings, next_fire, schedule
from data_server.pipeline.seed import seed_local

__all__ = [
    "DriftIssue",
    "DriftReport",
    "NullProgress",
    "PipelineProgress",
    "PipelineReport",
    "RichProgress",
    "ScheduleSettings",
    "ValueMismatch",
    "check",
    "default_processors",
    "next_fire",
    "offline_http",
    "offline_processors",
    "run_pipeline",
    "schedule",
    "seed_local",
]
