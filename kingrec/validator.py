"""Replays whole matches and reports every finding, not only the first.

``validate_match`` judges one ``kingrec.v1.Match`` by its own ruleset. After an illegal
play the replay goes on with the match as played, so one bad card hides nothing later.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from types import ModuleType

from . import _twins
from ._engine_types import (
    END_ALL_TRICKS,
    END_EARLY,
    END_INCOMPLETE,
    END_REVOKE,
    END_UNREADABLE,
    NOT_A_CARD,
    VERDICT_NAMES,
    DealReplay,
    Violation,
)
from .boundary import end_to_proto, named_trump, replay_args, replayable, ruleset_from_proto
from .cards import SUIT_NAMES, SUIT_SYMBOLS, card_symbol, mask_of
from .contracts import Contract
from .errors import RulesetError
from .findings import Finding, Location, MatchReport, Severity, symbols
from .rules import DealerRule, FirstDeclarerRule, RevokeRule, Ruleset
from .schedule import ScheduleTally
from .v1 import record_pb2 as pb

__all__ = ["FORMAT_VERSION", "contract_label", "validate_match"]

FORMAT_VERSION = 1

_END_NAMES: dict[int, str] = {
    pb.DEAL_END_ALL_TRICKS: "all thirteen tricks",
    pb.DEAL_END_EARLY: "early, when the last penalty card fell",
    pb.DEAL_END_ABANDONED: "abandoned",
    pb.DEAL_END_REVOKE: "by a revoke",
}

_RULE_SENTENCES = {
    "NOT_IN_HAND": "does not hold that card",
    "TRUMP_LEAD_BANNED": "may not lead trumps before a trump has been played",
    "HEART_LEAD_BANNED": "may not lead hearts before a heart has been played",
    "MUST_FOLLOW_SUIT": "had to follow suit",
    "MUST_RAISE_TRUMP": "had to play a trump higher than the highest on the trick",
    "MUST_GIVE_PENALTY_CARD": "had to give a penalty card already covered on the trick",
    "MUST_RUFF": "was void in the led suit and had to trump",
    "MUST_OVERTRUMP": "had to overtrump",
    "MUST_DISCARD_PENALTY_CARD": "was void in the led suit and had to discard a penalty card",
}


def contract_label(contract: int) -> str:
    try:
        return Contract(contract).label
    except ValueError:
        return f"contract {contract}"


class _MatchCheck:
    """One match's validation: collects findings while walking the deals."""

    def __init__(self, match: pb.Match, location: Location, eng: ModuleType) -> None:
        self.match = match
        self.engine = eng
        self.report = MatchReport(match.match_id, location, deals=len(match.deals))
        self.totals = [0, 0, 0, 0]
        # Whether every deal was played out in full: only then must totals add up to 0.
        self.whole = True
        # The match's first illegal play: what the claimed totals' mismatch follows from.
        self.first_cause: int | None = None

    def add(
        self, code: str, message: str, severity: Severity = Severity.ERROR, /, **where: object
    ) -> None:
        self.report.findings.append(Finding(code, severity, message, **where))  # type: ignore[arg-type]

    def run(self) -> MatchReport:
        m = self.match
        if m.format_version != FORMAT_VERSION:
            self.add(
                "FORMAT_VERSION",
                f"Record format version {m.format_version} is not "
                f"{FORMAT_VERSION}; judged as version {FORMAT_VERSION}.",
                Severity.WARNING,
            )
        try:
            rules = ruleset_from_proto(m.ruleset)
        except RulesetError as exc:
            self.add("RULESET_INVALID", f"The ruleset cannot be used: {exc}; no deal was checked.")
            return self.report
        self.check_players()
        status = m.status
        if status == pb.MATCH_STATUS_UNSPECIFIED:
            self.add(
                "STATUS_MISSING",
                "The match status is not set; judged as a complete match.",
                Severity.WARNING,
            )
            status = pb.MATCH_STATUS_COMPLETE
        complete = status == pb.MATCH_STATUS_COMPLETE
        n = len(m.deals)
        if complete and n < rules.deal_count:
            self.add(
                "MATCH_INCOMPLETE",
                f"The match is marked complete but has {n} of {rules.deal_count} deals.",
            )
        if n > rules.deal_count:
            self.add(
                "TOO_MANY_DEALS", f"The match has {n} deals; the ruleset has {rules.deal_count}."
            )
        schedule = ScheduleTally(rules)
        first_declarer = self.first_declarer(rules)
        for i, deal in enumerate(m.deals):
            self.check_deal(
                rules, deal, i + 1, first_declarer, schedule, last=i == n - 1, complete=complete
            )
        self.check_totals(rules, complete)
        return self.report

    def check_players(self) -> None:
        seats = sorted(p.seat for p in self.match.players)
        if seats != [0, 1, 2, 3]:
            listed = ", ".join(str(s) for s in seats) or "none"
            self.add(
                "BAD_PLAYERS",
                f"The players must fill seats 0, 1, 2 and 3 once each; "
                f"the record lists seats {listed}.",
            )

    def first_declarer(self, rules: Ruleset) -> int | None:
        """The seat that must declare deal 1 (None: any seat, chosen by lot)."""
        deals = self.match.deals
        if not deals:
            return None
        if rules.first_declarer is FirstDeclarerRule.HOLDER_OF_CARD:
            hands = deals[0].hands
            if rules.first_declarer_card in hands[:52]:
                return hands.index(rules.first_declarer_card) // 13
            return None
        return deals[0].declarer if deals[0].declarer < 4 else None

    def check_deal(
        self,
        rules: Ruleset,
        deal: pb.Deal,
        number: int,
        first: int | None,
        schedule: ScheduleTally,
        *,
        last: bool,
        complete: bool,
    ) -> None:
        name = contract_label(deal.contract)
        head = f"Deal {number} ({name})"
        if deal.number != number:
            self.add(
                "DEAL_NUMBER",
                f"Deal {number} of the record carries number {deal.number}.",
                deal=number,
            )
        declarer = deal.declarer
        if declarer > 3:
            self.add(
                "WRONG_DECLARER", f"{head}: declarer seat {declarer} does not exist.", deal=number
            )
        elif first is not None and declarer != (first + number - 1) % 4:
            expected = (first + number - 1) % 4
            why = (
                f"the holder of {card_symbol(rules.first_declarer_card)} declares first"
                if rules.first_declarer is FirstDeclarerRule.HOLDER_OF_CARD
                else "the declarer moves one seat on each deal"
            )
            self.add(
                "WRONG_DECLARER",
                f"{head}: seat {declarer} declared, but seat {expected} should have ({why}).",
                deal=number,
                seat=declarer,
            )
        self.check_dealer(rules, deal, number, head)
        contract_ok = deal.contract in Contract._value2member_map_
        if not contract_ok:
            self.add(
                "CONTRACT_UNKNOWN",
                f"Deal {number}: contract {deal.contract} is not one of "
                "the seven contracts; its plays were not checked.",
                deal=number,
            )
        elif declarer <= 3:
            breach = schedule.breach(number, declarer, Contract(deal.contract))
            schedule.add(declarer, deal.contract)
            if breach:
                self.add(breach.code, f"{head}: {breach.reason}.", deal=number, seat=declarer)
        self.check_trump(deal, number, head)
        self.check_deck(deal, number, head)
        self.check_play_metadata(rules, deal, number, head)
        if not replayable(deal):
            self.whole = False
            return
        replay: DealReplay = self.engine.replay_deal(*replay_args(deal, rules))
        cause = len(self.report.findings)
        for v in replay.violations:
            self.report_violation(head, number, v)
        self.check_end(deal, number, head, replay, last=last, complete=complete)
        scores = rules.deal_scores(deal.contract, replay.units, replay.revoker)
        for s in range(4):
            self.totals[s] += scores[s]
        claimed = list(deal.claimed_scores)
        if claimed and claimed != scores:
            self.add(
                "SCORE_MISMATCH",
                f"{head}: the record claims scores {_fmt(claimed)}; the "
                f"replay gives {_fmt(scores)}.",
                deal=number,
            )
        if replay.violations:
            self.follow_from(cause)

    def follow_from(self, cause: int) -> None:
        """Mark the deal's findings after its first illegal play as following from it.

        After one illegal play the replay judges a different game (a card played by the
        wrong seat moves every later card to another seat), so what comes after is most
        likely its consequence: the user should see the one real mistake first.
        """
        findings = self.report.findings
        followers = range(cause + 1, len(findings))
        for i in followers:
            findings[i] = dataclasses.replace(findings[i], caused_by=cause)
        if followers:
            n = len(followers)
            later = "finding after it" if n == 1 else f"{n} findings after it"
            verb = "follows" if n == 1 else "follow"
            message = f"{findings[cause].message} The {later} in this deal {verb} from it."
            findings[cause] = dataclasses.replace(findings[cause], message=message)
        if self.first_cause is None:
            self.first_cause = cause

    def check_dealer(self, rules: Ruleset, deal: pb.Deal, number: int, head: str) -> None:
        if deal.HasField("dealer") and deal.dealer > 3:
            self.add(
                "WRONG_DEALER",
                f"{head}: dealer seat {deal.dealer} does not exist.",
                Severity.WARNING,
                deal=number,
            )
            return
        if rules.dealer is DealerRule.UNCHECKED or not deal.HasField("dealer") or deal.declarer > 3:
            return
        expected = rules.dealer_of(deal.declarer)
        if deal.dealer != expected:
            self.add(
                "WRONG_DEALER",
                f"{head}: seat {deal.dealer} dealt; under this ruleset seat {expected} deals.",
                Severity.WARNING,
                deal=number,
                seat=deal.dealer,
            )

    def check_trump(self, deal: pb.Deal, number: int, head: str) -> None:
        """Report a koz deal without trumps, or trumps named outside koz."""
        trump = named_trump(deal)
        if int(deal.contract) == Contract.KOZ and trump < 0:
            self.add(
                "TRUMP_MISSING",
                f"{head}: the declarer named no trump suit; its plays were not checked.",
                deal=number,
                seat=deal.declarer,
            )
        elif int(deal.contract) != Contract.KOZ and deal.trump != pb.SUIT_UNSPECIFIED:
            named = (
                f"{SUIT_NAMES[trump]} ({SUIT_SYMBOLS[trump]})" if trump >= 0 else str(deal.trump)
            )
            self.add(
                "TRUMP_NOT_ALLOWED",
                f"{head}: trumps ({named}) are named, but only koz has trumps.",
                deal=number,
            )

    def check_deck(self, deal: pb.Deal, number: int, head: str) -> None:
        hands = deal.hands
        problem = ""
        if len(hands) != 52:
            problem = f"the hands hold {len(hands)} cards, not 52"
        elif max(hands) >= 52:
            problem = f"the hands hold byte {max(hands)}, which is no card"
        elif mask_of(hands) != (1 << 52) - 1:
            counts = Counter(hands)
            doubled = [c for c, k in counts.items() if k > 1]
            missing = (1 << 52) - 1 & ~mask_of(hands)
            problem = f"{symbols(mask_of(doubled))} dealt twice and {symbols(missing)} missing"
        if problem:
            self.add(
                "BAD_DECK",
                f"{head}: the four hands do not partition the deck: {problem}; "
                "its plays were not checked.",
                deal=number,
            )

    def check_play_metadata(self, rules: Ruleset, deal: pb.Deal, number: int, head: str) -> None:
        n = len(deal.plays)
        think = deal.think_ms
        if think and len(think) != n:
            self.add(
                "BAD_PLAY_METADATA", f"{head}: {len(think)} think times for {n} plays.", deal=number
            )
        bad_auto = [i for i in deal.auto_plays if i >= n]
        if bad_auto:
            self.add(
                "BAD_PLAY_METADATA",
                f"{head}: auto-play marks point past the last play "
                f"({', '.join(map(str, bad_auto))}).",
                deal=number,
            )
        if deal.HasField("revoke_play"):
            if rules.revoke is not RevokeRule.PENALIZE:
                self.add(
                    "REVOKE_NOT_ALLOWED",
                    f"{head}: play {deal.revoke_play} is marked as a "
                    "revoke, but this ruleset rejects illegal plays instead of penalizing them.",
                    deal=number,
                    play=deal.revoke_play,
                )
            elif deal.revoke_play >= n:
                self.add(
                    "BAD_PLAY_METADATA",
                    f"{head}: the revoke mark points at play "
                    f"{deal.revoke_play}, but the deal has {n} plays.",
                    deal=number,
                )
        if think and len(think) == n:
            auto = set(deal.auto_plays)
            for i, ms in enumerate(think):
                if ms > rules.play_timeout_ms and i not in auto:
                    self.add(
                        "OVER_TIME",
                        f"{head}, trick {i // 4 + 1}: a play took {ms} ms, over the "
                        f"{rules.play_timeout_ms} ms clock, and was not auto-played.",
                        Severity.WARNING,
                        deal=number,
                        trick=i // 4 + 1,
                        play=i,
                    )
        if deal.HasField("trump_think_ms") and deal.trump_think_ms > rules.trump_timeout_ms:
            self.add(
                "OVER_TIME",
                f"{head}: naming trumps took {deal.trump_think_ms} ms, over the "
                f"{rules.trump_timeout_ms} ms clock.",
                Severity.WARNING,
                deal=number,
            )

    def report_violation(self, head: str, number: int, v: Violation) -> None:
        code = VERDICT_NAMES[v.code]
        trick = v.play // 4 + 1
        where: dict[str, object] = {
            "deal": number,
            "trick": trick,
            "seat": v.seat,
            "card": v.card,
            "play": v.play,
        }
        if v.code == NOT_A_CARD:
            self.add(
                code,
                f"{head}, trick {trick}: play {v.play} is byte {v.card}, which is no "
                "card; the rest of the deal was not checked.",
                **where,
            )
            return
        if code == "REVOKE_MARK_ON_LEGAL_PLAY":
            self.add(
                code,
                f"{head}, trick {trick}: seat {v.seat}'s {card_symbol(v.card)} is "
                "marked as a revoke, but it was a legal play.",
                **where,
            )
            return
        self.add(
            code,
            f"{head}, trick {trick}: seat {v.seat} played {card_symbol(v.card)} but "
            f"{_RULE_SENTENCES[code]} (legal: {symbols(v.legal)}).",
            legal=tuple(c for c in range(52) if v.legal >> c & 1),
            **where,
        )

    def check_end(
        self,
        deal: pb.Deal,
        number: int,
        head: str,
        replay: DealReplay,
        *,
        last: bool,
        complete: bool,
    ) -> None:
        if replay.end in (END_UNREADABLE, END_INCOMPLETE, END_REVOKE):
            self.whole = False
        if replay.end == END_UNREADABLE:
            return
        extra = len(deal.plays) - replay.consumed
        if extra > 0:
            ended = {
                END_ALL_TRICKS: "after thirteen tricks",
                END_EARLY: "when the last penalty card fell",
                END_REVOKE: "at the revoke",
            }[replay.end]
            self.add(
                "PLAY_AFTER_DEAL_END",
                f"{head}: the deal ended {ended}, but {extra} more "
                f"card(s) were played from play {replay.consumed} on.",
                deal=number,
                trick=replay.consumed // 4 + 1,
                play=replay.consumed,
            )
        recorded = deal.end
        if replay.end == END_INCOMPLETE:
            tricks = len(replay.winners)
            if recorded == pb.DEAL_END_ABANDONED and last and not complete:
                return
            why = (
                "the match is complete"
                if complete
                else "only the last deal of an unfinished match may stop early"
                if not last
                else "the deal is not marked abandoned"
            )
            self.add(
                "DEAL_INCOMPLETE",
                f"{head}: play stops after {len(deal.plays)} cards "
                f"({tricks} complete tricks), but {why}.",
                deal=number,
                trick=tricks + 1,
            )
            return
        if recorded not in (pb.DEAL_END_UNSPECIFIED, end_to_proto(replay.end)):
            self.add(
                "DEAL_END_MISMATCH",
                f"{head}: the record says the deal ended "
                f"{_END_NAMES.get(recorded, str(recorded))}; the replay ended "
                f"{_END_NAMES[end_to_proto(replay.end)]}.",
                deal=number,
            )

    def check_totals(self, rules: Ruleset, complete: bool) -> None:
        claimed = list(self.match.claimed_totals)
        if not claimed:
            return
        if claimed != self.totals:
            self.add(
                "TOTALS_MISMATCH",
                f"The record claims match totals {_fmt(claimed)}; the "
                f"deals add up to {_fmt(self.totals)}.",
                caused_by=self.first_cause,
            )
        if (
            complete
            and rules.is_zero_sum()
            and self.whole
            and sum(claimed) != 0
            and len(self.match.deals) == rules.deal_count
        ):
            self.add(
                "ZERO_SUM",
                f"The claimed totals add up to {sum(claimed)}; under this "
                "schedule a complete match adds up to 0.",
            )


def _fmt(scores: list[int]) -> str:
    return "[" + ", ".join(f"{s:+d}" if s else "0" for s in scores) + "]"


def validate_match(
    match: pb.Match, location: Location | None = None, engine: ModuleType | None = None
) -> MatchReport:
    """Every finding for one match, judged by the match's own ruleset."""
    return _MatchCheck(match, location or Location(), engine or _twins.ACTIVE.engine).run()
