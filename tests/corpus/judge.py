"""Judging one input: everything kingrec's library does with a record file, on both twins.

``judge_file(path)`` runs a file through the library the way the CLI, the store and the service
do (``validate_file``, ``read_records``, ``replay_match`` and ``deal_events`` on every record
that decodes, ``convert_file`` both ways and back) and returns what went against the
documented behaviour, as sentences; an empty list means the file was handled as documented:

* the only exceptions are ``kingrec.errors.KingrecError`` subclasses for the file as a whole
  (``RecordFileError`` from reading and validating, also ``LimitError`` and
  ``DamagedFileError`` from converting, ``RulesetError`` from replaying a record whose
  ruleset cannot be applied); everything else is a report, a damage item or a finding with a
  documented code, and every message can be written as UTF-8 and as JSON;
* the compiled and the pure-Python twins give the same reports, read the same records and
  replay the same events;
* converting to either format and back keeps every record that was read.

``run_cli`` runs the installed ``kingrec`` script and says if it exited 3 or wrote a traceback.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

from kingrec import _twins
from kingrec.boundary import ruleset_from_proto
from kingrec.container import reader
from kingrec.convert import Format, convert_file
from kingrec.errors import DamagedFileError, KingrecError, RecordFileError, RulesetError
from kingrec.events import deal_events
from kingrec.findings import CODES, CleanMatches, MatchReport
from kingrec.limits import check_match_limits
from kingrec.records import Damage, Record, read_records
from kingrec.replay import replay_match
from kingrec.validation import validate_file

__all__ = [
    "CASE_SECONDS",
    "DAMAGE_CODES",
    "KINGREC",
    "TWINS",
    "CaseTimeout",
    "cli_problems",
    "judge_file",
    "run_cli",
    "time_bound",
    "twins_of",
    "validate_problems",
]

DAMAGE_CODES = frozenset(
    {"FRAME_CORRUPT", "FRAME_TRUNCATED", "FRAME_UNDECODABLE", "JSON_INVALID", "LIMIT_EXCEEDED"}
)
KINGREC = str(Path(sys.executable).parent / "kingrec")


# Seconds one case may take, at most, on a loaded 2-core CI machine: a hang guard (most take
# a few milliseconds; the slowest, a frame of a million plays, well under a second).
CASE_SECONDS = 20.0


class CaseTimeout(BaseException):  # not an Exception: no handler in kingrec may swallow it
    pass


@contextlib.contextmanager
def time_bound(seconds: float = CASE_SECONDS) -> Iterator[None]:
    """Fail a case that runs longer than ``seconds`` instead of hanging (main thread only)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"the case took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _all_twins() -> list[_twins.Twins]:
    return [_twins.PYTHON] + ([_twins.COMPILED] if _twins.COMPILED is not None else [])


TWINS = _all_twins()


@contextlib.contextmanager
def twins_of(twins: _twins.Twins) -> Iterator[None]:
    """Run the container reader with the frame loop of ``twins`` (it picks one at import)."""
    before = reader._scan_frames
    reader._scan_frames = twins.frames.scan_frames
    try:
        yield
    finally:
        reader._scan_frames = before


def _writable(text: str, what: str, problems: list[str]) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        problems.append(f"{what} cannot be written as UTF-8: {text[:80]!r}")


def _item(item: object, problems: list[str]) -> tuple[Any, ...]:
    """A report, damage item or count as plain values, checking it is one of those."""
    if isinstance(item, MatchReport):
        out = item.to_dict()
        try:
            line = json.dumps(out, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            problems.append(f"report of {item.match_id!r} is not JSON: {exc}")
            line = repr(out)
        _writable(line, "a report", problems)
        _writable(str(item.location), "a location", problems)
        for finding in item.findings:
            if finding.code not in CODES:
                problems.append(f"undocumented finding code {finding.code}")
        return ("match", line)
    if isinstance(item, Damage):
        if item.code not in DAMAGE_CODES:
            problems.append(f"undocumented damage code {item.code}")
        _writable(item.message, "a damage message", problems)
        return ("damage", item.code, str(item.location), item.message)
    if isinstance(item, CleanMatches):
        return ("clean", item.count, item.deals)
    problems.append(f"validation yielded {type(item).__name__}, not a report or damage")
    return ("?", repr(item))


def _raised(exc: BaseException, allowed: tuple[type[BaseException], ...], what: str,
            problems: list[str]) -> tuple[Any, ...]:  # fmt: skip
    if not isinstance(exc, allowed):
        problems.append(f"{what} raised {type(exc).__name__}: {exc}")
    else:
        _writable(str(exc), f"{what}'s {type(exc).__name__}", problems)
    return ("raised", type(exc).__name__, str(exc))


def _validate(path: str, twins: _twins.Twins, count_clean: bool, problems: list[str]) -> list[Any]:
    out: list[Any] = []
    try:
        with twins_of(twins):
            for item in validate_file(path, count_clean=count_clean, twins=twins):
                out.append(_item(item, problems))
    except Exception as exc:
        out.append(_raised(exc, (RecordFileError,), f"validate_file ({twins.name})", problems))
    return out


def _read(path: str, twins: _twins.Twins, problems: list[str]) -> list[Any]:
    out: list[Any] = []
    try:
        with twins_of(twins):
            for item in read_records(path):
                if isinstance(item, Record):
                    out.append(item)
                elif isinstance(item, Damage):
                    out.append(_item(item, problems))
                else:
                    problems.append(f"read_records yielded {type(item).__name__}")
    except Exception as exc:
        out.append(_raised(exc, (RecordFileError,), f"read_records ({twins.name})", problems))
    return out


def _same(a: list[Any], b: list[Any]) -> bool:
    def plain(items: list[Any]) -> list[Any]:
        return [
            (str(i.location), i.match.SerializeToString(), i.unknown_keys)
            if isinstance(i, Record)
            else i
            for i in items
        ]

    return plain(a) == plain(b)


def _replay(record: Record, problems: list[str]) -> None:
    match = record.match
    try:
        rules = ruleset_from_proto(match.ruleset)
    except RulesetError:
        rules = None
    except Exception as exc:
        problems.append(f"ruleset_from_proto raised {type(exc).__name__}: {exc}")
        return
    try:
        for _ in replay_match(match):
            pass
    except Exception as exc:
        _raised(exc, (RulesetError,), "replay_match", problems)
    if rules is None:
        return
    for number, deal in enumerate(match.deals, 1):
        events = []
        for twins in TWINS:
            try:
                events.append(list(deal_events(deal, rules, number=number, engine=twins.engine)))
            except Exception as exc:
                problems.append(f"deal_events ({twins.name}) raised {type(exc).__name__}: {exc}")
                return
        if any(e != events[0] for e in events):
            problems.append(f"deal {number} of {match.match_id!r} replays differently per twin")


def _convert(
    path: str, records: list[Any], workdir: Path, problems: list[str], *, thorough: bool
) -> None:
    """Convert (to a stream, and when ``thorough`` to a file too), then read the output back."""
    # Records over a bound are damage to convert_file: not converted (nor judged).
    read_ok = [r for r in records if isinstance(r, Record) and check_match_limits(r.match) is None]
    over = sum(1 for r in records if isinstance(r, Record)) - len(read_ok)
    damaged = over > 0 or any(isinstance(r, tuple) and r[0] == "damage" for r in records)
    unreadable = any(isinstance(r, tuple) and r[0] == "raised" for r in records)
    fmts: tuple[Format, ...] = ("krec", "jsonl")
    if not thorough:  # the other format only
        with open(path, "rb") as f:
            fmts = ("jsonl",) if f.read(1) == b"\x89" else ("krec",)
    for fmt in fmts:
        out = io.BytesIO()
        try:
            summary = convert_file(path, out, to=fmt, skip_damaged=True)
        except Exception as exc:
            _raised(exc, (KingrecError,), f"convert_file to {fmt}", problems)
            continue
        if unreadable:
            problems.append(f"convert_file to {fmt} read a file that read_records refused")
            continue
        if summary.converted != len(read_ok):
            problems.append(
                f"convert_file to {fmt} converted {summary.converted} of {len(read_ok)}"
            )
        back = workdir / f"back.{fmt}"
        back.write_bytes(out.getvalue())
        again = list(read_records(str(back)))
        if any(not isinstance(r, Record) for r in again):
            problems.append(f"the {fmt} that convert_file wrote reads back with damage")
            continue
        before = [r.match.SerializeToString(deterministic=True) for r in read_ok]
        after = [
            r.match.SerializeToString(deterministic=True) for r in again if isinstance(r, Record)
        ]
        if before != after:
            problems.append(f"converting to {fmt} and back changed the records")
    if not thorough:
        return
    # To a file, refusing damage: nothing written then, and never a temporary file left.
    target = workdir / "out.krec"
    try:
        convert_file(path, str(target), skip_damaged=False)
        if damaged or unreadable:
            problems.append("convert_file did not refuse a damaged file")
    except DamagedFileError:
        if not damaged:
            problems.append("convert_file refused a file without damage")
    except Exception as exc:
        _raised(exc, (KingrecError,), "convert_file to a path", problems)
    left = sorted(p.name for p in workdir.iterdir() if p.name.startswith("."))
    if left:
        problems.append(f"convert_file left {left}")
    if target.exists() and (damaged or unreadable):
        problems.append("convert_file wrote a damaged file's records")
    with contextlib.suppress(FileNotFoundError):
        target.unlink()


def judge_file(path: str, workdir: Path, *, thorough: bool = True) -> list[str]:
    """What went against the documented behaviour when the library took ``path`` (none: []).

    ``thorough`` also counts clean records, reads the file with each frame loop on its own,
    and converts to both formats and to a file; without it (the quick judge of the test
    suite) the file is validated by both twins, read, replayed and converted to the other
    format and back.
    """
    problems: list[str] = []
    reports = [_validate(path, twins, False, problems) for twins in TWINS]
    if any(r != reports[0] for r in reports):
        problems.append("the twins give different reports")
    if thorough:
        counted = _validate(path, TWINS[-1], True, problems)
        with_findings = [r for r in reports[0] if _has_findings(r)]
        without_clean = [r for r in counted if r[0] != "clean"]
        if [r for r in without_clean if _has_findings(r)] != with_findings:
            problems.append("counting clean records changes the other reports")
        readings = [_read(path, twins, problems) for twins in TWINS]
        if any(not _same(r, readings[0]) for r in readings):
            problems.append("the twins read different records")
        reading = readings[0]
    else:
        reading = _read(path, _twins.ACTIVE, problems)
    for item in reading:  # what kingrec show does: records over a bound it refuses
        if isinstance(item, Record) and check_match_limits(item.match) is None:
            _replay(item, problems)
    _convert(path, reading, workdir, problems, thorough=thorough)
    return problems


def validate_problems(path: str) -> list[str]:
    """What ``judge_file`` finds by validating ``path`` on both twins, and nothing more."""
    problems: list[str] = []
    reports = [_validate(path, twins, False, problems) for twins in TWINS]
    if any(r != reports[0] for r in reports):
        problems.append("the twins give different reports")
    return problems


def _has_findings(item: tuple[Any, ...]) -> bool:
    return item[0] != "match" or '"findings": []' not in item[1]


def run_cli(args: list[str], *, pure: bool = False, timeout: float = 60) -> tuple[int, str, str]:
    """The installed ``kingrec`` script: (exit status, stdout, stderr); raises on a hang."""
    env = {**os.environ, "KINGREC_PURE_PYTHON": "1" if pure else ""}
    env.pop("KINGREC_DEBUG", None)
    result = subprocess.run(
        [KINGREC, *args], capture_output=True, env=env, timeout=timeout, check=False
    )
    return (
        result.returncode,
        result.stdout.decode("utf-8", "replace"),
        result.stderr.decode("utf-8", "replace"),
    )


def cli_problems(args: list[str], status: int, err: str) -> list[str]:
    """What is wrong with a run of the CLI: a bug's exit status, or a traceback."""
    problems = []
    if status not in (0, 1, 2):
        problems.append(f"kingrec {' '.join(args)} exited {status}: {err.strip()[-300:]}")
    if "Traceback" in err or "internal error" in err:
        problems.append(f"kingrec {' '.join(args)} wrote a traceback: {err.strip()[-300:]}")
    return problems
