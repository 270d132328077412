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

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from . import _twins
from .container import FrameRun
from .findings import CleanMatches, Finding, Location, MatchReport, Severity, limit_report
from .limits import MAX_FIXED_ORDER, MAX_STRING_BYTES, scan_match_limits, wire_match_id
from .records import Damage, decode_frame
from .ruleset_fields import SpelledOut, read_ruleset, resolve_ruleset

if TYPE_CHECKING:  # protobuf is loaded only when a record needs it (see _spelled_out)
    import mmap

    from .v1 import record_pb2 as pb

__all__ = [
    "BATCH",
    "COMPILED",
    "PIECE_FRAMES",
    "JudgedRun",
    "check_payload",
    "check_payloads",
    "checker_of",
    "content_key_of",
    "judge_frames",
    "judge_payload",
    "judge_run",
    "note_duplicate",
    "pieces",
    "run_locations",
    "settle_frames",
    "settle_run",
    "validate_frames",
    "validate_payload",
    "validate_payloads",
    "validate_runs",
]

BATCH = 256  # records per call into the compiled checker

# What the compiled checker answers for one payload: (deals, match_id bytes) or None.
_Verdict = tuple[int, bytes] | None


class _Checker(Protocol):  # a payload: bytes, or a buffer read where it lies
    def check(self, payload: bytes | memoryview, /) -> _Verdict: ...

    def check_batch(self, payloads: Sequence[bytes | memoryview], /) -> list[_Verdict]: ...

    def check_run(
        self, payloads: list[bytes], keyed: bool = True, /
    ) -> tuple[int, int, list[int], bytes]: ...

    def check_frames(
        self,
        buf: bytearray | memoryview | mmap.mmap,
        start: int,
        end: int,
        max_payload: int,
        max_frames: int,
        mapped: bool = False,
        /,
    ) -> tuple[int, bytes, int, int, list[int], list[bytes], bytes]: ...


def _core_params(raw: bytes) -> dict[str, object] | None:
    """A record's ruleset (its raw bytes) as the compiled checker reads it.

    None when the reference would not accept it as it stands (unparseable, over a limit,
    ``RulesetError``, anything else): such records take the reference path, which then
    reports exactly why.
    """
    try:
        spelled = _spelled_out(raw)
        if len(spelled.preset.encode()) > MAX_STRING_BYTES or any(
            len(contracts) > MAX_FIXED_ORDER for contracts in spelled.sets.values()
        ):
            return None
        return resolve_ruleset(spelled).core_params()
    except Exception:  # any doubt sends the record to the reference
        return None


def _spelled_out(raw: bytes) -> SpelledOut:
    """What a record's ruleset spells out: read from the bytes when they are in the plain
    form writers produce, so that a run of clean records loads no protobuf; else decoded
    by protobuf, the reference (tests/test_ruleset_fields.py holds the two to one answer)."""
    spelled = read_ruleset(raw)
    if spelled is not None:
        return spelled
    from .boundary import spelled_out  # here: the plain form needs no protobuf

    return spelled_out(_ruleset_in_a_match(raw))


def _ruleset_in_a_match(raw: bytes) -> pb.Ruleset:
    """The ruleset decoded where it sits, as field 5 of a Match: the decoder's nesting limit
    (100 levels of messages and groups) then counts the Match too, as it does when the
    reference decodes the whole record (decoded alone, a ruleset holding groups 100 deep
    passed, while the record holding it is undecodable)."""
    from .v1 import record_pb2 as pb  # here: see _spelled_out

    size, key = len(raw), bytearray(b"\x2a")  # field 5, length-delimited
    while size >= 0x80:
        key.append(size & 0x7F | 0x80)
        size >>= 7
    key.append(size)
    return pb.Match.FromString(bytes(key) + raw).ruleset


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


def validate_payload(payload: bytes, location: Location | None = None) -> MatchReport | Damage:
    """The report of a serialized Match, skipping the decoding when it is clean.

    FRAME_UNDECODABLE damage when the bytes are not a Match, a LIMIT_EXCEEDED report when
    it is over a bound of ``kingrec.limits``.
    """
    return _judged(payload, location or Location(), _checker, None)


def validate_payloads(
    payloads: Sequence[bytes],
    locations: Sequence[Location],
    *,
    twins: _twins.Twins | None = None,
) -> list[MatchReport | Damage]:
    """``validate_payload`` of each serialized Match, each judged on its own (no
    DUPLICATE_RECORD between them), the clean ones in one compiled call per ``BATCH``."""
    checker = checker_of(twins)
    engine = (twins or _twins.ACTIVE).engine
    out: list[MatchReport | Damage] = []
    for start in range(0, len(payloads), BATCH):
        chunk = payloads[start : start + BATCH]
        verdicts = checker.check_batch(chunk) if checker is not None else [None] * len(chunk)
        for i, verdict in enumerate(verdicts, start):
            out.append(_reported(verdict, payloads[i], locations[i], engine))
    return out


def judge_payload(
    payload: bytes, location: Location, engine: ModuleType | None = None
) -> MatchReport | Damage:
    """The reference's verdict on one serialized Match: a LIMIT_EXCEEDED report when it is
    over a bound (found before anything is decoded), FRAME_UNDECODABLE damage when it is no
    Match, else ``validate_match``'s report."""
    problem = scan_match_limits(payload)
    if problem is not None:
        return limit_report(wire_match_id(payload), location, problem)
    decoded = decode_frame(location, payload)
    if isinstance(decoded, Damage):
        return decoded
    # Here, not at the top: a run whose records are all clean never loads the reference.
    from .validator import validate_match

    return validate_match(decoded, location, engine)


def _clean_report(verdict: tuple[int, bytes], location: Location) -> MatchReport:
    """The report of a match the compiled checker vouched for: no findings."""
    return MatchReport(verdict[1].decode("utf-8"), location, deals=verdict[0])


def _judged(
    payload: bytes, location: Location, checker: _Checker | None, engine: ModuleType | None
) -> MatchReport | Damage:
    """One serialized Match's report: the compiled checker's when it vouches for it, else
    the reference's (``judge_payload``)."""
    verdict = checker.check(payload) if checker is not None else None
    return _reported(verdict, payload, location, engine)


def _reported(
    verdict: _Verdict,
    payload: bytes,
    location: Location,
    engine: ModuleType | None,
) -> MatchReport | Damage:
    """The report of a Match the compiled checker gave ``verdict`` on: its clean report
    when it vouched for it, else the reference's (``judge_payload``)."""
    if verdict is not None:
        return _clean_report(verdict, location)
    return judge_payload(payload, location, engine)


def content_key_of(twins: _twins.Twins | None = None) -> Callable[[bytes], int]:
    """The function that keys a record's bytes for duplicate detection in one run: the
    compiled checker's fast hash, or blake2b on the pure-Python path (each run uses one)."""
    module = (twins or _twins.ACTIVE).fastcheck
    if module is not None:
        return cast(Callable[[bytes], int], module.content_key)
    return _blake2b_key


def _blake2b_key(payload: bytes) -> int:
    import hashlib  # here: the compiled path keys records without it

    return int.from_bytes(hashlib.blake2b(payload, digest_size=8).digest(), "little")


def note_duplicate(item: MatchReport | Damage, key: int, seen: set[int]) -> MatchReport | Damage:
    """Add a DUPLICATE_RECORD warning to a report whose record was seen before in this run."""
    if isinstance(item, MatchReport):
        if key in seen:
            item.findings.append(
                Finding(
                    "DUPLICATE_RECORD",
                    Severity.WARNING,
                    "The same match (same id, same content) appeared earlier in this run.",
                )
            )
        seen.add(key)
    return item


def judge_frames(
    payloads: Sequence[bytes],
    locations: Sequence[Location],
    *,
    twins: _twins.Twins | None = None,
) -> list[tuple[MatchReport | Damage, int]]:
    """Each serialized Match's report with its content key: the part of judging frames
    that needs no knowledge of the rest of the run (the duplicate set), so a worker process
    can do it. The clean ones are found in one compiled call per ``BATCH``."""
    checker = checker_of(twins)
    engine = (twins or _twins.ACTIVE).engine
    key_of = content_key_of(twins)
    out: list[tuple[MatchReport | Damage, int]] = []
    for start in range(0, len(payloads), BATCH):
        chunk = payloads[start : start + BATCH]
        verdicts = checker.check_batch(chunk) if checker is not None else [None] * len(chunk)
        for i, verdict in enumerate(verdicts, start):
            report = _reported(verdict, payloads[i], locations[i], engine)
            out.append((report, key_of(payloads[i])))
    return out


def validate_frames(
    frames: Iterable[tuple[Location, bytes] | Damage],
    batch: int = BATCH,
    *,
    twins: _twins.Twins | None = None,
    seen: set[int] | None = None,
) -> Iterator[MatchReport | Damage]:
    """Reports for a stream of raw frames (``RecordFile.raw_frames``), in order.

    Frames are checked ``batch`` at a time; damage passes through. ``seen`` holds the keys
    of the records judged so far (share one set across files); a record seen before gets a
    DUPLICATE_RECORD warning.
    """
    seen = set() if seen is None else seen
    items = iter(frames)
    while chunk := list(islice(items, batch)):
        sound = [item for item in chunk if not isinstance(item, Damage)]
        judged = iter(judge_frames([f[1] for f in sound], [f[0] for f in sound], twins=twins))
        for item in chunk:
            if isinstance(item, Damage):
                yield item
                continue
            report, key = next(judged)
            yield note_duplicate(report, key, seen)


# Most frames judged at once from one run: the reports of a run are made together, and a
# hostile MiB can hold 65,536 empty frames, whose reports would be a hundred megabytes.
PIECE_FRAMES = 1024


def pieces(
    runs: Iterable[FrameRun | Damage], frames: int = PIECE_FRAMES
) -> Iterator[FrameRun | Damage]:
    """The runs cut into pieces of at most ``frames`` frames; damage passes through."""
    for run in runs:
        if isinstance(run, Damage) or len(run.payloads) <= frames:
            yield run
            continue
        for start in range(0, len(run.payloads), frames):
            stop = start + frames
            yield FrameRun(run.first + start, run.offsets[start:stop], run.payloads[start:stop])


@dataclass(frozen=True)
class JudgedRun:
    """A run of frames judged as far as it can be without the run-wide duplicate set (so a
    worker process can do it): the compiled checker's count of the clean ones with their
    keys, and the others judged by the reference, each with its key."""

    clean: int
    deals: int
    dirty: list[int]  # indices in the run of the records the checker did not vouch for
    keys: bytes  # the clean ones' content keys, packed uint64s, in run order
    reports: list[tuple[MatchReport | Damage, int]]  # the dirty ones' reports and keys


def judge_run(run: FrameRun, name: str, *, twins: _twins.Twins | None = None) -> JudgedRun:
    """Stage one of ``validate_runs`` with the compiled checker, for one run of file ``name``."""
    checker = checker_of(twins)
    assert checker is not None, "judge_run needs the compiled checker"
    engine = (twins or _twins.ACTIVE).engine
    key_of = content_key_of(twins)
    payloads, first, offsets = run.payloads, run.first, run.offsets
    clean, deals, dirty, keys = checker.check_run(payloads)
    reports = [
        (
            judge_payload(payloads[i], Location(name, first + i, offsets[i]), engine),
            key_of(payloads[i]),
        )
        for i in dirty
    ]
    return JudgedRun(clean, deals, list(dirty), keys, reports)


def settle_run(
    judged: JudgedRun,
    first: int,
    offsets: Sequence[int],
    payloads: Sequence[bytes],
    name: str,
    seen: set[int],
    *,
    twins: _twins.Twins | None = None,
) -> Iterator[MatchReport | CleanMatches | Damage]:
    """Stage two: the run's items in file order against the run-wide duplicate set ``seen``.

    The clean matches come as one ``CleanMatches`` (before the run's other reports); a clean
    one seen before is judged again here, from its bytes in ``payloads`` (only those are read),
    by the compiled checker, and reported with its DUPLICATE_RECORD warning.
    """
    checker, engine = checker_of(twins), (twins or _twins.ACTIVE).engine
    key_of = content_key_of(twins)
    clean, deals = judged.clean, judged.deals
    dirty = dict(zip(judged.dirty, judged.reports, strict=True))
    keys = memoryview(judged.keys).cast("Q")
    repeats: dict[int, MatchReport | Damage] = {}  # clean ones seen before, judged now
    fresh = set(keys)
    if len(fresh) == len(keys) == len(offsets) - len(dirty) and fresh.isdisjoint(seen):
        # No repeat among them (the rule): the set's own loops in C, not a Python step per
        # record (for 100,000 records that loop was the parent's largest under --jobs).
        seen.update(fresh)
    else:
        clean_indices = (i for i in range(len(offsets)) if i not in dirty)
        for i, key in zip(clean_indices, keys, strict=True):
            if key in seen:  # a repeat: reported one by one, with its warning
                location = Location(name, first + i, offsets[i])
                payload = payloads[i]  # once: under the pool each read is a pread of the file
                # The compiled checker vouched for it in stage one: asked again (what a clean
                # record costs, where the reference took a millisecond a repeat), the
                # reference only for bytes it no longer vouches for (a file changed since).
                report = _judged(payload, location, checker, engine)
                report = note_duplicate(report, key_of(payload), seen)
                if isinstance(report, MatchReport):
                    clean, deals = clean - 1, deals - report.deals
                repeats[i] = report
            else:
                seen.add(key)
    if clean:
        yield CleanMatches(clean, deals)
    for i in sorted((*dirty, *repeats)):
        if i in repeats:
            yield repeats.pop(i)
            continue
        report, key = dirty.pop(i)
        yield note_duplicate(report, key, seen)


def settle_frames(
    judged: list[tuple[MatchReport | Damage, int]], seen: set[int]
) -> Iterator[MatchReport | Damage]:
    """Stage two of ``judge_frames``: each report, in order, against the duplicate set."""
    for report, key in judged:
        yield note_duplicate(report, key, seen)


def run_locations(run: FrameRun, name: str) -> list[Location]:
    """The location of each frame of a run of file ``name``."""
    return [Location(name, i, at) for i, at in enumerate(run.offsets, run.first)]


def validate_runs(
    runs: Iterable[FrameRun | Damage],
    name: str,
    *,
    count_clean: bool = False,
    twins: _twins.Twins | None = None,
    seen: set[int] | None = None,
) -> Iterator[MatchReport | Damage | CleanMatches]:
    """Reports for the frame runs of file ``name`` (``RecordFile.raw_frame_runs``), in order.

    With ``count_clean`` the matches the compiled checker vouches for come as one
    ``CleanMatches`` per run (before that run's other reports) instead of one empty report
    each: nothing is made per clean match. ``seen`` as for ``validate_frames``.

    Each run is judged in two stages, ``judge_run``/``judge_frames`` (independent of the
    rest of the run) then ``settle_run``/``settle_frames`` (the duplicate set, in order):
    ``kingrec.judges`` does the first stage in worker processes with the same result.
    """
    seen = set() if seen is None else seen
    counted = count_clean and checker_of(twins) is not None
    for run in pieces(runs):
        if isinstance(run, Damage):
            yield run
        elif counted:
            judgement = judge_run(run, name, twins=twins)
            yield from settle_run(
                judgement, run.first, run.offsets, run.payloads, name, seen, twins=twins
            )
        else:
            judged = judge_frames(run.payloads, run_locations(run, name), twins=twins)
            yield from settle_frames(judged, seen)
