"""Who may declare what: the contract schedule of a match, tallied deal by deal.

One ``ScheduleTally`` serves both sides of the rules: the validator asks what a recorded
declaration broke (``breach``), the simulator and bots ask which contracts a declarer may
choose (``allowed``). The rules (RULES.md "Choosing contracts"):

* FIXED — deal n is played in ``fixed_order[(n - 1) % len]``;
* ROTATION — every player declares every contract once;
* QUOTA — each player declares ``koz_quota`` koz and ``penalty_quota`` penalty deals, each
  penalty contract is chosen at most ``max_per_penalty`` times in the match, and no koz in
  the first ``penalty_only_deals`` deals.

The compiled core holds the same tally (``Tally`` in ``_core.pxd``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ._engine_types import SCHEDULE_LIMIT, SCHEDULE_NOT_SCHEDULED, SCHEDULE_OK, SCHEDULE_QUOTA
from .contracts import PENALTY_CONTRACTS, Contract
from .rules import Ruleset, Schedule

__all__ = ["Breach", "ScheduleTally", "allowed_contracts"]

# Finding codes of the schedule's problems, by the engine's SCHEDULE_* number.
BREACH_CODES = {
    SCHEDULE_QUOTA: "CONTRACT_QUOTA",
    SCHEDULE_LIMIT: "PENALTY_CONTRACT_LIMIT",
    SCHEDULE_NOT_SCHEDULED: "CONTRACT_NOT_SCHEDULED",
}


class Breach(NamedTuple):
    """What a declaration broke: the finding code and why, in a player's words."""

    code: str
    reason: str


class ScheduleTally:
    """The declarations of a match so far, deal by deal."""

    def __init__(self, rules: Ruleset) -> None:
        self.rules = rules
        self.koz = [0, 0, 0, 0]  # koz deals each seat declared
        self.penalty = [0, 0, 0, 0]  # penalty deals each seat declared
        self.per_contract = dict.fromkeys(range(8), 0)  # times each contract was chosen
        self.declared: set[tuple[int, int]] = set()  # (seat, contract)

    @classmethod
    def of(cls, rules: Ruleset, history: Iterable[tuple[int, int]]) -> ScheduleTally:
        """The tally after the ``(seat, contract)`` declarations of ``history``."""
        tally = cls(rules)
        for seat, contract in history:
            tally.add(seat, contract)
        return tally

    def problem(self, number: int, seat: int, contract: int) -> int:
        """What declaring ``contract`` in deal ``number`` (1-based) breaks: ``SCHEDULE_*``."""
        rules = self.rules
        if rules.schedule is Schedule.FIXED:
            expected = rules.fixed_order[(number - 1) % len(rules.fixed_order)]
            return SCHEDULE_OK if contract == expected else SCHEDULE_NOT_SCHEDULED
        if rules.schedule is Schedule.ROTATION:
            return SCHEDULE_QUOTA if (seat, contract) in self.declared else SCHEDULE_OK
        if contract == Contract.KOZ:
            if number <= rules.penalty_only_deals or self.koz[seat] >= rules.koz_quota:
                return SCHEDULE_QUOTA
            return SCHEDULE_OK
        if self.penalty[seat] >= rules.penalty_quota:
            return SCHEDULE_QUOTA
        if self.per_contract[contract] >= rules.max_per_penalty:
            return SCHEDULE_LIMIT
        return SCHEDULE_OK

    def breach(self, number: int, seat: int, contract: Contract) -> Breach | None:
        """What declaring ``contract`` broke, with the reason, or None (before ``add``)."""
        problem = self.problem(number, seat, contract)
        if problem == SCHEDULE_OK:
            return None
        rules, name = self.rules, contract.label
        if problem == SCHEDULE_NOT_SCHEDULED:
            expected = rules.fixed_order[(number - 1) % len(rules.fixed_order)]
            reason = f"the fixed order plays {expected.label} in deal {number}, not {name}"
        elif problem == SCHEDULE_LIMIT:
            reason = (
                f"{name} was already chosen {self.per_contract[contract]} time(s) in this "
                f"match, the limit is {rules.max_per_penalty}"
            )
        elif rules.schedule is Schedule.ROTATION:
            reason = (
                f"seat {seat} already declared {name}; in rotation every player declares "
                "each contract once"
            )
        elif contract == Contract.KOZ and number <= rules.penalty_only_deals:
            reason = f"koz may not be chosen in the first {rules.penalty_only_deals} deals"
        elif contract == Contract.KOZ:
            reason = (
                f"seat {seat} already declared koz {self.koz[seat]} time(s), the quota is "
                f"{rules.koz_quota}; they had to choose a penalty"
            )
        else:
            reason = (
                f"seat {seat} already declared {self.penalty[seat]} penalty contract(s), "
                f"the quota is {rules.penalty_quota}; they had to choose koz"
            )
        return Breach(BREACH_CODES[problem], reason)

    def add(self, seat: int, contract: int) -> None:
        """``seat`` declared ``contract``."""
        self.declared.add((seat, contract))
        self._count(seat, contract, 1)

    def _count(self, seat: int, contract: int, step: int) -> None:
        self.per_contract[contract] += step
        if contract == Contract.KOZ:
            self.koz[seat] += step
        else:
            self.penalty[seat] += step

    def allowed(self, seat: int, number: int) -> list[Contract]:
        """The contracts ``seat`` may declare in deal ``number``, ascending.

        Under QUOTA a choice is only offered when the rest of the match can still be
        declared within the quotas (declarers move one seat on each deal). A schedule that
        cannot be kept at all (quotas smaller than the deals a seat declares, say) offers
        the choices that break nothing now, or else every contract: the match goes on and
        the validator reports the breach.
        """
        now_ok = [c for c in Contract if self.problem(number, seat, c) == SCHEDULE_OK]
        feasible = []
        if self.rules.schedule is Schedule.QUOTA:
            for c in now_ok:
                self._count(seat, c, 1)
                if self._feasible(seat, number):
                    feasible.append(c)
                self._count(seat, c, -1)
        return feasible or now_ok or list(Contract)

    def _feasible(self, seat: int, number: int) -> bool:
        """Whether deals number+1 .. deal_count can all be declared within the quotas.

        Seat ``s`` still declares ``remaining[s]`` deals, ``koz_eligible[s]`` of them late
        enough for koz. It can take at most ``min(koz left, koz_eligible)`` of them as koz
        and must take the rest as penalty contracts, within its penalty quota; any seat may
        take any penalty contract, so the penalty deals fit when they are no more than the
        per-contract room left in all.
        """
        rules = self.rules
        remaining = [0, 0, 0, 0]
        koz_eligible = [0, 0, 0, 0]
        for j in range(number + 1, rules.deal_count + 1):
            s = (seat + j - number) % 4
            remaining[s] += 1
            if j > rules.penalty_only_deals:
                koz_eligible[s] += 1
        penalty_deals = 0
        for s in range(4):
            koz_left = rules.koz_quota - self.koz[s]
            pen_left = rules.penalty_quota - self.penalty[s]
            if koz_left < 0 or pen_left < 0:
                return False
            most_koz = min(koz_left, koz_eligible[s], remaining[s])
            if remaining[s] - most_koz > pen_left:
                return False
            penalty_deals += remaining[s] - most_koz
        room = sum(max(0, rules.max_per_penalty - self.per_contract[c]) for c in PENALTY_CONTRACTS)
        return penalty_deals <= room


def allowed_contracts(
    rules: Ruleset, seat: int, number: int, history: Iterable[tuple[int, int]]
) -> list[Contract]:
    """The contracts ``seat`` may declare in deal ``number`` after the ``(seat, contract)``
    declarations of ``history`` (deals 1 .. number-1)."""
    return ScheduleTally.of(rules, history).allowed(seat, number)
