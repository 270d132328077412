# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
# cython: initializedcheck=False, overflowcheck=False, embedsignature=False
"""The rules engine, compiled: the fast twin of ``kingrec._engine_py``.

The public functions and ``Deal`` take and return exactly what the reference twin does. The
rules themselves are the compiled core's (``_core.pxd``); this module only moves values
between Python and C. Arguments outside the core's domain (odd types, cards outside 0..51,
unknown contracts, koz without a trump suit, ...) are handed to the reference so even its
errors are the same.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_CheckExact, PyBytes_FromStringAndSize
from cpython.bytes cimport PyBytes_GET_SIZE
from libc.stdint cimport uint64_t

from kingrec cimport _core as core
from kingrec._core cimport CoreRules, DealState, Tally, uchar

from kingrec._engine_types import DealReplay, Violation
from kingrec.contracts import Contract as _Contract


def _reference():
    """The reference twin, for the odd input this module hands over to it: imported then,
    not when this one loads (a run over clean records, or the simulator's, never needs it)."""
    from kingrec import _engine_py
    return _engine_py


__all__ = [
    "Deal", "ScheduleTally", "core_constants", "judge_play", "legal_plays", "replay_deal", "trick_units",
    "trick_winner",
]


def core_constants():
    """Every constant and table of the compiled core, by the Python name it stands for."""
    return {
        "contracts": {"KOZ": core.KOZ, "EL_ALMAZ": core.EL_ALMAZ, "KUPA": core.KUPA,
                      "ERKEK": core.ERKEK, "KIZ": core.KIZ, "RIFKI": core.RIFKI,
                      "SON_IKI": core.SON_IKI},
        "engine": {
            "F_MUST_RUFF": core.F_MUST_RUFF, "F_MUST_OVERTRUMP": core.F_MUST_OVERTRUMP,
            "F_RAISE_ON_TRUMP_LEAD": core.F_RAISE_ON_TRUMP_LEAD,
            "F_TRUMP_LEAD_BREAK": core.F_TRUMP_LEAD_BREAK,
            "F_HEART_LEAD_BAN": core.F_HEART_LEAD_BAN, "F_WITHHOLDING": core.F_WITHHOLDING,
            "F_VOID_DISCARD": core.F_VOID_DISCARD,
            "F_RIFKI_HEART_AFTER_KING": core.F_RIFKI_HEART_AFTER_KING,
            "F_EARLY_END": core.F_EARLY_END, "F_REVOKE_PENALIZE": core.F_REVOKE_PENALIZE,
            "LEGAL": core.LEGAL, "NOT_IN_HAND": core.NOT_IN_HAND,
            "TRUMP_LEAD_BANNED": core.TRUMP_LEAD_BANNED,
            "HEART_LEAD_BANNED": core.HEART_LEAD_BANNED,
            "MUST_FOLLOW_SUIT": core.MUST_FOLLOW_SUIT, "MUST_RAISE_TRUMP": core.MUST_RAISE_TRUMP,
            "MUST_GIVE_PENALTY_CARD": core.MUST_GIVE_PENALTY_CARD, "MUST_RUFF": core.MUST_RUFF,
            "MUST_OVERTRUMP": core.MUST_OVERTRUMP,
            "MUST_DISCARD_PENALTY_CARD": core.MUST_DISCARD_PENALTY_CARD,
            "NOT_A_CARD": core.NOT_A_CARD,
            "REVOKE_MARK_ON_LEGAL_PLAY": core.REVOKE_MARK_ON_LEGAL_PLAY,
            "END_PLAYING": core.END_PLAYING, "END_ALL_TRICKS": core.END_ALL_TRICKS,
            "END_EARLY": core.END_EARLY, "END_INCOMPLETE": core.END_INCOMPLETE,
            "END_REVOKE": core.END_REVOKE, "END_UNREADABLE": core.END_UNREADABLE,
            "SCHEDULE_OK": core.SCHEDULE_OK, "SCHEDULE_QUOTA": core.SCHEDULE_QUOTA,
            "SCHEDULE_LIMIT": core.SCHEDULE_LIMIT,
            "SCHEDULE_NOT_SCHEDULED": core.SCHEDULE_NOT_SCHEDULED,
        },
        "rules": {"QUOTA": core.QUOTA, "ROTATION": core.ROTATION, "FIXED": core.FIXED,
                  "ANY_SEAT": core.FIRST_ANY_SEAT,
                  "HOLDER_OF_CARD": core.FIRST_HOLDER_OF_CARD,
                  "UNCHECKED": core.DEALER_UNCHECKED, "DECLARER": core.DEALER_DECLARER,
                  "SEAT_BEFORE_DECLARER": core.DEALER_SEAT_BEFORE},
        "MAX_FIXED": core.MAX_FIXED,
        "SUIT_MASKS": [core.SUIT[s] for s in range(4)],
        "SUIT_OF": [core.SUIT_OF[c] for c in range(52)],
        "PENALTY_MASKS": [core.PENALTY[c] for c in range(8)],
        "UNITS_PER_DEAL": [core.UNITS_PER_DEAL[c] for c in range(8)],
        "ALL_CARDS": core.ALL_CARDS,
    }


def _check_constants():
    """Refuse to load when the core's numbers differ from the Python ones."""
    from kingrec import _engine_types, rules
    from kingrec.cards import SUIT_MASKS
    from kingrec.contracts import PENALTY_MASKS, UNITS_PER_DEAL, Contract
    from kingrec.limits import MAX_FIXED_ORDER

    c = core_constants()
    problems = [n for n, v in c["contracts"].items() if Contract[n] != v]
    problems += [n for n, v in c["engine"].items() if getattr(_engine_types, n) != v]
    named = {"QUOTA": rules.Schedule.QUOTA, "ROTATION": rules.Schedule.ROTATION,
             "FIXED": rules.Schedule.FIXED, "ANY_SEAT": rules.FirstDeclarerRule.ANY_SEAT,
             "HOLDER_OF_CARD": rules.FirstDeclarerRule.HOLDER_OF_CARD,
             "UNCHECKED": rules.DealerRule.UNCHECKED, "DECLARER": rules.DealerRule.DECLARER,
             "SEAT_BEFORE_DECLARER": rules.DealerRule.SEAT_BEFORE_DECLARER}
    problems += [n for n, v in c["rules"].items() if named[n] != v]
    if c["SUIT_MASKS"] != list(SUIT_MASKS) or c["SUIT_OF"] != [x // 13 for x in range(52)]:
        problems.append("SUIT_MASKS")
    if c["PENALTY_MASKS"] != [PENALTY_MASKS.get(x, 0) for x in range(8)]:
        problems.append("PENALTY_MASKS")
    if c["UNITS_PER_DEAL"][1:] != [UNITS_PER_DEAL[Contract(x)] for x in range(1, 8)]:
        problems.append("UNITS_PER_DEAL")
    if c["MAX_FIXED"] != MAX_FIXED_ORDER:
        problems.append("MAX_FIXED")
    if problems:
        raise ImportError(f"the compiled core is out of step with the Python values: {problems}")


_check_constants()


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


cdef bint _in_domain(long contract, long trump) noexcept:
    return 1 <= contract <= 7 and -1 <= trump <= 3 and not (contract == core.KOZ and trump < 0)


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
        return _reference().judge_play(hand, trick, card, contract, trump, flags, played)
    n = _load_trick(trick, buf)
    if n < 0 or not 0 <= c < 64 or not _in_domain(k, t):
        return _reference().judge_play(hand, trick, card, contract, trump, flags, played)
    code = core.judge(h, buf, n, <int>c, <int>k, <int>t, f, p, &legal)
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
        return _reference().trick_winner(trick, trump)
    if n < 0 or not -1 <= t <= 3:
        return _reference().trick_winner(trick, trump)
    return core.trick_winner(buf, n, <int>t)


def trick_units(trick, trick_index, contract):
    """Scoring units the winner of a complete trick takes (tricks, penalty cards, last tricks)."""
    cdef int buf[4]
    cdef int n
    cdef long k, i
    try:
        k = contract
        i = trick_index
    except (TypeError, OverflowError):
        return _reference().trick_units(trick, trick_index, contract)
    n = _load_trick(trick, buf)
    if n < 0 or not 1 <= k <= 7:
        return _reference().trick_units(trick, trick_index, contract)
    return core.trick_units(buf, n, <int>min(max(i, -1), 13), <int>k)


cdef const uchar* _bytes_of(object data, Py_ssize_t* size):
    """The buffer of exact ``bytes`` (the usual case), else NULL."""
    if PyBytes_CheckExact(data):
        size[0] = PyBytes_GET_SIZE(data)
        return <const uchar*>PyBytes_AS_STRING(data)
    return NULL


cdef bint _hands_ok(const uchar* h, Py_ssize_t n) noexcept:
    """52 or more bytes, the first 52 of them below 64 (the core's masks hold 64 bits)."""
    cdef Py_ssize_t i
    if h == NULL or n < 52:
        return False
    for i in range(52):
        if h[i] >= 64:
            return False
    return True


def replay_deal(hands, plays, declarer, contract, trump, flags, revoke_play=-1):
    """Replay one deal's plays from the declarer's lead, judging every card."""
    cdef Py_ssize_t nh = 0, np = 0, rp, i
    cdef const uchar* h
    cdef const uchar* p
    cdef long d, k, t, f
    cdef DealState deal
    cdef core.Violation viols[53]
    cdef int nviol
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
    if not _hands_ok(h, nh) or p == NULL or not 0 <= d <= 3 or not _in_domain(k, t):
        return _reference().replay_deal(hands, plays, declarer, contract, trump, flags,
                                        revoke_play)
    if not 0 <= rp < np:
        rp = -1
    nviol = core.replay_deal(&deal, h, p, np, <int>d, <int>k, <int>t, f, rp, viols, False)
    return DealReplay(
        deal.end,
        deal.nplays,
        PyBytes_FromStringAndSize(<const char*>deal.winners, deal.ntricks),
        (deal.units[0], deal.units[1], deal.units[2], deal.units[3]),
        deal.revoker,
        [Violation(viols[i].play, viols[i].seat, viols[i].card, viols[i].code, viols[i].legal)
         for i in range(nviol)],
    )


cdef class Deal:
    """One deal being played, card by card (``kingrec._engine_py.Deal`` on the core).

    Hands must be 52 card codes 0..51 that partition the deck; outside the core's domain
    the constructor raises ValueError (the reference would play on with nonsense).
    """

    cdef DealState d

    def __init__(self, hands, long declarer, long contract, long trump, long flags):
        cdef uchar buf[52]
        cdef Py_ssize_t i
        cdef long card
        if len(hands) < 52 or not 0 <= declarer <= 3 or not _in_domain(contract, trump):
            raise ValueError("a deal needs 52 cards, a seat 0..3, a contract and its trump")
        for i in range(52):
            card = hands[i]
            if not 0 <= card < 52:
                raise ValueError(f"{card} is not a card code")
            buf[i] = <uchar>card
        core.deal_start(&self.d, buf, <int>declarer, <int>contract, <int>trump, flags)

    @property
    def held(self):
        return (self.d.held[0], self.d.held[1], self.d.held[2], self.d.held[3])

    @property
    def played(self):
        return self.d.played

    @property
    def penalty(self):
        return self.d.penalty

    @property
    def flags(self):
        return self.d.flags

    @property
    def contract(self):
        return self.d.contract

    @property
    def trump(self):
        return self.d.trump

    @property
    def leader(self):
        return self.d.leader

    @property
    def trick(self):
        return [self.d.trick[i] for i in range(self.d.ntrick)]

    @property
    def winners(self):
        return PyBytes_FromStringAndSize(<const char*>self.d.winners, self.d.ntricks)

    @property
    def units(self):
        return [self.d.units[0], self.d.units[1], self.d.units[2], self.d.units[3]]

    @property
    def end(self):
        return self.d.end

    @end.setter
    def end(self, int value):
        self.d.end = value

    @property
    def revoker(self):
        return self.d.revoker

    @property
    def nplays(self):
        return self.d.nplays

    @property
    def to_play(self):
        return core.to_play(&self.d)

    def judge(self, long card):
        """The verdict on ``card`` played now by the seat to play, and the legal cards."""
        cdef uint64_t legal
        if not 0 <= card < 64:
            return _reference().judge_play(self.held[self.to_play], self.trick, card,
                                           self.d.contract, self.d.trump, self.d.flags,
                                           self.d.played)
        return core.deal_judge(&self.d, <int>card, &legal), legal

    def legal(self):
        """The mask of cards the seat to play may play."""
        return core.deal_legal(&self.d)

    def push(self, long card):
        """Play ``card`` as played; the trick's winning seat when it closes, else -1."""
        if not 0 <= card < 52:
            raise ValueError(f"{card} is not a card code")
        return core.deal_push(&self.d, <int>card)

    def step(self, long card, bint revoke_mark=False):
        """One recorded play, judged and played as played: (finding code, legal cards)."""
        cdef uint64_t legal
        if card < 0:
            raise ValueError(f"{card} is not a card byte")
        return core.deal_step(&self.d, <int>min(card, 52), revoke_mark, &legal), legal


cdef class ScheduleTally:
    """The compiled core's schedule tally (``kingrec.schedule.ScheduleTally``'s twin).

    The validator reports breaches with the Python tally (it words them); this class holds
    the core's tally to the same rulings in the tests.
    """

    cdef CoreRules r
    cdef Tally t

    def __init__(self, rules):
        self.r = rules.core_params()
        core.tally_clear(&self.t)

    def problem(self, long long number, int seat, int contract):
        """What declaring ``contract`` in deal ``number`` breaks: ``SCHEDULE_*``."""
        if not 0 <= seat <= 3 or not 1 <= contract <= 7:
            raise ValueError("a seat 0..3 and a contract 1..7")
        return core.tally_problem(&self.t, &self.r, number, seat, contract)

    def add(self, int seat, int contract):
        """``seat`` declared ``contract``."""
        if not 0 <= seat <= 3 or not 1 <= contract <= 7:
            raise ValueError("a seat 0..3 and a contract 1..7")
        core.tally_add(&self.t, seat, contract)

    def allowed(self, int seat, long long number):
        """The contracts ``seat`` may declare in deal ``number``, ascending."""
        cdef int out[7]
        cdef int n, i
        if not 0 <= seat <= 3:
            raise ValueError("a seat 0..3")
        n = core.tally_allowed(&self.t, &self.r, seat, number, out)
        return [_Contract(out[i]) for i in range(n)]
