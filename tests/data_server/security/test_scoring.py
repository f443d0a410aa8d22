"""Security score: bounded, explainable, and moving the right way with each input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from data_server.security import (
    apply_security,
    explain,
    inputs_for,
    rating_for,
    score_inputs,
    score_of,
    secured_vault,
)
from data_server.security.scoring import FLAG_PENALTIES, WEIGHTS
from data_server.vaults.model import SecurityInputs, Vault

inputs_strategy = st.builds(
    SecurityInputs,
    audits=st.none() | st.integers(0, 10),
    protocol_age_days=st.none() | st.integers(0, 5000),
    tvl_usd=st.none() | st.floats(0, 1e11, allow_nan=False),
    exploits=st.integers(0, 5),
    chain=st.sampled_from(["ethereum", "base", "bsc", "fantom", "kava"]),
    il_risk=st.booleans(),
    exposure=st.sampled_from(["single", "multi"]),
    source_flags=st.lists(st.sampled_from([*sorted(FLAG_PENALTIES), "unknown:flag"]), max_size=4),
)


@given(inputs_strategy)
def test_score_is_bounded_and_rated_consistently(inputs: SecurityInputs) -> None:
    breakdown = score_inputs(inputs)
    assert 0 <= breakdown.score <= 100
    assert breakdown.risk_rating == rating_for(breakdown.score)
    raw = sum(breakdown.components.values()) - sum(breakdown.penalties.values())
    assert breakdown.score == pytest.approx(max(0.0, min(raw, 100.0)), abs=0.051)


@given(inputs_strategy)
def test_each_input_moves_the_score_the_right_way(inputs: SecurityInputs) -> None:
    base = score_inputs(inputs).score
    more_audits = inputs.model_copy(update={"audits": (inputs.audits or 0) + 3})
    older = inputs.model_copy(update={"protocol_age_days": 5000})
    exploited = inputs.model_copy(update={"exploits": inputs.exploits + 2})
    with_il = inputs.model_copy(update={"il_risk": True})
    flagged = inputs.model_copy(
        update={"source_flags": [*inputs.source_flags, "beefy:notVerified"]}
    )
    assert score_inputs(more_audits).score >= base
    assert score_inputs(older).score >= base
    assert score_inputs(exploited).score <= base
    assert score_inputs(with_il).score <= base
    assert score_inputs(flagged).score <= base


def test_best_and_worst_cases_span_the_ratings() -> None:
    best = SecurityInputs(
        audits=5, protocol_age_days=2000, tvl_usd=5e9, exploits=0, chain="ethereum",
        il_risk=False, exposure="single",
    )  # fmt: skip
    worst = SecurityInputs(
        audits=0, protocol_age_days=3, tvl_usd=1_000, exploits=3, chain="kava",
        il_risk=True, exposure="multi", source_flags=["beefy:notAudited", "beefy:complex"],
    )  # fmt: skip
    assert score_inputs(best).score == pytest.approx(sum(WEIGHTS.values()))
    assert score_inputs(best).risk_rating == "low"
    assert score_inputs(worst).risk_rating == "very_high"
    assert score_inputs(worst).penalties == {"beefy:notAudited": 10.0, "beefy:complex": 5.0}


def test_apply_and_explain_round_trip() -> None:
    vault = Vault(
        id="defillama:ethereum:x", source="defillama", name="X", protocol="p",
        chain="ethereum", tvl_usd=2e8, updated_at=1,
    )  # fmt: skip
    inputs = SecurityInputs(audits=2, tvl_usd=2e8, chain="ethereum", il_risk=False,
                            exposure="single")  # fmt: skip
    scored = apply_security(vault, inputs)
    breakdown = explain(scored)
    assert breakdown is not None
    assert scored.security_score == breakdown.score
    assert scored.risk_rating == breakdown.risk_rating
    assert breakdown.inputs == inputs
    assert explain(vault) is None


@given(
    tvl=st.none() | st.floats(0, 1e11, allow_nan=False) | st.integers(0, 10**10),
    chain=st.sampled_from(["ethereum", "base", "kava"]),
    il_risk=st.booleans(),
    exposure=st.sampled_from(["single", "multi"]),
    audits=st.none() | st.integers(0, 5),
    age=st.none() | st.integers(0, 3000),
    flags=st.lists(st.sampled_from([*sorted(FLAG_PENALTIES), "unknown:flag"]), max_size=4),
)
def test_secured_vault_is_the_vault_with_security_applied(
    tvl: float | None,
    chain: str,
    il_risk: bool,
    exposure: str,
    audits: int | None,
    age: int | None,
    flags: list[str],
) -> None:
    fields = {
        "id": f"defillama:{chain}:x", "source": "defillama", "name": "X", "protocol": "p",
        "chain": chain, "tvl_usd": tvl, "il_risk": il_risk, "exposure": exposure, "updated_at": 1,
    }  # fmt: skip
    plain = Vault(**fields)
    expected = apply_security(
        plain, inputs_for(plain, audits=audits, protocol_age_days=age, source_flags=flags)
    )
    built = secured_vault(fields, audits=audits, protocol_age_days=age, source_flags=flags)
    assert built == expected
    assert built.model_dump_json() == expected.model_dump_json()


@given(inputs_strategy)
def test_score_of_is_the_breakdown_score_to_the_bit(inputs: SecurityInputs) -> None:
    breakdown = score_inputs(inputs)
    assert score_of(inputs) == (breakdown.score, breakdown.risk_rating)
