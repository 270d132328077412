# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Par search, compiled: the twin of ``kingrec/analysis/_par_py.py`` over the one core.

The rules come from ``kingrec/_core.pxd`` (the legal set, the trick winner, the units, the
deal's end, all in ``deal_legal`` and ``deal_push``); this file adds only the search, which
is ``_par_py``'s line for line: the same moves in the same order, the same table with the
same keys, patterns and levels, so the two give the same values and node counts until the
pool of entries is full (the reference's lists never are).
"""

cimport cython
from libc.stdint cimport uint64_t, uintptr_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

from kingrec._core cimport (
    ALL_CARDS, EL_ALMAZ, END_PLAYING, F_HEART_LEAD_BAN, F_MUST_OVERTRUMP,
    F_RAISE_ON_TRUMP_LEAD, F_RIFKI_HEART_AFTER_KING, F_TRUMP_LEAD_BREAK, F_VOID_DISCARD,
    F_WITHHOLDING, HEARTS_MASK, KOZ, PENALTY, SON_IKI, SUIT, SUIT_OF,
    DealState, deal_legal, deal_push, high_card, highest_of_suit, low_card, popcount, to_play,
    trick_winner,
)

__all__ = ["CLOCK_EVERY", "TT_ENTRIES", "ParSearch"]

cdef enum:
    POOL = 1 << 20  # entries of 64 bytes at most: 64 MiB per deal searched (+ 8 MiB index)
    # The pool and its index start this small and double as the entries come: most
    # searches store far fewer than POOL, and a small index stays in the cache (a look
    # into a 2**20-chain index missed it twice per level: the chain's head, its entry).
    FIRST_POOL = 1 << 13
    EVERY = 4096  # nodes between two looks at the clock
    CANNOT = 99  # _par_py.ParSearch._exits_after_this_trick: the bound says nothing
    TABLE_EXITS_UNTIL = 9  # _par_py.TABLE_EXITS_UNTIL

# _par_py.LEVELS: an entry names at least this many top cards of each suit (all of a
# shorter one); it is kept in the bucket of its level, hashed on those cards.
cdef enum:
    NLEVELS = 5
    ALL_SUITS = 15
    ALL_SUITS_BITS = (1 << ALL_SUITS) - 1  # the index's bits of the level-0 profiles
cdef int LEVELS[NLEVELS]
LEVELS[:] = [0, 1, 2, 4, 13]


cdef uint64_t SUIT_MIX[4]
SUIT_MIX[:] = [0x9E3779B97F4A7C15ULL, 0xC2B2AE3D27D4EB4FULL, 0x165667B19E3779F9ULL,
               0xD6E8FEB86659FD93ULL]


cdef inline int bit_length(unsigned int x) noexcept nogil:
    return high_card(x) + 1 if x else 0


cdef inline int suit_count(uint64_t lengths, int suit) noexcept nogil:
    """The cards of ``suit`` out, from a key's lengths."""
    return ((lengths >> (16 * suit)) & 15) + ((lengths >> (16 * suit + 4)) & 15) + (
        (lengths >> (16 * suit + 8)) & 15) + ((lengths >> (16 * suit + 12)) & 15)


cdef inline void suit_counts(uint64_t lengths, int* counts) noexcept nogil:
    """``suit_count`` of every suit at once: the four hands' nibbles summed by pairs."""
    cdef uint64_t pairs = (lengths & 0x0F0F0F0F0F0F0F0FULL) + (lengths >> 4 & 0x0F0F0F0F0F0F0F0FULL)
    cdef uint64_t sums = (pairs & 0x00FF00FF00FF00FFULL) + (pairs >> 8 & 0x00FF00FF00FF00FFULL)
    counts[0] = <int>(sums & 0xFFFF)
    counts[1] = <int>(sums >> 16 & 0xFFFF)
    counts[2] = <int>(sums >> 32 & 0xFFFF)
    counts[3] = <int>(sums >> 48)


cdef inline int pattern_profile(uint64_t lengths, const unsigned char* shift) noexcept nogil:
    """``_par_py._profile``."""
    cdef int suit, count, profile = 0
    for suit in range(4):
        count = suit_count(lengths, suit)
        if count == 0 or count - shift[suit] // 3 >= 1:
            profile |= 1 << suit
    return profile


cdef inline int pattern_level(uint64_t lengths, const unsigned char* shift) noexcept nogil:
    """``_par_py._level``: the highest level whose cards a pattern names."""
    cdef int level, suit, count, keep
    for level in range(NLEVELS - 1, 0, -1):
        for suit in range(4):
            count = suit_count(lengths, suit)
            keep = LEVELS[level] if LEVELS[level] < count else count
            if count - shift[suit] // 3 < keep:
                break
        else:
            return level
    return 0

TT_ENTRIES = POOL - 1
CLOCK_EVERY = EVERY

ctypedef struct Entry:
    # The key (_par_py.ParSearch._key): each hand's length in each suit, 4 bits each (hand
    # h, suit s at 16 s + 4 h); and 1 | leader << 1 | hero << 3 | the penalty cards out of
    # suit s << 5 + 4 s | the level << 21 (0: an empty entry).
    uint64_t lengths
    uint64_t rest  # (| the level-0 profile << 24: where it is filed is part of the match)
    uint64_t top[4]  # the pattern (_par_py._relevant_ranks): per suit the code's top ...
    unsigned char shift[4]  # ... once shifted right by this many bits
    unsigned int next  # the next entry of its chain (0: none; entry 0 is never used)
    unsigned int cost  # the nodes spent finding what it holds (at most 2**32 - 1)
    signed char low
    signed char high
    signed char move  # the best move found, as a relative card (suit * 16 + place), or -1
    # (64 bytes, one cache line each in the pool: a look reads the first 56 of each entry
    # on its chains, so an entry across two lines cost two misses)


ctypedef struct KeptKey:
    # The key of the last trick start keyed after ``ntricks`` tricks (ParSearch._key): the
    # next trick start's is made from it by taking out the cards played between the two.
    uint64_t played
    uint64_t lengths  # key[0]
    uint64_t penalties  # the penalty cards out of suit s << 4 s (key[1] >> 5)
    uint64_t codes[4]


cdef inline uint64_t mix(uint64_t x) noexcept nogil:
    x ^= x >> 33
    x *= 0xff51afd7ed558ccdULL
    x ^= x >> 33
    return x


cdef inline uint64_t key_hash(const uint64_t* key) noexcept nogil:
    """A key's hash: where the index says what is filed for it."""
    return mix(key[0] ^ mix(key[1]))


cdef inline bint _sheds_under(uint64_t hand, uint64_t suit_mask, uint64_t penalty,
                              int high) noexcept nogil:
    """``_par_py._sheds_under``."""
    cdef uint64_t own = hand & suit_mask
    if not own:
        return (hand & penalty) != 0
    return (own & penalty & ((<uint64_t>1 << high) - 1)) != 0
cdef inline uint64_t winning_rank(const int* trick, int trump) noexcept nogil:
    """``_par_py._winning_rank`` of a complete trick."""
    cdef int winner = trick[trick_winner(trick, 4, trump)], rivals = 0, i
    for i in range(4):
        if SUIT_OF[trick[i]] == SUIT_OF[winner]:
            rivals += 1
    return <uint64_t>1 << winner if rivals > 1 else 0


cdef inline bint suit_ducks(uint64_t mine, uint64_t a, uint64_t b, uint64_t c,
                            uint64_t penalty, bint forced) noexcept nogil:
    """``_par_py._suit_ducks``: whether the hero holding ``mine`` of a suit loses every
    trick led in it, the three holding ``a``, ``b``, ``c`` of it."""
    cdef uint64_t others = a | b | c
    cdef bint exposed = (mine & penalty) != 0 and (mine & ~penalty) > (
        mine & penalty & (~(mine & penalty) + 1))
    if forced and exposed:
        return high_card(mine) < low_card(others)
    while mine and (a | b | c):  # round i, while the longest holding lasts (no popcount)
        if (mine & (~mine + 1)) > (others & (~others + 1)):
            return False
        mine &= mine - 1
        others &= others - 1
        a &= a - 1
        b &= b - 1
        c &= c - 1
    return True


cdef inline bint ducks_all(uint64_t hero, const uint64_t* hands, uint64_t penalty, bint forced,
                           uint64_t* read) noexcept nogil:
    """``_par_py._ducks_all``: whether the hero can lose every trick left, another seat on
    lead, the three holding ``hands``; then ``read`` gets the suits it compared."""
    cdef uint64_t mine, suits = 0, m
    cdef int suit
    for suit in range(4):
        m = SUIT[suit]
        mine = hero & m
        if not mine or not (hands[0] | hands[1] | hands[2]) & m:
            continue
        suits |= m
        if not suit_ducks(mine, hands[0] & m, hands[1] & m, hands[2] & m, penalty, forced):
            return False
    read[0] = suits
    return True


cdef inline bint leads_a_loser(uint64_t hero, const uint64_t* hands, uint64_t penalty,
                               bint forced, uint64_t trick_suit, bint banned) noexcept nogil:
    """``_par_py._leads_a_loser``."""
    cdef uint64_t mine, own, beater, under, read
    cdef int suit, k
    for suit in range(4):
        mine = hero & SUIT[suit]
        if not mine or (banned and SUIT[suit] == HEARTS_MASK and hero & ~HEARTS_MASK):
            continue
        beater = 0
        for k in range(3):
            own = hands[k] & SUIT[suit]
            if own and (own & (own - 1) or (SUIT[suit] != trick_suit and hands[k] & trick_suit)):
                if own & (~own + 1) > beater:
                    beater = own & (~own + 1)
        under = mine & (beater - 1) if beater else 0
        if under and ducks_all(hero ^ (<uint64_t>1 << high_card(under)), hands, penalty,
                               forced, &read):
            return True
    return False


cdef inline uint64_t failing_suits(uint64_t hero, const uint64_t* hands, uint64_t penalty,
                                   bint forced) noexcept nogil:
    """``_par_py._failing_suits``."""
    cdef uint64_t failing = 0, mine, m
    cdef int suit
    for suit in range(4):
        m = SUIT[suit]
        mine = hero & m
        if mine and (hands[0] | hands[1] | hands[2]) & m and not suit_ducks(
                mine, hands[0] & m, hands[1] & m, hands[2] & m, penalty, forced):
            failing |= m
    return failing


cdef inline uint64_t suits_of(uint64_t cards) noexcept nogil:
    """``_par_py._suits_of``."""
    cdef uint64_t out = 0
    cdef int suit
    for suit in range(4):
        if cards & SUIT[suit]:
            out |= SUIT[suit]
    return out


cdef inline uint64_t named_cards(const unsigned char* shift, uint64_t played) noexcept nogil:
    """``_par_py._named_cards``."""
    cdef uint64_t out, top, named = 0
    cdef int suit, i
    for suit in range(4):
        out = SUIT[suit] & ~played
        for i in range(popcount(out) - shift[suit] // 3):
            top = <uint64_t>1 << high_card(out)
            named |= top
            out ^= top
    return named


cdef inline uint64_t named_out(const unsigned char* shift, uint64_t played,
                               const int* counts) noexcept nogil:
    """``named_cards`` told each suit's cards out (``counts``): of a suit, the cards out but
    its ``shift // 3`` lowest, found by the shorter walk (the low cards taken off, or the
    named ones picked from the top)."""
    cdef uint64_t out, top, named = 0, mine
    cdef int suit, small, i
    for suit in range(4):
        small = shift[suit] // 3
        if small >= counts[suit]:
            continue
        out = SUIT[suit] & ~played
        if 2 * small <= counts[suit]:
            for i in range(small):
                out &= out - 1
            named |= out
        else:
            mine = 0
            for i in range(counts[suit] - small):
                top = <uint64_t>1 << high_card(out)
                mine |= top
                out ^= top
            named |= mine
    return named


cdef inline uint64_t relevant_ranks(const uint64_t* codes, uint64_t relevant, uint64_t played,
                                    uint64_t* top, unsigned char* shift) noexcept nogil:
    """``_par_py._relevant_ranks``: the pattern into ``top`` and ``shift``; the cards it
    names."""
    cdef uint64_t out, marked, code
    cdef int suit, count, named, alike
    cdef uint64_t bottom
    for suit in range(4):
        out = SUIT[suit] & ~played
        count = popcount(out)
        marked = relevant & out
        code = codes[suit]
        named = popcount(out & ~((marked & (~marked + 1)) - 1)) if marked else 0
        bottom = code & 1
        alike = 0
        while alike < count and (code >> (3 * alike)) & 1 == bottom:
            alike += 1
        if named < count - alike:
            named = count - alike
        while (0 < named < count and (code >> (3 * (count - named))) & 7
                == (code >> (3 * (count - named - 1))) & 7):
            named += 1
        shift[suit] = <unsigned char>(3 * (count - named))
        top[suit] = code >> shift[suit]
    return named_cards(shift, played)


# final: no subclass may override its methods, so Cython calls them directly rather than
# through the type's table of methods, and the C compiler may inline them (an indirect call
# a node for each of _moves, _order, _key, _find, ... and the bounds)
@cython.final
cdef class ParSearch:
    """Searches positions of one deal, for any hero seat (``_par_py.ParSearch``)."""

    cdef readonly int contract, trump, seat
    cdef readonly long flags
    cdef readonly unsigned long long nodes, tt_probes, tt_hits, tt_cuts, searched_starts
    cdef readonly unsigned long long passes  # _par_py.ParSearch.passes
    cdef uint64_t relevant  # _par_py.ParSearch.relevant
    cdef unsigned long long by_card[4]
    cdef bint hero_wants_units, aborted
    cdef uint64_t penalty
    cdef Entry* table  # the pool of entries: 1 .. used - 1 hold something, of capacity
    cdef void* block  # the pool's memory (the pool is it, aligned to a cache line)
    cdef unsigned int* chains  # the index: the first entry of each chain
    # by the hash of a key: what is filed for it, bit p for the level-0 profile p and bit
    # 16 + l for level l (a look skips the chains of the others: each costs a cache miss)
    cdef unsigned int* present
    cdef unsigned int used, pool, first, mask  # mask: the index's chains - 1
    cdef readonly unsigned int capacity  # the entries the pool has room for now
    cdef readonly unsigned long long sweeps  # times the pool was full and swept
    cdef KeptKey kept[13]  # by tricks completed: the last key made there (_key)
    cdef unsigned int kept_mask  # bit t: kept[t] holds a key of this units_left call
    cdef unsigned long long node_limit
    cdef long long deadline
    cdef object clock

    def __cinit__(self, int contract, int trump, long flags, unsigned int pool=POOL,
                  unsigned int first=FIRST_POOL):
        # ``pool``: the entries the table may hold (tests make it small to see it swept);
        # ``first``: the entries it starts with (tests make it small to see it grow)
        if not 2 <= pool <= POOL:
            raise ValueError(f"the pool holds 2 .. {POOL} entries")
        if not 2 <= first:
            raise ValueError("the pool starts with room for 2 entries or more")
        self.pool = pool
        self.first = first
        self.contract = contract
        self.trump = trump
        self.flags = flags
        self.seat = 0
        self.hero_wants_units = contract == KOZ
        self.penalty = PENALTY[contract] if 0 <= contract < 8 else 0
        self.table = NULL
        self.block = NULL
        self.chains = NULL
        self.present = NULL
        self.used = 1
        self.kept_mask = 0
        self.capacity = 0
        self.mask = 0
        memset(self.by_card, 0, sizeof(self.by_card))

    @property
    def nodes_by_card(self):
        """``_par_py.ParSearch.nodes_by_card``."""
        return [self.by_card[0], self.by_card[1], self.by_card[2], self.by_card[3]]

    def __dealloc__(self):
        free(self.block)
        free(self.chains)
        free(self.present)

    def units_left(self, int seat, held, int leader, trick, uint64_t played, int ntricks,
                   unsigned long long node_limit=0, long long deadline_ns=0, clock=None,
                   int guess=0, int floor=0, int ceiling=13):
        """The units ``seat`` is sure of from this position on, or -1 past the budget
        (``_par_py.ParSearch.units_left``)."""
        cdef DealState d
        cdef int i, n = len(trick)
        if not 0 <= seat <= 3 or not 0 <= leader <= 3 or n > 3:
            raise ValueError("seat and leader are 0..3, and a trick on the table has 0..3 cards")
        if not 0 <= floor <= ceiling:  # (a value below 0 would read as -1: out of budget)
            raise ValueError(f"the floor {floor} is not within 0 .. the ceiling {ceiling}")
        self.seat = seat
        if self.table == NULL and not self._grow():
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
        self.kept_mask = 0  # (the hands may be another deal's: no key made before is of use)
        if deadline_ns and clock is not None and clock() >= deadline_ns:
            return -1
        value = self._mtd(&d, guess, floor, ceiling)
        return -1 if self.aborted else value

    cdef int _mtd(self, const DealState* d, int guess, int floor, int ceiling) except? -9:
        """The value by null-window searches, clamped to ``floor`` .. ``ceiling``
        (``_par_py.ParSearch._mtd``)."""
        cdef int low = 0, high = self._units_in_play(d), target, least, most
        while True:
            least = low if low > floor else floor
            most = high if high < ceiling else ceiling
            if least >= most:
                break
            guess = least if guess < least else most if guess > most else guess
            target = guess + 1 if guess == least else guess
            guess = self._search(d, target - 1, target)
            if self.aborted:
                return 0
            self.passes += 1
            if guess < target:
                high = guess
            else:
                low = guess
        if low >= ceiling:
            return ceiling
        if high <= floor:
            return floor
        return low if low > floor else floor

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

    cdef bint _led_into_tops(self, const DealState* d) noexcept nogil:
        """``_par_py.ParSearch._led_into_tops``: whether the leader may lead into the hero's
        tops (every card of the hero's above all the others' cards of its suit)."""
        cdef int seat = self.seat, suit
        cdef uint64_t hero = d.held[seat], mine, theirs, suits = 0
        cdef uint64_t others = (d.held[(seat + 1) & 3] | d.held[(seat + 2) & 3]
                                | d.held[(seat + 3) & 3])
        if d.leader == seat:
            return False
        for suit in range(4):
            mine = hero & SUIT[suit]
            theirs = others & SUIT[suit]
            if mine:
                suits |= SUIT[suit]
                if theirs and low_card(mine) < high_card(theirs):
                    return False
        return (deal_legal(d) & suits) != 0

    cdef bint _ducks_every_lead(self, const DealState* d, uint64_t* read) noexcept nogil:
        """``_par_py.ParSearch._ducks_every_lead``: whether the hero can lose every trick
        left; then ``read`` gets the suits it compared."""
        cdef int seat = self.seat, suit, k, i, f, high
        cdef uint64_t hero = d.held[seat], penalty = self.penalty, suit_mask, beater, theirs
        cdef uint64_t under, lead, legal
        cdef uint64_t hands[3]
        cdef bint forced = (self.flags & (F_WITHHOLDING | F_VOID_DISCARD)) != 0, lost
        for k in range(3):
            hands[k] = d.held[(seat + 1 + k) & 3]
        if d.ntrick == 0:
            if d.leader != seat:
                return ducks_all(hero, hands, penalty, forced, read)
            legal = deal_legal(d)
            for suit in range(4):
                suit_mask = SUIT[suit]
                beater = 0
                for k in range(3):
                    theirs = hands[k] & suit_mask
                    if theirs & (~theirs + 1) > beater:
                        beater = theirs & (~theirs + 1)
                under = hero & legal & suit_mask & (beater - 1) if beater else 0
                if under:
                    lead = <uint64_t>1 << high_card(under)
                    if ducks_all(hero ^ lead, hands, penalty, forced, read):
                        read[0] |= suit_mask
                        return True
            return False
        suit_mask = SUIT[SUIT_OF[d.trick[0]]]
        if (seat - d.leader) & 3 < d.ntrick:  # the hero has played: it must have lost
            high = highest_of_suit(d.trick, d.ntrick, SUIT_OF[d.trick[0]])
            lost = d.trick[(seat - d.leader) & 3] != high
            for i in range(d.ntrick, 4):
                f = (d.leader + i) & 3
                theirs = d.held[f] & suit_mask
                if theirs & (~theirs + 1) > <uint64_t>1 << high:
                    lost = True
            if not lost or not ducks_all(hero, hands, penalty, forced, read):
                return False
        else:
            # _par_py: the hands as they were when the trick was led
            for i in range(d.ntrick):
                hands[((d.leader + i - seat) & 3) - 1] |= <uint64_t>1 << d.trick[i]
            if not ducks_all(hero, hands, penalty, forced, read):
                return False
        read[0] |= suit_mask
        return True

    cdef inline bint _exits_pay(self, const DealState* d, int alpha) noexcept nogil:
        """``_par_py.ParSearch._exits_pay``."""
        if self.contract == EL_ALMAZ or (self.contract == SON_IKI and d.ntricks >= 11):
            return alpha >= 1
        return True

    cdef inline int _trick_units(self, const DealState* d) noexcept nogil:
        """``_par_py.ParSearch._trick_units``."""
        if self.contract == EL_ALMAZ:
            return 1
        if self.contract == SON_IKI:
            return 1 if d.ntricks >= 11 else 0
        return -1

    cdef inline uint64_t _follow_choices(self, uint64_t hero, uint64_t suit_mask,
                                         uint64_t* asked) noexcept nogil:
        """``_par_py.ParSearch._follow_choices``: the hero's cards to a trick led in
        ``suit_mask`` for the exit ceilings; ``asked`` the card withholding may ask of it."""
        cdef uint64_t mine = hero & suit_mask, choices = hero, tops = 0
        cdef int k
        asked[0] = 0
        if mine:
            if self.flags & F_WITHHOLDING and mine & self.penalty:
                asked[0] = mine & self.penalty & (~(mine & self.penalty) + 1)
            return mine
        if self.flags & F_VOID_DISCARD:
            if hero & self.penalty:
                choices = hero & self.penalty
            elif self.flags & F_RIFKI_HEART_AFTER_KING and hero & HEARTS_MASK:
                choices = hero & HEARTS_MASK
        for k in range(4):
            if choices & SUIT[k]:
                tops |= <uint64_t>1 << high_card(choices & SUIT[k])
        return tops

    cdef int _exits_after_this_trick(self, const DealState* d, int most) noexcept nogil:
        """``_par_py.ParSearch._exits_after_this_trick``: a ceiling on the hero's units, or
        -1."""
        cdef int seat = self.seat, suit, k, best, worst = 0, per_trick, value
        cdef uint64_t hero = d.held[seat], penalty = self.penalty, legal
        cdef uint64_t mask, low, choices, asked
        cdef uint64_t hands[3]
        cdef bint banned = (self.flags & F_HEART_LEAD_BAN) != 0 and not d.played & HEARTS_MASK
        cdef bint forced = (self.flags & (F_WITHHOLDING | F_VOID_DISCARD)) != 0
        cdef uint64_t failing
        for k in range(3):
            hands[k] = d.held[(seat + 1 + k) & 3]
        failing = failing_suits(hero, hands, penalty, forced)
        if popcount(failing) > 13:
            return -1  # _par_py: two suits failing
        per_trick = self._trick_units(d)
        legal = deal_legal(d)
        if d.leader == seat:
            best = CANNOT
            mask = legal
            while mask:
                low = mask & (~mask + 1)
                mask ^= low
                value = self._exit_after(low, hero ^ low, 0, hands, hands, 3,
                                         SUIT[SUIT_OF[low_card(low)]], 0, failing, most,
                                         per_trick, banned)
                if value < best:
                    best = value
            return best if best < CANNOT else -1
        for suit in range(4):
            if not legal & SUIT[suit]:
                continue
            choices = self._follow_choices(hero, SUIT[suit], &asked)
            best = CANNOT
            mask = choices
            while mask:
                low = mask & (~mask + 1)
                mask ^= low
                value = self._exit_after(low, hero ^ low, 0, hands, hands, 3, SUIT[suit],
                                         0, failing, most, per_trick, banned)
                if value < best:
                    best = value
            if asked:
                value = self._exit_after(asked, hero ^ asked, 0, hands, hands, 3,
                                         SUIT[suit], 0, failing, most, per_trick, banned)
                if value > best:
                    best = value
            if best >= CANNOT:
                return -1
            if best > worst:
                worst = best
        return worst

    cdef int _exits_on_table(self, const DealState* d, int most, int alpha) noexcept nogil:
        """``_par_py.ParSearch._exits_after_the_trick_on_the_table``: a ceiling on the hero's
        units inside a trick, or -1."""
        cdef int seat = self.seat, k, i, n = 0, per_trick, on_table = 0, best, value
        cdef int place = (seat - d.leader) & 3
        cdef uint64_t hero = d.held[seat], penalty = self.penalty, failing
        cdef uint64_t suit_mask = SUIT[SUIT_OF[d.trick[0]]], high, choices, asked
        cdef uint64_t mask, low
        cdef uint64_t hands[3]
        cdef uint64_t to_come[3]
        cdef bint forced = (self.flags & (F_WITHHOLDING | F_VOID_DISCARD)) != 0
        cdef bint banned = (self.flags & F_HEART_LEAD_BAN) != 0 and not d.played & HEARTS_MASK
        per_trick = self._trick_units(d)
        for i in range(d.ntrick):
            if penalty >> d.trick[i] & 1:
                on_table += 1
        if (per_trick if per_trick >= 0 else on_table) > alpha:
            return -1
        high = <uint64_t>1 << highest_of_suit(d.trick, d.ntrick, SUIT_OF[d.trick[0]])
        for i in range(d.ntrick, 4):
            if i != place:
                to_come[n] = d.held[(d.leader + i) & 3]
                n += 1
        if place < d.ntrick:
            return -1  # _par_py: the hero's card is out
        for k in range(3):
            hands[k] = d.held[(seat + 1 + k) & 3]
        failing = failing_suits(hero, hands, penalty, forced)
        if popcount(failing) > 13:
            return -1
        choices = self._follow_choices(hero, suit_mask, &asked)
        best = CANNOT
        mask = choices
        while mask:
            low = mask & (~mask + 1)
            mask ^= low
            value = self._exit_after(low, hero ^ low, on_table, hands, to_come, n,
                                     suit_mask, high, failing, most, per_trick, banned)
            if value < best:
                best = value
        if asked:
            value = self._exit_after(asked, hero ^ asked, on_table, hands, to_come, n,
                                     suit_mask, high, failing, most, per_trick, banned)
            if value > best:
                best = value
        return best if best < CANNOT else -1

    cdef int _exit_after(self, uint64_t card, uint64_t rest, int units, const uint64_t* hands,
                         const uint64_t* to_come, int n, uint64_t suit_mask,
                         uint64_t high, uint64_t failing, int most, int per_trick,
                         bint banned) noexcept nogil:
        """``_par_py.ParSearch._exit_after`` (``n`` hands in ``to_come``; CANNOT: the bound
        says nothing)."""
        cdef int k
        cdef uint64_t own, read, penalty = self.penalty
        cdef bint forced = (self.flags & (F_WITHHOLDING | F_VOID_DISCARD)) != 0
        cdef bint loses
        if failing and not failing & card:
            return CANNOT
        if not ducks_all(rest, hands, penalty, forced, &read):
            return CANNOT
        loses = not card & suit_mask or card < high
        for k in range(n):
            own = to_come[k] & suit_mask
            if own & (~own + 1) > card:
                loses = True
        if loses:
            return 0  # it loses this trick, and every one after
        if not leads_a_loser(rest, hands, penalty, forced, suit_mask, banned):
            return CANNOT
        if per_trick >= 0:
            return per_trick
        if card & penalty:
            units += 1
        for k in range(n):
            own = to_come[k] & suit_mask if to_come[k] & suit_mask else to_come[k]
            if own & penalty:
                units += 1
        return units if units < most else most

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
                suit_mask = SUIT[SUIT_OF[low_card(low)]]
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
                suit_mask = SUIT[SUIT_OF[low_card(low)]]
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

    # -- the table: relevant ranks (_par_py.ParSearch, where the proof is) ---------------

    cdef void _key(self, const DealState* d, uint64_t* key, uint64_t* codes) noexcept nogil:
        """``_par_py.ParSearch._key``: key[0] the lengths, key[1] the rest (see Entry).

        A trick start's key is its parent trick start's (kept by tricks completed) with the
        four cards played between them taken out: a card's three bits leave its suit's code
        and its hand's length, and nothing else changes, since no card changes hands. Made
        card by card only where there is no such parent (the first trick start below a root
        inside a trick, or past the cards a kept key knows of)."""
        cdef unsigned int t = <unsigned int>d.ntricks
        cdef KeptKey alone
        cdef KeptKey* kept = &alone
        cdef KeptKey* parent = NULL
        if t < 13:
            kept = &self.kept[t]
            self.kept_mask |= (<unsigned int>1) << t
            if t and self.kept_mask >> (t - 1) & 1:
                parent = &self.kept[t - 1]
        if parent != NULL and not parent.played & ~d.played:
            self._key_after(parent, d.played, kept)
        else:
            self._key_whole(d, kept)
        key[0] = kept.lengths
        key[1] = 1 | <uint64_t>d.leader << 1 | <uint64_t>self.seat << 3 | kept.penalties << 5
        codes[0], codes[1], codes[2], codes[3] = (
            kept.codes[0], kept.codes[1], kept.codes[2], kept.codes[3])

    cdef void _key_after(self, const KeptKey* before, uint64_t played,
                         KeptKey* key) noexcept nogil:
        """``before``'s key with the cards played since taken out, into ``key``."""
        # (only cards: a bit past the deck's is no suit's, and the whole key reads none)
        cdef uint64_t gone = played & ~before.played & ALL_CARDS, out = ~before.played
        cdef uint64_t low, code, below
        cdef int card, suit, at
        key.played = played
        key.lengths = before.lengths
        key.penalties = before.penalties
        key.codes[0], key.codes[1], key.codes[2], key.codes[3] = (
            before.codes[0], before.codes[1], before.codes[2], before.codes[3])
        while gone:
            low = gone & (~gone + 1)
            gone ^= low
            card = low_card(low)
            suit = SUIT_OF[card]
            # the card's three bits: as many places up its suit's code as cards out below it
            at = 3 * popcount(out & SUIT[suit] & (low - 1))
            out ^= low
            code = key.codes[suit]
            below = code & ((<uint64_t>1 << at) - 1)
            key.lengths -= <uint64_t>1 << (16 * suit + 4 * ((code >> (at + 1)) & 3))
            key.penalties -= (code >> at & 1) << (4 * suit)
            key.codes[suit] = (code >> (at + 3)) << at | below

    cdef void _key_whole(self, const DealState* d, KeptKey* key) noexcept nogil:
        """The key made card by card, into ``key``."""
        cdef int suit
        cdef uint64_t code, out, top, owner, penalties
        key.played = d.played
        key.lengths = 0
        key.penalties = 0
        for suit in range(4):
            out = SUIT[suit] & ~d.played
            code = penalties = 0
            # the lengths and penalty cards counted card by card with the code
            while out:
                top = <uint64_t>1 << high_card(out)
                if d.held[0] & top:
                    owner = 0
                elif d.held[1] & top:
                    owner = 1
                elif d.held[2] & top:
                    owner = 2
                else:
                    owner = 3
                key.lengths += <uint64_t>1 << (16 * suit + 4 * owner)
                if self.penalty & top:
                    code = code << 3 | owner << 1 | 1
                    penalties += 1
                else:
                    code = code << 3 | owner << 1
                out ^= top
            key.penalties |= penalties << (4 * suit)
            key.codes[suit] = code

    cdef unsigned int _chain(self, const uint64_t* key, int level, int profile,
                             const uint64_t* codes) noexcept nogil:
        """``_par_py._filed``, hashed: where the entries of ``level`` (and ``profile`` at
        level 0) are; their chain is this hash & ``mask``."""
        cdef uint64_t h = key[1] | <uint64_t>level << 21 | <uint64_t>profile << 24
        cdef int suit, count, keep
        for suit in range(4):
            count = suit_count(key[0], suit)
            if level:
                keep = LEVELS[level] if LEVELS[level] < count else count
            else:
                keep = 1 if profile >> suit & 1 and count else 0
            # an odd multiplier per suit, so that the suits' tops do not cancel out
            h ^= (codes[suit] >> (3 * (count - keep))) * SUIT_MIX[suit]
        return <unsigned int>mix(key[0] ^ mix(h))

    cdef bint _find(self, const uint64_t* key, const uint64_t* codes, uint64_t played,
                    int alpha, int beta, int* low, int* high, int* move,
                    uint64_t* named) noexcept nogil:
        """``_par_py.ParSearch._find``: False when no entry matches.

        It walks only the levels and level-0 profiles the index says are filed for the key
        (bit 16 + l, bit p), in the reference's order (levels 4 .. 1, then the profiles
        from 0 up), and hashes each one's chain as ``_chain`` does from the suits' lengths
        worked out once."""
        cdef Entry* e
        cdef unsigned int i, filed = self.present[key_hash(key) & self.mask]
        cdef unsigned int levels = filed >> 17 & 15, profiles = filed & ALL_SUITS_BITS
        cdef int suit, level, small, fewest = 99, keep, profile
        cdef int counts[4]
        cdef uint64_t rest, h
        cdef bint found = False
        suit_counts(key[0], counts)
        while levels or profiles:
            if levels:
                level = high_card(levels) + 1  # (bit l - 1 of levels: level l)
                levels ^= (<unsigned int>1) << (level - 1)
                rest = key[1] | <uint64_t>level << 21 | <uint64_t>ALL_SUITS << 24
                h = rest
                for suit in range(4):
                    keep = LEVELS[level] if LEVELS[level] < counts[suit] else counts[suit]
                    h ^= (codes[suit] >> (3 * (counts[suit] - keep))) * SUIT_MIX[suit]
            else:
                profile = low_card(profiles)
                profiles &= profiles - 1
                rest = key[1] | <uint64_t>profile << 24
                h = rest
                for suit in range(4):
                    if profile >> suit & 1 and counts[suit]:
                        h ^= (codes[suit] >> (3 * (counts[suit] - 1))) * SUIT_MIX[suit]
            i = self.chains[<unsigned int>mix(key[0] ^ mix(h)) & self.mask]
            while i:
                e = &self.table[i]
                i = e.next
                if e.rest != rest or e.lengths != key[0]:
                    continue
                for suit in range(4):
                    if codes[suit] >> e.shift[suit] != e.top[suit]:
                        break
                else:
                    if not found:
                        found = True
                        low[0], high[0], named[0] = e.low, e.high, 0
                    # the best move of the entry nearest the position: the fewest small cards
                    small = e.shift[0] + e.shift[1] + e.shift[2] + e.shift[3]
                    if small < fewest:
                        fewest, move[0] = small, e.move
                    if e.low > low[0]:
                        low[0] = e.low
                    if e.high < high[0]:
                        high[0] = e.high
                    named[0] |= named_out(e.shift, played, counts)
                    if low[0] == high[0] or low[0] >= beta or high[0] <= alpha:
                        return True
        return found

    cdef bint _grow(self) noexcept nogil:
        """Double the pool (up to ``pool`` entries; the first time, make it) and its index;
        False when there is no memory for it (the pool is then as it was)."""
        cdef unsigned int capacity = self.first if self.capacity == 0 else 2 * self.capacity
        cdef unsigned int chains = 1
        cdef Entry* table
        cdef void* block
        cdef unsigned int* index
        if capacity > self.pool:
            capacity = self.pool
        while chains < capacity:
            chains <<= 1
        block = malloc(capacity * sizeof(Entry) + 64)
        if block == NULL:
            return False
        table = <Entry*>((<uintptr_t>block + 63) & ~(<uintptr_t>63))
        if self.capacity:
            memcpy(table, self.table, self.capacity * sizeof(Entry))
        memset(&table[self.capacity], 0, (capacity - self.capacity) * sizeof(Entry))
        free(self.block)
        self.block, self.table, self.capacity = block, table, capacity
        if chains - 1 != self.mask or self.chains == NULL:
            index = <unsigned int*>realloc(self.chains, chains * sizeof(unsigned int))
            if index == NULL:
                return False
            self.chains = index
            index = <unsigned int*>realloc(self.present, chains * sizeof(unsigned int))
            if index == NULL:
                return False
            self.present = index
            self.mask = chains - 1
            self._reindex()
        return True

    cdef void _reindex(self) noexcept nogil:
        """Make the index anew from the pool: each chain in the order of the pool (the
        order its entries were stored in), and what is filed for each key."""
        cdef unsigned int i, chain
        cdef uint64_t key[2]
        cdef uint64_t codes[4]
        cdef int level, profile, suit
        memset(self.chains, 0, (self.mask + 1) * sizeof(unsigned int))
        memset(self.present, 0, (self.mask + 1) * sizeof(unsigned int))
        i = self.used
        while i > 1:
            i -= 1
            key[0] = self.table[i].lengths
            key[1] = self.table[i].rest & ((1 << 21) - 1)
            level = (self.table[i].rest >> 21) & 7
            profile = (self.table[i].rest >> 24) & 15
            # its chain from the cards it names: _chain reads no card below them
            for suit in range(4):
                codes[suit] = self.table[i].top[suit] << self.table[i].shift[suit]
            chain = self._chain(key, level, profile, codes) & self.mask
            self.table[i].next = self.chains[chain]
            self.chains[chain] = i
            self.present[key_hash(key) & self.mask] |= 1 << (16 + level if level else profile)

    cdef void _sweep(self) noexcept nogil:
        """The pool is full: keep the costlier half of the entries (by the bit length of
        their cost), in their order, and forget the rest."""
        cdef unsigned int counts[34]
        cdef unsigned int i, kept = 1, total = 0
        cdef int cut = 0
        memset(counts, 0, sizeof(counts))
        for i in range(1, self.used):
            counts[bit_length(self.table[i].cost)] += 1
        # (at least one entry goes, so that a store after the sweep finds room)
        while cut < 33 and total + counts[cut] < max(1, (self.used - 1) // 2):
            total += counts[cut]
            cut += 1
        for i in range(1, self.used):
            if bit_length(self.table[i].cost) <= cut:
                continue
            self.table[kept] = self.table[i]
            kept += 1
        memset(&self.table[kept], 0, (self.used - kept) * sizeof(Entry))
        self.used = kept
        self._reindex()
        self.sweeps += 1

    cdef void _store(self, const uint64_t* key, const uint64_t* codes, const uint64_t* top,
                     const unsigned char* shift, int value, int alpha, int beta, int move,
                     unsigned long long cost) noexcept nogil:
        """``_par_py.ParSearch._store``."""
        cdef Entry* e = NULL
        cdef unsigned int i, last = 0, chain
        cdef int suit, level = pattern_level(key[0], shift), profile = ALL_SUITS
        cdef uint64_t rest
        if level == 0:
            profile = pattern_profile(key[0], shift)
        rest = key[1] | <uint64_t>level << 21 | <uint64_t>profile << 24
        chain = self._chain(key, level, profile, codes) & self.mask
        i = self.chains[chain]
        while i:
            if self.table[i].rest == rest and self.table[i].lengths == key[0]:
                for suit in range(4):
                    if (self.table[i].shift[suit] != shift[suit]
                            or self.table[i].top[suit] != top[suit]):
                        break
                else:
                    e = &self.table[i]
                    break
            last = i
            i = self.table[i].next
        if e == NULL:
            if self.used == self.capacity:
                # room: a bigger pool while it may grow (and there is memory), else forget
                if self.capacity == self.pool or not self._grow():
                    self._sweep()
                self._store(key, codes, top, shift, value, alpha, beta, move, cost)
                return
            e = &self.table[self.used]
            if last == 0:
                self.chains[chain] = self.used
            else:
                self.table[last].next = self.used
            self.present[key_hash(key) & self.mask] |= 1 << (16 + level if level else profile)
            self.used += 1
            e.lengths, e.rest, e.next = key[0], rest, 0
            for suit in range(4):
                e.top[suit], e.shift[suit] = top[suit], shift[suit]
            e.low, e.high, e.move, e.cost = 0, 13, -1, 0
        if value <= alpha:
            if value < e.high:
                e.high = <signed char>value
        elif value >= beta:
            if value > e.low:
                e.low = <signed char>value
        else:
            e.low = e.high = <signed char>value
        e.move = <signed char>move
        e.cost = <unsigned int>(e.cost + cost if e.cost + cost < 0xFFFFFFFFULL else 0xFFFFFFFFULL)

    cdef uint64_t _rule_ranks(self, const DealState* d) noexcept nogil:
        """``_par_py.ParSearch._rule_ranks``."""
        cdef int led, top
        cdef bint follows
        if d.ntrick == 0:
            return 0
        led = SUIT_OF[d.trick[0]]
        follows = (d.held[to_play(d)] & SUIT[led]) != 0
        top = -1
        if self.contract == KOZ:
            if follows and led == self.trump and self.flags & F_RAISE_ON_TRUMP_LEAD:
                top = highest_of_suit(d.trick, d.ntrick, led)
            elif not follows and self.flags & F_MUST_OVERTRUMP:
                top = highest_of_suit(d.trick, d.ntrick, self.trump)
        elif follows and self.flags & F_WITHHOLDING:
            top = highest_of_suit(d.trick, d.ntrick, led)
        return <uint64_t>1 << top if top >= 0 else 0

    cdef uint64_t _top_runs(self, const DealState* d, int holder) noexcept nogil:
        """``_par_py.ParSearch._top_runs``."""
        cdef uint64_t hand = d.held[holder], rest, top, runs = 0
        cdef int suit
        for suit in range(4):
            rest = SUIT[suit] & ~d.played
            while rest:
                top = <uint64_t>1 << high_card(rest)
                if not hand & top:
                    break
                runs |= top
                rest ^= top
        return runs

    cdef uint64_t _ranked_out_ranks(self, const DealState* d, bint below) noexcept nogil:
        """``_par_py.ParSearch._ranked_out_ranks``."""
        cdef int seat = self.seat, suit
        cdef uint64_t hero = d.held[seat], mine, theirs, lowest, named = 0
        cdef uint64_t others = (d.held[(seat + 1) & 3] | d.held[(seat + 2) & 3]
                                | d.held[(seat + 3) & 3])
        for suit in range(4):
            mine = hero & SUIT[suit]
            theirs = others & SUIT[suit]
            if mine and theirs:
                lowest = theirs if below else mine
                named |= lowest & (~lowest + 1)
        return named

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

    cdef inline int _order(self, const DealState* d, int card, bint is_penalty, bint lost,
                           int top) noexcept nogil:
        """``_par_py.ParSearch._order``, told once per position (``_moves``) whether the hero
        has lost the trick already and which card wins it so far (``top``)."""
        cdef int rank = card % 13, i
        cdef bint wins, clean
        if self.contract == SON_IKI and d.ntricks < 11:
            return -rank  # _par_py.ParSearch._order: son iki's early tricks, high first
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
        if (wins and not self.hero_wants_units and self.contract != EL_ALMAZ
                and self.contract != SON_IKI and to_play(d) == self.seat and not is_penalty):
            # _par_py.ParSearch._order: the hero takes a trick that carries no penalty card
            # so far, with its highest card that wins
            clean = True
            for i in range(d.ntrick):
                if self.penalty & (<uint64_t>1 << d.trick[i]):
                    clean = False
            if clean:
                return -300 - rank
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
            card = low_card(low)
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
        cdef uint64_t key[2]
        cdef uint64_t codes[4]
        cdef uint64_t top[4]
        cdef unsigned char shift[4]
        cdef uint64_t relevant, narrowed = 0
        cdef unsigned long long started = 0
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
        self.relevant = 0
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
            if low >= beta or high <= alpha:
                self.relevant = SUIT[SUIT_OF[d.trick[0]]]
            if low >= beta:
                return low
            if high <= alpha:
                return high
        if d.ntrick and not self.hero_wants_units and self._ducks_every_lead(d, &self.relevant):
            return 0  # _par_py.ParSearch._ducks_every_lead: every trick left lost
        if (d.ntrick and not self.hero_wants_units and ((self.seat - d.leader) & 3) > d.ntrick
                and d.ntricks <= TABLE_EXITS_UNTIL and self._exits_pay(d, alpha)):
            # _par_py: another seat to play before the hero, four tricks or more left
            value = self._exits_on_table(d, most, alpha)  # _par_py: this trick, then a loser
            if 0 <= value <= alpha:
                self.relevant = suits_of(d.held[self.seat]) | SUIT[SUIT_OF[d.trick[0]]]
                return value
        if d.ntrick == 0 and d.ntricks == 12:
            child = d[0]
            for i in range(4):
                cards[i] = low_card(child.held[to_play(&child)])
                deal_push(&child, cards[i])
            self.relevant = winning_rank(cards, d.trump)
            return child.units[self.seat] - d.units[self.seat]
        if d.ntrick == 0:
            self.relevant = ALL_CARDS  # _par_py: a bound that names nothing rests on all
            if self.hero_wants_units:
                value = self._sure_tricks(d, d.leader)
                if d.leader == self.seat and (value >= beta or value == most):
                    self.relevant = self._top_runs(d, d.leader)
                    return value
                if d.leader != self.seat and most - value <= alpha:
                    self.relevant = self._top_runs(d, d.leader)
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
                        self.relevant = self._top_runs(d, i)
                        return value
                    if i != self.seat and most - value <= alpha:
                        self.relevant = self._top_runs(d, i)
                        return most - value
                value = self._trump_tricks(d, self.seat)  # _par_py.ParSearch._trump_tricks
                if value >= beta:
                    self.relevant = SUIT[self.trump]
                    return value
                value = 0
                for i in range(1, 4):
                    low = self._trump_tricks(d, (self.seat + i) & 3)
                    if low > value:
                        value = low
                if most - value <= alpha:
                    self.relevant = SUIT[self.trump]
                    return most - value
            else:
                value = self._ranked_out(d, most)
                if value >= 0:
                    self.relevant = self._ranked_out_ranks(d, value == 0)
                    return value
                if self._led_into_tops(d):  # _par_py.ParSearch._led_into_tops
                    self.relevant = self._ranked_out_ranks(d, False)
                    return most
                if self._ducks_every_lead(d, &self.relevant):
                    return 0  # _par_py.ParSearch._ducks_every_lead: every trick left lost
                if near:
                    self._this_trick(d, most, &low, &high)  # _par_py.ParSearch._this_trick
                    if low >= beta or high <= alpha:
                        self.relevant = suits_of(deal_legal(d))
                    if low >= beta:
                        return low
                    if high <= alpha:
                        return high
                if self._exits_pay(d, alpha):
                    value = self._exits_after_this_trick(d, most)
                    if 0 <= value <= alpha:
                        self.relevant = suits_of(d.held[self.seat])  # _par_py: its suits
                        return value
            keyed = True
            self._key(d, key, codes)
            self.tt_probes += 1
            if self._find(key, codes, d.played, alpha, beta, &low, &high, &hint, &narrowed):
                self.tt_hits += 1
                self.relevant = narrowed
                if low == high or low >= beta:
                    self.tt_cuts += 1
                    return low
                if high <= alpha:
                    self.tt_cuts += 1
                    return high
                if low <= alpha and high >= beta:
                    narrowed = 0
                if low > alpha:
                    alpha = low
                if high < beta:
                    beta = high
            self.searched_starts += 1
            started = self.nodes
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
        relevant = narrowed | self._rule_ranks(d)  # _par_py.ParSearch._search
        for i in range(n):
            child = d[0]
            deal_push(&child, cards[i])
            gained = child.units[self.seat] - d.units[self.seat]
            value = gained + self._search(&child, alpha - gained, beta - gained)
            if self.aborted:
                return 0
            relevant |= self.relevant
            if d.ntrick == 3:
                relevant |= winning_rank(child.trick, d.trump)
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
            relevant = relevant_ranks(codes, relevant, d.played, top, shift)
            self._store(key, codes, top, shift, best, original_alpha, original_beta,
                        self._relative(d, best_card), self.nodes - started)
        self.relevant = relevant
        return best
