"""Reading a stream of JSON records: JSON Lines, arrays of matches, pretty-printed matches.

Bounded: memory stays within the largest record, whatever the length of a line or of
the stream; damage is reported and skipped, and reading goes on (see ``kingrec.jsonl``).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Any, BinaryIO, NamedTuple

from ..errors import JsonRecordError
from ..limits import MAX_JSON_LINE_BYTES
from ..v1 import record_pb2 as pb
from ._text import (
    after_blanks,
    decode_json,
    kind_of,
    printable,
    syntax_error,
    too_long,
    utf8_size,
)
from .read import match_from_dict

__all__ = ["JsonLineError", "JsonRecord", "read_jsonl"]


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


def read_jsonl(stream: BinaryIO) -> Iterator[JsonRecord | JsonLineError]:
    """Each record of a binary stream of JSON records (any of the forms in ``kingrec.jsonl``).

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
        self.message = printable(message)
        self.code = code


_CHUNK = 1 << 16  # bytes read from the stream at a time
_FIRST_GUESS = 64  # characters first tried for a record, before anything is known

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
            self.advance(after_blanks(self.text, self.pos) - self.pos)
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
                value, end = decode_json(window, 0)
            except json.JSONDecodeError as exc:
                if self.escaped and _ESCAPED_BYTE.search(window, 0, exc.pos + 1):
                    raise _Damage(self._not_utf8(window)) from None
                if not _ran_out(window, exc, at_end):
                    line = self.line + exc.lineno - 1
                    column = exc.colno + (self.column if exc.lineno == 1 else 0)
                    raise _Damage(syntax_error(exc.msg, line, column)) from None
                if at_end:
                    raise _Damage("the input ends inside this record (cut short?)") from None
                if want == limit:
                    raise _Damage(too_long(), "LIMIT_EXCEEDED") from None
                guess = 2 * want
                continue
            except JsonRecordError as exc:  # valid syntax so far, yet not JSON (NaN, depth)
                raise _Damage(str(exc), exc.code) from None
            if not isinstance(value, dict):  # no record (maybe a number the window cut short)
                raise _Damage(f"expected a match (a JSON object), found {kind_of(value)}")
            if self.escaped and _ESCAPED_BYTE.search(window, 0, end):
                raise _Sized(end, _Damage(self._not_utf8(window)))
            if end > MAX_JSON_LINE_BYTES // 4 and utf8_size(window[:end]) > MAX_JSON_LINE_BYTES:
                raise _Sized(end, _Damage(too_long(), "LIMIT_EXCEEDED"))
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
    if after_blanks(window, exc.pos) == len(window):
        return True
    on_last_line = window.find("\n", exc.pos) < 0
    if at_end:  # the last line is whole: only an unclosed string means "cut short"
        return on_last_line and exc.msg.startswith("Unterminated string")
    return on_last_line
