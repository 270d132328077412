"""``kingrec analyse --db``: par analysis kept in a real store, and the stats that read it.

Matches are simulated into a .krec file, stored with ``kingrec ingest``, analysed in the
store with the installed ``kingrec analyse --db`` and compared with what the library
(``kingrec.analysis``) gives for the same deals; the par stats are checked against numbers
counted in plain Python from those results and in the stock DuckDB CLI.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kingrec.analysis.batch import DealTask, analyse_deal
from kingrec.analysis.review import DealReview
from kingrec.boundary import ruleset_from_proto
from kingrec.cards import card_name
from kingrec.container import KrecWriter
from kingrec.contracts import Contract
from kingrec.rules import preset
from kingrec.simulate import simulate_match
from kingrec.store import Store
from kingrec.store.par import analyse_store
from kingrec.store.stats import STATS, run_stat, stat
from kingrec.v1 import record_pb2 as pb

KINGREC = str(Path(sys.executable).parent / "kingrec")
DUCKDB_CLI = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")
FROM_TRICK = 10  # from trick 10 a deal solves in milliseconds: no budget needed
NO_CLOCK = ("--budget-ms", "0")  # judged by no clock: the same on every machine
KING_OF_HEARTS = 2 * 13 + 11


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KINGREC_DB"}
    return subprocess.run([KINGREC, *args], capture_output=True, text=True, check=False, env=env)


def _matches() -> list[pb.Match]:
    return [simulate_match(preset("classic"), seed) for seed in (3, 4)]


def _filled(folder: Path) -> tuple[str, list[pb.Match]]:
    """A store holding the simulated matches (ingested with the CLI), not yet analysed."""
    matches = _matches()
    path = folder / "games.krec"
    with KrecWriter.open(path) as writer:
        for match in matches:
            writer.write_match(match)
    db = str(folder / "k.duckdb")
    ingested = run("ingest", str(path), "--db", db)
    assert ingested.returncode == 0, ingested.stderr
    return db, matches


def _library(matches: list[pb.Match], from_play: int) -> dict[tuple[int, int], DealReview]:
    """What kingrec.analysis gives each deal, keyed as the store keys it (match_key, deal)."""
    out: dict[tuple[int, int], DealReview] = {}
    for key, match in enumerate(matches, start=1):
        rules = ruleset_from_proto(match.ruleset)
        for number, deal in enumerate(match.deals, start=1):
            task = DealTask(deal.SerializeToString(), rules, number, from_play=from_play)
            result = analyse_deal(task)
            assert isinstance(result, DealReview)
            out[key, number] = result
    return out


Row = dict[str, Any]


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[Row]:
    cursor = con.execute(sql)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


@pytest.fixture(scope="module")
def analysed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[pb.Match]]:
    db, matches = _filled(tmp_path_factory.mktemp("par"))
    done = run("analyse", "--db", db, "--all", "--from-trick", str(FROM_TRICK), *NO_CLOCK)
    assert done.returncode == 0, done.stderr
    assert "analysed 40 deal(s) of 2 stored match(es)" in done.stdout
    assert "40 solved, 0 unsolved" in done.stdout
    return db, matches


def test_analyse_db_stores_each_seats_par_and_each_plays_cost_as_the_library_finds_them(
    analysed: tuple[str, list[pb.Match]],
) -> None:
    db, matches = analysed
    expected = _library(matches, 4 * (FROM_TRICK - 1))
    con = duckdb.connect(db, read_only=True)
    try:
        pars = _rows(con, "SELECT * FROM deal_par ORDER BY match_key, deal, seat")
        costs = _rows(con, "SELECT * FROM play_costs ORDER BY match_key, deal, play")
        # Joinable with the store's views: every priced play is a stored play of that card.
        joined = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE p.card = c.card AND p.seat = c.seat) "
            "FROM play_costs c JOIN plays p USING (match_key, deal, play)"
        ).fetchall()
    finally:
        con.close()
    assert len(pars) == 4 * len(expected)
    for row in pars:
        review = expected[row["match_key"], row["deal"]]
        seat = review.par.seats[row["seat"]]
        assert row["solved"] is True and row["costs_solved"] is True
        assert (row["par"], row["actual"]) == (seat.par, seat.actual)
        assert (row["par_points"], row["actual_points"]) == (seat.par_points, seat.actual_points)
        assert row["from_play"] == review.par.at_play
        assert row["nodes"] == review.par.stats.nodes
        assert row["contract"] == Contract(review.par.contract).name
        assert row["declarer"] == review.par.declarer
        assert (row["budget_ms"], row["budget_nodes"]) == (0, 0)
    want = [
        (key, cost.play, cost.seat, cost.card, cost.before, cost.after, cost.cost,
         cost.cost_points, list(cost.best))
        for key, review in sorted(expected.items())
        for cost in review.plays
    ]  # fmt: skip
    got = [
        ((r["match_key"], r["deal"]), r["play"], r["seat"], r["card"], r["before"], r["after"],
         r["cost_units"], r["cost_points"], r["best"])
        for r in costs
    ]  # fmt: skip
    assert got == want
    assert any(r["cost_units"] > 0 for r in costs)  # some card cost something
    assert any(r["nodes"] > 0 for r in pars)
    assert joined == [(len(costs), len(costs))]


def test_analysing_again_replaces_a_deals_rows_and_adds_none(tmp_path: Path) -> None:
    db, _ = _filled(tmp_path)
    base = ("analyse", "--db", db, *NO_CLOCK)
    first = run(*base, "--all", "--from-trick", "12")
    assert first.returncode == 0, first.stderr
    rows = "SELECT * FROM {} ORDER BY ALL"
    with Store.open(db, read_only=True) as store:
        before = {t: _rows(store.con, rows.format(t)) for t in ("deal_par", "play_costs")}
    assert len(before["deal_par"]) == 4 * 40
    match = _matches()[0]
    again = run(*base, "--match", match.match_id, "--from-trick", "11", "--deal", "2")
    assert again.returncode == 0, again.stderr
    assert "analysed 1 deal(s) of 1 stored match(es)" in again.stdout
    with Store.open(db, read_only=True) as store:
        after = {t: _rows(store.con, rows.format(t)) for t in ("deal_par", "play_costs")}

    def redone(row: Row) -> bool:
        return (row["match_key"], row["deal"]) == (1, 2)

    for table in ("deal_par", "play_costs"):  # every other deal's rows as they were
        assert [r for r in after[table] if not redone(r)] == [
            r for r in before[table] if not redone(r)
        ]
    new = [r for r in after["deal_par"] if redone(r)]
    assert len(new) == 4  # four seats, once each: replaced, not added
    assert {r["from_play"] for r in new} == {min(40, len(match.deals[1].plays))}
    review = _library([match], 40)[1, 2]
    assert len([r for r in after["play_costs"] if redone(r)]) == len(review.plays)


def test_analysing_on_two_processes_stores_the_same_rows(
    analysed: tuple[str, list[pb.Match]], tmp_path: Path
) -> None:
    db, _ = _filled(tmp_path)
    done = run(
        "analyse", "--db", db, "--all", "--from-trick", str(FROM_TRICK), "--jobs", "2", *NO_CLOCK
    )
    assert done.returncode == 0, done.stderr
    rows = "SELECT * EXCLUDE (analysed_at, search_ms) FROM {} ORDER BY ALL"
    for table in ("deal_par", "play_costs"):
        query = rows if table == "deal_par" else "SELECT * FROM {} ORDER BY ALL"
        with Store.open(db, read_only=True) as two, Store.open(analysed[0], read_only=True) as one:
            assert _rows(two.con, query.format(table)) == _rows(one.con, query.format(table))


def test_a_deal_past_its_budget_is_stored_unsolved_with_no_par_and_the_run_says_so(
    tmp_path: Path,
) -> None:
    db, _ = _filled(tmp_path)
    done = run("analyse", "--db", db, "--all", "--deal", "1", "--budget-nodes", "1", *NO_CLOCK)
    assert done.returncode == 1, done.stderr  # as kingrec analyse: some deal unsolved
    assert "0 solved, 2 unsolved" in done.stdout
    with Store.open(db, read_only=True) as store:
        rows = _rows(store.con, "SELECT * FROM deal_par ORDER BY match_key, seat")
        costs = store.count("play_costs")
    assert len(rows) == 8
    assert all(not r["solved"] and r["par"] is None and r["par_points"] is None for r in rows)
    assert all(not r["costs_solved"] and r["budget_nodes"] == 1 for r in rows)
    assert all(r["actual"] is not None for r in rows)  # the result as played is still known
    assert costs == 0


def test_an_interrupted_analysis_leaves_whole_deals_only(tmp_path: Path) -> None:
    db, _ = _filled(tmp_path)
    seen = 0

    def interrupt(*_: object) -> None:
        nonlocal seen
        seen += 1
        if seen == 7:
            raise KeyboardInterrupt

    with Store.open(db) as store, pytest.raises(KeyboardInterrupt):
        analyse_store(store, from_play=44, batch_deals=3, progress=interrupt)
    with Store.open(db, read_only=True) as store:
        per_deal = store.con.execute(
            "SELECT match_key, deal, count(*) FROM deal_par GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        stray = store.con.execute(
            "SELECT count(*) FROM play_costs ANTI JOIN deal_par USING (match_key, deal)"
        ).fetchall()
    assert per_deal == [(1, d, 4) for d in range(1, 7)]  # two whole batches, nothing more
    assert stray == [(0,)]


def test_analyse_db_refuses_files_unnamed_matches_and_unknown_ids_without_a_traceback(
    tmp_path: Path,
) -> None:
    db, _ = _filled(tmp_path)
    both = run("analyse", "--db", db, "--all", str(tmp_path / "games.krec"))
    assert both.returncode == 2 and "give FILES or --db, not both" in both.stderr
    unnamed = run("analyse", "--db", db)
    assert unnamed.returncode == 2 and "--all or --match ID" in unnamed.stderr
    nothing = run("analyse")
    assert nothing.returncode == 2 and "give FILES to analyse" in nothing.stderr
    unknown = run("analyse", "--db", db, "--match", "no-such-id", "--json")
    assert unknown.returncode == 2, unknown.stderr
    lines = [json.loads(line) for line in unknown.stdout.splitlines()]
    assert lines[0]["code"] == "NOT_FOUND" and "no-such-id" in lines[0]["message"]
    assert lines[-1]["type"] == "summary" and lines[-1]["deals"] == 0
    missing = run("analyse", "--db", str(tmp_path / "none" / "k.duckdb"), "--all")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    for result in (both, unnamed, nothing, unknown, missing):
        assert "Traceback" not in result.stderr
    with Store.open(db, read_only=True) as store:
        assert store.count("deal_par") == 0


def test_analyse_db_on_a_path_with_no_store_is_refused_as_stats_refuses_it_and_creates_nothing(
    tmp_path: Path,
) -> None:
    # A mistyped --db made an empty store there and said "analysed 0 deal(s)", exit 0.
    typo = tmp_path / "gmaes.duckdb"
    for args in (["--all"], ["--match", "sim-classic-1", "--json"]):
        result = run("analyse", "--db", str(typo), *args, *NO_CLOCK)
        assert (result.returncode, result.stdout) == (2, "")
        assert (
            result.stderr == f"kingrec: error: {typo}: no store there (run kingrec ingest first)\n"
        )
    stats = run("stats", "--db", str(typo))
    assert stats.returncode == 2 and stats.stderr.endswith(result.stderr.removeprefix("kingrec: "))
    env = {**os.environ, "KINGREC_DB": str(typo)}  # the default store, missing too
    default = subprocess.run(
        [KINGREC, "analyse", "--all", *NO_CLOCK], capture_output=True, text=True, env=env
    )
    assert default.returncode == 2 and "no store there" in default.stderr
    assert list(tmp_path.iterdir()) == []


def test_analyse_db_says_which_deal_numbers_no_stored_match_has(tmp_path: Path) -> None:
    db, matches = _filled(tmp_path)
    longest = max(len(m.deals) for m in matches)
    asked = ("--deal", str(longest + 9), "--deal", "2", "--deal", str(longest + 1))
    result = run("analyse", "--db", db, "--all", *asked, "--from-trick", "12", *NO_CLOCK)
    assert result.returncode == 0, result.stderr
    assert f"analysed {len(matches)} deal(s) of {len(matches)} stored match(es)" in result.stdout
    assert (
        f"kingrec: no stored match has deal {longest + 1}, {longest + 9}: the longest has "
        f"{longest} deal(s)" in result.stderr
    )
    none = run("analyse", "--db", db, "--all", "--deal", str(longest + 1), "--json", *NO_CLOCK)
    assert none.returncode == 0, none.stderr
    summary = json.loads(none.stdout.splitlines()[-1])
    assert (summary["deals"], summary["matches"], summary["longest"]) == (0, 2, longest)
    assert f"no stored match has deal {longest + 1}:" in none.stderr
    every = run("analyse", "--db", db, "--all", "--deal", "1", "--from-trick", "12", *NO_CLOCK)
    assert every.returncode == 0 and "no stored match has" not in every.stderr


def test_analyse_db_with_files_names_the_exact_commands_and_they_do_it(tmp_path: Path) -> None:
    _filled(tmp_path)  # games.krec (and a store beside it this test does not use)
    records = tmp_path / "games.krec"
    db = str(tmp_path / "new store.duckdb")  # a space: the commands must quote it
    asked = ("--from-trick", "12", "--deal", "1", "--deal", "3", "--par-only", *NO_CLOCK)
    refused = run("analyse", str(records), "--db", db, *asked)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    commands = [line.strip() for line in refused.stderr.splitlines() if line.startswith("  ")]
    assert commands == [
        shlex.join(["kingrec", "ingest", str(records), "--db", db]),
        shlex.join(
            [
                *("kingrec", "analyse", "--db", db, "--deal", "1", "--deal", "3"),
                *("--from-trick", "12", "--par-only", *NO_CLOCK, "--all"),
            ]
        ),
    ]
    assert not Path(db).exists()  # refused before anything was opened
    for command in commands:
        words = shlex.split(command)
        done = run(*words[1:])
        assert done.returncode == 0, done.stderr
    with Store.open(db, read_only=True) as store:
        deals = store.con.execute("SELECT DISTINCT deal FROM deal_par ORDER BY deal").fetchall()
    assert deals == [(1,), (3,)]


# -- the par stats --------------------------------------------------------------------------


def _pct(part: int, whole: int) -> float | None:
    return 100.0 * part / whole if whole else None  # unrounded: compared within the SQL's


def _par_gap(matches: list[pb.Match], reviews: dict[tuple[int, int], DealReview]) -> list[Row]:
    groups: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    order = {c.name: c.value for c in Contract}
    for review in reviews.values():
        declarer = review.par.seats[review.par.declarer]
        assert declarer.par_points is not None and declarer.actual_points is not None
        name = Contract(review.par.contract).name
        groups[name, review.par.at_play // 4 + 1].append(
            (declarer.par_points, declarer.actual_points)
        )
    out = []
    for (name, trick), pairs in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        below = sum(1 for p, a in pairs if a < p)
        out.append({
            "contract": name, "from_trick": trick, "deals": len(pairs), "unsolved": 0,
            "below_par": below, "below_par_pct": _pct(below, len(pairs)),
            "avg_points_below": sum(p - a for p, a in pairs) / len(pairs),
        })  # fmt: skip
    return out


def _costly_cards(matches: list[pb.Match], reviews: dict[tuple[int, int], DealReview]) -> list[Row]:
    given: dict[str, Counter[int]] = defaultdict(Counter)
    plays: dict[str, Counter[int]] = defaultdict(Counter)
    for review in reviews.values():
        name = Contract(review.par.contract).name
        for cost in review.plays:
            if cost.cost_points > 0:
                given[name][cost.card] += cost.cost_points
                plays[name][cost.card] += 1
    out = []
    for contract in Contract:
        ranked = sorted(given[contract.name].items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        out += [
            {"contract": contract.name, "card": card_name(card),
             "costly_plays": plays[contract.name][card], "points_given": points, "unpriced": 0}
            for card, points in ranked
        ]  # fmt: skip
    return out


def _rifki_keep(matches: list[pb.Match], reviews: dict[tuple[int, int], DealReview]) -> list[Row]:
    groups: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (key, number), review in reviews.items():
        if review.par.contract != Contract.RIFKI:
            continue
        deal = matches[key - 1].deals[number - 1]
        holder = deal.hands.index(KING_OF_HEARTS) // 13
        seat = review.par.seats[holder]
        assert seat.par is not None and seat.actual is not None
        groups[review.par.at_play // 4 + 1].append((seat.par, seat.actual))
    out = []
    for trick, pairs in sorted(groups.items()):
        keep = sum(1 for p, _ in pairs if p == 0)
        out.append({
            "from_trick": trick, "deals": len(pairs), "unsolved": 0, "could_keep": keep,
            "could_keep_pct": _pct(keep, len(pairs)),
            "took_it_anyway": sum(1 for p, a in pairs if p == 0 and a > 0),
        })  # fmt: skip
    return out


PAR_ORACLES = {"par-gap": _par_gap, "costly-cards": _costly_cards, "rifki-keep": _rifki_keep}


def test_the_par_stats_are_the_analysis_stats() -> None:
    assert set(PAR_ORACLES) == {s.name for s in STATS.values() if s.analysis}


@pytest.mark.parametrize("name", list(PAR_ORACLES))
def test_each_par_stat_gives_the_numbers_counted_from_the_library_results(
    analysed: tuple[str, list[pb.Match]], name: str
) -> None:
    db, matches = analysed
    reviews = _library(matches, 4 * (FROM_TRICK - 1))
    with Store.open(db, read_only=True) as store:
        result = run_stat(store, name)
        names = [n for n, _ in result.columns]
        got = [dict(zip(names, row, strict=True)) for b in result.batches() for row in _tuples(b)]
    assert got, name
    expected = PAR_ORACLES[name](matches, reviews)
    assert [list(r) for r in got] == [list(r) for r in expected]
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):  # floats within the SQL's rounding
        for column, value in want.items():
            if isinstance(value, float):
                assert abs(row[column] - value) <= 0.05 + 1e-9, (column, row, want)
            else:
                assert row[column] == value, (column, row, want)


def _tuples(batch: Any) -> list[tuple[Any, ...]]:
    columns = [batch.column(i).to_pylist() for i in range(batch.num_columns)]
    return list(zip(*columns, strict=True))


def test_the_par_stats_count_unsolved_deals_apart_and_never_as_a_result(tmp_path: Path) -> None:
    db, _ = _filled(tmp_path)
    done = run("analyse", "--db", db, "--all", "--budget-nodes", "1", *NO_CLOCK)
    assert done.returncode == 1
    with Store.open(db, read_only=True) as store:
        gap = _rows(store.con, stat("par-gap").sql)
        keep = _rows(store.con, stat("rifki-keep").sql)
        costly = _rows(store.con, stat("costly-cards").sql)
    assert sum(r["unsolved"] for r in gap) == 40
    assert all(r["deals"] == 0 and r["avg_points_below"] is None for r in gap)
    rifki = sum(1 for m in _matches() for d in m.deals if int(d.contract) == int(Contract.RIFKI))
    assert [(r["deals"], r["unsolved"], r["could_keep"]) for r in keep] == [(0, rifki, 0)]
    assert costly == []  # no deal was priced, so no card is named


@pytest.mark.skipif(DUCKDB_CLI is None, reason="the duckdb CLI (duckdb-cli) is not installed")
@pytest.mark.parametrize("name", list(PAR_ORACLES))
def test_each_par_stat_runs_in_the_stock_duckdb_cli_with_the_same_rows(
    analysed: tuple[str, list[pb.Match]], name: str
) -> None:
    db, _ = analysed
    assert DUCKDB_CLI is not None
    result = subprocess.run(
        [DUCKDB_CLI, "-csv", "-readonly", db, "-c", stat(name).sql],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    theirs = list(csv.DictReader(io.StringIO(result.stdout)))
    with Store.open(db, read_only=True) as store:
        ours = _rows(store.con, stat(name).sql)
    assert len(theirs) == len(ours) > 0
    for their, mine in zip(theirs, ours, strict=True):
        assert list(their) == list(mine)
        assert all(their[k] == str(v) for k, v in mine.items() if not isinstance(v, float))
