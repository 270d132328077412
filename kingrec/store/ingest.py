"""Storing records: judged on the way in, built into rows in bulk, committed in batches.

A batch of records is judged by the same judge as ``kingrec validate`` (the compiled checker,
the reference for the rest), keyed by the sha256 of its bytes (a record already stored is
skipped and counted, so a rerun completes a job and stores nothing twice), built into the
rows of every table by a column builder (compiled, or its pure-Python twin), and written in
ONE transaction: a crash or ``kill -9`` leaves whole batches only. Invalid records are
stored with their findings; records that cannot be read or are over a bound are rejected.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from .. import _twins
from ..boundary import ruleset_from_proto
from ..contracts import Contract
from ..fastcheck import _core_params, checker_of, judge_payload
from ..findings import Finding, Location, MatchReport, Severity
from ..records import Damage
from ..v1 import record_pb2 as pb
from .columns import INSERTS, arrow_tables, in_row_groups
from .rows import ColumnBuilder as PythonColumnBuilder

__all__ = [
    "WRITES",
    "Batch",
    "Prepared",
    "RecordVerdict",
    "new_builder",
    "prepare_batch",
    "ruleset_options",
    "store_batch",
    "write_prepared",
]

STORED, STORED_INVALID, DUPLICATE, REJECTED = "stored", "stored_invalid", "duplicate", "rejected"


@dataclass(frozen=True)
class RecordVerdict:
    """What became of one record: stored, stored_invalid, duplicate or rejected."""

    status: str
    match_id: str
    location: Location
    report: MatchReport | None  # its findings (None for a duplicate or unreadable record)
    message: str


@dataclass
class Batch:
    """Records to store in one transaction, and damage met on the way."""

    source: str
    payloads: list[bytes] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)
    damage: list[Damage] = field(default_factory=list)


def _key(payload: bytes) -> bytes:
    return hashlib.sha256(payload).digest()[:16]


def new_builder(twins: _twins.Twins | None = None) -> Any:
    """A column builder of the twin's (``prepare_batch`` takes one to fill batch after
    batch: its buffers are then sized once, not grown again for every batch)."""
    return (twins or _twins.ACTIVE).columns.ColumnBuilder(_core_params)


# Records per call into the compiled checker, which holds the GIL while it checks: between
# calls the threads that wait for it (the builder's, the writers' between two statements)
# get it within ~1 ms, not after a whole batch (~60 ms for 6,500 classic matches).
CHECK_CHUNK = 256


def _judge(batch: Batch, twins: _twins.Twins) -> list[MatchReport | Damage | None]:
    """Each record's report; None for one the compiled checker vouches for (no findings)."""
    checker = checker_of(twins)
    payloads = batch.payloads
    dirty: Sequence[int] = range(len(payloads))
    if checker is not None:
        dirty = []
        for start in range(0, len(payloads), CHECK_CHUNK):
            # Unkeyed: the store's identity of a record is its sha256 (``_key``), taken once.
            found = checker.check_run(payloads[start : start + CHECK_CHUNK], False)[2]
            dirty += [start + i for i in found]
    reports: list[MatchReport | Damage | None] = [None] * len(batch.payloads)
    for i in dirty:
        reports[i] = judge_payload(batch.payloads[i], batch.locations[i], twins.engine)
    return reports


@dataclass
class Prepared:
    """A batch judged and built, ready to write: its verdicts and its Arrow tables (let go
    of by ``release`` once written: a batch's tables are ~120 MB for 6,500 classic matches)."""

    verdicts: list[RecordVerdict]
    tables: dict[str, pa.Table]  # batch_<name> -> rows
    stored: int  # records it stores
    hashes: dict[bytes, str] = field(default_factory=dict)  # stored content -> match id
    deals: int = 0  # deals it stores
    builder_wait: float = 0.0  # wall seconds the judged batch waited for its build

    def release(self) -> None:
        """Let go of the tables (after the write, committed or not): their memory is then
        free for the batches behind, not held until whoever waits on the write looks."""
        self.tables = {}


def store_batch(
    con: duckdb.DuckDBPyConnection,
    batch: Batch,
    next_key: int,
    *,
    twins: _twins.Twins | None = None,
) -> list[RecordVerdict]:
    """Judge, build and store one batch in one transaction; a verdict per record in order.

    ``next_key`` is the first free ``match_key``. Returns when the transaction is committed.
    """
    prepared = prepare_batch(con, batch, next_key, twins=twins)
    write_prepared(con, prepared)
    return prepared.verdicts


def prepare_batch(
    con: duckdb.DuckDBPyConnection,
    batch: Batch,
    next_key: int,
    *,
    twins: _twins.Twins | None = None,
    pending: Sequence[Prepared] = (),
    builder: Any = None,
    helper: Executor | None = None,
    parts: Sequence[Any] = (),
    all_new: bool = False,
) -> Prepared:
    """Judge a batch and build its rows (nothing written). ``pending`` are batches prepared
    before and not yet committed: their records count as stored for duplicates and ids.
    ``builder`` (from ``new_builder``, same twins) is filled; a new one by default.

    With a ``helper`` (an executor) and a compiled builder, the records not stored yet are
    built there, off the GIL, while this thread judges them: on the bet that the judge
    rejects none of them, which it seldom does (if it does, the batch is built again without
    them, here, and the columns built there are dropped). With ``parts`` (builders of the
    same twins, as many as the helper has threads) they are built in as many shares at once,
    each a run of records on a builder of its own (the build takes longer than the judge:
    on two cores the second share runs beside it, not after it); else on ``builder``.

    With ``all_new`` the bet is bigger: that every record is new too (none stored, in flight
    or repeated: a file's first ingest), so the build starts before the records are keyed
    (sha256) and looked up, and the keying runs beside it, not before it."""
    twins = twins or _twins.ACTIVE
    builder = builder or new_builder(twins)
    building: list[Future[_Built]] = []
    builds = helper is not None and twins.columns.BUILDS_WITHOUT_GIL

    def build(guess: list[int]) -> None:
        assert helper is not None
        keys = _keys(guess, next_key)
        for share, part in zip(_shares(guess, len(parts) or 1), parts or [builder], strict=False):
            building.append(helper.submit(_columns, batch, share, keys, part))

    try:
        if builds and all_new:
            build(list(range(len(batch.payloads))))
        hashes = [_key(p) for p in batch.payloads]
        stored_before = _existing(con, "content_hash", hashes)
        in_flight = {h: match_id for before in pending for h, match_id in before.hashes.items()}
        if builds and not all_new:
            build(_unstored(hashes, stored_before, in_flight))
        return _prepare(
            con, batch, next_key, twins, builder, hashes, stored_before, in_flight, building
        )
    finally:
        wait(building)  # a builder is free again only once its build is over


def _shares(records: list[int], n: int) -> list[list[int]]:
    """``records`` in at most ``n`` runs of (nearly) equal length, in order, none empty."""
    size = -(-len(records) // n)
    return [records[i : i + size] for i in range(0, len(records), size)] if records else []


def _unstored(hashes: list[bytes], stored: set[Any], in_flight: dict[bytes, str]) -> list[int]:
    """The records to store if the judge rejects none: the first of each content not stored
    or in flight (``_prepare``'s choice when no record is rejected)."""
    seen: set[bytes] = set()
    out = []
    for i, h in enumerate(hashes):
        if h not in stored and h not in in_flight and h not in seen:
            seen.add(h)
            out.append(i)
    return out


def _keys(keep: list[int], next_key: int) -> dict[int, int]:
    return {i: next_key + n for n, i in enumerate(keep)}


def _prepare(
    con: duckdb.DuckDBPyConnection,
    batch: Batch,
    next_key: int,
    twins: _twins.Twins,
    builder: Any,
    hashes: list[bytes],
    stored_before: set[Any],
    in_flight: dict[bytes, str],
    building: list[Future[_Built]],
) -> Prepared:
    reports = _judge(batch, twins)
    verdicts: list[RecordVerdict | None] = [None] * len(batch.payloads)
    damage = list(batch.damage)
    rejected: set[int] = set()
    for i in [i for i, report in enumerate(reports) if report is not None]:
        report = reports[i]
        location = batch.locations[i]
        if isinstance(report, Damage):
            damage.append(report)
            verdicts[i] = RecordVerdict(REJECTED, "", location, None, report.message)
            rejected.add(i)
        elif report is not None and any(f.code == "LIMIT_EXCEEDED" for f in report.findings):
            message = report.findings[0].message
            damage.append(Damage(location, "LIMIT_EXCEEDED", message))
            verdicts[i] = RecordVerdict(REJECTED, report.match_id, location, report, message)
            rejected.add(i)
    keep, duplicates = _kept(hashes, rejected, stored_before, in_flight)
    keys = _keys(keep, next_key)
    waited = time.perf_counter()
    if building and keep == _building_keep(building):
        built = _joined([share.result() for share in building])
    else:  # none in flight, or built of other records: dropped (with its failure, if any)
        built = _columns(batch, keep, keys, builder)
    waited = time.perf_counter() - waited if building else 0.0
    tables, rulesets = _with_twin(batch, keys, built)
    id_of = dict(
        zip(
            tables["matches"].column("match_key").to_pylist(),
            tables["matches"].column("match_id").to_pylist(),
            strict=True,
        )
    )
    ids = [id_of[keys[i]] for i in keep]  # the match id of each record kept, in order
    reused = _existing(con, "match_id", ids) | set(in_flight.values())
    stored = dict(zip([hashes[i] for i in keep], ids, strict=True))
    # A reused id is one stored before or in flight, or met twice here (the contents kept
    # are distinct): none, most often, and then no record is looked at for it.
    flagged = _reused_ids(ids, reused)
    for n, (i, match_id) in enumerate(zip(keep, ids, strict=True)):
        report = reports[i]
        if report is None:  # the checker vouches for it: no findings
            report = reports[i] = MatchReport(match_id, batch.locations[i])
        assert isinstance(report, MatchReport)  # a Damage was rejected above
        if flagged and flagged.get(match_id, n) != n:
            report.findings.append(
                Finding(
                    "MATCH_ID_REUSED",
                    Severity.WARNING,
                    f"Another record with other content was stored before under the match "
                    f"id {match_id!r}; both are kept.",
                )
            )
        status = STORED if not report.findings or report.valid else STORED_INVALID
        verdicts[i] = RecordVerdict(status, match_id, batch.locations[i], report, status)
    if duplicates:
        earlier = [hashes[i] for i in duplicates if hashes[i] in stored_before]
        ids_of = {**_stored_ids(con, earlier), **in_flight, **stored}
        for i in duplicates:
            message = "the same record is stored already"
            verdicts[i] = RecordVerdict(
                DUPLICATE, ids_of.get(hashes[i], ""), batch.locations[i], None, message
            )
    batches = _batch_tables(batch, keep, keys, hashes, reports, tables, rulesets, damage)
    done = [v for v in verdicts if v is not None]
    return Prepared(done, batches, len(keep), stored, batches["batch_deals"].num_rows, waited)


def _kept(
    hashes: list[bytes], rejected: set[int], stored: set[Any], in_flight: dict[bytes, str]
) -> tuple[list[int], list[int]]:
    """The records to store (the first not rejected of each content neither stored nor in
    flight) and the duplicates (the others not rejected), each in order."""
    fresh = set(hashes)
    if len(fresh) == len(hashes) and fresh.isdisjoint(stored) and fresh.isdisjoint(in_flight):
        # every content new (a file's first ingest): no record looked up one by one
        return [i for i in range(len(hashes)) if i not in rejected], []
    keep: list[int] = []
    duplicates: list[int] = []
    seen: set[bytes] = set()
    for i, h in enumerate(hashes):
        if i in rejected:
            continue
        if h in stored or h in in_flight or h in seen:
            duplicates.append(i)  # its verdict later, with the id it is stored under
        else:
            seen.add(h)
            keep.append(i)
    return keep, duplicates


def _reused_ids(ids: list[str], reused: set[Any]) -> dict[str, int] | None:
    """For the match ids of the records kept (in order, of distinct contents): each id
    that is reused, with the position of its record that keeps it unflagged (-1: none, it
    was stored or is in flight before); None when no id is reused."""
    if len(set(ids)) == len(ids) and reused.isdisjoint(ids):
        return None
    first: dict[str, int] = {}
    for n, match_id in enumerate(ids):
        first.setdefault(match_id, -1 if match_id in reused else n)
    counts = Counter(ids)
    return {m: n for m, n in first.items() if n == -1 or counts[m] > 1}


def _existing(con: duckdb.DuckDBPyConnection, column: str, values: Sequence[object]) -> set[Any]:
    if not values:
        return set()
    kind = pa.binary() if column == "content_hash" else pa.string()
    con.register("batch_lookup", pa.table({"v": pa.array(values, kind)}))
    try:
        rows = con.execute(
            f"SELECT DISTINCT {column} FROM matches WHERE {column} IN (SELECT v FROM batch_lookup)"
        ).fetchall()
    finally:
        con.unregister("batch_lookup")
    return {row[0] for row in rows}


def _stored_ids(con: duckdb.DuckDBPyConnection, hashes: Sequence[bytes]) -> dict[bytes, str]:
    """The match id each stored record of ``hashes`` is stored under."""
    if not hashes:
        return {}
    con.register("batch_lookup", pa.table({"v": pa.array(hashes, pa.binary())}))
    try:
        rows = con.execute(
            "SELECT content_hash, any_value(match_id) FROM matches "
            "WHERE content_hash IN (SELECT v FROM batch_lookup) GROUP BY content_hash"
        ).fetchall()
    finally:
        con.unregister("batch_lookup")
    return {row[0]: row[1] or "" for row in rows}


@dataclass
class _Built:
    """The columns a twin's builder made of a batch's records, as Arrow tables."""

    keep: list[int]  # the records built, in order
    tables: dict[str, pa.Table]
    rulesets: list[bytes]
    later: list[int]  # records the compiled reader left to its twin (not in the tables)


def _building_keep(building: list[Future[_Built]]) -> list[int] | None:
    """The records the builds in flight are building (waits for them); None if one failed."""
    wait(building)
    if any(share.exception() is not None for share in building):
        return None
    return [i for share in building for i in share.result().keep]


def _joined(shares: list[_Built]) -> _Built:
    """The shares of a batch built apart, as one build: each table the shares' tables one
    after the other (chunks, uncopied), the rulesets of each after those before (its
    matches' ``ruleset`` indices shifted past them)."""
    if len(shares) == 1:
        return shares[0]
    pieces: dict[str, list[pa.Table]] = {name: [] for name in shares[0].tables}
    rulesets: list[bytes] = []
    for share in shares:
        tables = dict(share.tables)
        tables["matches"] = _rulesets_shifted(tables["matches"], len(rulesets))
        for name, table in tables.items():
            pieces[name].append(table)
        rulesets += share.rulesets
    return _Built(
        [i for share in shares for i in share.keep],
        {name: pa.concat_tables(tables) for name, tables in pieces.items()},
        rulesets,
        [i for share in shares for i in share.later],
    )


def _rulesets_shifted(matches: pa.Table, shift: int) -> pa.Table:
    """``matches`` with its ``ruleset`` indices ``shift`` further on."""
    if not shift:
        return matches
    moved = pa.compute.add(matches.column("ruleset"), pa.scalar(shift, pa.uint32()))
    return matches.set_column(matches.schema.get_field_index("ruleset"), "ruleset", moved)


def _columns(batch: Batch, keep: list[int], keys: dict[int, int], builder: Any) -> _Built:
    """The records to keep, through the builder: all in one call, which lets go of the GIL
    when compiled, and into Arrow tables (no copy of the columns)."""
    left = builder.add_many([batch.payloads[i] for i in keep], [keys[i] for i in keep])
    tables = arrow_tables(builder.take())
    return _Built(keep, tables, builder.take_rulesets(), [keep[j] for j in left])


def _build(
    batch: Batch, keep: list[int], keys: dict[int, int], builder: Any
) -> tuple[dict[str, pa.Table], list[bytes]]:
    """The rows of the records to keep, built by a twin's column builder."""
    return _with_twin(batch, keys, _columns(batch, keep, keys, builder))


def _with_twin(
    batch: Batch, keys: dict[int, int], built: _Built
) -> tuple[dict[str, pa.Table], list[bytes]]:
    """The built tables with the rows of the records left to the pure-Python twin after
    them (wire bytes the compiled reader does not fully understand)."""
    tables, rulesets, later = built.tables, built.rulesets, built.later
    if later:
        fallback = PythonColumnBuilder(_core_params)
        for i in later:
            fallback.add(batch.payloads[i], keys[i])
        more = arrow_tables(fallback.take())
        more["matches"] = _rulesets_shifted(more["matches"], len(rulesets))
        rulesets += fallback.take_rulesets()
        tables = {name: pa.concat_tables([tables[name], more[name]]) for name in tables}
    return tables, rulesets


_OPTIONS: dict[str, pa.DataType] = {
    "idx": pa.uint32(), "preset": pa.string(), "ruleset_valid": pa.bool_(),
    "schedule": pa.string(), "deal_count": pa.uint16(), "koz_quota": pa.uint32(),
    "penalty_quota": pa.uint32(), "max_per_penalty": pa.uint32(),
    "penalty_only_deals": pa.uint32(), "fixed_order": pa.list_(pa.string()),
    "first_declarer": pa.string(), "first_declarer_card": pa.uint8(), "dealer": pa.string(),
    "must_ruff": pa.bool_(), "must_overtrump": pa.bool_(),
    "must_raise_on_trump_lead": pa.bool_(), "trump_lead_needs_break": pa.bool_(),
    "heart_lead_ban": pa.list_(pa.string()), "withholding": pa.list_(pa.string()),
    "void_discard": pa.list_(pa.string()), "rifki_heart_after_king": pa.bool_(),
    "early_end": pa.list_(pa.string()), "revoke": pa.string(), "play_timeout_ms": pa.uint32(),
    "trump_timeout_ms": pa.uint32(), "unit_scores": pa.list_(pa.int32()),
}  # fmt: skip


def ruleset_options(raw: bytes) -> dict[str, Any]:
    """The option columns of ``matches`` for a record's raw ruleset (NULLs if unusable)."""
    row: dict[str, Any] = dict.fromkeys(_OPTIONS)
    try:
        msg = pb.Ruleset.FromString(raw)
    except Exception:  # the checker and builder read it; a stray decoding failure is no row
        return {**row, "ruleset_valid": False}
    row["preset"] = msg.preset
    try:
        rules = ruleset_from_proto(msg)
    except Exception:
        return {**row, "ruleset_valid": False}
    row.update(
        ruleset_valid=True,
        schedule=rules.schedule.name,
        deal_count=rules.deal_count,
        koz_quota=rules.koz_quota,
        penalty_quota=rules.penalty_quota,
        max_per_penalty=rules.max_per_penalty,
        penalty_only_deals=rules.penalty_only_deals,
        fixed_order=[c.name for c in rules.fixed_order],
        first_declarer=rules.first_declarer.name,
        first_declarer_card=rules.first_declarer_card,
        dealer=rules.dealer.name,
        must_ruff=rules.must_ruff,
        must_overtrump=rules.must_overtrump,
        must_raise_on_trump_lead=rules.must_raise_on_trump_lead,
        trump_lead_needs_break=rules.trump_lead_needs_break,
        heart_lead_ban=_names(rules.heart_lead_ban),
        withholding=_names(rules.withholding),
        void_discard=_names(rules.void_discard),
        rifki_heart_after_king=rules.rifki_heart_after_king,
        early_end=_names(rules.early_end),
        revoke=rules.revoke.name,
        play_timeout_ms=rules.play_timeout_ms,
        trump_timeout_ms=rules.trump_timeout_ms,
        unit_scores=[rules.scores[c] for c in Contract],
    )
    return row


def _names(contracts: frozenset[Contract]) -> list[str]:
    return sorted(c.name for c in contracts)


def _rulesets_table(rulesets: list[bytes]) -> pa.Table:
    rows = [{**ruleset_options(raw), "idx": i} for i, raw in enumerate(rulesets)]
    return pa.table(
        {name: pa.array([r[name] for r in rows], kind) for name, kind in _OPTIONS.items()}
    )


_MATCHES = """INSERT INTO matches SELECT m.match_key, m.match_id, x.content_hash, x.id_reused,
    x.valid, x.errors, x.warnings, x.source, x.source_frame, x.source_offset, x.source_line,
    x.ingested_at, m.format_version, m.status, m.status_reason, m.event, m.site,
    CASE WHEN m.start_time > -9223372036854775808 THEN make_timestamp(m.start_time * 1000000) END,
    m.client_name, m.client_version, r.preset, r.ruleset_valid,
    r.schedule, r.deal_count, r.koz_quota, r.penalty_quota, r.max_per_penalty,
    r.penalty_only_deals, r.fixed_order, r.first_declarer, r.first_declarer_card, r.dealer,
    r.must_ruff, r.must_overtrump, r.must_raise_on_trump_lead, r.trump_lead_needs_break,
    r.heart_lead_ban, r.withholding, r.void_discard, r.rifki_heart_after_king, r.early_end,
    r.revoke, r.play_timeout_ms, r.trump_timeout_ms, r.unit_scores, m.deals,
    m.total_0, m.total_1, m.total_2, m.total_3,
    list_filter([0, 1, 2, 3], lambda s: [m.total_0, m.total_1, m.total_2, m.total_3][s + 1]
        = greatest(m.total_0, m.total_1, m.total_2, m.total_3))
    FROM batch_matches m JOIN batch_extra x USING (match_key)
    JOIN batch_rulesets r ON r.idx = m.ruleset"""


# The statements of a batch's transaction, by the table each fills, in order.
WRITES = {
    "matches": _MATCHES,
    **INSERTS,
    "findings": "INSERT INTO findings SELECT * FROM batch_findings",
    "damage": "INSERT INTO damage SELECT * FROM batch_damage",
}


def _batch_tables(
    batch: Batch,
    keep: list[int],
    keys: dict[int, int],
    hashes: list[bytes],
    reports: list[MatchReport | Damage | None],
    tables: dict[str, pa.Table],
    rulesets: list[bytes],
    damage: list[Damage],
) -> dict[str, pa.Table]:
    """Every Arrow table the batch writes, by the name its INSERT reads."""
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    kept: list[MatchReport] = []
    for i in keep:
        report = reports[i]
        assert isinstance(report, MatchReport)  # prepare_batch made one for each record kept
        kept.append(report)
    found = [report.findings for report in kept]
    where = [batch.locations[i] for i in keep]
    # Column by column: most records have no findings, and a batch holds thousands.
    extra: dict[str, list[Any] | pa.Array] = {
        "match_key": [keys[i] for i in keep],
        "content_hash": [hashes[i] for i in keep],
        "source": _repeat(batch.source, "source", len(keep)),
        "source_frame": [loc.frame for loc in where],
        "source_offset": [loc.offset for loc in where],
        "source_line": [loc.line for loc in where],
        "ingested_at": _repeat(now, "ingested_at", len(keep)),
    }
    if any(found):
        errors = [sum(f.severity is Severity.ERROR for f in fs) if fs else 0 for fs in found]
        extra |= {
            "id_reused": [any(f.code == "MATCH_ID_REUSED" for f in fs) for fs in found],
            "valid": [n == 0 for n in errors],
            "errors": errors,
            "warnings": [len(fs) - n for fs, n in zip(found, errors, strict=True)],
        }
    else:  # none has a finding: every one valid, and alike
        extra |= {
            "id_reused": _repeat(False, "id_reused", len(keep)),
            "valid": _repeat(True, "valid", len(keep)),
            "errors": _repeat(0, "errors", len(keep)),
            "warnings": _repeat(0, "warnings", len(keep)),
        }
    findings: dict[str, list[Any]] = {name: [] for name in _FINDINGS}
    for i, report in zip(keep, kept, strict=True):
        for n, f in enumerate(report.findings):
            for name, value in zip(
                _FINDINGS,
                (keys[i], n, f.code, str(f.severity), _small(f.deal, 0xFFFF),
                 _small(f.trick, 255), _small(f.seat, 0xFFFFFFFF), _small(f.play, 255),
                 _small(f.card, 255), f.caused_by, f.message),
                strict=True,
            ):  # fmt: skip
                findings[name].append(value)
    batches = {
        **{f"batch_{name}": in_row_groups(table) for name, table in tables.items()},
        "batch_extra": pa.table({n: _array(extra[n], kind) for n, kind in _EXTRA.items()}),
        "batch_rulesets": _rulesets_table(rulesets),
        "batch_findings": pa.table({n: pa.array(v, _FINDINGS[n]) for n, v in findings.items()}),
        "batch_damage": _damage_table(batch.source, damage, now),
    }
    return batches


def write_prepared(
    con: duckdb.DuckDBPyConnection,
    prepared: Prepared,
    *,
    before: Callable[[], None] | None = None,
) -> None:
    """Write a prepared batch in one transaction (all of it or, on any error, nothing).
    ``before`` is called once the rows are in, just before the commit (raise: roll back)."""
    con.execute("BEGIN")
    try:
        for name, table in prepared.tables.items():
            con.register(name, table)
        for statement in WRITES.values():
            con.execute(statement)
        if before is not None:
            before()
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        for name in prepared.tables:
            con.unregister(name)


_EXTRA: dict[str, pa.DataType] = {
    "match_key": pa.uint64(), "content_hash": pa.binary(), "id_reused": pa.bool_(),
    "valid": pa.bool_(), "errors": pa.uint16(), "warnings": pa.uint16(),
    "source": pa.string(), "source_frame": pa.uint32(), "source_offset": pa.uint64(),
    "source_line": pa.uint32(), "ingested_at": pa.timestamp("us"),
}  # fmt: skip
_FINDINGS: dict[str, pa.DataType] = {
    "match_key": pa.uint64(), "n": pa.uint16(), "code": pa.string(), "severity": pa.string(),
    "deal": pa.uint16(), "trick": pa.uint8(), "seat": pa.uint32(), "play": pa.uint8(),
    "card": pa.uint8(), "caused_by": pa.uint16(), "message": pa.string(),
}  # fmt: skip


def _repeat(value: object, column: str, rows: int) -> pa.Array:
    """A column of ``batch_extra`` holding ``value`` in every row."""
    return pa.repeat(pa.scalar(value, _EXTRA[column]), rows)


def _array(values: list[Any] | pa.Array, kind: pa.DataType) -> pa.Array:
    return values if isinstance(values, pa.Array) else pa.array(values, kind)


def _small(value: int | None, top: int) -> int | None:
    return value if value is not None and 0 <= value <= top else None


def _damage_table(source: str, damage: list[Damage], now: dt.datetime) -> pa.Table:
    return pa.table(
        {
            "source": pa.array([source] * len(damage), pa.string()),
            "frame": pa.array([d.location.frame for d in damage], pa.uint32()),
            "byte_offset": pa.array([d.location.offset for d in damage], pa.uint64()),
            "line": pa.array([d.location.line for d in damage], pa.uint32()),
            "code": pa.array([d.code for d in damage], pa.string()),
            "message": pa.array([d.message for d in damage], pa.string()),
            "ingested_at": pa.array([now] * len(damage), pa.timestamp("us")),
        }
    )
