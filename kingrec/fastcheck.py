"""Validation straight from a record's bytes: the fast path for clean matches.

Most records in a file are clean. The compiled checker (``kingrec._fastcheck_c``) reads a
serialized ``kingrec.v1.Match`` in its wire format, replays every deal in C and says
whether ``validate_match`` would report no finding at all; only the records it cannot vouch
for are decoded into Python objects and judged by the reference validator. Reports are
therefore always the reference's own: a clean match gets an empty report, any other gets
``validate_match``'s. Without the compiled module every record takes the reference path.

Batch entry points (``check_payloads``, ``validate_frames``) pay the per-call overhead per
batch of records, not per card.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Protocol, cast

from . import _twins
from .boundary import ruleset_from_proto
from .findings import Location, MatchReport
from .limits import MAX_FIXED_ORDER, MAX_STRING_BYTES
from .records import Damage, decode_frame
from .v1 import record_pb2 as pb
from .validator import validate_match

__all__ = [
    "BATCH",
    "COMPILED",
    "check_payload",
    "check_payloads",
    "checker_of",
    "validate_frames",
    "validate_payload",
]

BATCH = 256  # records per call into the compiled checker

# What the compiled checker answers for one payload: (deals, match_id bytes) or None.
_Verdict = tuple[int, bytes] | None


class _Checker(Protocol):
    def check(self, payload: bytes, /) -> _Verdict: ...

    def check_batch(self, payloads: Sequence[bytes], /) -> list[_Verdict]: ...


_RULESET_SETS = ("fixed_order", "heart_lead_ban", "withholding", "void_discard", "early_end")


def _core_params(raw: bytes) -> dict[str, object] | None:
    """A record's ruleset (its raw bytes) as the compiled checker reads it.

    None when the reference would not accept it as it stands (unparseable, over a limit,
    ``RulesetError``, anything else): such records take the reference path, which then
    reports exactly why.
    """
    try:
        msg = pb.Ruleset.FromString(raw)
        if len(msg.preset.encode()) > MAX_STRING_BYTES or any(
            len(getattr(msg, name).contracts) > MAX_FIXED_ORDER for name in _RULESET_SETS
        ):
            return None
        return ruleset_from_proto(msg).core_params()
    except Exception:  # any doubt sends the record to the reference
        return None


_CHECKERS: dict[str, _Checker | None] = {}


def checker_of(twins: _twins.Twins | None = None) -> _Checker | None:
    """The wire-level checker of a set of twins (default: the active one); None for the
    pure-Python twins, whose records all take the reference path."""
    twins = twins or _twins.ACTIVE
    if twins.name not in _CHECKERS:
        module = twins.fastcheck
        _CHECKERS[twins.name] = (
            None if module is None else cast(_Checker, module.MatchChecker(_core_params))
        )
    return _CHECKERS[twins.name]


_checker = checker_of()
COMPILED = _checker is not None


def check_payload(payload: bytes) -> tuple[bool, int, str]:
    """``(clean, deals, match_id)`` of one serialized Match; deals and id only when clean.

    ``clean`` is True only when ``validate_match`` would report no finding at all; False
    means "not certainly clean" (or no compiled checker), not necessarily invalid.
    """
    verdict = _checker.check(payload) if _checker is not None else None
    if verdict is None:
        return False, 0, ""
    return True, verdict[0], verdict[1].decode("utf-8")


def check_payloads(payloads: Sequence[bytes]) -> list[bool]:
    """For each serialized Match, whether it is certainly clean; one compiled call."""
    if _checker is None:
        return [False] * len(payloads)
    return [v is not None for v in _checker.check_batch(payloads)]


def validate_payload(payload: bytes, location: Location | None = None) -> MatchReport:
    """``validate_match`` of a serialized Match, skipping the decoding when it is clean.

    Raises ``google.protobuf.message.DecodeError`` when the bytes are not a Match, as
    ``pb.Match.FromString`` does.
    """
    verdict = _checker.check(payload) if _checker is not None else None
    return _report(payload, verdict, location or Location())


def _clean_report(verdict: tuple[int, bytes], location: Location) -> MatchReport:
    """The report of a match the compiled checker vouched for: no findings."""
    return MatchReport(verdict[1].decode("utf-8"), location, deals=verdict[0])


def _report(payload: bytes, verdict: _Verdict, location: Location) -> MatchReport:
    if verdict is None:
        return validate_match(pb.Match.FromString(payload), location)
    return _clean_report(verdict, location)


def validate_frames(
    frames: Iterable[tuple[Location, bytes] | Damage],
    batch: int = BATCH,
    *,
    twins: _twins.Twins | None = None,
) -> Iterator[MatchReport | Damage]:
    """Reports for a stream of raw frames (``RecordFile.raw_frames``), in order.

    Frames are checked ``batch`` at a time; damage passes through, and a frame that is not
    a Match becomes FRAME_UNDECODABLE damage exactly as ``RecordFile`` reports it.
    """
    checker = checker_of(twins)
    engine = (twins or _twins.ACTIVE).engine
    items = iter(frames)
    while chunk := list(islice(items, batch)):
        payloads = [item[1] for item in chunk if not isinstance(item, Damage)]
        verdicts: Iterator[_Verdict] = iter(
            checker.check_batch(payloads) if checker is not None else [None] * len(payloads)
        )
        for item in chunk:
            if isinstance(item, Damage):
                yield item
                continue
            location, payload = item
            verdict = next(verdicts)
            if verdict is not None:
                yield _clean_report(verdict, location)
                continue
            decoded = decode_frame(location, payload)
            if isinstance(decoded, Damage):
                yield decoded
            else:
                yield validate_match(decoded, location, engine)
