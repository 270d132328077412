"""A ``kingrec.v1.Record`` (one record as a message, .krec bytes or a JSON line) read by
the library: judged the way ``kingrec validate`` judges a file holding only that record, or
decoded for a replay. A record given as a whole .krec file or as JSON Lines text may hold
many records: ``record_verdicts`` judges them all (Validate), ``stream_verdicts`` the records
of a ValidateStream request, each on its own.

A record that cannot be read at all raises ``UnreadableRecordError`` with the damage's code
(FRAME_UNDECODABLE, JSON_INVALID, LIMIT_EXCEEDED, …); a file that is no record file raises
the library's ``RecordFileError``.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import NamedTuple, cast

from google.protobuf.message import DecodeError

from kingrec.container import FILE_HEADER_SIZE, MAGIC
from kingrec.errors import KingrecError, LimitError
from kingrec.fastcheck import BATCH, checker_of, judge_payload, validate_payload
from kingrec.findings import CleanMatches, Location, MatchReport
from kingrec.jsonl import loads_match
from kingrec.limits import MAX_FRAME_BYTES, check_match_limits, scan_match_limits
from kingrec.records import Damage, Record, RecordFile
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc
from kingrec.validation import validate_records

from .errors import BadRequestError, UnreadableRecordError

__all__ = [
    "MAX_VERDICTS",
    "Checked",
    "Judged",
    "Vouched",
    "frame_verdicts",
    "judge_record",
    "match_of_record",
    "one_match",
    "payload_of_record",
    "record_verdicts",
    "stream_verdicts",
    "vouch",
]

Judged = MatchReport | Damage  # what is found at one place of a record file


class Vouched(NamedTuple):
    """A record the compiled checker vouched for (``kingrec.fastcheck``): its report is
    ``MatchReport(match_id, Location(name, 0, FILE_HEADER_SIZE), deals=deals)``, no
    findings. ValidateStream encodes it as that report without making one."""

    match_id: str
    deals: int
    name: str


# Verdicts one request may ask for. A 4 MiB message of real matches holds ~850 classic ones;
# of empty frames or empty records it could hold a million, each judged by the reference
# (~40 µs): this bound keeps a request under half a second of CPU.
MAX_VERDICTS = 10_000


def _form(record: svc.Record) -> str:
    form = record.WhichOneof("form")
    if form is None:
        raise BadRequestError("the record is empty: give it as match, krec or json")
    return form


def _payload(record: svc.Record, form: str) -> bytes | None:
    """The serialized Match of a record given as one (None: a file or JSON text)."""
    if form == "match":
        return record.match.SerializeToString()
    if form == "krec":
        data = record.krec  # a copy each time it is read
        return None if data.startswith(MAGIC) else data
    return None


def _too_large(payload: bytes) -> str:
    return (
        f"the record is {len(payload)} bytes long; a .krec frame holds at most "
        f"{MAX_FRAME_BYTES} (kingrec.limits.MAX_FRAME_BYTES)"
    )


def _check_frame_size(payload: bytes) -> None:
    if len(payload) > MAX_FRAME_BYTES:
        raise LimitError(_too_large(payload))


def _not_a_match(payload: bytes) -> UnreadableRecordError:
    try:
        pb.Match.FromString(payload)
        why = "it cannot be read"
    except DecodeError as exc:
        why = str(exc) or "it cannot be decoded"
    return UnreadableRecordError(
        f"the krec bytes are neither a .krec file nor a serialized kingrec.v1.Match ({why})",
        "FRAME_UNDECODABLE",
    )


def _json_text(record: svc.Record) -> bytes:
    data = record.json.encode("utf-8")
    if data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] != b"{":
        raise UnreadableRecordError(
            "the json text is not a JSON object (a match starts with '{')", "JSON_INVALID"
        )
    return data


def _file(record: svc.Record, form: str) -> RecordFile:
    """A record given as a whole .krec file or as JSON text, opened as a record file."""
    data = _json_text(record) if form == "json" else record.krec
    return RecordFile(record.name, io.BytesIO(data), len(data))


def _only(items: list[object], what: str) -> object:
    if not items:
        raise BadRequestError(f"the {what} holds no record")
    if len(items) > 1:
        raise BadRequestError(f"the {what} holds more than one record; give one at a time")
    return items[0]


def _damage_error(damage: Damage) -> UnreadableRecordError:
    return UnreadableRecordError(damage.message, damage.code)


def judge_record(record: svc.Record) -> MatchReport:
    """The report ``kingrec validate --json --all`` gives for a file holding only this record,
    named ``record.name``: a .krec file (frame 0 at byte 12) for a match or its bytes, a JSON
    Lines file (line 1) for JSON text."""
    form = _form(record)
    payload = _payload(record, form)
    if payload is not None:
        return _judge_frame(record.name, payload)
    what = "json text" if form == "json" else ".krec file"
    items: list[object] = []
    for item in islice(validate_records(_file(record, form)), 2):
        if isinstance(item, CleanMatches):  # only with count_clean, which is not asked for
            raise AssertionError("validate_records counted a record it was asked to report")
        items.append(item)
    only = _only(items, what)
    if isinstance(only, Damage):
        raise _damage_error(only)
    assert isinstance(only, MatchReport)
    return only


def one_match(record: svc.Record) -> bytes | None:
    """The serialized Match of a record given as one (a message or a frame's bytes); None for
    a whole .krec file or JSON text, which may hold many. ``BadRequestError`` for an empty
    record."""
    return _payload(record, _form(record))


def vouch(payload: bytes) -> tuple[int, bytes] | None:
    """(deals, match id as UTF-8) of a match's bytes that the compiled checker vouches for:
    its report is ``MatchReport(match_id, Location(name, 0, FILE_HEADER_SIZE), deals=deals)``
    with no findings, and needs no making. None for anything else (a frame too large or not
    clean, no compiled checker): ``record_verdicts`` judges those."""
    checker = checker_of()
    if checker is None or len(payload) > MAX_FRAME_BYTES:
        return None
    return checker.check(payload)


def _judge_frame(name: str, payload: bytes) -> MatchReport:
    """The report of a record given as one match (its bytes), as frame 0 of a file ``name``."""
    _check_frame_size(payload)
    verdict = validate_payload(payload, Location(name, 0, FILE_HEADER_SIZE))
    if isinstance(verdict, Damage):
        raise _not_a_match(payload)
    return verdict


def record_verdicts(record: svc.Record) -> list[Judged]:
    """Every verdict ``kingrec validate --json --all`` gives for a file holding this record,
    in order: one report for a match, a frame's bytes or a file of one record; for a whole
    .krec file or JSON Lines text of many, each record's report and each damaged stretch.
    Raises as ``judge_record`` for what holds no record at all (a file of nothing but one
    damaged stretch is unreadable, as before)."""
    form = _form(record)
    payload = _payload(record, form)
    if payload is not None:
        return [_judge_frame(record.name, payload)]
    items = list(islice(_file_verdicts(record, form), MAX_VERDICTS + 1))
    if len(items) > MAX_VERDICTS:
        raise _too_many(record.name)
    if not items:
        raise BadRequestError(
            f"the {'json text' if form == 'json' else '.krec file'} holds no record"
        )
    if len(items) == 1 and isinstance(items[0], Damage):
        raise _damage_error(items[0])
    return items


def _too_many(name: str) -> LimitError:
    return LimitError(
        f"{name or 'the request'}: more than {MAX_VERDICTS} records and damaged stretches "
        "to judge in one message (kingrec_service.records.MAX_VERDICTS); send them in pieces"
    )


def _file_verdicts(record: svc.Record, form: str) -> Iterator[Judged]:
    for item in validate_records(_file(record, form)):
        if isinstance(item, CleanMatches):  # only with count_clean, which is not asked for
            raise AssertionError("validate_records counted a record it was asked to report")
        yield item


Checked = tuple[int, bytes]  # (deals, match id as UTF-8) of a record the checker vouched for


def frame_verdicts(
    payloads: Sequence[bytes | memoryview], names: Sequence[str]
) -> list[Judged | Checked]:
    """The verdicts of records given as frames' bytes (each at most ``MAX_FRAME_BYTES``) named
    ``names``, in order, each judged on its own: through the compiled checker in batches,
    those it vouches for as its ``Checked`` (their report needs no making: ``Vouched``), the
    others by the reference. ``LimitError`` for more than ``MAX_VERDICTS``."""
    if len(payloads) > MAX_VERDICTS:
        raise _too_many("")
    out: list[Judged | Checked] = []
    checker = checker_of()
    for start in range(0, len(payloads), BATCH):
        chunk = payloads[start : start + BATCH]
        verdicts = checker.check_batch(chunk) if checker is not None else [None] * len(chunk)
        if None not in verdicts:  # all vouched for (the rule): no step per record here
            out += cast("list[Checked]", verdicts)
            continue
        for i, verdict in enumerate(verdicts, start):
            if verdict is not None:
                out.append(verdict)
            else:
                at = Location(names[i], 0, FILE_HEADER_SIZE)
                out.append(judge_payload(bytes(payloads[i]), at))
    return out


def stream_verdicts(records: Sequence[svc.Record]) -> list[Judged | Vouched]:
    """The verdicts of a ValidateStream request's records, in order, each record judged on
    its own as ``record_verdicts`` judges it; a record that cannot be read gets damage in its
    place instead of failing the request (BAD_REQUEST for an empty one or a file of no
    record). Frames' bytes and messages go through the compiled checker in batches; those it
    vouches for come as ``Vouched``. ``LimitError`` for a request of more than
    ``MAX_VERDICTS`` verdicts (nothing judged past them)."""
    if len(records) > MAX_VERDICTS:
        raise _too_many("")
    out: list[Judged | Vouched] = []
    payloads: list[bytes] = []
    names: list[str] = []

    def flush() -> None:
        for name, item in zip(names, frame_verdicts(payloads, names), strict=True):
            if isinstance(item, tuple):  # as fastcheck's own clean report reads it
                out.append(Vouched(item[1].decode("utf-8"), item[0], name))
            else:
                out.append(item)
        payloads.clear()
        names.clear()

    for record in records:
        form = record.WhichOneof("form")
        payload = None if form is None else _payload(record, form)
        if len(out) + len(payloads) >= MAX_VERDICTS:
            raise _too_many(record.name)
        if payload is not None and len(payload) <= MAX_FRAME_BYTES:
            payloads.append(payload)
            names.append(record.name)
            continue
        flush()
        at = Location(record.name)
        if form is None:
            out.append(
                Damage(at, "BAD_REQUEST", "the record is empty: give it as match, krec or json")
            )
        elif payload is not None:
            out.append(Damage(at, "LIMIT_EXCEEDED", _too_large(payload)))
        else:
            start, room = len(out), MAX_VERDICTS - len(out)
            try:
                out.extend(islice(_file_verdicts(record, form), room + 1))
            except KingrecError as exc:  # no record file, or JSON text that is no object
                out.append(Damage(at, exc.code, str(exc)))
            if len(out) > MAX_VERDICTS:
                raise _too_many(record.name)
            if len(out) == start:
                what = "json text" if form == "json" else ".krec file"
                out.append(Damage(at, "BAD_REQUEST", f"the {what} holds no record"))
    flush()
    return out


def match_of_record(record: svc.Record) -> pb.Match:
    """The match of a record, held to the bounds of ``kingrec.limits`` (``LimitError``)."""
    form = _form(record)
    payload = _payload(record, form)
    if payload is not None:
        _check_frame_size(payload)
        problem = scan_match_limits(payload)
        if problem is not None:
            raise LimitError(f"the record is over one of kingrec's bounds: {problem}")
        try:
            return pb.Match.FromString(payload)
        except DecodeError:
            raise _not_a_match(payload) from None
    if form == "json":
        match = loads_match(_json_text(record))
    else:
        only = _only(list(islice(_file(record, form), 2)), ".krec file")
        if isinstance(only, Damage):
            raise _damage_error(only)
        assert isinstance(only, Record)
        match = only.match
    problem = check_match_limits(match)
    if problem is not None:
        raise LimitError(f"the record is over one of kingrec's bounds: {problem}")
    return match


def payload_of_record(record: svc.Record) -> bytes:
    """The serialized match a store keeps for a record, as ``kingrec ingest`` would keep it
    from a file: the bytes of a frame as they are (a serialized Match, or the one frame of a
    .krec file), a match given as a message or as JSON serialized deterministically.
    Whether the bytes are a readable match, the store judges."""
    form = _form(record)
    if form == "match":
        payload = record.match.SerializeToString(deterministic=True)
    elif form == "json":
        payload = loads_match(_json_text(record)).SerializeToString(deterministic=True)
    elif not record.krec.startswith(MAGIC):
        payload = record.krec
    else:
        frames: list[bytes] = []
        for run in _file(record, form).raw_frame_runs():
            if isinstance(run, Damage):
                raise _damage_error(run)
            frames += run.payloads
            if len(frames) > 1:
                break
        _only(list(frames), ".krec file")
        payload = frames[0]
    _check_frame_size(payload)
    return payload
