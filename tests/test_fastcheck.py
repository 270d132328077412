"""The fast path (kingrec.fastcheck): clean records are vouched for from their bytes, and
every other record gets exactly the reference validator's report."""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kingrec import _engine_py, _twins, fastcheck
from kingrec._engine_types import END_PLAYING
from kingrec.boundary import ruleset_from_proto, ruleset_to_proto
from kingrec.container import KrecWriter
from kingrec.contracts import PENALTY_MASKS, Contract
from kingrec.findings import Location, MatchReport
from kingrec.records import Damage, RecordFile, RecordFileError, open_records
from kingrec.rules import PRESETS, DealerRule, FirstDeclarerRule, RevokeRule, Ruleset, Schedule
from kingrec.simulate import simulate_match
from kingrec.v1 import record_pb2 as pb
from kingrec.validator import validate_match

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
needs_compiled = pytest.mark.skipif(
    not fastcheck.COMPILED, reason="the compiled checker is not in use"
)

Outcome = MatchReport | type[Exception]


# -- records to start from ------------------------------------------------------------------

_RULESETS: dict[str, Ruleset] = {
    **PRESETS,
    "penalize": PRESETS["classic"].replace(revoke=RevokeRule.PENALIZE),
    "holder": PRESETS["classic"].replace(first_declarer=FirstDeclarerRule.HOLDER_OF_CARD),
    "fixed": PRESETS["classic"].replace(
        preset="tournament",
        schedule=Schedule.FIXED,
        fixed_order=(
            Contract.EL_ALMAZ,
            Contract.KUPA,
            Contract.ERKEK,
            Contract.KIZ,
            Contract.RIFKI,
            Contract.SON_IKI,
            Contract.KOZ,
        ),
    ),
    "dealer": PRESETS["classic"].replace(dealer=DealerRule.SEAT_BEFORE_DECLARER),
    "scoring": PRESETS["kahvehane"].replace(
        scores={c: (i + 2) * (7 if c == Contract.KOZ else -3) for i, c in enumerate(Contract)}
    ),
    # Quota 2+3 in 16 deals: the quotas are never used up, so totals need not add up to 0.
    "sixteen": PRESETS["classic"].replace(preset="sixteen", deal_count=16),
    # Every rule of koz at once (no preset has them all).
    "strict": PRESETS["classic"].replace(
        must_ruff=True,
        must_overtrump=True,
        must_raise_on_trump_lead=True,
        trump_lead_needs_break=True,
    ),
}


CLEAN = sorted(_RULESETS)


@functools.cache
def _payload(name: str = "classic", seed: int = 0, **options: int) -> bytes:
    if name == "abandoned":
        name, options = "classic", {"abandon_after": 7, **options}
    return simulate_match(_RULESETS[name], seed, **options).SerializeToString()  # type: ignore[arg-type]


def _match(name: str = "classic", seed: int = 0, **options: int) -> pb.Match:
    return pb.Match.FromString(_payload(name, seed, **options))


def _reference(payload: bytes, location: Location | None = None) -> Outcome:
    """The reference path: bounds first, then decoding, then ``validate_match``."""
    result = fastcheck.judge_payload(payload, location or Location(), _engine_py)
    return DecodeError if isinstance(result, Damage) else result


def _fast(payload: bytes, location: Location | None = None) -> Outcome:
    result = fastcheck.validate_payload(payload, location)
    return DecodeError if isinstance(result, Damage) else result


def _assert_same_as_reference(payload: bytes) -> Outcome:
    """The fast path's report is the reference's; a clean verdict means no finding at all."""
    reference = _reference(payload)
    assert _fast(payload) == reference
    if fastcheck.check_payload(payload)[0]:
        assert isinstance(reference, MatchReport) and reference.findings == []
    return reference


# -- clean records are vouched for ----------------------------------------------------------


@needs_compiled
@pytest.mark.parametrize("name", CLEAN)
@pytest.mark.parametrize("seed", [0, 1])
def test_simulated_matches_are_clean(name: str, seed: int) -> None:
    payload = _payload(name, seed)
    clean, deals, match_id = fastcheck.check_payload(payload)
    assert (clean, deals, match_id) == (
        True,
        _RULESETS[name].deal_count,
        f"sim-{_RULESETS[name].preset}-{seed}",
    )
    location = Location("x.krec", 3, 99)
    report = fastcheck.validate_payload(payload, location)
    assert report == validate_match(pb.Match.FromString(payload), location)


@needs_compiled
@pytest.mark.parametrize(
    "options",
    [{"abandon_after": 1}, {"abandon_after": 7}, {"abandon_after": 20}, {"think_times": 0}],
)
def test_abandoned_and_bare_matches_are_clean(options: dict[str, int]) -> None:
    payload = _payload("classic", 5, **options)
    assert validate_match(pb.Match.FromString(payload)).findings == []
    assert fastcheck.check_payload(payload)[0]


@needs_compiled
@pytest.mark.parametrize("deal", [1, 9, 20])
def test_penalized_revokes_are_clean(deal: int) -> None:
    payload = _payload("penalize", 2, revoke_in_deal=deal)
    assert validate_match(pb.Match.FromString(payload)).findings == []
    assert fastcheck.check_payload(payload)[0]


@needs_compiled
def test_a_batch_keeps_order_and_mixes_rulesets() -> None:
    payloads = [_payload(name, seed) for seed in (0, 1) for name in CLEAN]
    bad = _match("classic", 0)
    bad.format_version = 2
    payloads.insert(3, bad.SerializeToString())
    expected = [True] * len(payloads)
    expected[3] = False
    assert fastcheck.check_payloads(payloads) == expected
    assert fastcheck.check_payloads([]) == []


# -- every kind of finding sends the record to the reference ---------------------------------

Edit = Callable[[pb.Match], object]


def _first_deal(match: pb.Match, contract: int | None = None, koz: bool | None = None) -> pb.Deal:
    for deal in match.deals:
        if contract is not None and deal.contract != contract:
            continue
        if koz is not None and (int(deal.contract) == Contract.KOZ) != koz:
            continue
        return deal
    raise AssertionError("no such deal")


def _set_ruleset(**changes: Any) -> Edit:
    def edit(match: pb.Match) -> None:
        rules = ruleset_from_proto(match.ruleset).replace(**changes)
        match.ruleset.CopyFrom(ruleset_to_proto(rules))

    return edit


def _deal_edit(edit: Callable[[pb.Deal], object], index: int = 3) -> Edit:
    return lambda match: edit(match.deals[index])


def _plays(change: Callable[[bytearray], object]) -> Callable[[pb.Deal], None]:
    def edit(deal: pb.Deal) -> None:
        plays = bytearray(deal.plays)
        change(plays)
        deal.plays = bytes(plays)

    return edit


def _swap_hands(deal: pb.Deal) -> None:
    hands = bytearray(deal.hands)
    hands[0] = hands[20]
    deal.hands = bytes(hands)


def _setattr(name: str, value: Any) -> Callable[[Any], None]:
    return lambda msg: setattr(msg, name, value)


def _koz_trump_none(match: pb.Match) -> None:
    _first_deal(match, koz=True).trump = pb.SUIT_UNSPECIFIED


def _penalty_trump(match: pb.Match) -> None:
    _first_deal(match, koz=False).trump = pb.SUIT_HEARTS


def _slow_trump(match: pb.Match) -> None:
    _first_deal(match, koz=True).trump_think_ms = 99_999


def _early_then_more(match: pb.Match) -> None:
    deal = next(d for d in match.deals if d.end == pb.DEAL_END_EARLY)
    used = set(deal.plays)
    deal.plays += bytes([next(c for c in deal.hands if c not in used)])


def _too_many_deals(match: pb.Match) -> None:
    match.deals.add().CopyFrom(match.deals[-1])
    match.deals[-1].number = len(match.deals)


def _not_in_hand(deal: pb.Deal) -> None:
    plays = bytearray(deal.plays)
    plays[1] = plays[0]
    deal.plays = bytes(plays)


def _claim(deal: pb.Deal) -> None:
    deal.claimed_scores[0] += 10


def _claim_totals(match: pb.Match) -> None:
    match.claimed_totals[0] += 10


def _drop_think(deal: pb.Deal) -> None:
    del deal.think_ms[-1]


def _stray_auto(deal: pb.Deal) -> None:
    deal.auto_plays.append(len(deal.plays))


def _slow_play(deal: pb.Deal) -> None:
    deal.think_ms[2] = 99_999
    del deal.auto_plays[:]


def _deal_scores(match: pb.Match, deal: pb.Deal) -> list[int]:
    """What the replay gives for a deal, whatever its deck (for claims that agree)."""
    rules = ruleset_from_proto(match.ruleset)
    trump = deal.trump - 1 if deal.trump else -1
    flags = rules.deal_flags(deal.contract)
    replay = _engine_py.replay_deal(
        deal.hands, deal.plays, deal.declarer, deal.contract, trump, flags, -1
    )
    return rules.deal_scores(deal.contract, replay.units, replay.revoker)


def _reclaim(match: pb.Match) -> None:
    """Claims that agree with the replay, so only the damage done shows."""
    totals = [0, 0, 0, 0]
    for deal in match.deals:
        scores = _deal_scores(match, deal)
        deal.claimed_scores[:] = scores
        totals = [t + s for t, s in zip(totals, scores, strict=True)]
    match.claimed_totals[:] = totals


def _unplayed_card_doubled(match: pb.Match) -> None:
    """A deck that is no partition but replays cleanly: in a deal that ended early, a card
    nobody played is replaced by a same-suit card of another seat (none of them penalty
    cards, so no obligation changes)."""
    for deal in match.deals:
        if deal.end != pb.DEAL_END_EARLY:
            continue
        penalty = PENALTY_MASKS[deal.contract]
        hands = bytearray(deal.hands)
        for i, y in enumerate(hands):
            if y in deal.plays or penalty >> y & 1:
                continue
            for j, x in enumerate(hands):
                if j // 13 != i // 13 and x // 13 == y // 13 and not penalty >> x & 1:
                    hands[i] = x
                    deal.hands = bytes(hands)
                    # Unchecked totals: the reference leaves the deal out of them.
                    match.ClearField("claimed_totals")
                    return
    raise AssertionError("no deal to damage")


def _rotation_contract_twice(match: pb.Match) -> None:
    """A seat declares el almaz or son iki a second time; nothing else changes (neither
    contract has an option of its own, so the plays stay legal)."""
    free = {int(Contract.EL_ALMAZ), int(Contract.SON_IKI)}
    for i, deal in enumerate(match.deals):
        for later in match.deals[i + 1 :]:
            same_seat = later.declarer == deal.declarer
            if same_seat and {int(deal.contract), int(later.contract)} == free:
                later.contract = deal.contract
                _reclaim(match)
                return
    raise AssertionError("no such pair of deals")


def _stop_early_in_the_middle(match: pb.Match) -> None:
    """An unfinished match may stop only its last deal early."""
    deal = match.deals[2]
    deal.plays = deal.plays[:10]
    deal.end = pb.DEAL_END_ABANDONED
    del deal.think_ms[10:]
    deal.auto_plays[:] = [i for i in deal.auto_plays if i < 10]
    _reclaim(match)


def _dealer_rule(match: pb.Match) -> None:
    # The simulator wrote the declarer as the dealer.
    _set_ruleset(dealer=DealerRule.SEAT_BEFORE_DECLARER)(match)


EDITS: list[tuple[str, str, Edit]] = [
    ("FORMAT_VERSION", "classic", _setattr("format_version", 2)),
    ("STATUS_MISSING", "classic", _setattr("status", pb.MATCH_STATUS_UNSPECIFIED)),
    ("BAD_PLAYERS", "classic", lambda m: m.players.pop()),
    ("BAD_PLAYERS", "classic", lambda m: setattr(m.players[3], "seat", 2)),
    ("BAD_PLAYERS", "classic", lambda m: setattr(m.players[3], "seat", 4)),
    ("RULESET_INVALID", "classic", lambda m: m.ClearField("ruleset")),
    ("RULESET_INVALID", "classic", lambda m: setattr(m.ruleset, "schedule", 9)),
    ("MATCH_INCOMPLETE", "classic", lambda m: m.deals.pop()),
    ("TOO_MANY_DEALS", "classic", _too_many_deals),
    ("DEAL_NUMBER", "classic", _deal_edit(_setattr("number", 9))),
    ("WRONG_DECLARER", "classic", lambda m: setattr(m.deals[4], "declarer", m.deals[5].declarer)),
    ("WRONG_DECLARER", "classic", _deal_edit(_setattr("declarer", 4))),
    ("WRONG_DECLARER", "holder", lambda m: setattr(m.deals[0], "declarer", m.deals[1].declarer)),
    ("WRONG_DEALER", "classic", _dealer_rule),
    ("CONTRACT_UNKNOWN", "classic", _deal_edit(_setattr("contract", 9))),
    ("CONTRACT_UNKNOWN", "classic", _deal_edit(_setattr("contract", 0))),
    ("CONTRACT_QUOTA", "classic", _set_ruleset(koz_quota=1)),
    ("CONTRACT_QUOTA", "classic", _set_ruleset(penalty_only_deals=20)),
    ("CONTRACT_QUOTA", "rotation", lambda m: setattr(m.deals[4], "contract", m.deals[0].contract)),
    ("PENALTY_CONTRACT_LIMIT", "classic", _set_ruleset(max_per_penalty=1)),
    ("CONTRACT_NOT_SCHEDULED", "fixed", lambda m: setattr(m.deals[1], "contract", 2)),
    ("TRUMP_MISSING", "classic", _koz_trump_none),
    ("TRUMP_NOT_ALLOWED", "classic", _penalty_trump),
    ("BAD_DECK", "classic", _deal_edit(_swap_hands)),
    ("BAD_DECK", "classic", _deal_edit(_setattr("hands", bytes(range(51))))),
    ("BAD_DECK", "classic", _deal_edit(_setattr("hands", bytes(range(51)) + b"\x40"))),
    ("BAD_PLAY_METADATA", "classic", _deal_edit(_drop_think)),
    ("BAD_PLAY_METADATA", "classic", _deal_edit(_stray_auto)),
    ("BAD_PLAY_METADATA", "penalize", _deal_edit(_setattr("revoke_play", 60))),
    ("REVOKE_NOT_ALLOWED", "classic", _deal_edit(_setattr("revoke_play", 0))),
    ("REVOKE_MARK_ON_LEGAL_PLAY", "penalize", _deal_edit(_setattr("revoke_play", 0))),
    ("OVER_TIME", "classic", _deal_edit(_slow_play)),
    ("OVER_TIME", "classic", _slow_trump),
    ("PLAY_AFTER_DEAL_END", "classic", _early_then_more),
    ("DEAL_INCOMPLETE", "classic", _deal_edit(_plays(lambda p: p.pop()))),
    ("DEAL_INCOMPLETE", "classic", _deal_edit(_plays(lambda p: p.clear()), 19)),
    ("DEAL_END_MISMATCH", "classic", _deal_edit(_setattr("end", pb.DEAL_END_REVOKE))),
    ("DEAL_END_MISMATCH", "classic", _deal_edit(_setattr("end", 7))),
    ("SCORE_MISMATCH", "classic", _deal_edit(_claim)),
    ("SCORE_MISMATCH", "classic", _deal_edit(lambda d: d.claimed_scores.pop())),
    ("TOTALS_MISMATCH", "classic", lambda m: m.claimed_totals.pop()),
    ("ZERO_SUM", "classic", _claim_totals),
    ("BAD_DECK", "classic", _unplayed_card_doubled),
    ("CONTRACT_QUOTA", "rotation", _rotation_contract_twice),
    ("DEAL_INCOMPLETE", "abandoned", _stop_early_in_the_middle),
    ("NOT_A_CARD", "classic", _deal_edit(_plays(lambda p: p.__setitem__(5, 60)))),
    ("NOT_IN_HAND", "classic", _deal_edit(_not_in_hand)),
]


# Edits whose damage is the record's only finding: nothing else could send it to the reference.
ISOLATED: list[Edit] = [_unplayed_card_doubled, _rotation_contract_twice, _stop_early_in_the_middle]


@needs_compiled
@pytest.mark.parametrize(
    ("code", "name", "edit"), EDITS, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(EDITS)]
)
def test_every_finding_takes_the_reference_path(code: str, name: str, edit: Edit) -> None:
    match = _match(name, 1)
    edit(match)
    payload = match.SerializeToString()
    reference = validate_match(match)
    codes = {f.code for f in reference.findings}
    assert code in codes
    if edit in ISOLATED:
        assert codes == {code}
    assert not fastcheck.check_payload(payload)[0]
    assert fastcheck.validate_payload(payload) == reference


def test_every_match_finding_code_has_an_edit_or_a_sample() -> None:
    """The list above plus the samples cover every code the validator reports for a match."""
    from kingrec.findings import CODES

    file_codes = {"FRAME_CORRUPT", "FRAME_TRUNCATED", "FRAME_UNDECODABLE", "JSON_INVALID"}
    file_codes |= {"NOT_KREC", "UNSUPPORTED_VERSION", "UNREADABLE"}
    # Judged around the validator, for files and runs: tests/test_validation.py.
    file_codes |= {"LIMIT_EXCEEDED", "DUPLICATE_RECORD", "UNKNOWN_JSON_KEY"}
    # Judged by the store against what it already holds: tests/test_store.py.
    file_codes |= {"MATCH_ID_REUSED"}
    covered = {code for code, _, _ in EDITS}
    for sample in _manifest():
        covered.update(sample.get("codes", []))
    assert set(CODES) - file_codes - covered == set()


# -- the samples: the fast path reports exactly what the reference does ----------------------


def _manifest() -> list[dict[str, Any]]:
    path = SAMPLES / "manifest.json"
    if not path.exists():
        return []
    samples: list[dict[str, Any]] = json.loads(path.read_text())["samples"]
    return samples


def _reference_items(records: RecordFile) -> Iterator[MatchReport | Damage]:
    for item in records:
        yield item if isinstance(item, Damage) else validate_match(item.match, item.location)


def _both_ways(path: str) -> tuple[list[Any], list[Any]]:
    def run(fast: bool) -> list[Any]:
        try:
            with open_records(path) as records:
                if fast:
                    return list(fastcheck.validate_frames(records.raw_frames(), batch=3))
                return list(_reference_items(records))
        except Exception as exc:
            return [type(exc), str(exc)]

    return run(True), run(False)


@pytest.mark.parametrize(
    "sample",
    [s["file"] for s in _manifest() if s["file"].endswith(".krec")] or ["(no samples)"],
)
def test_samples_give_the_reference_reports(sample: str) -> None:
    if sample == "(no samples)":
        pytest.skip("samples/manifest.json is not there")
    fast, reference = _both_ways(str(SAMPLES / sample))
    assert fast == reference
    clean = [r for r in reference if isinstance(r, MatchReport) and not r.findings]
    if sample.startswith("valid/") and fastcheck.COMPILED:
        assert len(clean) == len(reference)


def test_damaged_and_undecodable_frames_come_through_in_order(tmp_path: Path) -> None:
    path = tmp_path / "mixed.krec"
    good = _payload("classic", 0)
    bad = _match("classic", 1)
    bad.claimed_totals[1] -= 50
    with KrecWriter.open(path) as writer:
        writer.write(good)
        writer.write(b"\xff\xff\xff")  # passes its checksums, is no Match
        writer.write(bad.SerializeToString())
        writer.write(good)
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF  # the last frame's payload no longer matches its checksum
    path.write_bytes(bytes(data))
    fast, reference = _both_ways(str(path))
    assert fast == reference
    kinds = [r.code if isinstance(r, Damage) else r.valid for r in fast]
    assert kinds == [True, "FRAME_UNDECODABLE", False, "FRAME_CORRUPT"]


def test_raw_frames_refuse_json_lines() -> None:
    records = RecordFile("x.jsonl", io.BytesIO(b'{"format_version": 1}\n'), None)
    with pytest.raises(RecordFileError):
        next(records.raw_frames())


def test_without_the_compiled_checker_everything_takes_the_reference_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fastcheck, "_checker", None)
    payload = _payload("classic", 0)
    assert fastcheck.check_payloads([payload]) == [False]
    assert fastcheck.check_payload(payload) == (False, 0, "")
    assert fastcheck.validate_payload(payload) == validate_match(pb.Match.FromString(payload))
    frames = [(Location("a", 0, 12), payload)]
    assert list(fastcheck.validate_frames(frames)) == [
        validate_match(pb.Match.FromString(payload), Location("a", 0, 12))
    ]


# -- the wire format: what the walker accepts, skips and leaves to the reference --------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, wire_type: int, value: bytes | int) -> bytes:
    tag = _varint(number << 3 | wire_type)
    if wire_type == 0:
        assert isinstance(value, int)
        return tag + _varint(value)
    assert isinstance(value, bytes)
    if wire_type == 2:
        return tag + _varint(len(value)) + value
    return tag + value


UNKNOWN_FIELDS = [
    _field(100, 0, 2**40),
    _field(101, 1, b"\x01" * 8),
    _field(102, 2, b"from a newer writer"),
    _field(103, 5, b"\x02" * 4),
]


def _splice(field: str, number: int, index: int, extra: bytes) -> bytes:
    """A classic match whose ``field[index]`` sub-message (field ``number``) ends in ``extra``.

    Built from bytes, since the extra may be something the parser refuses.
    """
    match = _match("classic", 0)
    parts = [m.SerializeToString() for m in getattr(match, field)]
    parts[index] += extra
    match.ClearField(field)  # type: ignore[arg-type]
    return match.SerializeToString() + b"".join(_field(number, 2, p) for p in parts)


def _with_deal_extra(extra: bytes) -> bytes:
    return _splice("deals", 8, 2, extra)


def _with_player_extra(extra: bytes) -> bytes:
    return _splice("players", 4, 1, extra)


@needs_compiled
@pytest.mark.parametrize("extra", UNKNOWN_FIELDS)
def test_unknown_fields_from_newer_writers_are_skipped(extra: bytes) -> None:
    for payload in (
        _payload() + extra,
        extra + _payload(),
        _with_deal_extra(extra),
        _with_player_extra(extra),
    ):
        assert fastcheck.check_payload(payload)[0]
        assert _assert_same_as_reference(payload) == validate_match(pb.Match.FromString(payload))


@needs_compiled
def test_fields_in_any_order_are_read() -> None:
    match = _match("classic", 0)
    deals = list(match.deals)
    match.ClearField("deals")
    ruleset = match.ruleset.SerializeToString()
    match.ClearField("ruleset")
    # The deals first, then the other fields, and the ruleset last.
    payload = (
        b"".join(_field(8, 2, d.SerializeToString()) for d in deals)
        + match.SerializeToString()
        + _field(5, 2, ruleset)
    )
    decoded = pb.Match.FromString(payload)
    assert list(decoded.deals) == deals
    assert fastcheck.check_payload(payload)[0]
    _assert_same_as_reference(payload)


def _deal_fields(deal: pb.Deal) -> list[bytes]:
    """A deal's wire fields, each whole (tag and value), in the order it was written."""
    raw, out, pos = deal.SerializeToString(), [], 0
    while pos < len(raw):
        start = pos
        tag, pos = _read_varint(raw, pos)
        if tag & 7 == 0:
            pos = _read_varint(raw, pos)[1]
        else:
            size, pos = _read_varint(raw, pos)
            pos += size
        out.append(raw[start:pos])
    return out


def _read_varint(raw: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = raw[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if byte < 0x80:
            return value, pos


def _with_deal_bytes(match: pb.Match, index: int, raw: bytes) -> bytes:
    deals = [d.SerializeToString() for d in match.deals]
    deals[index] = raw
    top = pb.Match()
    top.CopyFrom(match)
    top.ClearField("deals")
    return top.SerializeToString() + b"".join(_field(8, 2, d) for d in deals)


@needs_compiled
def test_a_deals_fields_in_any_order_or_repeated_are_read_as_the_parser_reads_them() -> None:
    """The checker reads a deal's fields in the order kingrec writes them first, then any
    others: fields reversed, shuffled, a scalar given twice (the last one counts) or a
    packed field twice (left to the reference) are judged as the reference judges them,
    and the reordered deals, whole and clean, are still vouched for."""
    match = _match("classic", 0)
    rng = random.Random(17)
    for index in (0, 7):
        fields = _deal_fields(match.deals[index])
        assert len(fields) >= 8  # number, dealer, declarer, contract, hands, plays, ...
        shuffled = fields[:]
        rng.shuffle(shuffled)
        number = _field(1, 0, index + 1)
        for order, clean in [
            (fields[::-1], True),
            (shuffled, True),
            (fields[1:] + fields[:1], True),  # the number last
            ([number, *fields], True),  # the number twice, the same
            ([*fields, _field(1, 0, index + 2)], False),  # ...the last, wrong, counts
            ([_field(1, 0, index + 2), *fields], True),  # ...the last, right, counts
            ([*fields, _field(7, 2, b"")], False),  # the plays again, empty: the last counts
            ([*fields, _field(12, 2, b"")], None),  # the scores twice: for the reference
        ]:
            payload = _with_deal_bytes(match, index, b"".join(order))
            reference = _assert_same_as_reference(payload)
            if clean is not None:
                assert isinstance(reference, MatchReport)
                assert (reference.findings == []) == clean, (index, reference.findings)
                assert fastcheck.check_payload(payload)[0] == clean


@needs_compiled
@pytest.mark.parametrize("byte", [51, 52, 55, 63, 64, 100, 127, 128, 200, 255, -64, -128, -192])
def test_a_hand_byte_outside_the_deck_is_judged_like_the_reference(byte: int) -> None:
    """The hands are built with no test per byte (each byte's card set from a table, a byte
    that is no card a bit outside the deck, caught by the deck's union): a card byte of 52
    or more anywhere in a hand, or a card given twice, takes the reference path and gets
    its finding, never a clean verdict. (A
    negative ``byte`` stands for the card it replaces plus 64, 128 or 192: the same card
    but for the bits above 63.)"""
    match = _match("classic", 0)
    for at in (0, 12, 13, 38, 51):
        hands = bytearray(match.deals[0].hands)
        if hands[at] == byte:
            continue
        hands[at] = byte if byte >= 0 else hands[at] - byte  # 51: that card given twice
        edited = pb.Match.FromString(match.SerializeToString())
        edited.deals[0].hands = bytes(hands)
        payload = edited.SerializeToString()
        assert not fastcheck.check_payload(payload)[0], (byte, at)
        reference = _assert_same_as_reference(payload)
        assert isinstance(reference, MatchReport) and reference.findings, (byte, at)


def _unpacked_think() -> bytes:
    """Deal 1's think times as one field per value (parsers accept both encodings)."""
    match = _match("classic", 0)
    deals = [d.SerializeToString() for d in match.deals]
    think = list(match.deals[0].think_ms)
    match.deals[0].ClearField("think_ms")
    deals[0] = match.deals[0].SerializeToString() + b"".join(_field(8, 0, t) for t in think)
    match.ClearField("deals")
    return match.SerializeToString() + b"".join(_field(8, 2, d) for d in deals)


def _merged_ruleset() -> bytes:
    """Two ruleset fields merge: the second alone is classic, the merge has a 1 ms clock."""
    match = _match("classic", 0)
    match.ruleset.play_timeout_ms = 1
    first = match.ruleset.SerializeToString()
    match.ClearField("ruleset")
    second = pb.Ruleset(preset="classic").SerializeToString()
    return match.SerializeToString() + _field(5, 2, first) + _field(5, 2, second)


WIRE_ODDITIES: list[tuple[str, Callable[[], bytes]]] = [
    ("group", lambda: _payload() + _varint(104 << 3 | 3) + _field(1, 0, 5) + _varint(104 << 3 | 4)),
    ("unpacked think times", _unpacked_think),
    ("format version past 32 bits", lambda: _payload() + _field(1, 0, 2**32 + 1)),
    ("ruleset twice (merged)", lambda: _payload() + _field(5, 2, b"\x18\x14")),
    ("ruleset merged from two parts", lambda: _merged_ruleset()),
    ("known field, other wire type", lambda: _payload() + _field(6, 2, b"\x01")),
    ("status past int32", lambda: _payload() + _field(6, 0, 2**31 + 1)),
    ("bad utf-8 match id", lambda: _payload() + _field(2, 2, b"\xc0\x80")),
    ("surrogate in a player", lambda: _with_player_extra(_field(2, 2, b"\xed\xa0\x80"))),
    ("bad utf-8 tag", lambda: _payload() + _field(3, 2, _field(6, 2, _field(1, 2, b"\xff")))),
    ("truncated", lambda: _payload()[:-3]),
    ("varint past ten bytes", lambda: _payload() + b"\x08" + b"\x80" * 10 + b"\x01"),
    ("field number 0", lambda: _payload() + b"\x00\x01"),
    ("wire type 7", lambda: _payload() + b"\x0f"),
]


@needs_compiled
@pytest.mark.parametrize(("what", "make"), WIRE_ODDITIES, ids=[w for w, _ in WIRE_ODDITIES])
def test_wire_oddities_take_the_reference_path(what: str, make: Callable[[], bytes]) -> None:
    payload = make()
    assert not fastcheck.check_payload(payload)[0]
    _assert_same_as_reference(payload)


@needs_compiled
def test_valid_utf8_of_every_width_is_accepted() -> None:
    match = _match("classic", 0)
    match.match_id = "Rıfkı ♥ 𝄞 \x00 end"
    match.metadata.tags["şehir"] = "İstanbul"
    payload = match.SerializeToString()
    assert fastcheck.check_payload(payload) == (True, 20, match.match_id)


@needs_compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(min_size=0, max_size=6))
def test_any_string_bytes_are_judged_like_the_parser(data: bytes) -> None:
    payload = _payload() + _field(2, 2, data)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        valid = False
    else:
        valid = True
    assert fastcheck.check_payload(payload)[0] == valid
    _assert_same_as_reference(payload)


# -- random damage: never a clean verdict the reference disagrees with ------------------------


@needs_compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(["classic", "penalize", "rotation", "kahvehane"]),
    seed=st.integers(0, 2**32 - 1),
    kind=st.integers(0, 3),
)
def test_random_byte_damage_is_judged_like_the_reference(name: str, seed: int, kind: int) -> None:
    rng = random.Random(seed)
    data = bytearray(_payload(name, rng.randrange(2)))
    for _ in range(rng.randrange(1, 3)):
        at = rng.randrange(len(data))
        if kind == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[at] = rng.randrange(256)
        elif kind == 2:
            del data[at : at + rng.randrange(1, 4)]
        else:
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
    _assert_same_as_reference(bytes(data))


@needs_compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(_RULESETS)),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_record_edits_are_judged_like_the_reference(name: str, seed: int) -> None:
    rng = random.Random(seed)
    match = _match(name, rng.randrange(2))
    deal = match.deals[rng.randrange(len(match.deals))]
    kind = rng.randrange(10)
    if kind == 0:
        plays = bytearray(deal.plays)
        plays[rng.randrange(len(plays))] = rng.randrange(52)
        deal.plays = bytes(plays)
    elif kind == 1:
        deal.plays = deal.plays[: rng.randrange(len(deal.plays) + 1)]
    elif kind == 2:
        deal.claimed_scores[rng.randrange(4)] += rng.choice([-1, 1]) * 10
    elif kind == 3:
        deal.end = rng.randrange(5)  # type: ignore[assignment]
    elif kind == 4:
        deal.revoke_play = rng.randrange(len(deal.plays) + 2)
    elif kind == 5:
        deal.think_ms[rng.randrange(len(deal.think_ms))] = rng.randrange(30_000)
    elif kind == 6:
        deal.trump = rng.randrange(5)  # type: ignore[assignment]
    elif kind == 7:
        match.status = rng.randrange(5)  # type: ignore[assignment]
    elif kind == 8:
        deal.dealer = rng.randrange(4)
        match.ruleset.dealer = rng.randrange(3)  # type: ignore[assignment]
    else:
        deal.auto_plays.append(rng.randrange(len(deal.plays) + 1))
    _assert_same_as_reference(match.SerializeToString())


def _varint_spots(data: bytes, lo: int, hi: int, depth: int) -> Iterator[tuple[int, int, int]]:
    """(start, end, value) of each key, length and varint value in ``data[lo:hi]`` read as
    a message, and, down to ``depth`` more levels, in the messages its fields hold."""
    at = lo
    while at < hi:
        key, after = _read_varint(data, at)
        yield at, after, key
        if key & 7 == 0:
            value, end = _read_varint(data, after)
            yield after, end, value
        elif key & 7 == 2:
            size, end = _read_varint(data, after)
            yield after, end, size
            with contextlib.suppress(IndexError, ValueError):  # bytes that are no message
                if depth:
                    yield from list(_varint_spots(data, end, end + size, depth - 1))
            end += size
        elif key & 7 in (1, 5):
            end = after + (8 if key & 7 == 1 else 4)
        else:
            raise ValueError("a group")
        at = end


def _padded(value: int, size: int) -> bytes:
    """``value`` as a varint of exactly ``size`` bytes (padded with continuation bytes)."""
    return bytes((value >> 7 * i & 0x7F) | (0x80 if i < size - 1 else 0) for i in range(size))


@needs_compiled
def test_a_key_or_length_over_five_bytes_is_refused_by_both_paths_as_protobuf_refuses_it() -> None:
    """A key or a length may be padded to five bytes; protobuf's decoder refuses one of
    six or more (a value may take ten), and the checker must say what the reference says:
    it once vouched for a match whose first key took six bytes. Every key, length and value
    of a match's own fields and of its first deal's, padded to 5, 6 and 10 bytes."""
    payload = _payload("classic", 3)
    spots = list(_varint_spots(payload, 0, len(payload), 0))
    _, after, _ = next(spot for spot in spots if spot[2] == 8 << 3 | 2)  # a deal's key
    size, start = _read_varint(payload, after)
    stop = start + size
    deal_spots = list(_varint_spots(payload, start, stop, 0))
    refused = accepted = 0
    for at, end, value in spots + deal_spots:
        for width in (5, 6, 10):
            if width <= end - at:
                continue
            padded = payload[:at] + _padded(value, width) + payload[end:]
            if at >= start:  # inside the deal: the deal's own length grows with it
                deal = padded[start : stop + width - (end - at)]
                padded = payload[:after] + _varint(len(deal)) + deal + payload[stop:]
            outcome = _assert_same_as_reference(padded)
            refused += outcome is DecodeError
            accepted += outcome is not DecodeError
    assert refused >= 20 and accepted >= 10


def _overlong(n: int) -> bytes:
    """``n`` as a varint one byte longer than it need be (parsers accept it)."""
    short = bytearray(_varint(n))
    short[-1] |= 0x80
    return bytes(short) + b"\x00"


def _with_raw_think(match: pb.Match, raw: bytes, autos: list[int]) -> bytes:
    """``match`` with deal 1's think times replaced by the packed field bytes ``raw``."""
    deal = match.deals[0]
    del deal.think_ms[:], deal.auto_plays[:]
    deal.auto_plays.extend(autos)
    deals = [d.SerializeToString() for d in match.deals]
    deals[0] += _field(8, 2, raw)
    top = pb.Match()
    top.CopyFrom(match)
    top.ClearField("deals")
    return top.SerializeToString() + b"".join(_field(8, 2, d) for d in deals)


@needs_compiled
@pytest.mark.parametrize("clock", [16_000, 126, 127, 128, 255, 256, 16_254, 16_383, 16_384])
def test_think_times_near_the_clock_in_any_encoding_are_judged_like_the_reference(
    clock: int,
) -> None:
    """Think times one, two and more bytes long, canonical or overlong, at and around the
    play clock, on an auto play or not, one too few or too many, or a value cut short: the
    checker (whose sixteen-bytes-at-a-time pass vouches only for values it knows are within
    the clock) judges each record as the reference does, and vouches for the clean ones."""
    match = _match("classic", 0, abandon_after=1)
    match.ruleset.play_timeout_ms = clock
    nplays = len(match.deals[0].plays)
    edges = [0, 1, 126, 127, 128, 129, 255, 256, 16_383, 16_384, 2**21, 2**32 - 1, 2**32]
    edges += [clock - 129, clock - 128, clock - 127, clock - 1, clock, clock + 1]
    base = [min(300, clock)] * nplays
    variants: list[tuple[bytes, list[int]]] = [(b"".join(map(_varint, base)), [])]
    for value in sorted({e for e in edges if e >= 0}):
        for at in (0, nplays // 2, nplays - 1):
            times = [*base[:at], value, *base[at + 1 :]]
            for encode in (_varint, _overlong):
                raw = b"".join(_varint(t) if i != at else encode(t) for i, t in enumerate(times))
                variants += [(raw, []), (raw, [at])]
    plain = b"".join(map(_varint, base))
    variants += [
        (b"".join(map(_varint, base[1:])), []),  # one too few
        (plain + _varint(300), []),  # one too many
        (plain + b"\x80", []),  # the last value cut short
        (plain[:-1], []),  # a two-byte value cut to its first byte
        (b"", []),
    ]
    clean = 0
    for raw, autos in variants:
        payload = _with_raw_think(pb.Match.FromString(match.SerializeToString()), raw, autos)
        reference = _assert_same_as_reference(payload)
        clean += isinstance(reference, MatchReport) and reference.findings == []
    assert 0 < clean < len(variants)


def _playout(
    match: pb.Match, index: int, rng: random.Random, wrong_at: int = -1, wrong: int = 0
) -> list[bytes]:
    """Deal ``index`` of ``match`` played again by random legal cards, but at play ``wrong_at`` each
    card the seat then holds that the rules forbid (one record per card; ``wrong`` picks
    which of them the rest of the deal follows from): the plays of each record."""
    deal = match.deals[index]
    contract = int(deal.contract)
    trump = int(deal.trump) - 1 if contract == Contract.KOZ else -1
    flags = ruleset_from_proto(match.ruleset).deal_flags(contract)
    state = _engine_py.Deal(deal.hands, deal.declarer, contract, trump, flags)
    plays: list[int] = []
    out: list[bytes] = []
    while state.end == END_PLAYING:
        legal = state.legal()
        if len(plays) == wrong_at:
            held = state.held[state.to_play]
            forbidden = [c for c in range(52) if held >> c & 1 and not legal >> c & 1]
            for card in forbidden:
                out.append(bytes([*plays, card]))
            if not forbidden:
                return out
            card = forbidden[wrong % len(forbidden)]
        else:
            card = rng.choice([c for c in range(52) if legal >> c & 1])
        plays.append(card)
        state.push(card)
    return [bytes(plays)] if wrong_at < 0 else [p + bytes(plays[len(p) :]) for p in out]


@needs_compiled
@pytest.mark.parametrize("name", CLEAN)
def test_every_forbidden_card_of_a_hand_is_judged_like_the_reference(name: str) -> None:
    """Deals played out by random legal cards but for one forbidden card the seat holds,
    at every play in turn and each such card (with no claimed scores, so that only the
    rules of play can tell): the checker's all-legal replay vouches for the all-legal deals
    and for none of the others, as the reference judges them."""
    rng = random.Random(name)
    for seed in range(1):
        # The first deal of each contract (each rule of play is some contract's), each the
        # last of a match abandoned there: the fewer deals, the quicker the reference.
        whole = _match(name, seed)
        firsts = {int(d.contract): i for i, d in reversed(list(enumerate(whole.deals)))}
        for index in sorted(firsts.values()):
            match = _match(name, seed)
            del match.deals[index + 1 :]
            match.status = pb.MATCH_STATUS_ABANDONED
            deal = match.deals[index]
            del match.claimed_totals[:], deal.claimed_scores[:], deal.think_ms[:]
            del deal.auto_plays[:]
            deal.ClearField("end")
            variants = _playout(match, index, rng)
            for wrong_at in range(52):
                variants += _playout(match, index, rng, wrong_at, rng.randrange(13))
            for n, plays in enumerate(variants):
                deal.plays = plays
                payload = match.SerializeToString()
                reference = _reference(payload)
                assert isinstance(reference, MatchReport)
                clean = reference.findings == []
                assert clean == (n == 0), reference.findings  # the first: every card legal
                assert fastcheck.check_payload(payload)[0] == clean, (seed, index, plays.hex())
                assert _fast(payload) == reference


@needs_compiled
@pytest.mark.parametrize("name", CLEAN)
def test_a_match_abandoned_at_any_play_of_its_last_deal_is_clean(name: str) -> None:
    """The all-legal replay judges whole tricks, and the trick open when the plays run out
    (one, two or three cards of it) card by card: an abandoned match cut after every play
    count of its last deal in turn is vouched for, as the reference judges it."""
    match = _match(name, 0, abandon_after=2)
    deal = match.deals[-1]
    deal.CopyFrom(_match(name, 0).deals[len(match.deals) - 1])  # the deal played out
    whole = deal.plays
    del deal.claimed_scores[:], deal.think_ms[:], deal.auto_plays[:], match.claimed_totals[:]
    deal.end = pb.DEAL_END_ABANDONED
    for cut in range(len(whole)):
        deal.plays = whole[:cut]
        payload = match.SerializeToString()
        reference = _reference(payload)
        assert isinstance(reference, MatchReport) and reference.findings == [], (cut, reference)
        assert fastcheck.check_payload(payload)[:2] == (True, len(match.deals)), cut
        assert _fast(payload) == reference


def test_validate_payloads_judges_each_record_alone_as_validate_payload_does(
    twins: _twins.Twins,
) -> None:
    """Many serialized matches in one call: clean, invalid, undecodable and the same record
    twice, each with the verdict the reference gives it alone (no DUPLICATE_RECORD)."""
    clean = simulate_match(PRESETS["classic"], 3).SerializeToString()
    broken = pb.Match.FromString(clean)
    broken.deals[0].plays = bytes(reversed(broken.deals[0].plays))
    payloads = [clean, broken.SerializeToString(), b"\x00\xffnot a match", clean] * 100
    locations = [Location("r", i, 12) for i in range(len(payloads))]
    got = fastcheck.validate_payloads(payloads, locations, twins=twins)
    assert len(got) == len(payloads)
    for item, payload, location in zip(got, payloads, locations, strict=True):
        alone = fastcheck.judge_payload(payload, location, twins.engine)
        assert item == alone
    assert isinstance(got[2], Damage) and got[2].code == "FRAME_UNDECODABLE"
    report = got[1]
    assert isinstance(report, MatchReport) and not report.valid
    assert all(isinstance(r, MatchReport) and not r.findings for r in got[0::4] + got[3::4])


def _think_field(values: list[int], widths: list[int]) -> bytes:
    """``values`` as a packed varint field, each written in ``widths`` bytes or more (an
    overlong varint pads with continuation bytes and a zero)."""
    out = bytearray()
    for value, width in zip(values, widths, strict=True):
        raw = bytearray(_varint(value))
        while len(raw) < width:
            raw[-1] |= 0x80
            raw.append(0)
        out += raw
    return bytes(out)


@needs_compiled
@settings(max_examples=400, deadline=None)
@given(
    values=st.lists(
        st.one_of(st.integers(0, 300), st.integers(15_800, 16_500), st.integers(0, 2**21)),
        min_size=0,
        max_size=60,
    ),
    widths=st.lists(st.integers(1, 3), min_size=60, max_size=60),
    clock=st.one_of(
        st.integers(127, 300), st.integers(15_800, 16_500), st.sampled_from([16_000, 2**31])
    ),
)
def test_the_think_times_fast_pass_counts_exactly_the_values_within_the_clock(
    values: list[int], widths: list[int], clock: int
) -> None:
    """The sixteen-bytes-at-a-time pass over a deal's think times answers a count only
    when every value is one or two bytes long and none is above the clock, and then the
    count is exact; for every field of 16 to 104 bytes of such values it does answer (the
    careful decoder is left the rest: longer values, values over the clock, short fields)."""
    compiled = importlib.import_module("kingrec._fastcheck_c")
    field = _think_field(values, widths[: len(values)])
    lengths = [max(len(_varint(v)), w) for v, w in zip(values, widths, strict=False)]
    got = compiled.count_short_varints(field, clock)
    fits = all(n <= 2 for n in lengths) and all(v <= clock for v in values)
    if got != -1:
        assert fits and got == len(values), (field.hex(), clock, got)
    if fits and 16 <= len(field) <= 104:
        assert got == len(values), (field.hex(), clock)
    if field:  # cut short inside its last value: never a count
        assert compiled.count_short_varints(field[:-1] + b"\x80", clock) == -1


@needs_compiled
@pytest.mark.parametrize("byte", [52, 55, 63, 64, 100, 128, 255])
@pytest.mark.parametrize("at", [0, 1, 2, 3, 17, 50, 51])
def test_a_play_byte_outside_the_deck_is_judged_like_the_reference(byte: int, at: int) -> None:
    """A follower's card byte is judged by its card set alone (no compare: a byte that is
    no card is a bit no hand holds), the leader's by a compare: a play byte of 52 or more
    at the lead or any follower's turn, in a whole trick or in the trick left open, is
    never vouched for, and gets the reference's finding."""
    match = _match("classic", 0)
    deal = next(d for d in match.deals if len(d.plays) == 52)  # thirteen tricks
    del deal.claimed_scores[:], match.claimed_totals[:]
    plays = bytearray(deal.plays)
    plays[at] = byte
    for cut in (len(plays), at + 1):  # the deal played on, or the plays stopping there
        deal.plays = bytes(plays[:cut])
        del deal.think_ms[cut:]
        if cut < len(plays):
            deal.end = pb.DEAL_END_ABANDONED
        payload = match.SerializeToString()
        assert not fastcheck.check_payload(payload)[0], (byte, at, cut)
        reference = _assert_same_as_reference(payload)
        assert isinstance(reference, MatchReport) and reference.findings, (byte, at, cut)
