"""Security scores of vaults: the formula, its inputs and its explanation."""

from data_server.security.scoring import (
    ScoreBreakdown,
    apply_security,
    explain,
    inputs_for,
    rating_for,
    score_inputs,
    score_of,
    secured_vault,
)

__all__ = [
    "ScoreBreakdown",
    "apply_security",
    "explain",
    "inputs_for",
    "rating_for",
    "score_inputs",
    "score_of",
    "secured_vault",
]
