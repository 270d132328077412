"""``Store``: one DuckDB file of records — open it, fill it, ask it, read records back.

Ingest streams any record file (or records handed over by a caller) in batches; each batch
is one transaction, so a store only ever holds whole batches, and running the same ingest
again completes it with nothing stored twice.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import duckdb

from .. import _twins
from ..errors import KingrecError
from ..findings import Location
from ..limits import MAX_FRAME_BYTES
from ..records import Damage, RecordFile, open_records
from ..v1 import record_pb2 as pb
from .db import connect, default_path
from .ingest import (
    DUPLICATE,
    REJECTED,
    STORED,
    STORED_INVALID,
    Batch,
    RecordVerdict,
    store_batch,
)
from .pipeline import WRITERS, IngestPipeline
from .query import QueryResult, QueryStop, run_query

__all__ = ["BATCH_MATCHES", "WRITERS", "IngestSummary", "Store"]

# Records per transaction. Bigger batches cost fewer commits and write more of a batch's rows
# straight into the file (DuckDB's row groups hold 122,880 rows; smaller appends go through
# its log, cost a wait on the disk at commit and are written twice). 6500 classic matches
# are 130,000 deals, so deals too go straight in. Measured on classic matches, DuckDB's CPU
# (and wall) per deal: 11.2 (14.6) µs at 4000, 8.8 (11.0) at 6500, 8.7 (11.1) at 8000; peak
# memory of a 30,000-match ingest 533 MiB at 4000, 693 at 6500, 764 at 8000.
BATCH_MATCHES = 6500


@dataclass
class IngestSummary:
    """What one ingest did."""

    files: int = 0
    stored: int = 0  # valid records stored
    stored_invalid: int = 0  # invalid records stored with their findings
    duplicates: int = 0  # records the store held already (skipped)
    rejected: int = 0  # records that could not be read or are over a bound
    damaged: int = 0  # damaged stretches of the files (frames, lines)
    deals: int = 0  # deals stored
    seconds: float = 0.0
    damage: list[Damage] = field(default_factory=list)  # the first 100, with their locations
    rejects: list[RecordVerdict] = field(default_factory=list)  # the first 100 rejected

    def count(self, verdict: RecordVerdict) -> None:
        if verdict.status == STORED:
            self.stored += 1
        elif verdict.status == STORED_INVALID:
            self.stored_invalid += 1
        elif verdict.status == DUPLICATE:
            self.duplicates += 1
        elif verdict.status == REJECTED:
            self.rejected += 1
            if len(self.rejects) < 100:
                self.rejects.append(verdict)

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("damage", "rejects")}
        out["seconds"] = round(self.seconds, 3)
        return out


class Store:
    """An open store; use as a context manager (``with Store.open(path) as store:``)."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection | Future[duckdb.DuckDBPyConnection],
        path: str,
        read_only: bool,
    ) -> None:
        self._con = con
        self.path = path
        self.read_only = read_only
        self._next_key: int | None = None

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The store's connection (opened in the background by ``open_beside``: waits for
        it, and raises what opening it raised)."""
        if isinstance(self._con, Future):
            self._con = self._con.result()
        return self._con

    def ready(self) -> None:
        """Return once the store is open; raise what opening it raised, if it failed."""
        self.con  # noqa: B018 - waits for the open

    @classmethod
    def open(
        cls,
        path: str | None = None,
        *,
        read_only: bool = False,
        external_access: bool = False,
        create: bool = True,
    ) -> Self:
        """Open the store at ``path`` (default ``$KINGREC_DB`` or ``kingrec.duckdb``),
        creating it when new unless ``read_only`` or ``create=False`` (a store to write that
        must be there already: ``StoreError``, nothing created). ``external_access`` lets SQL
        reach files (only ``export_parquet`` needs it)."""
        where = path or default_path()
        con = connect(where, read_only=read_only, external_access=external_access, create=create)
        return cls(con, where, read_only)

    @classmethod
    def open_beside(cls, path: str | None = None) -> Self:
        """``open(path)`` (to write, created when new) in a thread of its own while the
        caller goes on: ``kingrec ingest`` reads its first batch meanwhile (DuckDB lets go
        of the GIL while it creates the schema). The first use of ``con`` (or ``ready``)
        waits for it and raises what opening it raised (``StoreError`` and kin)."""
        where = path or default_path()
        return cls(_opening(where), where, read_only=False)

    def close(self) -> None:
        if isinstance(self._con, Future):
            if self._con.exception() is not None:
                return  # nothing was opened; whoever uses the store is told why
            self._con = self._con.result()
        self._con.close()

    def reader(self) -> Store:
        """This store on a connection of its own, for reading (close it after use):
        for reading from another thread while this one writes, seeing committed data only."""
        return Store(self.con.cursor(), self.path, read_only=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- ingest -------------------------------------------------------------------------

    def pipeline(
        self, twins: _twins.Twins | None = None, *, stop_on_failure: bool = True
    ) -> IngestPipeline:
        """A pipelined ingest into this store (``kingrec.store.pipeline``): submit batches,
        each committed in order while the next is prepared. Close it (or leave its ``with``)
        before using the store's other ingest calls."""
        return IngestPipeline(self, twins, stop_on_failure=stop_on_failure)

    def _key(self) -> int:
        if self._next_key is None:
            rows = self.con.execute(
                "SELECT coalesce(max(match_key), 0) + 1 FROM matches"
            ).fetchall()
            self._next_key = int(rows[0][0])
        return self._next_key

    def _store(self, batch: Batch, twins: _twins.Twins | None) -> list[RecordVerdict]:
        verdicts = store_batch(self.con, batch, self._key(), twins=twins)
        stored = sum(1 for v in verdicts if v.status in (STORED, STORED_INVALID))
        self._next_key = self._key() + stored
        return verdicts

    def ingest_payloads(
        self,
        payloads: Sequence[bytes],
        *,
        source: str,
        locations: Sequence[Location] | None = None,
        twins: _twins.Twins | None = None,
    ) -> list[RecordVerdict]:
        """Store serialized matches in one transaction; a verdict per record, in order,
        once committed."""
        batch = Batch(source, list(payloads))
        batch.locations = list(locations) if locations else [Location(source)] * len(payloads)
        return self._store(batch, twins)

    def ingest_matches(
        self, matches: Sequence[pb.Match], *, source: str, twins: _twins.Twins | None = None
    ) -> list[RecordVerdict]:
        """Store matches in one transaction (serialized deterministically)."""
        payloads = [m.SerializeToString(deterministic=True) for m in matches]
        return self.ingest_payloads(payloads, source=source, twins=twins)

    def ingest_file(
        self,
        path: str,
        *,
        progress: Callable[[int], object] | None = None,
        summary: IngestSummary | None = None,
        twins: _twins.Twins | None = None,
        batch_matches: int = BATCH_MATCHES,
    ) -> IngestSummary:
        """Store every record of a file (``-``: standard input), batch by batch.

        ``progress(bytes_read)`` is called after each batch. Raises ``RecordFileError``
        when the file cannot be read as records at all (nothing stored).
        """
        summary = summary or IngestSummary()
        began = time.perf_counter()
        # A batch is prepared (judged, built) while the ones before it are written (see
        # kingrec.store.pipeline); the first failed write stops the ingest.
        with _collector_paused(), open_records(path) as records:
            batches = _batches(records, batch_matches)
            # The first batch is read before the pipeline is made, which waits for the
            # store: a store opened beside (``open_beside``) is created meanwhile.
            # (In a list, which ``_fill`` empties: nothing here holds on to its records.)
            first = [next(batches, None)]
            with IngestPipeline(self, twins) as pipeline:
                summary.files += 1
                self._fill(pipeline, records, first, batches, summary, progress)
        summary.seconds += time.perf_counter() - began
        return summary

    @staticmethod
    def _fill(
        pipeline: IngestPipeline,
        records: RecordFile,
        first: list[Batch | None],
        batches: Iterator[Batch],
        summary: IngestSummary,
        progress: Callable[[int], object] | None,
    ) -> None:
        """Submit the batch in ``first`` (taken out) and the batches after it, counting
        what became of each."""
        batch = first.pop()
        while batch is not None:
            for damage in batch.damage:
                summary.damaged += 1
                if len(summary.damage) < 100:
                    summary.damage.append(damage)
            prepared, _ = pipeline.submit(batch)
            # Its records' bytes are in the columns now: free them before the next
            # batch is read, not after (a classic batch's are ~30 MB).
            del batch
            summary.deals += prepared.deals
            for verdict in prepared.verdicts:
                summary.count(verdict)
            if progress is not None:
                progress(records.bytes_read)
            batch = next(batches, None)

    def count(self, table: str) -> int:
        rows = self.con.execute(f"SELECT count(*) FROM {table}").fetchall()
        return int(rows[0][0])

    # -- reading ------------------------------------------------------------------------

    def query(
        self,
        sql: str,
        *,
        max_rows: int = 100_000,
        max_bytes: int = 64 << 20,
        timeout_s: float = 30.0,
        max_row_bytes: int | None = None,
        stop: QueryStop | None = None,
        timeout_error: KingrecError | None = None,
    ) -> QueryResult:
        """Run one read-only SQL statement; see ``kingrec.store.query``."""
        return run_query(
            self.con,
            sql,
            max_rows=max_rows,
            max_bytes=max_bytes,
            timeout_s=timeout_s,
            max_row_bytes=max_row_bytes,
            stop=stop,
            timeout_error=timeout_error,
        )

    def get_match(self, match_id: str) -> bytes | None:
        """The record stored under ``match_id`` (the first stored, when the id was reused)."""
        keys = self.con.execute(
            "SELECT min(match_key) FROM matches WHERE match_id = ?", [match_id]
        ).fetchall()
        if keys[0][0] is None:
            return None
        # The key as a constant, so the records view reads that match's pieces only.
        rows = self.con.execute(
            "SELECT record FROM records WHERE match_key = ?", [keys[0][0]]
        ).fetchall()
        return bytes(rows[0][0]) if rows else None

    def list_matches(
        self,
        *,
        player: str | None = None,
        preset: str | None = None,
        status: str | None = None,
        valid: bool | None = None,
        limit: int = 100,
        after: str | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Matches in store order, filtered; a page of at most ``limit`` and the token of the
        next page (None when this is the last)."""
        where = ["m.match_key > ?"]
        params: list[object] = [int(after) if after and after.isdigit() else 0]
        if player is not None:
            where.append(
                "m.match_key IN (SELECT match_key FROM players WHERE player_id = ? OR name = ?)"
            )
            params += [player, player]
        if preset is not None:
            where.append("m.preset = ?")
            params.append(preset)
        if status is not None:
            where.append("CAST(m.status AS VARCHAR) = ?")
            params.append(status.upper())
        if valid is not None:
            where.append("m.valid = ?")
            params.append(valid)
        limit = max(1, min(limit, 1000))
        rows = self.con.execute(
            "SELECT m.match_key, m.match_id, m.preset, CAST(m.status AS VARCHAR), m.valid, "
            "m.deals, m.total_0, m.total_1, m.total_2, m.total_3, m.source, m.ingested_at, "
            "m.start_time "
            f"FROM matches m WHERE {' AND '.join(where)} ORDER BY m.match_key LIMIT ?",
            [*params, limit + 1],
        ).fetchall()
        names = ("match_key", "match_id", "preset", "status", "valid", "deals", "total_0",
                 "total_1", "total_2", "total_3", "source", "ingested_at",
                 "start_time")  # fmt: skip
        page = [dict(zip(names, row, strict=True)) for row in rows[:limit]]
        token = str(page[-1]["match_key"]) if len(rows) > limit else None
        return page, token

    def players(self, match_keys: Sequence[int]) -> dict[int, list[tuple[int, str, str, str]]]:
        """The players of matches (by ``match_key``): (seat, player_id, name, seat_name)."""
        out: dict[int, list[tuple[int, str, str, str]]] = {key: [] for key in match_keys}
        if not match_keys:
            return out
        rows = self.con.execute(
            "SELECT match_key, seat, player_id, name, seat_name FROM players "
            "WHERE match_key IN (SELECT unnest(?)) ORDER BY match_key, seat",
            [list(match_keys)],
        ).fetchall()
        for key, *player in rows:
            out[key].append((player[0], player[1], player[2], player[3]))
        return out


def _opening(path: str) -> Future[duckdb.DuckDBPyConnection]:
    """``connect(path)`` made in a thread of its own (a daemon: an interrupted command does
    not wait for it): the connection, or what making it raised, once made."""
    opened: Future[duckdb.DuckDBPyConnection] = Future()

    def make() -> None:
        try:
            opened.set_result(connect(path))
        except BaseException as exc:  # raised again where the connection is wanted
            opened.set_exception(exc)

    threading.Thread(target=make, name="kingrec-store-open", daemon=True).start()
    return opened


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused, then as it was: an ingest makes millions
    of short-lived objects and next to no cycles, and each collection walks every live
    object of the process (estimated at ~0.1 µs a deal; not measured on its own)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _batches(records: RecordFile, size: int) -> Iterator[Batch]:
    """The records of a file in batches of ``size``, with the damage met between them."""
    batch = Batch(records.name)
    for payload, location, damage in _payloads(records):
        if damage is not None:
            batch.damage.append(damage)
            continue
        batch.payloads.append(payload)
        batch.locations.append(location)
        if len(batch.payloads) >= size:
            yield batch
            batch = Batch(records.name)
    if batch.payloads or batch.damage:
        yield batch


def _payloads(records: RecordFile) -> Iterable[tuple[bytes, Location, Damage | None]]:
    if records.format == "krec":
        for run in records.raw_frame_runs():
            if isinstance(run, Damage):
                yield b"", run.location, run
                continue
            for i, payload in enumerate(run.payloads):
                yield payload, Location(records.name, run.first + i, run.offsets[i]), None
        return
    for item in records:
        if isinstance(item, Damage):
            yield b"", item.location, item
            continue
        payload = item.match.SerializeToString(deterministic=True)
        if len(payload) > MAX_FRAME_BYTES:
            yield b"", item.location, Damage(item.location, "LIMIT_EXCEEDED", "record too large")
            continue
        yield payload, item.location, None
