"""A record's ruleset as the options it spells out, and how they resolve into a ``Ruleset``.

The rule "the preset's options, overridden by those spelled out" is here, once:
``resolve_ruleset``. What a record spells out is read either from a decoded message
(``kingrec.boundary.ruleset_from_proto``) or, here, straight from the wire bytes by
``read_ruleset``: the compiled checker asks for the ruleset of every clean record, and
reading it without protobuf lets a validation of clean records load no protobuf at all
(about a quarter of the command's start-up).

``read_ruleset`` reads the plain form writers produce (each field once, in range, no
unknown fields) and answers None for anything else; the caller then decodes the bytes
with protobuf, whose answer is the reference. tests/test_ruleset_fields.py holds the two
readers to the same answer on random bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from .contracts import Contract
from .errors import RulesetError
from .rules import PRESETS, DealerRule, FirstDeclarerRule, RevokeRule, Ruleset, Schedule

__all__ = [
    "ENUM_OPTIONS",
    "SCALAR_OPTIONS",
    "SCORING_FIELDS",
    "SET_OPTIONS",
    "SpelledOut",
    "read_ruleset",
    "resolve_ruleset",
]

SCALAR_OPTIONS = (
    "deal_count",
    "koz_quota",
    "penalty_quota",
    "max_per_penalty",
    "penalty_only_deals",
    "first_declarer_card",
    "must_ruff",
    "must_overtrump",
    "must_raise_on_trump_lead",
    "trump_lead_needs_break",
    "rifki_heart_after_king",
    "play_timeout_ms",
    "trump_timeout_ms",
)
ENUM_OPTIONS: dict[str, type[IntEnum]] = {
    "schedule": Schedule,
    "first_declarer": FirstDeclarerRule,
    "dealer": DealerRule,
    "revoke": RevokeRule,
}
SET_OPTIONS = ("heart_lead_ban", "withholding", "void_discard", "early_end")
SCORING_FIELDS = {
    Contract.KOZ: "koz_trick",
    Contract.EL_ALMAZ: "el_almaz_trick",
    Contract.KUPA: "kupa_heart",
    Contract.ERKEK: "erkek_card",
    Contract.KIZ: "kiz_queen",
    Contract.RIFKI: "rifki_king",
    Contract.SON_IKI: "son_iki_trick",
}
# Without a known preset these must be spelled out; the rest default as in classic.
_REQUIRED_WITHOUT_PRESET = (
    "schedule",
    "deal_count",
    "must_ruff",
    "heart_lead_ban",
    "withholding",
    "void_discard",
    "early_end",
)


@dataclass
class SpelledOut:
    """What a record's ruleset spells out, as the message's values: ``options`` the scalar
    and enum fields present (bools as bools, enums as their numbers), ``sets`` the contract
    lists present (the four sets and ``fixed_order``, as numbers in record order),
    ``scoring`` the points present when the message has a ``scoring``, else None."""

    preset: str = ""
    options: dict[str, int | bool] = field(default_factory=dict)
    sets: dict[str, list[int]] = field(default_factory=dict)
    scoring: dict[str, int] | None = None


def resolve_ruleset(spelled: SpelledOut) -> Ruleset:
    """Resolve a record's ruleset: the preset's options, overridden by those spelled out.

    Raises ``RulesetError`` naming the problem: an unknown preset with options missing, an
    enum value or contract the schema does not know, or a ruleset that cannot be applied.
    """
    name = spelled.preset
    base = PRESETS.get(name.lower())
    if base is None:
        missing = [
            f
            for f in _REQUIRED_WITHOUT_PRESET
            if f not in spelled.options and f not in spelled.sets
        ]
        if missing:
            what = f"unknown preset {name!r}" if name else "no preset"
            raise RulesetError(
                f"{what} and options not spelled out: {', '.join(missing)} "
                f"(known presets: {', '.join(PRESETS)})"
            )
        base = PRESETS["classic"].replace(preset=name)
    changes: dict[str, object] = {}
    for option in SCALAR_OPTIONS:
        if option in spelled.options:
            changes[option] = spelled.options[option]
    for option, kind in ENUM_OPTIONS.items():
        if option in spelled.options:
            value = spelled.options[option]
            try:
                changes[option] = kind(value)
            except ValueError:
                raise RulesetError(f"ruleset option {option} has unknown value {value}") from None
    for option in SET_OPTIONS:
        if option in spelled.sets:
            changes[option] = frozenset(_contracts(spelled.sets[option], option))
    if "fixed_order" in spelled.sets:
        changes["fixed_order"] = tuple(_contracts(spelled.sets["fixed_order"], "fixed_order"))
    if spelled.scoring is not None:
        scores = dict(base.scores)
        for contract, field_name in SCORING_FIELDS.items():
            if field_name in spelled.scoring:
                scores[contract] = spelled.scoring[field_name]
        changes["scores"] = scores
    return base.replace(**changes) if changes else base


def _contracts(values: list[int], option: str) -> list[Contract]:
    out = []
    for v in values:
        try:
            out.append(Contract(v))
        except ValueError:
            raise RulesetError(f"ruleset option {option} names unknown contract {v}") from None
    return out


# -- the wire form ------------------------------------------------------------------------
# kingrec.v1.Ruleset's fields by number: (name, kind). The kinds bound the values read:
# "u32" uint32, "enum" an enum (non-negative int32 here), "bool" 0 or 1; "set" a
# ContractSet, "scoring" a Scoring, "preset" the preset's name (ASCII here).
_FIELDS: dict[int, tuple[str, str]] = {
    1: ("preset", "preset"),
    2: ("schedule", "enum"),
    3: ("deal_count", "u32"),
    4: ("koz_quota", "u32"),
    5: ("penalty_quota", "u32"),
    6: ("max_per_penalty", "u32"),
    7: ("penalty_only_deals", "u32"),
    8: ("fixed_order", "set"),
    9: ("first_declarer", "enum"),
    10: ("first_declarer_card", "u32"),
    11: ("dealer", "enum"),
    12: ("must_ruff", "bool"),
    13: ("must_overtrump", "bool"),
    14: ("must_raise_on_trump_lead", "bool"),
    15: ("trump_lead_needs_break", "bool"),
    16: ("heart_lead_ban", "set"),
    17: ("withholding", "set"),
    18: ("void_discard", "set"),
    19: ("rifki_heart_after_king", "bool"),
    20: ("early_end", "set"),
    21: ("revoke", "enum"),
    22: ("play_timeout_ms", "u32"),
    23: ("trump_timeout_ms", "u32"),
    24: ("scoring", "scoring"),
}
_LIMITS = {"u32": 1 << 32, "enum": 1 << 31, "bool": 2}
_SCORING_NAMES = {number: name for number, name in enumerate(SCORING_FIELDS.values(), 1)}
_VARINT, _LENGTH = 0, 2  # the only wire types of the plain form


class _NotPlain(Exception):
    """The bytes are not in the plain form: let protobuf read them."""


def read_ruleset(raw: bytes) -> SpelledOut | None:
    """What the serialized ``kingrec.v1.Ruleset`` ``raw`` spells out, read without protobuf;
    None when it is not in the plain form (a field twice, an unknown field or wire type, a
    value out of its range, a varint longer than it needs, a non-ASCII preset, truncated
    bytes): decode it then."""
    try:
        return _read(raw)
    except _NotPlain:
        return None


def _read(raw: bytes) -> SpelledOut:
    spelled = SpelledOut()
    seen: set[int] = set()
    for number, value in _fields(raw):
        if number in seen or number not in _FIELDS:
            raise _NotPlain
        seen.add(number)
        name, kind = _FIELDS[number]
        if kind in _LIMITS:
            if not isinstance(value, int) or value >= _LIMITS[kind]:
                raise _NotPlain
            spelled.options[name] = bool(value) if kind == "bool" else value
        elif not isinstance(value, bytes):
            raise _NotPlain
        elif kind == "preset":
            if not value.isascii():  # UTF-8 checks are protobuf's to make
                raise _NotPlain
            spelled.preset = value.decode("ascii")
        elif kind == "set":
            spelled.sets[name] = _contract_set(value)
        else:
            spelled.scoring = _scoring(value)
    return spelled


def _contract_set(raw: bytes) -> list[int]:
    """A ContractSet's contracts: field 1, packed or not, each a non-negative int32."""
    out: list[int] = []
    for number, value in _fields(raw):
        if number != 1:
            raise _NotPlain
        if isinstance(value, int):
            values = [value]
        else:
            values = []
            at = 0
            while at < len(value):
                v, at = _varint(value, at)
                values.append(v)
        if any(v >= 1 << 31 for v in values):
            raise _NotPlain
        out.extend(values)
    return out


def _scoring(raw: bytes) -> dict[str, int]:
    """A Scoring's points present: fields 1..7, each a sint32, each once."""
    out: dict[str, int] = {}
    for number, value in _fields(raw):
        name = _SCORING_NAMES.get(number)
        if name is None or name in out or not isinstance(value, int) or value >= 1 << 32:
            raise _NotPlain
        out[name] = (value >> 1) ^ -(value & 1)  # zigzag
    return out


def _fields(raw: bytes) -> list[tuple[int, int | bytes]]:
    """The fields of a message: (number, the varint's value or the length-delimited bytes)."""
    out: list[tuple[int, int | bytes]] = []
    at, end = 0, len(raw)
    while at < end:
        key, at = _varint(raw, at)
        number, kind_of_wire = key >> 3, key & 7
        if number == 0 or number >= 1 << 29:
            raise _NotPlain
        if kind_of_wire == _VARINT:
            value, at = _varint(raw, at)
            out.append((number, value))
        elif kind_of_wire == _LENGTH:
            size, at = _varint(raw, at)
            if size > end - at:
                raise _NotPlain
            out.append((number, raw[at : at + size]))
            at += size
        else:
            raise _NotPlain
    return out


def _varint(raw: bytes, at: int) -> tuple[int, int]:
    """The varint at ``at`` and where the next thing starts; in its shortest form only (what
    writers write: an overlong one, a key of 6 bytes say, is protobuf's to judge)."""
    value = shift = 0
    for i in range(at, min(at + 10, len(raw))):
        byte = raw[i]
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            if byte == 0 and i > at:
                raise _NotPlain
            return value, i + 1
        shift += 7
    raise _NotPlain
