"""Library values -> service messages: reports and findings, in named ``*_to_proto`` functions;
a report encoded at once (``report_bytes``) for responses put together from encoded parts.

The report's JSON text is the very line ``kingrec validate --json`` prints for it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from kingrec.findings import Finding, Location, MatchReport, Severity
from kingrec.jsonl import report_line
from kingrec.records import Damage
from kingrec.store.ingest import DUPLICATE, REJECTED, STORED, STORED_INVALID, RecordVerdict
from kingrec.v1 import record_pb2 as pb
from kingrec.v1 import service_pb2 as svc

from .wire import delimited, varint

__all__ = [
    "clean_report_bytes",
    "clean_report_wire",
    "damage_to_proto",
    "finding_to_proto",
    "located_bytes",
    "location_bytes",
    "location_to_proto",
    "rejected_verdict",
    "report_bytes",
    "report_json",
    "report_to_proto",
    "stored_summary",
    "verdict_into",
    "verdict_to_proto",
]

_SEVERITY = {Severity.ERROR: svc.SEVERITY_ERROR, Severity.WARNING: svc.SEVERITY_WARNING}


def finding_to_proto(finding: Finding) -> svc.Finding:
    msg = svc.Finding(
        code=finding.code, severity=_SEVERITY[finding.severity], message=finding.message
    )
    if finding.deal is not None:
        msg.deal = finding.deal
    if finding.trick is not None:
        msg.trick = finding.trick
    if finding.seat is not None:
        msg.seat = finding.seat
    if finding.card is not None:
        msg.card = finding.card
    if finding.play is not None:
        msg.play = finding.play
    if finding.legal is not None:
        msg.legal = bytes(finding.legal)
    if finding.caused_by is not None:
        msg.caused_by = finding.caused_by
    return msg


def location_to_proto(location: Location) -> svc.Location:
    msg = svc.Location()
    _location_into(msg, location)
    return msg


def _location_into(msg: svc.Location, location: Location) -> None:
    msg.file = location.file
    if location.frame is not None:
        msg.frame = location.frame
    if location.offset is not None:
        msg.offset = location.offset
    if location.line is not None:
        msg.line = location.line


def report_to_proto(report: MatchReport) -> svc.Report:
    msg = svc.Report()
    _report_into(msg, report)
    return msg


def _report_into(msg: svc.Report, report: MatchReport) -> None:
    # Filled in place: a message handed to a constructor or a repeated field is copied,
    # which is most of what a clean report costs (ValidateStream makes one per record).
    msg.match_id = report.match_id
    _location_into(msg.location, report.location)
    msg.valid = report.valid
    msg.deals = report.deals
    if report.findings:
        msg.findings.extend(finding_to_proto(f) for f in report.findings)


def report_bytes(report: MatchReport) -> bytes:
    """``report_to_proto(report).SerializeToString()``; a report without findings (most of
    them) is encoded here without making the message."""
    if report.findings:
        return report_to_proto(report).SerializeToString()
    return clean_report_bytes(report.match_id, location_bytes(report.location), report.deals)


def location_bytes(location: Location) -> bytes:
    """``location_to_proto(location).SerializeToString()``: file = 1 (left out when empty, as
    proto3 leaves it out), the optional frame = 2, offset = 3 and line = 4 when set."""
    file = location.file.encode("utf-8")
    return b"".join(
        (
            delimited(b"\x0a", file) if file else b"",
            b"" if location.frame is None else b"\x10" + varint(location.frame),
            b"" if location.offset is None else b"\x18" + varint(location.offset),
            b"" if location.line is None else b"\x20" + varint(location.line),
        )
    )


def clean_report_bytes(match_id: str, location: bytes, deals: int) -> bytes:
    """The encoded Report of a record with no findings, as ``report_to_proto`` makes it:
    match_id = 1 (left out when empty), location = 2 (``location_bytes``), valid = 3 (true),
    deals = 4 (left out when 0)."""
    return clean_report_wire(match_id.encode("utf-8"), located_bytes(location), deals)


def located_bytes(location: bytes) -> bytes:
    """A clean Report's fields between its id and its deals, encoded: location = 2 (its
    ``location_bytes``), valid = 3 (true). The same for every record of one place."""
    return delimited(b"\x12", location) + b"\x18\x01"


def clean_report_wire(match_id: bytes, located: bytes, deals: int) -> bytes:
    """``clean_report_bytes`` of a match id as UTF-8 bytes (as the compiled checker gives
    it) and the fields of its place already encoded (``located_bytes``)."""
    head = b"\x0a" + varint(len(match_id)) + match_id if match_id else b""
    return b"".join((head, located, b"\x20" + varint(deals) if deals else b""))


def damage_to_proto(damage: Damage) -> svc.Damage:
    msg = svc.Damage(code=damage.code, message=damage.message)
    _location_into(msg.location, damage.location)
    return msg


def verdict_into(msg: svc.Verdict, item: MatchReport | Damage) -> None:
    """A report or damage as the one verdict of a place in the records judged, filled into
    ``msg`` (e.g. ``response.verdicts.add()``)."""
    if isinstance(item, Damage):
        msg.damage.CopyFrom(damage_to_proto(item))
    else:
        _report_into(msg.report, item)


def report_json(report: MatchReport) -> str:
    """The line ``kingrec validate --json --all`` prints for ``report`` (no newline), byte for
    byte: both are ``kingrec.jsonl.report_line``."""
    return report_line(report)


_STORE_STATUS = {
    STORED: svc.StoreVerdict.STATUS_STORED,
    STORED_INVALID: svc.StoreVerdict.STATUS_STORED_INVALID,
    DUPLICATE: svc.StoreVerdict.STATUS_DUPLICATE,
    REJECTED: svc.StoreVerdict.STATUS_REJECTED,
}


def verdict_to_proto(verdict: RecordVerdict) -> svc.StoreVerdict:
    msg = svc.StoreVerdict(
        status=_STORE_STATUS[verdict.status], match_id=verdict.match_id, message=verdict.message
    )
    if verdict.report is not None:
        msg.report.CopyFrom(report_to_proto(verdict.report))
    return msg


def rejected_verdict(message: str) -> svc.StoreVerdict:
    """A record the service could not read as one (it never reached the store)."""
    return svc.StoreVerdict(status=svc.StoreVerdict.STATUS_REJECTED, message=message)


def stored_summary(row: dict[str, Any], players: list[tuple[Any, ...]]) -> svc.MatchSummary:
    """A row of ``Store.list_matches`` and its players (seat, id, name, seat name)."""
    return svc.MatchSummary(
        match_id=row["match_id"],
        status=pb.MatchStatus.Value(f"MATCH_STATUS_{row['status']}"),
        preset=row["preset"] or "",
        players=[
            pb.Player(seat=seat, id=pid or "", name=name or "", seat_name=seat_name or "")
            for seat, pid, name, seat_name in players
        ],
        deals=row["deals"] or 0,
        valid=bool(row["valid"]),
        totals=[row[f"total_{s}"] or 0 for s in range(4)],
        source=row["source"] or "",
        start_time=_timestamp(row["start_time"]),
    )


def _timestamp(when: dt.datetime | None) -> Timestamp | None:
    """A stored TIMESTAMP (UTC, naive as DuckDB gives it) as a protobuf Timestamp."""
    if when is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(when.replace(tzinfo=dt.UTC))
    return stamp
