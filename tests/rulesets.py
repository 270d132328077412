"""House rulesets the tests play beside the presets: each sets options the presets don't."""

from __future__ import annotations

from kingrec.contracts import Contract
from kingrec.rules import DealerRule, FirstDeclarerRule, Ruleset, Schedule, preset

K, E, KU, ER, KI, R, S = (
    Contract.KOZ,
    Contract.EL_ALMAZ,
    Contract.KUPA,
    Contract.ERKEK,
    Contract.KIZ,
    Contract.RIFKI,
    Contract.SON_IKI,
)

HOUSE: dict[str, Ruleset] = {
    "penalty_only_4": preset("classic").replace(preset="house", penalty_only_deals=4),
    "twelve": preset("classic").replace(
        preset="house", deal_count=12, koz_quota=1, penalty_quota=2
    ),
    "tight": preset("classic").replace(
        preset="house", deal_count=16, koz_quota=3, penalty_quota=2, max_per_penalty=1
    ),
    "fixed": preset("classic").replace(
        preset="house", schedule=Schedule.FIXED, deal_count=14, fixed_order=(E, KU, ER, KI, R, S, K)
    ),
    "holder": preset("classic").replace(
        preset="house",
        first_declarer=FirstDeclarerRule.HOLDER_OF_CARD,
        dealer=DealerRule.SEAT_BEFORE_DECLARER,
    ),
    "dealer_overtrump": preset("kahvehane").replace(
        dealer=DealerRule.DECLARER, must_overtrump=True, play_timeout_ms=3000, trump_timeout_ms=2000
    ),
    "no_clock": preset("plain").replace(play_timeout_ms=0, trump_timeout_ms=0),
    "no_ruff": preset("classic").replace(must_ruff=False, early_end=frozenset()),
}
