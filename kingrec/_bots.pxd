# cython: language_level=3, cdivision=True
# The bots of kingrec.bots in C, for the compiled simulator: the same contract, trump and
# card choices, operation for operation (the float estimates must be equal, and ties draw
# from the same random stream). kingrec/bots.py is the readable reference.

from libc.stdint cimport int64_t

from kingrec._core cimport (
    ALL_CARDS, EL_ALMAZ, ERKEK, KIZ, KOZ, KUPA, RIFKI, SON_IKI, SUIT, DealState, above, below,
    high_card, low_card, popcount, trick_winner,
)
from kingrec._mt cimport MT, gauss, randbelow

ctypedef unsigned long long u64

cdef enum:
    HEARTS = 2
    JACK = 9
    QUEEN = 10
    KING = 11
    ACE = 12
    RANKS = 0x1FFF
    KING_OF_HEARTS = 37

cdef extern from *:
    """
    /* kingrec.bots._RAW_MEAN, by contract number. */
    static const double KB_RAW_MEAN[8] = {0.0, 3.59, 1.90, 2.10, 1.40, 0.83, 0.244, 0.50};
    """
    const double RAW_MEAN "KB_RAW_MEAN"[8]


# -- card play ----------------------------------------------------------------------------

cdef inline int suit_length(u64 hand, int card) noexcept nogil:
    return popcount(hand & SUIT[card // 13])


cdef inline int best(int* scores, int* cards, int n, MT* rng) noexcept nogil:
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


cdef inline int shed_high(u64 legal, MT* rng) noexcept nogil:
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


cdef inline int discard(u64 hand, u64 legal, u64 penalty, MT* rng) noexcept nogil:
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


cdef inline int lead_low(DealState* d, u64 hand, u64 legal, u64 penalty, MT* rng) noexcept nogil:
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


cdef inline int play_penalty(DealState* d, u64 legal, MT* rng) noexcept nogil:
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


cdef inline int lead_koz(u64 hand, u64 legal, u64 trumps, u64 out, MT* rng) noexcept nogil:
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


cdef inline int play_koz(DealState* d, u64 legal, MT* rng) noexcept nogil:
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


cdef inline int choose_play(DealState* d, u64 legal, MT* rng) noexcept nogil:
    if not legal & (legal - 1):
        return low_card(legal)
    if d.contract == KOZ:
        return play_koz(d, legal, rng)
    if d.contract == SON_IKI and d.ntricks < 11:
        return shed_high(legal, rng)
    return play_penalty(d, legal, rng)


# -- contracts and trumps (as kingrec.bots) --------------------------------------------

cdef inline void suit_key(u64 hand, int suit, int* length, int* strength) noexcept nogil:
    cdef u64 ranks = hand >> (13 * suit) & RANKS
    cdef int r, total = 0
    for r in range(13):
        if ranks >> r & 1:
            total += (r + 1) * (r + 1)
    length[0] = popcount(ranks)
    strength[0] = total


cdef inline int choose_trump(u64 hand, MT* rng) noexcept nogil:
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


cdef inline void estimates(u64 hand, double* est) noexcept nogil:
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


cdef inline int choose_contract(u64 hand, int* options, int n, const int64_t* unit,
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
