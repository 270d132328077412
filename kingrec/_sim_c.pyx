# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The match simulator's deal loop and bots, compiled: the fast twin of ``kingrec.simulate``.

``play_match`` plays every deal of one match exactly as the pure-Python simulator does
(``kingrec.simulate._deal`` with ``kingrec.bots``) and returns what the record needs; the
Python side still builds the ``Match`` message. Both twins draw from the same random
streams: the two ``random.Random`` generators of a match are handed over as their
``getstate()`` and this module continues them with its own copy of CPython's Mersenne
Twister and of the ``random`` module's algorithms (``_randbelow``, ``shuffle``, ``choice``,
``random``, ``gauss``, ``normalvariate``, ``lognormvariate``), using the same libm calls in
the same order, so the matches are byte-identical. ``tests/test_sim_twins.py`` holds the
two twins to that.

The rules engine's legal-card filters are repeated here on C masks (the same filters as
``_engine_py.judge_play``); so is the koz/penalty card play of ``kingrec.bots``. Only the
plain match is compiled: abandoned matches and revokes stay with the reference simulator.
"""

from libc.math cimport cos, exp, log, sin, sqrt
from libc.stdint cimport uint32_t, uint64_t
from libc.stdlib cimport free, malloc

import random as _random

__all__ = ["CONSTANTS", "play_match"]

ctypedef unsigned long long u64

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline int ksim_popcount(unsigned long long x) {
        int n = 0;
        while (x) { x &= x - 1; n++; }
        return n;
    }
    static __inline int ksim_low(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i;
    }
    static __inline int ksim_high(unsigned long long x) {
        unsigned long i; _BitScanReverse64(&i, x); return (int)i;
    }
    static __inline int ksim_bit_length(unsigned int x) {
        unsigned long i; if (!x) return 0; _BitScanReverse(&i, x); return (int)i + 1;
    }
    #else
    static inline int ksim_popcount(unsigned long long x) { return __builtin_popcountll(x); }
    static inline int ksim_low(unsigned long long x) { return __builtin_ctzll(x); }
    static inline int ksim_high(unsigned long long x) { return 63 - __builtin_clzll(x); }
    static inline int ksim_bit_length(unsigned int x) { return x ? 32 - __builtin_clz(x) : 0; }
    #endif
    """
    int popcount "ksim_popcount"(u64 x) nogil
    int low_card "ksim_low"(u64 x) nogil
    int high_card "ksim_high"(u64 x) nogil
    int bit_length "ksim_bit_length"(unsigned int x) nogil

# Contracts (kingrec.contracts.Contract), engine flags (kingrec.rules.F_*) and deal ends
# (kingrec._engine_types) are shared with the engine twin; tests/test_sim_twins.py holds
# them and the card constants below to the Python values.
from kingrec._engine_consts cimport *

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

# What the constants above stand for, for the test that holds them to the Python values.
CONSTANTS = {
    "KOZ": KOZ, "EL_ALMAZ": EL_ALMAZ, "KUPA": KUPA, "ERKEK": ERKEK, "KIZ": KIZ,
    "RIFKI": RIFKI, "SON_IKI": SON_IKI,
    "F_MUST_RUFF": F_MUST_RUFF, "F_MUST_OVERTRUMP": F_MUST_OVERTRUMP,
    "F_RAISE_ON_TRUMP_LEAD": F_RAISE_ON_TRUMP_LEAD, "F_TRUMP_LEAD_BREAK": F_TRUMP_LEAD_BREAK,
    "F_HEART_LEAD_BAN": F_HEART_LEAD_BAN, "F_WITHHOLDING": F_WITHHOLDING,
    "F_VOID_DISCARD": F_VOID_DISCARD, "F_RIFKI_HEART_AFTER_KING": F_RIFKI_HEART_AFTER_KING,
    "F_EARLY_END": F_EARLY_END,
    "END_ALL_TRICKS": END_ALL_TRICKS, "END_EARLY": END_EARLY,
    "HEARTS": HEARTS, "JACK": JACK, "QUEEN": QUEEN, "KING": KING, "ACE": ACE,
    "KING_OF_HEARTS": KING_OF_HEARTS,
}

cdef u64 ALL = (1ULL << 52) - 1
cdef u64 SUIT[4]
SUIT[0] = RANKS
SUIT[1] = <u64>RANKS << 13
SUIT[2] = <u64>RANKS << 26
SUIT[3] = <u64>RANKS << 39

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


cdef int below(MT* mt, int n) noexcept nogil:
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


# -- the rules engine's legal cards (as _engine_py.judge_play) -------------------------

cdef inline u64 above(int card) noexcept nogil:
    return SUIT[card // 13] & ~((2ULL << card) - 1)


cdef inline u64 under(int card) noexcept nogil:
    return SUIT[card // 13] & ((1ULL << card) - 1)


cdef struct Deal:
    u64 held[4]
    u64 played          # cards of completed tricks
    u64 penalty         # the contract's penalty cards
    int trick[4]
    int ntrick
    int leader
    int contract
    int trump
    int flags
    int nplays
    int ntricks
    int units[4]
    int end
    unsigned char plays[52]


cdef inline int highest_of_suit(Deal* d, int suit) noexcept nogil:
    cdef int best = -1, i, card
    for i in range(d.ntrick):
        card = d.trick[i]
        if card // 13 == suit and card > best:
            best = card
    return best


cdef u64 legal_plays(Deal* d) noexcept nogil:
    cdef u64 cands = d.held[(d.leader + d.ntrick) % 4]
    cdef u64 sub, following
    cdef bint koz = d.contract == KOZ
    cdef int led, top
    if d.ntrick == 0:
        if koz and d.flags & F_TRUMP_LEAD_BREAK and not d.played & SUIT[d.trump]:
            sub = cands & ~SUIT[d.trump]
            if sub:
                cands = sub
        elif not koz and d.flags & F_HEART_LEAD_BAN and not d.played & SUIT[HEARTS]:
            sub = cands & ~SUIT[HEARTS]
            if sub:
                cands = sub
        return cands
    led = d.trick[0] // 13
    following = cands & SUIT[led]
    if following:
        cands = following
        if koz and led == d.trump and d.flags & F_RAISE_ON_TRUMP_LEAD:
            sub = cands & above(highest_of_suit(d, d.trump))
            if sub:
                cands = sub
        elif not koz and d.flags & F_WITHHOLDING:
            sub = cands & d.penalty & under(highest_of_suit(d, led))
            if sub:
                cands = sub
    elif koz:
        if d.flags & F_MUST_RUFF:
            sub = cands & SUIT[d.trump]
            if sub:
                cands = sub
        top = highest_of_suit(d, d.trump)
        if d.flags & F_MUST_OVERTRUMP and top >= 0:
            sub = cands & above(top)
            if sub:
                cands = sub
    elif d.flags & F_VOID_DISCARD:
        sub = cands & d.penalty
        if sub:
            cands = sub
        elif d.flags & F_RIFKI_HEART_AFTER_KING:
            sub = cands & SUIT[HEARTS]
            if sub:
                cands = sub
    return cands


cdef inline int trick_winner(int* trick, int n, int trump) noexcept nogil:
    """Position in ``trick`` of the card that wins it (``_engine_py.trick_winner``)."""
    cdef int best = 0, i, card, top
    for i in range(1, n):
        card = trick[i]
        top = trick[best]
        if card // 13 == top // 13:
            if card > top:
                best = i
        elif card // 13 == trump:
            best = i
    return best


cdef void push(Deal* d, int card) noexcept nogil:
    """``DealPlay.push`` of a card known to be legal."""
    cdef int seat = (d.leader + d.ntrick) % 4
    cdef int winner, units, i
    d.held[seat] &= ~(1ULL << card)
    d.trick[d.ntrick] = card
    d.ntrick += 1
    d.plays[d.nplays] = <unsigned char>card
    d.nplays += 1
    if d.ntrick < 4:
        return
    winner = (d.leader + trick_winner(d.trick, 4, d.trump)) % 4
    if d.contract == KOZ or d.contract == EL_ALMAZ:
        units = 1
    elif d.contract == SON_IKI:
        units = 1 if d.ntricks >= 11 else 0
    else:
        units = 0
        for i in range(4):
            if d.penalty >> d.trick[i] & 1:
                units += 1
    d.units[winner] += units
    d.ntricks += 1
    for i in range(4):
        d.played |= 1ULL << d.trick[i]
    d.ntrick = 0
    d.leader = winner
    if d.ntricks == 13:
        d.end = END_ALL_TRICKS
    elif d.flags & F_EARLY_END and (d.played & d.penalty) == d.penalty:
        d.end = END_EARLY


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
    return ties[below(rng, nties)]


cdef inline u64 outstanding(Deal* d, u64 hand) noexcept nogil:
    cdef u64 out = ALL & ~d.played & ~hand
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


cdef int lead_low(Deal* d, u64 hand, u64 legal, u64 penalty, MT* rng) noexcept nogil:
    cdef u64 out = outstanding(d, hand)
    cdef int scores[13]
    cdef int cards[13]
    cdef int n = 0, card, danger
    while legal:
        card = low_card(legal)
        legal &= legal - 1
        danger = 2 * popcount(out & under(card)) + suit_length(hand, card)
        if not out & above(card):  # a sure winner
            danger += 100 + 50 * <int>(penalty >> card & 1)
        scores[n] = -danger
        cards[n] = card
        n += 1
    return best(scores, cards, n, rng)


cdef int play_penalty(Deal* d, u64 legal, MT* rng) noexcept nogil:
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


cdef int play_koz(Deal* d, u64 legal, MT* rng) noexcept nogil:
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


cdef int choose_play(Deal* d, u64 legal, MT* rng) noexcept nogil:
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
    return ties[below(rng, nties)]


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


cdef int choose_contract(u64 hand, int* options, int n, long long* unit, MT* rng) noexcept nogil:
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


# -- the think-time clock (as simulate._Clock) -----------------------------------------

cdef long long clock_play(MT* clock, long long limit, int choices, bint* auto) noexcept nogil:
    cdef double x
    auto[0] = False
    if limit > 0 and rnd(clock) < 0.004:
        auto[0] = True
        return limit
    if choices == 1:
        x = <double>(120 + below(clock, 781))
    else:
        x = exp(normalvariate(clock, 6.9 + 0.08 * <double>(choices if choices < 8 else 8), 0.65))
    # min(int(x), limit) without overflowing for a huge x.
    return limit if x >= limit else <long long>x


cdef long long clock_trump(MT* clock, long long limit) noexcept nogil:
    cdef double x = exp(normalvariate(clock, 8.0, 0.5))
    return limit if x >= limit else <long long>x


# -- the schedule (as simulate.allowed_contracts) ---------------------------------------

cdef enum:
    QUOTA = 1
    ROTATION = 2
    FIXED = 3
    MAX_FIXED = 64


cdef struct Schedule:
    int kind
    long long deal_count
    long long koz_quota
    long long penalty_quota
    long long max_per_penalty
    long long penalty_only_deals
    int nfixed
    int fixed[MAX_FIXED]


cdef bint quota_ok(
    Schedule* sc, int seat, long long number, int c, long long* koz, long long* pen,
    long long* per,
) noexcept nogil:
    if c == KOZ:
        return number > sc.penalty_only_deals and koz[seat] < sc.koz_quota
    return pen[seat] < sc.penalty_quota and per[c] < sc.max_per_penalty


cdef bint quota_feasible(
    Schedule* sc, int seat, long long number, long long* koz, long long* pen, long long* per
) noexcept nogil:
    cdef long long remaining[4]
    cdef long long koz_eligible[4]
    cdef long long j, koz_left, pen_left, most_koz, penalty_deals = 0, room = 0
    cdef int s, c
    for s in range(4):
        remaining[s] = 0
        koz_eligible[s] = 0
    j = number + 1
    while j <= sc.deal_count:
        s = <int>((seat + j - number) % 4)
        remaining[s] += 1
        if j > sc.penalty_only_deals:
            koz_eligible[s] += 1
        j += 1
    for s in range(4):
        koz_left = sc.koz_quota - koz[s]
        pen_left = sc.penalty_quota - pen[s]
        if koz_left < 0 or pen_left < 0:
            return False
        most_koz = koz_left
        if koz_eligible[s] < most_koz:
            most_koz = koz_eligible[s]
        if remaining[s] < most_koz:
            most_koz = remaining[s]
        if remaining[s] - most_koz > pen_left:
            return False
        penalty_deals += remaining[s] - most_koz
    for c in range(EL_ALMAZ, SON_IKI + 1):
        if sc.max_per_penalty - per[c] > 0:
            room += sc.max_per_penalty - per[c]
    return penalty_deals <= room


cdef int allowed_contracts(
    Schedule* sc, int seat, long long number, int* hseat, int* hcontract, int nhist,
    int* out,
) noexcept nogil:
    """The contracts ``seat`` may declare in deal ``number``, ascending, into ``out``."""
    cdef long long koz[4]
    cdef long long pen[4]
    cdef long long per[8]
    cdef int now_ok[8]
    cdef int used[8]
    cdef int i, c, n = 0, nok = 0
    if sc.kind == FIXED:
        out[0] = sc.fixed[(number - 1) % sc.nfixed]
        return 1
    if sc.kind == ROTATION:
        for c in range(8):
            used[c] = 0
        for i in range(nhist):
            if hseat[i] == seat:
                used[hcontract[i]] = 1
        for c in range(KOZ, SON_IKI + 1):
            if not used[c]:
                out[n] = c
                n += 1
    else:
        for i in range(4):
            koz[i] = 0
            pen[i] = 0
        for c in range(8):
            per[c] = 0
        for i in range(nhist):
            if hcontract[i] == KOZ:
                koz[hseat[i]] += 1
            else:
                pen[hseat[i]] += 1
                per[hcontract[i]] += 1
        for c in range(KOZ, SON_IKI + 1):
            if quota_ok(sc, seat, number, c, koz, pen, per):
                now_ok[nok] = c
                nok += 1
        for i in range(nok):
            c = now_ok[i]
            if c == KOZ:
                koz[seat] += 1
            else:
                pen[seat] += 1
                per[c] += 1
            if quota_feasible(sc, seat, number, koz, pen, per):
                out[n] = c
                n += 1
            if c == KOZ:
                koz[seat] -= 1
            else:
                pen[seat] -= 1
                per[c] -= 1
        if n == 0:
            for i in range(nok):
                out[i] = now_ok[i]
            n = nok
    if n == 0:
        for c in range(KOZ, SON_IKI + 1):
            out[n] = c
            n += 1
    return n


cdef int load_schedule(Schedule* sc, object params) except -1:
    kind, koz_quota, penalty_quota, max_per_penalty, penalty_only_deals, fixed = params
    sc.kind = kind
    sc.koz_quota = koz_quota
    sc.penalty_quota = penalty_quota
    sc.max_per_penalty = max_per_penalty
    sc.penalty_only_deals = penalty_only_deals
    if not 0 <= len(fixed) <= MAX_FIXED or (kind == FIXED and not fixed):
        raise ValueError("unsupported fixed order")
    sc.nfixed = len(fixed)
    for i, c in enumerate(fixed):
        if not KOZ <= c <= SON_IKI:
            raise ValueError(f"unknown contract {c}")
        sc.fixed[i] = c
    return 0


def _allowed(object schedule, long long deal_count, int seat, long long number, object history):
    """``allowed_contracts`` through the compiled schedule (for the twin tests)."""
    cdef Schedule sc
    cdef int hseat[1024]
    cdef int hcontract[1024]
    cdef int out[8]
    cdef int n, i
    if len(history) > 1024:
        raise ValueError("history too long")
    load_schedule(&sc, schedule)
    sc.deal_count = deal_count
    for i, (s, c) in enumerate(history):
        hseat[i] = s
        hcontract[i] = c
    n = allowed_contracts(&sc, seat, number, hseat, hcontract, len(history), out)
    return [out[i] for i in range(n)]


# -- one match ---------------------------------------------------------------------------

cdef bytes deal_hands(MT* rng):
    """``simulate._deal_hands``: shuffle the deck, each hand sorted."""
    cdef int deck[52]
    cdef unsigned char out[52]
    cdef int i, j, t, s
    cdef u64 mask
    for i in range(52):
        deck[i] = i
    for i in range(51, 0, -1):
        j = below(rng, i + 1)
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


def play_match(
    object params,
    object rng_state,
    object clock_state,
    int first,
    object allowed,
):
    """Play the deals of one match; returns one tuple per deal.

    ``params`` is ``simulate._twin_params(rules)``: ``(deal_count, holder_card, play_limit,
    trump_limit, flags, units, penalty_masks, schedule)`` where ``holder_card`` is the first
    declarer's card (-1: any seat), flags, units and penalty masks are indexed by contract
    number and ``schedule`` is ``(kind, koz_quota, penalty_quota, max_per_penalty,
    penalty_only_deals, fixed_order)``. ``rng_state`` and ``clock_state`` are ``getstate()``
    of the match's rng and think-time rng (``clock_state`` None: no think times). When
    ``schedule`` is None, ``allowed(declarer, number, history)`` gives the contracts the
    schedule allows instead. Each tuple is ``(declarer, contract, trump, hands,
    plays, think_ms, auto_plays, end, scores, trump_think_ms)`` with the engine's end code,
    trump -1 and trump_think_ms -1 when there is none.
    """
    cdef MT rng
    cdef MT clock
    cdef int deal_count, holder_card
    cdef long long play_limit, trump_limit, ms, trump_ms
    cdef Schedule sc
    cdef int* hseat = NULL
    cdef int* hcontract = NULL
    cdef int flags[8]
    cdef long long unit[8]
    cdef u64 pen[8]
    cdef int i
    cdef bint timed = clock_state is not None
    cdef list out = []

    deal_count, holder_card, play_limit, trump_limit, py_flags, py_units, py_pen, schedule = params
    for i in range(8):
        flags[i] = py_flags[i]
        unit[i] = py_units[i]
        pen[i] = py_pen[i]
    mt_load(&rng, rng_state)
    if timed:
        mt_load(&clock, clock_state)
    if schedule is not None:
        load_schedule(&sc, schedule)
        sc.deal_count = deal_count
        hseat = <int*>malloc(sizeof(int) * (deal_count + 1))
        hcontract = <int*>malloc(sizeof(int) * (deal_count + 1))
        if hseat == NULL or hcontract == NULL:
            free(hseat)
            free(hcontract)
            raise MemoryError()
    try:
        _play_deals(
            &rng, &clock, timed, deal_count, holder_card, play_limit, trump_limit, flags, unit,
            pen, &sc if schedule is not None else NULL, hseat, hcontract, allowed, first, out,
        )
    finally:
        free(hseat)
        free(hcontract)
    return out


cdef int _play_deals(
    MT* rng_p, MT* clock_p, bint timed, int deal_count, int holder_card, long long play_limit,
    long long trump_limit, int* flags, long long* unit, u64* pen, Schedule* sc, int* hseat,
    int* hcontract, object allowed, int first, list out,
) except -1:
    cdef Deal d
    cdef int options[8]
    cdef int number, declarer, contract, trump, i, n, card, seat
    cdef long long ms, trump_ms
    cdef bint was_auto
    cdef u64 legal, hand_mask
    cdef bytes hands
    cdef const unsigned char* hp
    cdef list history = []
    cdef list think, auto
    for number in range(1, deal_count + 1):
        hands = deal_hands(rng_p)
        hp = hands
        if number == 1 and holder_card >= 0:
            for i in range(52):
                if hp[i] == holder_card:
                    first = i // 13
                    break
        declarer = (first + number - 1) % 4
        hand_mask = 0
        for i in range(13 * declarer, 13 * declarer + 13):
            hand_mask |= 1ULL << hp[i]
        if sc != NULL:
            n = allowed_contracts(sc, declarer, number, hseat, hcontract, number - 1, options)
        else:
            choices = sorted(set(allowed(declarer, number, history)))
            n = len(choices)
            if not 1 <= n <= 7:
                raise ValueError("no contract is allowed")
            for i in range(n):
                options[i] = choices[i]
        contract = choose_contract(hand_mask, options, n, unit, rng_p)
        trump = choose_trump(hand_mask, rng_p) if contract == KOZ else -1

        d.leader = declarer
        d.contract = contract
        d.trump = trump
        d.flags = flags[contract]
        d.penalty = pen[contract]
        d.played = 0
        d.ntrick = 0
        d.nplays = 0
        d.ntricks = 0
        d.end = 0
        for seat in range(4):
            d.units[seat] = 0
            d.held[seat] = 0
            for i in range(13 * seat, 13 * seat + 13):
                d.held[seat] |= 1ULL << hp[i]
        think = []
        auto = []
        while not d.end:
            legal = legal_plays(&d)
            card = choose_play(&d, legal, rng_p)
            if timed:
                ms = clock_play(clock_p, play_limit, popcount(legal), &was_auto)
                think.append(ms)
                if was_auto:
                    auto.append(d.nplays)
            push(&d, card)
        trump_ms = clock_trump(clock_p, trump_limit) if timed and contract == KOZ else -1
        if sc != NULL:
            hseat[number - 1] = declarer
            hcontract[number - 1] = contract
        else:
            history.append((declarer, contract))
        out.append((
            declarer,
            contract,
            trump,
            hands,
            bytes(d.plays[:d.nplays]),
            think,
            auto,
            d.end,
            [<long long>d.units[seat] * unit[contract] for seat in range(4)],
            trump_ms,
        ))
    return 0
