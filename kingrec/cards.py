"""Cards, suits and seats as plain ints.

A card is one int 0..51: ``suit * 13 + rank``. Suits 0..3 are clubs, diamonds,
hearts, spades; ranks 0..12 are 2..A. A set of cards is a 52-bit int mask
(bit ``card`` set), which is what the engine's inner loop works on.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .errors import CardError

__all__ = [
    "ALL_CARDS",
    "CLUBS",
    "DIAMONDS",
    "HEARTS",
    "KING_OF_HEARTS",
    "RANK_NAMES",
    "SPADES",
    "SUIT_MASKS",
    "SUIT_NAMES",
    "SUIT_SYMBOLS",
    "CardError",
    "card_name",
    "card_symbol",
    "cards_in",
    "make_card",
    "mask_of",
    "parse_card",
    "parse_cards",
    "rank_of",
    "suit_of",
]

CLUBS, DIAMONDS, HEARTS, SPADES = range(4)
SUIT_LETTERS = "CDHS"
SUIT_SYMBOLS = "♣♦♥♠"
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
RANK_LETTERS = "23456789TJQKA"
RANK_NAMES = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A")
TWO, JACK, QUEEN, KING, ACE = 0, 9, 10, 11, 12

ALL_CARDS = (1 << 52) - 1
SUIT_MASKS = tuple(((1 << 13) - 1) << (13 * s) for s in range(4))
KING_OF_HEARTS = HEARTS * 13 + KING


def make_card(suit: int, rank: int) -> int:
    return suit * 13 + rank


def suit_of(card: int) -> int:
    return card // 13


def rank_of(card: int) -> int:
    return card % 13


def card_name(card: int) -> str:
    """``card_name(49) == 'KS'``: rank letter then suit letter."""
    if not 0 <= card < 52:
        raise CardError(f"{card} is not a card code (0..51)")
    return RANK_LETTERS[card % 13] + SUIT_LETTERS[card // 13]


def card_symbol(card: int) -> str:
    """``card_symbol(49) == '♠K'``: for people."""
    return SUIT_SYMBOLS[card // 13] + RANK_NAMES[card % 13]


def parse_card(text: str) -> int:
    """Parse ``QS``, ``TH``, ``10H``, ``♠Q`` or ``Q♠`` (any case) into a card code."""
    t = text.strip().upper()
    suit = -1
    for i, chars in enumerate(zip(SUIT_LETTERS, SUIT_SYMBOLS, strict=True)):
        if t[:1] in chars:
            suit, t = i, t[1:]
            break
        if t[-1:] in chars:
            suit, t = i, t[:-1]
            break
    if t == "10":
        t = "T"
    if suit < 0 or len(t) != 1 or t not in RANK_LETTERS:
        raise CardError(
            f"{text!r} is not a card (expected rank 2-9 T J Q K A then suit C D H S, e.g. QS)"
        )
    return suit * 13 + RANK_LETTERS.index(t)


def parse_cards(text: str) -> list[int]:
    """Parse space- or comma-separated card names."""
    return [parse_card(part) for part in text.replace(",", " ").split()]


def mask_of(cards: Iterable[int]) -> int:
    mask = 0
    for card in cards:
        mask |= 1 << card
    return mask


def cards_in(mask: int) -> Iterator[int]:
    """The cards of a mask, lowest code first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
