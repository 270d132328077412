"""The seven contracts, their penalty cards and their standard scores."""

from __future__ import annotations

from enum import IntEnum

from .cards import HEARTS, JACK, KING, KING_OF_HEARTS, QUEEN, SUIT_MASKS, mask_of
from .errors import ContractError

__all__ = [
    "CARD_CONTRACTS",
    "PENALTY_CONTRACTS",
    "PENALTY_MASKS",
    "STANDARD_UNIT_SCORES",
    "UNITS_PER_DEAL",
    "Contract",
    "parse_contract",
]


class Contract(IntEnum):
    """Values match ``kingrec.v1.Contract``."""

    KOZ = 1
    EL_ALMAZ = 2
    KUPA = 3
    ERKEK = 4
    KIZ = 5
    RIFKI = 6
    SON_IKI = 7

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Contract.KOZ: "Koz",
    Contract.EL_ALMAZ: "El almaz",
    Contract.KUPA: "Kupa almaz",
    Contract.ERKEK: "Erkek almaz",
    Contract.KIZ: "Kız almaz",
    Contract.RIFKI: "Rıfkı",
    Contract.SON_IKI: "Son iki",
}

PENALTY_CONTRACTS = tuple(c for c in Contract if c is not Contract.KOZ)
CARD_CONTRACTS = (Contract.KUPA, Contract.ERKEK, Contract.KIZ, Contract.RIFKI)

# The cards a card contract penalizes (0 for the others).
PENALTY_MASKS: dict[int, int] = {c: 0 for c in Contract}
PENALTY_MASKS[Contract.KUPA] = SUIT_MASKS[HEARTS]
PENALTY_MASKS[Contract.ERKEK] = mask_of(s * 13 + r for s in range(4) for r in (JACK, KING))
PENALTY_MASKS[Contract.KIZ] = mask_of(s * 13 + QUEEN for s in range(4))
PENALTY_MASKS[Contract.RIFKI] = 1 << KING_OF_HEARTS

STANDARD_UNIT_SCORES: dict[Contract, int] = {
    Contract.KOZ: 50,
    Contract.EL_ALMAZ: -50,
    Contract.KUPA: -30,
    Contract.ERKEK: -60,
    Contract.KIZ: -100,
    Contract.RIFKI: -320,
    Contract.SON_IKI: -180,
}

# How many scoring units one whole deal holds (tricks, penalty cards, last tricks).
UNITS_PER_DEAL: dict[Contract, int] = {
    Contract.KOZ: 13,
    Contract.EL_ALMAZ: 13,
    Contract.KUPA: 13,
    Contract.ERKEK: 8,
    Contract.KIZ: 4,
    Contract.RIFKI: 1,
    Contract.SON_IKI: 2,
}

_ALIASES = {
    "KOZ": Contract.KOZ,
    "TRUMPS": Contract.KOZ,
    "EL_ALMAZ": Contract.EL_ALMAZ,
    "ELALMAZ": Contract.EL_ALMAZ,
    "KUPA": Contract.KUPA,
    "ERKEK": Contract.ERKEK,
    "KIZ": Contract.KIZ,
    "RIFKI": Contract.RIFKI,
    "SON_IKI": Contract.SON_IKI,
    "SONIKI": Contract.SON_IKI,
}


def parse_contract(text: str) -> Contract:
    """``parse_contract('kiz') is Contract.KIZ``; accepts Turkish letters and CONTRACT_ prefixes."""
    key = text.strip().upper().replace("İ", "I").replace("I", "I").replace("ı".upper(), "I")
    key = key.replace(" ", "_").replace("-", "_").removeprefix("CONTRACT_")
    key = key.replace("_ALMAZ", "") if key in {"KUPA_ALMAZ", "ERKEK_ALMAZ", "KIZ_ALMAZ"} else key
    try:
        return _ALIASES[key]
    except KeyError:
        raise ContractError(
            f"{text!r} is not a contract ({', '.join(c.name for c in Contract)})"
        ) from None
