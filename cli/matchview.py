"""A match laid out for people: header, deals with their tricks, marked illegal plays, scores.

It renders whatever a record holds: bytes that are no card (``#60``), hands that are not
four times thirteen, seats and contracts that do not exist, a ruleset that cannot be
used. What is wrong is shown where it is, from the validator's findings: an illegal card
is marked in its trick (``♣A!1``) with a footnote giving the finding's code and sentence.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich.text import Text

from kingrec.cards import SUIT_NAMES, SUIT_SYMBOLS
from kingrec.contracts import Contract
from kingrec.events import CardPlayed
from kingrec.findings import CODES, Finding, Location, MatchReport, Severity
from kingrec.replay import DealView, TrickView, replay_match
from kingrec.rules import Ruleset
from kingrec.v1 import record_pb2 as pb

from .lines import finding_line
from .places import place
from .terminal import Terminal, counted, escape, shown

__all__ = ["MatchView"]

_STATUS: dict[int, str] = {
    pb.MATCH_STATUS_COMPLETE: "complete",
    pb.MATCH_STATUS_ABANDONED: "abandoned",
    pb.MATCH_STATUS_IN_PROGRESS: "in progress",
}
_END: dict[int, str] = {
    pb.DEAL_END_EARLY: "ended early: the last penalty card fell",
    pb.DEAL_END_ABANDONED: "abandoned",
    pb.DEAL_END_REVOKE: "stopped by a revoke",
}
_MARKED = "bold reverse red"


def _label(contract: int) -> str:
    try:
        return Contract(contract).label
    except ValueError:
        return f"contract {contract} (unknown)"


def seat_names(match: pb.Match) -> list[str]:
    """``Ayşe (0)`` for each seat 0..3, ``seat 2`` where the record names no player."""
    names = [f"seat {s}" for s in range(4)]
    for p in match.players:
        if p.seat < 4 and (p.name or p.id):
            names[p.seat] = shown(f"{p.name or p.id} ({p.seat})")
    return names


@dataclass
class MatchView:
    """Prints one match through a ``Terminal``."""

    term: Terminal
    match: pb.Match
    location: Location
    report: MatchReport
    rules: Ruleset | None  # None: the record's ruleset cannot be used
    names: list[str] = field(init=False)
    _unit: int = field(init=False, default=0)  # points per scoring unit of the deal shown

    def __post_init__(self) -> None:
        self.names = seat_names(self.match)

    def seat(self, seat: int) -> str:
        return self.names[seat] if 0 <= seat < 4 else f"seat {seat} (no such seat)"

    # -- the match ---------------------------------------------------------------------------

    def header(self) -> None:
        out, match, rules = self.term, self.match, self.rules
        out.report(
            f"[bold]Match {escape(match.match_id or '(no id)')}[/]  {escape(place(self.location))}"
        )
        facts = []
        if match.metadata.event:
            facts.append(escape(match.metadata.event))
        if rules is None:
            facts.append(f"ruleset {escape(match.ruleset.preset or '(none)')} (cannot be used)")
            facts.append(f"{len(match.deals)} deals")
        else:
            facts.append(f"ruleset {escape(rules.preset)}")
            facts.append(f"{len(match.deals)}/{rules.deal_count} deals")
        facts.append(_STATUS.get(match.status, "status not set"))
        if match.status_reason:
            facts.append(escape(match.status_reason))
        facts.append(self._verdict())
        out.report("  " + " · ".join(facts))
        out.report("  players: " + ", ".join(escape(n) for n in self.names))
        for finding in self.report.findings:
            if finding.deal is None:
                out.report("  " + finding_line(out, finding))

    def _verdict(self) -> str:
        findings = self.report.findings
        errors = sum(1 for f in findings if f.severity is Severity.ERROR)
        warnings = len(findings) - errors
        counts = [counted(n, what) for n, what in ((errors, "error"), (warnings, "warning")) if n]
        if errors:
            return f"[bold red]INVALID[/] ({', '.join(counts)})"
        return "valid" + (f" ({', '.join(counts)})" if counts else "")

    def deals(self, only: int | None = None, hands: bool = False) -> None:
        """Every deal, or only the one at index ``only``; the claimed totals at the end."""
        if self.rules is None:
            self.term.report()
            self.term.report("  [red]no deal can be replayed: the ruleset cannot be used[/]")
        else:
            for index, view in enumerate(replay_match(self.match, self.rules)):
                if only is None or index == only:
                    self.deal(index, view, hands)
        self.claimed_totals()

    def claimed_totals(self) -> None:
        totals = self.match.claimed_totals
        if totals:
            self.term.report()
            self.term.report(
                "[bold]Claimed totals[/]: "
                + "  ".join(f"{escape(self.seat(s))} {t:+d}" for s, t in enumerate(totals))
            )

    # -- one deal ----------------------------------------------------------------------------

    def deal(self, index: int, view: DealView, hands: bool) -> None:
        out, number = self.term, index + 1
        findings = [f for f in self.report.findings if f.deal == number]
        title = f"Deal {number} — {escape(_label(view.contract))}"
        if 0 <= view.trump <= 3:
            suit = SUIT_SYMBOLS[view.trump] if out.symbols else SUIT_NAMES[view.trump]
            title += f" ({suit} trumps)"
        out.report()
        out.report(f"[bold]{title}[/], declarer {escape(self.seat(view.declarer))}")
        if view.number != number:
            out.report(f"  (numbered {view.number} in the record)")
        if hands:
            self.hands(view.hands)
        marks = _Marks(findings)
        if view.playable and self.rules is not None:
            self._unit = self.rules.unit_score(view.contract)
            self.tricks(view.tricks, marks)
            for line in marks.footnotes(out):
                out.report("  " + line)
            if view.end in _END:
                note = _END[view.end]
                if view.revoker >= 0:
                    note += f" ({escape(self.seat(view.revoker))} revoked)"
                out.report(f"  [italic]{note}[/]")
        else:
            out.report("  [red]this deal cannot be replayed[/]")
        for finding in findings:
            if finding not in marks.used:
                out.report("  " + finding_line(out, finding))
        if view.playable:
            out.report("  score: " + self._by_seat(view.scores))
        else:
            out.report("  score: not scored")
        out.report("  running: " + self._by_seat(view.totals))

    def _by_seat(self, values: Sequence[int]) -> str:
        return "  ".join(f"{escape(self.seat(s))} {v:+d}" for s, v in enumerate(values))

    def hands(self, cards: bytes | Sequence[int]) -> None:
        out = self.term
        width = max(len(n) for n in self.names)
        for s in range(4):
            hand = sorted(cards[13 * s : 13 * s + 13], key=lambda c: (c // 13, -(c % 13)))
            shown = " ".join(self._card(c) for c in hand) or "(no cards)"
            out.report(f"  {escape(self.names[s]).rjust(width)}: {shown}")
        if len(cards) != 52:
            out.report(
                f"  [red](the record holds {len(cards)} card bytes for the hands, not 52)[/]"
            )

    def _card(self, card: int) -> str:
        text = escape(self.term.card(card))
        if not 0 <= card < 52:
            return f"[{_MARKED}]{text}[/]"
        return f"[red]{text}[/]" if card // 13 in (1, 2) else text

    def tricks(self, tricks: Iterable[TrickView], marks: _Marks) -> None:
        rows: list[list[Text]] = [[Text(h) for h in ("#", "lead", "cards", "winner", "")]]
        for trick in tricks:
            cards = Text(" ").join(self._played(trick, play, marks) for play in _plays(trick))
            if trick.winner is None:
                rows.append([Text(str(trick.number)), Text(self.seat(trick.leader)), cards,
                             Text("—"), Text("")])  # fmt: skip
                continue
            rows.append(
                [
                    Text(str(trick.number)),
                    Text(self.seat(trick.leader)),
                    cards,
                    Text(self.seat(trick.winner)),
                    Text(self._points(trick)),
                ]
            )
        for line in _align(rows, right={0, 4}):
            self.term.report(line)

    def _points(self, trick: TrickView) -> str:
        return f"{trick.units * self._unit:+d}" if trick.units else ""

    def _played(self, trick: TrickView, play: CardPlayed, marks: _Marks) -> Text:
        text = Text(self.term.card(play.card))
        if play.card // 13 in (1, 2):
            text.stylize("red")
        mark = marks.mark(trick, play)
        if mark:
            text = Text.assemble(text, f"!{mark}")
            text.stylize(_MARKED)
        return text


def _plays(trick: TrickView) -> list[CardPlayed]:
    if trick.plays:
        return list(trick.plays)
    # A trick without its plays (an older replay): its cards, nothing marked.
    return [CardPlayed(-1, trick.number, i, -1, c, 0, None) for i, c in enumerate(trick.cards)]


def _align(rows: list[list[Text]], right: set[int]) -> list[Text]:
    """Rows of cells as lines, columns two spaces apart, without trailing spaces."""
    widths = [max(row[i].cell_len for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        line = Text()
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - cell.cell_len)
            if i:
                line.append("  ")
            line.append_text(Text(pad) + cell if i in right else cell + Text(pad))
        line.rstrip()
        lines.append(line)
    return lines


class _Marks:
    """The illegal plays of one deal, numbered in play order, with their footnotes."""

    def __init__(self, findings: list[Finding]) -> None:
        self._by_play: dict[int, list[Finding]] = {}
        for f in findings:
            if f.play is not None:
                self._by_play.setdefault(f.play, []).append(f)
        self.used: list[Finding] = []
        self._notes: list[tuple[int, CardPlayed, list[Finding]]] = []

    def mark(self, trick: TrickView, play: CardPlayed) -> int:
        """The footnote number of ``play``, or 0 when it broke no rule and has no finding."""
        found = self._by_play.get(play.play, []) if play.play >= 0 else []
        if not found and play.broke is None:
            return 0
        self.used += found
        self._notes.append((len(self._notes) + 1, play, found))
        return len(self._notes)

    def footnotes(self, term: Terminal) -> list[str]:
        lines = []
        for n, play, found in self._notes:
            if found:
                lines += [f"!{n} " + finding_line(term, f) for f in found]
                continue
            code = play.broke or ""
            legal = " ".join(term.card(c) for c in play.legal_cards) or "none"
            lines.append(
                f"!{n} [bold]{code}[/] trick {play.trick}: {escape(CODES.get(code, code))} "
                f"(legal: {escape(legal)})"
            )
        return lines
