"""``kingrec upload``: store record files on a kingrec server, a verdict per record."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import click
from rich.text import Text

from kingrec.findings import Location
from kingrec.limits import MAX_FRAME_BYTES
from kingrec.paths import NotRecords, PathProblem, record_paths
from kingrec.records import Damage, RecordFile, open_records
from kingrec.v1 import service_pb2 as svc

from .client import connected, rpc_errors, token_metadata
from .errors import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_UNREADABLE,
    Failed,
    user_errors,
)
from .helptext import Command, epilog
from .places import damage_sentence, place
from .server_options import server_options
from .terminal import Terminal, shown

MESSAGE_BYTES = 3 << 20  # records per request, by size: under the server's 4 MiB limit


@dataclass
class _Sent:
    """Where the records of each request came from, to name them in the verdicts."""

    locations: list[list[Location]] = field(default_factory=list)
    damaged: int = 0
    unreadable: int = 0  # files that could not be read (told as they came)
    skipped: int = 0  # files of a directory that hold no records


def _records(
    records: RecordFile, terminal: Terminal, sent: _Sent
) -> Iterator[tuple[bytes, Location]]:
    """The serialized matches of a file, as ``kingrec ingest`` would store them: a .krec
    frame's bytes as they are, a JSON record serialized deterministically. Damage is told
    and skipped."""
    if records.format == "krec":
        for run in records.raw_frame_runs():
            if isinstance(run, Damage):
                sent.damaged += 1
                message = damage_sentence(run.location, run.message)
                terminal.error(f"{place(run.location)}: {run.code}: {message} (skipped)")
                continue
            for i, payload in enumerate(run.payloads):
                yield payload, Location(records.name, run.first + i, run.offsets[i])
        return
    for item in records:
        if isinstance(item, Damage):
            sent.damaged += 1
            message = damage_sentence(item.location, item.message)
            terminal.error(f"{place(item.location)}: {item.code}: {message} (skipped)")
            continue
        payload = item.match.SerializeToString(deterministic=True)
        if len(payload) > MAX_FRAME_BYTES:
            sent.damaged += 1
            terminal.error(f"{place(item.location)}: LIMIT_EXCEEDED: record too large (skipped)")
            continue
        yield payload, item.location


def _requests(
    files: tuple[str, ...], batch: int, terminal: Terminal, sent: _Sent
) -> Iterator[svc.UploadRequest]:
    """The requests of every record file ``files`` mean, as ``kingrec ingest`` reads them:
    a file that cannot be read (missing, a directory without records, not records at all)
    is told as ingest tells it, and the upload goes on with the next. Nothing may escape
    this generator: gRPC would cancel the whole call ("Exception iterating requests")."""
    for path in record_paths(files):
        if isinstance(path, PathProblem):
            sent.unreadable += 1
            terminal.error(path.message)
            continue
        if isinstance(path, NotRecords):
            sent.skipped += 1
            terminal.note(path.message)
            continue
        try:
            with user_errors(), _open(path) as records:
                yield from _file_requests(records, batch, terminal, sent)
        except Failed as exc:  # what it sent before the failure is uploaded and answered
            sent.unreadable += 1
            terminal.error(exc.format_message())


@contextmanager
def _open(path: str) -> Iterator[RecordFile]:
    """``open_records``, but standard input through a descriptor of its own: gRPC reads the
    requests in a thread of its own, which may still be reading when the call has failed
    and the interpreter exits; exiting then needs sys.stdin's lock, and Python aborted
    ("could not acquire lock for <stdin> at interpreter shutdown", exit 134)."""
    if path != "-":
        with open_records(path) as records:
            yield records
        return
    with os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0) as raw:
        yield RecordFile("<stdin>", raw, None)


def _file_requests(
    records: RecordFile, batch: int, terminal: Terminal, sent: _Sent
) -> Iterator[svc.UploadRequest]:
    where: list[Location] = []
    request, size = svc.UploadRequest(source=records.name), 0
    for payload, location in _records(records, terminal, sent):
        if request.records and (
            len(request.records) >= batch or size + len(payload) > MESSAGE_BYTES
        ):
            sent.locations.append(where)
            yield request
            request, where, size = svc.UploadRequest(source=records.name), [], 0
        request.records.add(krec=payload)
        where.append(location)
        size += len(payload) + 8
    if request.records:
        sent.locations.append(where)
        yield request


@click.command(
    cls=Command,
    epilog=epilog(
        [
            ("kingrec upload games/*.krec --token s3cret", "store every record of the files"),
            (
                "kingrec upload big.jsonl -q --server host:50051",
                "only the problems and the summary",
            ),
        ],
        (
            (EXIT_OK, "every record stored (or stored already)"),
            (EXIT_INVALID, "some record invalid (stored, with its findings)"),
            (
                EXIT_UNREADABLE,
                "some record unreadable or rejected, the server unreachable or "
                "refusing, or bad usage",
            ),
            EXIT_INTERNAL,
            EXIT_INTERRUPTED,
            EXIT_CLOSED_PIPE,
        ),
    ),
)
@click.argument("files", nargs=-1, required=True, type=click.Path(allow_dash=True))
@click.option(
    "--batch",
    type=click.IntRange(1, 10_000),
    default=1000,
    show_default=True,
    metavar="N",
    help="Records per message (messages also stay under 3 MiB).",
)
@click.option("--quiet", "-q", is_flag=True, help="Print only the summary and the problems.")
@server_options(token=True)
def upload(
    files: tuple[str, ...],
    batch: int,
    quiet: bool,
    server: str,
    tls_ca: str | None,
    token: str | None,
) -> None:
    """Store the records of FILE... (.krec or JSON Lines; - for standard input) on a server.

    A directory stands for the record files in it and below it, as for `kingrec ingest`;
    a file that cannot be read is reported and the others are still uploaded. Each record
    gets a verdict once the server has committed it: stored, stored invalid (with its
    findings), duplicate (stored already: uploading again never stores twice) or rejected.
    An upload that was cut off can simply be run again. Exit status 1 when some record is
    invalid, 2 when some could not be read or stored.
    """
    terminal = Terminal()
    sent = _Sent()
    summary = svc.UploadSummary()
    with connected(server, tls_ca) as stub, rpc_errors(server):
        responses = stub.Upload(
            _requests(files, batch, terminal, sent), metadata=token_metadata(token)
        )
        for n, response in enumerate(responses):
            if response.HasField("summary"):
                summary = response.summary
                continue
            for location, verdict in zip(sent.locations[n], response.verdicts, strict=True):
                _tell(terminal, location, verdict, quiet)
    damaged = f"; {sent.damaged} damaged, skipped" if sent.damaged else ""
    unreadable = f"; {sent.unreadable} unreadable file(s)" if sent.unreadable else ""
    skipped = f"; {sent.skipped} file(s) skipped (not records)" if sent.skipped else ""
    terminal.tell(
        f"uploaded {summary.records} record(s) to {server}: {summary.stored} stored, "
        f"{summary.stored_invalid} stored invalid, {summary.duplicates} duplicate(s), "
        f"{summary.rejected} rejected{damaged}{unreadable}{skipped}"
    )
    terminal.flush()
    if summary.rejected or sent.damaged or sent.unreadable:
        raise SystemExit(EXIT_UNREADABLE)
    if summary.stored_invalid:
        raise SystemExit(EXIT_INVALID)


_WORDS = {
    svc.StoreVerdict.STATUS_STORED: "stored",
    svc.StoreVerdict.STATUS_STORED_INVALID: "stored invalid",
    svc.StoreVerdict.STATUS_DUPLICATE: "duplicate",
    svc.StoreVerdict.STATUS_REJECTED: "rejected",
}


def _tell(terminal: Terminal, location: Location, verdict: svc.StoreVerdict, quiet: bool) -> None:
    if verdict.status == svc.StoreVerdict.STATUS_REJECTED:
        terminal.error(f"{place(location)}: rejected: {damage_sentence(location, verdict.message)}")
        return
    if quiet and verdict.status != svc.StoreVerdict.STATUS_STORED_INVALID:
        return
    line = f"{place(location)}: {verdict.match_id or '-'}: {_WORDS.get(verdict.status, '?')}"
    errors = [f.code for f in verdict.report.findings if f.severity == svc.SEVERITY_ERROR]
    if errors:
        line += f" ({', '.join(errors[:5])}{', …' if len(errors) > 5 else ''})"
    terminal.report(Text(shown(line)))
