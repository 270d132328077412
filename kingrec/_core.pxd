# cython: language_level=3
# The one compiled core of the rules: every rule of RULES.md written once in C.
#
# The compiled engine twin (_engine_c), the wire-level checker (_fastcheck_c), the compiled
# simulator (_sim_c) and the store's column builder (_columns_c) all `cimport` this file, so
# no rule is written twice in compiled code. The pure-Python reference, kingrec/_engine_py.py
# (with kingrec/schedule.py), is the readable spec; the twin tests hold the two in step.
#
# Values are plain C ints: cards 0..51 (suit * 13 + rank), card sets as uint64_t masks, suits
# 0..3 (trump -1 when there is none), contracts as kingrec.v1.Contract numbers. The constants
# stand for kingrec/_engine_types.py and kingrec/contracts.py; kingrec._engine_c checks them
# against the Python values when it is imported, and tests/test_engine_twins.py does too.

from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy

ctypedef unsigned char uchar

# -- constants --------------------------------------------------------------------------

# Contracts (kingrec.contracts.Contract), engine flag bits (kingrec._engine_types.F_*) and
# play verdicts (finding codes of a play: kingrec._engine_types), defined in C since the
# rules of play (``legal_cards``) are C.
cdef extern from *:
    """
    enum {
        KR_KOZ = 1, KR_EL_ALMAZ = 2, KR_KUPA = 3, KR_ERKEK = 4, KR_KIZ = 5, KR_RIFKI = 6,
        KR_SON_IKI = 7
    };
    enum {
        KR_F_MUST_RUFF = 1, KR_F_MUST_OVERTRUMP = 2, KR_F_RAISE_ON_TRUMP_LEAD = 4,
        KR_F_TRUMP_LEAD_BREAK = 8, KR_F_HEART_LEAD_BAN = 16, KR_F_WITHHOLDING = 32,
        KR_F_VOID_DISCARD = 64, KR_F_RIFKI_HEART_AFTER_KING = 128, KR_F_EARLY_END = 256,
        KR_F_REVOKE_PENALIZE = 512
    };
    enum {
        KR_LEGAL = 0, KR_NOT_IN_HAND = 1, KR_TRUMP_LEAD_BANNED = 2, KR_HEART_LEAD_BANNED = 3,
        KR_MUST_FOLLOW_SUIT = 4, KR_MUST_RAISE_TRUMP = 5, KR_MUST_GIVE_PENALTY_CARD = 6,
        KR_MUST_RUFF = 7, KR_MUST_OVERTRUMP = 8, KR_MUST_DISCARD_PENALTY_CARD = 9,
        KR_NOT_A_CARD = 10, KR_REVOKE_MARK_ON_LEGAL_PLAY = 11
    };
    """
    enum:
        KOZ "KR_KOZ"
        EL_ALMAZ "KR_EL_ALMAZ"
        KUPA "KR_KUPA"
        ERKEK "KR_ERKEK"
        KIZ "KR_KIZ"
        RIFKI "KR_RIFKI"
        SON_IKI "KR_SON_IKI"
    enum:
        F_MUST_RUFF "KR_F_MUST_RUFF"
        F_MUST_OVERTRUMP "KR_F_MUST_OVERTRUMP"
        F_RAISE_ON_TRUMP_LEAD "KR_F_RAISE_ON_TRUMP_LEAD"
        F_TRUMP_LEAD_BREAK "KR_F_TRUMP_LEAD_BREAK"
        F_HEART_LEAD_BAN "KR_F_HEART_LEAD_BAN"
        F_WITHHOLDING "KR_F_WITHHOLDING"
        F_VOID_DISCARD "KR_F_VOID_DISCARD"
        F_RIFKI_HEART_AFTER_KING "KR_F_RIFKI_HEART_AFTER_KING"
        F_EARLY_END "KR_F_EARLY_END"
        F_REVOKE_PENALIZE "KR_F_REVOKE_PENALIZE"
    enum:
        LEGAL "KR_LEGAL"
        NOT_IN_HAND "KR_NOT_IN_HAND"
        TRUMP_LEAD_BANNED "KR_TRUMP_LEAD_BANNED"
        HEART_LEAD_BANNED "KR_HEART_LEAD_BANNED"
        MUST_FOLLOW_SUIT "KR_MUST_FOLLOW_SUIT"
        MUST_RAISE_TRUMP "KR_MUST_RAISE_TRUMP"
        MUST_GIVE_PENALTY_CARD "KR_MUST_GIVE_PENALTY_CARD"
        MUST_RUFF "KR_MUST_RUFF"
        MUST_OVERTRUMP "KR_MUST_OVERTRUMP"
        MUST_DISCARD_PENALTY_CARD "KR_MUST_DISCARD_PENALTY_CARD"
        NOT_A_CARD "KR_NOT_A_CARD"
        REVOKE_MARK_ON_LEGAL_PLAY "KR_REVOKE_MARK_ON_LEGAL_PLAY"

# Deal ends, schedule problems: kingrec._engine_types.
cdef enum:
    END_PLAYING = 0
    END_ALL_TRICKS = 1
    END_EARLY = 2
    END_INCOMPLETE = 3
    END_REVOKE = 4
    END_UNREADABLE = 5

    SCHEDULE_OK = 0
    SCHEDULE_QUOTA = 1
    SCHEDULE_LIMIT = 2
    SCHEDULE_NOT_SCHEDULED = 3

# Ruleset enums: kingrec.rules (values of kingrec.v1's ScheduleKind, FirstDeclarerRule,
# DealerRule).
cdef enum:
    QUOTA = 1
    ROTATION = 2
    FIXED = 3
    FIRST_ANY_SEAT = 1
    FIRST_HOLDER_OF_CARD = 2
    DEALER_UNCHECKED = 0
    DEALER_DECLARER = 1
    DEALER_SEAT_BEFORE = 2
    MAX_FIXED = 256  # kingrec.limits.MAX_FIXED_ORDER

cdef extern from *:
    """
    #define KR_RANK_IN_EVERY_SUIT(r) \
        ((1ULL << (r)) | (1ULL << (13 + (r))) | (1ULL << (26 + (r))) | (1ULL << (39 + (r))))
    /* Suit of each card code; 4 (no suit) for the bytes 52..63 a damaged record may hold. */
    static const unsigned char KR_SUIT_OF[64] = {
        0,0,0,0,0,0,0,0,0,0,0,0,0, 1,1,1,1,1,1,1,1,1,1,1,1,1,
        2,2,2,2,2,2,2,2,2,2,2,2,2, 3,3,3,3,3,3,3,3,3,3,3,3,3,
        4,4,4,4,4,4,4,4,4,4,4,4};
    /* Each byte as a card set: bytes 52..255 (no card) give bit 63, which no hand and no
       legal set holds, so a byte is judged by the mask alone (no compare, no shift). */
    #define KR_B2(c) 1ULL << (c), 1ULL << ((c) + 1)
    #define KR_B13(c) KR_B2(c), KR_B2((c) + 2), KR_B2((c) + 4), KR_B2((c) + 6), \
        KR_B2((c) + 8), KR_B2((c) + 10), 1ULL << ((c) + 12)
    #define KR_NC4 1ULL << 63, 1ULL << 63, 1ULL << 63, 1ULL << 63
    #define KR_NC16 KR_NC4, KR_NC4, KR_NC4, KR_NC4
    #define KR_NC64 KR_NC16, KR_NC16, KR_NC16, KR_NC16
    static const unsigned long long KR_BIT_OF[256] = {
        KR_B13(0), KR_B13(13), KR_B13(26), KR_B13(39),
        KR_NC4, KR_NC4, KR_NC4, KR_NC64, KR_NC64, KR_NC64};
    static const unsigned long long KR_SUIT[5] = {
        0x1FFFULL, 0x1FFFULL << 13, 0x1FFFULL << 26, 0x1FFFULL << 39, 0};
    /* The cards each contract penalizes (kingrec.contracts.PENALTY_MASKS). */
    static const unsigned long long KR_PENALTY[8] = {
        0, 0, 0,
        0x1FFFULL << 26,                                  /* KUPA: the hearts */
        KR_RANK_IN_EVERY_SUIT(9) | KR_RANK_IN_EVERY_SUIT(11), /* ERKEK: jacks and kings */
        KR_RANK_IN_EVERY_SUIT(10),                         /* KIZ: the queens */
        1ULL << 37,                                        /* RIFKI: the king of hearts */
        0};
    /* Scoring units a whole deal holds (kingrec.contracts.UNITS_PER_DEAL). */
    static const int KR_UNITS_PER_DEAL[8] = {0, 13, 13, 13, 8, 4, 1, 2};
    #define KR_ALL_CARDS ((1ULL << 52) - 1)
    #define KR_HEARTS (0x1FFFULL << 26)
    /* The cards of `card`'s suit that outrank it, and those it outranks. */
    static inline unsigned long long kr_above(int card) {
        return KR_SUIT[KR_SUIT_OF[card]] & ~((2ULL << card) - 1); }
    static inline unsigned long long kr_below(int card) {
        return KR_SUIT[KR_SUIT_OF[card]] & ((1ULL << card) - 1); }
    #if defined(_MSC_VER)
    #include <intrin.h>
    static __inline int kr_popcount(unsigned long long x) {
        int n = 0; while (x) { x &= x - 1; n++; } return n; }
    static __inline int kr_low(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i; }
    static __inline int kr_high(unsigned long long x) {
        unsigned long i; _BitScanReverse64(&i, x); return (int)i; }
    #else
    #if defined(__POPCNT__)
    static inline int kr_popcount(unsigned long long x) { return __builtin_popcountll(x); }
    #else
    /* Without the POPCNT instruction (x86-64's baseline), __builtin_popcountll is a call
       into libgcc: these few operations inline are cheaper (8% of a simulated deal). */
    static inline int kr_popcount(unsigned long long x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
        return (int)((x * 0x0101010101010101ULL) >> 56);
    }
    #endif
    static inline int kr_low(unsigned long long x) { return __builtin_ctzll(x); }
    static inline int kr_high(unsigned long long x) { return 63 - __builtin_clzll(x); }
    #endif
    """
    const uchar SUIT_OF "KR_SUIT_OF"[64]
    const uint64_t BIT_OF "KR_BIT_OF"[256]  # a byte's card set; bit 63 for no card
    const uint64_t NO_CARD "(1ULL << 63)"
    const uint64_t SUIT "KR_SUIT"[5]
    const uint64_t PENALTY "KR_PENALTY"[8]
    const int UNITS_PER_DEAL "KR_UNITS_PER_DEAL"[8]
    const uint64_t ALL_CARDS "KR_ALL_CARDS"
    const uint64_t HEARTS_MASK "KR_HEARTS"
    int popcount "kr_popcount"(uint64_t x) noexcept nogil
    int low_card "kr_low"(uint64_t x) noexcept nogil  # lowest card of a non-empty mask
    int high_card "kr_high"(uint64_t x) noexcept nogil  # highest card of a non-empty mask
    uint64_t above "kr_above"(int card) noexcept nogil  # the cards of its suit above it
    uint64_t below "kr_below"(int card) noexcept nogil  # the cards of its suit below it


# -- the ruleset ------------------------------------------------------------------------

# A resolved ruleset as the compiled code reads it: kingrec.rules.Ruleset.core_params()
# gives a dict with exactly these names (Cython converts it field by field).
ctypedef struct CoreRules:
    long flags[8]  # engine flags of a deal of each contract (index 0: no contract)
    int64_t unit[8]  # points per scoring unit
    int64_t full_total[8]  # points of a whole deal (the revoke penalty)
    int64_t deal_count
    int schedule  # QUOTA, ROTATION or FIXED
    int64_t koz_quota
    int64_t penalty_quota
    int64_t max_per_penalty
    int64_t penalty_only_deals
    int first_declarer  # FIRST_ANY_SEAT or FIRST_HOLDER_OF_CARD
    int first_card
    int dealer  # DEALER_*
    bint penalize  # revoke = PENALIZE
    int64_t play_timeout
    int64_t trump_timeout
    bint zero_sum  # a complete match's totals must add up to 0
    int nfixed
    uchar fixed_order[MAX_FIXED]

# -- cards ------------------------------------------------------------------------------


cdef inline int highest_of_suit(const int* trick, int n, int suit) noexcept nogil:
    cdef int best = -1, i
    for i in range(n):
        if SUIT_OF[trick[i]] == suit and trick[i] > best:
            best = trick[i]
    return best


# -- judging a card (RULES.md "Which rule a bad card breaks") ---------------------------

# The rules of play, once, in C: ``judge`` (the verdict and the legal set) and
# ``replay_clean`` (only "is this card legal?", at ~15 cycles a card) both call
# ``legal_cards``. It is forced in line: GCC -O3 would not inline it into both (a shared
# filter it kept out of line cost 1.29-1.34x validate CPU), and in line the verdict's
# bookkeeping is dead code wherever the caller drops it. A deal's rules of play are
# resolved once into masks (``play_rules``), a rule that is off as an empty mask.
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #define KR_ALWAYS_INLINE static __forceinline
    #else
    #define KR_ALWAYS_INLINE static inline __attribute__((always_inline))
    #endif
    #define KR_ALL_IF(cond) (0ULL - (unsigned long long)((cond) != 0))
    typedef struct {
        int koz;                      /* a koz deal */
        unsigned long long raise_on;  /* koz: the trumps, when a trump led must be beaten
                                         when one can (0: never; no suit led is 0) */
        int overtrump;                /* koz: a ruff must beat the trumps on the trick */
        unsigned long long trump;     /* the trumps (0 but in koz) */
        unsigned long long lead_ban;  /* cards that may not lead until one has fallen */
        unsigned long long withhold;  /* penalty cards a follower must give under the top */
        unsigned long long ruff;      /* cards a void player must play (koz: the trumps) */
        unsigned long long discard;   /* penalty cards a void player must discard */
        unsigned long long discard_then; /* failing those, the cards he must discard */
    } kr_play_rules;
    /* The rules of play of a deal of `contract` (1..7), `trump` (0..3 in koz), `flags`;
       `koz` says whether `contract` is koz, so that a caller passing it as a constant
       gets the rules of that class with every field of the other class a constant 0. */
    KR_ALWAYS_INLINE kr_play_rules kr_rules_of_class(int koz, int contract, int trump,
                                                     long flags) {
        kr_play_rules r;
        unsigned long long penalty = KR_PENALTY[contract];
        r.koz = koz;
        r.trump = r.koz ? KR_SUIT[trump] : 0;
        r.raise_on = r.koz && (flags & KR_F_RAISE_ON_TRUMP_LEAD) ? r.trump : 0;
        r.overtrump = r.koz && (flags & KR_F_MUST_OVERTRUMP);
        r.lead_ban = r.koz ? ((flags & KR_F_TRUMP_LEAD_BREAK) ? r.trump : 0)
                           : ((flags & KR_F_HEART_LEAD_BAN) ? KR_HEARTS : 0);
        r.withhold = !r.koz && (flags & KR_F_WITHHOLDING) ? penalty : 0;
        r.ruff = r.koz && (flags & KR_F_MUST_RUFF) ? r.trump : 0;
        r.discard = !r.koz && (flags & KR_F_VOID_DISCARD) ? penalty : 0;
        r.discard_then = !r.koz && (flags & KR_F_VOID_DISCARD)
                      && (flags & KR_F_RIFKI_HEART_AFTER_KING) ? KR_HEARTS : 0;
        return r;
    }
    KR_ALWAYS_INLINE kr_play_rules kr_rules_of(int contract, int trump, long flags) {
        return kr_rules_of_class(contract == KR_KOZ, contract, trump, flags);
    }
    /* A filter keeps only `subset` of the candidates, unless that would leave no card; the
       verdict is the first filter that removed the card judged (`bit`). */
    #define KR_KEEP(subset, reason) do { \
            unsigned long long kr_sub = (subset); \
            if (kr_sub) { \
                if (code && *code == KR_LEGAL && (cands & bit) && !(kr_sub & bit)) \
                    *code = (reason); \
                cands = kr_sub; \
            } \
        } while (0)
    /* The cards `hand` may play onto a trick of `n` cards under the rules `r`: the filters
       of RULES.md ("Which rule a bad card breaks") in their order. `*code` (KR_LEGAL or
       KR_NOT_IN_HAND on entry) receives the verdict on the card `bit`. `led` is the suit
       led as a card set, `led_on` the cards of it on the trick and `trumps_on` the trumps
       on it (each may stand for its highest card alone), read only when n > 0; `played`
       holds the cards of earlier tricks. The tops of the trick are taken (a count of
       leading zeros) only by the filters that read them, which most cards never reach.
       `code` may be NULL: the legal set alone (the verdict's bookkeeping
       then folds away in line). */
    KR_ALWAYS_INLINE unsigned long long kr_legal_cards(
            const kr_play_rules *r, unsigned long long hand, unsigned long long bit, int n,
            unsigned long long led, unsigned long long led_on, unsigned long long trumps_on,
            unsigned long long played, int *code) {
        unsigned long long cands = hand;
        if (n == 0) {
            if (r->lead_ban && !(played & r->lead_ban))  /* banned until broken */
                KR_KEEP(cands & ~r->lead_ban, r->koz ? KR_TRUMP_LEAD_BANNED
                                                     : KR_HEART_LEAD_BANNED);
            return cands;
        }
        if (cands & led) {
            KR_KEEP(cands & led, KR_MUST_FOLLOW_SUIT);
            /* No koz test first: raise_on is 0 (no suit led is 0) but in koz and withhold
               is 0 in koz; that test cost 2.5 mispredictions a deal (cachegrind's model) */
            if (led == r->raise_on)  /* a trump led: trumps_on holds it */
                KR_KEEP(cands & kr_above(kr_high(trumps_on)), KR_MUST_RAISE_TRUMP);
            else if (r->withhold)  /* led_on holds the card led */
                KR_KEEP(cands & r->withhold & kr_below(kr_high(led_on)),
                        KR_MUST_GIVE_PENALTY_CARD);
        } else if (r->koz) {
            KR_KEEP(cands & r->ruff, KR_MUST_RUFF);
            if (r->overtrump && trumps_on)
                KR_KEEP(cands & kr_above(kr_high(trumps_on)), KR_MUST_OVERTRUMP);
        } else if (cands & r->discard) {
            KR_KEEP(cands & r->discard, KR_MUST_DISCARD_PENALTY_CARD);
        } else {
            KR_KEEP(cands & r->discard_then, KR_MUST_DISCARD_PENALTY_CARD);
        }
        return cands;
    }
    """
    ctypedef struct PlayRules "kr_play_rules":
        bint koz
        uint64_t trump
    PlayRules play_rules "kr_rules_of"(int contract, int trump, long flags) noexcept nogil
    PlayRules class_rules "kr_rules_of_class"(bint koz, int contract, int trump,
                                              long flags) noexcept nogil
    uint64_t all_if "KR_ALL_IF"(uint64_t cond) noexcept nogil  # all ones if cond, else 0
    uint64_t legal_cards "kr_legal_cards"(
        const PlayRules* rules, uint64_t hand, uint64_t bit, int n, uint64_t led,
        uint64_t led_on, uint64_t trumps_on, uint64_t played, int* code) noexcept nogil


cdef inline int judge(uint64_t hand, const int* trick, int n, int card, int contract,
                      int trump, long flags, uint64_t played, uint64_t* legal) noexcept nogil:
    """The verdict on ``card`` (0..63) played from ``hand`` onto ``trick`` (n cards, leader
    first); ``played`` holds the cards of earlier tricks. ``legal`` receives the legal cards.

    The filters are ``legal_cards``'s: each keeps only the cards it names and is skipped
    when it would keep none; the verdict is the first filter that removed the card (LEGAL
    when none did).
    """
    cdef uint64_t bit = <uint64_t>1 << card, led = 0, led_on = 0, trumps_on = 0
    cdef int code = LEGAL if hand & bit else NOT_IN_HAND
    cdef int top
    cdef PlayRules rules = play_rules(contract, trump, flags)
    if n:
        led = SUIT[SUIT_OF[trick[0]]]
        top = highest_of_suit(trick, n, SUIT_OF[trick[0]])
        led_on = <uint64_t>1 << top  # its top alone stands for the suit led on the trick
        if rules.koz:
            top = highest_of_suit(trick, n, trump)
            trumps_on = 0 if top < 0 else <uint64_t>1 << top
    legal[0] = legal_cards(&rules, hand, bit, n, led, led_on, trumps_on, played, &code)
    return code


# -- a trick ----------------------------------------------------------------------------


cdef inline int trick_winner(const int* trick, int n, int trump) noexcept nogil:
    """Position in ``trick`` (0 = leader) of the card that wins it."""
    cdef int best = 0, i
    for i in range(1, n):
        if SUIT_OF[trick[i]] == SUIT_OF[trick[best]]:
            if trick[i] > trick[best]:
                best = i
        elif SUIT_OF[trick[i]] == trump:
            best = i
    return best


cdef inline int trick_top(uint64_t cards, uint64_t led, uint64_t trumps) noexcept nogil:
    """The card that wins a complete trick of the ``cards`` (real cards, the suit ``led``
    among them) when ``trumps`` are the trump suit's cards (0: none): the highest trump if
    one fell, else the highest card of the suit led."""
    cdef uint64_t ruffs = cards & trumps
    return high_card(ruffs | (cards & led & all_if(ruffs == 0)))


cdef inline int owner_of(const uint64_t* hands, int card) noexcept nogil:
    """The seat whose hand holds ``card`` (0..51), of four hands that partition the deck."""
    return <int>((hands[1] >> card & 1) | (hands[2] >> card & 1) << 1
                 | (hands[3] >> card & 1) * 3)


cdef inline int closed_trick_winner(const int* trick, uint64_t cards, int trump) noexcept nogil:
    """``trick_winner`` of a complete trick of real cards (0..51) whose card set is ``cards``,
    without a branch on the cards: the highest trump if one fell, else the highest card of
    the suit led, at its first position (a card recorded twice wins where it first fell)."""
    cdef int top = trick_top(cards, SUIT[SUIT_OF[trick[0]]], SUIT[trump] if 0 <= trump < 4 else 0)
    return low_card(<uint64_t>(trick[0] == top) | <uint64_t>(trick[1] == top) << 1
                    | <uint64_t>(trick[2] == top) << 2 | <uint64_t>8)


cdef inline int trick_units(const int* trick, int n, int trick_index, int contract) noexcept nogil:
    """Scoring units the winner of a complete trick takes (tricks, penalty cards, last tricks)."""
    cdef int i, count = 0
    if contract == KOZ or contract == EL_ALMAZ:
        return 1
    if contract == SON_IKI:
        return 1 if trick_index >= 11 else 0
    for i in range(n):
        if PENALTY[contract] >> trick[i] & 1:
            count += 1
    return count


cdef inline int taken_units(uint64_t cards, int last_tricks, int contract) noexcept nogil:
    """``trick_units`` summed over the tricks a seat took: ``cards``, the cards of those
    tricks (four each), ``last_tricks`` how many of them were tricks 12 and 13."""
    if contract == KOZ or contract == EL_ALMAZ:
        return popcount(cards) >> 2
    if contract == SON_IKI:
        return last_tricks
    return popcount(cards & PENALTY[contract])


# -- a deal -----------------------------------------------------------------------------

ctypedef struct DealState:
    uint64_t held[4]  # each seat's cards still in hand
    uint64_t played  # cards of completed tricks
    uint64_t penalty  # the contract's penalty cards
    long flags
    int contract
    int trump
    int leader  # seat that led the trick on the table
    int trick[4]  # the trick on the table, leader first
    int ntrick
    int ntricks  # completed tricks
    uchar winners[13]  # winning seat of each completed trick
    int units[4]  # scoring units taken per seat
    int end  # END_PLAYING until the deal is over
    int revoker  # seat of a penalized revoke, or -1
    int nplays  # plays that belong to the deal


cdef inline void deal_start(DealState* d, const uchar* hands, int declarer, int contract,
                            int trump, long flags) noexcept nogil:
    """A deal before its first card: ``hands`` is 52 card bytes (< 64), seat s at 13s."""
    cdef int s, j
    for s in range(4):
        d.held[s] = 0
        for j in range(13):
            d.held[s] |= <uint64_t>1 << hands[13 * s + j]
        d.units[s] = 0
    d.played = 0
    d.penalty = PENALTY[contract]
    d.flags = flags
    d.contract = contract
    d.trump = trump
    d.leader = declarer
    d.ntrick = 0
    d.ntricks = 0
    d.end = END_PLAYING
    d.revoker = -1
    d.nplays = 0


cdef inline int to_play(const DealState* d) noexcept nogil:
    return (d.leader + d.ntrick) & 3


cdef inline int deal_judge(const DealState* d, int card, uint64_t* legal) noexcept nogil:
    """The verdict on ``card`` (0..63) played now by the seat to play."""
    return judge(d.held[to_play(d)], d.trick, d.ntrick, card, d.contract, d.trump, d.flags,
                 d.played, legal)


cdef inline uint64_t deal_legal(const DealState* d) noexcept nogil:
    """The cards the seat to play may play."""
    cdef uint64_t legal
    # Judging a card nobody holds changes no filter, only the verdict.
    judge(d.held[to_play(d)], d.trick, d.ntrick, 52, d.contract, d.trump, d.flags,
          d.played, &legal)
    return legal


cdef inline int deal_push(DealState* d, int card) noexcept nogil:
    """Play ``card`` (0..51) for the seat to play, as played; close the trick when it is the
    fourth card. Returns the trick's winning seat, or -1 while the trick is open. The deal
    ends after thirteen tricks, or early once every penalty card has fallen (F_EARLY_END).
    """
    cdef int w
    cdef uint64_t cards
    d.held[to_play(d)] &= ~(<uint64_t>1 << card)
    d.trick[d.ntrick] = card
    d.ntrick += 1
    d.nplays += 1
    if d.ntrick < 4:
        return -1
    cards = ((<uint64_t>1 << d.trick[0]) | (<uint64_t>1 << d.trick[1])
             | (<uint64_t>1 << d.trick[2]) | (<uint64_t>1 << d.trick[3]))
    w = (d.leader + closed_trick_winner(d.trick, cards, d.trump)) & 3
    d.units[w] += trick_units(d.trick, 4, d.ntricks, d.contract)
    d.winners[d.ntricks] = <uchar>w
    d.ntricks += 1
    d.played |= cards
    d.ntrick = 0
    d.leader = w
    if d.ntricks == 13:
        d.end = END_ALL_TRICKS
    elif d.flags & F_EARLY_END and d.played & d.penalty == d.penalty:
        d.end = END_EARLY
    return w


cdef inline int deal_step(DealState* d, int card, bint revoke_mark,
                          uint64_t* legal) noexcept nogil:
    """One recorded play, judged and played as played. Returns its finding code (LEGAL: none).

    A byte that is no card stops the replay (END_UNREADABLE, scores void). A play the record
    marks as a revoke under F_REVOKE_PENALIZE ends the deal there (END_REVOKE): the revoker
    will score the contract's full total and the deal's other scores are void; the mark is a
    finding only when the card was in fact legal (or not even held).
    """
    cdef int code, seat = to_play(d)
    if card >= 52:
        legal[0] = 0
        d.end = END_UNREADABLE
        d.units[0] = d.units[1] = d.units[2] = d.units[3] = 0
        return NOT_A_CARD
    code = deal_judge(d, card, legal)
    if revoke_mark and d.flags & F_REVOKE_PENALIZE:
        d.end = END_REVOKE
        d.revoker = seat
        d.nplays += 1
        d.units[0] = d.units[1] = d.units[2] = d.units[3] = 0
        if code == LEGAL:
            return REVOKE_MARK_ON_LEGAL_PLAY
        return NOT_IN_HAND if code == NOT_IN_HAND else LEGAL
    deal_push(d, card)
    return code


ctypedef struct Violation:
    int play  # index into the deal's plays
    int seat
    int card
    int code
    uint64_t legal


cdef inline int replay_deal(DealState* d, const uchar* hands, const uchar* plays,
                            Py_ssize_t nplays, int declarer, int contract, int trump,
                            long flags, Py_ssize_t revoke_play, Violation* violations,
                            bint stop_at_violation) noexcept nogil:
    """Replay one deal's plays from the declarer's lead, judging every card; returns the
    number of violations written to ``violations`` (room for 53: a deal judges at most 52
    cards, plus the one that stops it). With ``stop_at_violation`` it returns at the first.

    Afterwards ``d.end`` says how the deal ended (END_INCOMPLETE when the plays ran out) and
    ``d.nplays`` how many plays belong to it; any after those came after its end.
    """
    cdef Py_ssize_t index
    cdef int n = 0, seat, card, code
    cdef uint64_t legal
    deal_start(d, hands, declarer, contract, trump, flags)
    for index in range(nplays):
        seat = to_play(d)
        card = plays[index]
        code = deal_step(d, card, index == revoke_play, &legal)
        if code != LEGAL:
            violations[n].play = <int>index
            violations[n].seat = seat
            violations[n].card = card
            violations[n].code = code
            violations[n].legal = legal
            n += 1
            if stop_at_violation:
                return n
        if d.end != END_PLAYING:
            return n
    d.end = END_INCOMPLETE
    return n


cdef inline uint64_t follow_miss(const PlayRules* rules, const uint64_t* hands, int seat,
                                 int k, uint64_t bit, uint64_t played, uint64_t led,
                                 uint64_t cards) noexcept nogil:
    """``replay_clean``'s judgement of the ``k``-th follower's card (k 1..3; ``bit``, its
    ``BIT_OF``: NO_CARD for a byte that is no card) by ``seat`` onto a trick of the
    ``cards`` led in ``led``: its bit when it is not a legal play, else 0. The tops of the
    trick are read off its cards (a count of leading zeros), not kept by a compare and
    select per card, which GCC makes a jump on the card; and only by the filters that need
    them. NO_CARD is in no legal set, and ``cards & led`` and ``cards & trump`` never hold
    it, so a follower's byte needs no compare of its own."""
    cdef uint64_t hand = hands[seat] & ~played  # his cards left: only he holds his cards
    return bit & ~legal_cards(rules, hand, bit, k, led, cards & led, cards & rules.trump,
                              played, NULL)


cdef inline bint replay_clean(DealState* d, const uint64_t* hands, const uchar* plays,
                              Py_ssize_t nplays, int declarer, int contract, int trump,
                              long flags) noexcept nogil:
    """``replay_deal`` of a deal with no revoke mark, for the all-legal path: see
    ``replay_clean_as``. A copy of it for each class of contract, so that each card's
    filters test the rules of one class, those of the other folded away as constants."""
    if contract == KOZ:
        return replay_clean_as(<KozDeal*>NULL, d, hands, plays, nplays, declarer, contract,
                               trump, flags)
    return replay_clean_as(<PenaltyDeal*>NULL, d, hands, plays, nplays, declarer, contract,
                           trump, flags)


# The class of a deal's contract as a type, for a copy of ``replay_clean_as`` per class
# (Cython's fused types: GCC would not inline a body this size twice, nor clone it).
ctypedef struct KozDeal:
    char koz
ctypedef struct PenaltyDeal:
    char penalty
ctypedef fused ContractClass:
    KozDeal
    PenaltyDeal


cdef inline bint replay_clean_as(ContractClass* of_class, DealState* d, const uint64_t* hands,
                                 const uchar* plays, Py_ssize_t nplays, int declarer,
                                 int contract, int trump, long flags) noexcept nogil:
    """``replay_deal`` of a deal with no revoke mark, for the all-legal path: True when every
    play is legal (``replay_deal`` would find no violation), with ``d`` left as it leaves it
    (but ``d.trick``: the open trick's cards, zeros after them); False when a play is not,
    ``d`` then undefined (``replay_deal`` says why). ``hands`` are the four hands as card
    sets, and they must be a deal of the deck: the caller has checked that they partition
    it.

    The filters of ``legal_cards``, asked only "is this card legal?" (no verdict), a trick
    at a time. Since the hands partition the deck, a player's cards left are his hand less
    the cards of earlier tricks: no hand is kept up to date card by card (a store and a
    reload through a seat index per card). Each card's judgement is a mask, ORed into the
    trick's misses and tested once when the trick is complete; the trick's tops are read
    off its cards. A trick judged legal holds each card in the hand that played it, so its
    winner is the owner of its top card (``owner_of``: no search of the trick for it), and
    each seat's units are counted once, at the end, off the cards of the tricks it took
    (``taken_units``). The only chain from one trick to the next is its winner, who leads
    the next. State is kept in locals: the card bytes (and the winners' bytes) may alias any
    memory, so fields behind ``d`` would be reloaded.

    Measured and left out: ``legal_cards`` itself without a jump (masks choosing follow or
    ruff, raise or withhold, discard) cut cachegrind's simulated mispredictions here from
    3.99 M to 0.43 M on 108,020 deals but ran 58% more instructions there, and the checker
    14-24% slower side by side: this machine's predictor misses far fewer than that model.
    """
    cdef uint64_t played = 0, penalty, cards = 0, led, miss, bit
    cdef uint64_t trumps
    cdef PlayRules rules
    cdef uint64_t taken[4]
    cdef uchar winners[13]
    cdef int leader = declarer, ntricks = 0, k = 0, card, end = END_PLAYING, s, last
    cdef Py_ssize_t index = 0, left
    cdef bint koz = ContractClass is KozDeal
    if koz and not 0 <= trump < 4:
        return False
    if koz:
        contract = KOZ  # as it is: a constant, for its penalty cards and units
    penalty = PENALTY[contract]
    rules = class_rules(koz, contract, trump, flags)
    trumps = rules.trump
    taken[0] = taken[1] = taken[2] = taken[3] = 0
    while index < nplays:
        left = nplays - index
        # the lead (its byte compared: the suit led is read off it)
        card = plays[index]
        if card >= 52:
            return False
        bit = BIT_OF[card]
        miss = bit & ~legal_cards(&rules, hands[leader] & ~played, bit, 0, 0, 0, 0, played,
                                  NULL)
        led = SUIT[SUIT_OF[card]]
        cards = bit
        # the three who follow, unless the plays end within the trick
        k = 1
        while k < 4 and k < left:
            bit = BIT_OF[plays[index + k]]
            miss |= follow_miss(&rules, hands, (leader + k) & 3, k, bit, played, led, cards)
            cards |= bit
            k += 1
        if miss:
            return False
        index += k
        if k < 4:
            break
        # the trick closes: its winner leads the next
        leader = owner_of(hands, trick_top(cards, led, trumps))
        taken[leader] |= cards
        winners[ntricks] = <uchar>leader
        ntricks += 1
        played |= cards
        k = 0
        if ntricks == 13:
            end = END_ALL_TRICKS
            break
        if flags & F_EARLY_END and played & penalty == penalty:
            end = END_EARLY
            break
    if k == 0:
        cards = 0  # no trick open: its cards are among those played
    for s in range(4):
        last = 0
        if ntricks > 11:
            last = (winners[11] == s) + (ntricks > 12 and winners[12] == s)
        d.held[s] = hands[s] & ~played & ~cards
        d.units[s] = taken_units(taken[s], last, contract)
        d.trick[s] = plays[index - k + s] if s < k else 0
    memcpy(d.winners, winners, 13)
    d.played = played
    d.penalty = penalty
    d.flags = flags
    d.contract = contract
    d.trump = trump
    d.leader = leader
    d.ntrick = k
    d.ntricks = ntricks
    d.end = END_INCOMPLETE if end == END_PLAYING else end
    d.revoker = -1
    d.nplays = <int>index
    return True


cdef inline void deal_scores(const DealState* d, const CoreRules* r, int64_t* out) noexcept nogil:
    """Points per seat of a replayed deal: units times the unit score, or for a penalized
    revoke the contract's whole total against the revoker and nothing else."""
    cdef int s
    cdef int64_t penalty
    if d.revoker >= 0:
        out[0] = out[1] = out[2] = out[3] = 0
        penalty = r.full_total[d.contract]
        out[d.revoker] = -penalty if penalty > 0 else penalty
        return
    for s in range(4):
        out[s] = d.units[s] * r.unit[d.contract]


# -- the schedule (kingrec/schedule.py) --------------------------------------------------

ctypedef struct Tally:
    int64_t koz[4]  # koz deals each seat declared
    int64_t penalty[4]  # penalty deals each seat declared
    int64_t per_contract[8]  # times each contract was chosen
    uchar declared[4][8]  # whether a seat declared a contract


cdef inline void tally_clear(Tally* t) noexcept nogil:
    cdef int i
    for i in range(4):
        t.koz[i] = t.penalty[i] = 0
    for i in range(8):
        t.per_contract[i] = 0
        t.declared[0][i] = t.declared[1][i] = t.declared[2][i] = t.declared[3][i] = 0


cdef inline int tally_problem(const Tally* t, const CoreRules* r, int64_t number, int seat,
                              int contract) noexcept nogil:
    """What declaring ``contract`` (1..7) in deal ``number`` (1-based) breaks: SCHEDULE_*."""
    if r.schedule == FIXED:
        if r.fixed_order[(number - 1) % r.nfixed] != contract:
            return SCHEDULE_NOT_SCHEDULED
        return SCHEDULE_OK
    if r.schedule == ROTATION:
        return SCHEDULE_QUOTA if t.declared[seat][contract] else SCHEDULE_OK
    if contract == KOZ:
        if number <= r.penalty_only_deals or t.koz[seat] >= r.koz_quota:
            return SCHEDULE_QUOTA
        return SCHEDULE_OK
    if t.penalty[seat] >= r.penalty_quota:
        return SCHEDULE_QUOTA
    if t.per_contract[contract] >= r.max_per_penalty:
        return SCHEDULE_LIMIT
    return SCHEDULE_OK


cdef inline void tally_count(Tally* t, int seat, int contract, int step) noexcept nogil:
    """Count (step 1) or take back (step -1) one declaration in the quota counts."""
    t.per_contract[contract] += step
    if contract == KOZ:
        t.koz[seat] += step
    else:
        t.penalty[seat] += step


cdef inline void tally_add(Tally* t, int seat, int contract) noexcept nogil:
    """``seat`` declared ``contract``."""
    t.declared[seat][contract] = 1
    tally_count(t, seat, contract, 1)


cdef inline bint tally_feasible(const Tally* t, const CoreRules* r, int seat,
                                int64_t number) noexcept nogil:
    """Whether deals number+1 .. deal_count can all still be declared within the quotas."""
    cdef int64_t remaining[4]
    cdef int64_t koz_eligible[4]
    cdef int64_t j, koz_left, pen_left, most_koz, penalty_deals = 0, room = 0
    cdef int s, c
    for s in range(4):
        remaining[s] = koz_eligible[s] = 0
    j = number + 1
    while j <= r.deal_count:
        s = <int>((seat + j - number) % 4)
        remaining[s] += 1
        if j > r.penalty_only_deals:
            koz_eligible[s] += 1
        j += 1
    for s in range(4):
        koz_left = r.koz_quota - t.koz[s]
        pen_left = r.penalty_quota - t.penalty[s]
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
        if r.max_per_penalty - t.per_contract[c] > 0:
            room += r.max_per_penalty - t.per_contract[c]
    return penalty_deals <= room


cdef inline int tally_allowed(Tally* t, const CoreRules* r, int seat, int64_t number,
                              int* out) noexcept nogil:
    """The contracts ``seat`` may declare in deal ``number``, ascending, into ``out`` (room
    for 7); returns how many. Under QUOTA only choices that leave the rest of the match
    declarable are offered; a schedule that cannot be kept at all offers what breaks nothing
    now, or else every contract (the validator then reports the breach)."""
    cdef int now_ok[7]
    cdef int nok = 0, n = 0, c, i
    for c in range(KOZ, SON_IKI + 1):
        if tally_problem(t, r, number, seat, c) == SCHEDULE_OK:
            now_ok[nok] = c
            nok += 1
    if r.schedule == QUOTA:
        for i in range(nok):
            tally_count(t, seat, now_ok[i], 1)
            if tally_feasible(t, r, seat, number):
                out[n] = now_ok[i]
                n += 1
            tally_count(t, seat, now_ok[i], -1)
    if n == 0:
        for i in range(nok):
            out[i] = now_ok[i]
        n = nok
    if n == 0:
        for c in range(KOZ, SON_IKI + 1):
            out[n] = c
            n += 1
    return n
