"""``kingrec show`` end to end: which match, which deal, what is wrong, damaged records."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from kingrec.container import KrecWriter
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec_cli.main import main

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
CLASSIC = SAMPLES / "valid" / "classic.krec"
FLIPPED = SAMPLES / "damaged" / "flipped-byte.krec"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    kingrec = Path(sys.executable).parent / "kingrec"
    return subprocess.run([str(kingrec), *args], capture_output=True, check=False, text=True)


def test_a_deal_past_the_last_is_an_error_naming_the_range() -> None:
    result = run("show", str(CLASSIC), "--deal", "21")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "kingrec: error: there is no deal 21: match 'classic-0' has deals 1 to 20\n"
    )


def test_match_and_index_together_are_refused() -> None:
    result = run("show", str(CLASSIC), "--match", "classic-0", "--index", "2")
    assert result.returncode == 2
    assert result.stderr.startswith("kingrec: error: --match and --index each pick a match")


def test_index_counts_frames_from_1_as_the_locations_print_them() -> None:
    result = run("show", str(CLASSIC), "--index", "2", "--deal", "1")
    assert result.returncode == 0
    assert result.stdout.startswith("Match classic-1  ")
    assert ", frame 2, byte " in result.stdout.splitlines()[0]
    too_far = run("show", str(CLASSIC), "--index", "3")
    assert too_far.returncode == 2
    assert (
        "there is no record 3" in too_far.stderr and "holds 2 readable record(s)" in too_far.stderr
    )


def test_damage_is_named_and_counted_like_validate_lists_it() -> None:
    listed = run("validate", "--all", str(FLIPPED)).stdout.splitlines()
    assert [line.split(":")[0].rsplit(", ", 2)[1] for line in listed[:3]] == [
        "frame 1", "frame 2", "frame 3"]  # fmt: skip
    third = run("show", str(FLIPPED), "--index", "3", "--deal", "1")
    assert third.returncode == 0
    assert "Match damaged-2" in third.stdout and ", frame 3, byte" in third.stdout
    (note,) = third.stderr.splitlines()
    assert note.startswith(f"kingrec: damaged: {FLIPPED}, frame 2, byte 4935: FRAME_CORRUPT: ")
    assert "frame 2 at byte 4935 is corrupt" in note  # the sentence counts frames the same way
    second = run("show", str(FLIPPED), "--index", "2")
    assert second.returncode == 2 and second.stdout == ""
    assert second.stderr.splitlines()[-1] == (
        f"kingrec: error: record 2 of {FLIPPED} is damaged (FRAME_CORRUPT); it cannot be shown"
    )


def test_illegal_plays_are_marked_with_their_finding() -> None:
    out = run("show", str(SAMPLES / "invalid" / "must-give-penalty-card.krec"), "--deal", "2")
    lines = out.stdout.splitlines()
    assert "INVALID (1 error)" in lines[1]
    (trick,) = [line for line in lines if line.startswith(" 7 ")]
    assert "♣A!1" in trick
    (note,) = [line for line in lines if line.startswith("  !1 ")]
    assert note == ("  !1 error MUST_GIVE_PENALTY_CARD Deal 2 (Erkek almaz), trick 7: seat 3 "
                    "played ♣A but had to give a penalty card already covered on the trick "
                    "(legal: ♣J).")  # fmt: skip


def test_findings_without_a_card_are_listed_with_their_deal_or_match() -> None:
    out = run("show", str(SAMPLES / "invalid" / "not-a-card.krec"), "--deal", "5").stdout
    assert "  error NOT_A_CARD Deal 5 (Kupa almaz), trick 3: play 9 is byte 60" in out
    out = run("show", str(SAMPLES / "invalid" / "zero-sum.krec"), "--deal", "1").stdout
    header = out.split("\n\n")[0]
    assert "error ZERO_SUM" in header and "error TOTALS_MISMATCH" in header


def test_scores_name_all_four_seats_and_lines_are_not_wrapped_in_a_pipe() -> None:
    lines = run("show", str(CLASSIC), "--deal", "3").stdout.splitlines()
    assert "  score: Ayşe (0) -120  Mehmet (1) -300  Zeynep (2) -60  Emre (3) +0" in lines
    assert "  running: Ayşe (0) -370  Mehmet (1) -600  Zeynep (2) -460  Emre (3) -100" in lines
    assert not any(line != line.rstrip() for line in lines)
    long = run("show", str(SAMPLES / "invalid" / "must-ruff.krec"), "--deal", "4").stdout
    assert any(len(line) > 100 for line in long.splitlines())  # whole, as written


# -- damaged and invalid records: every view renders or reports -----------------------------


def _hands_byte(deal: pb.Deal) -> None:
    hands = bytearray(deal.hands)
    hands[3] = 77
    deal.hands = bytes(hands)


def _plays_byte(deal: pb.Deal) -> None:
    plays = bytearray(deal.plays)
    plays[0] = 255
    deal.plays = bytes(plays)


def _short_hands(deal: pb.Deal) -> None:
    deal.hands = deal.hands[:47]


def _no_hands(deal: pb.Deal) -> None:
    deal.hands = b""
    deal.plays = b""


def _unknown_contract(deal: pb.Deal) -> None:
    deal.contract = 42  # type: ignore[assignment]


def _declarer_7(deal: pb.Deal) -> None:
    deal.declarer = 7


def _penalty_trump(deal: pb.Deal) -> None:
    deal.trump = pb.SUIT_HEARTS


def _odd_trump(deal: pb.Deal) -> None:
    deal.trump = 9  # type: ignore[assignment]


def _long_plays(deal: pb.Deal) -> None:
    deal.plays = deal.plays + deal.plays[:7]


DAMAGE: dict[str, Callable[[pb.Deal], None]] = {
    "hand-byte-77": _hands_byte,
    "play-byte-255": _plays_byte,
    "short-hands": _short_hands,
    "no-hands": _no_hands,
    "unknown-contract": _unknown_contract,
    "declarer-7": _declarer_7,
    "trump-on-a-penalty-deal": _penalty_trump,
    "trump-9": _odd_trump,
    "plays-after-the-end": _long_plays,
}


def _match_level(match: pb.Match) -> None:
    match.players[1].seat = 9
    del match.players[2]
    match.claimed_totals.extend([1, 2])
    match.status = 17  # type: ignore[assignment]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_show_renders_damaged_records_without_crashing(damage: str, tmp_path: Path) -> None:
    match = simulate_match(preset("classic"), 5)
    assert match.deals[0].contract != pb.CONTRACT_KOZ
    DAMAGE[damage](match.deals[0])
    _match_level(match)
    path = tmp_path / "damaged.krec"
    with KrecWriter.open(path) as writer:
        writer.write_match(match)
    for args in ([], ["--hands"], ["--deal", "1", "--hands"]):
        result = CliRunner().invoke(main, ["show", str(path), *args])
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        assert result.exit_code == 0, result.output
        assert "Deal 1 " in result.output and "INVALID" in result.output


def test_show_hands_with_a_byte_over_51(tmp_path: Path) -> None:
    match = simulate_match(preset("classic"), 5)
    _hands_byte(match.deals[0])
    with KrecWriter.open(tmp_path / "x.krec") as writer:
        writer.write_match(match)
    result = run("show", str(tmp_path / "x.krec"), "--hands", "--deal", "1")
    assert result.returncode == 0, result.stderr
    assert "#77" in result.stdout
    assert "this deal cannot be replayed" in result.stdout
    assert "BAD_DECK" in result.stdout
    whole = CliRunner().invoke(main, ["show", str(tmp_path / "x.krec"), "--hands"])
    assert whole.exit_code == 0, whole.exception
    assert "#77" in whole.output and "Deal 20 " in whole.output
