# Constants shared by the compiled twins (_engine_c, _sim_c). They stand for
# kingrec.contracts.Contract, kingrec.rules.F_* and kingrec._engine_types; each module holds
# them to the Python values (at import in _engine_c, in tests/test_sim_twins.py for _sim_c).

# Contracts: kingrec.v1.Contract numbers.
cdef enum:
    KOZ = 1
    EL_ALMAZ = 2
    KUPA = 3
    ERKEK = 4
    KIZ = 5
    RIFKI = 6
    SON_IKI = 7

# Engine flag bits: kingrec.rules.F_*.
cdef enum:
    F_MUST_RUFF = 1
    F_MUST_OVERTRUMP = 2
    F_RAISE_ON_TRUMP_LEAD = 4
    F_TRUMP_LEAD_BREAK = 8
    F_HEART_LEAD_BAN = 16
    F_WITHHOLDING = 32
    F_VOID_DISCARD = 64
    F_RIFKI_HEART_AFTER_KING = 128
    F_EARLY_END = 256
    F_REVOKE_PENALIZE = 512

# Play verdicts and deal ends: kingrec._engine_types.
cdef enum:
    LEGAL = 0
    NOT_IN_HAND = 1
    TRUMP_LEAD_BANNED = 2
    HEART_LEAD_BANNED = 3
    MUST_FOLLOW_SUIT = 4
    MUST_RAISE_TRUMP = 5
    MUST_GIVE_PENALTY_CARD = 6
    MUST_RUFF = 7
    MUST_OVERTRUMP = 8
    MUST_DISCARD_PENALTY_CARD = 9
    NOT_A_CARD = 10
    REVOKE_MARK_ON_LEGAL_PLAY = 11
    END_UNREADABLE = 0
    END_ALL_TRICKS = 1
    END_EARLY = 2
    END_INCOMPLETE = 3
    END_REVOKE = 4
