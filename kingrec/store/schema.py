"""The store's tables: what an analyst sees, written once as DDL with a comment on everything.

Joinable tables keyed by ``match_key`` (a number the store gives each stored record; a
``match_id`` may come twice with different content): ``matches``, ``players``, ``deals``,
``tricks``, ``plays``, ``findings``, plus ``damage`` (what could not be read), ``cards`` (card
codes to names) and ``kingrec_meta`` (the schema version). Every row carries what the
common questions filter on, so they need no join: a play carries its deal's contract and
trumps, a deal each seat's hand and suit lengths. The same DDL is docs/STORE.md's source.

The file is written in DuckDB's v1.5.0 storage format (``STORAGE_VERSION``) so the stock
DuckDB CLI most users have (the ``duckdb-cli`` package, 1.5.x) opens it without kingrec.

The packed codes the plays, tricks and deals are stored in are ``packed``'s; the upgrades of
older stores are ``upgrades``'.
"""

from __future__ import annotations

from ..contracts import Contract
from .packed import PACKED, packed_comment, unpacked

__all__ = [
    "DEAL_FACTS",
    "ENUMS",
    "RECORD_CHUNK",
    "SCHEMA_VERSION",
    "STORAGE_VERSION",
    "TABLES",
    "VERDICTS",
    "VIEWS",
    "comments",
    "create_statements",
    "create_table",
    "view_columns",
    "view_statements",
]

# 2: plays_base packs took, auto and broke into flags; tricks_base packs the four cards (the
# views plays and tricks show the same columns as before); records stored uncompressed.
# 3: plays_base and tricks_base hold two packed codes per row (PACKED), deals_base each hand
# as 52 bits; the views plays, tricks and deals show the columns of version 2.
# 4: records are stored in pieces (records_base, RECORD_CHUNK bytes each) behind the view
# records, which gives each record's bytes whole as before.
# 5: the par analysis of stored deals (kingrec analyse --db): the tables deal_par, play_costs.
SCHEMA_VERSION = 5

# A record's bytes are stored in pieces of this many bytes, one row each. DuckDB writes a
# transaction's rows straight into the file only a whole row group (122,880 rows) at a time,
# per thread; one row per record (6500 a batch) went through its log instead, was held in
# memory (spilled to disk under the memory cap) and written again at every checkpoint, which
# cost a quarter of the ingest. 96-byte pieces make 2.7 row groups of a classic batch.
# Measured on 2 M deals: 25.4 s with one row per record, 22.3 s in pieces of 96 (and 23.1 s
# of 128, under two row groups a batch; 23.3 s of 64).
RECORD_CHUNK = 96
STORAGE_VERSION = "v1.5.0"

CONTRACTS = tuple(c.name for c in Contract)
SUITS = ("CLUBS", "DIAMONDS", "HEARTS", "SPADES")
# How a deal ended, by the engine's END_* number (0: still playing is never stored).
DEAL_ENDS = ("ALL_TRICKS", "EARLY", "INCOMPLETE", "REVOKE", "UNREADABLE", "UNPLAYABLE")
STATUSES = ("UNSPECIFIED", "COMPLETE", "ABANDONED", "IN_PROGRESS")
# The rule a played card broke, by the engine's verdict number (kingrec._engine_types).
VERDICTS = (
    "NOT_IN_HAND",
    "TRUMP_LEAD_BANNED",
    "HEART_LEAD_BANNED",
    "MUST_FOLLOW_SUIT",
    "MUST_RAISE_TRUMP",
    "MUST_GIVE_PENALTY_CARD",
    "MUST_RUFF",
    "MUST_OVERTRUMP",
    "MUST_DISCARD_PENALTY_CARD",
    "NOT_A_CARD",
    "REVOKE_MARK_ON_LEGAL_PLAY",
)
ENUMS: dict[str, tuple[str, ...]] = {
    "contract": CONTRACTS,
    "suit": SUITS,
    "deal_end": DEAL_ENDS,
    "match_status": STATUSES,
    "broken_rule": VERDICTS,
}


def _enum_at(enum: str, index: str) -> str:
    """SQL for the ``enum`` value numbered ``index`` from 1 (NULL for 0 or out of range): a
    constant list, indexed by a small number, is what DuckDB does fastest (measured)."""
    values = ", ".join(f"'{v}'" for v in ENUMS[enum])
    return f"([{values}]::{enum}[])[CAST({index} AS UTINYINT)]"


# The compression of the columns an ingest appends most of is chosen, not left to DuckDB's
# analysis of every method at each flush and checkpoint (measured: a fifth of their append
# cost). A deal_code repeats for every play (trick) of a deal: runs. play_code, trick_code
# and the hands are dense codes of 40-62 bits (think times, 52-card sets): bitpacked they
# took 6.3-8.8 bytes a value and DuckDB's bitpacking (its analysis and packing of each
# group) was over a third of an ingest's DuckDB time; kept as they are they take 8 bytes
# and cost a plain copy. Measured per row appended, on 2 M classic deals (CPU): plays 46 ns
# bitpacked, 27 ns uncompressed; tricks 90, 53; deals 810, 570; the file 17% bigger.
# Small numbers that vary (deal numbers, scores, points) are bitpacked; the one-byte facts
# are kept as bytes (bitpacking one byte saves a few bits for a pass over it). A match_key
# repeats for every deal (record piece) of its match: runs, as a deal_code's. Measured in
# instructions (cachegrind, two classic batches appended and checkpointed): records_base
# 12% fewer with its match_key as runs and its chunk bitpacked than with both left to
# DuckDB's analysis (which bitpacked both; bitpacked by choice, 2% fewer), deals_base 3%
# fewer with its match_key as runs than bitpacked.


def _using(kind: str, compression: str) -> str:
    return f"{kind} USING COMPRESSION {compression}"


def _packed(kind: str) -> str:
    return _using(kind, "bitpacking")


def _plain(kind: str) -> str:
    return _using(kind, "uncompressed")


_RUNS = _using("UBIGINT", "rle")
_DENSE = _plain("UBIGINT")


# table -> [(column, type, comment)]
TABLES: dict[str, list[tuple[str, str, str]]] = {
    "matches": [
        ("match_key", "UBIGINT PRIMARY KEY", "the store's number for this record"),
        ("match_id", "VARCHAR", "the record's own id (kingrec.v1.Match.match_id)"),
        ("content_hash", "BLOB", "sha256 of the record's bytes, first 16 bytes: its identity"),
        (
            "id_reused",
            "BOOLEAN",
            "another record with other content was stored before under this match_id",
        ),
        ("valid", "BOOLEAN", "kingrec validate finds no error (warnings allowed)"),
        ("errors", "USMALLINT", "findings of severity error"),
        ("warnings", "USMALLINT", "findings of severity warning"),
        ("source", "VARCHAR", "the file (or upload) the record came from"),
        ("source_frame", "UINTEGER", "its frame in a .krec file (0-based), else NULL"),
        ("source_offset", "UBIGINT", "the byte offset of that frame, else NULL"),
        ("source_line", "UINTEGER", "its line in a JSON file, else NULL"),
        ("ingested_at", "TIMESTAMP", "when it was stored (UTC)"),
        ("format_version", "UINTEGER", "the record format version"),
        ("status", "match_status", "complete, abandoned or in progress"),
        ("status_reason", "VARCHAR", "why the match ended as it did, when recorded"),
        ("event", "VARCHAR", "metadata: the event"),
        ("site", "VARCHAR", "metadata: the site or server"),
        ("start_time", "TIMESTAMP", "metadata: when the match started (UTC)"),
        ("client_name", "VARCHAR", "metadata: the program that wrote the record"),
        ("client_version", "VARCHAR", "metadata: its version"),
        (
            "preset",
            "VARCHAR",
            "the ruleset's preset name (classic, short, rotation, plain, kahvehane, or a house's)",
        ),
        (
            "ruleset_valid",
            "BOOLEAN",
            "the ruleset can be applied (else the options below are NULL)",
        ),
        ("schedule", "VARCHAR", "QUOTA, ROTATION or FIXED"),
        ("deal_count", "USMALLINT", "deals in a complete match"),
        ("koz_quota", "UINTEGER", "koz deals each player declares (quota schedule)"),
        ("penalty_quota", "UINTEGER", "penalty deals each player declares (quota schedule)"),
        ("max_per_penalty", "UINTEGER", "times each penalty contract may be chosen in a match"),
        ("penalty_only_deals", "UINTEGER", "first deals in which koz may not be chosen"),
        ("fixed_order", "VARCHAR[]", "the contracts of a fixed schedule, in order"),
        ("first_declarer", "VARCHAR", "ANY_SEAT or HOLDER_OF_CARD"),
        ("first_declarer_card", "UTINYINT", "the card whose holder declares first (a card code)"),
        ("dealer", "VARCHAR", "UNCHECKED, DECLARER or SEAT_BEFORE_DECLARER"),
        ("must_ruff", "BOOLEAN", "koz: a void player with trumps must trump"),
        ("must_overtrump", "BOOLEAN", "koz: must play a higher trump than one on the trick"),
        (
            "must_raise_on_trump_lead",
            "BOOLEAN",
            "koz: must play a higher trump when trumps are led",
        ),
        ("trump_lead_needs_break", "BOOLEAN", "koz: trumps may not be led before a trump fell"),
        (
            "heart_lead_ban",
            "VARCHAR[]",
            "contracts in which hearts may not be led before a heart fell",
        ),
        ("withholding", "VARCHAR[]", "contracts in which a covered penalty card must be given"),
        (
            "void_discard",
            "VARCHAR[]",
            "contracts in which a void player must discard a penalty card",
        ),
        (
            "rifki_heart_after_king",
            "BOOLEAN",
            "rifki: once the king of hearts is gone, a void player discards a heart",
        ),
        ("early_end", "VARCHAR[]", "contracts that end when the last penalty card falls"),
        ("revoke", "VARCHAR", "REJECT or PENALIZE"),
        ("play_timeout_ms", "UINTEGER", "the move clock"),
        ("trump_timeout_ms", "UINTEGER", "the clock for naming trumps"),
        (
            "unit_scores",
            "INTEGER[]",
            "points per unit, by contract in the order of the contract type",
        ),
        ("deals", "USMALLINT", "deals in the record"),
        ("total_0", "INTEGER", "seat 0's points over the stored deals, as replayed"),
        ("total_1", "INTEGER", "seat 1's points"),
        ("total_2", "INTEGER", "seat 2's points"),
        ("total_3", "INTEGER", "seat 3's points"),
        ("winners", "UTINYINT[]", "the seat(s) with the highest total"),
    ],
    "players": [
        ("match_key", "UBIGINT", "the match (matches.match_key)"),
        ("seat", "UINTEGER", "0..3 in order of play"),
        ("player_id", "VARCHAR", "stable across matches"),
        ("name", "VARCHAR", "display name"),
        ("seat_name", "VARCHAR", "e.g. North, informational"),
    ],
    "deals_base": [
        ("match_key", _RUNS, "the match"),
        ("deal", _packed("USMALLINT"), "1-based position in the match"),
        ("contract", _plain("contract"), "NULL when the record names no known contract"),
        ("declarer", _plain("UTINYINT"), "the seat that chose the contract and led"),
        ("dealer", _plain("UTINYINT"), "the seat that dealt, when recorded"),
        ("trump", _plain("suit"), "the trump suit the deal was played with (koz only)"),
        (
            "playable",
            _plain("BOOLEAN"),
            "the deal could be replayed (a whole deck, a seat, a contract, trumps for koz)",
        ),
        ("tricks", _plain("UTINYINT"), "complete tricks played"),
        ("plays", _plain("UTINYINT"), "cards played that belong to the deal"),
        (
            "plays_after_end",
            _packed("USMALLINT"),
            "cards recorded after the deal ended (a finding)",
        ),
        ("ended", _plain("deal_end"), "how the deal ended"),
        ("end_trick", _plain("UTINYINT"), "the trick it ended on"),
        ("revoker", _plain("UTINYINT"), "the seat of a penalized revoke"),
        ("score_0", _packed("INTEGER"), "seat 0's points in this deal"),
        ("score_1", _packed("INTEGER"), "seat 1's points"),
        ("score_2", _packed("INTEGER"), "seat 2's points"),
        ("score_3", _packed("INTEGER"), "seat 3's points"),
        *(
            (
                f"held_{seat}",
                _DENSE,
                f"seat {seat}'s hand as dealt, one bit per card code (the view deals unpacks "
                "it); NULL when the deal is not 52 distinct cards",
            )
            for seat in range(4)
        ),
        ("trump_length", _plain("UTINYINT"), "koz: how many trumps the declarer held"),
    ],
    "tricks_base": [
        ("deal_code", _RUNS, packed_comment("deal_code")),
        ("trick_code", _DENSE, packed_comment("trick_code")),
        ("points", _packed("INTEGER"), "units times the contract's unit score"),
    ],
    "plays_base": [
        ("deal_code", _RUNS, packed_comment("deal_code")),
        ("play_code", _DENSE, packed_comment("play_code")),
    ],
    "findings": [
        ("match_key", "UBIGINT", "the match"),
        ("n", "USMALLINT", "the finding's place in the match's report (caused_by points here)"),
        ("code", "VARCHAR", "the stable finding code (docs/FORMAT.md)"),
        ("severity", "VARCHAR", "error or warning"),
        ("deal", "USMALLINT", "where: the deal"),
        ("trick", "UTINYINT", "the trick"),
        ("seat", "UINTEGER", "the seat"),
        ("play", "UTINYINT", "the play index in the deal"),
        ("card", "UTINYINT", "the card"),
        ("caused_by", "USMALLINT", "the finding this one follows from"),
        ("message", "VARCHAR", "one sentence a player understands"),
    ],
    "records_base": [
        ("match_key", _RUNS, "the match"),
        ("chunk", _packed("UINTEGER"), "the piece's place in the record, from 0"),
        # Uncompressed on purpose: DuckDB's string compression gains ~5% on protobuf bytes and
        # its checkpoint analysis of them cost a third of the whole ingest (measured).
        (
            "bytes",
            "BLOB USING COMPRESSION uncompressed",
            "a piece of the record's bytes; the pieces in chunk order are the record",
        ),
    ],
    "deal_par": [
        ("match_key", "UBIGINT", "the match (matches.match_key)"),
        ("deal", "USMALLINT", "the deal (deals.deal)"),
        ("seat", "UTINYINT", "the seat whose par this is (0..3, in order of play)"),
        ("contract", "contract", "the deal's contract, carried so questions need no join"),
        ("declarer", "UTINYINT", "the deal's declarer"),
        (
            "from_play",
            "UTINYINT",
            "par is taken before this play (0: the start; 4 * (T - 1) for --from-trick T), "
            "counting the units taken before it",
        ),
        (
            "solved",
            "BOOLEAN",
            "the search finished within its budget; when false par is NULL, never a guess",
        ),
        (
            "par",
            "UTINYINT",
            "the units the seat could make sure of with every hand known (NULL: unsolved)",
        ),
        (
            "actual",
            "UTINYINT",
            "the units it took as played (NULL: the deal was not played out legally)",
        ),
        ("par_points", "INTEGER", "par times the contract's unit score"),
        ("actual_points", "INTEGER", "actual times the contract's unit score"),
        (
            "costs_solved",
            "BOOLEAN",
            "every play of the deal from from_play on was priced (play_costs holds them all); "
            "false: the budget ran out first, or only par was asked for (--par-only)",
        ),
        ("analysed_plays", "UTINYINT", "the recorded plays analysis could follow"),
        (
            "stop",
            "VARCHAR",
            "why analysis stops short of the recorded plays (an illegal play, a penalized "
            "revoke, a deal that cannot be replayed), else NULL",
        ),
        ("nodes", "UBIGINT", "positions the deal's search visited (par and card costs)"),
        ("search_ms", "DOUBLE", "milliseconds the deal's search took"),
        ("budget_ms", "UINTEGER", "the time budget the deal had (0: none)"),
        ("budget_nodes", "UBIGINT", "the node budget the deal had (0: none)"),
        ("analysed_at", "TIMESTAMP", "when it was analysed (UTC)"),
    ],
    "play_costs": [
        ("match_key", "UBIGINT", "the match (matches.match_key)"),
        ("deal", "USMALLINT", "the deal"),
        ("play", "UTINYINT", "the play (plays.play: 0-based in the deal)"),
        ("trick", "UTINYINT", "1-based trick number"),
        ("seat", "UTINYINT", "who played it"),
        ("card", "UTINYINT", "the card played (cards.card)"),
        ("contract", "contract", "the deal's contract, carried so questions need no join"),
        ("before", "UTINYINT", "the seat's guarantee (units of the whole deal) before the card"),
        ("after", "UTINYINT", "its guarantee after the card"),
        ("cost_units", "UTINYINT", "units the card gave away (0: a best card)"),
        ("cost_points", "INTEGER", "points the card gave away (>= 0)"),
        ("best", "UTINYINT[]", "the legal cards that kept the guarantee (card codes)"),
    ],
    "damage": [
        ("source", "VARCHAR", "the file"),
        ("frame", "UINTEGER", "the damaged frame (.krec), else NULL"),
        ("byte_offset", "UBIGINT", "its byte offset, else NULL"),
        ("line", "UINTEGER", "the damaged line (JSON), else NULL"),
        (
            "code",
            "VARCHAR",
            "FRAME_CORRUPT, FRAME_TRUNCATED, FRAME_UNDECODABLE, JSON_INVALID, LIMIT_EXCEEDED",
        ),
        ("message", "VARCHAR", "what is wrong"),
        ("ingested_at", "TIMESTAMP", "when it was met"),
    ],
    "cards": [
        ("card", "UTINYINT PRIMARY KEY", "the card code: suit * 13 + rank"),
        ("name", "VARCHAR", "QS, TH, 2C"),
        ("symbol", "VARCHAR", "♠Q"),
        ("suit", "suit", "its suit"),
        ("rank", "UTINYINT", "2..14"),
    ],
    "kingrec_meta": [
        ("key", "VARCHAR PRIMARY KEY", "schema_version, created_by"),
        ("value", "VARCHAR", "its value"),
    ],
}

TABLE_COMMENTS = {
    "matches": "One row per stored record: ids, validity, metadata, every ruleset option, totals.",
    "players": "The players of each match, one row per seat.",
    "deals_base": "The stored columns of deals (query the view deals).",
    "tricks_base": "The stored columns of tricks (query the view tricks).",
    "plays_base": "The stored columns of plays (query the view plays).",
    "findings": "What kingrec validate reports about each stored record.",
    "records_base": "The stored pieces of each record's bytes (query the view records).",
    "deal_par": "Each analysed deal's par and actual result per seat (kingrec analyse --db).",
    "play_costs": "What each analysed play cost its player against par (kingrec analyse --db).",
    "damage": "Stretches of input files that held no readable record.",
    "cards": "The 52 card codes with their names.",
    "kingrec_meta": "The store's own facts: schema_version.",
}


# Views: what analysts query. Columns that follow from stored ones cost nothing to store,
# and every stored value costs the ingest (see PACKED): the views unpack the packed codes
# and derive the rest. view -> (comment, base table, columns as (name, SQL, comment); SQL
# None: the base table's column of that name, with its comment).
_DEAL = {name: unpacked("deal_code", name) for name in ("match_key", "deal", "contract", "trump")}
_PLAY = {name: unpacked("play_code", name) for name, _, _ in PACKED["play_code"]}
_TRICK = {name: unpacked("trick_code", name) for name, _, _ in PACKED["trick_code"]}
_PACKED_DEAL_COLUMNS: list[tuple[str, str | None, str]] = [
    ("match_key", f"CAST({_DEAL['match_key']} AS UBIGINT)", "the match"),
    ("deal", f"CAST({_DEAL['deal']} AS USMALLINT)", "the deal"),
]
_CONTRACT = (
    _enum_at("contract", _DEAL["contract"]),
    "the deal's contract, carried so questions need no join",
)
_TRUMP = (_enum_at("suit", _DEAL["trump"]), "the deal's trumps (koz)")


def _card(i: int) -> str:
    """The i-th card of a trick (6 bits each in trick_code's cards)."""
    return f"CAST({unpacked('trick_code', 'cards', skip=6 * i, width=6)} AS UTINYINT)"


def _hand(seat: int) -> tuple[str, str, str]:
    held = f"held_{seat}"
    cards = f"list_filter(range(52), lambda c: ({held} >> c) & 1 = 1)"
    return (
        f"hand_{seat}",
        f"CASE WHEN {held} IS NOT NULL THEN CAST({cards} AS UTINYINT[13]) END",
        (
            "seat 0's hand as dealt, card codes (cards.card) in code order; NULL when the deal "
            "is not 52 distinct cards"
            if seat == 0
            else f"seat {seat}'s hand"
        ),
    )


def _suits(seat: int) -> tuple[str, str, str]:
    held = f"held_{seat}"
    lengths = ", ".join(f"bit_count(({held} >> {13 * s}) & 8191)" for s in range(4))
    return (
        f"suits_{seat}",
        f"CASE WHEN {held} IS NOT NULL THEN CAST([{lengths}] AS UTINYINT[4]) END",
        (
            "seat 0's suit lengths: clubs, diamonds, hearts, spades"
            if seat == 0
            else f"seat {seat}'s suit lengths"
        ),
    )


DEAL_FACTS = [c for c in TABLES["deals_base"] if c[0] != "trump_length" and c[0][:5] != "held_"]

VIEWS: dict[str, tuple[str, str, list[tuple[str, str | None, str]]]] = {
    "deals": (
        "One row per deal: contract, declarer, trumps, how it ended, scores, hands.",
        "deals_base",
        [
            *((name, None, "") for name, _, _ in DEAL_FACTS),
            *(_hand(seat) for seat in range(4)),
            *(_suits(seat) for seat in range(4)),
            ("trump_length", None, ""),
        ],
    ),
    "tricks": (
        "One row per complete trick: leader, winner, points, the four cards.",
        "tricks_base",
        [
            *_PACKED_DEAL_COLUMNS,
            ("trick", f"CAST({_TRICK['trick']} AS UTINYINT)", "1-based"),
            ("contract", *_CONTRACT),
            ("leader", f"CAST({_TRICK['leader']} AS UTINYINT)", "the seat that led"),
            ("winner", f"CAST({_TRICK['winner']} AS UTINYINT)", "the seat that took the trick"),
            (
                "units",
                f"CAST({_TRICK['units']} AS UTINYINT)",
                "scoring units taken (a trick, penalty cards, a last trick)",
            ),
            ("points", None, ""),
            (
                "led_suit",
                _enum_at("suit", f"{_card(0)} // 13 + 1"),
                "the suit led",
            ),
            ("card_0", _card(0), "the card led (a card code)"),
            ("card_1", _card(1), "the second card"),
            ("card_2", _card(2), "the third card"),
            ("card_3", _card(3), "the fourth card"),
        ],
    ),
    "plays": (
        "One row per card played, with the deal's contract and trumps on the row.",
        "plays_base",
        [
            *_PACKED_DEAL_COLUMNS,
            (
                "play",
                f"CAST({_PLAY['play']} AS UTINYINT)",
                "0-based index in the deal's plays (trick and position follow)",
            ),
            ("seat", f"CAST({_PLAY['seat']} AS UTINYINT)", "who played it"),
            (
                "card",
                f"CAST({_PLAY['card']} AS UTINYINT)",
                "the card code (cards.card; card_name(card) gives QS)",
            ),
            ("contract", *_CONTRACT),
            ("trump", *_TRUMP),
            (
                "legal",
                f"CAST({_PLAY['legal']} AS UTINYINT)",
                "how many cards were legal (1: a forced play)",
            ),
            (
                "took",
                f"CAST(nullif({_PLAY['took']}, 7) AS UTINYINT)",
                "the seat that took the trick (NULL while it was open)",
            ),
            (
                "broke",
                _enum_at("broken_rule", _PLAY["broke"]),
                "the rule the card broke (NULL: a legal play)",
            ),
            (
                "think_ms",
                f"CAST(nullif({_PLAY['think']}, 0) - 1 AS UINTEGER)",
                "how long the player thought, when recorded",
            ),
            (
                "auto",
                f"{_PLAY['auto']} = 1",
                "played by the server for a player out of time",
            ),
            (
                "trick",
                f"CAST({unpacked('play_code', 'play', skip=2)} + 1 AS UTINYINT)",
                "1-based trick number",
            ),
            (
                "position",
                f"CAST({unpacked('play_code', 'play', width=2)} AS UTINYINT)",
                "0 = led .. 3 = last to the trick",
            ),
            (
                "suit",
                _enum_at("suit", f"{_PLAY['card']} // 13 + 1"),
                "the card's suit",
            ),
            (
                "rank",
                f"CAST({_PLAY['card']} % 13 + 2 AS UTINYINT)",
                "2..14 (11 J, 12 Q, 13 K, 14 A)",
            ),
        ],
    ),
    "records": (
        "Each stored record's own bytes, so nothing of it is lost.",
        "records_base",
        [
            ("match_key", None, ""),
            (
                "record",
                "list_reduce(list(bytes ORDER BY chunk), lambda a, b: a || b)",
                "the record as stored: a serialized kingrec.v1.Match (GetMatch, export)",
            ),
        ],
    ),
}
_GROUP_BY = {"records": "match_key"}  # views that put rows of their table together


def view_columns(view: str) -> list[tuple[str, str]]:
    """The columns of a view, in order, with their comments."""
    _, base, columns = VIEWS[view]
    stored = {name: text for name, _, text in TABLES[base]}
    return [(name, text if sql is not None else stored[name]) for name, sql, text in columns]


def _view_sql(view: str) -> str:
    _, base, columns = VIEWS[view]
    parts = [name if sql is None else f"{sql} AS {name}" for name, sql, _ in columns]
    group = f" GROUP BY {_GROUP_BY[view]}" if view in _GROUP_BY else ""
    return f"SELECT {', '.join(parts)} FROM {base}{group}"


def create_statements() -> list[str]:
    """DDL that creates an empty store: types, tables, the card table, a macro."""
    out = [
        f"CREATE TYPE {name} AS ENUM ({', '.join(repr(v) for v in values)})"
        for name, values in ENUMS.items()
    ]
    out += [create_table(table) for table in TABLES]
    out += view_statements()
    out.append(
        "CREATE MACRO card_name(c) AS "
        "substr('23456789TJQKA', c % 13 + 1, 1) || substr('CDHS', c // 13 + 1, 1)"
    )
    return out


def create_table(table: str) -> str:
    body = ",\n    ".join(f"{name} {kind}" for name, kind, _ in TABLES[table])
    return f"CREATE TABLE {table} (\n    {body}\n)"


def comments() -> list[str]:
    """COMMENT ON every table and column, so the file documents itself."""
    out = [f"COMMENT ON TABLE {t} IS {_sql(c)}" for t, c in TABLE_COMMENTS.items()]
    for table, columns in TABLES.items():
        out += [f"COMMENT ON COLUMN {table}.{name} IS {_sql(text)}" for name, _, text in columns]
    for view, (text, _, _) in VIEWS.items():
        out.append(f"COMMENT ON VIEW {view} IS {_sql(text)}")
        for name, about in view_columns(view):
            out.append(f"COMMENT ON COLUMN {view}.{name} IS {_sql(about)}")
    return out


def view_statements() -> list[str]:
    """DDL that (re)creates every view, e.g. after an upgrade changed their tables."""
    return [f"CREATE OR REPLACE VIEW {name} AS {_view_sql(name)}" for name in VIEWS]


def _sql(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
