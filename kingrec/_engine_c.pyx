# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The rules engine, compiled: the fast twin of ``kingrec._engine_py``.

The public functions (``judge_play``, ``legal_plays``, ``trick_winner``, ``trick_units``,
``replay_deal``) take and return exactly what the reference twin does; arguments outside
the engine's domain (odd types, cards outside 0..51, unknown contracts, koz without a trump
suit, ...) are handed to the reference so even its errors are the same. Inside, cards are
C ints and hands ``uint64_t`` masks: no Python object per card.

``MatchChecker`` (private; used by ``kingrec.fastcheck``) walks a serialized
``kingrec.v1.Match`` in its wire format and says whether ``validate_match`` would report no
finding at all. Anything it does not fully understand answers "not certainly clean", and the
caller falls back to the reference validator, so reports never differ.
"""

from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcmp
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize
from cpython.bytes cimport PyBytes_GET_SIZE

from kingrec import _engine_py as _ref
from kingrec._engine_types import DealReplay, Violation

__all__ = ["judge_play", "legal_plays", "replay_deal", "trick_units", "trick_winner"]

ctypedef unsigned char uchar

# Contracts, flags, verdicts and ends (checked against the Python values at import, below).
from kingrec._engine_consts cimport *

cdef uint64_t SUIT[4]
cdef uchar SUIT_OF[64]  # card // 13 by table: the core divides by 13 on every card
cdef uint64_t PENALTY[8]
cdef uint64_t HEARTS_MASK
cdef uint64_t ALL_CARDS = (<uint64_t>1 << 52) - 1


def _init_tables():
    """Fill the C tables from the Python ones, so both twins share one definition."""
    from kingrec import _engine_types as types
    from kingrec import rules
    from kingrec.cards import HEARTS, SUIT_MASKS
    from kingrec.contracts import PENALTY_MASKS

    global HEARTS_MASK
    for s in range(4):
        SUIT[s] = SUIT_MASKS[s]
    for c in range(64):
        SUIT_OF[c] = c // 13
    PENALTY[0] = 0
    for c in range(1, 8):
        PENALTY[c] = PENALTY_MASKS[c]
    HEARTS_MASK = SUIT_MASKS[HEARTS]
    expected = {
        "LEGAL": LEGAL, "NOT_IN_HAND": NOT_IN_HAND, "TRUMP_LEAD_BANNED": TRUMP_LEAD_BANNED,
        "HEART_LEAD_BANNED": HEART_LEAD_BANNED, "MUST_FOLLOW_SUIT": MUST_FOLLOW_SUIT,
        "MUST_RAISE_TRUMP": MUST_RAISE_TRUMP, "MUST_GIVE_PENALTY_CARD": MUST_GIVE_PENALTY_CARD,
        "MUST_RUFF": MUST_RUFF, "MUST_OVERTRUMP": MUST_OVERTRUMP,
        "MUST_DISCARD_PENALTY_CARD": MUST_DISCARD_PENALTY_CARD, "NOT_A_CARD": NOT_A_CARD,
        "REVOKE_MARK_ON_LEGAL_PLAY": REVOKE_MARK_ON_LEGAL_PLAY,
        "END_UNREADABLE": END_UNREADABLE, "END_ALL_TRICKS": END_ALL_TRICKS,
        "END_EARLY": END_EARLY, "END_INCOMPLETE": END_INCOMPLETE, "END_REVOKE": END_REVOKE,
    }
    flags = {
        "F_MUST_RUFF": F_MUST_RUFF, "F_MUST_OVERTRUMP": F_MUST_OVERTRUMP,
        "F_RAISE_ON_TRUMP_LEAD": F_RAISE_ON_TRUMP_LEAD, "F_TRUMP_LEAD_BREAK": F_TRUMP_LEAD_BREAK,
        "F_HEART_LEAD_BAN": F_HEART_LEAD_BAN, "F_WITHHOLDING": F_WITHHOLDING,
        "F_VOID_DISCARD": F_VOID_DISCARD, "F_RIFKI_HEART_AFTER_KING": F_RIFKI_HEART_AFTER_KING,
        "F_EARLY_END": F_EARLY_END, "F_REVOKE_PENALIZE": F_REVOKE_PENALIZE,
    }
    for name, value in expected.items():
        if getattr(types, name) != value:
            raise ImportError(f"_engine_c is out of step with _engine_types.{name}")
    for name, value in flags.items():
        if getattr(rules, name) != value:
            raise ImportError(f"_engine_c is out of step with rules.{name}")


_init_tables()


# ---------------------------------------------------------------------------- the core
# Straight ports of _engine_py; read that file for the rules, this one for the speed.

cdef inline uint64_t _above(int card) noexcept nogil:
    return SUIT[SUIT_OF[card]] & ~((<uint64_t>2 << card) - 1)


cdef inline uint64_t _below(int card) noexcept nogil:
    return SUIT[SUIT_OF[card]] & ((<uint64_t>1 << card) - 1)


cdef inline int _highest_of_suit(const int* trick, int n, int suit) noexcept nogil:
    cdef int best = -1, i
    for i in range(n):
        if SUIT_OF[trick[i]] == suit and trick[i] > best:
            best = trick[i]
    return best


cdef inline void _keep(uint64_t subset, int reason, uint64_t bit,
                       uint64_t* cands, int* code) noexcept nogil:
    # A filter keeps only `subset`, unless that would leave no card.
    if subset:
        if code[0] == LEGAL and cands[0] & bit and not subset & bit:
            code[0] = reason
        cands[0] = subset


cdef inline int _judge(uint64_t hand, const int* trick, int n, int card, int contract, int trump,
                long flags, uint64_t played, uint64_t* legal) noexcept nogil:
    """judge_play on C values: card 0..63, trick cards 0..51, trump 0..3 in koz."""
    cdef uint64_t bit = <uint64_t>1 << card
    cdef int code = LEGAL if hand & bit else NOT_IN_HAND
    cdef uint64_t cands = hand, following, covered, penalty
    cdef bint koz = contract == KOZ
    cdef int led, top_trump
    if n == 0:
        if koz and flags & F_TRUMP_LEAD_BREAK and not played & SUIT[trump]:
            _keep(cands & ~SUIT[trump], TRUMP_LEAD_BANNED, bit, &cands, &code)
        elif not koz and flags & F_HEART_LEAD_BAN and not played & HEARTS_MASK:
            _keep(cands & ~HEARTS_MASK, HEART_LEAD_BANNED, bit, &cands, &code)
        legal[0] = cands
        return code
    led = SUIT_OF[trick[0]]
    following = cands & SUIT[led]
    if following:
        _keep(following, MUST_FOLLOW_SUIT, bit, &cands, &code)
        if koz and led == trump and flags & F_RAISE_ON_TRUMP_LEAD:
            _keep(cands & _above(_highest_of_suit(trick, n, trump)), MUST_RAISE_TRUMP,
                  bit, &cands, &code)
        elif not koz and flags & F_WITHHOLDING:
            covered = PENALTY[contract] & _below(_highest_of_suit(trick, n, led))
            _keep(cands & covered, MUST_GIVE_PENALTY_CARD, bit, &cands, &code)
    elif koz:
        if flags & F_MUST_RUFF:
            _keep(cands & SUIT[trump], MUST_RUFF, bit, &cands, &code)
        top_trump = _highest_of_suit(trick, n, trump)
        if flags & F_MUST_OVERTRUMP and top_trump >= 0:
            _keep(cands & _above(top_trump), MUST_OVERTRUMP, bit, &cands, &code)
    elif flags & F_VOID_DISCARD:
        penalty = cands & PENALTY[contract]
        if penalty:
            _keep(penalty, MUST_DISCARD_PENALTY_CARD, bit, &cands, &code)
        elif flags & F_RIFKI_HEART_AFTER_KING:
            _keep(cands & HEARTS_MASK, MUST_DISCARD_PENALTY_CARD, bit, &cands, &code)
    legal[0] = cands
    return code


cdef inline int _winner(const int* trick, int n, int trump) noexcept nogil:
    cdef int best = 0, i
    for i in range(1, n):
        if SUIT_OF[trick[i]] == SUIT_OF[trick[best]]:
            if trick[i] > trick[best]:
                best = i
        elif SUIT_OF[trick[i]] == trump:
            best = i
    return best


cdef inline int _units(const int* trick, int n, int trick_index, int contract) noexcept nogil:
    cdef int i, count = 0
    if contract == KOZ or contract == EL_ALMAZ:
        return 1
    if contract == SON_IKI:
        return 1 if trick_index >= 11 else 0
    for i in range(n):
        if PENALTY[contract] >> trick[i] & 1:
            count += 1
    return count


cdef inline void _hold(const uchar* hands, uint64_t* held) noexcept nogil:
    """The four hands as masks: seat s holds hands[13s:13s+13] (bytes < 64)."""
    cdef int s, j
    for s in range(4):
        held[s] = 0
        for j in range(13):
            held[s] |= <uint64_t>1 << hands[13 * s + j]


cdef struct Viol:
    int play
    int seat
    int card
    int code
    uint64_t legal


cdef struct Replay:
    int end
    Py_ssize_t consumed
    int ntricks
    uchar winners[13]
    int units[4]
    int revoker
    int nviol


cdef void _replay(const uchar* hands, const uchar* plays, Py_ssize_t nplays, int declarer,
                  int contract, int trump, long flags, Py_ssize_t revoke_play, Replay* out,
                  Viol* viols, bint stop_at_violation) noexcept nogil:
    """replay_deal on C values: hands 52 bytes < 64, declarer 0..3, contract 1..7.

    ``viols`` holds room for 53 entries (a deal judges at most 52 cards, plus a stop).
    With ``stop_at_violation`` it returns at the first violation (the fast check only
    needs to know there is one).
    """
    cdef uint64_t held[4]
    cdef uint64_t penalty = PENALTY[contract], played = 0, legal
    cdef int trick[4]
    cdef int n = 0, leader = declarer, seat, card, code, w, i
    cdef Py_ssize_t index
    _hold(hands, held)
    out.units[0] = out.units[1] = out.units[2] = out.units[3] = 0
    out.ntricks = 0
    out.nviol = 0
    out.revoker = -1
    for index in range(nplays):
        seat = (leader + n) & 3
        card = plays[index]
        if card >= 52:
            viols[out.nviol] = Viol(<int>index, seat, card, NOT_A_CARD, 0)
            out.nviol += 1
            out.end, out.consumed = END_UNREADABLE, index
            out.units[0] = out.units[1] = out.units[2] = out.units[3] = 0
            return
        code = _judge(held[seat], trick, n, card, contract, trump, flags, played, &legal)
        if index == revoke_play and flags & F_REVOKE_PENALIZE:
            if code == LEGAL or code == NOT_IN_HAND:
                viols[out.nviol] = Viol(<int>index, seat, card,
                                        code if code else REVOKE_MARK_ON_LEGAL_PLAY, legal)
                out.nviol += 1
            out.end, out.consumed, out.revoker = END_REVOKE, index + 1, seat
            out.units[0] = out.units[1] = out.units[2] = out.units[3] = 0
            return
        if code != LEGAL:
            viols[out.nviol] = Viol(<int>index, seat, card, code, legal)
            out.nviol += 1
            if stop_at_violation:
                return
        held[seat] &= ~(<uint64_t>1 << card)
        trick[n] = card
        n += 1
        if n < 4:
            continue
        w = (leader + _winner(trick, 4, trump)) & 3
        out.units[w] += _units(trick, 4, out.ntricks, contract)
        out.winners[out.ntricks] = <uchar>w
        out.ntricks += 1
        played |= ((<uint64_t>1 << trick[0]) | (<uint64_t>1 << trick[1])
                   | (<uint64_t>1 << trick[2]) | (<uint64_t>1 << trick[3]))
        n = 0
        leader = w
        if out.ntricks == 13:
            out.end, out.consumed = END_ALL_TRICKS, index + 1
            return
        if flags & F_EARLY_END and played & penalty == penalty:
            out.end, out.consumed = END_EARLY, index + 1
            return
    out.end, out.consumed = END_INCOMPLETE, nplays


# ---------------------------------------------------------------------------- the twin API


cdef int _load_trick(object trick, int* buf) except -2:
    """Copy a trick of up to 4 cards 0..51 into ``buf``; -1 when it is outside that domain."""
    cdef Py_ssize_t n, i
    cdef long c
    try:
        n = len(trick)
        if n > 4:
            return -1
        for i in range(n):
            c = trick[i]
            if c < 0 or c >= 52:
                return -1
            buf[i] = <int>c
    except (TypeError, OverflowError, ValueError, IndexError):
        return -1
    return <int>n


def judge_play(hand, trick, card, contract, trump, flags, played):
    """Judge ``card`` played from ``hand`` onto ``trick``: (verdict, mask of legal cards)."""
    cdef uint64_t h, p, legal
    cdef long c, k, t, f
    cdef int buf[4]
    cdef int n
    try:
        h = hand
        p = played
        c = card
        k = contract
        t = trump
        f = flags
    except (TypeError, OverflowError):
        return _ref.judge_play(hand, trick, card, contract, trump, flags, played)
    n = _load_trick(trick, buf)
    if n < 0 or not (0 <= c < 64 and 1 <= k <= 7 and -1 <= t <= 3) or (k == KOZ and t < 0):
        return _ref.judge_play(hand, trick, card, contract, trump, flags, played)
    code = _judge(h, buf, n, <int>c, <int>k, <int>t, f, p, &legal)
    return code, legal


def legal_plays(hand, trick, contract, trump, flags, played):
    """The mask of cards ``hand`` may play onto ``trick``."""
    return judge_play(hand, trick, 52, contract, trump, flags, played)[1]


def trick_winner(trick, trump):
    """Position in ``trick`` (0 = leader) of the card that wins it."""
    cdef int buf[4]
    cdef int n = _load_trick(trick, buf)
    cdef long t
    try:
        t = trump
    except (TypeError, OverflowError):
        return _ref.trick_winner(trick, trump)
    if n < 0 or not -1 <= t <= 3:
        return _ref.trick_winner(trick, trump)
    return _winner(buf, n, <int>t)


def trick_units(trick, trick_index, contract):
    """Scoring units the winner of a complete trick takes (tricks, penalty cards, last tricks)."""
    cdef int buf[4]
    cdef int n
    cdef long k
    try:
        k = contract
    except (TypeError, OverflowError):
        return _ref.trick_units(trick, trick_index, contract)
    if k == KOZ or k == EL_ALMAZ:
        return 1
    if k == SON_IKI:
        return 1 if trick_index >= 11 else 0
    n = _load_trick(trick, buf)
    if n < 0 or not KUPA <= k <= RIFKI:
        return _ref.trick_units(trick, trick_index, contract)
    return _units(buf, n, 0, <int>k)


cdef const uchar* _bytes_of(object data, Py_ssize_t* size):
    """The buffer of exact ``bytes`` (the usual case), else NULL."""
    if PyBytes_CheckExact(data):
        size[0] = PyBytes_GET_SIZE(data)
        return <const uchar*>PyBytes_AS_STRING(data)
    return NULL


def replay_deal(hands, plays, declarer, contract, trump, flags, revoke_play=-1):
    """Replay one deal's plays from the declarer's lead, judging every card."""
    cdef Py_ssize_t nh = 0, np = 0, rp, i
    cdef const uchar* h
    cdef const uchar* p
    cdef long d, k, t, f
    cdef Replay out
    cdef Viol viols[53]
    if isinstance(hands, bytearray):
        hands = bytes(hands)
    if isinstance(plays, bytearray):
        plays = bytes(plays)
    h = _bytes_of(hands, &nh)
    p = _bytes_of(plays, &np)
    try:
        d = declarer
        k = contract
        t = trump
        f = flags
        rp = revoke_play
    except (TypeError, OverflowError):
        h = NULL
    if h != NULL and p != NULL:
        if nh < 52 or not (0 <= d <= 3 and 1 <= k <= 7 and -1 <= t <= 3) or (k == KOZ and t < 0):
            h = NULL
        else:
            for i in range(52):
                if h[i] >= 64:
                    h = NULL
                    break
    if h == NULL or p == NULL:
        return _ref.replay_deal(hands, plays, declarer, contract, trump, flags, revoke_play)
    if not 0 <= rp < np:
        rp = -1
    _replay(h, p, np, <int>d, <int>k, <int>t, f, rp, &out, viols, False)
    violations = [
        Violation(viols[i].play, viols[i].seat, viols[i].card, viols[i].code, viols[i].legal)
        for i in range(out.nviol)
    ]
    return DealReplay(
        out.end,
        out.consumed,
        PyBytes_FromStringAndSize(<const char*>out.winners, out.ntricks),
        (out.units[0], out.units[1], out.units[2], out.units[3]),
        out.revoker,
        violations,
    )


# ---------------------------------------------------------------------------- wire format
# Just enough of the protobuf wire format for kingrec.v1.Match. Every helper returns False
# for "not certainly clean": malformed bytes, wire types we do not expect, values too big
# for their field (the Python parser would truncate them), groups.

cdef enum:
    WT_VARINT = 0
    WT_I64 = 1
    WT_LEN = 2
    WT_I32 = 5
    U32_MAX = 0xFFFFFFFF
    I32_MAX = 0x7FFFFFFF


cdef bint _varint_long(const uchar** pp, const uchar* end, uint64_t* out) noexcept nogil:
    cdef const uchar* p = pp[0]
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef uchar b
    while True:
        if p >= end or shift > 63:
            return False  # runs past the end, or past ten bytes
        b = p[0]
        p += 1
        v |= <uint64_t>(b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    pp[0] = p
    out[0] = v
    return True


cdef inline bint _varint(const uchar** pp, const uchar* end, uint64_t* out) noexcept nogil:
    # In line for the one-byte varints most tags and values are.
    if pp[0] < end and pp[0][0] < 0x80:
        out[0] = pp[0][0]
        pp[0] += 1
        return True
    return _varint_long(pp, end, out)


cdef inline bint _tag(const uchar** pp, const uchar* end, uint64_t* field,
                      int* wt) noexcept nogil:
    cdef uint64_t tag
    if not _varint(pp, end, &tag) or tag > U32_MAX or tag >> 3 == 0:
        return False
    field[0] = tag >> 3
    wt[0] = <int>(tag & 7)
    return True


cdef inline bint _len(const uchar** pp, const uchar* end, const uchar** start,
                      Py_ssize_t* size) noexcept nogil:
    """Read a length-delimited value: its start and size; the cursor moves past it."""
    cdef uint64_t n
    if not _varint(pp, end, &n) or n > <uint64_t>(end - pp[0]):
        return False
    start[0] = pp[0]
    size[0] = <Py_ssize_t>n
    pp[0] += n
    return True


cdef inline bint _skip(const uchar** pp, const uchar* end, int wt) noexcept nogil:
    """Skip an unknown field (from a newer writer) by its wire type; groups are refused."""
    cdef uint64_t v
    cdef const uchar* s
    cdef Py_ssize_t n
    if wt == WT_VARINT:
        return _varint(pp, end, &v)
    if wt == WT_LEN:
        return _len(pp, end, &s, &n)
    if wt == WT_I64:
        if end - pp[0] < 8:
            return False
        pp[0] += 8
        return True
    if wt == WT_I32:
        if end - pp[0] < 4:
            return False
        pp[0] += 4
        return True
    return False


cdef inline bint _u32(const uchar** pp, const uchar* end, int wt, uint64_t* out) noexcept nogil:
    return wt == WT_VARINT and _varint(pp, end, out) and out[0] <= U32_MAX


cdef inline bint _enum(const uchar** pp, const uchar* end, int wt, uint64_t* out) noexcept nogil:
    return wt == WT_VARINT and _varint(pp, end, out) and out[0] <= I32_MAX


cdef bint _utf8(const uchar* s, Py_ssize_t n) noexcept nogil:
    """Strict UTF-8, as the protobuf parser demands of string fields."""
    cdef Py_ssize_t i = 0
    cdef uchar c, c1
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
            continue
        if c < 0xC2 or c > 0xF4:
            return False
        if c < 0xE0:
            if i + 1 >= n or s[i + 1] & 0xC0 != 0x80:
                return False
            i += 2
            continue
        if i + 2 >= n:
            return False
        c1 = s[i + 1]
        if c1 & 0xC0 != 0x80 or s[i + 2] & 0xC0 != 0x80:
            return False
        if c < 0xF0:
            if (c == 0xE0 and c1 < 0xA0) or (c == 0xED and c1 >= 0xA0):
                return False  # overlong form or surrogate
            i += 3
            continue
        if i + 3 >= n or s[i + 3] & 0xC0 != 0x80:
            return False
        if (c == 0xF0 and c1 < 0x90) or (c == 0xF4 and c1 >= 0x90):
            return False  # overlong form or beyond U+10FFFF
        i += 4
    return True


cdef inline bint _string(const uchar** pp, const uchar* end, int wt) noexcept nogil:
    cdef const uchar* s
    cdef Py_ssize_t n
    return wt == WT_LEN and _len(pp, end, &s, &n) and _utf8(s, n)


cdef bint _walk_strings(const uchar* p, const uchar* end, uint64_t string_fields,
                        uint64_t varint_fields, uint64_t* seat) noexcept nogil:
    """Walk a message of strings and varints (Timestamp, map entry, Player) for parseability.

    Fields in the ``string_fields`` / ``varint_fields`` bit sets (bit = field number < 64)
    must have those types; ``seat`` receives field 3 of a Player (uint32) when not NULL.
    """
    cdef uint64_t field, v
    cdef int wt
    while p < end:
        if not _tag(&p, end, &field, &wt):
            return False
        if field < 64 and string_fields >> field & 1:
            if not _string(&p, end, wt):
                return False
        elif field < 64 and varint_fields >> field & 1:
            if wt != WT_VARINT or not _varint(&p, end, &v):
                return False
            if seat != NULL and field == 3:
                if v > U32_MAX:
                    return False
                seat[0] = v
        elif not _skip(&p, end, wt):
            return False
    return True


cdef bint _walk_metadata(const uchar* p, const uchar* end) noexcept nogil:
    """MatchMetadata: strings 1 2 4 5, Timestamp 3, map<string,string> 6, enum 7."""
    cdef uint64_t field, v
    cdef int wt
    cdef const uchar* s
    cdef Py_ssize_t n
    while p < end:
        if not _tag(&p, end, &field, &wt):
            return False
        if field == 1 or field == 2 or field == 4 or field == 5:
            if not _string(&p, end, wt):
                return False
        elif field == 3:  # Timestamp: int64 seconds = 1, int32 nanos = 2
            if wt != WT_LEN or not _len(&p, end, &s, &n):
                return False
            if not _walk_strings(s, s + n, 0, (1 << 1) | (1 << 2), NULL):
                return False
        elif field == 6:  # map entry: string key = 1, string value = 2
            if wt != WT_LEN or not _len(&p, end, &s, &n):
                return False
            if not _walk_strings(s, s + n, (1 << 1) | (1 << 2), 0, NULL):
                return False
        elif field == 7:
            if wt != WT_VARINT or not _varint(&p, end, &v):
                return False
        elif not _skip(&p, end, wt):
            return False
    return True


cdef bint _packed_sint32(const uchar* p, const uchar* end, int64_t* out,
                         int* count) noexcept nogil:
    """Decode a packed sint32 field into ``out`` (room for 4); more than 4 values fail."""
    cdef uint64_t v
    cdef int n = 0
    while p < end:
        if not _varint(&p, end, &v) or v > U32_MAX or n == 4:
            return False
        out[n] = <int64_t>(v >> 1) ^ -<int64_t>(v & 1)
        n += 1
    count[0] = n
    return True


# ---------------------------------------------------------------------------- the match check

cdef struct Rules:
    long flags[8]
    int64_t unit[8]
    int64_t full_total[8]
    int64_t deal_count
    int64_t schedule  # 1 quota, 2 rotation, 3 fixed
    int64_t koz_quota
    int64_t penalty_quota
    int64_t max_per_penalty
    int64_t penalty_only_deals
    int64_t first_declarer  # 1 any seat, 2 holder of first_card
    int64_t first_card
    int64_t dealer  # 0 unchecked, 1 declarer, 2 seat before declarer
    int64_t penalize
    int64_t play_timeout
    int64_t trump_timeout
    int64_t zero_sum
    const uchar* fixed_order
    Py_ssize_t fixed_len

cdef enum:
    N_PARAMS = 34  # 3 * 7 per-contract values, then 13 scalars (see kingrec.fastcheck)


cdef class _RulesParams:
    """A resolved ruleset as C values; keeps the fixed-order bytes alive."""

    cdef Rules r
    cdef bytes fixed

    def __init__(self, tuple ints, bytes fixed):
        cdef int c
        if len(ints) != N_PARAMS:
            raise ValueError("ruleset parameters of the wrong length")
        self.r.flags[0] = self.r.unit[0] = self.r.full_total[0] = 0  # contract 0 is no contract
        for c in range(1, 8):
            self.r.flags[c] = ints[c - 1]
            self.r.unit[c] = ints[6 + c]
            self.r.full_total[c] = ints[13 + c]
        (self.r.deal_count, self.r.schedule, self.r.koz_quota, self.r.penalty_quota,
         self.r.max_per_penalty, self.r.penalty_only_deals, self.r.first_declarer,
         self.r.first_card, self.r.dealer, self.r.penalize, self.r.play_timeout,
         self.r.trump_timeout, self.r.zero_sum) = ints[21:]
        self.fixed = fixed
        self.r.fixed_order = <const uchar*>PyBytes_AS_STRING(fixed)
        self.r.fixed_len = len(fixed)
        if self.r.schedule == 3 and self.r.fixed_len == 0:
            raise ValueError("a fixed schedule without an order")


cdef struct MatchTop:
    uint64_t format_version
    const uchar* match_id
    Py_ssize_t match_id_len
    const uchar* ruleset
    Py_ssize_t ruleset_len
    int rulesets
    uint64_t status
    int seats  # bit s: a player sits at seat s
    int players
    Py_ssize_t deals
    int64_t claimed[4]
    int nclaimed
    int claimed_chunks


cdef struct Tally:
    # the schedule's running counts (validator._Schedule)
    int64_t koz[4]
    int64_t penalty[4]
    int64_t per_contract[8]
    uchar declared[4][8]
    int64_t totals[4]
    bint whole  # no deal stopped by a revoke or left unfinished
    int first  # seat that must declare deal 1, -1: not yet known


cdef bint _scan_top(const uchar* p, const uchar* end, MatchTop* top) noexcept nogil:
    """First pass over a Match: everything but the deals, which are only counted."""
    cdef uint64_t field, v, seat
    cdef int wt
    cdef const uchar* s
    cdef Py_ssize_t n
    while p < end:
        if not _tag(&p, end, &field, &wt):
            return False
        if field == 8:
            if wt != WT_LEN or not _len(&p, end, &s, &n):
                return False
            top.deals += 1
        elif field == 1:
            if not _u32(&p, end, wt, &top.format_version):
                return False
        elif field == 2:
            if wt != WT_LEN or not _len(&p, end, &top.match_id, &top.match_id_len):
                return False
            if not _utf8(top.match_id, top.match_id_len):
                return False
        elif field == 3:
            if wt != WT_LEN or not _len(&p, end, &s, &n) or not _walk_metadata(s, s + n):
                return False
        elif field == 4:  # Player: strings id 1, name 2, seat_name 4; uint32 seat 3
            seat = 0
            if wt != WT_LEN or not _len(&p, end, &s, &n):
                return False
            if not _walk_strings(s, s + n, (1 << 1) | (1 << 2) | (1 << 4), 1 << 3, &seat):
                return False
            if seat > 3 or top.seats >> seat & 1:
                return False
            top.seats |= 1 << seat
            top.players += 1
        elif field == 5:
            if wt != WT_LEN or not _len(&p, end, &top.ruleset, &top.ruleset_len):
                return False
            top.rulesets += 1
        elif field == 6:
            if not _enum(&p, end, wt, &top.status):
                return False
        elif field == 7:
            if not _string(&p, end, wt):
                return False
        elif field == 9:
            if wt != WT_LEN or not _len(&p, end, &s, &n):
                return False  # unpacked repeated values: left to the reference
            top.claimed_chunks += 1
            if not _packed_sint32(s, s + n, top.claimed, &top.nclaimed):
                return False
        elif not _skip(&p, end, wt):
            return False
    return True


cdef struct DealMsg:
    uint64_t number
    uint64_t dealer
    uint64_t declarer
    uint64_t contract
    uint64_t trump
    uint64_t revoke_play
    uint64_t end
    uint64_t trump_think
    bint has_dealer
    bint has_revoke
    bint has_trump_think
    const uchar* hands
    Py_ssize_t nhands
    const uchar* plays
    Py_ssize_t nplays
    const uchar* think
    Py_ssize_t think_len
    const uchar* autos
    Py_ssize_t autos_len
    const uchar* scores
    Py_ssize_t scores_len
    int chunks  # packed repeated fields seen more than once: left to the reference


cdef bint _parse_deal(const uchar* p, const uchar* end, DealMsg* d) noexcept nogil:
    cdef uint64_t field
    cdef int wt
    cdef const uchar* s
    cdef Py_ssize_t n
    while p < end:
        if not _tag(&p, end, &field, &wt):
            return False
        if field == 7:
            if wt != WT_LEN or not _len(&p, end, &d.plays, &d.nplays):
                return False
        elif field == 6:
            if wt != WT_LEN or not _len(&p, end, &d.hands, &d.nhands):
                return False
        elif field == 8:
            if wt != WT_LEN or d.think != NULL or not _len(&p, end, &d.think, &d.think_len):
                return False
        elif field == 9:
            if wt != WT_LEN or d.autos != NULL or not _len(&p, end, &d.autos, &d.autos_len):
                return False
        elif field == 12:
            if wt != WT_LEN or d.scores != NULL or not _len(&p, end, &d.scores, &d.scores_len):
                return False
        elif field == 1:
            if not _u32(&p, end, wt, &d.number):
                return False
        elif field == 2:
            if not _u32(&p, end, wt, &d.dealer):
                return False
            d.has_dealer = True
        elif field == 3:
            if not _u32(&p, end, wt, &d.declarer):
                return False
        elif field == 4:
            if not _enum(&p, end, wt, &d.contract):
                return False
        elif field == 5:
            if not _enum(&p, end, wt, &d.trump):
                return False
        elif field == 10:
            if not _u32(&p, end, wt, &d.revoke_play):
                return False
            d.has_revoke = True
        elif field == 11:
            if not _enum(&p, end, wt, &d.end):
                return False
        elif field == 13:
            if not _u32(&p, end, wt, &d.trump_think):
                return False
            d.has_trump_think = True
        elif not _skip(&p, end, wt):
            return False
    return True


cdef bint _check_deal(const uchar* p, const uchar* end, const Rules* r, Tally* t,
                      int64_t number, bint last, bint complete) noexcept nogil:
    """Whether one deal gives no finding (validator._MatchCheck.check_deal and friends)."""
    cdef DealMsg d
    cdef Replay rep
    cdef Viol viols[53]
    cdef uint64_t seen = 0, auto_mask = 0, v
    cdef Py_ssize_t i, nthink = 0
    cdef const uchar* q
    cdef int seat, contract, trump, expected, nscores = 0
    cdef int64_t scores[4]
    cdef int64_t claimed[4]
    memset_deal(&d)
    if not _parse_deal(p, end, &d):
        return False
    # deal number, declarer, dealer
    if d.number != <uint64_t>number or d.declarer > 3:
        return False
    seat = <int>d.declarer
    contract = <int>d.contract
    if contract < KOZ or contract > SON_IKI:
        return False
    # the deck (needed first: under HOLDER_OF_CARD deal 1's hands name the first declarer)
    if d.nhands != 52:
        return False
    for i in range(52):
        if d.hands[i] >= 52:
            return False
        seen |= <uint64_t>1 << d.hands[i]
    if seen != ALL_CARDS:
        return False
    if number == 1:
        if r.first_declarer == 2:
            for i in range(52):
                if d.hands[i] == r.first_card:
                    t.first = <int>(i // 13)
                    break
        else:
            t.first = seat
    if seat != (t.first + number - 1) % 4:
        return False
    if d.has_dealer and d.dealer > 3:
        return False
    if r.dealer != 0 and d.has_dealer:
        expected = seat if r.dealer == 1 else (seat + 3) % 4
        if d.dealer != <uint64_t>expected:
            return False
    # the schedule
    if r.schedule == 3:
        if r.fixed_order[(number - 1) % r.fixed_len] != contract:
            return False
    elif r.schedule == 2:
        if t.declared[seat][contract]:
            return False
    elif contract == KOZ:
        if number <= r.penalty_only_deals or t.koz[seat] >= r.koz_quota:
            return False
    elif t.penalty[seat] >= r.penalty_quota or t.per_contract[contract] >= r.max_per_penalty:
        return False
    t.declared[seat][contract] = 1
    t.per_contract[contract] += 1
    if contract == KOZ:
        t.koz[seat] += 1
    else:
        t.penalty[seat] += 1
    # trumps: koz names one of the four suits, the others none
    if contract == KOZ:
        if d.trump < 1 or d.trump > 4:
            return False
        trump = <int>d.trump - 1
    elif d.trump != 0:
        return False
    else:
        trump = -1
    # play metadata: think times, auto plays, the revoke mark, the clocks
    if d.nplays > 52:
        return False  # more cards than a deal holds: played after its end
    if d.autos != NULL:
        q = d.autos
        while q < d.autos + d.autos_len:
            if not _varint(&q, d.autos + d.autos_len, &v) or v >= <uint64_t>d.nplays:
                return False
            auto_mask |= <uint64_t>1 << v
    if d.think != NULL:
        # One pass: a count other than 0 or one per play fails below, so judging the
        # clock on the way is only ever done when the validator would do it too.
        q = d.think
        while q < d.think + d.think_len:
            if q[0] < 0x80:  # think times are one or two bytes: decode those in line
                v = q[0]
                q += 1
            elif q + 1 < d.think + d.think_len and q[1] < 0x80:
                v = (q[0] & 0x7F) | (<uint64_t>q[1] << 7)
                q += 2
            elif not _varint_long(&q, d.think + d.think_len, &v):
                return False
            if v > U32_MAX or nthink >= 52:
                return False
            if <int64_t>v > r.play_timeout and not auto_mask >> nthink & 1:
                return False
            nthink += 1
        if nthink and nthink != d.nplays:
            return False
    if d.has_revoke and (not r.penalize or d.revoke_play >= <uint64_t>d.nplays):
        return False
    if d.has_trump_think and <int64_t>d.trump_think > r.trump_timeout:
        return False
    if d.scores != NULL:
        if not _packed_sint32(d.scores, d.scores + d.scores_len, claimed, &nscores):
            return False
        if nscores != 0 and nscores != 4:
            return False
    # the replay
    _replay(d.hands, d.plays, d.nplays, seat, contract, trump, r.flags[contract],
            <Py_ssize_t>d.revoke_play if d.has_revoke else -1, &rep, viols, True)
    if rep.nviol:
        return False
    if rep.consumed != d.nplays:
        return False
    if rep.end == END_INCOMPLETE:
        if not (d.end == 3 and last and not complete):
            return False
        t.whole = False
    elif d.end != 0 and d.end != <uint64_t>rep.end:
        return False
    if rep.end == END_REVOKE:
        t.whole = False
        scores[0] = scores[1] = scores[2] = scores[3] = 0
        # the revoker takes the contract's whole total as a penalty: -abs(full_total)
        scores[rep.revoker] = r.full_total[contract]
        if scores[rep.revoker] > 0:
            scores[rep.revoker] = -scores[rep.revoker]
    else:
        for i in range(4):
            scores[i] = rep.units[i] * r.unit[contract]
    if nscores == 4:
        for i in range(4):
            if claimed[i] != scores[i]:
                return False
    for i in range(4):
        t.totals[i] += scores[i]
    return True


cdef inline void memset_deal(DealMsg* d) noexcept nogil:
    d.number = d.dealer = d.declarer = d.contract = d.trump = d.revoke_play = 0
    d.end = d.trump_think = 0
    d.has_dealer = d.has_revoke = d.has_trump_think = False
    d.hands = d.plays = d.think = d.autos = d.scores = NULL
    d.nhands = d.nplays = d.think_len = d.autos_len = d.scores_len = 0
    d.chunks = 0


cdef bint _check_deals(const uchar* p, const uchar* end, const Rules* r,
                       const MatchTop* top) noexcept nogil:
    """Second pass: every deal in order, then the claimed totals."""
    cdef Tally t
    cdef uint64_t field
    cdef int wt, i
    cdef const uchar* s
    cdef Py_ssize_t n
    cdef int64_t number = 0, total = 0
    cdef bint complete = top.status == 1
    for i in range(4):
        t.koz[i] = t.penalty[i] = t.totals[i] = 0
    for i in range(8):
        t.per_contract[i] = 0
        t.declared[0][i] = t.declared[1][i] = t.declared[2][i] = t.declared[3][i] = 0
    t.whole = True
    t.first = -1
    while p < end:
        # The first pass checked the structure; these checks only keep the C compiler sure.
        if not _tag(&p, end, &field, &wt):
            return False
        if field != 8:
            if not _skip(&p, end, wt):
                return False
            continue
        if not _len(&p, end, &s, &n):
            return False
        number += 1
        if not _check_deal(s, s + n, r, &t, number, number == top.deals, complete):
            return False
    if top.nclaimed:
        if top.nclaimed != 4:
            return False
        for i in range(4):
            if top.claimed[i] != t.totals[i]:
                return False
            total += top.claimed[i]
        if complete and r.zero_sum and t.whole and total != 0 and top.deals == r.deal_count:
            return False
    return True


cdef class MatchChecker:
    """Decides from a serialized Match whether ``validate_match`` would find nothing.

    ``resolver(raw_ruleset_bytes)`` returns ``(ints, fixed_order_bytes)`` (see
    ``kingrec.fastcheck``) or None when the ruleset is unusable; results are cached by the
    raw bytes, and the last one is checked first with a memcmp since writers repeat the
    same ruleset in every match.
    """

    cdef object resolver
    cdef dict cache
    cdef bytes last_raw
    cdef _RulesParams last

    def __init__(self, resolver):
        self.resolver = resolver
        self.cache = {}
        self.last_raw = None
        self.last = None

    cdef _RulesParams _rules(self, const uchar* raw, Py_ssize_t n):
        cdef bytes key
        if raw == NULL:  # no ruleset in the record: resolved like an empty one
            raw = <const uchar*>b""
        if self.last_raw is not None and PyBytes_GET_SIZE(self.last_raw) == n and (
            memcmp(PyBytes_AS_STRING(self.last_raw), raw, n) == 0
        ):
            return self.last
        key = PyBytes_FromStringAndSize(<const char*>raw, n)
        try:
            params = self.cache[key]
        except KeyError:
            resolved = self.resolver(key)
            try:
                params = None if resolved is None else _RulesParams(*resolved)
            except (TypeError, ValueError, OverflowError):
                params = None
            if len(self.cache) >= 256:
                self.cache.clear()  # a bound on memory; real files hold few rulesets
            self.cache[key] = params
        self.last_raw = key
        self.last = params
        return params

    cdef object _check(self, object payload):
        """(deals, match_id bytes) when certainly clean, else None."""
        cdef Py_ssize_t size
        cdef const uchar* p
        cdef MatchTop top
        cdef _RulesParams params
        if not PyBytes_CheckExact(payload):
            payload = bytes(payload)
        p = <const uchar*>PyBytes_AS_STRING(payload)
        size = PyBytes_GET_SIZE(payload)
        top.format_version = top.status = 0
        top.match_id = top.ruleset = NULL
        top.match_id_len = top.ruleset_len = top.deals = 0
        top.rulesets = top.seats = top.players = top.nclaimed = top.claimed_chunks = 0
        if not _scan_top(p, p + size, &top):
            return None
        if (top.format_version != 1 or top.status == 0 or top.players != 4
                or top.seats != 15 or top.rulesets > 1 or top.claimed_chunks > 1):
            return None
        params = self._rules(top.ruleset, top.ruleset_len)
        if params is None:
            return None
        if top.deals > params.r.deal_count or (top.status == 1 and top.deals < params.r.deal_count):
            return None
        if not _check_deals(p, p + size, &params.r, &top):
            return None
        return top.deals, PyBytes_FromStringAndSize(<const char*>top.match_id, top.match_id_len)

    def check(self, payload):
        """``(deals, match_id_bytes)`` if the match is certainly clean, else None."""
        return self._check(payload)

    def check_batch(self, payloads):
        """``check`` for each payload of a list, in one call."""
        return [self._check(payload) for payload in payloads]
