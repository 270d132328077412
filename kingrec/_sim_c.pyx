# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The match simulator's deals, compiled: the fast twin of ``kingrec._sim_py``.

``play_match`` plays every deal of one match exactly as the pure-Python twin does (the same
bots of ``kingrec.bots``, the same schedule) and returns the same ``PlayedDeal`` tuples;
``kingrec.simulate`` builds the ``Match``. Both twins draw from the same random streams: the
two ``random.Random`` generators of a match are handed over as their ``getstate()`` and
continued here by a C copy of CPython's generator (``_mt.pxd``), so the matches are
byte-identical. ``tests/test_simulate.py`` holds the two twins to that.

The rules (legal cards, closing tricks, the schedule) are the compiled core's
(``_core.pxd``); the bots are ported in ``_bots.pxd``. Only the plain match is compiled:
abandoned matches and revokes stay with the reference simulator.
"""

from libc.math cimport exp
from libc.stdint cimport int64_t

from kingrec._bots cimport (
    ACE, HEARTS, JACK, KING, KING_OF_HEARTS, QUEEN, RAW_MEAN, choose_contract, choose_play,
    choose_trump, u64,
)
from kingrec._core cimport (
    END_PLAYING, FIRST_HOLDER_OF_CARD, KOZ, CoreRules, DealState, Tally, deal_legal,
    deal_push, deal_scores, deal_start, low_card, popcount, tally_add, tally_allowed,
    tally_clear,
)
from kingrec._mt cimport MT, mt_load, normalvariate, randbelow, rnd

from kingrec._sim_py import PlayedDeal

__all__ = ["CONSTANTS", "play_match"]

# The bots' constants, for the test that holds them to kingrec.cards and kingrec.bots.
CONSTANTS = {
    "HEARTS": HEARTS, "JACK": JACK, "QUEEN": QUEEN, "KING": KING, "ACE": ACE,
    "KING_OF_HEARTS": KING_OF_HEARTS, "RAW_MEAN": [RAW_MEAN[i] for i in range(8)],
}


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
