"""What the JSON forms need to know of the schema, shared by writing and reading.

Descriptor look-ups, enum short names (``KOZ`` for ``CONTRACT_KOZ``), card names, and the
key that carries unknown fields.
"""

from __future__ import annotations

from typing import cast

from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from google.protobuf.message import Message

from ..cards import card_name
from ..v1 import record_pb2 as pb

__all__ = [
    "CARD_CODES",
    "CARD_NAMES",
    "CONTRACT_ENUM",
    "UNKNOWN_KEY",
    "EnumNames",
    "enum_names",
    "enum_type",
    "is_map",
    "message_descriptor",
    "message_type",
]

# The key of the raw wire bytes of fields the schema lacks (base64), on any message.
UNKNOWN_KEY = "_unknown"

# Cards by name, as kingrec writes them: the name of each code, the code of each name.
CARD_NAMES = tuple(card_name(c) for c in range(52))
CARD_CODES = {name: code for code, name in enumerate(CARD_NAMES)}

CONTRACT_ENUM: EnumDescriptor = pb.DESCRIPTOR.enum_types_by_name["Contract"]


def is_map(field: FieldDescriptor) -> bool:
    """Whether ``field`` is a protobuf map (a repeated message of map entries)."""
    return (
        field.is_repeated
        and field.type == FieldDescriptor.TYPE_MESSAGE
        and message_type(field).GetOptions().map_entry
    )


def message_descriptor(msg: Message) -> Descriptor:
    """The descriptor of ``msg``'s message type."""
    return cast(Descriptor, msg.DESCRIPTOR)  # the stubs also allow upb's twin of the same API


def message_type(field: FieldDescriptor) -> Descriptor:
    """The message type of a message ``field``."""
    assert field.message_type is not None, field.full_name
    return field.message_type


def enum_type(field: FieldDescriptor) -> EnumDescriptor:
    """The enum type of an enum ``field``."""
    assert field.enum_type is not None, field.full_name
    return field.enum_type


class EnumNames:
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


_ENUM_NAMES: dict[str, EnumNames] = {}


def enum_names(enum: EnumDescriptor) -> EnumNames:
    """The names of ``enum``, worked out once per enum type."""
    names = _ENUM_NAMES.get(enum.full_name)
    if names is None:
        names = _ENUM_NAMES[enum.full_name] = EnumNames(enum)
    return names
