"""Par search, pure Python: the readable reference twin of ``_par_c.pyx``.

The game is King's play from a given position, solved as a two-sided game: one seat (the
*hero*) against the other three playing together ("paranoid" max-min). The value of a
position is the number of the contract's scoring units the hero takes from there to the end
of the deal, with every hand known; the hero maximizes it in koz and minimizes it in every
penalty contract, the other three do the opposite. Units already taken are the caller's.

Every rule comes from the engine (``kingrec._engine_py``): the legal set, the trick winner,
the units of a trick, the deal's end (early end included). The search adds only what makes
it fast, and none of it changes a value:

- null-window alpha-beta (MTD(f) at the root), fail-soft, with the bound "0 .. units still
  in play" (a position whose units can no longer change is a leaf) and, in koz, sure tricks
  (a floor for the hero on lead, a ceiling for it when another seat leads): the leader wins
  a trick with each top card of a side suit for as many rounds as every other seat holding
  a trump still follows that suit, then with each of its top trumps; and whoever leads,
  the seat holding the highest trumps still out wins a trick with each of them, and each
  seat wins with all but as many of its i highest trumps as there are higher trumps
  elsewhere (``_trump_tricks``); in the penalty contracts, a hero whose every card is below
  all the others' cards of its suit wins no trick left (0), and one whose every card is
  above them all, holding every suit they could lead to it, wins every trick and unit left;
  one that can duck every lead (its i-th lowest card of each suit below the others' i-th
  lowest, as often as the suit can still be led) wins none either (``_ducks_every_lead``);
  one whose every card is above them
  all, with another seat on lead free to lead one of its suits, wins every trick and unit
  left (``_led_into_tops``); one that may have to win the trick about to be played but can
  then lead a loser and duck every lead takes that trick's units at most
  (``_exits_after_this_trick``), and inside a trick, yet to play after another seat, the
  trick on the table's (``_exits_after_the_trick_on_the_table``);
  and the trick about to be played or on the table bounds the hero's units either way
  (``_this_trick``, ``_in_trick``: a trick the three can make it win, one it can surely
  lose);
- a transposition table at trick boundaries with "relevant ranks" (after Bo Haglund's
  DDS): an entry is found by the hero, the leader, each hand's length in each suit and the
  penalty cards out per suit, and names only the top cards of each suit whose ranks the
  searched value rested on, with their holders and penalty statuses; it answers for every
  position with that key whose top cards are held so (the proof is with the table code
  below). The value, units still to take, needs neither the trick number nor the units
  taken so far;
- equivalent cards merged into one move: a card is skipped when the next card of its suit
  still out (held or on the trick) is in the same hand with the same penalty status;
- the last trick played out at once (one card each: nothing to choose);
- move ordering: cheap rank heuristics (win cheaply in koz, duck high in the penalty
  contracts, shed penalty cards on a void, but in the card contracts take a trick that
  carries no penalty card so far, with the hero's highest card that wins, to lead the next
  one; once the hero has lost the trick, the other
  three keep their high cards in koz and their penalty cards in the penalty contracts but
  son iki; in son iki's first eleven tricks, which carry nothing, everyone high first).

The compiled twin searches the same tree in the same order, so the two give the same values,
and the same node counts as long as its pool of at most 2**20 entries has not had to forget any
(``tests/test_par.py`` holds them to both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

from .._engine_py import Deal, _highest_of_suit, trick_winner
from .._engine_types import (
    END_PLAYING,
    F_HEART_LEAD_BAN,
    F_MUST_OVERTRUMP,
    F_RAISE_ON_TRUMP_LEAD,
    F_RIFKI_HEART_AFTER_KING,
    F_TRUMP_LEAD_BREAK,
    F_VOID_DISCARD,
    F_WITHHOLDING,
)
from ..cards import HEARTS, SUIT_MASKS
from ..contracts import PENALTY_MASKS, Contract

__all__ = ["CLOCK_EVERY", "ParSearch"]

CLOCK_EVERY = 4096  # nodes between two looks at the clock
# An entry names at least this many top cards of each suit (all of a shorter suit) for the
# highest level it is filed under; a look tries every level. Filing the entries that name
# many cards apart, under those cards, keeps them from crowding out each other (and the
# ones that name few) where the lengths alone are alike.
LEVELS = (0, 1, 2, 4, 13)
ALL_SUITS = 15
_ALL_CARDS = (1 << 52) - 1
_DEAL_SLOTS = Deal.__slots__
_HEARTS = SUIT_MASKS[HEARTS]
TABLE_EXITS_UNTIL = 9  # the exits ceiling inside tricks up to this many tricks completed


def _clone(deal: Deal) -> Deal:
    """A copy of an engine ``Deal`` that plays on without touching the original."""
    other = Deal.__new__(Deal)
    for name in _DEAL_SLOTS:
        value = getattr(deal, name)
        setattr(other, name, value.copy() if isinstance(value, list | bytearray) else value)
    return other


def _position(
    held: Sequence[int],
    leader: int,
    trick: Sequence[int],
    played: int,
    ntricks: int,
    contract: int,
    trump: int,
    flags: int,
) -> Deal:
    """An engine ``Deal`` standing at the given position, with no units taken yet."""
    deal = Deal(bytes(range(52)), leader, contract, trump, flags)
    deal.held = [held[0], held[1], held[2], held[3]]
    deal.played = played
    deal.trick = list(trick)
    deal.winners = bytearray(ntricks)  # only their number matters from here on (son iki)
    return deal


def _cards_of(mask: int) -> Iterator[int]:
    """Each card of ``mask``, lowest first, as its one-bit mask."""
    while mask:
        low = mask & -mask
        yield low
        mask ^= low


def _suit_mask_of(card: int) -> int:
    """The suit mask of a one-bit card mask."""
    return SUIT_MASKS[(card.bit_length() - 1) // 13]


_CANNOT = 99  # an exit ceiling's answer for a card it says nothing of


class _Exits(NamedTuple):
    """What the exit ceilings read once a node: the other three's hands (from the hero's
    left), the hero's suits failing ``_ducks_all``, the units of a trick when the trick is
    the unit (-1: its penalty cards), whether hearts may not be led yet, and the most the
    hero can still take."""

    hands: Sequence[int]
    failing: int
    per_trick: int
    banned: bool
    most: int


def _lowest(cards: int) -> int:
    """The lowest card of a mask, as a mask (0 for none)."""
    return cards & -cards


def _sheds_under(hand: int, suit_mask: int, penalty: int, high: int) -> bool:
    """Whether ``hand``, following a trick led in the suit, may play a penalty card below
    ``high`` (a card) or, void in the suit, any penalty card: under withholding the cards it
    must play are such cards, and a void hand that must discard one may."""
    own = hand & suit_mask
    if not own:
        return bool(hand & penalty)
    return bool(own & penalty & ((1 << high) - 1))


class OutOfBudget(Exception):
    """The search ran past its node limit or its deadline."""


class ParSearch:
    """Searches positions of one deal, for any hero seat; the table (keyed on the hero too)
    lives across searches, so the positions of a whole deal (a review) share what earlier
    searches learnt. The reference's table is a dict that never forgets; the compiled twin's
    is a pool that grows to at most 2**20 entries and, when that is full, keeps the
    costlier half."""

    def __init__(self, contract: int, trump: int, flags: int) -> None:
        self.contract = contract
        self.trump = trump
        self.flags = flags
        self.seat = 0  # the hero of the search under way
        self.hero_wants_units = contract == Contract.KOZ
        self.penalty = PENALTY_MASKS[contract]
        # where filed (_filed) -> entries [pattern, lower bound, upper bound, best move as
        # a relative card or -1, nodes spent finding it] (the table: relevant ranks, below)
        self.table: dict[tuple[int, ...], list[list[Any]]] = {}
        self.relevant = 0  # the cards whose ranks the last value _search returned rests on
        self.nodes = 0  # positions searched, over every search of this object
        self.tt_probes = 0  # looks into the table
        self.tt_hits = 0  # looks that found the position
        # Where the nodes go (bench/bench_par.py reports them): nodes by the cards already
        # on the table; table looks that answered without a search; trick starts searched.
        self.nodes_by_card = [0, 0, 0, 0]
        self.tt_cuts = 0
        self.searched_starts = 0
        self.passes = 0  # null-window searches at the root (MTD(f))
        self._node_limit = 0
        self._deadline = 0
        self._clock: Callable[[], int] | None = None

    # -- the public face (the compiled twin's is the same) -------------------------------

    def units_left(
        self,
        seat: int,
        held: Sequence[int],
        leader: int,
        trick: Sequence[int],
        played: int,
        ntricks: int,
        node_limit: int = 0,
        deadline_ns: int = 0,
        clock: Callable[[], int] | None = None,
        guess: int = 0,
        floor: int = 0,
        ceiling: int = 13,
    ) -> int:
        """The units ``seat`` is sure of from this position on, or -1 when the search ran
        past ``node_limit`` (total nodes of this object; 0: none) or past ``deadline_ns`` on
        ``clock`` (nanoseconds; looked at every ``CLOCK_EVERY`` nodes; 0: none).

        The position is one of the deal still being played: ``held`` each seat's cards,
        ``trick`` the cards on the table from ``leader`` on, ``played`` the cards of the
        ``ntricks`` completed tricks. ``guess`` (the value expected) only changes how fast
        the answer comes. A caller that only needs the value within ``floor`` .. ``ceiling``
        gets ``floor`` for any value at or below it and ``ceiling`` for any at or above it,
        for fewer passes (a review asks "better than the best card so far?").
        """
        if not 0 <= floor <= ceiling:  # (a value below 0 would read as -1: out of budget)
            raise ValueError(f"the floor {floor} is not within 0 .. the ceiling {ceiling}")
        self.seat = seat
        self._node_limit = node_limit
        self._deadline = deadline_ns
        self._clock = clock
        deal = _position(
            held, leader, trick, played, ntricks, self.contract, self.trump, self.flags
        )
        if deadline_ns and clock is not None and clock() >= deadline_ns:
            return -1
        try:
            return self._mtd(deal, guess, floor, ceiling)
        except OutOfBudget:
            return -1

    def _mtd(self, deal: Deal, guess: int, floor: int = 0, ceiling: int = 13) -> int:
        """The value by null-window searches (MTD(f)) from a first ``guess``: each one only
        asks "at least ``target``?", which prunes far more than one wide window; the table
        keeps what each search learnt for the next. The value is sought only as far as it
        lies within ``floor`` .. ``ceiling`` (clamped to them: ``units_left``)."""
        low, high = 0, self._units_in_play(deal)
        while max(low, floor) < min(high, ceiling):
            guess = min(max(guess, low, floor), high, ceiling)
            target = guess + 1 if guess == max(low, floor) else guess
            guess = self._search(deal, target - 1, target)
            self.passes += 1
            if guess < target:
                high = guess
            else:
                low = guess
        if low >= ceiling:
            return ceiling  # at least the ceiling
        if high <= floor:
            return floor  # at most the floor
        return max(low, floor)  # the value, or the floor when it is the ceiling too

    # -- the search ----------------------------------------------------------------------

    def _units_in_play(self, deal: Deal) -> int:
        """The most units the rest of the deal can still give anyone."""
        contract = self.contract
        done = len(deal.winners)
        if contract == Contract.KOZ or contract == Contract.EL_ALMAZ:
            return 13 - done
        if contract == Contract.SON_IKI:
            return 13 - max(done, 11)
        return (self.penalty & ~deal.played).bit_count()

    def _sure_tricks(self, deal: Deal, holder: int) -> int:
        """Koz, ``holder`` on lead: the tricks it wins for certain (quick tricks). It leads the
        top cards of each side suit for as many rounds as every other seat holding a trump
        still follows (nobody can ruff them: the others must follow suit), then its top
        trumps (nobody can beat them); a side suit done first leaves every trump in place."""
        held, out = deal.held, ~deal.played
        hand = held[holder]
        trump_suit = SUIT_MASKS[self.trump]
        trumps = trump_suit & out
        ruffers = [held[s] for s in range(4) if s != holder and held[s] & trumps]
        tops = 0
        for suit, suit_mask in enumerate(SUIT_MASKS):
            if suit == self.trump:
                continue
            rest = suit_mask & out
            rounds = min((h & suit_mask).bit_count() for h in ruffers) if ruffers else 13
            while rest and rounds:
                top = 1 << (rest.bit_length() - 1)
                if not hand & top:
                    break
                tops |= top
                rest ^= top
                rounds -= 1
        unbroken = self.flags & F_TRUMP_LEAD_BREAK and not deal.played & trump_suit
        if unbroken and hand & ~tops & ~trump_suit:
            return tops.bit_count()  # trumps may be led only once the hand holds nothing else
        top_trumps = 0
        while trumps and hand & (1 << (trumps.bit_length() - 1)):
            top_trumps += 1
            trumps ^= 1 << (trumps.bit_length() - 1)
        return tops.bit_count() + top_trumps

    def _top_trumps(self, deal: Deal) -> tuple[int, int]:
        """Koz, at a trick boundary: the seat holding the highest trump still out and how
        many trumps in a row from the top down it holds (-1, 0 when no trump is out).
        Whoever leads, each of them wins the trick it is played to (nothing can beat it),
        and all thirteen tricks are played."""
        trumps = SUIT_MASKS[self.trump] & ~deal.played
        if not trumps:
            return -1, 0
        top = 1 << (trumps.bit_length() - 1)
        holder = next(s for s in range(4) if deal.held[s] & top)
        hand, run = deal.held[holder], 0
        while trumps and hand & (1 << (trumps.bit_length() - 1)):
            run += 1
            trumps ^= 1 << (trumps.bit_length() - 1)
        return holder, run

    def _trump_tricks(self, deal: Deal, holder: int) -> int:
        """Koz: tricks ``holder`` wins with its trumps, whoever leads and however the others
        play: for each i, of its i highest trumps all but as many as there are higher trumps
        in other hands win.

        All thirteen tricks are played, so each of its trumps is played to some trick, which it
        wins unless a higher trump is played to the same trick; each trick holds one card of
        ``holder``'s, so a higher trump beats one of its trumps at most. Its i highest trumps,
        each at least the i-th, can only be beaten by the trumps above the i-th held by the
        others: at least i minus that many of them win. (The seat holding the top trumps in a
        row, ``_top_trumps``, is the case of no higher trump.)"""
        trumps = SUIT_MASKS[self.trump] & ~deal.played
        mine = deal.held[holder] & trumps
        best = count = 0
        while mine:
            top = 1 << (mine.bit_length() - 1)
            mine ^= top
            count += 1
            higher = (trumps & ~deal.held[holder] & ~(top - 1) & ~top).bit_count()
            best = max(best, count - higher)
        return best

    def _ranked_out(self, deal: Deal, most: int) -> int:
        """Penalty contracts, at a trick boundary: the hero's units from here on when the
        ranks alone settle them, else -1.

        When each of the hero's cards is below all the others' cards of its suit, the hero
        wins no trick left: following, it is beaten by the card led; on lead, it leads a suit
        another seat holds, which must follow, higher (0 units). When each is above all the
        others' cards of its suit, and the hero holds every suit they could lead to it, it
        wins every trick left, and with them every unit still in play."""
        seat, held = self.seat, deal.held
        hero = held[seat]
        others = held[(seat + 1) % 4] | held[(seat + 2) % 4] | held[(seat + 3) % 4]
        on_lead = deal.leader == seat
        below = above = True
        shared = 0  # the suits both the hero and the others hold
        for suit_mask in SUIT_MASKS:
            mine, theirs = hero & suit_mask, others & suit_mask
            if mine and theirs:
                shared |= suit_mask
                if mine.bit_length() > (theirs & -theirs).bit_length():
                    below = False  # a card of the hero's above one of theirs
                if (mine & -mine).bit_length() < theirs.bit_length():
                    above = False  # a card of the hero's below one of theirs
            elif theirs and not on_lead:
                above = False  # they can lead a suit the hero must discard on
        if below and (not on_lead or deal.legal() & shared):
            return 0
        if above:
            return most
        return -1

    def _led_into_tops(self, deal: Deal) -> bool:
        """Penalty contracts, at a trick boundary with another seat on lead: whether the three
        can make the hero win every trick left (and so take every unit still in play).

        When each of the hero's cards is above all the others' cards of its suit (its
        *tops*), the hero wins every trick it follows suit to: the card led and all the
        others' are below any card of the suit it plays (and withholding, which asks for a
        penalty card below the highest on the trick, asks it for none). Then it leads, and a
        top led wins too. Cards only leave, so a top stays a top: once it wins a trick it
        wins every one after. The leader need only lead a card of a suit the hero holds, if
        its legal leads hold one. (``_ranked_out`` settles the hero on lead, and a hero that
        holds every suit they could lead; here the others may hold suits the hero lacks, and
        no more is asked than this lead.) The ranks it reads are ``_ranked_out``'s: in each
        suit both hold, the hero's lowest card, above all of theirs."""
        seat, held = self.seat, deal.held
        if deal.leader == seat:
            return False
        hero = held[seat]
        others = held[(seat + 1) % 4] | held[(seat + 2) % 4] | held[(seat + 3) % 4]
        for suit_mask in SUIT_MASKS:
            mine, theirs = hero & suit_mask, others & suit_mask
            if mine and theirs and (mine & -mine).bit_length() < theirs.bit_length():
                return False  # a card of the hero's below one of theirs
        return bool(deal.legal() & _suits_of(hero))

    def _ducks_every_lead(self, deal: Deal) -> int:
        """Penalty contracts: when the hero can lose every trick left (0 units from here), the
        suits whose ranks say so, as a card mask (every card of each suit compared); else -1.

        At a trick boundary with another seat on lead, it is ``_ducks_all`` of the hands. The
        hero on lead may first lead a card some seat must beat (all its cards of the suit
        higher: it loses that trick, and the others' cards leaving only help), the highest
        such card of a suit (the fewer and lower the hero's cards, the easier the test), and
        then needs ``_ducks_all`` without it. Inside a trick, the hero's card already beaten
        or sure to be (a seat to come holding only higher cards of the suit), it needs
        ``_ducks_all`` of the hands; the hero yet to play, ``_ducks_all`` of the hands as they
        were when the trick was led, each card on the table back with the seat that played
        it (the trick is then the first of the rounds the proof ducks, led by another seat).
        What it answers names whole suits (the table's proof allows that): the ones compared,
        and the suit led or the one the hero leads a loser of.
        """
        seat, held, trick, penalty = self.seat, deal.held, deal.trick, self.penalty
        hero = held[seat]
        hands = [held[(seat + k) % 4] for k in (1, 2, 3)]
        forced = bool(self.flags & (F_WITHHOLDING | F_VOID_DISCARD))
        if not trick:
            if deal.leader != seat:
                return _ducks_all(hero, hands, penalty, forced)
            legal = deal.legal()
            for suit_mask in SUIT_MASKS:
                beater = max(_lowest(hand & suit_mask) for hand in hands)
                under = hero & legal & suit_mask & (beater - 1) if beater else 0
                if under:
                    lead = 1 << (under.bit_length() - 1)
                    read = _ducks_all(hero ^ lead, hands, penalty, forced)
                    if read >= 0:
                        return read | suit_mask
            return -1
        suit_mask = SUIT_MASKS[trick[0] // 13]
        place = (seat - deal.leader) % 4
        if place < len(trick):  # the hero has played: it must have lost the trick
            high = _highest_of(trick, trick[0] // 13)
            later = [(deal.leader + i) % 4 for i in range(len(trick), 4)]
            if 1 << trick[place] == high and not any(
                _lowest(held[f] & suit_mask) > high for f in later
            ):
                return -1
            read = _ducks_all(hero, hands, penalty, forced)
        else:
            # The hands as they were when the trick was led: each card on the table back
            # with the seat that played it.
            before = hands.copy()
            for i, card in enumerate(trick):
                before[(deal.leader + i - seat) % 4 - 1] |= 1 << card
            read = _ducks_all(hero, before, penalty, forced)
        return read | suit_mask if read >= 0 else -1

    def _exits_pay(self, deal: Deal, alpha: int) -> bool:
        """Whether ``_exits_after_this_trick`` could settle the window above ``alpha``: where
        every trick is a unit (el almaz, son iki's last two) it answers 0 only when the hero
        surely loses the trick, which ``_ducks_every_lead`` mostly settles already, so it is
        worked out there only above 0 (a measured choice: the nodes it saved at 0 cost more
        than they saved)."""
        if self.contract == Contract.EL_ALMAZ or (
            self.contract == Contract.SON_IKI and len(deal.winners) >= 11
        ):
            return alpha >= 1
        return True

    def _trick_units(self, deal: Deal) -> int:
        """The units of the trick about to be played or on the table when the trick itself
        is the unit: one in el almaz, one in son iki's last two tricks, none in its first
        eleven; -1 in the others (its penalty cards are)."""
        if self.contract == Contract.EL_ALMAZ:
            return 1
        if self.contract == Contract.SON_IKI:
            return 1 if len(deal.winners) >= 11 else 0
        return -1

    def _exit_after(
        self,
        card: int,
        rest: int,
        units: int,
        suit_mask: int,
        high: int,
        to_come: Sequence[int],
        exits: _Exits,
    ) -> int:
        """The exit ceilings' answer for one card of the hero's: its units from here on at
        most, holding ``rest`` once ``card`` (a mask) is its card to a trick led in
        ``suit_mask``, ``high`` the highest card of the suit on the table (0: none),
        ``to_come`` the hands still to play to the trick but the hero's, ``units`` the
        penalty cards on the table; ``_CANNOT`` when the bound says nothing (the proofs are
        with ``_exits_after_this_trick`` and ``_exits_after_the_trick_on_the_table``)."""
        penalty = self.penalty
        forced = bool(self.flags & (F_WITHHOLDING | F_VOID_DISCARD))
        if exits.failing and not exits.failing & card:
            return _CANNOT  # a suit failing that the card is not of
        if _ducks_all(rest, exits.hands, penalty, forced) < 0:
            return _CANNOT
        if (
            not card & suit_mask
            or card < high
            or any(_lowest(hand & suit_mask) > card for hand in to_come)
        ):
            return 0  # it loses this trick, and every one after
        if not _leads_a_loser(rest, exits.hands, penalty, forced, suit_mask, exits.banned):
            return _CANNOT
        if exits.per_trick >= 0:
            return exits.per_trick
        units += 1 if card & penalty else 0
        for hand in to_come:
            own = hand & suit_mask if hand & suit_mask else hand
            units += 1 if own & penalty else 0
        return min(units, exits.most)

    def _follow_choices(self, hero: int, suit_mask: int) -> tuple[int, int]:
        """The hero's cards to a trick led in ``suit_mask`` for the exit ceilings, and the card
        withholding may ask of it (0 for none).

        Following, any card of the suit; void, what a forced discard leaves it (its penalty
        cards, or under rıfkı's heart-after-the-king a heart), of which the top card of each
        suit is tried: shedding a lower one would keep a higher card, which ducks no better
        (the proofs beside the two ceilings). Withholding may always ask for its lowest
        penalty card of the suit, so that card's outcome binds whatever it chose."""
        mine = hero & suit_mask
        if mine:
            withheld = self.flags & F_WITHHOLDING and mine & self.penalty
            return mine, _lowest(mine & self.penalty) if withheld else 0
        choices = hero
        if self.flags & F_VOID_DISCARD:
            if hero & self.penalty:
                choices = hero & self.penalty
            elif self.flags & F_RIFKI_HEART_AFTER_KING and hero & _HEARTS:
                choices = hero & _HEARTS
        tops = sum(1 << ((choices & m).bit_length() - 1) for m in SUIT_MASKS if choices & m)
        return tops, 0

    def _exits_after_this_trick(self, deal: Deal, most: int) -> int:
        """Penalty contracts, at a trick boundary: a ceiling on the hero's units from here on
        when it may have to win the trick about to be played but then escapes every other
        (at most that trick's units), else -1.

        The hero picks its card r for the trick: on lead, any legal card; following a suit
        S it holds, any card of S, and under withholding with a penalty card of S also its
        lowest one, p (the rule can only ask for a penalty card below the highest on the
        trick, which its lowest always is, so the hero may keep to p then); void, the top
        card of a suit among those the rules leave it (a forced discard: the penalty cards,
        else in rıfkı the hearts). Each leader's suit S is answered by the card that leaves
        the least, and when the rule may ask for p, by the worse of p and that card. With r
        played, the rest of its hand must pass ``_ducks_all`` (whoever wins the trick, the
        others' cards leaving only keep the test true: it is shown for any of theirs
        leaving in ``_ducks_all``), so if the hero loses the trick it loses every trick
        left. It loses the trick surely when it is void in S (no trumps) or some other seat
        holds only higher cards of S (that seat must follow, above r); then r costs nothing.
        Otherwise it may win, and must then lead a loser: a card c of a suit T below every
        card of T of a seat that still holds T after this trick (two cards of it, or one
        and a card of S to play instead, S not T), so that seat must beat c; hearts only
        once broken before this trick, or when the hand holds nothing else. The rest but c
        must pass ``_ducks_all`` too (after c is beaten another seat leads). The trick's
        units are then the hero's at most: r when it is a penalty card, and one penalty
        card from each other seat that holds one of S (or, void in S, any): in el almaz
        one (the trick), in son iki one from the twelfth trick on, none before. Units never
        go below 0, so the trick's units bound all the hero takes from here.

        What it answers names the hero's suits whole: it compares no other ranks, and the
        lengths, penalty statuses and the lead ban it reads are the key's. (Inside a trick it is
        ``_exits_after_the_trick_on_the_table``, asked only where it paid.)"""
        seat, held, penalty = self.seat, deal.held, self.penalty
        hero = held[seat]
        hands = [held[(seat + k) % 4] for k in (1, 2, 3)]
        forced = bool(self.flags & (F_WITHHOLDING | F_VOID_DISCARD))
        per_trick = self._trick_units(deal)
        banned = bool(self.flags & F_HEART_LEAD_BAN) and not deal.played & _HEARTS

        # Each suit's test of _ducks_all reads that suit alone, and r leaves one suit: with
        # two suits failing nothing passes, and with one only a card of it can (a shortcut
        # to the same answer).
        failing = _failing_suits(hero, hands, penalty, forced)
        if failing.bit_count() > 13:
            return -1
        exits = _Exits(hands, failing, per_trick, banned, most)

        def after(card: int, suit_mask: int, rest: int) -> int:
            return self._exit_after(card, rest, 0, suit_mask, 0, hands, exits)

        legal = deal.legal()
        if deal.leader == seat:
            best = _CANNOT
            for low in _cards_of(legal):
                suit_mask = _suit_mask_of(low)
                best = min(best, after(low, suit_mask, hero ^ low))
            return best if best < _CANNOT else -1
        worst = 0
        for suit_mask in SUIT_MASKS:
            if not legal & suit_mask:
                continue  # the leader cannot lead it
            choices, asked = self._follow_choices(hero, suit_mask)
            best = _CANNOT
            for low in _cards_of(choices):
                best = min(best, after(low, suit_mask, hero ^ low))
            if asked:
                best = max(best, after(asked, suit_mask, hero ^ asked))
            if best >= _CANNOT:
                return -1
            worst = max(worst, best)
        return worst

    def _exits_after_the_trick_on_the_table(self, deal: Deal, most: int, alpha: int) -> int:
        """Penalty contracts, inside a trick with the hero yet to play: a ceiling on the
        hero's units from here on (at most that trick's units, as ``_exits_after_this_trick``
        for the trick on the table), or -1; worked out only where it could settle the
        window above ``alpha``.

        The proof is ``_exits_after_this_trick``'s with what the table shows. The suit led
        S is known, so the three cannot put the hero's trouble off to a later trick: it
        either loses this trick and then every one after (the rest of its hand passes
        ``_ducks_all``), or wins it and leads a loser. Its card r is any of its cards of S,
        and under withholding with a penalty card of S the worse of that and its lowest one
        (the rule asks for a penalty card below the highest on the trick, which its lowest
        then is); void, the top card of a suit a forced discard leaves it. r surely loses
        when it is not of S, below the highest card of S on the table, or below every card
        of S of another seat still to play (that seat must follow above it). A seat that has
        played holds now what it holds after the trick, so ``_leads_a_loser``'s "still holds
        T after this trick" asks no more of it than it may. The trick's units are the
        penalty cards on the table, r's, and one from each other seat still to play that
        holds one it may play (of S, or any when void in S).

        It is worked out only when the penalty cards on the table are at most ``alpha`` (the
        ceiling counts them whenever r may win, and when r surely loses
        ``_ducks_every_lead``, just before, mostly said 0 already) and the hero's cards fail
        the duck test in at most one suit (r leaves one suit). What it answers names the
        hero's suits and S, whole. (The search asks it only with another seat to play before
        the hero: with the hero to play, or its card out, it cost more than it saved,
        measured.)"""
        seat, held, penalty, trick = self.seat, deal.held, self.penalty, deal.trick
        per_trick = self._trick_units(deal)
        on_table = sum(1 for card in trick if penalty >> card & 1)
        if (per_trick if per_trick >= 0 else on_table) > alpha:
            return -1
        suit_mask = SUIT_MASKS[trick[0] // 13]
        high = _highest_of(trick, trick[0] // 13)
        place = (seat - deal.leader) % 4
        to_come = [held[(deal.leader + i) % 4] for i in range(len(trick), 4) if i != place]
        if place < len(trick):
            return -1  # the hero's card is out: not this bound's
        hero = held[seat]
        hands = [held[(seat + k) % 4] for k in (1, 2, 3)]
        forced = bool(self.flags & (F_WITHHOLDING | F_VOID_DISCARD))
        failing = _failing_suits(hero, hands, penalty, forced)
        if failing.bit_count() > 13:
            return -1
        banned = bool(self.flags & F_HEART_LEAD_BAN) and not deal.played & _HEARTS

        exits = _Exits(hands, failing, per_trick, banned, most)

        def after(card: int, rest: int, units: int) -> int:
            return self._exit_after(card, rest, units, suit_mask, high, to_come, exits)

        choices, asked = self._follow_choices(hero, suit_mask)
        best = _CANNOT
        for low in _cards_of(choices):
            best = min(best, after(low, hero ^ low, on_table))
        if asked:
            best = max(best, after(asked, hero ^ asked, on_table))
        return best if best < _CANNOT else -1

    def _this_trick(self, deal: Deal, most: int) -> tuple[int, int]:
        """Penalty contracts, at a trick boundary: a floor and a ceiling on the hero's units
        from here on, from the trick about to be played alone.

        No trumps: a trick goes to the highest card of the suit led. When each of the hero's
        cards of a suit S is above all the others' cards of S, the hero wins every trick led
        in S that it follows (it must follow, and any card it plays is the highest); when one
        of its cards of S is below a card of S already on the trick, or it has none, it can
        lose the trick. So:

        - floor: another seat leads and may lead a suit S the hero follows high in this way:
          the three can give it the trick, and with it the card led, their penalty cards
          (each of the other two followers holding a penalty card it may play: one of S, or
          any when void in S; withholding and forced discards only ever ask for one) and the
          hero's own if all of its cards of S are penalty cards. The hero on lead whose every
          legal lead wins (nothing of the others' above it in its suit) is sure of the least
          such trick. In el almaz and son iki's last two tricks the trick itself is the unit.
        - ceiling: every unit still out but those this trick surely sends elsewhere. On lead,
          the hero may lead a card some other seat must beat (all its cards of the suit are
          higher): that card's unit is saved. Off lead, whatever the leader leads (card c of
          suit S) the hero loses if it is void in S (then it may shed a penalty card it holds)
          or holds a card of S below c (then it may shed one of those that is a penalty card:
          withholding asks for exactly such a card); the card led goes with the trick. The
          leader leads the card that saves the hero least.

        Units later never go below 0 nor above what is left, so both hold for the rest of the
        deal. ``(0, most)`` when the trick says nothing."""
        contract, penalty, seat, held = self.contract, self.penalty, self.seat, deal.held
        per_trick = contract == Contract.EL_ALMAZ or contract == Contract.SON_IKI
        if contract == Contract.SON_IKI and len(deal.winners) < 11:
            return 0, most  # the trick carries nothing
        hero = held[seat]
        coalition = [(seat + 1) % 4, (seat + 2) % 4, (seat + 3) % 4]
        others = held[coalition[0]] | held[coalition[1]] | held[coalition[2]]
        leads = deal.legal()

        def dumps(suit_mask: int, followers: list[int]) -> int:
            """The followers that may play a penalty card to a trick led in the suit."""
            count = 0
            for f in followers:
                own = held[f] & suit_mask if held[f] & suit_mask else held[f]
                if own & penalty:
                    count += 1
            return count

        floor, saved = 0, 0
        if deal.leader == seat:
            worst_win, sure_win = most, True
            for low in _cards_of(leads):
                suit_mask = _suit_mask_of(low)
                theirs = others & suit_mask
                if theirs.bit_length() < low.bit_length():  # nothing of theirs above it
                    units = (
                        1
                        if per_trick
                        else (1 if penalty & low else 0) + dumps(suit_mask, coalition)
                    )
                    worst_win = min(worst_win, units)
                else:
                    sure_win = False
                if any(_lowest(held[f] & suit_mask) > low for f in coalition):
                    # a seat whose every card of the suit beats it (it must follow)
                    saved = max(saved, 1 if per_trick or penalty & low else 0)
            if sure_win:
                floor = worst_win
        else:
            followers = [f for f in coalition if f != deal.leader]
            saved = most
            for low in _cards_of(leads):
                suit_mask = _suit_mask_of(low)
                mine, theirs = hero & suit_mask, others & suit_mask
                if mine and _lowest(mine).bit_length() > theirs.bit_length():
                    units = (
                        1
                        if per_trick
                        else (
                            (1 if penalty & low else 0)
                            + dumps(suit_mask, followers)
                            + (1 if not mine & ~penalty else 0)
                        )
                    )
                    floor = max(floor, units)
                if not mine:  # a discard loses: the hero may shed a penalty card
                    shed = (
                        1
                        if per_trick
                        else (1 if penalty & low else 0) + (1 if hero & penalty else 0)
                    )
                elif mine & (low - 1):  # a card below the one led loses
                    shed = (
                        1
                        if per_trick
                        else (1 if penalty & low else 0) + (1 if mine & (low - 1) & penalty else 0)
                    )
                else:
                    shed = 0
                saved = min(saved, shed)
        return floor, most - saved

    def _in_trick(self, deal: Deal, most: int) -> tuple[int, int]:
        """Penalty contracts, inside a trick: a floor and a ceiling on the hero's units from
        here on, from the trick on the table alone (``_this_trick`` once the lead is out).

        The trick goes to the highest card of the suit led. The hero loses it when its card
        is already beaten, when a seat still to play holds only higher cards of the suit (it
        must follow, and beat it), or, not having played, when it is void in the suit or holds
        a card below the highest (withholding only ever asks for such a card): then the units
        on the table are surely not the hero's, nor a penalty card it may shed (one of those
        low cards, or any when void). The hero wins it when its card is the highest and every
        seat still to play may play under it (void, or holding a lower card), or, not having
        played, when each of its cards of the suit beats all those of the seats still to play:
        then the three can give it the units on the table, the penalty cards the seats still to
        play may shed under it, and its own card when it has only penalty cards of the suit.
        In el almaz and son iki's last two tricks the trick itself is the unit."""
        contract, penalty, seat, held = self.contract, self.penalty, self.seat, deal.held
        per_trick = contract == Contract.EL_ALMAZ or contract == Contract.SON_IKI
        if contract == Contract.SON_IKI and len(deal.winners) < 11:
            return 0, most  # the trick carries nothing
        trick, leader = deal.trick, deal.leader
        suit_mask = SUIT_MASKS[trick[0] // 13]
        high = max(c for c in trick if c // 13 == trick[0] // 13)
        on_table = 1 if per_trick else sum(1 for c in trick if penalty >> c & 1)
        later = [(leader + i) % 4 for i in range(len(trick), 4)]
        place = (seat - leader) % 4
        hero = held[seat] & suit_mask
        if place < len(trick):  # the hero has played
            if trick[place] != high:
                return 0, most - on_table  # beaten already
            if any(_lowest(held[f] & suit_mask) > 1 << high for f in later):
                return 0, most - on_table  # a seat to come must beat it
            # Every seat to come may play under it: the three give the hero the trick.
            if per_trick:
                return 1, most
            sheds = sum(1 for f in later if _sheds_under(held[f], suit_mask, penalty, high))
            return on_table + sheds, most
        below = hero & ((1 << high) - 1)
        if not hero or below:  # the hero can lose the trick
            if per_trick:
                return 0, most - 1
            own = (held[seat] if not hero else below) & penalty
            return 0, most - on_table - (1 if own else 0)
        to_come = [f for f in later if f != seat]
        if all(_lowest(hero) > held[f] & suit_mask for f in to_come):  # it wins, whatever comes
            if per_trick:
                return 1, most
            sheds = sum(1 for f in to_come if _sheds_under(held[f], suit_mask, penalty, 52))
            return on_table + sheds + (0 if hero & ~penalty else 1), most
        return 0, most

    # -- the table: relevant ranks ---------------------------------------------------------
    #
    # An entry is found by a key of what every position it may answer for shares: the hero,
    # the leader, each hand's length in each suit, and the penalty cards out in each suit.
    # It holds, per suit, how many of the suit's cards out from the top down it names and
    # who holds each of them with its penalty status (its *pattern*): the ranks the searched
    # value rested on. The cards below them are "small": only how many each hand holds
    # counts. A position matches an entry when its key is the entry's and its top cards of
    # each suit are held as the pattern says. Why that is sound (every rule option):
    #
    # Let P be the position searched and P' one that matches. Map P's cards onto P''s: the
    # named ones by their place from the top of their suit, each hand's small cards of a
    # suit onto its small cards of that suit (any way). The map keeps suits, holders and
    # penalty statuses (named cards by the pattern; the small ones of a suit share one
    # status, as the pattern is widened until they do, and P' has as many penalty cards out
    # in the suit, by the key); and it keeps every comparison "x below y" where y is named,
    # since the small cards lie below all named ones in both. The rules ask for ranks only
    # in comparisons with one card: the trick's winner against the others of its suit
    # played to the trick; the must-raise and must-overtrump rules against the highest trump
    # on the trick; withholding against the highest card of the suit led; the lead bans, the
    # early end and the units in play count cards, which the key keeps. So when the search
    # names each card that was such a "y" in the first trick (_rule_ranks, _winning_rank),
    # the first trick is played alike in P and P': the same legal cards, winner and units.
    # Each position after it matches what its own value rested on (it is named here too,
    # which only widens the pattern, never narrows it), and by induction on the tricks left
    # has the same value or bound. Two cards the move list merged (next to each other, one
    # hand, one status) are both named or both small: the pattern is widened down past the
    # lowest named card while the card below it is such a neighbour; two small cards of one
    # hand are interchangeable. The bounds that answer at a trick start name the ranks they
    # read (_top_runs, _ranked_out_ranks) and are monotone in them, or name whole suits: the
    # trump tricks every trump, the trick about to be played every suit the leader may lead;
    # the bound inside a trick (_in_trick) names the suit led, the only ranks it reads. One
    # that names nothing rests on every card. The table's own bounds, when they narrow the
    # window, add the ranks their entry names. The entry keeps every value and bound that
    # rests on no more.

    def _key(self, deal: Deal) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """At a trick start: the key (the hero, the leader, per suit each hand's length and
        the penalty cards out), and per suit its cards out from the top down, three bits
        each: the holder and the penalty status."""
        held, penalty = deal.held, self.penalty
        key = [self.seat, deal.leader]
        codes = []
        for suit_mask in SUIT_MASKS:
            out = suit_mask & ~deal.played
            key.extend((held[s] & suit_mask).bit_count() for s in range(4))
            key.append((out & penalty).bit_count())
            code = 0
            while out:
                top = 1 << (out.bit_length() - 1)
                owner = 0 if held[0] & top else 1 if held[1] & top else 2 if held[2] & top else 3
                code = code << 3 | owner << 1 | (1 if penalty & top else 0)
                out ^= top
            codes.append(code)
        return tuple(key), tuple(codes)

    def _find(
        self, key: tuple[int, ...], codes: tuple[int, ...], played: int, alpha: int, beta: int
    ) -> tuple[int, int, int, int] | None:
        """What the entries matching the position know: the tightest lower and upper bounds,
        the best move of the one that names most cards and the cards their patterns name;
        None when none does. The levels are looked at from the top (the entries nearest the
        position) down, and no further once the bounds settle the window (alpha, beta)."""
        found = None
        fewest = 99  # the small cards of the entry whose move is taken: the nearest one's
        looks = [(level, ALL_SUITS) for level in range(len(LEVELS) - 1, 0, -1)]
        looks += [(0, profile) for profile in range(ALL_SUITS)]
        for level, profile in looks:
            filed = _filed(key, codes, level, profile)
            for pattern, low, high, move, _cost in self.table.get(filed, ()):
                if any(
                    code >> shift != top for code, (shift, top) in zip(codes, pattern, strict=True)
                ):
                    continue
                named = _named_cards(pattern, played)
                small = sum(shift for shift, _top in pattern)
                if found is None:
                    found = (low, high, -1, named)
                found = (max(found[0], low), min(found[1], high), found[2], found[3] | named)
                if small < fewest:
                    fewest, found = small, (found[0], found[1], move, found[3])
                if found[0] == found[1] or found[0] >= beta or found[1] <= alpha:
                    return found
        return found

    def _rule_ranks(self, deal: Deal) -> int:
        """The card on the trick whose rank decides the legal set of the seat to play (0: none
        does): the highest trump for the must-raise and must-overtrump rules, the highest
        card of the suit led for withholding."""
        trick = deal.trick
        if not trick:
            return 0  # the lead: the bans count cards, they compare none
        flags, led = self.flags, trick[0] // 13
        follows = deal.held[deal.to_play] & SUIT_MASKS[led]
        if self.contract == Contract.KOZ:
            if follows and led == self.trump and flags & F_RAISE_ON_TRUMP_LEAD:
                return _highest_of(trick, led)
            if not follows and flags & F_MUST_OVERTRUMP:
                return _highest_of(trick, self.trump)
            return 0
        if follows and flags & F_WITHHOLDING:
            return _highest_of(trick, led)
        return 0

    def _top_runs(self, deal: Deal, holder: int) -> int:
        """The cards of ``holder`` from the top of each suit down, until another seat's: the
        ranks the koz sure tricks read (they only grow where these are held alike)."""
        hand, out, runs = deal.held[holder], ~deal.played, 0
        for suit_mask in SUIT_MASKS:
            rest = suit_mask & out
            while rest:
                top = 1 << (rest.bit_length() - 1)
                if not hand & top:
                    break
                runs |= top
                rest ^= top
        return runs

    def _ranked_out_ranks(self, deal: Deal, below: bool) -> int:
        """The ranks ``_ranked_out`` read: in each suit the hero and the others share, the
        lowest of the others' cards (the hero's are all below it) or of the hero's (all the
        others' are below it)."""
        seat, held = self.seat, deal.held
        hero = held[seat]
        others = held[(seat + 1) % 4] | held[(seat + 2) % 4] | held[(seat + 3) % 4]
        named = 0
        for suit_mask in SUIT_MASKS:
            mine, theirs = hero & suit_mask, others & suit_mask
            if mine and theirs:
                lowest = theirs if below else mine
                named |= lowest & -lowest
        return named

    def _moves(self, deal: Deal) -> list[int]:
        """The legal cards of the seat to play, one per group of equivalent cards, best
        guesses first."""
        hand = deal.held[deal.to_play]
        legal = deal.legal()
        out = ~deal.played  # cards still out: in a hand or on the trick
        penalty = self.penalty
        moves: list[tuple[int, int]] = []
        trick = deal.trick
        led_suit = trick[0] // 13 if trick else -1
        for low in _cards_of(legal):
            card = low.bit_length() - 1
            above = SUIT_MASKS[card // 13] & ~((low << 1) - 1) & out
            if above:
                nxt = above & -above
                if hand & nxt and legal & nxt and (penalty & nxt != 0) == (penalty & low != 0):
                    continue  # the next card up stands for both
            moves.append((self._order(deal, card, trick, led_suit, penalty & low != 0), card))
        moves.sort()
        return [card for _, card in moves]

    def _order(
        self, deal: Deal, card: int, trick: list[int], led_suit: int, is_penalty: bool
    ) -> int:
        """Sort key of a move: lower goes first."""
        rank = card % 13
        if self.contract == Contract.SON_IKI and len(deal.winners) < 11:
            # Son iki's early tricks carry nothing: what a card does is leave the hand, and
            # both sides shape the last two tricks by keeping their low cards (the hero to
            # duck them, the three to lead under the hero's), so everyone plays high first
            # (10 simulated son iki deals from trick 7: a third of the nodes of the orders below).
            return -rank
        if not trick:
            return -rank if self.hero_wants_units else rank
        seat, leader = self.seat, deal.leader
        if (
            self.contract != Contract.SON_IKI  # (its early tricks carry nothing)
            and deal.to_play != seat
            and (seat - leader) % 4 < len(trick)
            and (leader + trick_winner(trick, self.trump)) % 4 != seat
        ):
            # The hero has played and lost this trick already, whatever comes: the other
            # three keep their high cards (koz), or shed high cards but keep penalty ones.
            return rank if self.hero_wants_units else (100 if is_penalty else 0) - rank
        wins = trick_winner([*trick, card], self.trump) == len(trick)
        if (
            wins
            and not self.hero_wants_units
            and self.contract != Contract.EL_ALMAZ  # (there, and in son iki's last two
            and self.contract != Contract.SON_IKI  # tricks, the trick itself is the unit)
            and deal.to_play == seat
            and not is_penalty
            and not any(self.penalty >> c & 1 for c in trick)
        ):
            # The hero takes a trick that carries no penalty card so far, with its highest
            # card that wins: it leads the next trick, where one lead of its own is searched
            # instead of every lead of the three's (their leads are all-nodes where the hero
            # escapes), and sheds a high card it might later be made to win with.
            return -300 - rank
        if self.hero_wants_units:  # koz: everybody fights for the trick, as cheaply as can be
            return rank if wins else 100 + rank
        if card // 13 != led_suit and is_penalty:
            return -100 - rank  # a void: shed a penalty card
        return 100 - rank if wins else -rank  # duck with the highest card that still ducks

    def _tick(self) -> None:
        self.nodes += 1
        if self._node_limit and self.nodes > self._node_limit:
            raise OutOfBudget
        if self._deadline and self.nodes % CLOCK_EVERY == 0:
            clock = self._clock
            if clock is not None and clock() >= self._deadline:
                raise OutOfBudget

    def _search(self, deal: Deal, alpha: int, beta: int) -> int:
        """Units the hero takes from ``deal`` on, within the window (alpha, beta), fail-soft."""
        self._tick()
        self.nodes_by_card[len(deal.trick)] += 1
        self.relevant = 0  # what the value returned rests on (_relevant_ranks): nothing yet
        if deal.end != END_PLAYING:
            return 0
        most = self._units_in_play(deal)
        if most == 0 or beta <= 0:
            return 0  # nothing left to take, or the window wants less than nothing
        if alpha >= most:
            return most
        # The trick's bounds move the hero's units by at most its four cards (one trick in
        # el almaz and son iki): looked at only when that could settle the window.
        reach = 1 if self.contract == Contract.EL_ALMAZ or self.contract == Contract.SON_IKI else 4
        near = not self.hero_wants_units and (beta <= reach or alpha >= most - reach)
        if deal.trick and near:
            floor, ceiling = self._in_trick(deal, most)
            if floor >= beta or ceiling <= alpha:
                # the trick's bounds read the ranks of the suit led alone (_in_trick)
                self.relevant = SUIT_MASKS[deal.trick[0] // 13]
            if floor >= beta:
                return floor  # the three can give the hero this trick's units
            if ceiling <= alpha:
                return ceiling  # the hero can send this trick's units elsewhere
        if deal.trick and not self.hero_wants_units:
            ducked = self._ducks_every_lead(deal)
            if ducked >= 0:
                self.relevant = ducked  # the suits it compared, whole
                return 0  # the hero can lose every trick left
            if (
                (self.seat - deal.leader) % 4 > len(deal.trick)  # another seat before the hero
                and len(deal.winners) <= TABLE_EXITS_UNTIL
                and self._exits_pay(deal, alpha)
            ):
                ceiling = self._exits_after_the_trick_on_the_table(deal, most, alpha)
                if 0 <= ceiling <= alpha:
                    # the hero's suits and the suit led, whole
                    self.relevant = (
                        _suits_of(deal.held[self.seat]) | SUIT_MASKS[deal.trick[0] // 13]
                    )
                    return ceiling  # this trick's units at most: then a loser, all ducked
        key: tuple[int, ...] | None = None
        codes: tuple[int, ...] = ()
        started = narrowed = 0
        hint = -1
        if not deal.trick and len(deal.winners) == 12:
            return self._last_trick(deal)
        if not deal.trick:
            # A bound below that does not say which cards it rests on rests on them all.
            self.relevant = _ALL_CARDS
            if self.hero_wants_units:
                sure = self._sure_tricks(deal, deal.leader)
                if deal.leader == self.seat and (sure >= beta or sure == most):
                    self.relevant = self._top_runs(deal, deal.leader)
                    return sure  # at least these
                if deal.leader != self.seat and most - sure <= alpha:
                    self.relevant = self._top_runs(deal, deal.leader)
                    return most - sure  # the leader's sure tricks are lost to the hero
                holder, trumps = self._top_trumps(deal)
                if holder == self.seat and trumps >= beta:
                    self.relevant = self._top_runs(deal, holder)
                    return trumps  # at least one trick with each top trump
                if holder >= 0 and holder != self.seat and most - trumps <= alpha:
                    self.relevant = self._top_runs(deal, holder)
                    return most - trumps  # at most the tricks the holder's top trumps leave
                sure = self._trump_tricks(deal, self.seat)
                if sure >= beta:
                    self.relevant = SUIT_MASKS[self.trump]  # it reads the trumps alone
                    return sure  # at least these, with trumps nobody can take all of
                theirs = max(self._trump_tricks(deal, (self.seat + k) % 4) for k in (1, 2, 3))
                if most - theirs <= alpha:
                    self.relevant = SUIT_MASKS[self.trump]
                    return most - theirs  # at most the tricks one of the others' trumps leave
            else:
                ranked = self._ranked_out(deal, most)
                if ranked >= 0:
                    self.relevant = self._ranked_out_ranks(deal, ranked == 0)
                    return ranked  # the ranks settle the rest: nothing more, or every unit left
                if self._led_into_tops(deal):
                    self.relevant = self._ranked_out_ranks(deal, False)
                    return most  # the three lead into the hero's tops: it wins every trick
                ducked = self._ducks_every_lead(deal)
                if ducked >= 0:
                    self.relevant = ducked  # the suits it compared, whole
                    return 0  # the hero can lose every trick left
                floor, ceiling = self._this_trick(deal, most) if near else (0, most)
                if floor >= beta or ceiling <= alpha:
                    # _this_trick reads the ranks of the suits the leader may lead alone
                    self.relevant = _suits_of(deal.legal())
                if floor >= beta:
                    return floor  # the three can give the hero this trick's units
                if ceiling <= alpha:
                    return ceiling  # the hero can send this trick's units elsewhere
                if self._exits_pay(deal, alpha):
                    ceiling = self._exits_after_this_trick(deal, most)
                    if 0 <= ceiling <= alpha:
                        self.relevant = _suits_of(deal.held[self.seat])  # its suits, whole
                        return ceiling  # this trick's units at most: then a loser, all ducked
            key, codes = self._key(deal)
            self.tt_probes += 1
            found = self._find(key, codes, deal.played, alpha, beta)
            if found is not None:
                self.tt_hits += 1
                low, high, hint, narrowed = found
                self.relevant = narrowed
                if low == high or low >= beta:
                    self.tt_cuts += 1
                    return low
                if high <= alpha:
                    self.tt_cuts += 1
                    return high
                if low <= alpha and high >= beta:
                    narrowed = 0  # the window stays as it was: the value rests on none of it
                alpha, beta = max(alpha, low), min(beta, high)
            self.searched_starts += 1
            started = self.nodes
        maximizing = (deal.to_play == self.seat) == self.hero_wants_units
        seat = self.seat
        original_alpha, original_beta = alpha, beta
        best = -1 if maximizing else 14
        best_card = -1
        moves = self._moves(deal)
        if hint >= 0:
            first = self._absolute(deal, hint)
            if first in moves:  # the best move of the last search of this position
                moves.remove(first)
                moves.insert(0, first)
        # The value rests on the bounds the table narrowed the window with, on the ranks
        # that decided the legal set here, and on what each answer below rests on.
        relevant = narrowed | self._rule_ranks(deal)
        for card in moves:
            child = _clone(deal)
            before = child.units[seat]
            child.push(card)
            gained = child.units[seat] - before
            value = gained + self._search(child, alpha - gained, beta - gained)
            relevant |= self.relevant
            if len(deal.trick) == 3:
                relevant |= _winning_rank([*deal.trick, card], self.trump)
            if maximizing:
                if value > best:
                    best, best_card = value, card
                    alpha = max(alpha, value)
            elif value < best:
                best, best_card = value, card
                beta = min(beta, value)
            if alpha >= beta:
                break
        if key is not None:
            pattern, relevant = _relevant_ranks(codes, relevant, deal.played)
            self._store(
                key,
                codes,
                pattern,
                best,
                original_alpha,
                original_beta,
                self._relative(deal, best_card),
                self.nodes - started,
            )
        self.relevant = relevant
        return best

    def _last_trick(self, deal: Deal) -> int:
        """The units the hero takes in the last trick: one card each, nothing to choose."""
        last = _clone(deal)
        trick = []
        for _ in range(4):
            hand = last.held[last.to_play]
            trick.append((hand & -hand).bit_length() - 1)
            last.push(trick[-1])
        self.relevant = _winning_rank(trick, self.trump)
        return last.units[self.seat] - deal.units[self.seat]

    @staticmethod
    def _relative(deal: Deal, card: int) -> int:
        """A card as its suit and its place among the suit's cards still out (from the
        bottom): the same move in every position with the same key."""
        suit = card // 13
        return suit << 4 | (SUIT_MASKS[suit] & ~deal.played & ((1 << card) - 1)).bit_count()

    @staticmethod
    def _absolute(deal: Deal, move: int) -> int:
        out = SUIT_MASKS[move >> 4] & ~deal.played
        for _ in range(move & 15):
            out &= out - 1
        return (out & -out).bit_length() - 1

    def _store(
        self,
        key: tuple[int, ...],
        codes: tuple[int, ...],
        pattern: tuple[tuple[int, int], ...],
        value: int,
        alpha: int,
        beta: int,
        move: int,
        cost: int,
    ) -> None:
        """Keep what a search of ``cost`` nodes learnt: an entry with the same key and
        pattern gains the bound, else a new one is filed at the end of its list. (The
        compiled twin's pool, when it is full, keeps the costlier half of its entries.)"""
        level = _level(key, pattern)
        profile = _profile(key, pattern) if level == 0 else ALL_SUITS
        entries = self.table.setdefault(_filed(key, codes, level, profile), [])
        for entry in entries:
            if entry[0] == pattern:
                break
        else:
            entry = [pattern, 0, 13, -1, 0]
            entries.append(entry)
        if value <= alpha:
            entry[2] = min(entry[2], value)  # failed low: an upper bound
        elif value >= beta:
            entry[1] = max(entry[1], value)  # failed high: a lower bound
        else:
            entry[1] = entry[2] = value
        entry[3] = move
        entry[4] += cost


def _suit_counts(key: tuple[int, ...]) -> list[int]:
    """The cards out of each suit, from a key (each hand's length of it)."""
    return [sum(key[2 + 5 * suit : 6 + 5 * suit]) for suit in range(4)]


def _filed(
    key: tuple[int, ...], codes: tuple[int, ...], level: int, profile: int = ALL_SUITS
) -> tuple[int, ...]:
    """Where the entries of ``level`` for a position are: its key, the level and the top
    ``LEVELS[level]`` cards of each suit (the compiled twin hashes them to a chain). Level
    0 holds the entries that leave a suit wholly small; they are filed by ``profile``, the
    suits they name a card of (or that are out), under the top card of each of those."""
    tops = []
    for suit, (count, code) in enumerate(zip(_suit_counts(key), codes, strict=True)):
        keep = min(LEVELS[level], count) if level else min(profile >> suit & 1, count)
        tops.append(code >> 3 * (count - keep))
    return (*key, level, profile, *tops)


def _profile(key: tuple[int, ...], pattern: tuple[tuple[int, int], ...]) -> int:
    """The suits ``pattern`` names a card of, or that have no card out: its filing at level
    0 (ALL_SUITS above it)."""
    profile = 0
    for suit, (count, (shift, _top)) in enumerate(zip(_suit_counts(key), pattern, strict=True)):
        if count == 0 or count - shift // 3 >= 1:
            profile |= 1 << suit
    return profile


def _level(key: tuple[int, ...], pattern: tuple[tuple[int, int], ...]) -> int:
    """The highest level whose cards ``pattern`` names in every suit."""
    counts = _suit_counts(key)
    for level in range(len(LEVELS) - 1, 0, -1):
        if all(
            count - shift // 3 >= min(LEVELS[level], count)
            for count, (shift, _top) in zip(counts, pattern, strict=True)
        ):
            return level
    return 0


def _ducks_all(hero: int, hands: Sequence[int], penalty: int, forced: bool) -> int:
    """Penalty contracts, another seat on lead: whether the hero holding ``hero`` can lose
    every trick left to the other three holding ``hands``; the suits it compared (every
    card of each suit both hold), or -1. ``forced``: withholding or a forced discard is in
    force. Each suit is tested alone (``_suit_ducks``)."""
    read = 0
    for suit_mask in SUIT_MASKS:
        mine = hero & suit_mask
        if not mine or not (hands[0] | hands[1] | hands[2]) & suit_mask:
            continue
        read |= suit_mask
        if not _suit_ducks(mine, [hand & suit_mask for hand in hands], penalty, forced):
            return -1
    return read


def _suit_ducks(mine: int, theirs: Sequence[int], penalty: int, forced: bool) -> bool:
    """Whether the hero, holding ``mine`` of a suit S, loses every trick led in S while it
    never wins a trick (so never leads), the three holding ``theirs`` of S seat by seat.

    With the hero's cards of S h1 < h2 < ... and the three's together o1 < o2 < ..., and
    l the longest holding of S among them (the most tricks of S still to be led: every seat
    holding S follows to each), it is enough that h_i < o_i for each i up to l: the hero's
    cards above its l lowest never have to be played to a trick of S. The hero plays to
    each trick led in S its highest card among its l lowest below the highest card on the
    trick, and sheds the top card of a suit when void in the suit led. Each step keeps the
    test for the new l' (at most l - 1: each longest holder plays a card of S): if the
    highest card so far is o_j with j <= l, the hero holds j or more of its l lowest below
    it and plays h_m, m >= j (holding fewer cards of S, all lie below it, and it plays its
    top one, which keeps the rest paired), and for i < l the new i-th card is h_i (i < m)
    or h_{i+1}, below the new i-th of the others' (o_j is gone, so that is at least
    o_{i+1}); if j > l, it plays h_l (below o_l < o_j) and keeps h_1 .. h_{l-1} under
    o_1 .. o_{l-1}. A card of the others' leaving only moves their rest up (and l down); a
    top card of the hero's leaving moves nothing. When the rules choose the hero's card
    (withholding: a penalty card below the highest on the trick; void discard: a penalty
    card, or in rıfkı a heart, which the hero picks from the top) they take that same card,
    or one above its l lowest (which leaves them as they were), unless one of its penalty
    cards lies below one of its other cards of the suit: such a suit must have every card
    of the hero's below every one of the others' (o1 above h_top), which any card leaving
    keeps. Neither rule can put a penalty card below another card again, so the test holds
    for every trick left. (With l the three's cards of S together, it is the test against
    one hand holding them all.)"""
    a, b, c = theirs[0], theirs[1], theirs[2]
    others = a | b | c
    exposed = mine & penalty and mine & ~penalty > _lowest(mine & penalty)
    if forced and exposed:
        return mine.bit_length() <= _lowest(others).bit_length()
    while mine and a | b | c:  # round i, while the longest holding lasts
        if _lowest(mine) > _lowest(others):
            return False  # h_i above o_i: the others may make the hero win
        mine &= mine - 1
        others &= others - 1
        a, b, c = a & (a - 1), b & (b - 1), c & (c - 1)  # each holder plays one to it
    return True


def _leads_a_loser(
    hero: int,
    hands: Sequence[int],
    penalty: int,
    forced: bool,
    trick_suit: int,
    banned: bool,
) -> bool:
    """Whether the hero holding ``hero`` once a trick led in ``trick_suit`` is over (its
    card to it played) could lead a card some seat must beat and then lose every trick
    left (``_ducks_all`` of the rest): per suit, the highest of its cards below every card
    of the suit of a seat among ``hands`` that surely still holds the suit after that
    trick (two cards of it, or one and a card of the trick's suit to play there instead).
    ``banned``: hearts may not be led, unless the hand holds nothing else."""
    for suit_mask in SUIT_MASKS:
        mine = hero & suit_mask
        if not mine or (banned and suit_mask == _HEARTS and hero & ~_HEARTS):
            continue
        beater = 0
        for hand in hands:
            own = hand & suit_mask
            if own and (own & (own - 1) or (suit_mask != trick_suit and hand & trick_suit)):
                beater = max(beater, _lowest(own))
        under = mine & (beater - 1) if beater else 0
        if under and _ducks_all(hero ^ 1 << (under.bit_length() - 1), hands, penalty, forced) >= 0:
            return True
    return False


def _failing_suits(hero: int, hands: Sequence[int], penalty: int, forced: bool) -> int:
    """The suits (every card of each) whose own test of ``_ducks_all`` fails."""
    failing = 0
    for suit_mask in SUIT_MASKS:
        mine = hero & suit_mask
        theirs = [hand & suit_mask for hand in hands]
        if mine and any(theirs) and not _suit_ducks(mine, theirs, penalty, forced):
            failing |= suit_mask
    return failing


def _suits_of(cards: int) -> int:
    """Every card of each suit ``cards`` has one of, as a card mask."""
    return sum(suit_mask for suit_mask in SUIT_MASKS if cards & suit_mask)


def _highest_of(trick: Sequence[int], suit: int) -> int:
    """The highest card of ``suit`` on ``trick``, as a card mask (0: none)."""
    card = _highest_of_suit(trick, suit)
    return 1 << card if card >= 0 else 0


def _winning_rank(trick: Sequence[int], trump: int) -> int:
    """The winner of a complete trick when it beat another card of its suit by rank, as a
    card mask; 0 when it won by its suit alone (the only trump, or the only card of the suit
    led), whatever its rank."""
    winner = trick[trick_winner(trick, trump)]
    rivals = sum(1 for card in trick if card // 13 == winner // 13)
    return 1 << winner if rivals > 1 else 0


def _relevant_ranks(
    codes: tuple[int, ...], relevant: int, played: int
) -> tuple[tuple[tuple[int, int], ...], int]:
    """The pattern of a searched trick start whose value rests on the ranks of the cards
    ``relevant``, and the cards it names: per suit, every card from the lowest relevant one
    up, widened down while the card below is the lowest named card's neighbour (same holder,
    same status) and until the small cards share one penalty status. A pattern is per suit
    (shift, top): the suit's code shifted right by ``shift`` bits must equal ``top``."""
    pattern = []
    for suit_mask, code in zip(SUIT_MASKS, codes, strict=True):
        out = suit_mask & ~played
        count = out.bit_count()
        marked = relevant & out
        named = (out & ~((marked & -marked) - 1)).bit_count() if marked else 0
        bottom = code & 1  # the status of the lowest card out
        alike = 0  # how many cards from the bottom up share it
        while alike < count and (code >> 3 * alike) & 1 == bottom:
            alike += 1
        named = max(named, count - alike)
        while 0 < named < count and (
            (code >> 3 * (count - named)) & 7 == (code >> 3 * (count - named - 1)) & 7
        ):
            named += 1
        shift = 3 * (count - named)
        pattern.append((shift, code >> shift))
    result = tuple(pattern)
    return result, _named_cards(result, played)


def _named_cards(pattern: tuple[tuple[int, int], ...], played: int) -> int:
    """The cards a pattern names in a position whose played cards are ``played``: in each
    suit, as many cards out from the top down as the pattern holds."""
    named = 0
    for suit_mask, (shift, _top) in zip(SUIT_MASKS, pattern, strict=True):
        out = suit_mask & ~played
        for _ in range(out.bit_count() - shift // 3):
            top = 1 << (out.bit_length() - 1)
            named |= top
            out ^= top
    return named
