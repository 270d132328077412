"""The store's tables: what an analyst sees, written once as DDL with a comment on everything.

Joinable tables keyed by ``match_key`` (a number the store gives each stored record; a
``match_id`` may come twice with different content): ``matches``, ``players``, ``deals``,
``tricks``, ``plays``, ``findings``, plus ``damage`` (what could not be read), ``cards`` (card
codes to names) and ``kingrec_meta`` (the schema version). Every row carries what the
common questions filter on, so they need no join: a play carries its deal's contract and
trumps, a deal each seat's hand and suit lengths. The same DDL is docs/STORE.md's source.

The file is written in DuckDB's v1.5.0 storage format (``STORAGE_VERSION``) so the stock
DuckDB CLI most users have (the ``duckdb-cli`` package, 1.5.x) opens it without kingrec.
"""

from __future__ import annotations

from ..contracts import Contract

__all__ = [
    "ENUMS",
    "SCHEMA_VERSION",
    "STORAGE_VERSION",
    "TABLES",
    "VERDICTS",
    "VIEWS",
    "comments",
    "create_statements",
    "upgrade_statements",
    "view_columns",
]

# 2: plays_base packs took, auto and broke into flags; tricks_base packs the four cards (the
# views plays and tricks show the same columns as before); records stored uncompressed.
SCHEMA_VERSION = 2
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
    "deals": [
        ("match_key", "UBIGINT", "the match"),
        ("deal", "USMALLINT", "1-based position in the match"),
        ("contract", "contract", "NULL when the record names no known contract"),
        ("declarer", "UTINYINT", "the seat that chose the contract and led"),
        ("dealer", "UTINYINT", "the seat that dealt, when recorded"),
        ("trump", "suit", "the trump suit the deal was played with (koz only)"),
        (
            "playable",
            "BOOLEAN",
            "the deal could be replayed (a whole deck, a seat, a contract, trumps for koz)",
        ),
        ("tricks", "UTINYINT", "complete tricks played"),
        ("plays", "UTINYINT", "cards played that belong to the deal"),
        ("plays_after_end", "USMALLINT", "cards recorded after the deal ended (a finding)"),
        ("ended", "deal_end", "how the deal ended"),
        ("end_trick", "UTINYINT", "the trick it ended on"),
        ("revoker", "UTINYINT", "the seat of a penalized revoke"),
        ("score_0", "INTEGER", "seat 0's points in this deal"),
        ("score_1", "INTEGER", "seat 1's points"),
        ("score_2", "INTEGER", "seat 2's points"),
        ("score_3", "INTEGER", "seat 3's points"),
        ("hand_0", "UTINYINT[13]", "seat 0's hand as dealt, card codes (cards.card)"),
        ("hand_1", "UTINYINT[13]", "seat 1's hand"),
        ("hand_2", "UTINYINT[13]", "seat 2's hand"),
        ("hand_3", "UTINYINT[13]", "seat 3's hand"),
        ("suits_0", "UTINYINT[4]", "seat 0's suit lengths: clubs, diamonds, hearts, spades"),
        ("suits_1", "UTINYINT[4]", "seat 1's suit lengths"),
        ("suits_2", "UTINYINT[4]", "seat 2's suit lengths"),
        ("suits_3", "UTINYINT[4]", "seat 3's suit lengths"),
        ("trump_length", "UTINYINT", "koz: how many trumps the declarer held"),
    ],
    "tricks_base": [
        ("match_key", "UBIGINT", "the match"),
        ("deal", "USMALLINT", "the deal"),
        ("trick", "UTINYINT", "1-based"),
        ("contract", "contract", "the deal's contract"),
        ("leader", "UTINYINT", "the seat that led"),
        ("winner", "UTINYINT", "the seat that took the trick"),
        ("units", "UTINYINT", "scoring units taken (a trick, penalty cards, a last trick)"),
        ("points", "INTEGER", "units times the contract's unit score"),
        (
            "cards",
            "UINTEGER",
            "the four cards in the order played, 6 bits each from the lowest (the view "
            "unpacks them)",
        ),
    ],
    "plays_base": [
        ("match_key", "UBIGINT", "the match"),
        ("deal", "USMALLINT", "the deal"),
        ("play", "UTINYINT", "0-based index in the deal's plays (trick and position follow)"),
        ("seat", "UTINYINT", "who played it"),
        ("card", "UTINYINT", "the card code (cards.card; card_name(card) gives QS)"),
        ("contract", "contract", "the deal's contract, carried so questions need no join"),
        ("trump", "suit", "the deal's trumps (koz)"),
        ("legal", "UTINYINT", "how many cards were legal (1: a forced play)"),
        (
            "flags",
            "UTINYINT",
            "took (bits 0-2, 7: none), auto (bit 3) and broke (bits 4-7: its code + 1, 0: "
            "legal), packed: one stored column instead of three (the view unpacks them)",
        ),
        ("think_ms", "UINTEGER", "how long the player thought, when recorded"),
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
    "records": [
        ("match_key", "UBIGINT PRIMARY KEY", "the match"),
        # Uncompressed on purpose: DuckDB's string compression gains ~5% on protobuf bytes and
        # its checkpoint analysis of them cost a third of the whole ingest (measured).
        (
            "record",
            "BLOB USING COMPRESSION uncompressed",
            "the record as stored: a serialized kingrec.v1.Match (GetMatch, export)",
        ),
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
    "deals": "One row per deal: contract, declarer, trumps, how it ended, scores, hands.",
    "tricks_base": "The stored columns of tricks (query the view tricks).",
    "plays_base": "The stored columns of plays (query the view plays).",
    "findings": "What kingrec validate reports about each stored record.",
    "records": "Each stored record's own bytes, so nothing of it is lost.",
    "damage": "Stretches of input files that held no readable record.",
    "cards": "The 52 card codes with their names.",
    "kingrec_meta": "The store's own facts: schema_version.",
}


# Views: the columns analysts need that follow from stored ones cost nothing to store, and
# a stored column costs ingest time per row (DuckDB appends ~30 ns per value): plays, the
# biggest table, stores rarely asked facts packed. view -> (comment, base table, columns as
# (name, SQL, comment); SQL None: the base table's column of that name, with its comment).
VIEWS: dict[str, tuple[str, str, list[tuple[str, str | None, str]]]] = {
    "tricks": (
        "One row per complete trick: leader, winner, points, the four cards.",
        "tricks_base",
        [
            ("match_key", None, ""),
            ("deal", None, ""),
            ("trick", None, ""),
            ("contract", None, ""),
            ("leader", None, ""),
            ("winner", None, ""),
            ("units", None, ""),
            ("points", None, ""),
            (
                "led_suit",
                "CAST(enum_range(NULL::suit)[(cards & 63) // 13 + 1] AS suit)",
                "the suit led",
            ),
            ("card_0", "CAST(cards & 63 AS UTINYINT)", "the card led (a card code)"),
            ("card_1", "CAST((cards >> 6) & 63 AS UTINYINT)", "the second card"),
            ("card_2", "CAST((cards >> 12) & 63 AS UTINYINT)", "the third card"),
            ("card_3", "CAST((cards >> 18) & 63 AS UTINYINT)", "the fourth card"),
        ],
    ),
    "plays": (
        "One row per card played, with the deal's contract and trumps on the row.",
        "plays_base",
        [
            ("match_key", None, ""),
            ("deal", None, ""),
            ("play", None, ""),
            ("seat", None, ""),
            ("card", None, ""),
            ("contract", None, ""),
            ("trump", None, ""),
            ("legal", None, ""),
            (
                "took",
                "CAST(nullif(flags & 7, 7) AS UTINYINT)",
                "the seat that took the trick (NULL while it was open)",
            ),
            (
                "broke",
                "CAST(enum_range(NULL::broken_rule)[nullif(flags >> 4, 0)] AS broken_rule)",
                "the rule the card broke (NULL: a legal play)",
            ),
            ("think_ms", None, ""),
            ("auto", "(flags & 8) <> 0", "played by the server for a player out of time"),
            ("trick", "CAST(play // 4 + 1 AS UTINYINT)", "1-based trick number"),
            ("position", "CAST(play % 4 AS UTINYINT)", "0 = led .. 3 = last to the trick"),
            (
                "suit",
                "CAST(enum_range(NULL::suit)[card // 13 + 1] AS suit)",
                "the card's suit",
            ),
            ("rank", "CAST(card % 13 + 2 AS UTINYINT)", "2..14 (11 J, 12 Q, 13 K, 14 A)"),
        ],
    ),
}


def view_columns(view: str) -> list[tuple[str, str]]:
    """The columns of a view, in order, with their comments."""
    _, base, columns = VIEWS[view]
    stored = {name: text for name, _, text in TABLES[base]}
    return [(name, text if sql is not None else stored[name]) for name, sql, text in columns]


def _view_sql(view: str) -> str:
    _, base, columns = VIEWS[view]
    parts = [name if sql is None else f"{sql} AS {name}" for name, sql, _ in columns]
    return f"SELECT {', '.join(parts)} FROM {base}"


def create_statements() -> list[str]:
    """DDL that creates an empty store: types, tables, the card table, a macro."""
    out = [
        f"CREATE TYPE {name} AS ENUM ({', '.join(repr(v) for v in values)})"
        for name, values in ENUMS.items()
    ]
    for table, columns in TABLES.items():
        body = ",\n    ".join(f"{name} {kind}" for name, kind, _ in columns)
        out.append(f"CREATE TABLE {table} (\n    {body}\n)")
    out += [f"CREATE VIEW {name} AS {_view_sql(name)}" for name in VIEWS]
    out.append(
        "CREATE MACRO card_name(c) AS "
        "substr('23456789TJQKA', c % 13 + 1, 1) || substr('CDHS', c // 13 + 1, 1)"
    )
    return out


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


def upgrade_statements(version: int) -> list[str]:
    """What brings a store of schema ``version`` to the next version (db.MIGRATIONS)."""
    if version != 1:
        raise KeyError(version)
    packed = {"plays_base", "tricks_base", "plays", "tricks"}
    return [
        "DROP VIEW plays",
        "CREATE TABLE plays_v2 AS SELECT match_key, deal, play, seat, card, contract, trump, "
        "legal, CAST(coalesce(CAST(took AS INTEGER), 7) | CASE WHEN auto THEN 8 ELSE 0 END "
        "| (coalesce(enum_code(broke) + 1, 0) << 4) AS UTINYINT) AS flags, think_ms "
        "FROM plays_base",
        "DROP TABLE plays_base",
        "ALTER TABLE plays_v2 RENAME TO plays_base",
        "CREATE TABLE tricks_base AS SELECT match_key, deal, trick, contract, leader, winner, "
        "units, points, CAST(CAST(card_0 AS UINTEGER) | (CAST(card_1 AS UINTEGER) << 6) "
        "| (CAST(card_2 AS UINTEGER) << 12) | (CAST(card_3 AS UINTEGER) << 18) AS UINTEGER) "
        "AS cards FROM tricks",
        "DROP TABLE tricks",
        *(f"CREATE VIEW {name} AS {_view_sql(name)}" for name in VIEWS),
        *(c for c in comments() if c.split()[3].split(".")[0] in packed),
    ]


def _sql(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
