"""The JSON forms of a ``kingrec.v1.Match``: what kingrec writes, and everything it reads.

Game clients in other languages write these; ``kingrec convert`` turns .krec into JSON
Lines and back without loss.

**The friendly form** is what kingrec writes, by hand rather than with
``google.protobuf.json_format``, so that cards appear by name:

* keys are the proto field names; fields at their default are left out, but a present
  ``optional`` field (and a present sub-message) is written even when zero, because
  presence means "spelled out" in a ruleset; ``Player.seat`` is always written, so that
  seat 0 is not a missing value to jq or DuckDB;
* enums by short name (``"KOZ"``, ``"SPADES"``, ``"COMPLETE"``); an enum number the
  schema does not know is written as the int;
* ``Deal.hands`` is four lists of thirteen card names, seat 0 first, and ``Deal.plays``
  one flat list of card names; bytes that cannot be written that way (a damaged record)
  go into ``hands_raw`` / ``plays_raw`` as hex;
* a ``ContractSet`` is a list of contract names (``[]`` when present but empty),
  ``Ruleset.first_declarer_card`` a card name, ``start_time`` an RFC 3339 string;
* fields from a newer schema that this one does not know are kept as ``"_unknown"``: the
  base64 of their raw wire bytes, on the object of the message that carried them.

**Protobuf's standard JSON** (``json_format.MessageToJson`` or any ProtoJSON writer) is
read too, and the reader decides key by key, so a record may mix the two forms:

* a key is the proto field name or its lowerCamelCase JSON name (``matchId``); giving
  both for one field is an error;
* enums by full name (``"CONTRACT_KOZ"``), short name (any case) or number;
* ``hands`` / ``plays`` as a list of card names is the friendly form, as a string the
  base64 of the bytes (standard or URL-safe alphabet, padding optional); a ContractSet as
  a list or as ``{"contracts": [...]}``; a Timestamp as RFC 3339 text or as an object;
  64-bit integers as numbers or decimal strings; ``first_declarer_card`` as a name or code;
* ``null`` means absent.

**Keys the schema does not know.** ``match_from_dict`` reports their paths
(``"deals[3].bonus"``) in ``unknown_keys`` and skips them, or raises when strict. Such a
key has no field number, so it cannot be carried into a .krec: it is reported (a warning
for the caller to show) and dropped. ``_unknown`` carries real protobuf fields and
survives both ways.

**Streams** (``read_jsonl``) hold JSON Lines (one match per line); a JSON array of
matches; or matches pretty-printed one after another, as ``jq .`` writes them. The form
follows from the content, not the file name, and the three may even alternate: every
top-level value is a match, a top-level array holds matches. Each record is located by
the line it starts on. A bad record is reported (``JsonLineError``) and reading goes on at
the next line indented no deeper than the line that record started on, so a bad line of JSON
Lines, or a pretty-printed match cut short, is one item and not one per line. A value
that is not an object is no record either, and is skipped the same way.

**Bounds** (``kingrec.limits``). One record is at most ``MAX_JSON_LINE_BYTES``; a longer
one is reported as ``LIMIT_EXCEEDED`` and skipped in bounded pieces, never read whole.
Nesting deeper than ``MAX_JSON_DEPTH`` is rejected. The stream is read as UTF-8 by the
reader itself: a record holding bytes that are not UTF-8 is reported, not repaired (a
silently replaced name would no longer round-trip). Duplicate keys in one object, NaN and
Infinity are invalid JSON here, as in ProtoJSON.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any, BinaryIO, NamedTuple, NoReturn, TextIO, cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.timestamp_pb2 import Timestamp
from google.protobuf.unknown_fields import UnknownFieldSet

from .cards import CardError, card_name, parse_card
from .errors import JsonRecordError, LimitError
from .limits import MAX_JSON_DEPTH, MAX_JSON_LINE_BYTES
from .v1 import record_pb2 as pb

__all__ = [
    "JsonLimitError",
    "JsonLineError",
    "JsonRecord",
    "JsonRecordError",
    "dumps_match",
    "json_line",
    "loads_match",
    "match_from_dict",
    "match_to_dict",
    "read_jsonl",
    "write_jsonl",
]

UNKNOWN_KEY = "_unknown"


class JsonLimitError(JsonRecordError, LimitError):
    """A JSON record over one of kingrec's bounds (its size or its nesting)."""

    code = "LIMIT_EXCEEDED"


class JsonLineError(JsonRecordError):
    """A stretch of a JSON stream that holds no record, located by the line it starts on.

    Yielded by ``read_jsonl``, not raised. ``code`` is JSON_INVALID or LIMIT_EXCEEDED.
    """

    def __init__(self, line: int, message: str, code: str = "JSON_INVALID") -> None:
        super().__init__(line, message, code)  # all in args so the error pickles
        self.line = line
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


class JsonRecord(NamedTuple):
    """A match read from a JSON stream, with the paths of the keys it dropped."""

    line: int  # where the record starts, from 1
    match: pb.Match
    unknown_keys: tuple[str, ...] = ()


# -- writing ------------------------------------------------------------------


def json_line(obj: object, *, ascii_only: bool = False) -> str:
    """One JSON value as one line of text, without the newline, safe for any line splitter.

    U+0085, U+2028 and U+2029 are always escaped: ``str.splitlines()`` and older
    JavaScript break lines at them when they are raw. Lone surrogates are escaped too, so
    the line always encodes as UTF-8. With ``ascii_only`` every non-ASCII character is.
    Raises ValueError for NaN or an infinity (not JSON), TypeError for a non-JSON type.
    """
    text = json.dumps(obj, ensure_ascii=ascii_only, separators=(",", ":"), allow_nan=False)
    if not text.isascii():  # outside strings JSON is ASCII, so escaping here stays valid
        text = _RAW_UNSAFE.sub(_escape_char, text)
    return text


_RAW_UNSAFE = re.compile("[\x85\u2028\u2029\ud800-\udfff]")


def _escape_char(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def match_to_dict(m: pb.Match) -> dict[str, Any]:
    """The JSON object of one match (only JSON types: dict, list, str, int, bool)."""
    return _message_to_dict(m)


def dumps_match(m: pb.Match) -> str:
    """One match as one line of JSON, without the newline."""
    return json_line(match_to_dict(m))


def write_jsonl(stream: TextIO, matches: Iterable[pb.Match]) -> int:
    """Write each match as one line; returns how many were written."""
    n = 0
    for m in matches:
        stream.write(dumps_match(m) + "\n")
        n += 1
    return n


# Scalar types whose JSON form differs from the Python value (see _scalar_to_json).
_CONVERTED_SCALARS = frozenset({FieldDescriptor.TYPE_ENUM, FieldDescriptor.TYPE_BYTES})

# Written even at their default: seat 0 is a real seat, not a missing one.
_ALWAYS_WRITTEN = frozenset({"kingrec.v1.Player.seat"})
_NEVER_EQUAL = object()

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
    steps: list[tuple[FieldDescriptor, str, int, bool, Any, Any]] = []
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
        if field.full_name in _ALWAYS_WRITTEN:
            default = _NEVER_EQUAL
        else:
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
_CARD_CODES = {name: code for code, name in enumerate(_CARD_NAMES)}


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


# -- reading one record ---------------------------------------------------------


def loads_match(text: str | bytes, *, unknown_keys: list[str] | None = None) -> pb.Match:
    """The match of one JSON value (a line, or a whole pretty-printed document).

    Raises ``JsonRecordError`` (``JsonLimitError`` over the bounds); ``unknown_keys`` as
    for ``match_from_dict``.
    """
    if len(text) > MAX_JSON_LINE_BYTES:
        raise JsonLimitError(_too_long())
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonRecordError(
                f"not UTF-8 text: byte 0x{text[exc.start]:02X} at offset {exc.start}"
            ) from None
    elif len(text) > MAX_JSON_LINE_BYTES // 4 and _utf8_size(text) > MAX_JSON_LINE_BYTES:
        raise JsonLimitError(_too_long())
    start = _after_blanks(text, 0)
    try:
        value, end = _decode_json(text, start)
    except json.JSONDecodeError as exc:
        raise JsonRecordError(_syntax_error(exc.msg, exc.lineno, exc.colno)) from None
    if _after_blanks(text, end) != len(text):
        line = text.count("\n", 0, end) + 1
        column = end - text.rfind("\n", 0, end)
        raise JsonRecordError(_syntax_error("Extra data", line, column))
    return match_from_dict(value, unknown_keys=unknown_keys)


def match_from_dict(obj: object, *, unknown_keys: list[str] | None = None) -> pb.Match:
    """The match of a JSON object; raises ``JsonRecordError`` naming the path of a problem.

    A key the schema does not know is an error when ``unknown_keys`` is None; otherwise
    its path (``"deals[3].bonus"``) is appended to the list and the key skipped.
    """
    m = pb.Match()
    _message_from_json(m, obj, "", 1, unknown_keys)
    return m


class _NotJson(ValueError):
    """Text the json module would accept but JSON (and ProtoJSON) does not."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _NotJson(f"the key {_show(key)} appears twice in one object")
            seen.add(key)
    return obj


def _no_constants(name: str) -> NoReturn:
    raise _NotJson(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constants)


def _decode_json(text: str, start: int) -> tuple[object, int]:
    """The JSON value at ``text[start]`` and where it ends; JSONDecodeError (with a position)
    for broken syntax, JsonRecordError or JsonLimitError for anything else."""
    try:
        return cast(tuple[object, int], _DECODER.raw_decode(text, start))
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise JsonLimitError(_too_deep()) from None
    except _NotJson as exc:
        raise JsonRecordError(_printable(f"invalid JSON: {exc}")) from None
    except ValueError as exc:  # an integer past Python's digit limit
        message = f"invalid JSON: a number that cannot be read ({exc})"
        raise JsonRecordError(_printable(message)) from None


def _syntax_error(what: str, line: int, column: int) -> str:
    return f"invalid JSON: {what} (line {line}, column {column})"


def _too_long() -> str:
    return (
        f"the record is longer than {MAX_JSON_LINE_BYTES} bytes ({MAX_JSON_LINE_BYTES >> 20} "
        "MiB), kingrec's limit for one JSON record (kingrec.limits.MAX_JSON_LINE_BYTES)"
    )


def _too_deep() -> str:
    return (
        f"nested deeper than {MAX_JSON_DEPTH} levels, kingrec's limit for a JSON record "
        "(kingrec.limits.MAX_JSON_DEPTH)"
    )


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _where(path: str) -> str:
    return path or "match"


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _join(path: str, key: object) -> str:
    if isinstance(key, str) and _PLAIN_KEY.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{_show(key)}]"  # quoted, so an odd key cannot pass for a path


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


_SHOWN = 40  # characters of a bad value quoted in a message


def _show(value: object) -> str:
    """A short, printable quote of a JSON value, for messages (never the whole 4 MiB)."""
    if isinstance(value, str):
        text = repr(value[:_SHOWN])  # repr escapes lone surrogates and control characters
        return text if len(value) <= _SHOWN else text[:-1] + "…" + text[-1]
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a {value.bit_length()}-bit integer"
    if isinstance(value, bool | int | float | None):
        return repr(value)
    return _kind(value)


_MESSAGE_CHARS = 300


def _printable(message: str) -> str:
    """``message`` as text any UTF-8 stream can write, and short enough for one line."""
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    return message if len(message) <= _MESSAGE_CHARS else message[: _MESSAGE_CHARS - 1] + "…"


def _fail(path: str, message: str) -> JsonRecordError:
    return JsonRecordError(_printable(f"{_where(path)}: {message}"))


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
        raise _fail(path, f"expected an object, got {_kind(obj)}")
    keys = _keys(_descriptor(msg))
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
                raise JsonRecordError(_printable(f"unknown field {_show(key)} in {_where(path)}"))
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
            raise JsonLimitError(_printable(f"{path}: {_too_deep()}"))
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
    if _is_map(field):
        if not isinstance(value, dict):
            raise _fail(path, f"expected an object, got {_kind(value)}")
        target = getattr(msg, name)
        value_field = _message_type(field).fields_by_name["value"]
        for k, v in value.items():
            item_path = f"{path}[{_show(k)}]"
            _store(item_path, target.__setitem__, k, _scalar_from_json(value_field, v, item_path))
        return
    if field.is_repeated:
        if not isinstance(value, list):
            raise _fail(path, f"expected a list, got {_kind(value)}")
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
            contract = _enum_from_json(_CONTRACT_ENUM, item, item_path)
            _store(item_path, msg.contracts.append, contract)
        return
    if isinstance(msg, Timestamp) and isinstance(value, str):
        try:
            msg.FromJsonString(value)
        except ValueError as exc:
            raise _fail(path, f"{_show(value)} is not an RFC 3339 time ({exc})") from None
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
        raise _fail(path, f"expected an integer, got {_kind(value)}")
    low, high = _INT_RANGES[kind]
    if not low <= value <= high:
        raise _fail(path, f"{_show(value)} is out of range ({low}..{high})")
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
        raise _fail(path, f"{_show(value)} is not a {enum.name} ({known})")
    return number


_URL_SAFE = str.maketrans("-_", "+/")


def _decode_base64(value: object, path: str) -> bytes:
    """Bytes from base64 as ProtoJSON allows it: standard or URL-safe, padded or not."""
    if not isinstance(value, str):
        raise _fail(path, f"expected a base64 string, got {_kind(value)}")
    if not value.isascii():  # b64decode would raise ValueError, not binascii.Error
        raise _fail(path, "not base64 (a character outside A-Z a-z 0-9 + / - _ =)")
    text = value.translate(_URL_SAFE)
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
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
    code = _CARD_CODES.get(value)
    if code is not None:
        return code
    if len(value) > 8:  # no spelling of a card is this long; keep the message short
        raise _fail(path, f"{_show(value)} is not a card")
    try:
        return parse_card(value)
    except CardError as exc:
        raise _fail(path, str(exc)) from None


def _cards_from_json(value: object, path: str) -> list[int]:
    if not isinstance(value, list):
        raise _fail(path, f"expected a list of card names, got {_kind(value)}")
    try:
        return [_CARD_CODES[item] for item in value]  # names as kingrec writes them
    except (KeyError, TypeError):
        return [_card_from_json(item, f"{path}[{i}]") for i, item in enumerate(value)]


def _read_hands(msg: Message, value: object, path: str, *_: object) -> None:
    if isinstance(value, str):  # ProtoJSON: the bytes, whatever they hold
        try:
            data = _decode_base64(value, path)
        except JsonRecordError:
            raise _fail(path, f"{_HANDS_FORMS}; {_show(value)} is not base64") from None
        _store(path, setattr, msg, "hands", data)
        return
    if not isinstance(value, list) or len(value) != 4:
        raise _fail(path, f"{_HANDS_FORMS}, got {_kind(value)}")
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
                path, f"expected a list of card names or a base64 string; {_show(value)} is not"
            ) from None
        _store(path, setattr, msg, "plays", data)
        return
    if not isinstance(value, list):
        raise _fail(path, f"expected a list of card names or a base64 string, got {_kind(value)}")
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


# -- reading a stream ---------------------------------------------------------


def read_jsonl(stream: BinaryIO) -> Iterator[JsonRecord | JsonLineError]:
    """Each record of a binary stream of JSON records (any of the forms in the module doc).

    Yields a ``JsonRecord`` per match, or a ``JsonLineError`` for a stretch that holds
    none; damage does not stop the reading. Blank lines and a leading UTF-8 byte order
    mark are skipped. Memory stays bounded by the largest record (at most
    ``MAX_JSON_LINE_BYTES``), whatever the length of a line or of the stream.
    """
    source = _Source(stream)
    array_line = 0  # the line of the '[' of the open array of records; 0 outside one
    need_comma = False  # a record of that array was just read
    damaged = False  # the last item was damage
    while source.skip_blanks():
        char = source.text[source.pos]
        line = source.line
        if array_line:
            if char == "]":
                source.advance(1)
                array_line, need_comma = 0, False
                continue
            if need_comma:
                need_comma = False
                if char == ",":
                    source.advance(1)
                    continue
                missing = f"expected ',' or ']' in the array of records from line {array_line}"
                yield JsonLineError(line, f"{missing}; read on as if the ',' were there")
        elif char == "[":
            source.advance(1)
            array_line = line
            continue
        item = _next_record(source, bool(array_line))
        damaged = isinstance(item, JsonLineError)
        need_comma = bool(array_line) and not damaged
        yield item
    if array_line and not damaged:
        unclosed = f"the input ends inside the array of records from line {array_line}"
        yield JsonLineError(source.line, f"{unclosed} (no closing ']')")


def _next_record(source: _Source, in_array: bool) -> JsonRecord | JsonLineError:
    line = source.line
    try:
        value = source.take_object(in_array)
    except _Damage as damage:
        return JsonLineError(line, damage.message, damage.code)
    unknown: list[str] = []
    try:
        match = match_from_dict(value, unknown_keys=unknown)
    except JsonRecordError as exc:
        return JsonLineError(line, str(exc), exc.code)
    return JsonRecord(line, match, tuple(unknown))


class _Damage(Exception):
    """Input with no record in it, already skipped by ``_Source.take_object``."""

    def __init__(self, message: str, code: str = "JSON_INVALID") -> None:
        super().__init__(message)
        self.message = _printable(message)
        self.code = code


_CHUNK = 1 << 16  # bytes read from the stream at a time
_FIRST_GUESS = 64  # characters first tried for a record, before anything is known
_BLANKS = re.compile(r"[ \t\r\n]*")


def _after_blanks(text: str, pos: int) -> int:
    found = _BLANKS.match(text, pos)
    assert found is not None  # the pattern matches the empty string
    return found.end()


_INDENT = re.compile(r"[ \t]*")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")  # how surrogateescape keeps a non-UTF-8 byte
_MAX_INDENT = 256  # deeper indentation is not looked at when skipping damage


@lru_cache(maxsize=64)
def _line_start(indent: int) -> re.Pattern[str]:
    """A newline, then a line whose first non-blank character is at column ``indent`` or
    less and is not the '}' that closes a damaged record."""
    return re.compile(rf"\n[ \t]{{0,{indent}}}(?=[^ \t\r\n}}])")


class _Source:
    """A binary stream decoded as UTF-8 in bounded pieces, with the line and column of a
    position. Bytes that are not UTF-8 are kept as surrogate escapes and looked for in each
    record, so the record that holds them is reported rather than silently repaired."""

    def __init__(self, stream: BinaryIO) -> None:
        self._read = stream.read
        self._undecoded = b""  # the start of a character split between two reads
        self.text = ""
        self.pos = 0  # index in text of the next character to read
        self.line = 1  # line of pos, from 1
        self.column = 0  # characters between the start of that line and pos
        self.indent: int | None = None  # column of the line's first non-blank, once passed
        self.eof = False
        self.escaped = False  # whether any byte was not UTF-8 (then records are searched)
        self.last_length = 0  # characters of the last record, to size the next guess
        if self.fill(1) and self.text[0] == "\ufeff":  # a byte order mark some tools write
            self.pos = 1

    def fill(self, want: int) -> int:
        """Read until ``want`` characters past pos are held, or the stream ends; how many are."""
        while len(self.text) - self.pos < want and not self.eof:
            data = self._read(max(_CHUNK, want - (len(self.text) - self.pos)))
            self.eof = not data
            piece = self._decode(self._undecoded + data)
            self.text = self.text[self.pos :] + piece
            self.pos = 0
        return len(self.text) - self.pos

    def _decode(self, data: bytes) -> str:
        try:
            piece, used = codecs.utf_8_decode(data, "strict", self.eof)
        except UnicodeDecodeError:
            piece, used = codecs.utf_8_decode(data, "surrogateescape", self.eof)
            self.escaped = True
        self._undecoded = data[used:]
        return piece

    def advance(self, count: int) -> None:
        start, end = self.pos, self.pos + count
        newlines = self.text.count("\n", start, end)
        if newlines:
            self.line += newlines
            start = self.text.rindex("\n", start, end) + 1
            self.column = end - start
            self.indent = None
        else:
            self.column += count
        if self.indent is None:
            found = _INDENT.match(self.text, start, end)
            assert found is not None  # the pattern matches the empty string
            if found.end() < end:
                self.indent = self.column - (end - found.end())
        self.pos = end

    def skip_blanks(self) -> bool:
        """Skip JSON whitespace; False when the stream ends first."""
        while True:
            self.advance(_after_blanks(self.text, self.pos) - self.pos)
            if self.pos < len(self.text):
                return True
            if not self.fill(1):
                return False

    def skip_to_line_at(self, indent: int) -> None:
        """Skip to the next line that starts at ``indent`` or less (see ``_line_start``).

        From the line of a damaged record this is where the next record of JSON Lines, of
        pretty-printed matches or of a jq-style array begins. Reads in chunks; keeps no
        more than a few characters of even a 100 MiB line.
        """
        indent = min(indent, _MAX_INDENT)
        pattern = _line_start(indent)
        while True:
            found = pattern.search(self.text, self.pos)
            if found:
                self.advance(found.start() + 1 - self.pos)
                return
            if self.eof:
                self.advance(len(self.text) - self.pos)
                return
            # A match could still begin in the last indent + 2 characters.
            self.advance(max(0, len(self.text) - self.pos - (indent + 2)))
            self.fill(len(self.text) - self.pos + _CHUNK)

    def take_object(self, in_array: bool) -> dict[str, Any]:
        """The JSON object at pos (a non-blank character), consumed.

        Raises ``_Damage`` when there is none, after skipping it: the exact stretch when its
        end is known, else up to the next line indented no deeper than the line it started
        on, where a record may start. Outside an array, a stretch that does not even start
        like a record is taken for the inside of a larger value (a pretty-printed match
        whose start is missing), and reading goes on at the next line of column 0.
        """
        indent = self.column if self.indent is None else self.indent  # of the line
        if not in_array and self.text[self.pos] != "{":
            indent = 0
        try:
            value, length = self._value()
        except _Damage:
            self.skip_to_line_at(indent)
            raise
        except _Sized as sized:
            self.advance(sized.length)
            raise sized.damage from None
        self.advance(length)
        return value

    def _value(self) -> tuple[dict[str, Any], int]:
        """Decode the object at pos in windows growing from a guess; (object, characters)."""
        limit = MAX_JSON_LINE_BYTES + 1  # characters; a record this long is over the limit
        guess = max(_FIRST_GUESS, 2 * self.last_length)
        while True:
            want = min(guess, limit)
            have = min(self.fill(want), want)
            window = self.text[self.pos : self.pos + have]
            at_end = have < want  # the window holds the rest of the stream
            try:
                value, end = _decode_json(window, 0)
            except json.JSONDecodeError as exc:
                if self.escaped and _ESCAPED_BYTE.search(window, 0, exc.pos + 1):
                    raise _Damage(self._not_utf8(window)) from None
                if not _ran_out(window, exc, at_end):
                    line = self.line + exc.lineno - 1
                    column = exc.colno + (self.column if exc.lineno == 1 else 0)
                    raise _Damage(_syntax_error(exc.msg, line, column)) from None
                if at_end:
                    raise _Damage("the input ends inside this record (cut short?)") from None
                if want == limit:
                    raise _Damage(_too_long(), "LIMIT_EXCEEDED") from None
                guess = 2 * want
                continue
            except JsonRecordError as exc:  # valid syntax so far, yet not JSON (NaN, depth)
                raise _Damage(str(exc), exc.code) from None
            if not isinstance(value, dict):  # no record (maybe a number the window cut short)
                raise _Damage(f"expected a match (a JSON object), found {_kind(value)}")
            if self.escaped and _ESCAPED_BYTE.search(window, 0, end):
                raise _Sized(end, _Damage(self._not_utf8(window)))
            if end > MAX_JSON_LINE_BYTES // 4 and _utf8_size(window[:end]) > MAX_JSON_LINE_BYTES:
                raise _Sized(end, _Damage(_too_long(), "LIMIT_EXCEEDED"))
            self.last_length = end
            return value, end

    def _not_utf8(self, window: str) -> str:
        found = _ESCAPED_BYTE.search(window)
        assert found is not None
        at = found.start()
        line = self.line + window.count("\n", 0, at)
        return f"not UTF-8 text: byte 0x{ord(found.group()) - 0xDC00:02X} on line {line}"


class _Sized(Exception):
    """Damage whose extent is known: skip exactly ``length`` characters."""

    def __init__(self, length: int, damage: _Damage) -> None:
        super().__init__(length, damage)
        self.length = length
        self.damage = damage


def _ran_out(window: str, exc: json.JSONDecodeError, at_end: bool) -> bool:
    """Whether decoding failed for want of more text rather than at a real mistake.

    Tokens never span lines, so a mistake on a line that ends inside the window is real;
    one at the window's end (or on its last, partial line) may just be cut off.
    """
    if _after_blanks(window, exc.pos) == len(window):
        return True
    on_last_line = window.find("\n", exc.pos) < 0
    if at_end:  # the last line is whole: only an unclosed string means "cut short"
        return on_last_line and exc.msg.startswith("Unterminated string")
    return on_last_line


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
