"""``kingrec analyse``, used the way people use it: a real record file, the installed command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pty_screen import on_terminal

import kingrec
from kingrec._engine_py import Deal
from kingrec.boundary import engine_trump, ruleset_to_proto
from kingrec.cards import CLUBS, HEARTS, SPADES, SUIT_MASKS, cards_in, parse_cards
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb

CLASSIC = preset("classic")
KINGREC = str(Path(sys.executable).parent / "kingrec")
NO_CLOCK = ("--budget-ms", "0")  # no time budget: these deals are judged by no clock


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KINGREC, *args], capture_output=True, text=True, check=False)


def _play_lowest(deal: pb.Deal) -> None:
    """Fill in the deal's plays: every seat plays its lowest legal card, to the end."""
    contract = int(deal.contract)
    state = Deal(
        deal.hands, deal.declarer, contract, engine_trump(deal), CLASSIC.deal_flags(contract)
    )
    plays = []
    while state.end == 0:
        card = next(cards_in(state.legal()))
        state.push(card)
        plays.append(card)
    deal.plays = bytes(plays)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One match of three deals: a koz deal whose first lead costs a trick, a rıfkı deal over
    after one trick, and a real simulated deal (hard: for the budget)."""
    spades = list(cards_in(SUIT_MASKS[SPADES]))
    hands = (
        spades[1:] + parse_cards("AD"),
        spades[:1] + parse_cards("3C 4C 5C 6C 7C 8C 9C TC JC QC KC 2C"),
        parse_cards("2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD AC"),
        list(cards_in(SUIT_MASKS[HEARTS])),
    )
    match = pb.Match(match_id="hand-made")
    match.ruleset.CopyFrom(ruleset_to_proto(CLASSIC))
    koz = match.deals.add(number=1, declarer=0, contract=pb.CONTRACT_KOZ, trump=pb.SUIT_SPADES)
    koz.hands = bytes(c for hand in hands for c in hand)
    _play_lowest(koz)  # seat 0 leads ♦A first: seat 1 ruffs it
    clubs = list(cards_in(SUIT_MASKS[CLUBS]))
    rifki = match.deals.add(number=2, declarer=0, contract=pb.CONTRACT_RIFKI)
    rifki.hands = bytes(clubs + [c for c in range(52) if c // 13 != CLUBS])
    _play_lowest(rifki)
    match.deals.add().CopyFrom(simulate_match(CLASSIC, 1).deals[3])
    path = tmp_path_factory.mktemp("analyse") / "games.krec"
    kingrec.write_records(path, match)
    return path


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_analyse_shows_par_actual_and_the_card_that_cost_a_trick(records: Path) -> None:
    result = run("analyse", str(records), "--deal", "1", *NO_CLOCK)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Deal 1 — Koz (spades)" in out
    assert "seat 0  par 13 (+650)    actual 12 (+600)" in out
    assert "seat 1  par 0 (+0)       actual 1 (+50)" in out
    assert "trick 1: seat 0 played ♦A, giving away 1 unit (50 points); best: ♠3, ♠4" in out
    assert "1 deal(s) of 1 match(es) in 1 file(s), 1 solved, 0 unsolved, 1 costly card(s)" in out


def test_analyse_json_gives_one_object_per_deal_then_a_summary(records: Path) -> None:
    result = run("analyse", str(records), "--json", "--deal", "2", *NO_CLOCK)
    assert result.returncode == 0, result.stderr
    deal, summary = _json_lines(result.stdout)
    assert deal["type"] == "deal" and deal["match"] == "hand-made" and deal["deal"] == 2
    assert deal["contract"] == "RIFKI" and deal["solved"] is True
    assert [s["par"] for s in deal["seats"]] == [1, 0, 0, 0]
    assert [s["actual_points"] for s in deal["seats"]] == [-320, 0, 0, 0]
    assert deal["costly_plays"] == []
    assert deal["search"]["nodes"] > 0
    assert summary == {
        "type": "summary", "files": 1, "matches": 1, "deals": 1, "solved": 1, "unsolved": 0,
        "costly": 0, "nodes": deal["search"]["nodes"], "unreadable": 0, "damaged": 0,
        "skipped": 0,
    }  # fmt: skip


def test_seat_picks_the_seats_and_par_only_skips_the_card_costs(records: Path) -> None:
    result = run(
        "analyse", str(records), "--json", "--deal", "1", "--seat", "1", "--par-only", *NO_CLOCK
    )
    assert result.returncode == 0, result.stderr
    deal, _summary = _json_lines(result.stdout)
    assert [s["seat"] for s in deal["seats"]] == [1]
    assert "costly_plays" not in deal


def test_deal_given_several_times_analyses_each_of_those_deals_in_order(records: Path) -> None:
    result = run("analyse", str(records), "--json", "--deal", "2", "--deal", "1", *NO_CLOCK)
    assert result.returncode == 0, result.stderr
    *deals, summary = _json_lines(result.stdout)
    assert [d["deal"] for d in deals] == [1, 2]  # the match's order, each deal once
    assert [d["contract"] for d in deals] == ["KOZ", "RIFKI"]
    assert summary["deals"] == 2 and summary["solved"] == 2
    again = run("analyse", str(records), "--json", "--deal", "2", "--deal", "2", *NO_CLOCK)
    assert [d["deal"] for d in _json_lines(again.stdout)[:-1]] == [2]


def test_a_deal_number_no_match_has_is_said_not_silently_passed_over(records: Path) -> None:
    result = run("analyse", str(records), "--deal", "9", "--deal", "2", "--deal", "7", *NO_CLOCK)
    assert result.returncode == 0, result.stderr
    assert "Deal 2 — " in result.stdout and "1 deal(s) of 1 match(es)" in result.stdout
    assert "kingrec: no match has deal 7, 9: the longest has 3 deal(s)" in result.stderr
    quiet = run("analyse", str(records), "--deal", "3", "--par-only", "--from-trick", "12")
    assert "no match has" not in quiet.stderr


def test_a_deal_past_its_budget_is_reported_unsolved_and_exits_1(records: Path) -> None:
    budget = ("--budget-ms", "0", "--budget-nodes", "1000")  # nodes: the same on any machine
    result = run("analyse", str(records), "--deal", "3", *budget)
    assert result.returncode == 1
    assert "unsolved: the search ran past its budget (1000 nodes)" in result.stdout
    assert "par ?" in result.stdout
    result = run("analyse", str(records), "--json", "--deal", "3", *budget)
    deal, summary = _json_lines(result.stdout)
    assert deal["solved"] is False and all(s["par"] is None for s in deal["seats"])
    assert all(s["actual"] is not None for s in deal["seats"])
    assert summary["unsolved"] == 1


def test_from_trick_solves_a_real_deal_from_a_later_trick(records: Path) -> None:
    result = run(
        "analyse", str(records), "--json", "--deal", "3", "--from-trick", "9", "--budget-ms", "0"
    )
    assert result.returncode == 0, result.stderr
    deal, _summary = _json_lines(result.stdout)
    assert deal["solved"] is True and deal["at_play"] == 32
    for seat in deal["seats"]:
        assert seat["par"] is not None
    assert all(cost["play"] >= 32 for cost in deal["costly_plays"])
    text = run("analyse", str(records), "--deal", "3", "--from-trick", "9", *NO_CLOCK).stdout
    assert "from play 33 (trick 9) on" in text


def test_jobs_give_the_same_reports_in_the_same_order(records: Path) -> None:
    args = ["analyse", str(records), "--json", "--par-only", "--budget-ms", "0"]
    args += ["--budget-nodes", "200000"]
    one, two = run(*args), run(*args, "--jobs", "2")
    assert one.returncode == two.returncode

    def without_times(text: str) -> list[dict[str, Any]]:
        lines = _json_lines(text)
        for line in lines:
            line.get("search", {}).pop("ms", None)
        return lines

    assert without_times(one.stdout) == without_times(two.stdout)
    assert [line.get("deal") for line in _json_lines(one.stdout)] == [1, 2, 3, None]


def test_the_pure_python_twin_gives_the_same_report(records: Path) -> None:
    args = [KINGREC, "analyse", str(records), "--json", "--deal", "1", *NO_CLOCK]
    env = {**os.environ, "KINGREC_PURE_PYTHON": "1"}
    pure = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    compiled = run(*args[1:])
    assert pure.returncode == compiled.returncode == 0, pure.stderr

    def without_times(text: str) -> list[dict[str, Any]]:
        lines = _json_lines(text)
        for line in lines:
            line.get("search", {}).pop("ms", None)
        return lines

    assert without_times(pure.stdout) == without_times(compiled.stdout)


def test_an_unreadable_file_is_named_and_exits_2(tmp_path: Path, records: Path) -> None:
    missing = str(tmp_path / "missing.krec")
    result = run("analyse", missing, str(records), "--deal", "2", *NO_CLOCK)
    assert result.returncode == 2
    assert "missing.krec" in result.stderr and "kingrec: error:" in result.stderr
    assert "Deal 2 — Rıfkı" in result.stdout  # the other file is still analysed


def test_on_a_terminal_the_report_is_shown_and_the_bar_is_gone(records: Path) -> None:
    shown = on_terminal([KINGREC, "analyse", str(records), "--deal", "2", *NO_CLOCK])
    assert shown.returncode == 0
    assert shown.lines[0].startswith("Deal 2 — Rıfkı — ")
    assert "seat 0  par 1 (-320)     actual 1 (-320)" in shown.lines[1]
    assert shown.lines[-1].startswith("analysed 1 deal(s)")
    assert not any("analysing deals" in line for line in shown.lines)
