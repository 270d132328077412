"""Whether a JSON file holds matches, from its first value: for directory walks, which pass
over the other JSON files a folder of records holds (a manifest, a config) instead of
storing each as an invalid match."""

from __future__ import annotations

import json

from ..v1 import record_pb2 as pb
from ._schema import UNKNOWN_KEY

__all__ = ["HEAD_BYTES", "not_matches"]

HEAD_BYTES = 1 << 20  # what is read of a file to judge it: its first value should fit

# Every key a match object may start with: proto names, JSON names, the unknown-fields key.
_MATCH_KEYS = frozenset(
    {f.name for f in pb.Match.DESCRIPTOR.fields}
    | {f.json_name for f in pb.Match.DESCRIPTOR.fields}
    | {UNKNOWN_KEY}
)
_DECODER = json.JSONDecoder()


def not_matches(head: bytes) -> str | None:
    """Why a JSON file whose first ``HEAD_BYTES`` are ``head`` holds no matches (its first
    value is an object without a single key a match has), or None when it may hold
    matches: its first object is a match, or that cannot be told here (a damaged first
    line, a first value longer than the head, no JSON at all), and the reader is left to
    say what is wrong with the file."""
    text = head.removeprefix(b"\xef\xbb\xbf").decode("utf-8", "replace").lstrip(" \t\r\n")
    if text.startswith("["):  # an array of matches: judge its first element
        text = text[1:].lstrip(" \t\r\n")
    if not text.startswith("{"):
        return None
    try:
        first, _ = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):  # cut off by the head, damaged, or nested too deep
        return None
    if not isinstance(first, dict) or _MATCH_KEYS.intersection(first):
        return None
    # Each key as JSON writes it: a hostile key cannot put control characters on a terminal.
    keys = ", ".join(json.dumps(k) for k in sorted(first)[:5]) + (", …" if len(first) > 5 else "")
    what = f"a JSON object with the keys {keys}" if keys else "an empty JSON object"
    return f"not match records ({what})"
