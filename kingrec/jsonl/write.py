"""Writing the friendly JSON form: message -> dict -> one line of JSON text."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TextIO

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from google.protobuf.unknown_fields import UnknownFieldSet

from ..cards import card_name
from ..v1 import record_pb2 as pb
from ._schema import (
    CARD_NAMES,
    CONTRACT_ENUM,
    UNKNOWN_KEY,
    enum_names,
    enum_type,
    is_map,
    message_descriptor,
    message_type,
)

if TYPE_CHECKING:
    from ..findings import Location, MatchReport

__all__ = [
    "clean_line",
    "clean_place",
    "clean_report_line",
    "dumps_match",
    "json_line",
    "match_to_dict",
    "report_line",
    "write_jsonl",
]


# Made once: ``json.dumps`` with options builds an encoder on every call, which cost as much
# as the writing of a report's line (the service writes one for every Validate).
_UTF8 = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
_ASCII = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False)
# What ``_UTF8.encode`` does with a str, called without its Python frame in between: the
# service writes a match id through it on every Validate, with the caches cold.
_UTF8_STRING: Callable[[str], str] = json.encoder.encode_basestring


def json_line(obj: object, *, ascii_only: bool = False) -> str:
    """One JSON value as one line of text, without the newline, safe for any line splitter.

    U+0085, U+2028 and U+2029 are always escaped: ``str.splitlines()`` and older
    JavaScript break lines at them when they are raw. Lone surrogates are escaped too, so
    the line always encodes as UTF-8. With ``ascii_only`` every non-ASCII character is.
    Raises ValueError for NaN or an infinity (not JSON), TypeError for a non-JSON type.
    """
    text = (_ASCII if ascii_only else _UTF8).encode(obj)
    if not text.isascii():  # outside strings JSON is ASCII, so escaping here stays valid
        text = _RAW_UNSAFE.sub(_escape_char, text)
    return text


def report_line(report: MatchReport, *, ascii_only: bool = False) -> str:
    """The line ``kingrec validate --json`` writes for one record's report (no newline), and
    the service's ``ValidateResponse.report_json``: one function, so the two are the same
    bytes."""
    return json_line(report_object(report), ascii_only=ascii_only)


def clean_report_line(match_id: str, location: Location, deals: int) -> str:
    """``report_line`` of ``MatchReport(match_id, location, deals=deals)``, a report without
    findings, byte for byte, without making the report or its object (the service answers
    every clean Validate with one): the strings through the same encoder, the keys in the
    order ``MatchReport.to_dict`` gives them."""
    short = len(location.file) <= _CACHED_FILE
    return clean_line(match_id, (_clean_place if short else clean_place)(location), deals)


def clean_line(match_id: str, place: str, deals: int) -> str:
    """``clean_report_line`` of a report whose place is ``place`` (``clean_place`` of its
    location): for a caller that keeps the places it writes again and again."""
    text = f'{{"type":"match","match_id":{_UTF8_STRING(match_id)},{place}{deals:d},"findings":[]}}'
    if not text.isascii():  # as json_line escapes it
        text = _RAW_UNSAFE.sub(_escape_char, text)
    return text


_CACHED_FILE = 256  # places kept at most this long: the cache's size stays small


def clean_place(location: Location) -> str:
    """The keys of a clean report's line between its id and its count of deals."""
    keys = [f'"file":{_UTF8.encode(location.file)}']
    for key in ("frame", "offset", "line"):
        value = getattr(location, key)
        if value is not None:
            keys.append(f'"{key}":{int(value):d}')
    return ",".join(keys) + ',"valid":true,"deals":'


# A few places at a time: the records' files, the service's clients'.
_clean_place = lru_cache(maxsize=64)(clean_place)


def report_object(report: MatchReport) -> dict[str, Any]:
    """The object of that line: ``{"type": "match", ...}`` and the report's fields."""
    return {"type": "match", **report.to_dict()}


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
            if is_map(field):
                how = _MAP
                helper = message_type(field).fields_by_name["value"]
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
    for field, name, how, has_presence, default, helper in _plan(message_descriptor(msg)):
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
        return [_enum_to_json(CONTRACT_ENUM, c) for c in msg.contracts]
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
        return _enum_to_json(enum_type(field), value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode("ascii")
    return value


def _enum_to_json(enum: EnumDescriptor, number: int) -> str | int:
    names = enum_names(enum)
    return names.short_by_number.get(number, number)


def _cards_or_raw(data: bytes, key: str, group: int | None) -> tuple[str, Any]:
    if data and max(data) < 52 and (group is None or len(data) == 4 * group):
        names = [CARD_NAMES[b] for b in data]
        if group is None:
            return key, names
        return key, [names[i : i + group] for i in range(0, len(names), group)]
    return key + "_raw", data.hex()


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
    for field in message_descriptor(msg).fields:
        bare.ClearField(field.name)
    return bare.SerializeToString()
