"""Rulesets (kingrec.rules): presets, the engine's view of a deal, scores, and what cannot be
built."""

from __future__ import annotations

from typing import Any

import pytest

from kingrec._engine_types import (
    F_EARLY_END,
    F_HEART_LEAD_BAN,
    F_MUST_RUFF,
    F_REVOKE_PENALIZE,
    F_RIFKI_HEART_AFTER_KING,
    F_VOID_DISCARD,
    F_WITHHOLDING,
)
from kingrec.contracts import Contract
from kingrec.errors import RulesetError
from kingrec.limits import MAX_DEALS, MAX_FIXED_ORDER
from kingrec.rules import PRESETS, RevokeRule, Schedule, preset


def test_presets_are_the_rules_table() -> None:
    assert sorted(PRESETS) == ["classic", "kahvehane", "plain", "rotation", "short"]
    assert (preset("short").deal_count, preset("short").koz_quota) == (8, 1)
    assert preset("rotation").schedule is Schedule.ROTATION
    assert preset("rotation").deal_count == 28
    assert preset("plain").withholding == frozenset()
    assert preset("kahvehane").trump_lead_needs_break
    assert preset("Classic") is PRESETS["classic"]
    with pytest.raises(RulesetError, match="unknown preset 'nope'"):
        preset("nope")


def test_deal_flags_carry_only_the_options_of_that_contract() -> None:
    classic = preset("classic")
    assert classic.deal_flags(Contract.KOZ) == F_MUST_RUFF
    assert classic.deal_flags(Contract.KUPA) == F_HEART_LEAD_BAN | F_VOID_DISCARD | F_EARLY_END
    assert classic.deal_flags(Contract.RIFKI) == (
        F_HEART_LEAD_BAN | F_WITHHOLDING | F_VOID_DISCARD | F_EARLY_END
    )
    assert preset("rotation").deal_flags(Contract.RIFKI) & F_RIFKI_HEART_AFTER_KING
    assert classic.deal_flags(Contract.EL_ALMAZ) == 0
    penalize = classic.replace(revoke=RevokeRule.PENALIZE)
    assert penalize.deal_flags(Contract.SON_IKI) == F_REVOKE_PENALIZE


def test_a_deal_scores_units_times_the_unit_or_the_whole_total_for_a_revoke() -> None:
    classic = preset("classic")
    assert classic.deal_scores(Contract.KIZ, [1, 0, 2, 1]) == [-100, 0, -200, -100]
    assert classic.deal_scores(Contract.KOZ, [4, 3, 3, 3]) == [200, 150, 150, 150]
    assert classic.deal_scores(Contract.KOZ, [4, 3, 3, 3], revoker=2) == [0, 0, -650, 0]
    assert classic.deal_scores(Contract.KUPA, [5, 0, 0, 0], revoker=0) == [-390, 0, 0, 0]


def test_the_zero_sum_check_holds_only_when_the_quotas_are_used_up() -> None:
    assert preset("classic").is_zero_sum()
    assert not preset("rotation").is_zero_sum()  # each player plays every contract: -1950
    assert not preset("classic").replace(deal_count=16, koz_quota=2, penalty_quota=3).is_zero_sum()


def test_core_params_name_every_field_of_the_compiled_ruleset() -> None:
    params: dict[str, Any] = preset("kahvehane").core_params()
    assert params["deal_count"] == 20 and params["schedule"] == 1
    assert params["flags"][Contract.KOZ] == preset("kahvehane").deal_flags(Contract.KOZ)
    assert params["unit"][Contract.KIZ] == -100 and params["full_total"][Contract.KOZ] == 650
    assert len(params["fixed_order"]) == MAX_FIXED_ORDER and params["nfixed"] == 0


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"deal_count": 0}, "deal_count must be positive"),
        ({"deal_count": MAX_DEALS + 1}, f"at most {MAX_DEALS} deals"),
        ({"schedule": Schedule.FIXED}, "needs fixed_order"),
        ({"first_declarer_card": 52}, "not a card code"),
        (
            {"schedule": Schedule.FIXED, "fixed_order": (Contract.KOZ,) * (MAX_FIXED_ORDER + 1)},
            f"at most {MAX_FIXED_ORDER}",
        ),
    ],
)
def test_a_ruleset_that_cannot_be_applied_cannot_be_built(
    changes: dict[str, object], says: str
) -> None:
    with pytest.raises(RulesetError, match=says):
        preset("classic").replace(**changes)


@pytest.mark.parametrize("option", ["heart_lead_ban", "withholding", "void_discard", "early_end"])
def test_koz_in_a_penalty_option_cannot_be_built(option: str) -> None:
    with pytest.raises(RulesetError, match=f"{option} lists KOZ"):
        preset("classic").replace(**{option: frozenset({Contract.KOZ, Contract.KUPA})})
