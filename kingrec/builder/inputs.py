"""What a client hands the builder, read and checked: cards, suits, contracts, hands, players,
think times and text, each refused with a ``RecordBuildError`` that says where and why."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import NotRequired, TypedDict

from ..cards import SUIT_NAMES, SUIT_SYMBOLS, mask_of, parse_card
from ..contracts import Contract, parse_contract
from ..errors import CardError, ContractError, LimitError, RecordBuildError
from ..findings import symbols
from ..limits import check_match_limits
from ..v1 import record_pb2 as pb

__all__ = [
    "DEAL_KEYS",
    "CardLike",
    "DealInput",
    "PlayerInfo",
    "check_limits",
    "read_card",
    "read_contract",
    "read_hands",
    "read_milliseconds",
    "read_players",
    "read_suit",
    "read_text",
]

_UINT32 = 1 << 32

CardLike = str | int
"""A card as a client has it: a name (``"QS"``, ``"10H"``, ``"♠Q"``) or a code 0..51."""


class PlayerInfo(TypedDict, total=False):
    """One player, when more than a display name is known. ``seat`` defaults to the
    player's position in the list."""

    id: str
    name: str
    seat: int
    seat_name: str


class DealInput(TypedDict):
    """One deal for ``build_match``: what ``MatchBuilder.deal`` and ``DealBuilder.play`` take.

    ``hands`` are seat 0's 13 cards, then seat 1's, 2's and 3's; ``plays`` the cards in order
    of play from the declarer's lead; ``think_ms`` one think time per play (or none);
    ``auto_plays`` the indexes of plays the server made for a player out of time;
    ``revoke_play`` the index of a penalized revoke (the deal's last play, under
    ``revoke=PENALIZE``).
    """

    hands: Sequence[Sequence[CardLike] | str]
    declarer: int
    contract: str | int
    trump: NotRequired[str | int | None]
    trump_think_ms: NotRequired[int | None]
    plays: NotRequired[Sequence[CardLike]]
    think_ms: NotRequired[Sequence[int] | None]
    auto_plays: NotRequired[Iterable[int]]
    revoke_play: NotRequired[int | None]


DEAL_KEYS = frozenset(DealInput.__annotations__)
_PLAYER_KEYS = frozenset(PlayerInfo.__annotations__)


def read_card(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise RecordBuildError(f"{where}: {value!r} is not a card (a name like 'QS' or a code)")
    if isinstance(value, int):
        if not 0 <= value < 52:
            raise RecordBuildError(f"{where}: {value} is not a card code (0..51)")
        return value
    try:
        return parse_card(value)
    except CardError as exc:
        raise RecordBuildError(f"{where}: {exc}") from None


def read_suit(value: object, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 3:
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        for suit in range(4):
            if text in (SUIT_NAMES[suit], SUIT_NAMES[suit][:-1], SUIT_NAMES[suit][0]):
                return suit
            if text == SUIT_SYMBOLS[suit]:
                return suit
    raise RecordBuildError(
        f"{where}: {value!r} is not a suit (C D H S, clubs … spades, ♣ ♦ ♥ ♠ or 0..3)"
    )


def read_milliseconds(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _UINT32:
        raise RecordBuildError(f"{where}: {value!r} is not a time in milliseconds (0..2³²-1)")
    return value


def read_text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise RecordBuildError(f"{where} must be text, not {type(value).__name__}")
    return value


def read_contract(value: object, where: str) -> Contract:
    try:
        if isinstance(value, str):
            return parse_contract(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return Contract(value)
    except (ContractError, ValueError) as exc:
        detail = str(exc) if isinstance(exc, ContractError) else f"{value} is not a contract"
        raise RecordBuildError(f"{where}: {detail}") from None
    raise RecordBuildError(f"{where}: {value!r} is not a contract")


def read_hands(hands: object, where: str) -> bytes:
    """The 52 card bytes of four hands, checked to partition the deck."""
    if isinstance(hands, str | bytes) or not isinstance(hands, Sequence) or len(hands) != 4:
        raise RecordBuildError(f"{where}: hands must be four hands of 13 cards, seat 0 first")
    cards: list[int] = []
    for seat, hand in enumerate(hands):
        held = hand.replace(",", " ").split() if isinstance(hand, str) else hand
        if not isinstance(held, Sequence):
            raise RecordBuildError(f"{where}: seat {seat}'s hand is not a list of cards")
        if len(held) != 13:
            raise RecordBuildError(f"{where}: seat {seat}'s hand holds {len(held)} cards, not 13")
        cards += (read_card(c, f"{where}, seat {seat}'s hand") for c in held)
    if mask_of(cards) != (1 << 52) - 1:
        doubled = mask_of(c for c, k in Counter(cards).items() if k > 1)
        missing = (1 << 52) - 1 & ~mask_of(cards)
        raise RecordBuildError(
            f"{where}: the four hands do not partition the deck: {symbols(doubled)} dealt "
            f"twice and {symbols(missing)} missing"
        )
    return bytes(cards)


def read_players(players: object) -> list[pb.Player]:
    if isinstance(players, str | bytes) or not isinstance(players, Sequence) or len(players) != 4:
        raise RecordBuildError("players must be a list of four players, seat 0 first")
    out: list[pb.Player] = []
    for i, player in enumerate(players):
        if isinstance(player, str):
            out.append(pb.Player(name=player, seat=i))
            continue
        if not isinstance(player, Mapping):
            raise RecordBuildError(f"player #{i} is {player!r}; give a name or a mapping")
        unknown = sorted(set(player) - _PLAYER_KEYS)
        if unknown:
            raise RecordBuildError(
                f"player #{i} has unknown key(s) {', '.join(map(repr, unknown))} "
                f"(known: {', '.join(sorted(_PLAYER_KEYS))})"
            )
        seat = player.get("seat", i)
        if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat <= 3:
            raise RecordBuildError(f"player #{i}: seat {seat!r} does not exist (0..3)")
        out.append(
            pb.Player(
                id=read_text(player.get("id", ""), f"player #{i}'s id"),
                name=read_text(player.get("name", ""), f"player #{i}'s name"),
                seat=seat,
                seat_name=read_text(player.get("seat_name", ""), f"player #{i}'s seat_name"),
            )
        )
    seats = sorted(p.seat for p in out)
    if seats != [0, 1, 2, 3]:
        raise RecordBuildError(f"the players must fill seats 0, 1, 2 and 3 once each, not {seats}")
    return out


def check_limits(match: pb.Match) -> None:
    problem = check_match_limits(match)
    if problem is not None:
        raise LimitError(f"the record would be over one of kingrec's bounds: {problem}")
