"""``kingrec show``: a match laid out for people."""

from __future__ import annotations

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kingrec.boundary import ruleset_from_proto
from kingrec.cards import SUIT_SYMBOLS, card_symbol
from kingrec.contracts import Contract
from kingrec.findings import Location
from kingrec.records import Damage, open_records
from kingrec.replay import DealView, replay_match
from kingrec.v1 import record_pb2 as pb

from .errors import Failed, user_errors

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


def _card(card: int) -> str:
    colour = "red" if card // 13 in (1, 2) else "default"
    return f"[{colour}]{card_symbol(card)}[/]"


def _label(contract: int) -> str:
    try:
        return Contract(contract).label
    except ValueError:
        return f"contract {contract}"


def _seat_names(match: pb.Match) -> list[str]:
    names = [f"seat {s}" for s in range(4)]
    for p in match.players:
        if p.seat < 4 and (p.name or p.id):
            names[p.seat] = f"{p.name or p.id} ({p.seat})"
    return names


def _pick(path: str, match_id: str | None, index: int | None) -> tuple[Location, pb.Match]:
    with user_errors(), open_records(path) as records:
        n = 0
        for item in records:
            if isinstance(item, Damage):
                continue
            location, match = item.location, item.match
            n += 1
            if (match_id is not None and match.match_id == match_id) or (
                match_id is None and n == (index or 1)
            ):
                return location, match
    wanted = f"match {match_id!r}" if match_id is not None else f"match number {index or 1}"
    raise Failed(f"{path}: no {wanted} (the file holds {n} readable match(es))")


@click.command()
@click.argument("file", type=click.Path(allow_dash=True, dir_okay=False))
@click.option("--match", "match_id", metavar="ID", help="Show the match with this id.")
@click.option(
    "--index",
    type=click.IntRange(min=1),
    metavar="N",
    help="Show the N-th match of the file (default: the first).",
)
@click.option(
    "--deal", "deal_number", type=click.IntRange(min=1), metavar="N", help="Show only deal N."
)
@click.option("--hands", is_flag=True, help="Also show the four hands as dealt.")
def show(
    file: str, match_id: str | None, index: int | None, deal_number: int | None, hands: bool
) -> None:
    """Show one match of FILE: contracts, every trick and its winner, running scores.

    FILE is a .krec container or JSON Lines; - reads standard input.
    """
    location, match = _pick(file, match_id, index)
    with user_errors():
        rules = ruleset_from_proto(match.ruleset)
    console = Console(highlight=False)
    names = _seat_names(match)
    status = _STATUS.get(match.status, "status not set")
    console.print(f"[bold]Match {escape(match.match_id or '(no id)')}[/]  {escape(str(location))}")
    meta = match.metadata
    facts = [
        f"ruleset {escape(rules.preset)}",
        f"{len(match.deals)}/{rules.deal_count} deals",
        status,
    ]
    if meta.event:
        facts.insert(0, escape(meta.event))
    if match.status_reason:
        facts.append(escape(match.status_reason))
    console.print("  " + " · ".join(facts))
    console.print("  players: " + ", ".join(escape(n) for n in names))
    for view in replay_match(match, rules):
        if deal_number is None or view.number == deal_number:
            _print_deal(
                console, view, names, hands, rules.unit_score(view.contract) if view.playable else 0
            )
    _print_totals(console, match, names)


def _print_deal(console: Console, view: DealView, names: list[str], hands: bool, unit: int) -> None:
    title = f"Deal {view.number} — {_label(view.contract)}"
    if view.trump >= 0:
        title += f" ({SUIT_SYMBOLS[view.trump]} trumps)"
    console.print()
    console.print(f"[bold]{title}[/], declarer {escape(names[view.declarer % 4])}")
    if hands and len(view.hands) == 52:
        for s in range(4):
            cards = sorted(view.hands[13 * s : 13 * s + 13], key=lambda c: (c // 13, -(c % 13)))
            console.print(f"  {escape(names[s]):>14}: " + " ".join(_card(c) for c in cards))
    if not view.playable:
        console.print("  [red]this deal cannot be replayed (bad deck, seat, contract or trump)[/]")
        return
    table = Table(box=None, show_header=True, pad_edge=False)
    table.add_column("#", justify="right")
    table.add_column("lead")
    table.add_column("cards")
    table.add_column("winner")
    table.add_column("", justify="right")
    for trick in view.tricks:
        played = " ".join(_card(c) for c in trick.cards)
        if trick.winner is None:
            table.add_row(str(trick.number), escape(names[trick.leader]), played, "—", "")
            continue
        table.add_row(
            str(trick.number),
            escape(names[trick.leader]),
            played,
            escape(names[trick.winner]),
            f"{trick.units * unit:+d}" if trick.units else "",
        )
    console.print(table)
    if view.end in _END:
        note = _END[view.end]
        if view.revoker >= 0:
            note += f" ({escape(names[view.revoker])} revoked)"
        console.print(f"  [italic]{note}[/]")
    score = "  ".join(f"{escape(names[s])} {view.scores[s]:+d}" for s in range(4) if view.scores[s])
    running = "  ".join(f"{view.totals[s]:+d}" for s in range(4))
    console.print(f"  score: {score or 'nothing'}   running: {running}")


def _print_totals(console: Console, match: pb.Match, names: list[str]) -> None:
    if match.claimed_totals:
        console.print()
        console.print(
            "[bold]Claimed totals[/]: "
            + ", ".join(
                f"{escape(names[s])} {t:+d}" for s, t in enumerate(match.claimed_totals[:4])
            )
        )
