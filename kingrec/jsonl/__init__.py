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

# Writing (write), reading one record (read) and reading a stream (stream) live in modules
# of their own; the public names are all here.
from ..errors import JsonRecordError
from ._schema import UNKNOWN_KEY as UNKNOWN_KEY
from ._text import JsonLimitError
from .read import loads_match, match_from_dict
from .stream import JsonLineError, JsonRecord, read_jsonl
from .write import (
    clean_line,
    clean_place,
    clean_report_line,
    dumps_match,
    json_line,
    match_to_dict,
    report_line,
    write_jsonl,
)

__all__ = [
    "JsonLimitError",
    "JsonLineError",
    "JsonRecord",
    "JsonRecordError",
    "clean_line",
    "clean_place",
    "clean_report_line",
    "dumps_match",
    "json_line",
    "loads_match",
    "match_from_dict",
    "match_to_dict",
    "read_jsonl",
    "report_line",
    "write_jsonl",
]
