# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Par search, compiled: the twin of ``kingrec/analysis/_par_py.py`` over the one core.

The rules come from ``kingrec/_core.pxd`` (the legal set, the trick winner, the units, the
deal's end, all in ``deal_legal`` and ``deal_push``); this file adds only the search, which
is ``_par_py``'s line for line: the same moves in the same order, the same table with the
same keys and the same emptying, so the two give the same values and node counts.
"""

from libc.stdint cimport uint64_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from kingrec._core cimport (
    ALL_CARDS, EL_ALMAZ, END_PLAYING, F_TRUMP_LEAD_BREAK, KOZ, PENALTY, SON_IKI, SUIT,
    SUIT_OF, DealState, deal_legal, deal_push, high_card, low_card, popcount, to_play,
    trick_winner,
)

__all__ = ["CLOCK_EVERY", "TT_ENTRIES", "ParSearch"]

cdef enum:
    WAYS = 4  # entries per bucket
    BUCKETS = 1 << 18  # 2**20 entries of 40 bytes: 40 MiB per deal being searched
    EVERY = 4096  # nodes between two looks at the clock

TT_ENTRIES = WAYS * BUCKETS
CLOCK_EVERY = EVERY

ctypedef struct Entry:
    # Per suit, what is left (0 in key[0]: an empty entry); the leader and the hero on top.
    uint64_t key[4]
    signed char low
    signed char high
    signed char move  # the best move found, as a relative card (suit * 16 + place), or -1
    unsigned char depth  # cards still out: what the entry saves when it is hit


cdef inline uint64_t mix(uint64_t x) noexcept nogil:
    x ^= x >> 33
    x *= 0xff51afd7ed558ccdULL
    x ^= x >> 33
    return x


cdef inline bint _sheds_under(uint64_t hand, uint64_t suit_mask, uint64_t penalty,
                              int high) noexcept nogil:
    """``_par_py._sheds_under``."""
    cdef uint64_t own = hand & suit_mask
    if not own:
        return (hand & penalty) != 0
    return (own & penalty & ((<uint64_t>1 << high) - 1)) != 0


cdef class ParSearch:
    """Searches positions of one deal, for any hero seat (``_par_py.ParSearch``)."""

    cdef readonly int contract, trump, seat
    cdef readonly long flags
    cdef readonly unsigned long long nodes, tt_probes, tt_hits, tt_cuts, searched_starts
    cdef unsigned long long by_card[4]
    cdef bint hero_wants_units, aborted
    cdef uint64_t penalty
    cdef Entry* table
    cdef unsigned long long node_limit
    cdef long long deadline
    cdef object clock

    def __cinit__(self, int contract, int trump, long flags):
        self.contract = contract
        self.trump = trump
        self.flags = flags
        self.seat = 0
        self.hero_wants_units = contract == KOZ
        self.penalty = PENALTY[contract] if 0 <= contract < 8 else 0
        self.table = NULL
        memset(self.by_card, 0, sizeof(self.by_card))

    @property
    def nodes_by_card(self):
        """``_par_py.ParSearch.nodes_by_card``."""
        return [self.by_card[0], self.by_card[1], self.by_card[2], self.by_card[3]]

    def __dealloc__(self):
        free(self.table)

    def units_left(self, int seat, held, int leader, trick, uint64_t played, int ntricks,
                   unsigned long long node_limit=0, long long deadline_ns=0, clock=None,
                   int guess=0):
        """The units ``seat`` is sure of from this position on, or -1 past the budget
        (``_par_py.ParSearch.units_left``)."""
        cdef DealState d
        cdef int i, n = len(trick)
        if not 0 <= seat <= 3 or not 0 <= leader <= 3 or n > 3:
            raise ValueError("seat and leader are 0..3, and a trick on the table has 0..3 cards")
        self.seat = seat
        if self.table == NULL:
            self.table = <Entry*>calloc(WAYS * BUCKETS, sizeof(Entry))
            if self.table == NULL:
                raise MemoryError("no memory for the par search's table")
        memset(&d, 0, sizeof(DealState))
        for i in range(4):
            d.held[i] = held[i]
        d.played = played
        d.penalty = self.penalty
        d.flags = self.flags
        d.contract = self.contract
        d.trump = self.trump
        d.leader = leader
        for i in range(n):
            d.trick[i] = trick[i]
        d.ntrick = n
        d.ntricks = ntricks
        d.end = END_PLAYING
        d.revoker = -1
        self.node_limit = node_limit
        self.deadline = deadline_ns
        self.clock = clock
        self.aborted = False
        if deadline_ns and clock is not None and clock() >= deadline_ns:
            return -1
        value = self._mtd(&d, guess)
        return -1 if self.aborted else value

    cdef int _mtd(self, const DealState* d, int guess) except? -9:
        """The exact value by null-window searches (``_par_py.ParSearch._mtd``)."""
        cdef int low = 0, high = self._units_in_play(d), target
        guess = low if guess < low else high if guess > high else guess
        while low < high:
            target = guess + 1 if guess == low else guess
            guess = self._search(d, target - 1, target)
            if self.aborted:
                return 0
            if guess < target:
                high = guess
            else:
                low = guess
        return low

    cdef int _units_in_play(self, const DealState* d) noexcept nogil:
        if self.contract == KOZ or self.contract == EL_ALMAZ:
            return 13 - d.ntricks
        if self.contract == SON_IKI:
            return 13 - (d.ntricks if d.ntricks > 11 else 11)
        return popcount(self.penalty & ~d.played)

    cdef int _sure_tricks(self, const DealState* d, int holder) noexcept nogil:
        """``_par_py.ParSearch._sure_tricks``."""
        cdef uint64_t hand = d.held[holder], out = ALL_CARDS & ~d.played
        cdef uint64_t trumps = SUIT[self.trump] & out, tops = 0, rest, top
        cdef int suit, s, rounds, length, top_trumps = 0
        for suit in range(4):
            if suit == self.trump:
                continue
            rest = SUIT[suit] & out
            rounds = 13
            for s in range(4):
                if s != holder and d.held[s] & trumps:
                    length = popcount(d.held[s] & SUIT[suit])
                    if length < rounds:
                        rounds = length
            while rest and rounds:
                top = <uint64_t>1 << high_card(rest)
                if not hand & top:
                    break
                tops |= top
                rest ^= top
                rounds -= 1
        if self.flags & F_TRUMP_LEAD_BREAK and not d.played & SUIT[self.trump]:
            if hand & ~tops & ~SUIT[self.trump]:
                return popcount(tops)
        while trumps and hand & (<uint64_t>1 << high_card(trumps)):
            top_trumps += 1
            trumps ^= <uint64_t>1 << high_card(trumps)
        return popcount(tops) + top_trumps

    cdef int _trump_tricks(self, const DealState* d, int holder) noexcept nogil:
        """``_par_py.ParSearch._trump_tricks``: tricks ``holder`` wins with its trumps."""
        cdef uint64_t trumps = SUIT[self.trump] & ~d.played
        cdef uint64_t mine = d.held[holder] & trumps, top
        cdef int best = 0, count = 0, higher
        while mine:
            top = <uint64_t>1 << high_card(mine)
            mine ^= top
            count += 1
            higher = popcount(trumps & ~d.held[holder] & ~((top << 1) - 1))
            if count - higher > best:
                best = count - higher
        return best

    cdef int _ranked_out(self, const DealState* d, int most) noexcept nogil:
        """``_par_py.ParSearch._ranked_out``."""
        cdef int seat = self.seat, suit
        cdef uint64_t hero = d.held[seat], mine, theirs, shared = 0
        cdef uint64_t others = (d.held[(seat + 1) & 3] | d.held[(seat + 2) & 3]
                                | d.held[(seat + 3) & 3])
        cdef bint on_lead = d.leader == seat, below = True, above = True
        for suit in range(4):
            mine = hero & SUIT[suit]
            theirs = others & SUIT[suit]
            if mine and theirs:
                shared |= SUIT[suit]
                if high_card(mine) > low_card(theirs):
                    below = False
                if low_card(mine) < high_card(theirs):
                    above = False
            elif theirs and not on_lead:
                above = False
        if below and (not on_lead or deal_legal(d) & shared):
            return 0
        if above:
            return most
        return -1

    cdef int _dumps(self, const DealState* d, uint64_t suit_mask, int skip) noexcept nogil:
        """``_par_py.ParSearch._this_trick``'s dumps: the three others but the hero and
        ``skip`` that may play a penalty card to a trick led in the suit."""
        cdef int f, count = 0
        cdef uint64_t own
        for f in range(4):
            if f == self.seat or f == skip:
                continue
            own = d.held[f] & suit_mask if d.held[f] & suit_mask else d.held[f]
            if own & self.penalty:
                count += 1
        return count

    cdef void _this_trick(self, const DealState* d, int most, int* floor,
                          int* ceiling) noexcept nogil:
        """``_par_py.ParSearch._this_trick``: a floor and a ceiling on the hero's units."""
        cdef int seat = self.seat, f, units, shed, worst_win, saved = 0
        cdef bint per_trick = self.contract == EL_ALMAZ or self.contract == SON_IKI
        cdef bint sure_win = True
        cdef uint64_t hero = d.held[seat], penalty = self.penalty
        cdef uint64_t others = (d.held[(seat + 1) & 3] | d.held[(seat + 2) & 3]
                                | d.held[(seat + 3) & 3])
        cdef uint64_t mask, low, suit_mask, mine, theirs, own
        floor[0] = 0
        ceiling[0] = most
        if self.contract == SON_IKI and d.ntricks < 11:
            return
        mask = deal_legal(d)
        if d.leader == seat:
            worst_win = most
            while mask:
                low = mask & (~mask + 1)
                mask ^= low
                suit_mask = SUIT[SUIT_OF[popcount(low - 1)]]
                theirs = others & suit_mask
                if theirs < low:  # nothing of theirs above it
                    if per_trick:
                        units = 1
                    else:
                        units = (1 if penalty & low else 0) + self._dumps(d, suit_mask, seat)
                    if units < worst_win:
                        worst_win = units
                else:
                    sure_win = False
                for f in range(4):
                    own = d.held[f] & suit_mask
                    if f != seat and own & (~own + 1) > low:
                        if per_trick or penalty & low:
                            saved = 1
            if sure_win:
                floor[0] = worst_win
        else:
            saved = most
            while mask:
                low = mask & (~mask + 1)
                mask ^= low
                suit_mask = SUIT[SUIT_OF[popcount(low - 1)]]
                mine = hero & suit_mask
                theirs = others & suit_mask
                if mine and (mine & (~mine + 1)) > theirs:
                    if per_trick:
                        units = 1
                    else:
                        units = ((1 if penalty & low else 0)
                                 + self._dumps(d, suit_mask, d.leader)
                                 + (0 if mine & ~penalty else 1))
                    if units > floor[0]:
                        floor[0] = units
                if not mine:
                    if per_trick:
                        shed = 1
                    else:
                        shed = (1 if penalty & low else 0) + (1 if hero & penalty else 0)
                elif mine & (low - 1):
                    if per_trick:
                        shed = 1
                    else:
                        shed = ((1 if penalty & low else 0)
                                + (1 if mine & (low - 1) & penalty else 0))
                else:
                    shed = 0
                if shed < saved:
                    saved = shed
        ceiling[0] = most - saved

    cdef void _in_trick(self, const DealState* d, int most, int* floor,
                        int* ceiling) noexcept nogil:
        """``_par_py.ParSearch._in_trick``: a floor and a ceiling on the hero's units from
        the trick on the table."""
        cdef int seat = self.seat, n = d.ntrick, i, f, high = -1, on_table = 0, place, sheds
        cdef bint per_trick = self.contract == EL_ALMAZ or self.contract == SON_IKI
        cdef uint64_t penalty = self.penalty, suit_mask = SUIT[SUIT_OF[d.trick[0]]], hero, own
        floor[0] = 0
        ceiling[0] = most
        if self.contract == SON_IKI and d.ntricks < 11:
            return
        for i in range(n):
            if SUIT_OF[d.trick[i]] == SUIT_OF[d.trick[0]] and d.trick[i] > high:
                high = d.trick[i]
            if penalty >> d.trick[i] & 1:
                on_table += 1
        if per_trick:
            on_table = 1
        place = (seat - d.leader) & 3
        hero = d.held[seat] & suit_mask
        sheds = 0
        if place < n:  # the hero has played
            if d.trick[place] != high:
                ceiling[0] = most - on_table
                return
            for i in range(n, 4):
                f = (d.leader + i) & 3
                own = d.held[f] & suit_mask
                if own & (~own + 1) > <uint64_t>1 << high:
                    ceiling[0] = most - on_table
                    return
                if _sheds_under(d.held[f], suit_mask, penalty, high):
                    sheds += 1
            floor[0] = 1 if per_trick else on_table + sheds
            return
        own = hero & ((<uint64_t>1 << high) - 1)
        if not hero or own:  # the hero can lose the trick
            if per_trick:
                ceiling[0] = most - 1
                return
            own = (d.held[seat] if not hero else own) & penalty
            ceiling[0] = most - on_table - (1 if own else 0)
            return
        for i in range(n, 4):
            f = (d.leader + i) & 3
            if f == seat:
                continue
            if (hero & (~hero + 1)) <= (d.held[f] & suit_mask):
                return
            if _sheds_under(d.held[f], suit_mask, penalty, 52):
                sheds += 1
        floor[0] = 1 if per_trick else on_table + sheds + (1 if not hero & ~penalty else 0)

    cdef void _key(self, const DealState* d, uint64_t* key) noexcept nogil:
        cdef int suit
        cdef uint64_t code, out, low, owner
        for suit in range(4):
            code = 1
            out = SUIT[suit] & ~d.played
            while out:
                low = out & (~out + 1)
                if d.held[0] & low:
                    owner = 0
                elif d.held[1] & low:
                    owner = 1
                elif d.held[2] & low:
                    owner = 2
                else:
                    owner = 3
                code = code << 3 | owner << 1 | (1 if self.penalty & low else 0)
                out ^= low
            key[suit] = code
        key[0] |= <uint64_t>d.leader << 56 | <uint64_t>self.seat << 58

    cdef Entry* _bucket(self, const uint64_t* key) noexcept nogil:
        cdef uint64_t h = mix(key[0] ^ mix(key[1] ^ mix(key[2] ^ mix(key[3]))))
        return &self.table[(h & (BUCKETS - 1)) * WAYS]

    cdef Entry* _find(self, const uint64_t* key) noexcept nogil:
        """The entry holding ``key``, or NULL."""
        cdef Entry* e = self._bucket(key)
        cdef int i
        for i in range(WAYS):
            if (e[i].key[0] == key[0] and e[i].key[1] == key[1] and e[i].key[2] == key[2]
                    and e[i].key[3] == key[3]):
                return &e[i]
        return NULL

    cdef void _store(self, const uint64_t* key, int depth, int value, int alpha,
                     int beta, int move) noexcept nogil:
        cdef Entry* e = self._find(key)
        cdef Entry* bucket
        cdef int low, high, i
        if e == NULL:
            # A free entry, else the one that saves least: the fewest cards still out.
            bucket = self._bucket(key)
            e = &bucket[0]
            for i in range(WAYS):
                if bucket[i].key[0] == 0:
                    e = &bucket[i]
                    break
                if bucket[i].depth < e.depth:
                    e = &bucket[i]
            e.key[0], e.key[1], e.key[2], e.key[3] = key[0], key[1], key[2], key[3]
            e.low, e.high = 0, 13
            e.depth = <unsigned char>depth
        low, high = e.low, e.high
        if value <= alpha:
            if value < high:
                high = value
        elif value >= beta:
            if value > low:
                low = value
        else:
            low = high = value
        e.low, e.high = <signed char>low, <signed char>high
        e.move = <signed char>move

    cdef int _relative(self, const DealState* d, int card) noexcept nogil:
        """``_par_py.ParSearch._relative``."""
        cdef int suit = SUIT_OF[card]
        return suit << 4 | popcount(SUIT[suit] & ~d.played & ((<uint64_t>1 << card) - 1))

    cdef int _absolute(self, const DealState* d, int move) noexcept nogil:
        cdef uint64_t out = SUIT[move >> 4] & ~d.played
        cdef int i
        for i in range(move & 15):
            out &= out - 1
        return popcount((out & (~out + 1)) - 1) if out else -1

    cdef int _order(self, const DealState* d, int card, bint is_penalty, bint lost,
                    int top) noexcept nogil:
        """``_par_py.ParSearch._order``, told once per position (``_moves``) whether the hero
        has lost the trick already and which card wins it so far (``top``)."""
        cdef int rank = card % 13
        cdef bint wins
        if d.ntrick == 0:
            return -rank if self.hero_wants_units else rank
        if lost:
            # _par_py.ParSearch._order: the hero has lost this trick already
            if self.hero_wants_units:
                return rank
            return (100 if is_penalty else 0) - rank
        # trick_winner of the trick with the card: it beats the top card in its suit, or
        # as a trump on a top card that is none
        wins = ((SUIT_OF[card] == SUIT_OF[top] and card > top)
                or (SUIT_OF[card] == d.trump and SUIT_OF[top] != d.trump))
        if self.hero_wants_units:
            return rank if wins else 100 + rank
        if SUIT_OF[card] != SUIT_OF[d.trick[0]] and is_penalty:
            return -100 - rank
        return 100 - rank if wins else -rank

    cdef int _moves(self, const DealState* d, int* cards) noexcept nogil:
        """The legal cards, one per group of equivalent cards, best guesses first."""
        cdef uint64_t hand = d.held[to_play(d)]
        cdef uint64_t legal = deal_legal(d)
        cdef uint64_t out = ALL_CARDS & ~d.played
        cdef uint64_t mask = legal, low, nxt, above
        cdef int orders[13]
        cdef int n = 0, card, order, i, j, top = -1, winner
        cdef bint lost = False
        if d.ntrick:
            winner = trick_winner(d.trick, d.ntrick, d.trump)
            top = d.trick[winner]
            lost = (self.contract != SON_IKI and to_play(d) != self.seat
                    and (self.seat - d.leader) & 3 < d.ntrick
                    and (d.leader + winner) & 3 != self.seat)
        while mask:
            low = mask & (~mask + 1)
            card = popcount(low - 1)
            mask ^= low
            above = SUIT[SUIT_OF[card]] & ~((low << 1) - 1) & out
            if above:
                nxt = above & (~above + 1)
                if (hand & nxt and legal & nxt
                        and ((self.penalty & nxt) != 0) == ((self.penalty & low) != 0)):
                    continue
            order = self._order(d, card, (self.penalty & low) != 0, lost, top)
            # insertion by (order, card): the reference's sort
            i = n
            while i > 0 and orders[i - 1] > order:
                orders[i] = orders[i - 1]
                cards[i] = cards[i - 1]
                i -= 1
            orders[i] = order
            cards[i] = card
            n += 1
        return n

    cdef int _search(self, const DealState* d, int alpha, int beta) except? -9:
        cdef DealState child
        cdef uint64_t key[4]
        cdef Entry* e
        cdef int most, low, high, best, value, gained, i, j, n, hint = -1, first, best_card = -1
        cdef int original_alpha, original_beta, reach
        cdef uint64_t trumps
        cdef int cards[13]
        cdef bint maximizing, near, keyed = False
        self.nodes += 1
        if self.node_limit and self.nodes > self.node_limit:
            self.aborted = True
            return 0
        if self.deadline and self.nodes % EVERY == 0 and self.clock is not None:
            if self.clock() >= self.deadline:
                self.aborted = True
                return 0
        self.by_card[d.ntrick] += 1
        if d.end != END_PLAYING:
            return 0
        most = self._units_in_play(d)
        if most == 0 or beta <= 0:
            return 0
        if alpha >= most:
            return most
        # _par_py.ParSearch._search: the trick's bounds, when they could settle the window
        reach = 1 if self.contract == EL_ALMAZ or self.contract == SON_IKI else 4
        near = not self.hero_wants_units and (beta <= reach or alpha >= most - reach)
        if d.ntrick and near:
            self._in_trick(d, most, &low, &high)  # _par_py.ParSearch._in_trick
            if low >= beta:
                return low
            if high <= alpha:
                return high
        if d.ntrick == 0 and d.ntricks == 12:
            child = d[0]
            for i in range(4):
                deal_push(&child, low_card(child.held[to_play(&child)]))
            return child.units[self.seat] - d.units[self.seat]
        if d.ntrick == 0:
            if self.hero_wants_units:
                value = self._sure_tricks(d, d.leader)
                if d.leader == self.seat and (value >= beta or value == most):
                    return value
                if d.leader != self.seat and most - value <= alpha:
                    return most - value
                # _par_py.ParSearch._top_trumps: one trick for each of the highest trumps
                # still out held by one seat
                trumps = SUIT[self.trump] & ~d.played
                if trumps:
                    for i in range(4):
                        if d.held[i] & (<uint64_t>1 << high_card(trumps)):
                            break
                    value = 0
                    while trumps and d.held[i] & (<uint64_t>1 << high_card(trumps)):
                        value += 1
                        trumps ^= <uint64_t>1 << high_card(trumps)
                    if i == self.seat and value >= beta:
                        return value
                    if i != self.seat and most - value <= alpha:
                        return most - value
                value = self._trump_tricks(d, self.seat)  # _par_py.ParSearch._trump_tricks
                if value >= beta:
                    return value
                value = 0
                for i in range(1, 4):
                    low = self._trump_tricks(d, (self.seat + i) & 3)
                    if low > value:
                        value = low
                if most - value <= alpha:
                    return most - value
            else:
                value = self._ranked_out(d, most)
                if value >= 0:
                    return value
                if near:
                    self._this_trick(d, most, &low, &high)  # _par_py.ParSearch._this_trick
                    if low >= beta:
                        return low
                    if high <= alpha:
                        return high
            keyed = True
            self._key(d, key)
            self.tt_probes += 1
            e = self._find(key)
            if e != NULL:
                self.tt_hits += 1
                low, high, hint = e.low, e.high, e.move
                if low == high or low >= beta:
                    self.tt_cuts += 1
                    return low
                if high <= alpha:
                    self.tt_cuts += 1
                    return high
                if low > alpha:
                    alpha = low
                if high < beta:
                    beta = high
            self.searched_starts += 1
        maximizing = (to_play(d) == self.seat) == self.hero_wants_units
        original_alpha, original_beta = alpha, beta
        best = -1 if maximizing else 14
        n = self._moves(d, cards)
        if hint >= 0:
            first = self._absolute(d, hint)
            for i in range(n):
                if cards[i] == first:
                    j = i
                    while j > 0:
                        cards[j] = cards[j - 1]
                        j -= 1
                    cards[0] = first
                    break
        for i in range(n):
            child = d[0]
            deal_push(&child, cards[i])
            gained = child.units[self.seat] - d.units[self.seat]
            value = gained + self._search(&child, alpha - gained, beta - gained)
            if self.aborted:
                return 0
            if maximizing:
                if value > best:
                    best = value
                    best_card = cards[i]
                    if value > alpha:
                        alpha = value
            elif value < best:
                best = value
                best_card = cards[i]
                if value < beta:
                    beta = value
            if alpha >= beta:
                break
        if keyed:
            self._store(key, 52 - popcount(d.played), best, original_alpha, original_beta,
                        self._relative(d, best_card))
        return best
