"""Ready answers to the common questions: named SQL queries over the store.

Each ``Stat`` is plain SQL over the store's tables and views — nothing of kingrec needed to
run it, so the same text runs in the stock DuckDB CLI (``duckdb -readonly kingrec.duckdb``)
and is a starting point to adapt (``kingrec stats --sql NAME`` prints it). They count the
valid records only (``matches.valid``): an invalid record's deals say what was played, not
what the rules allow. ``bar`` names the column a chart shows beside the table.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import QueryError
from .query import QueryResult, QueryStop
from .store import Store

__all__ = ["STATS", "Stat", "run_stat", "stat"]


@dataclass(frozen=True)
class Stat:
    """One named question and the SQL that answers it."""

    name: str
    title: str
    description: str
    sql: str
    bar: str | None = None  # the column charted beside the table
    analysis: bool = False  # answered from deal_par / play_costs (kingrec analyse --db)


VALID = "match_key IN (SELECT match_key FROM matches WHERE valid)"
FINISHED = "ended IN ('EARLY', 'ALL_TRICKS')"
# The declarer's score and suit lengths, picked from the per-seat columns of a deal.
DECLARER_POINTS = "[score_0, score_1, score_2, score_3][declarer + 1]"
DECLARER_SUITS = "[suits_0, suits_1, suits_2, suits_3][declarer + 1]"


def _sql(text: str) -> str:
    return text.strip() + "\n"


# The par questions count the deals analysed within their budget; each says how many were not.
# A deal is one number, whatever its match: the key of a deal in deal_par and play_costs.
_DEAL_ID = "match_key * 65536 + deal"


_STATS = [
    Stat(
        "contracts",
        "Contracts declared",
        "How often each contract is played, how often it ended early (the last penalty "
        "card fell before trick 13) and how many tricks were played on average.",
        _sql(f"""
SELECT contract,
       count(*) AS deals,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct,
       round(100.0 * count(*) FILTER (WHERE ended = 'EARLY') / count(*), 1) AS early_pct,
       round(avg(tricks), 2) AS avg_tricks
FROM deals
WHERE {VALID}
  AND {FINISHED}
GROUP BY contract
ORDER BY contract
"""),
        bar="deals",
    ),
    Stat(
        "rifki-end",
        "Rıfkı: the trick the deal ends on",
        "Rıfkı deals by the trick they ended on: a rıfkı deal ends when the king of hearts "
        "falls (where the ruleset ends it early). cumulative_pct at trick 4 answers 'how "
        "often does the rıfkı deal end before trick 5?'.",
        _sql(f"""
SELECT end_trick AS trick,
       count(*) AS deals,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct,
       round(100.0 * sum(count(*)) OVER (ORDER BY end_trick) / sum(count(*)) OVER (), 1)
           AS cumulative_pct
FROM deals
WHERE contract = 'RIFKI'
  AND {VALID}
  AND {FINISHED}
GROUP BY end_trick
ORDER BY trick
"""),
        bar="deals",
    ),
    Stat(
        "points",
        "Points per contract and seat",
        "The average points each seat scores in a deal of each contract (seats 0..3 in "
        "order of play; who declares changes from deal to deal).",
        _sql(f"""
SELECT contract, seat, count(*) AS deals, round(avg(points), 1) AS avg_points
FROM (
    SELECT contract,
           unnest([0, 1, 2, 3]) AS seat,
           unnest([score_0, score_1, score_2, score_3]) AS points
    FROM deals
    WHERE {VALID}
      AND {FINISHED}
)
GROUP BY contract, seat
ORDER BY contract, seat
"""),
        bar="avg_points",
    ),
    Stat(
        "declarer",
        "Declarer advantage per contract",
        "The declarer's average points in a deal against the average of the three others; "
        "advantage is the difference (positive: choosing the contract pays).",
        _sql(f"""
SELECT contract,
       count(*) AS deals,
       round(avg(declarer_points), 1) AS declarer_avg,
       round(avg(others_points), 1) AS others_avg,
       round(avg(declarer_points) - avg(others_points), 1) AS advantage
FROM (
    SELECT contract,
           {DECLARER_POINTS} AS declarer_points,
           (score_0 + score_1 + score_2 + score_3 - {DECLARER_POINTS}) / 3 AS others_points
    FROM deals
    WHERE {VALID}
      AND {FINISHED}
)
GROUP BY contract
ORDER BY contract
"""),
        bar="advantage",
    ),
    Stat(
        "koz-trump",
        "Koz: the trumps the declarer held",
        "Koz deals by how many cards of the trump suit the declarer held: how often, how "
        "often the trumps were (one of) the declarer's longest suits, and the declarer's "
        "average points — 'does the declarer gain in koz, and by how much with 5+ trumps?'.",
        _sql(f"""
SELECT trump_length AS trumps_held,
       count(*) AS deals,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct,
       round(100.0 * count(*) FILTER (WHERE trump_length = list_max({DECLARER_SUITS}))
             / count(*), 1) AS longest_suit_pct,
       round(avg({DECLARER_POINTS}), 1) AS declarer_avg
FROM deals
WHERE contract = 'KOZ'
  AND {VALID}
  AND {FINISHED}
GROUP BY trump_length
ORDER BY trumps_held
"""),
        bar="deals",
    ),
    Stat(
        "forced",
        "Forced plays per contract",
        "Cards played when only one card was legal (plays.legal = 1), per contract.",
        _sql(f"""
SELECT contract,
       count(*) AS plays,
       count(*) FILTER (WHERE legal = 1) AS forced,
       round(100.0 * count(*) FILTER (WHERE legal = 1) / count(*), 1) AS forced_pct
FROM plays
WHERE {VALID}
GROUP BY contract
ORDER BY contract
"""),
        bar="forced_pct",
    ),
    Stat(
        "most-led",
        "The most-led card per contract",
        "The card led to a trick most often in each contract (ties: the lower card code), "
        "and its share of all the leads in that contract.",
        _sql(f"""
SELECT contract, card_name(card) AS card, leads, round(100.0 * leads / all_leads, 1) AS pct
FROM (
    SELECT contract, card,
           count(*) AS leads,
           sum(count(*)) OVER (PARTITION BY contract) AS all_leads,
           row_number() OVER (PARTITION BY contract ORDER BY count(*) DESC, card) AS place
    FROM plays
    WHERE position = 0 AND {VALID}
    GROUP BY contract, card
)
WHERE place = 1
ORDER BY contract
"""),
        bar="pct",
    ),
    Stat(
        "rifki-taker",
        "Rıfkı: who takes the king of hearts",
        "Rıfkı deals by the seat that took the king of hearts, counted from the declarer "
        "(0: the declarer, 1: the next seat in play, …); deals where it was never taken "
        "are left out.",
        _sql("""
SELECT (p.took::INTEGER - d.declarer + 4) % 4 AS from_declarer,
       count(*) AS deals,
       round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS pct
FROM plays p JOIN deals d USING (match_key, deal)
WHERE p.contract = 'RIFKI' AND card_name(p.card) = 'KH' AND p.took IS NOT NULL
  AND p.match_key IN (SELECT match_key FROM matches WHERE valid)
GROUP BY from_declarer
ORDER BY from_declarer
"""),
        bar="deals",
    ),
    Stat(
        "winners",
        "Match wins by seat",
        "Complete valid matches won by each seat (a shared top total counts for every "
        "seat that has it).",
        _sql("""
SELECT seat,
       count(*) AS wins,
       round(100.0 * count(*)
             / (SELECT count(*) FROM matches WHERE valid AND status = 'COMPLETE'), 1) AS pct
FROM (SELECT unnest(winners) AS seat FROM matches WHERE valid AND status = 'COMPLETE')
GROUP BY seat
ORDER BY seat
"""),
        bar="wins",
    ),
    Stat(
        "par-gap",
        "Par: how far below par declarers finish",
        "For each contract (and the trick the analysis started from), the declarer's points "
        "against par — what the declarer could have made sure of with every hand known "
        "(kingrec analyse --db fills it): how often the declarer finished below par and by "
        "how much on average. Solved deals only; unsolved counts the deals past the budget.",
        _sql(f"""
SELECT contract,
       from_play // 4 + 1 AS from_trick,
       count(*) FILTER (WHERE solved AND actual IS NOT NULL) AS deals,
       count(*) FILTER (WHERE NOT solved) AS unsolved,
       count(*) FILTER (WHERE solved AND actual_points < par_points) AS below_par,
       round(100.0 * count(*) FILTER (WHERE solved AND actual_points < par_points)
             / nullif(count(*) FILTER (WHERE solved AND actual IS NOT NULL), 0), 1)
           AS below_par_pct,
       round(avg(par_points - actual_points) FILTER (WHERE solved), 1) AS avg_points_below
FROM deal_par
WHERE (seat = declarer OR seat IS NULL)
  AND {VALID}
GROUP BY contract, from_trick
ORDER BY contract, from_trick
"""),
        bar="avg_points_below",
        analysis=True,
    ),
    Stat(
        "costly-cards",
        "Par: the costliest cards per contract",
        "The three cards that gave away the most points against par in each contract "
        "(play_costs, from kingrec analyse --db), counted over the deals whose every play "
        "was priced; unpriced says how many deals of the contract were not (past the "
        "budget, or analysed with --par-only).",
        _sql(f"""
SELECT contract, card_name(card) AS card, costly_plays, points_given,
       coalesce(unpriced, 0) AS unpriced
FROM (
    SELECT c.contract, c.card,
           count(*) AS costly_plays,
           sum(c.cost_points) AS points_given,
           row_number() OVER (PARTITION BY c.contract
                              ORDER BY sum(c.cost_points) DESC, c.card) AS place
    FROM play_costs c
    SEMI JOIN (SELECT match_key, deal FROM deal_par WHERE costs_solved) p
        USING (match_key, deal)
    WHERE c.cost_points > 0 AND c.{VALID}
    GROUP BY c.contract, c.card
) LEFT JOIN (
    SELECT contract, count(DISTINCT {_DEAL_ID}) AS unpriced
    FROM deal_par
    WHERE NOT costs_solved AND {VALID}
    GROUP BY contract
) USING (contract)
WHERE place <= 3
ORDER BY contract, place
"""),
        bar="points_given",
        analysis=True,
    ),
    Stat(
        "rifki-keep",
        "Par: could the rıfkı holder have kept the king?",
        "Rıfkı deals by the trick the analysis started from: how often the seat dealt the "
        "king of hearts could have made sure of not taking it (its par is 0), and how often "
        "it took the king all the same. Solved deals only; unsolved counts the deals past "
        "the budget.",
        _sql("""
SELECT from_play // 4 + 1 AS from_trick,
       count(*) FILTER (WHERE p.solved) AS deals,
       count(*) FILTER (WHERE NOT p.solved) AS unsolved,
       count(*) FILTER (WHERE p.solved AND p.par = 0) AS could_keep,
       round(100.0 * count(*) FILTER (WHERE p.solved AND p.par = 0)
             / nullif(count(*) FILTER (WHERE p.solved), 0), 1) AS could_keep_pct,
       count(*) FILTER (WHERE p.solved AND p.par = 0 AND p.actual > 0) AS took_it_anyway
FROM deal_par p JOIN deals d USING (match_key, deal)
WHERE p.contract = 'RIFKI'
  AND list_contains([d.hand_0, d.hand_1, d.hand_2, d.hand_3][p.seat + 1], 37)
  AND p.match_key IN (SELECT match_key FROM matches WHERE valid)
GROUP BY from_trick
ORDER BY from_trick
"""),
        bar="could_keep_pct",
        analysis=True,
    ),
    Stat(
        "findings",
        "Findings in the stored records",
        "What kingrec validate found in the stored records, valid or not: each finding "
        "code, its severity, how often and in how many records.",
        _sql("""
SELECT code, severity, count(*) AS findings, count(DISTINCT match_key) AS records
FROM findings
GROUP BY code, severity
ORDER BY findings DESC, code
"""),
        bar="findings",
    ),
]

STATS: dict[str, Stat] = {s.name: s for s in _STATS}


def stat(name: str) -> Stat:
    """The stat called ``name`` (``QueryError`` naming the others when there is none)."""
    try:
        return STATS[name]
    except KeyError:
        raise QueryError(f"no stats named {name!r}; there are: {', '.join(STATS)}") from None


def run_stat(
    store: Store, name: str, *, timeout_s: float = 30.0, stop: QueryStop | None = None
) -> QueryResult:
    """Run the stat called ``name`` on ``store``: its rows, as ``Store.query`` gives them
    (``stop`` interrupts it, see ``kingrec.store.query.QueryStop``)."""
    return store.query(stat(name).sql, timeout_s=timeout_s, stop=stop)
