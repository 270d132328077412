"""``kingrec.store.stats``: every ready answer checked against the records themselves.

A real store is filled with simulated matches under several presets and with every sample
(valid, invalid, damaged), and each stat's rows are compared with the same numbers counted
in plain Python straight from the records that ``kingrec.validate`` finds valid — and with
what the stock DuckDB CLI (1.5) prints for the same SQL.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from statistics import mean
from typing import Any

import pyarrow as pa
import pytest

import kingrec
from kingrec.boundary import ruleset_from_proto
from kingrec.cards import card_name
from kingrec.container import KrecWriter
from kingrec.contracts import Contract
from kingrec.errors import QueryError, RecordFileError
from kingrec.game import DealPlay
from kingrec.records import Record
from kingrec.rules import preset
from kingrec.simulate import simulate_matches
from kingrec.store import Store
from kingrec.store.stats import STATS, run_stat, stat
from kingrec.v1 import record_pb2 as pb

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
DUCKDB_CLI = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")
KING_OF_HEARTS = 2 * 13 + 11
FINISHED = (pb.DEAL_END_ALL_TRICKS, pb.DEAL_END_EARLY)

Row = dict[str, Any]


class Built:
    """The store and the valid records it was filled from (each stored once)."""

    def __init__(self, path: str, valid: list[pb.Match], all_matches: int) -> None:
        self.path = path
        self.valid = valid
        self.all_matches = all_matches


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    folder = tmp_path_factory.mktemp("stats")
    sim = folder / "sim.krec"
    with KrecWriter.open(sim) as writer:
        for name, count in (("classic", 14), ("rotation", 8), ("short", 10), ("kahvehane", 4)):
            for match in simulate_matches(preset(name), count, seed=len(name)):
                writer.write_match(match)
    files = [sim, *sorted(SAMPLES.glob("*/*.krec")), *sorted(SAMPLES.glob("*/*.jsonl"))]
    db = str(folder / "k.duckdb")
    seen: set[bytes] = set()
    valid: list[pb.Match] = []
    with Store.open(db) as store:
        for path in files:
            try:
                store.ingest_file(str(path))
            except RecordFileError:
                continue
            for item in kingrec.read_records(str(path)):
                if not isinstance(item, Record):
                    continue
                key = item.match.SerializeToString(deterministic=True)
                if key in seen:
                    continue
                seen.add(key)
                if kingrec.validate(item.match).valid:
                    valid.append(item.match)
        stored = store.count("matches")
    assert stored == len(seen)
    return Built(db, valid, stored)


def _rows(built: Built, name: str) -> list[Row]:
    with Store.open(built.path, read_only=True) as store:
        result = run_stat(store, name)
        names = [n for n, _ in result.columns]
        table = pa.Table.from_batches(list(result.batches()))
    assert table.column_names == names if table.num_rows else True
    rows: list[Row] = table.to_pylist()
    return rows


def _deals(built: Built) -> list[pb.Deal]:
    return [d for m in built.valid for d in m.deals if d.end in FINISHED]


def _contract(deal: pb.Deal) -> str:
    return Contract(deal.contract).name


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole


def _order(contract: str) -> int:
    return int(Contract[contract])


# -- each stat counted from the records -----------------------------------------------------------


def _contracts(built: Built) -> list[Row]:
    by: dict[str, list[pb.Deal]] = defaultdict(list)
    for deal in _deals(built):
        by[_contract(deal)].append(deal)
    total = sum(len(v) for v in by.values())
    return [
        {
            "contract": c,
            "deals": len(ds),
            "pct": _pct(len(ds), total),
            "early_pct": _pct(sum(d.end == pb.DEAL_END_EARLY for d in ds), len(ds)),
            "avg_tricks": mean(len(d.plays) // 4 for d in ds),
        }
        for c, ds in sorted(by.items(), key=lambda kv: _order(kv[0]))
    ]


def _rifki_end(built: Built) -> list[Row]:
    ends = Counter(len(d.plays) // 4 for d in _deals(built) if d.contract == pb.CONTRACT_RIFKI)
    total, running, out = sum(ends.values()), 0, []
    for trick in sorted(ends):
        running += ends[trick]
        out.append(
            {"trick": trick, "deals": ends[trick], "pct": _pct(ends[trick], total),
             "cumulative_pct": _pct(running, total)}
        )  # fmt: skip
    return out


def _points(built: Built) -> list[Row]:
    by: dict[tuple[str, int], list[int]] = defaultdict(list)
    for deal in _deals(built):
        for seat in range(4):
            by[_contract(deal), seat].append(deal.claimed_scores[seat])
    return [
        {"contract": c, "seat": s, "deals": len(v), "avg_points": mean(v)}
        for (c, s), v in sorted(by.items(), key=lambda kv: (_order(kv[0][0]), kv[0][1]))
    ]


def _declarer(built: Built) -> list[Row]:
    by: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for deal in _deals(built):
        own = deal.claimed_scores[deal.declarer]
        by[_contract(deal)].append((own, (sum(deal.claimed_scores) - own) / 3))
    out = []
    for c, pairs in sorted(by.items(), key=lambda kv: _order(kv[0])):
        mine, others = mean(p[0] for p in pairs), mean(p[1] for p in pairs)
        out.append(
            {"contract": c, "deals": len(pairs), "declarer_avg": mine, "others_avg": others,
             "advantage": mine - others}
        )  # fmt: skip
    return out


def _koz_trump(built: Built) -> list[Row]:
    by: dict[int, list[tuple[bool, int]]] = defaultdict(list)
    for deal in _deals(built):
        if deal.contract != pb.CONTRACT_KOZ:
            continue
        hand = deal.hands[13 * deal.declarer : 13 * deal.declarer + 13]
        lengths = [sum(1 for c in hand if c // 13 == suit) for suit in range(4)]
        held = lengths[deal.trump - pb.SUIT_CLUBS]
        by[held].append((held == max(lengths), deal.claimed_scores[deal.declarer]))
    total = sum(len(v) for v in by.values())
    return [
        {"trumps_held": held, "deals": len(v), "pct": _pct(len(v), total),
         "longest_suit_pct": _pct(sum(x[0] for x in v), len(v)),
         "declarer_avg": mean(x[1] for x in v)}
        for held, v in sorted(by.items())
    ]  # fmt: skip


def _forced(built: Built) -> list[Row]:
    plays: Counter[str] = Counter()
    forced: Counter[str] = Counter()
    for match in built.valid:
        rules = ruleset_from_proto(match.ruleset)
        for deal in match.deals:
            if not deal.plays:
                continue
            trump = deal.trump - pb.SUIT_CLUBS if deal.contract == pb.CONTRACT_KOZ else -1
            game = DealPlay(rules, deal.hands, deal.declarer, deal.contract, trump)
            revoke = deal.revoke_play if deal.HasField("revoke_play") else -1
            for n, card in enumerate(deal.plays):
                plays[_contract(deal)] += 1
                forced[_contract(deal)] += len(game.legal_cards()) == 1
                if n == revoke:  # a penalized revoke: the deal ends on it
                    break
                game.push(card)
    return [
        {"contract": c, "plays": n, "forced": forced[c], "forced_pct": _pct(forced[c], n)}
        for c, n in sorted(plays.items(), key=lambda kv: _order(kv[0]))
    ]


def _most_led(built: Built) -> list[Row]:
    leads: dict[str, Counter[int]] = defaultdict(Counter)
    for match in built.valid:
        for deal in match.deals:
            leads[_contract(deal)].update(deal.plays[0::4])
    out = []
    for c, counts in sorted(leads.items(), key=lambda kv: _order(kv[0])):
        card, n = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        out.append(
            {"contract": c, "card": card_name(card), "leads": n,
             "pct": _pct(n, counts.total())}
        )  # fmt: skip
    return out


def _rifki_taker(built: Built) -> list[Row]:
    """Trick winners worked out by hand: in rıfkı (no trumps) the highest card of the suit
    led takes the trick, and its player leads the next."""
    taken: Counter[int] = Counter()
    for match in built.valid:
        for deal in match.deals:
            if deal.contract != pb.CONTRACT_RIFKI:
                continue
            leader = deal.declarer
            for first in range(0, len(deal.plays) - 3, 4):
                cards = deal.plays[first : first + 4]
                best = max((c for c in cards if c // 13 == cards[0] // 13), key=lambda c: c % 13)
                winner = (leader + cards.index(best)) % 4
                if KING_OF_HEARTS in cards:
                    taken[(winner - deal.declarer) % 4] += 1
                leader = winner
    total = sum(taken.values())
    return [
        {"from_declarer": s, "deals": n, "pct": _pct(n, total)} for s, n in sorted(taken.items())
    ]


def _winners(built: Built) -> list[Row]:
    complete = [m for m in built.valid if m.status == pb.MATCH_STATUS_COMPLETE]
    wins: Counter[int] = Counter()
    for match in complete:
        top = max(match.claimed_totals)
        wins.update(s for s in range(4) if match.claimed_totals[s] == top)
    return [{"seat": s, "wins": n, "pct": _pct(n, len(complete))} for s, n in sorted(wins.items())]


def _findings(built: Built) -> list[Row]:
    """Every stored record's findings as validate reports them (valid or not)."""
    with Store.open(built.path, read_only=True) as store:
        records = store.con.execute("SELECT record FROM records").fetchall()
    counts: Counter[tuple[str, str]] = Counter()
    holders: dict[tuple[str, str], set[int]] = defaultdict(set)
    for n, (raw,) in enumerate(records):
        report = kingrec.validate(pb.Match.FromString(raw))
        for finding in report.findings:
            key = (finding.code, str(finding.severity))
            counts[key] += 1
            holders[key].add(n)
    with Store.open(built.path, read_only=True) as store:  # the one finding the store makes
        reused = store.con.execute("SELECT count(*) FROM matches WHERE id_reused").fetchall()
    if reused[0][0]:
        counts["MATCH_ID_REUSED", "warning"] += reused[0][0]
        holders["MATCH_ID_REUSED", "warning"] = set(range(-reused[0][0], 0))
    return [
        {"code": code, "severity": sev, "findings": n, "records": len(holders[code, sev])}
        for (code, sev), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0]))
    ]


ORACLES: dict[str, Callable[[Built], list[Row]]] = {
    "contracts": _contracts,
    "rifki-end": _rifki_end,
    "points": _points,
    "declarer": _declarer,
    "koz-trump": _koz_trump,
    "forced": _forced,
    "most-led": _most_led,
    "rifki-taker": _rifki_taker,
    "winners": _winners,
    "findings": _findings,
}


def _same(got: list[Row], expected: list[Row]) -> None:
    """Equal rows; a float within the SQL's rounding (0.05 for one decimal, 0.005 for two)."""
    assert [list(r) for r in got] == [list(r) for r in expected]
    assert len(got) == len(expected)
    for row, want in zip(got, expected, strict=True):
        for name, value in want.items():
            if isinstance(value, float) or isinstance(row[name], float):
                assert abs(row[name] - value) <= 0.05 + 1e-9, (name, row, want)
            else:
                assert row[name] == value, (name, row, want)


# The par stats read kingrec analyse --db's tables: tests/test_store_par.py checks them.
RECORD_STATS = [s.name for s in STATS.values() if not s.analysis]


def test_every_stat_is_checked_here() -> None:
    assert set(ORACLES) == set(RECORD_STATS)


@pytest.mark.parametrize("name", RECORD_STATS)
def test_each_stat_gives_the_numbers_counted_from_the_records(built: Built, name: str) -> None:
    got = _rows(built, name)
    assert got, name  # every question has an answer in this store
    _same(got, ORACLES[name](built))


def test_the_store_holds_invalid_records_the_stats_leave_out(built: Built) -> None:
    assert built.all_matches - len(built.valid) > 30
    assert sum(r["deals"] for r in _rows(built, "contracts")) == len(_deals(built))


@pytest.mark.skipif(DUCKDB_CLI is None, reason="the duckdb CLI (duckdb-cli) is not installed")
@pytest.mark.parametrize("name", RECORD_STATS)
def test_each_stat_runs_in_the_stock_duckdb_cli_with_the_same_rows(built: Built, name: str) -> None:
    assert DUCKDB_CLI is not None
    result = subprocess.run(
        [DUCKDB_CLI, "-csv", "-readonly", built.path, "-c", stat(name).sql],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    ours = _rows(built, name)
    assert len(rows) == len(ours) > 0
    for theirs, mine in zip(rows, ours, strict=True):
        assert list(theirs) == list(mine)
        for column, value in mine.items():
            if isinstance(value, float):
                assert float(theirs[column]) == pytest.approx(value), column
            else:
                assert theirs[column] == str(value), column


def test_an_unknown_stat_names_the_known_ones() -> None:
    with pytest.raises(QueryError, match="no stats named 'nope'; there are: contracts, "):
        stat("nope")


def test_each_stat_is_documented() -> None:
    for item in STATS.values():
        assert item.title and len(item.description) > 40
        assert item.sql.lstrip().upper().startswith("SELECT")
        assert item.bar is None or item.bar in item.sql
