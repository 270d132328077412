"""The compiled par twin's table plumbing (docs/ANALYSIS.md): a trick start's key made from
its parent trick start's, and a look that walks only what the index says is filed. Neither
may change the search: the twins probe, hit and search alike."""

from __future__ import annotations

import random

import pytest

from kingrec import _twins
from kingrec._engine_py import Deal
from kingrec.analysis import _par_py
from kingrec.cards import cards_in
from kingrec.contracts import Contract
from kingrec.rules import PRESETS

needs_compiled = pytest.mark.skipif(_twins.COMPILED is None, reason="not built")


def _played_to(rng: random.Random, name: str, contract: Contract, plays: int) -> Deal | None:
    """A random deal of ``contract`` under preset ``name`` played at random for ``plays``
    cards (None when it ended before)."""
    rules = PRESETS[name]
    trump = rng.randrange(4) if contract == Contract.KOZ else -1
    cards = list(range(52))
    rng.shuffle(cards)
    deal = Deal(bytes(cards), rng.randrange(4), contract, trump, rules.deal_flags(contract))
    while deal.nplays < plays and deal.end == 0:
        deal.push(rng.choice(list(cards_in(deal.legal()))))
    return deal if deal.end == 0 else None


def _figures(search: object, held: list[int], deal: Deal) -> tuple[int, ...]:
    """Every seat's units from ``deal``'s position with ``held`` as the hands, then the
    search's counters."""
    values = tuple(
        search.units_left(  # type: ignore[attr-defined]
            seat, held, deal.leader, deal.trick, deal.played, len(deal.winners)
        )
        for seat in range(4)
    )
    counters = ("nodes", "tt_probes", "tt_hits", "tt_cuts", "searched_starts")
    return values + tuple(getattr(search, name) for name in counters)


@needs_compiled
@pytest.mark.parametrize("name", list(PRESETS))
def test_keys_made_from_the_trick_start_before_find_what_the_reference_finds(name: str) -> None:
    # Five-trick endings of every contract, from a trick start and from inside a trick (where
    # the first trick start below has no parent to take its key from), every seat searched
    # with one table: each key made by taking a trick's cards out of its parent's must be
    # the key made card by card, or the compiled twin would file and find other entries
    # than the reference and probe, hit or search differently.
    assert _twins.COMPILED is not None
    rng = random.Random(f"kept keys {name}")
    probes = 0
    for contract in Contract:
        for extra in (0, 1, 2, 3):
            deal = None
            while deal is None:
                deal = _played_to(rng, name, contract, 32 + extra)
            held = list(deal.held)
            figures = [
                _figures(twin.ParSearch(deal.contract, deal.trump, deal.flags), held, deal)
                for twin in (_par_py, _twins.COMPILED.par)
            ]
            assert figures[0] == figures[1], (name, contract, extra, deal.held)
            probes += figures[0][5]
    assert probes > 1000  # keys were made, most of them from a parent's


@needs_compiled
def test_a_search_reused_on_other_hands_keys_their_positions_afresh() -> None:
    # One table searches a position, then the position a trick later with two cards of
    # different suits swapped between hands: the kept keys of the first search name the
    # cards played so far, but the owners of the second's are others, so a key taken from
    # them would be wrong. The compiled twin must agree with the reference (which has no
    # kept keys) on every value and counter, search after search.
    assert _twins.COMPILED is not None
    rng = random.Random("other hands")
    swapped = 0
    for contract in Contract:
        for _ in range(6):
            first = None
            while first is None:
                first = _played_to(rng, "classic", contract, 28)
            later = _par_py._clone(first)
            for _ in range(4):
                later.push(rng.choice(list(cards_in(later.legal()))))
            if later.end:
                continue
            held = list(later.held)
            a, b = rng.sample(range(4), 2)
            give = rng.choice(list(cards_in(held[a])))
            theirs = [c for c in cards_in(held[b]) if c // 13 != give // 13]
            if not theirs:
                continue
            take = rng.choice(theirs)
            held[a] ^= 1 << give | 1 << take
            held[b] ^= 1 << give | 1 << take
            swapped += 1
            searches = [
                twin.ParSearch(first.contract, first.trump, first.flags)
                for twin in (_par_py, _twins.COMPILED.par)
            ]
            for search in searches:
                _figures(search, list(first.held), first)
            assert _figures(searches[0], held, later) == _figures(searches[1], held, later), (
                contract,
                first.held,
                held,
            )
    assert swapped >= 20
