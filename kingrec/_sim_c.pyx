# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The match simulator's deals, compiled: the fast twin of ``kingrec._sim_py``.

``play_match`` plays every deal of one match exactly as the pure-Python twin does (the same
bots of ``kingrec.bots``, the same schedule) and returns the same ``PlayedDeal`` tuples;
``kingrec.simulate`` builds the ``Match``. Both twins draw from the same random streams: the
two ``random.Random`` generators of a match are handed over as their ``getstate()`` and this
module continues them with its own copy of CPython's Mersenne Twister and of the ``random``
module's algorithms (``_randbelow``, ``shuffle``, ``choice``, ``random``, ``gauss``,
``normalvariate``, ``lognormvariate``), using the same libm calls in the same order, so the
matches are byte-identical. ``tests/test_simulate.py`` holds the two twins to that.

The rules (legal cards, closing tricks, the schedule) are the compiled core's
(``_core.pxd``); the bots' card play is ported here from ``kingrec.bots``. Only the plain
match is compiled: abandoned matches and revokes stay with the reference simulator.
"""

from libc.math cimport cos, exp, log, sin, sqrt
from libc.stdint cimport int64_t, uint32_t, uint64_t

from kingrec._core cimport (
    ALL_CARDS, EL_ALMAZ, END_PLAYING, ERKEK, FIRST_HOLDER_OF_CARD, KIZ, KOZ, KUPA, RIFKI, SON_IKI,
    SUIT, CoreRules, DealState, Tally, above,
    below, deal_legal, deal_push, deal_scores, deal_start, high_card, low_card, popcount,
    tally_add, tally_allowed, tally_clear, trick_winner,
)

import random as _random

from kingrec._sim_py import PlayedDeal

__all__ = ["CONSTANTS", "play_match"]

ctypedef unsigned long long u64

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline int ksim_bit_length(unsigned int x) {
        unsigned long i; if (!x) return 0; _BitScanReverse(&i, x); return (int)i + 1;
    }
    #else
    static inline int ksim_bit_length(unsigned int x) { return x ? 32 - __builtin_clz(x) : 0; }
    #endif
    """
    int bit_length "ksim_bit_length"(unsigned int x) nogil

cdef enum:
    HEARTS = 2
    JACK = 9
    QUEEN = 10
    KING = 11
    ACE = 12
    RANKS = 0x1FFF
    KING_OF_HEARTS = 37

    MT_N = 624
    MT_M = 397

# The bots' constants, for the test that holds them to kingrec.cards and kingrec.bots.
CONSTANTS = {
    "HEARTS": HEARTS, "JACK": JACK, "QUEEN": QUEEN, "KING": KING, "ACE": ACE,
    "KING_OF_HEARTS": KING_OF_HEARTS,
}

cdef double NV_MAGICCONST = _random.NV_MAGICCONST
cdef double TWOPI = _random.TWOPI

# kingrec.bots._RAW_MEAN, by contract number.
cdef double RAW_MEAN[8]
RAW_MEAN[:] = [0.0, 3.59, 1.90, 2.10, 1.40, 0.83, 0.244, 0.50]
CONSTANTS["RAW_MEAN"] = [RAW_MEAN[i] for i in range(8)]


# -- CPython's random.Random ----------------------------------------------------------

cdef struct MT:
    uint32_t state[MT_N]
    int index
    bint has_gauss
    double gauss_next


cdef int mt_load(MT* mt, object state) except -1:
    """Take over a ``random.Random().getstate()``."""
    version, internal, gauss_next = state
    if version != 3 or len(internal) != MT_N + 1:
        raise ValueError("unsupported random.Random state")
    cdef int i
    for i in range(MT_N):
        mt.state[i] = <uint32_t>internal[i]
    mt.index = internal[MT_N]
    mt.has_gauss = gauss_next is not None
    mt.gauss_next = gauss_next if gauss_next is not None else 0.0
    return 0


cdef uint32_t genrand(MT* mt) noexcept nogil:
    """``genrand_uint32`` of CPython's ``_randommodule.c``."""
    cdef uint32_t y
    cdef uint32_t* s = mt.state
    cdef int kk
    if mt.index >= MT_N:
        for kk in range(MT_N - MT_M):
            y = (s[kk] & 0x80000000U) | (s[kk + 1] & 0x7FFFFFFFU)
            s[kk] = s[kk + MT_M] ^ (y >> 1) ^ (0x9908B0DFU if y & 1 else 0U)
        for kk in range(MT_N - MT_M, MT_N - 1):
            y = (s[kk] & 0x80000000U) | (s[kk + 1] & 0x7FFFFFFFU)
            s[kk] = s[kk + (MT_M - MT_N)] ^ (y >> 1) ^ (0x9908B0DFU if y & 1 else 0U)
        y = (s[MT_N - 1] & 0x80000000U) | (s[0] & 0x7FFFFFFFU)
        s[MT_N - 1] = s[MT_M - 1] ^ (y >> 1) ^ (0x9908B0DFU if y & 1 else 0U)
        mt.index = 0
    y = s[mt.index]
    mt.index += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680U
    y ^= (y << 15) & 0xEFC60000U
    y ^= y >> 18
    return y


cdef double rnd(MT* mt) noexcept nogil:
    """``Random.random()``."""
    cdef uint32_t a = genrand(mt) >> 5
    cdef uint32_t b = genrand(mt) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


cdef int randbelow(MT* mt, int n) noexcept nogil:
    """``Random._randbelow(n)`` for 0 < n < 2**31 (``_randbelow_with_getrandbits``)."""
    cdef int k = bit_length(<unsigned int>n)
    cdef uint32_t r = genrand(mt) >> (32 - k)
    while r >= <uint32_t>n:
        r = genrand(mt) >> (32 - k)
    return <int>r


cdef double normalvariate(MT* mt, double mu, double sigma) noexcept nogil:
    cdef double u1, u2, z, zz
    while True:
        u1 = rnd(mt)
        u2 = 1.0 - rnd(mt)
        z = NV_MAGICCONST * (u1 - 0.5) / u2
        zz = z * z / 4.0
        if zz <= -log(u2):
            break
    return mu + z * sigma


cdef double gauss(MT* mt, double mu, double sigma) noexcept nogil:
    cdef double z, x2pi, g2rad
    if mt.has_gauss:
        z = mt.gauss_next
        mt.has_gauss = False
    else:
        x2pi = rnd(mt) * TWOPI
        g2rad = sqrt(-2.0 * log(1.0 - rnd(mt)))
        z = cos(x2pi) * g2rad
        mt.gauss_next = sin(x2pi) * g2rad
        mt.has_gauss = True
    return mu + z * sigma




# -- the bots' card play (as kingrec.bots) ---------------------------------------------

cdef inline int suit_length(u64 hand, int card) noexcept nogil:
    return popcount(hand & SUIT[card // 13])


cdef int best(int* scores, int* cards, int n, MT* rng) noexcept nogil:
    """``bots._best``: the card with the highest score, the rng breaking ties."""
    cdef int top = scores[0], i, nties = 0
    cdef int ties[13]
    for i in range(1, n):
        if scores[i] > top:
            top = scores[i]
    for i in range(n):
        if scores[i] == top:
            ties[nties] = cards[i]
            nties += 1
    if nties == 1:
        return ties[0]
    return ties[randbelow(rng, nties)]


cdef inline u64 outstanding(DealState* d, u64 hand) noexcept nogil:
    cdef u64 out = ALL_CARDS & ~d.played & ~hand
    cdef int i
    for i in range(d.ntrick):
        out &= ~(1ULL << d.trick[i])
    return out


cdef int shed_high(u64 legal, MT* rng) noexcept nogil:
    cdef int scores[13]
    cdef int cards[13]
    cdef int n = 0, card
    while legal:
        card = low_card(legal)
        legal &= legal - 1
        scores[n] = card % 13
        cards[n] = card
        n += 1
    return best(scores, cards, n, rng)


cdef int discard(u64 hand, u64 legal, u64 penalty, MT* rng) noexcept nogil:
    cdef int scores[13]
    cdef int cards[13]
    cdef int n = 0, card
    while legal:
        card = low_card(legal)
        legal &= legal - 1
        scores[n] = 500 * <int>(penalty >> card & 1) + 10 * (card % 13) - 3 * suit_length(hand, card)
        cards[n] = card
        n += 1
    return best(scores, cards, n, rng)


cdef int lead_low(DealState* d, u64 hand, u64 legal, u64 penalty, MT* rng) noexcept nogil:
    cdef u64 out = outstanding(d, hand)
    cdef int scores[13]
    cdef int cards[13]
    cdef int n = 0, card, danger
    while legal:
        card = low_card(legal)
        legal &= legal - 1
        danger = 2 * popcount(out & below(card)) + suit_length(hand, card)
        if not out & above(card):  # a sure winner
            danger += 100 + 50 * <int>(penalty >> card & 1)
        scores[n] = -danger
        cards[n] = card
        n += 1
    return best(scores, cards, n, rng)


cdef int play_penalty(DealState* d, u64 legal, MT* rng) noexcept nogil:
    cdef u64 hand = d.held[(d.leader + d.ntrick) % 4]
    cdef u64 penalty = d.penalty
    cdef u64 follow, below_top, give, harmless
    cdef int top
    if d.ntrick == 0:
        return lead_low(d, hand, legal, penalty, rng)
    follow = legal & SUIT[d.trick[0] // 13]
    if not follow:
        return discard(hand, legal, penalty, rng)
    top = d.trick[trick_winner(d.trick, d.ntrick, -1)]
    below_top = follow & ((1ULL << top) - 1)
    if below_top:
        give = below_top & penalty
        return high_card(give if give else below_top)
    harmless = follow & ~penalty
    if d.ntrick == 3:
        return high_card(harmless if harmless else follow)
    return low_card(harmless if harmless else follow)


cdef int lead_koz(u64 hand, u64 legal, u64 trumps, u64 out, MT* rng) noexcept nogil:
    cdef u64 masters = 0, side_masters = 0, rest, side
    cdef int scores[13]
    cdef int cards[13]
    cdef int n = 0, card
    rest = legal
    while rest:
        card = low_card(rest)
        rest &= rest - 1
        if not out & above(card):
            masters |= 1ULL << card
    if masters & trumps and popcount(hand & trumps) >= popcount(out & trumps):
        return high_card(masters & trumps)  # draw trumps
    rest = masters & ~trumps
    while rest:
        card = low_card(rest)
        rest &= rest - 1
        if not out & trumps or popcount(out & SUIT[card // 13]) >= 2:
            side_masters |= 1ULL << card
    if side_masters:
        while side_masters:
            card = low_card(side_masters)
            side_masters &= side_masters - 1
            scores[n] = -(card % 13)
            cards[n] = card
            n += 1
        return best(scores, cards, n, rng)
    side = legal & ~trumps
    if side:
        while side:
            card = low_card(side)
            side &= side - 1
            scores[n] = -(20 * suit_length(hand, card) + card % 13)
            cards[n] = card
            n += 1
        return best(scores, cards, n, rng)
    return high_card(masters) if masters else low_card(legal)


cdef int play_koz(DealState* d, u64 legal, MT* rng) noexcept nogil:
    cdef u64 hand = d.held[(d.leader + d.ntrick) % 4]
    cdef int trump = d.trump
    cdef u64 trumps = SUIT[trump]
    cdef u64 out = outstanding(d, hand)
    cdef u64 beaters, sure, rest, side
    cdef int win, card, lowest
    cdef int scores[13]
    cdef int cards[13]
    cdef int n = 0
    if d.ntrick == 0:
        return lead_koz(hand, legal, trumps, out, rng)
    win = d.trick[trick_winner(d.trick, d.ntrick, trump)]
    beaters = legal & above(win)
    if win // 13 != trump:
        beaters |= legal & trumps
    if beaters:
        if d.ntrick < 3:
            # Not last: prefer a card nobody left can beat.
            sure = 0
            rest = beaters
            while rest:
                card = low_card(rest)
                rest &= rest - 1
                if not out & above(card) and (
                    card // 13 == trump or not out & trumps or out & SUIT[card // 13]
                ):
                    sure |= 1ULL << card
            if sure:
                return low_card(sure)
        return low_card(beaters & ~trumps if beaters & ~trumps else beaters)
    side = legal & ~trumps
    if side:
        lowest = 13
        rest = side
        while rest:
            card = low_card(rest)
            rest &= rest - 1
            if card % 13 < lowest:
                lowest = card % 13
        while side:
            card = low_card(side)
            side &= side - 1
            if card % 13 == lowest:
                scores[n] = -suit_length(hand, card)
                cards[n] = card
                n += 1
        return best(scores, cards, n, rng)
    return low_card(legal)


cdef int choose_play(DealState* d, u64 legal, MT* rng) noexcept nogil:
    if not legal & (legal - 1):
        return low_card(legal)
    if d.contract == KOZ:
        return play_koz(d, legal, rng)
    if d.contract == SON_IKI and d.ntricks < 11:
        return shed_high(legal, rng)
    return play_penalty(d, legal, rng)


# -- contracts and trumps (as kingrec.bots) --------------------------------------------

cdef void suit_key(u64 hand, int suit, int* length, int* strength) noexcept nogil:
    cdef u64 ranks = hand >> (13 * suit) & RANKS
    cdef int r, total = 0
    for r in range(13):
        if ranks >> r & 1:
            total += (r + 1) * (r + 1)
    length[0] = popcount(ranks)
    strength[0] = total


cdef int choose_trump(u64 hand, MT* rng) noexcept nogil:
    cdef int lengths[4]
    cdef int strengths[4]
    cdef int ties[4]
    cdef int s, top = 0, nties = 0
    for s in range(4):
        suit_key(hand, s, &lengths[s], &strengths[s])
        if lengths[s] > lengths[top] or (
            lengths[s] == lengths[top] and strengths[s] > strengths[top]
        ):
            top = s
    for s in range(4):
        if lengths[s] == lengths[top] and strengths[s] == strengths[top]:
            ties[nties] = s
            nties += 1
    if nties == 1:
        return ties[0]
    return ties[randbelow(rng, nties)]


cdef inline double table3(int i, double a, double b, double c, double rest) noexcept nogil:
    if i == 0:
        return a
    if i == 1:
        return b
    if i == 2:
        return c
    return rest


cdef void estimates(u64 hand, double* est) noexcept nogil:
    """``bots._estimates``, operation for operation (the float results must be equal)."""
    cdef int suits[4]
    cdef int lengths[4]
    cdef int s, r, n, ranks, lows = 0, highs = 0, below_j, guards, trump
    cdef double tricks_nt = 0.0, koz = 0.0, kupa, erkek, kiz, rifki, son_iki, x
    cdef int klen, kstr, tlen = -1, tstr = -1
    for s in range(4):
        suits[s] = <int>(hand >> (13 * s) & RANKS)
        lengths[s] = popcount(suits[s])
    for s in range(4):
        ranks = suits[s]
        n = lengths[s]
        if ranks >> ACE & 1:
            tricks_nt += 1.0
        if ranks >> KING & 1:
            tricks_nt += 0.75 if n >= 2 else 0.35
        if ranks >> QUEEN & 1:
            tricks_nt += 0.45 if n >= 3 else 0.2
        if ranks >> JACK & 1:
            tricks_nt += 0.2 if n >= 4 else 0.05
        if n > 4:
            tricks_nt += 0.25 * <double>(n - 4) * <double>popcount(ranks >> 8) / 5.0
    for s in range(4):
        lows += popcount(suits[s] & 0x1F)
    x = tricks_nt - 0.1 * <double>lows
    tricks_nt = x if x > 0.0 else 0.0

    # The suit this hand would name: longest, then strongest, then the lowest suit.
    trump = 0
    for s in range(4):
        suit_key(hand, s, &klen, &kstr)
        if klen > tlen or (klen == tlen and kstr > tstr):
            trump = s
            tlen = klen
            tstr = kstr
    for s in range(4):
        ranks = suits[s]
        n = lengths[s]
        if s == trump:
            koz += <double>(ranks >> ACE & 1) + 0.8 * <double>(ranks >> KING & 1 and n >= 2)
            koz += 0.5 * <double>(ranks >> QUEEN & 1 and n >= 3) + 0.9 * <double>(
                n - 3 if n > 3 else 0
            )
        else:
            koz += 0.9 * <double>(ranks >> ACE & 1) + 0.5 * <double>(ranks >> KING & 1 and n >= 2)
            if n <= 1 and lengths[trump] >= 3:
                koz += 0.6 - 0.3 * <double>n
    kupa = 0.8 * tricks_nt
    for r in range(13):
        if suits[HEARTS] >> r & 1:
            kupa += 0.5 if r >= JACK else (0.2 if r >= 5 else -0.1)

    erkek = 0.45 * tricks_nt
    kiz = 0.2 * tricks_nt
    for s in range(4):
        ranks = suits[s]
        below_j = popcount(ranks & ((1 << JACK) - 1))
        if ranks >> KING & 1:
            erkek += table3(below_j, 0.7, 0.45, 0.3, 0.2)
        if ranks >> JACK & 1:
            erkek += table3(below_j, 0.5, 0.3, 0.15, 0.15)
        if ranks >> QUEEN & 1:
            guards = popcount(ranks & ((1 << QUEEN) - 1))
            kiz += table3(guards, 0.75, 0.5, 0.3, 0.15)
        else:
            kiz += 0.1 * <double>((ranks >> KING & 1) + (ranks >> ACE & 1))

    if hand >> KING_OF_HEARTS & 1:
        guards = popcount(suits[HEARTS] & ((1 << KING) - 1))
        rifki = table3(guards, 0.85, 0.6, 0.4, 0.25)
    else:
        rifki = (
            0.1
            + 0.15 * <double>(suits[HEARTS] >> ACE & 1)
            + 0.04 * tricks_nt
            - 0.05 * <double>(lengths[HEARTS] <= 1)
        )

    for s in range(4):
        highs += popcount(suits[s] >> QUEEN)
    x = 0.5 + 0.07 * <double>(highs - 3) - 0.06 * <double>(lows - 5)
    x = x if x > 0.0 else 0.0
    son_iki = x if x < 2.0 else 2.0

    est[KOZ] = koz
    est[EL_ALMAZ] = tricks_nt
    est[KUPA] = kupa
    est[ERKEK] = erkek
    est[KIZ] = kiz
    est[RIFKI] = rifki
    est[SON_IKI] = son_iki


cdef int choose_contract(u64 hand, int* options, int n, const int64_t* unit,
                         MT* rng) noexcept nogil:
    """``bots.choose_contract`` among ``options`` (sorted, distinct, n >= 1)."""
    cdef double est[8]
    cdef double score, top = 0.0
    cdef int i, c, chosen = -1
    if n == 1:
        return options[0]
    estimates(hand, est)
    for i in range(n):
        c = options[i]
        score = <double>unit[c] * (est[c] - RAW_MEAN[c]) + gauss(rng, 0.0, 20.0)
        # max() over (score, contract) tuples: a tie goes to the higher contract.
        if chosen < 0 or score > top or (score == top and c > chosen):
            top = score
            chosen = c
    return chosen


# -- the think-time clock (as _sim_py.Clock) -----------------------------------------

cdef long long clock_play(MT* clock, long long limit, int choices, bint* auto) noexcept nogil:
    cdef double x
    auto[0] = False
    if limit > 0 and rnd(clock) < 0.004:
        auto[0] = True
        return limit
    if choices == 1:
        x = <double>(120 + randbelow(clock, 781))
    else:
        x = exp(normalvariate(clock, 6.9 + 0.08 * <double>(choices if choices < 8 else 8), 0.65))
    # min(int(x), limit) without overflowing for a huge x.
    return limit if x >= limit else <long long>x


cdef long long clock_trump(MT* clock, long long limit) noexcept nogil:
    cdef double x = exp(normalvariate(clock, 8.0, 0.5))
    return limit if x >= limit else <long long>x


# -- one match ---------------------------------------------------------------------------

cdef bytes deal_hands(MT* rng):
    """``_sim_py.deal_hands``: shuffle the deck, each hand sorted."""
    cdef int deck[52]
    cdef unsigned char out[52]
    cdef int i, j, t, s
    cdef u64 mask
    for i in range(52):
        deck[i] = i
    for i in range(51, 0, -1):
        j = randbelow(rng, i + 1)
        t = deck[i]
        deck[i] = deck[j]
        deck[j] = t
    for s in range(4):
        mask = 0
        for i in range(13 * s, 13 * s + 13):
            mask |= 1ULL << deck[i]
        i = 13 * s
        while mask:
            out[i] = <unsigned char>low_card(mask)
            mask &= mask - 1
            i += 1
    return bytes(out[:52])


cdef class _Rules:
    """A ruleset as the core reads it (``Ruleset.core_params``), converted once."""

    cdef CoreRules r

    def __init__(self, dict params):
        self.r = params


_RULES_CACHE = {}


cdef _Rules _rules_of(object rules):
    found = _RULES_CACHE.get(rules)
    if found is None:
        if len(_RULES_CACHE) >= 64:
            _RULES_CACHE.clear()  # a bound on memory; runs use a handful of rulesets
        found = _RULES_CACHE[rules] = _Rules(rules.core_params())
    return found


def play_match(object rules, object rng_state, object clock_state, int first):
    """Play every deal of one plain match: a ``PlayedDeal`` per deal, as ``_sim_py``.

    ``rng_state`` and ``clock_state`` are ``getstate()`` of the match's rng and think-time
    rng (``clock_state`` None: no think times); ``first`` is the first declarer by lot (a
    HOLDER_OF_CARD ruleset looks at deal 1's hands instead).
    """
    cdef MT rng
    cdef MT clock
    cdef _Rules params = _rules_of(rules)
    cdef bint timed = clock_state is not None
    mt_load(&rng, rng_state)
    if timed:
        mt_load(&clock, clock_state)
    return _play_deals(&params.r, &rng, &clock, timed, first)


cdef list _play_deals(const CoreRules* r, MT* rng_p, MT* clock_p, bint timed, int first):
    cdef DealState d
    cdef Tally tally
    cdef int options[7]
    cdef int64_t scores[4]
    cdef int number, declarer, contract, trump, i, n, card
    cdef long long ms, trump_ms
    cdef bint was_auto
    cdef u64 legal, hand_mask
    cdef bytes hands
    cdef const unsigned char* hp
    cdef unsigned char plays[52]
    cdef list think, auto
    cdef list out = []
    tally_clear(&tally)
    for number in range(1, r.deal_count + 1):
        hands = deal_hands(rng_p)
        hp = hands
        if number == 1 and r.first_declarer == FIRST_HOLDER_OF_CARD:
            for i in range(52):
                if hp[i] == r.first_card:
                    first = i // 13
                    break
        declarer = (first + number - 1) % 4
        hand_mask = 0
        for i in range(13 * declarer, 13 * declarer + 13):
            hand_mask |= 1ULL << hp[i]
        n = tally_allowed(&tally, r, declarer, number, options)
        contract = choose_contract(hand_mask, options, n, r.unit, rng_p)
        trump = choose_trump(hand_mask, rng_p) if contract == KOZ else -1

        deal_start(&d, hp, declarer, contract, trump, r.flags[contract])
        think = []
        auto = []
        while d.end == END_PLAYING:
            legal = deal_legal(&d)
            card = choose_play(&d, legal, rng_p)
            if timed:
                ms = clock_play(clock_p, r.play_timeout, popcount(legal), &was_auto)
                think.append(ms)
                if was_auto:
                    auto.append(d.nplays)
            plays[d.nplays] = <unsigned char>card
            deal_push(&d, card)
        trump_ms = clock_trump(clock_p, r.trump_timeout) if timed and contract == KOZ else -1
        tally_add(&tally, declarer, contract)
        deal_scores(&d, r, scores)
        out.append(PlayedDeal(
            declarer,
            contract,
            trump,
            hands,
            bytes(plays[:d.nplays]),
            think,
            auto,
            d.end,
            [scores[0], scores[1], scores[2], scores[3]],
            trump_ms,
        ))
    return out
