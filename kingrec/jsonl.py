"""The readable JSON form of a ``kingrec.v1.Match``, one match per line (JSON Lines).

Game clients in other languages write this form; ``kingrec convert`` turns
.krec into it and back without loss. The mapping is written by hand rather
than with ``google.protobuf.json_format`` so that cards appear by name:

* keys are the proto field names; fields at their default are left out, but a
  present ``optional`` field (and a present sub-message) is written even when
  zero, because presence means "spelled out" in a ruleset;
* enums by short name (``"KOZ"``, ``"SPADES"``, ``"COMPLETE"``); an enum number
  the schema does not know is written as the int; on reading the full proto
  name (``"CONTRACT_KOZ"``) is accepted too, in any case;
* ``Deal.hands`` is four lists of thirteen card names, seat 0 first, and
  ``Deal.plays`` one flat list of card names; bytes that cannot be written
  that way (a damaged record) go into ``hands_raw`` / ``plays_raw`` as hex;
* a ``ContractSet`` is a list of contract names (``[]`` when present but
  empty), ``Ruleset.first_declarer_card`` a card name, ``start_time`` an
  RFC 3339 string;
* fields from a newer schema that this one does not know are kept as
  ``"_unknown"``: the base64 of their raw wire bytes, on the object of the
  message that carried them.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TextIO, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.timestamp_pb2 import Timestamp
from google.protobuf.unknown_fields import UnknownFieldSet

from .cards import CardError, card_name, parse_card
from .v1 import record_pb2 as pb

__all__ = [
    "JsonLineError",
    "JsonRecordError",
    "dumps_match",
    "loads_match",
    "match_from_dict",
    "match_to_dict",
    "read_jsonl",
    "write_jsonl",
]

UNKNOWN_KEY = "_unknown"


class JsonRecordError(ValueError):
    """A JSON match that does not map onto the schema; the message names where."""


class JsonLineError(JsonRecordError):
    """A bad line of a JSON Lines stream (yielded by ``read_jsonl``, not raised)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(line, message)  # both in args so the error pickles
        self.line = line
        self.message = message

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


# -- writing ------------------------------------------------------------------


def match_to_dict(m: pb.Match) -> dict[str, Any]:
    """The JSON object of one match (only JSON types: dict, list, str, int, bool)."""
    return _message_to_dict(m)


def dumps_match(m: pb.Match) -> str:
    """One match as one line of JSON, without the newline."""
    text = json.dumps(match_to_dict(m), ensure_ascii=False, separators=(",", ":"))
    # ensure_ascii=False leaves these raw, yet str.splitlines() (and older JavaScript)
    # treat them as line breaks; escaped they stay inside their line. (Looking first is
    # much faster than translate() on the usual line that holds none.)
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        text = text.translate(_LINE_BREAK_ESCAPES)
    return text


def write_jsonl(stream: TextIO, matches: Iterable[pb.Match]) -> int:
    """Write each match as one line; returns how many were written."""
    n = 0
    for m in matches:
        stream.write(dumps_match(m) + "\n")
        n += 1
    return n


_LINE_BREAK_ESCAPES = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


# Scalar types whose JSON form differs from the Python value (see _scalar_to_json).
_CONVERTED_SCALARS = frozenset({FieldDescriptor.TYPE_ENUM, FieldDescriptor.TYPE_BYTES})

# How each field of a message type is written, worked out once per type: descriptor
# look-ups cost more than the writing itself.
_MAP, _MESSAGES, _CONVERTED_LIST, _PLAIN_LIST, _SPECIAL, _MESSAGE, _SCALAR = range(7)
_Plan = tuple[tuple[FieldDescriptor, str, int, bool, Any, Any], ...]
_PLANS: dict[str, _Plan] = {}


def _plan(descriptor: Descriptor) -> _Plan:
    """Per field: (field, name, how, has_presence, default value, helper)."""
    plan = _PLANS.get(descriptor.full_name)
    if plan is not None:
        return plan
    steps = []
    for field in descriptor.fields:
        helper: Any = None
        if field.is_repeated:
            if _is_map(field):
                how = _MAP
                helper = _message_type(field).fields_by_name["value"]
            elif field.type == FieldDescriptor.TYPE_MESSAGE:
                how = _MESSAGES
            elif field.type in _CONVERTED_SCALARS:
                how = _CONVERTED_LIST
            else:  # numbers and strings are already JSON values
                how = _PLAIN_LIST
            steps.append((field, field.name, how, False, None, helper))
            continue
        helper = _SPECIAL_WRITERS.get(field.full_name)
        if helper is not None:
            how = _SPECIAL
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            how = _MESSAGE
        else:
            how = _SCALAR
        default = None if field.has_presence else field.default_value
        steps.append((field, field.name, how, field.has_presence, default, helper))
    plan = _PLANS[descriptor.full_name] = tuple(steps)
    return plan


def _message_to_dict(msg: Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field, name, how, has_presence, default, helper in _plan(_descriptor(msg)):
        value = getattr(msg, name)
        if how <= _PLAIN_LIST:  # repeated
            if not value:
                continue
            if how == _MAP:
                out[name] = {str(k): _scalar_to_json(helper, value[k]) for k in sorted(value)}
            elif how == _MESSAGES:
                out[name] = [_submessage_to_json(v) for v in value]
            elif how == _CONVERTED_LIST:
                out[name] = [_scalar_to_json(field, v) for v in value]
            else:
                out[name] = list(value)
            continue
        if has_presence:
            if not msg.HasField(name):
                continue
        elif value == default:
            continue
        if how == _SPECIAL:
            key, json_value = helper(value)  # the key may be e.g. "hands_raw"
            out[key] = json_value
        elif how == _MESSAGE:
            out[name] = _submessage_to_json(value)
        else:
            out[name] = _scalar_to_json(field, value)
    raw = _unknown_bytes(msg)
    if raw:
        out[UNKNOWN_KEY] = base64.b64encode(raw).decode("ascii")
    return out


def _submessage_to_json(msg: Message) -> Any:
    # The compact forms cannot carry "_unknown" (or an invalid timestamp), so such a
    # message falls back to the plain object form, which the reader also accepts.
    if isinstance(msg, pb.ContractSet) and not _unknown_bytes(msg):
        return [_enum_to_json(_CONTRACT_ENUM, c) for c in msg.contracts]
    if isinstance(msg, Timestamp) and not _unknown_bytes(msg):
        text = _timestamp_text(msg)
        if text is not None:
            return text
    return _message_to_dict(msg)


def _timestamp_text(ts: Timestamp) -> str | None:
    """RFC 3339 text for ``ts``, or None when the text would not read back to it exactly."""
    try:
        text = ts.ToJsonString()
        back = Timestamp()
        back.FromJsonString(text)
    except ValueError:  # seconds or nanos outside the range RFC 3339 can express
        return None
    return text if back == ts else None


def _scalar_to_json(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_ENUM:
        return _enum_to_json(_enum_type(field), value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    return value


def _enum_to_json(enum: EnumDescriptor, number: int) -> str | int:
    names = _enum_names(enum)
    return names.short_by_number.get(number, number)


def _cards_or_raw(data: bytes, key: str, group: int | None) -> tuple[str, Any]:
    if data and max(data) < 52 and (group is None or len(data) == 4 * group):
        names = [_CARD_NAMES[b] for b in data]
        if group is None:
            return key, names
        return key, [names[i : i + group] for i in range(0, len(names), group)]
    return key + "_raw", data.hex()


_CARD_NAMES = tuple(card_name(c) for c in range(52))


def _write_hands(value: Any) -> tuple[str, Any]:
    return _cards_or_raw(value, "hands", 13)


def _write_plays(value: Any) -> tuple[str, Any]:
    return _cards_or_raw(value, "plays", None)


def _write_first_declarer_card(value: Any) -> tuple[str, Any]:
    return "first_declarer_card", card_name(value) if 0 <= value < 52 else value


_SPECIAL_WRITERS: dict[str, Callable[[Any], tuple[str, Any]]] = {
    "kingrec.v1.Deal.hands": _write_hands,
    "kingrec.v1.Deal.plays": _write_plays,
    "kingrec.v1.Ruleset.first_declarer_card": _write_first_declarer_card,
}


def _unknown_bytes(msg: Message) -> bytes:
    """The raw wire bytes of the fields of ``msg`` (not of its sub-messages) the schema lacks."""
    if len(UnknownFieldSet(msg)) == 0:  # the usual case, without copying the message
        return b""
    bare = type(msg)()
    bare.CopyFrom(msg)
    for field in _descriptor(msg).fields:
        bare.ClearField(field.name)
    return bare.SerializeToString()


# -- reading ------------------------------------------------------------------


def match_from_dict(d: object) -> pb.Match:
    """The match of a JSON object; raises ``JsonRecordError`` naming the path of a problem."""
    m = pb.Match()
    _message_from_json(m, d, "")
    return m


def loads_match(line: str) -> pb.Match:
    """The match of one line (or any text) of JSON."""
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, over-long ints, deep nesting
        raise JsonRecordError(f"invalid JSON: {exc}") from None
    return match_from_dict(obj)


def read_jsonl(stream: Iterable[str]) -> Iterator[tuple[int, pb.Match] | JsonLineError]:
    """``(line_number, match)`` for each line, or a ``JsonLineError`` for a bad one.

    Blank lines are skipped; a bad line does not stop the reading. Lines count from 1.
    """
    for number, line in enumerate(stream, start=1):
        if number == 1:
            line = line.removeprefix("\ufeff")  # some Windows tools start text with a BOM
        if not line.strip():
            continue
        try:
            yield number, loads_match(line)
        except JsonRecordError as exc:
            yield JsonLineError(number, str(exc))


def _where(path: str) -> str:
    return path or "match"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_KINDS = {
    type(None): "null",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "an object",
}


def _kind(value: object) -> str:
    return _KINDS.get(type(value), type(value).__name__)


def _fail(path: str, message: str) -> JsonRecordError:
    return JsonRecordError(f"{_where(path)}: {message}")


def _message_from_json(msg: Message, obj: object, path: str) -> None:
    if not isinstance(obj, dict):
        raise _fail(path, f"expected an object, got {_kind(obj)}")
    descriptor = _descriptor(msg)
    readers = _SPECIAL_READERS.get(descriptor.full_name, {})
    for key in ("hands", "plays"):
        if key in readers and obj.get(key) is not None and obj.get(key + "_raw") is not None:
            raise _fail(path, f"both {key!r} and {key + '_raw'!r} given")
    unknown = b""
    for key, value in obj.items():
        if value is None:  # what other writers may put for "absent"
            continue
        sub_path = _join(path, key)
        if key == UNKNOWN_KEY:
            unknown = _decode_base64(value, sub_path)
            continue
        special = readers.get(key)
        if special is not None:
            special(msg, value, sub_path)
            continue
        field = descriptor.fields_by_name.get(key) if isinstance(key, str) else None
        if field is None:
            raise JsonRecordError(f"unknown field {key!r} in {_where(path)}")
        _field_from_json(msg, field, value, sub_path)
    if unknown:
        try:
            msg.MergeFromString(unknown)
        except DecodeError as exc:
            raise _fail(_join(path, UNKNOWN_KEY), f"not protobuf wire bytes ({exc})") from None


def _field_from_json(msg: Message, field: FieldDescriptor, value: object, path: str) -> None:
    name = field.name
    if _is_map(field):
        if not isinstance(value, dict):
            raise _fail(path, f"expected an object, got {_kind(value)}")
        target = getattr(msg, name)
        value_field = _message_type(field).fields_by_name["value"]
        for k, v in value.items():
            _store(path, target.__setitem__, k, _scalar_from_json(value_field, v, f"{path}[{k!r}]"))
        return
    if field.is_repeated:
        if not isinstance(value, list):
            raise _fail(path, f"expected a list, got {_kind(value)}")
        target = getattr(msg, name)
        for i, item in enumerate(value):
            if field.type == FieldDescriptor.TYPE_MESSAGE:
                _submessage_from_json(target.add(), item, f"{path}[{i}]")
            else:
                item_path = f"{path}[{i}]"
                _store(item_path, target.append, _scalar_from_json(field, item, item_path))
        return
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = getattr(msg, name)
        sub.SetInParent()  # an empty object still marks the sub-message present
        _submessage_from_json(sub, value, path)
        return
    _store(path, setattr, msg, name, _scalar_from_json(field, value, path))


def _submessage_from_json(msg: Message, value: object, path: str) -> None:
    if isinstance(msg, pb.ContractSet) and isinstance(value, list):
        for i, item in enumerate(value):
            item_path = f"{path}[{i}]"
            contract = _enum_from_json(_CONTRACT_ENUM, item, item_path)
            _store(item_path, msg.contracts.append, contract)
        return
    if isinstance(msg, Timestamp) and isinstance(value, str):
        try:
            msg.FromJsonString(value)
        except ValueError as exc:
            raise _fail(path, f"{value!r} is not an RFC 3339 time ({exc})") from None
        return
    _message_from_json(msg, value, path)


def _store(path: str, setter: Callable[..., object], *args: object) -> None:
    # Protobuf checks values itself; its complaint (e.g. a lone surrogate in a string)
    # should still name the path.
    try:
        setter(*args)
    except (ValueError, TypeError) as exc:
        raise _fail(path, str(exc)) from None


_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_ENUM: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _int_from_json(value: object, kind: int, path: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(path, f"expected an integer, got {_kind(value)}")
    low, high = _INT_RANGES[kind]
    if not low <= value <= high:
        raise _fail(path, f"{value} is out of range ({low}..{high})")
    return value


def _scalar_from_json(field: FieldDescriptor, value: object, path: str) -> object:
    kind = field.type
    if kind == FieldDescriptor.TYPE_ENUM:
        return _enum_from_json(_enum_type(field), value, path)
    if kind in _INT_RANGES:
        return _int_from_json(value, kind, path)
    if kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise _fail(path, f"expected true or false, got {_kind(value)}")
        return value
    if kind == FieldDescriptor.TYPE_STRING:
        if not isinstance(value, str):
            raise _fail(path, f"expected a string, got {_kind(value)}")
        return value
    if kind == FieldDescriptor.TYPE_BYTES:
        return _decode_base64(value, path)
    raise _fail(path, f"field type {kind} is not supported")


def _enum_from_json(enum: EnumDescriptor, value: object, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return _int_from_json(value, FieldDescriptor.TYPE_ENUM, path)
    if not isinstance(value, str):
        raise _fail(path, f"expected a {enum.name} name, got {_kind(value)}")
    names = _enum_names(enum)
    number = names.number_by_name.get(value.strip().upper())
    if number is None:
        known = ", ".join(names.short_by_number.values())
        raise _fail(path, f"{value!r} is not a {enum.name} ({known})")
    return number


def _decode_base64(value: object, path: str) -> bytes:
    if not isinstance(value, str):
        raise _fail(path, f"expected a base64 string, got {_kind(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error as exc:
        raise _fail(path, f"not base64 ({exc})") from None


def _decode_hex(value: object, path: str) -> bytes:
    if not isinstance(value, str):
        raise _fail(path, f"expected a hex string, got {_kind(value)}")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise _fail(path, "not a hex string") from None


def _card_from_json(value: object, path: str) -> int:
    if not isinstance(value, str):
        raise _fail(path, f"expected a card name, got {_kind(value)}")
    try:
        return parse_card(value)
    except CardError as exc:
        raise _fail(path, str(exc)) from None


def _cards_from_json(value: object, path: str) -> list[int]:
    if not isinstance(value, list):
        raise _fail(path, f"expected a list of card names, got {_kind(value)}")
    return [_card_from_json(item, f"{path}[{i}]") for i, item in enumerate(value)]


def _read_hands(msg: Message, value: object, path: str) -> None:
    if not isinstance(value, list) or len(value) != 4:
        raise _fail(path, "expected 4 lists of 13 card names, seat 0 first")
    cards: list[int] = []
    for seat, hand in enumerate(value):
        seat_cards = _cards_from_json(hand, f"{path}[{seat}]")
        if len(seat_cards) != 13:
            raise _fail(f"{path}[{seat}]", f"expected 13 cards, got {len(seat_cards)}")
        cards += seat_cards
    _store(path, setattr, msg, "hands", bytes(cards))


def _read_plays(msg: Message, value: object, path: str) -> None:
    _store(path, setattr, msg, "plays", bytes(_cards_from_json(value, path)))


def _read_raw(name: str) -> Callable[[Message, object, str], None]:
    def read(msg: Message, value: object, path: str) -> None:
        _store(path, setattr, msg, name, _decode_hex(value, path))

    return read


def _read_first_declarer_card(msg: Message, value: object, path: str) -> None:
    if isinstance(value, str):
        card = _card_from_json(value, path)
    else:  # a code that is no card, as written for a damaged record
        card = _int_from_json(value, FieldDescriptor.TYPE_UINT32, path)
    _store(path, setattr, msg, "first_declarer_card", card)


_SPECIAL_READERS: dict[str, dict[str, Callable[[Message, object, str], None]]] = {
    "kingrec.v1.Deal": {
        "hands": _read_hands,
        "hands_raw": _read_raw("hands"),
        "plays": _read_plays,
        "plays_raw": _read_raw("plays"),
    },
    "kingrec.v1.Ruleset": {"first_declarer_card": _read_first_declarer_card},
}


# -- schema helpers -----------------------------------------------------------


def _is_map(field: FieldDescriptor) -> bool:
    return (
        field.is_repeated
        and field.type == FieldDescriptor.TYPE_MESSAGE
        and _message_type(field).GetOptions().map_entry
    )


def _descriptor(msg: Message) -> Descriptor:
    return cast(Descriptor, msg.DESCRIPTOR)  # the stubs also allow upb's twin of the same API


def _message_type(field: FieldDescriptor) -> Descriptor:
    assert field.message_type is not None, field.full_name
    return field.message_type


def _enum_type(field: FieldDescriptor) -> EnumDescriptor:
    assert field.enum_type is not None, field.full_name
    return field.enum_type


class _EnumNames:
    """Short names (``KOZ``) by number, and numbers by upper-case short or full name."""

    def __init__(self, enum: EnumDescriptor) -> None:
        prefix = _upper_snake(enum.name) + "_"
        self.short_by_number: dict[int, str] = {}
        self.number_by_name: dict[str, int] = {}
        for v in enum.values:
            short = v.name.removeprefix(prefix)
            self.short_by_number.setdefault(v.number, short)
            self.number_by_name[short.upper()] = v.number
            self.number_by_name[v.name.upper()] = v.number


def _upper_snake(camel: str) -> str:
    """``FirstDeclarerRule`` -> ``FIRST_DECLARER_RULE``, the proto style enum value prefix."""
    return "".join("_" + c if c.isupper() and i else c for i, c in enumerate(camel)).upper()


_ENUM_NAMES: dict[str, _EnumNames] = {}


def _enum_names(enum: EnumDescriptor) -> _EnumNames:
    names = _ENUM_NAMES.get(enum.full_name)
    if names is None:
        names = _ENUM_NAMES[enum.full_name] = _EnumNames(enum)
    return names


_CONTRACT_ENUM: EnumDescriptor = pb.DESCRIPTOR.enum_types_by_name["Contract"]
