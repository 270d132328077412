"""Regenerate the committed samples: ``python samples/make_samples.py``.

Every sample is a genuine record: matches played by the simulator's bots through the
engine, under each preset. The invalid samples are those records with one kind of damage
done to them (a swapped card, a wrong claim, a broken ruleset…), and each is listed in
``manifest.json`` with the finding codes it must produce, no more and no fewer. The
generator searches a played match for a spot where the damage gives exactly those codes,
and fails if it finds none. Other implementations can use the manifest as conformance
vectors.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kingrec import jsonl
from kingrec.boundary import ruleset_from_proto
from kingrec.cards import parse_card
from kingrec.container import FORMAT_VERSION, MAGIC, KrecWriter
from kingrec.contracts import Contract
from kingrec.replay import replay_match
from kingrec.rules import DealerRule, FirstDeclarerRule, RevokeRule, Ruleset, Schedule, preset
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.validator import validate_match

HERE = Path(__file__).resolve().parent
Mutation = Callable[[pb.Match], Iterator[pb.Match]]


def reclaim(match: pb.Match) -> pb.Match:
    """Make the claimed scores and totals agree with the replay, so only the damage shows."""
    rules = ruleset_from_proto(match.ruleset)
    for deal, view in zip(match.deals, replay_match(match, rules), strict=True):
        if view.playable:
            del deal.claimed_scores[:]
            deal.claimed_scores.extend(view.scores)
            totals = view.totals
    del match.claimed_totals[:]
    match.claimed_totals.extend(totals)
    return match


def codes(match: pb.Match) -> list[str]:
    return sorted({f.code for f in validate_match(match).findings})


def copy(match: pb.Match) -> pb.Match:
    out = pb.Match()
    out.CopyFrom(match)
    return out


def seats_of_plays(match: pb.Match, index: int) -> list[int]:
    """Who played each card of deal ``index`` (by replay)."""
    rules = ruleset_from_proto(match.ruleset)
    view = list(replay_match(match, rules))[index]
    seats = []
    for trick in view.tricks:
        seats += [(trick.leader + k) % 4 for k in range(len(trick.cards))]
    return seats


def swaps(contracts: set[int]) -> Mutation:
    """Swap two cards one seat played in different tricks of a deal."""

    def mutate(match: pb.Match) -> Iterator[pb.Match]:
        for d, deal in enumerate(match.deals):
            if deal.contract not in contracts:
                continue
            seats = seats_of_plays(match, d)
            n = len(deal.plays)
            for i in range(n):
                for j in range(i + 1, n):
                    if seats[i] != seats[j] or i // 4 == j // 4:
                        continue
                    m = copy(match)
                    plays = bytearray(m.deals[d].plays)
                    plays[i], plays[j] = plays[j], plays[i]
                    m.deals[d].plays = bytes(plays)
                    yield reclaim(m)

    return mutate


def replace_and_stop(contracts: set[int]) -> Mutation:
    """Replace one card with another the same seat holds, and end the match there (abandoned)."""

    def mutate(match: pb.Match) -> Iterator[pb.Match]:
        for d, deal in enumerate(match.deals):
            if deal.contract not in contracts:
                continue
            seats = seats_of_plays(match, d)
            for i, seat in enumerate(seats):
                held = set(deal.hands[13 * seat : 13 * seat + 13]) - set(deal.plays[:i])
                for card in sorted(held - {deal.plays[i]}):
                    m = copy(match)
                    del m.deals[d + 1 :]
                    last = m.deals[d]
                    last.plays = deal.plays[:i] + bytes([card])
                    del last.think_ms[i + 1 :]
                    last.end = pb.DEAL_END_ABANDONED
                    m.status = pb.MATCH_STATUS_ABANDONED
                    m.status_reason = "the server stopped the table"
                    yield reclaim(m)

    return mutate


def edit(change: Callable[[pb.Match], object], *, keep_claims: bool = False) -> Mutation:
    """One fixed change to the record."""

    def mutate(match: pb.Match) -> Iterator[pb.Match]:
        m = copy(match)
        change(m)
        yield m if keep_claims else reclaim(m)

    return mutate


def each_deal(change: Callable[[pb.Deal], bool]) -> Mutation:
    """A change tried on each deal in turn (``change`` says whether it applied)."""

    def mutate(match: pb.Match) -> Iterator[pb.Match]:
        for d in range(len(match.deals)):
            m = copy(match)
            if change(m.deals[d]):
                yield reclaim(m)

    return mutate


def _ruleset(**options: object) -> Callable[[pb.Match], object]:
    def change(m: pb.Match) -> None:
        for key, value in options.items():
            if isinstance(value, list):
                getattr(m.ruleset, key).SetInParent()
                del getattr(m.ruleset, key).contracts[:]
                getattr(m.ruleset, key).contracts.extend(value)
            else:
                setattr(m.ruleset, key, value)

    return change


def _not_in_hand(deal: pb.Deal) -> bool:
    if len(deal.plays) < 8:
        return False
    plays = bytearray(deal.plays)
    plays[-1] = plays[0]  # the lead of trick 1, played again as the deal's last card
    deal.plays = bytes(plays)
    return True


def _extra_play(deal: pb.Deal) -> bool:
    if deal.end != pb.DEAL_END_EARLY:
        return False
    left = sorted(set(deal.hands) - set(deal.plays))
    deal.plays += bytes(left[:1])
    if deal.think_ms:
        deal.think_ms.append(900)
    return True


def _cut_short(deal: pb.Deal) -> bool:
    if deal.number != 7 or len(deal.plays) < 24:
        return False
    deal.plays = deal.plays[:22]
    del deal.think_ms[22:]
    return True


def _bad_deck(deal: pb.Deal) -> bool:
    hands = bytearray(deal.hands)
    hands[5] = hands[40]
    deal.hands = bytes(hands)
    return True


def _drop_trump(deal: pb.Deal) -> bool:
    if int(deal.contract) != Contract.KOZ:
        return False
    deal.trump = pb.SUIT_UNSPECIFIED
    return True


def _stray_trump(deal: pb.Deal) -> bool:
    if int(deal.contract) == Contract.KOZ:
        return False
    deal.trump = pb.SUIT_SPADES
    return True


def _claim_wrong(deal: pb.Deal) -> bool:
    if deal.number != 3:
        return False
    deal.claimed_scores[0] += 50
    deal.claimed_scores[1] -= 50
    return True


def _end_early_claimed(deal: pb.Deal) -> bool:
    if deal.end != pb.DEAL_END_ALL_TRICKS or deal.number < 2:
        return False
    deal.end = pb.DEAL_END_EARLY
    return True


def _revoke_mark(deal: pb.Deal) -> bool:
    if deal.number != 2:
        return False
    deal.revoke_play = 5
    return True


def _legal_revoke(deal: pb.Deal) -> bool:
    if deal.number != 4 or deal.HasField("revoke_play"):
        return False
    deal.plays = deal.plays[:6]
    deal.revoke_play = 5
    deal.end = pb.DEAL_END_REVOKE
    del deal.think_ms[6:]
    return True


def _short_think(deal: pb.Deal) -> bool:
    if deal.number != 6 or not deal.think_ms:
        return False
    del deal.think_ms[-1]
    return True


def _slow_play(deal: pb.Deal) -> bool:
    if deal.number != 9 or not deal.think_ms:
        return False
    deal.think_ms[3] = 20_000
    return True


def _dealer_is_declarer(deal: pb.Deal) -> bool:
    deal.dealer = deal.declarer
    return deal.number == 20


def _renumber(deal: pb.Deal) -> bool:
    if deal.number != 11:
        return False
    deal.number = 12
    return True


def _bad_contract(deal: pb.Deal) -> bool:
    if int(deal.contract) == Contract.KOZ:
        return False
    deal.contract = 9  # type: ignore[assignment]
    return True


def _not_a_card(deal: pb.Deal) -> bool:
    if deal.number != 5:
        return False
    plays = bytearray(deal.plays)
    plays[9] = 60
    deal.plays = bytes(plays)
    return True


def _drop_last_deal(m: pb.Match) -> None:
    del m.deals[-1]


def _drop_player(m: pb.Match) -> None:
    del m.players[2]


def _totals_shift(m: pb.Match) -> None:
    m.claimed_totals[0] += 100
    m.claimed_totals[3] -= 100


def _totals_unbalanced(m: pb.Match) -> None:
    m.claimed_totals[0] += 100


def _other_first_card(match: pb.Match) -> Iterator[pb.Match]:
    for name in ("AS", "KH", "2C", "7D"):
        yield from edit(_ruleset(first_declarer_card=parse_card(name)))(match)


def _two_bad_cards(match: pb.Match) -> Iterator[pb.Match]:
    """Two illegal plays in different deals: both must be reported."""
    first = next(m for m in swaps({Contract.KIZ})(match) if codes(m) == ["MUST_FOLLOW_SUIT"])
    yield from swaps({Contract.KUPA})(first)


CLASSIC = preset("classic")
PENALIZE = CLASSIC.replace(preset="classic-penalize", revoke=RevokeRule.PENALIZE)
HOLDER = CLASSIC.replace(
    preset="classic-d2",
    first_declarer=FirstDeclarerRule.HOLDER_OF_CARD,
    first_declarer_card=parse_card("2D"),
    dealer=DealerRule.SEAT_BEFORE_DECLARER,
)
OVERTRUMP = CLASSIC.replace(preset="classic-overtrump", must_overtrump=True)
FIXED = CLASSIC.replace(
    preset="tournament-fixed",
    schedule=Schedule.FIXED,
    fixed_order=(*[c for c in Contract if c != Contract.KOZ], Contract.KOZ),
    deal_count=21,
)

# name, ruleset, seed, mutation, the codes it must produce, what it shows
INVALID: list[tuple[str, Ruleset, int, Mutation, list[str], str]] = [
    ("not-in-hand", CLASSIC, 1, each_deal(_not_in_hand), ["NOT_IN_HAND"],
     "the last card of a deal is the card that led trick 1"),
    ("must-follow-suit", CLASSIC, 2, swaps({Contract.EL_ALMAZ, Contract.SON_IKI}),
     ["MUST_FOLLOW_SUIT"], "a player discards while holding the led suit"),
    ("must-ruff", CLASSIC, 3, swaps({Contract.KOZ}), ["MUST_RUFF"],
     "a void player with trumps discards in koz"),
    ("must-overtrump", OVERTRUMP, 4, swaps({Contract.KOZ}), ["MUST_OVERTRUMP"],
     "a player underruffs while holding a higher trump"),
    ("must-raise-trump", preset("kahvehane"), 5, swaps({Contract.KOZ}), ["MUST_RAISE_TRUMP"],
     "kahvehane: a low trump on a trump lead while holding a higher one"),
    ("trump-lead-banned", preset("kahvehane"), 6, replace_and_stop({Contract.KOZ}),
     ["TRUMP_LEAD_BANNED"], "kahvehane: trumps led before they were broken (the table then "
     "stopped)"),
    ("heart-lead-banned", CLASSIC, 7, swaps({Contract.KUPA, Contract.RIFKI}),
     ["HEART_LEAD_BANNED"], "hearts led in kupa before a heart was played"),
    ("must-give-penalty-card", CLASSIC, 8, swaps({Contract.KIZ, Contract.ERKEK}),
     ["MUST_GIVE_PENALTY_CARD"], "a covered queen, king or jack held back"),
    ("must-discard-penalty-card", CLASSIC, 9, swaps({Contract.KUPA, Contract.KIZ, Contract.ERKEK}),
     ["MUST_DISCARD_PENALTY_CARD"], "a void player keeps their penalty cards"),
    ("two-bad-cards", CLASSIC, 10, _two_bad_cards, ["MUST_FOLLOW_SUIT"],
     "illegal plays in two deals: every one is reported"),
    ("play-after-deal-end", CLASSIC, 11, each_deal(_extra_play), ["PLAY_AFTER_DEAL_END"],
     "a card played after the last penalty card ended the deal"),
    ("deal-incomplete", CLASSIC, 12, each_deal(_cut_short), ["DEAL_INCOMPLETE"],
     "deal 7 of a complete match stops in trick 6"),
    ("bad-deck", CLASSIC, 13, each_deal(_bad_deck), ["BAD_DECK"],
     "a card dealt twice"),
    ("wrong-declarer", HOLDER, 14, _other_first_card, ["WRONG_DECLARER"],
     "the ruleset names another card whose holder declares first; someone else did"),
    ("contract-quota", CLASSIC, 15, edit(_ruleset(koz_quota=1)), ["CONTRACT_QUOTA"],
     "the ruleset allows one koz per player; players chose two"),
    ("penalty-contract-limit", CLASSIC, 16, edit(_ruleset(max_per_penalty=1)),
     ["PENALTY_CONTRACT_LIMIT"], "each penalty contract allowed once; chosen twice"),
    ("contract-not-scheduled", FIXED, 17, edit(_ruleset(fixed_order=[Contract.KOZ])),
     ["CONTRACT_NOT_SCHEDULED"], "a fixed order of koz only; penalties were played"),
    ("trump-missing", CLASSIC, 18, each_deal(_drop_trump), ["TRUMP_MISSING"],
     "a koz deal without a trump suit"),
    ("trump-not-allowed", CLASSIC, 19, each_deal(_stray_trump), ["TRUMP_NOT_ALLOWED"],
     "a trump suit named in a penalty deal"),
    ("score-mismatch", CLASSIC, 20, edit(lambda m: _claim_wrong(m.deals[2]), keep_claims=True),
     ["SCORE_MISMATCH"], "deal 3 claims 50 points moved from seat 1 to seat 0"),
    ("totals-mismatch", CLASSIC, 21, edit(_totals_shift, keep_claims=True), ["TOTALS_MISMATCH"],
     "the claimed totals move 100 points between seats"),
    ("zero-sum", CLASSIC, 22, edit(_totals_unbalanced, keep_claims=True),
     ["TOTALS_MISMATCH", "ZERO_SUM"], "the claimed totals add up to 100"),
    ("deal-end-mismatch", CLASSIC, 23, each_deal(_end_early_claimed), ["DEAL_END_MISMATCH"],
     "a deal of thirteen tricks recorded as ended early"),
    ("revoke-not-allowed", CLASSIC, 24, each_deal(_revoke_mark), ["REVOKE_NOT_ALLOWED"],
     "a revoke mark under a ruleset that rejects revokes"),
    ("revoke-mark-on-legal-play", PENALIZE, 25, each_deal(_legal_revoke),
     ["REVOKE_MARK_ON_LEGAL_PLAY"], "a legal card marked as a revoke"),
    ("bad-play-metadata", CLASSIC, 26, each_deal(_short_think), ["BAD_PLAY_METADATA"],
     "one think time missing"),
    ("wrong-dealer", HOLDER, 27, each_deal(_dealer_is_declarer), ["WRONG_DEALER"],
     "the declarer dealt where the seat before should (a warning)"),
    ("over-time", CLASSIC, 28, each_deal(_slow_play), ["OVER_TIME"],
     "a 20-second play not auto-played (a warning)"),
    ("deal-number", CLASSIC, 29, each_deal(_renumber), ["DEAL_NUMBER"],
     "deal 11 numbered 12"),
    ("match-incomplete", CLASSIC, 30, edit(_drop_last_deal), ["MATCH_INCOMPLETE"],
     "a complete match with 19 deals"),
    ("too-many-deals", CLASSIC, 31, edit(_ruleset(deal_count=19)), ["TOO_MANY_DEALS"],
     "twenty deals under a ruleset of nineteen"),
    ("bad-players", CLASSIC, 32, edit(_drop_player), ["BAD_PLAYERS"], "seat 2 has no player"),
    ("ruleset-invalid", CLASSIC, 33, edit(lambda m: m.ruleset.CopyFrom(pb.Ruleset(
        preset="my-house-rules")), keep_claims=True), ["RULESET_INVALID"],
     "an unknown preset with no options spelled out"),
    ("status-missing", CLASSIC, 34, edit(lambda m: m.ClearField("status")), ["STATUS_MISSING"],
     "no match status (a warning)"),
    ("format-version", CLASSIC, 35, edit(lambda m: m.__setattr__("format_version", 2)),
     ["FORMAT_VERSION"], "a newer record format version (a warning)"),
    ("contract-unknown", CLASSIC, 36, each_deal(_bad_contract), ["CONTRACT_UNKNOWN"],
     "contract number 9"),
    ("not-a-card", CLASSIC, 37, each_deal(_not_a_card), ["NOT_A_CARD"],
     "a play byte of 60"),
]  # fmt: skip

VALID: list[tuple[str, Ruleset, dict[str, Any]]] = [
    *[(name, rules, {}) for name, rules in (
        ("classic", CLASSIC), ("short", preset("short")), ("rotation", preset("rotation")),
        ("plain", preset("plain")), ("kahvehane", preset("kahvehane")),
        ("classic-d2-holder", HOLDER), ("fixed-order", FIXED),
    )],
    ("abandoned", CLASSIC, {"abandon_after": 13}),
    ("revoke-penalized", PENALIZE, {"revoke_in_deal": 6}),
]  # fmt: skip


def build_invalid(
    name: str, rules: Ruleset, seed: int, mutate: Mutation, want: list[str]
) -> pb.Match:
    match = simulate_match(rules, seed, match_id=f"invalid-{name}")
    seen: set[tuple[str, ...]] = set()
    for candidate in mutate(match):
        got = codes(candidate)
        if got == sorted(want):
            return candidate
        seen.add(tuple(got))
    raise SystemExit(f"{name}: no spot in the match gives exactly {want}; seen {sorted(seen)[:5]}")


def write(path: Path, matches: list[pb.Match]) -> None:
    with KrecWriter.open(path) as writer:
        for m in matches:
            writer.write_match(m)


def main(out: Path) -> None:
    manifest: list[dict[str, object]] = []
    (out / "valid").mkdir(parents=True, exist_ok=True)
    (out / "invalid").mkdir(exist_ok=True)
    (out / "damaged").mkdir(exist_ok=True)
    for seed, (name, rules, options) in enumerate(VALID, start=100):
        matches = [simulate_match(rules, seed * 10 + k, match_id=f"{name}-{k}", **options)
                   for k in range(2 if not options else 1)]  # fmt: skip
        assert all(codes(m) == [] for m in matches), name
        write(out / "valid" / f"{name}.krec", matches)
        entry = {"file": f"valid/{name}.krec", "exit": 0, "codes": [], "matches": len(matches)}
        manifest.append({**entry, "description": f"{name}: played by the bots"})
    classic = simulate_match(CLASSIC, 1000, match_id="classic-json")
    with open(out / "valid" / "classic.jsonl", "w", encoding="utf-8") as f:
        jsonl.write_jsonl(f, [classic])
    manifest.append({"file": "valid/classic.jsonl", "exit": 0, "codes": [], "matches": 1,
                     "description": "a classic match as JSON Lines"})  # fmt: skip
    for name, rules, seed, mutate, want, description in INVALID:
        match = build_invalid(name, rules, seed, mutate, want)
        write(out / "invalid" / f"{name}.krec", [match])
        warning_only = set(want) <= {
            "OVER_TIME",
            "WRONG_DEALER",
            "STATUS_MISSING",
            "FORMAT_VERSION",
        }
        entry = {"file": f"invalid/{name}.krec", "exit": 0 if warning_only else 1}
        manifest.append({**entry, "codes": sorted(want), "matches": 1, "description": description})
    manifest += damaged(out / "damaged")
    (out / "manifest.json").write_text(json.dumps({"samples": manifest}, indent=1) + "\n")


def damaged(folder: Path) -> list[dict[str, object]]:
    """Files with container damage, built from three good frames."""
    frames = [simulate_match(CLASSIC, 2000 + k, match_id=f"damaged-{k}") for k in range(3)]
    write(folder / "good.tmp", frames)
    good = (folder / "good.tmp").read_bytes()
    (folder / "good.tmp").unlink()
    second = good.index(b"KRF1", 12 + 16)
    flipped = bytearray(good)
    flipped[second + 40] ^= 0xFF
    cases = {
        "truncated": (good[:-100], ["FRAME_TRUNCATED"], "the file ends inside the last frame"),
        "flipped-byte": (bytes(flipped), ["FRAME_CORRUPT"],
                         "a byte of frame 1 flipped; frames 0 and 2 still read"),
        "bad-magic": (b"PK\x03\x04" + good[4:], ["NOT_KREC"], "not a .krec file (a zip header)"),
        "newer-version": (MAGIC + (FORMAT_VERSION + 1).to_bytes(2, "little") + good[10:],
                          ["UNSUPPORTED_VERSION"], "written by a newer kingrec"),
    }  # fmt: skip
    out = []
    for name, (data, want, description) in cases.items():
        (folder / f"{name}.krec").write_bytes(data)
        out.append({"file": f"damaged/{name}.krec", "exit": 2, "codes": want,
                    "description": description})  # fmt: skip
    bad_json = folder / "bad-line.jsonl"
    lines = [jsonl.dumps_match(frames[0]), '{"match_id": "x", "deals": [{"plays": ["ZZ"]}]}',
             jsonl.dumps_match(frames[1])]  # fmt: skip
    bad_json.write_text("\n".join(lines) + "\n", encoding="utf-8")
    entry = {"file": "damaged/bad-line.jsonl", "exit": 2, "codes": ["JSON_INVALID"]}
    out.append({**entry, "description": "line 2 names a card that does not exist; 1 and 3 read"})
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where to write (default: samples/)")
    main(parser.parse_args().out)
