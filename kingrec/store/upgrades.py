"""The upgrades of the store: what brings the tables of an older schema version to the next.

``kingrec.store.db`` runs them in turn (``MIGRATIONS``) when it opens an older store; the
views and comments are made anew from ``schema`` afterwards.
"""

from __future__ import annotations

from .packed import packed_sql
from .schema import DEAL_FACTS, create_table

__all__ = ["upgrade_statements"]

# A dealt deck in held_* form: every card code's bit set once.
_FULL_DECK = (1 << 52) - 1


def upgrade_statements(version: int) -> list[str]:
    """What brings the tables of a store of schema ``version`` to the next version
    (db.MIGRATIONS); the views and comments are made anew afterwards."""
    if version == 1:
        return [
            "DROP VIEW IF EXISTS plays",
            "CREATE TABLE plays_v2 AS SELECT match_key, deal, play, seat, card, contract, trump, "
            "legal, CAST(coalesce(CAST(took AS INTEGER), 7) | CASE WHEN auto THEN 8 ELSE 0 END "
            "| (coalesce(enum_code(broke) + 1, 0) << 4) AS UTINYINT) AS flags, think_ms "
            "FROM plays_base",
            "DROP TABLE plays_base",
            "ALTER TABLE plays_v2 RENAME TO plays_base",
            "CREATE TABLE tricks_base AS SELECT match_key, deal, trick, contract, leader, "
            "winner, units, points, CAST(CAST(card_0 AS UINTEGER) | (CAST(card_1 AS UINTEGER) "
            "<< 6) | (CAST(card_2 AS UINTEGER) << 12) | (CAST(card_3 AS UINTEGER) << 18) AS "
            "UINTEGER) AS cards FROM tricks",
            "DROP TABLE tricks",
        ]
    if version == 2:
        deal_code = packed_sql(
            "deal_code",
            {
                "trump": "coalesce(enum_code(trump) + 1, 0)",
                "contract": "coalesce(enum_code(contract) + 1, 0)",
                "deal": "deal",
                "match_key": "match_key",
            },
        )
        play_code = packed_sql(
            "play_code",
            {
                **{name: name for name in ("card", "seat", "play", "legal")},
                "took": "flags & 7",
                "auto": "(flags >> 3) & 1",
                "broke": "flags >> 4",
                "think": "coalesce(CAST(think_ms AS UBIGINT) + 1, 0)",
            },
        )
        trick_code = packed_sql(
            "trick_code", {name: name for name in ("cards", "trick", "leader", "winner", "units")}
        )
        masks = ", ".join(
            f"list_reduce(list_transform(hand_{s}, lambda c: CASE WHEN c < 52 THEN "
            f"CAST(1 AS UBIGINT) << c ELSE CAST(0 AS UBIGINT) END), lambda a, b: a | b) AS h{s}"
            for s in range(4)
        )
        held = ", ".join(
            f"CASE WHEN (h0 | h1 | h2 | h3) = {_FULL_DECK} THEN h{s} END AS held_{s}"
            for s in range(4)
        )
        facts = ", ".join(name for name, _, _ in DEAL_FACTS)
        # The new tables as a new store makes them (their compression chosen), then filled.
        return [
            "DROP VIEW IF EXISTS plays",
            "DROP VIEW IF EXISTS tricks",
            "ALTER TABLE plays_base RENAME TO plays_v2",
            create_table("plays_base"),
            f"INSERT INTO plays_base SELECT {deal_code}, {play_code} FROM plays_v2",
            "DROP TABLE plays_v2",
            "ALTER TABLE tricks_base RENAME TO tricks_v2",
            create_table("tricks_base"),
            # Tricks of schema 2 carry no trumps: their deal's.
            f"INSERT INTO tricks_base SELECT {deal_code}, {trick_code}, points "
            "FROM (SELECT t.*, d.trump FROM tricks_v2 t JOIN deals d USING (match_key, deal))",
            "DROP TABLE tricks_v2",
            create_table("deals_base"),
            f"INSERT INTO deals_base SELECT {facts}, {held}, trump_length "
            f"FROM (SELECT *, {masks} FROM deals)",
            "DROP TABLE deals",
        ]
    if version == 3:  # a record in one piece: RECORD_CHUNK is how ingest cuts, not a bound
        return [
            create_table("records_base"),
            "INSERT INTO records_base SELECT match_key, 0, record FROM records",
            "DROP TABLE records",
        ]
    if version == 4:  # the par analysis: empty until kingrec analyse --db fills it
        return [create_table("deal_par"), create_table("play_costs")]
    raise KeyError(version)
