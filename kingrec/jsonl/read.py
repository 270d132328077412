"""Reading one record: JSON text or a decoded JSON object -> ``kingrec.v1.Match``.

Either form, key by key: the friendly form kingrec writes and protobuf's standard JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.timestamp_pb2 import Timestamp

from ..cards import CardError, parse_card
from ..errors import JsonRecordError
from ..limits import MAX_JSON_DEPTH, MAX_JSON_LINE_BYTES
from ..v1 import record_pb2 as pb
from ._schema import (
    CARD_CODES,
    CONTRACT_ENUM,
    UNKNOWN_KEY,
    enum_names,
    enum_type,
    is_map,
    message_descriptor,
    message_type,
)
from ._text import (
    JsonLimitError,
    after_blanks,
    decode_json,
    kind_of,
    printable,
    show,
    syntax_error,
    too_deep,
    too_long,
    utf8_size,
)

__all__ = ["loads_match", "match_from_dict"]


def loads_match(text: str | bytes, *, unknown_keys: list[str] | None = None) -> pb.Match:
    """The match of one JSON value (a line, or a whole pretty-printed document).

    Raises ``JsonRecordError`` (``JsonLimitError`` over the bounds); ``unknown_keys`` as
    for ``match_from_dict``.
    """
    if len(text) > MAX_JSON_LINE_BYTES:
        raise JsonLimitError(too_long())
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonRecordError(
                f"not UTF-8 text: byte 0x{text[exc.start]:02X} at offset {exc.start}"
            ) from None
    elif len(text) > MAX_JSON_LINE_BYTES // 4 and utf8_size(text) > MAX_JSON_LINE_BYTES:
        raise JsonLimitError(too_long())
    start = after_blanks(text, 0)
    try:
        value, end = decode_json(text, start)
    except json.JSONDecodeError as exc:
        raise JsonRecordError(syntax_error(exc.msg, exc.lineno, exc.colno)) from None
    if after_blanks(text, end) != len(text):
        line = text.count("\n", 0, end) + 1
        column = end - text.rfind("\n", 0, end)
        raise JsonRecordError(syntax_error("Extra data", line, column))
    return match_from_dict(value, unknown_keys=unknown_keys)


def match_from_dict(obj: object, *, unknown_keys: list[str] | None = None) -> pb.Match:
    """The match of a JSON object; raises ``JsonRecordError`` naming the path of a problem.

    A key the schema does not know is an error when ``unknown_keys`` is None; otherwise
    its path (``"deals[3].bonus"``) is appended to the list and the key skipped.
    """
    m = pb.Match()
    _message_from_json(m, obj, "", 1, unknown_keys)
    return m


def _where(path: str) -> str:
    return path or "match"


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _join(path: str, key: object) -> str:
    if isinstance(key, str) and _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{show(key)}]"  # quoted, so an odd key cannot pass for a path


def _fail(path: str, message: str) -> JsonRecordError:
    return JsonRecordError(printable(f"{_where(path)}: {message}"))


# How a JSON key of a message is read: (the field it sets, for spotting two keys of one
# field; the reader). A reader takes (message, value, path, level, unknown keys), where
# level is the nesting of the object holding the key (the match is 1).
_Reader = Callable[[Message, object, str, int, list[str] | None], None]
_KEYS: dict[str, dict[str, tuple[str, _Reader]]] = {}


def _keys(descriptor: Descriptor) -> dict[str, tuple[str, _Reader]]:
    """Every key a message type accepts: proto names, JSON names and the special forms.

    A plain dict of our own: the protobuf runtime's by-name maps raise SystemError for a
    key holding a lone surrogate.
    """
    keys = _KEYS.get(descriptor.full_name)
    if keys is not None:
        return keys
    keys = {}
    for field in descriptor.fields:
        reader = _SPECIAL_READERS.get(field.full_name) or _field_reader(field)
        keys[field.name] = keys[field.json_name] = (field.name, reader)
    for key, (name, reader) in _EXTRA_KEYS.get(descriptor.full_name, {}).items():
        keys[key] = (name, reader)
    _KEYS[descriptor.full_name] = keys
    return keys


def _field_reader(field: FieldDescriptor) -> _Reader:
    def read(msg: Message, value: object, path: str, level: int, unknown: list[str] | None) -> None:
        _field_from_json(msg, field, value, path, level, unknown)

    return read


def _message_from_json(
    msg: Message, obj: object, path: str, level: int, unknown: list[str] | None
) -> None:
    if not isinstance(obj, dict):
        raise _fail(path, f"expected an object, got {kind_of(obj)}")
    keys = _keys(message_descriptor(msg))
    given: dict[str, str] = {}  # field name -> the key that set it
    wire = b""
    for key, value in obj.items():
        if value is None:  # what other writers may put for "absent"
            continue
        if key == UNKNOWN_KEY:
            wire = _decode_base64(value, _join(path, key))
            continue
        entry = keys.get(key) if isinstance(key, str) else None
        if entry is None:
            if unknown is None:
                raise JsonRecordError(printable(f"unknown field {show(key)} in {_where(path)}"))
            _check_depth(value, level + 1, _join(path, key))
            unknown.append(_join(path, key))
            continue
        name, read = entry
        other = given.setdefault(name, key)
        if other != key:
            first, second = sorted((other, key))
            raise _fail(path, f"both {first!r} and {second!r} given")
        read(msg, value, f"{path}.{key}" if path else key, level, unknown)  # a schema name
    if wire:
        try:
            msg.MergeFromString(wire)
        except DecodeError as exc:
            raise _fail(_join(path, UNKNOWN_KEY), f"not protobuf wire bytes ({exc})") from None


def _check_depth(value: object, level: int, path: str) -> None:
    """Raise when ``value``, found at nesting ``level``, holds containers beyond the limit.

    Only skipped values need this: the schema bounds the nesting of everything it reads.
    Walks one level at a time, so a flat list of a million objects stays cheap.
    """
    layer: list[object] = [value] if isinstance(value, dict | list) else []
    while layer:
        if level > MAX_JSON_DEPTH:
            raise JsonLimitError(printable(f"{path}: {too_deep()}"))
        below: list[object] = []
        for node in layer:
            if node:  # a container (only those are kept), and not empty
                children = node.values() if isinstance(node, dict) else cast(list[object], node)
                below += [c for c in children if isinstance(c, dict | list)]
        layer = below
        level += 1


def _field_from_json(
    msg: Message,
    field: FieldDescriptor,
    value: object,
    path: str,
    level: int,
    unknown: list[str] | None,
) -> None:
    name = field.name
    if is_map(field):
        if not isinstance(value, dict):
            raise _fail(path, f"expected an object, got {kind_of(value)}")
        target = getattr(msg, name)
        value_field = message_type(field).fields_by_name["value"]
        for k, v in value.items():
            item_path = f"{path}[{show(k)}]"
            _store(item_path, target.__setitem__, k, _scalar_from_json(value_field, v, item_path))
        return
    if field.is_repeated:
        if not isinstance(value, list):
            raise _fail(path, f"expected a list, got {kind_of(value)}")
        target = getattr(msg, name)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            for i, item in enumerate(value):
                _submessage_from_json(target.add(), item, f"{path}[{i}]", level + 2, unknown)
            return
        bounds = _INT_RANGES.get(field.type) if field.type != FieldDescriptor.TYPE_ENUM else None
        if (  # the usual list of think times or scores, checked at C speed
            bounds is not None
            and value
            and set(map(type, value)) == {int}
            and bounds[0] <= min(value)
            and max(value) <= bounds[1]
        ):
            target.extend(value)
            return
        for i, item in enumerate(value):
            item_path = f"{path}[{i}]"
            _store(item_path, target.append, _scalar_from_json(field, item, item_path))
        return
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        sub = getattr(msg, name)
        sub.SetInParent()  # an empty object still marks the sub-message present
        _submessage_from_json(sub, value, path, level + 1, unknown)
        return
    _store(path, setattr, msg, name, _scalar_from_json(field, value, path))


def _submessage_from_json(
    msg: Message, value: object, path: str, level: int, unknown: list[str] | None
) -> None:
    if isinstance(msg, pb.ContractSet) and isinstance(value, list):
        for i, item in enumerate(value):
            item_path = f"{path}[{i}]"
            contract = _enum_from_json(CONTRACT_ENUM, item, item_path)
            _store(item_path, msg.contracts.append, contract)
        return
    if isinstance(msg, Timestamp) and isinstance(value, str):
        try:
            msg.FromJsonString(value)
        except ValueError as exc:
            raise _fail(path, f"{show(value)} is not an RFC 3339 time ({exc})") from None
        return
    _message_from_json(msg, value, path, level, unknown)


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

# ProtoJSON writes these as decimal strings (a double cannot hold every 64-bit value).
_INT64_KINDS = frozenset(
    {
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_SFIXED64,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_FIXED64,
    }
)
_DECIMAL = re.compile(r"-?[0-9]{1,20}")


def _int_from_json(value: object, kind: int, path: str) -> int:
    if isinstance(value, str) and kind in _INT64_KINDS and _DECIMAL.fullmatch(value):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(path, f"expected an integer, got {kind_of(value)}")
    low, high = _INT_RANGES[kind]
    if not low <= value <= high:
        raise _fail(path, f"{show(value)} is out of range ({low}..{high})")
    return value


def _scalar_from_json(field: FieldDescriptor, value: object, path: str) -> object:
    kind = field.type
    if kind == FieldDescriptor.TYPE_ENUM:
        return _enum_from_json(enum_type(field), value, path)
    if kind in _INT_RANGES:
        return _int_from_json(value, kind, path)
    if kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise _fail(path, f"expected true or false, got {kind_of(value)}")
        return value
    if kind == FieldDescriptor.TYPE_STRING:
        if not isinstance(value, str):
            raise _fail(path, f"expected a string, got {kind_of(value)}")
        return value
    if kind == FieldDescriptor.TYPE_BYTES:
        return _decode_base64(value, path)
    raise _fail(path, f"field type {kind} is not supported")


def _enum_from_json(enum: EnumDescriptor, value: object, path: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return _int_from_json(value, FieldDescriptor.TYPE_ENUM, path)
    if not isinstance(value, str):
        raise _fail(path, f"expected a {enum.name} name, got {kind_of(value)}")
    names = enum_names(enum)
    number = names.number_by_name.get(value.strip().upper())
    if number is None:
        known = ", ".join(names.short_by_number.values())
        raise _fail(path, f"{show(value)} is not a {enum.name} ({known})")
    return number


_URL_SAFE = str.maketrans("-_", "+/")


def _decode_base64(value: object, path: str) -> bytes:
    """Bytes from base64 as ProtoJSON allows it: standard or URL-safe, padded or not."""
    if not isinstance(value, str):
        raise _fail(path, f"expected a base64 string, got {kind_of(value)}")
    if not value.isascii():  # b64decode would raise ValueError, not binascii.Error
        raise _fail(path, "not base64 (a character outside A-Z a-z 0-9 + / - _ =)")
    text = value.translate(_URL_SAFE)
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except binascii.Error as exc:
        raise _fail(path, f"not base64 ({exc})") from None


def _decode_hex(value: object, path: str) -> bytes:
    if not isinstance(value, str):
        raise _fail(path, f"expected a hex string, got {kind_of(value)}")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise _fail(path, "not a hex string") from None


def _card_from_json(value: object, path: str) -> int:
    if not isinstance(value, str):
        raise _fail(path, f"expected a card name, got {kind_of(value)}")
    code = CARD_CODES.get(value)
    if code is not None:
        return code
    if len(value) > 8:  # no spelling of a card is this long; keep the message short
        raise _fail(path, f"{show(value)} is not a card")
    try:
        return parse_card(value)
    except CardError as exc:
        raise _fail(path, str(exc)) from None


def _cards_from_json(value: object, path: str) -> list[int]:
    if not isinstance(value, list):
        raise _fail(path, f"expected a list of card names, got {kind_of(value)}")
    try:
        return [CARD_CODES[item] for item in value]  # names as kingrec writes them
    except (KeyError, TypeError):
        return [_card_from_json(item, f"{path}[{i}]") for i, item in enumerate(value)]


def _read_hands(msg: Message, value: object, path: str, *_: object) -> None:
    if isinstance(value, str):  # ProtoJSON: the bytes, whatever they hold
        try:
            data = _decode_base64(value, path)
        except JsonRecordError:
            raise _fail(path, f"{_HANDS_FORMS}; {show(value)} is not base64") from None
        _store(path, setattr, msg, "hands", data)
        return
    if not isinstance(value, list) or len(value) != 4:
        raise _fail(path, f"{_HANDS_FORMS}, got {kind_of(value)}")
    cards: list[int] = []
    for seat, hand in enumerate(value):
        seat_cards = _cards_from_json(hand, f"{path}[{seat}]")
        if len(seat_cards) != 13:
            raise _fail(f"{path}[{seat}]", f"expected 13 cards, got {len(seat_cards)}")
        cards += seat_cards
    _store(path, setattr, msg, "hands", bytes(cards))


_HANDS_FORMS = "expected 4 lists of 13 card names, seat 0 first, or a base64 string"


def _read_plays(msg: Message, value: object, path: str, *_: object) -> None:
    if isinstance(value, str):  # ProtoJSON: the bytes
        try:
            data = _decode_base64(value, path)
        except JsonRecordError:
            raise _fail(
                path, f"expected a list of card names or a base64 string; {show(value)} is not"
            ) from None
        _store(path, setattr, msg, "plays", data)
        return
    if not isinstance(value, list):
        raise _fail(path, f"expected a list of card names or a base64 string, got {kind_of(value)}")
    _store(path, setattr, msg, "plays", bytes(_cards_from_json(value, path)))


def _read_raw(name: str) -> _Reader:
    def read(msg: Message, value: object, path: str, *_: object) -> None:
        _store(path, setattr, msg, name, _decode_hex(value, path))

    return read


def _read_first_declarer_card(msg: Message, value: object, path: str, *_: object) -> None:
    if isinstance(value, str):
        card = _card_from_json(value, path)
    else:  # a code: ProtoJSON's form, and kingrec's for a code that is no card
        card = _int_from_json(value, FieldDescriptor.TYPE_UINT32, path)
    _store(path, setattr, msg, "first_declarer_card", card)


_SPECIAL_READERS: dict[str, _Reader] = {
    "kingrec.v1.Deal.hands": _read_hands,
    "kingrec.v1.Deal.plays": _read_plays,
    "kingrec.v1.Ruleset.first_declarer_card": _read_first_declarer_card,
}

# Keys of the friendly form that are not field names: (the field they set, the reader).
_EXTRA_KEYS: dict[str, dict[str, tuple[str, _Reader]]] = {
    "kingrec.v1.Deal": {
        "hands_raw": ("hands", _read_raw("hands")),
        "plays_raw": ("plays", _read_raw("plays")),
    },
}
