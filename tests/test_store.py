"""The DuckDB store (kingrec.store): records in, rows out, on real DuckDB files."""

from __future__ import annotations

import gc
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from array import array
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from corpus.hostile import varint

from kingrec import _twins
from kingrec.container import KrecWriter
from kingrec.errors import (
    QueryError,
    QueryLimitError,
    QueryRefusedError,
    RecordFileError,
    StoreError,
    StoreVersionError,
)
from kingrec.fastcheck import _core_params
from kingrec.findings import MatchReport
from kingrec.rules import PRESETS, RevokeRule, preset
from kingrec.simulate import simulate_match
from kingrec.store import Store
from kingrec.store.columns import arrow_tables
from kingrec.store.packed import PACKED
from kingrec.store.schema import RECORD_CHUNK, SCHEMA_VERSION, VERDICTS
from kingrec.v1 import record_pb2 as pb
from kingrec.validation import validate_file

from rulesets import HOUSE

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
DUCKDB_CLI = shutil.which("duckdb", path=str(Path(sys.executable).parent)) or shutil.which("duckdb")


def _krec(path: Path, matches: list[pb.Match]) -> Path:
    with KrecWriter.open(path) as writer:
        for m in matches:
            writer.write_match(m)
    return path


def _rows(store: Store, sql: str) -> list[tuple[Any, ...]]:
    return store.con.execute(sql).fetchall()


# -- the two column builders build the same tables ------------------------------------------


def _edge_matches() -> list[pb.Match]:
    """Played matches of every kind, and invalid ones of the kinds the builders must carry."""
    out = [
        simulate_match(rules, seed)
        for seed, rules in enumerate([*PRESETS.values(), *HOUSE.values()])
    ]
    out.append(simulate_match(preset("classic"), 3, abandon_after=7))
    out.append(
        simulate_match(preset("classic").replace(revoke=RevokeRule.PENALIZE), 4, revoke_in_deal=2)
    )
    broken = pb.Match()
    broken.CopyFrom(out[0])
    plays = bytearray(broken.deals[0].plays)
    plays[0], plays[2] = plays[2], plays[0]
    broken.deals[0].plays = bytes(plays)
    broken.deals[1].plays = broken.deals[1].plays[:9] + b"\x70" + broken.deals[1].plays[10:]
    broken.deals[2].hands = broken.deals[2].hands[:50]
    broken.deals[3].contract = 9  # type: ignore[assignment]
    broken.deals[4].declarer = 7
    broken.deals[5].plays += broken.deals[5].plays[:3]
    broken.deals[6].think_ms[:] = broken.deals[6].think_ms[:5]
    broken.deals[7].trump = pb.SUIT_HEARTS
    out.append(broken)
    # Koz deals whose 52 dealt cards are no deck: the declarer's trumps are still counted,
    # a card dealt twice twice, a byte that is no card not at all.
    repeats = pb.Match()
    repeats.CopyFrom(out[0])
    for n, deal in enumerate(repeats.deals[:4]):
        deal.contract = pb.CONTRACT_KOZ
        deal.trump = pb.SUIT_SPADES if n % 2 else pb.SUIT_HEARTS
        hands = bytearray(deal.hands)
        at = 13 * (deal.declarer % 4) + n
        hands[at] = hands[at + 1] if n < 2 else 60 + n
        deal.hands = bytes(hands)
    out.append(repeats)
    bad_rules = pb.Match()
    bad_rules.CopyFrom(out[1])
    bad_rules.ruleset.CopyFrom(pb.Ruleset(preset="nobody-knows"))
    out.append(bad_rules)
    return out


@pytest.mark.skipif(_twins.COMPILED is None, reason="the compiled twins are not built")
def test_the_compiled_and_python_builders_give_identical_tables() -> None:
    assert _twins.COMPILED is not None
    compiled = _twins.COMPILED.columns.ColumnBuilder(_core_params)
    python = _twins.PYTHON.columns.ColumnBuilder(_core_params)
    for key, match in enumerate(_edge_matches(), 1):
        payload = match.SerializeToString()
        assert compiled.add(payload, key) >= 0
        python.add(payload, key)
    fast, slow = arrow_tables(compiled.take()), arrow_tables(python.take())
    for table in fast:
        fast_rows, slow_rows = fast[table].to_pylist(), slow[table].to_pylist()
        for name in ("ruleset",):  # indices into each builder's own list of rulesets
            for row in fast_rows + slow_rows:
                row.pop(name, None)
        assert fast_rows == slow_rows, table
    assert fast["plays"].num_rows > 10_000


def _damaged_plays(rng: random.Random, match: pb.Match) -> pb.Match:
    """``match`` with the plays of its deals damaged at random: cards swapped (not held,
    not following), a card repeated or recorded twice in a trick, a byte that is no card,
    plays cut short or run on, and revoke marks at random plays, legal ones included."""
    out = pb.Match()
    out.CopyFrom(match)
    for deal in out.deals:
        plays = bytearray(deal.plays)
        kind = rng.randrange(7)
        if kind == 0 and len(plays) > 1:
            i, j = rng.randrange(len(plays)), rng.randrange(len(plays))
            plays[i], plays[j] = plays[j], plays[i]
        elif kind == 1 and plays:
            plays[rng.randrange(len(plays))] = rng.randrange(52)
        elif kind == 2 and plays:
            plays[rng.randrange(len(plays))] = rng.choice([52, 63, 64, 255])
        elif kind == 3:
            del plays[rng.randrange(len(plays) + 1) :]
        elif kind == 4:
            plays += bytes(rng.randrange(52) for _ in range(rng.randrange(1, 9)))
        if rng.random() < 0.4 and plays:
            deal.revoke_play = rng.randrange(len(plays) + 2)
        deal.plays = bytes(plays)
    return out


@pytest.mark.skipif(_twins.COMPILED is None, reason="the compiled twins are not built")
def test_the_builders_replay_damaged_plays_and_revoke_marks_alike_under_every_ruleset() -> None:
    assert _twins.COMPILED is not None
    rng = random.Random(2026)
    compiled = _twins.COMPILED.columns.ColumnBuilder(_core_params)
    python = _twins.PYTHON.columns.ColumnBuilder(_core_params)
    rulesets = [*PRESETS.values(), *HOUSE.values()]
    rulesets += [rules.replace(revoke=RevokeRule.PENALIZE) for rules in rulesets]
    key = 0
    for seed, rules in enumerate(rulesets):
        for _ in range(3):
            key += 1
            payload = _damaged_plays(rng, simulate_match(rules, seed)).SerializeToString()
            assert compiled.add(payload, key) >= 0
            python.add(payload, key)
    fast, slow = arrow_tables(compiled.take()), arrow_tables(python.take())
    for table in ("deals", "tricks", "plays", "matches"):
        fast_rows, slow_rows = fast[table].to_pylist(), slow[table].to_pylist()
        for row in fast_rows + slow_rows:
            row.pop("ruleset", None)  # indices into each builder's own list of rulesets
        assert fast_rows == slow_rows, table
    ends = set(fast["deals"].column("ended").to_pylist())
    assert {"REVOKE", "UNREADABLE", "INCOMPLETE", "ALL_TRICKS", "EARLY"} <= ends, ends
    low, bits = next((low, bits) for name, low, bits in PACKED["play_code"] if name == "broke")
    verdicts = {
        code >> low & (1 << bits) - 1 for code in fast["plays"].column("play_code").to_pylist()
    }
    broken = {VERDICTS[verdict - 1] for verdict in verdicts if verdict}  # 0: a legal play
    assert {"NOT_IN_HAND", "MUST_FOLLOW_SUIT", "REVOKE_MARK_ON_LEGAL_PLAY"} <= broken, broken


@pytest.mark.skipif(_twins.COMPILED is None, reason="the compiled twins are not built")
def test_columns_of_many_megabytes_in_mapped_huge_page_blocks_keep_every_byte() -> None:
    # Past 2 MB a compiled column moves into a block mapped from the kernel (huge pages), is
    # grown by remapping and, once its table is let go of, kept for the next batch. 400
    # classic matches make ~390,000 plays (3 MB of play codes): built in one batch, twice
    # over the same blocks, they are the rows of the same matches built 40 at a time (each
    # column under 2 MB, as the other tests build them).
    assert _twins.COMPILED is not None
    payloads = [simulate_match(preset("classic"), s).SerializeToString() for s in range(400)]
    small = _twins.COMPILED.columns.ColumnBuilder(_core_params)
    parts = []
    for first in range(0, len(payloads), 40):
        for key in range(first, first + 40):
            small.add(payloads[key], key + 1)
        parts.append(arrow_tables(small.take()))
    want = {table: pa.concat_tables([part[table] for part in parts]) for table in parts[0]}
    big = _twins.COMPILED.columns.ColumnBuilder(_core_params)
    for _ in range(2):  # the second batch in the blocks the first one's tables let go of
        for key, payload in enumerate(payloads, 1):
            assert big.add(payload, key) >= 0
        got = arrow_tables(big.take())
        assert got["plays"].column("play_code").nbytes > 2 << 20
        for table in want:
            assert got[table].equals(want[table]), table
        del got
        gc.collect()


def test_the_deal_code_of_plays_and_tricks_comes_once_per_deal_and_goes_in_run_end_encoded(
    twins: _twins.Twins,
) -> None:
    # One value per deal instead of a copy per play: a classic batch is ~60 MB smaller. Each
    # row still reads its own deal's code (the packed match key and deal number say whose).
    matches = _edge_matches()
    builder = twins.columns.ColumnBuilder(_core_params)
    for key, match in enumerate(matches, 1):
        builder.add(match.SerializeToString(), key)
    taken = builder.take()
    tables = arrow_tables(taken)
    layout = {name: (low, bits) for name, low, bits in PACKED["deal_code"]}
    deals = tables["deals"].to_pylist()
    played = {(d["match_key"], d["deal"]): d["plays"] for d in deals}
    for name in ("plays", "tricks"):
        column = tables[name].column("deal_code").combine_chunks()
        assert pa.types.is_run_end_encoded(column.type)
        runs = array("Q", bytes(taken[name]["deal_code"])).tolist()
        assert len(column.values) == len(runs) == len(set(runs)) < len(column)  # one per deal
        whose = [
            tuple((code >> layout[f][0]) & ((1 << layout[f][1]) - 1) for f in ("match_key", "deal"))
            for code in column.to_pylist()
        ]
        assert sorted(whose) == whose and len(whose) == tables[name].num_rows
        if name == "plays":  # each deal's run is as long as the plays stored of it
            counts = {deal: whose.count(deal) for deal in set(whose)}
            assert counts == {deal: n for deal, n in played.items() if n}


def test_add_many_builds_what_add_builds_one_record_at_a_time(twins: _twins.Twins) -> None:
    # add_many is how an ingest fills a builder (one call a batch, off the GIL when
    # compiled); records the compiled reader does not understand are left out, by position.
    payloads = [m.SerializeToString() for m in _edge_matches()]
    payloads.insert(3, b"\xff\xff not a match")
    keys = list(range(10, 10 + len(payloads)))
    one = twins.columns.ColumnBuilder(_core_params)
    pairs = enumerate(zip(payloads, keys, strict=True))
    left_by_one = [i for i, (p, k) in pairs if i == 3 or one.add(p, k) < 0]
    many = twins.columns.ColumnBuilder(_core_params)
    readable = payloads if twins is _twins.COMPILED else payloads[:3] + payloads[4:]
    left = many.add_many(readable, keys if twins is _twins.COMPILED else keys[:3] + keys[4:])
    assert left == (left_by_one if twins is _twins.COMPILED else [])
    assert many.take_rulesets() == one.take_rulesets()
    got, want = arrow_tables(many.take()), arrow_tables(one.take())
    for table in want:
        assert got[table].to_pylist() == want[table].to_pylist(), table


def test_add_many_refuses_what_is_not_a_payload_and_a_key_each_and_appends_nothing(
    twins: _twins.Twins,
) -> None:
    payload = _edge_matches()[0].SerializeToString()
    builder = twins.columns.ColumnBuilder(_core_params)
    with pytest.raises(ValueError, match="2 payloads but 1 keys"):
        builder.add_many([payload, payload], [1])
    with pytest.raises((TypeError, OverflowError)):
        builder.add_many([payload, payload], [1, -1])  # no key below 0
    with pytest.raises(TypeError, match="bytes"):
        builder.add_many([payload, bytearray(payload)], [1, 2])
    assert all(t.num_rows == 0 for t in arrow_tables(builder.take()).values())


def test_a_builder_filled_batch_after_batch_gives_each_batch_the_tables_of_a_new_one(
    twins: _twins.Twins,
) -> None:
    # An ingest fills one builder batch after batch, and the compiled one reuses the memory of
    # columns the tables are done with: no batch may show another batch's rows or rulesets.
    matches = [m.SerializeToString() for m in _edge_matches()]
    reused = twins.columns.ColumnBuilder(_core_params)
    for batch in (matches, matches[3:6], matches[::-1] + matches):
        for key, payload in enumerate(batch, 1):
            reused.add(payload, key)
        got, got_rulesets = arrow_tables(reused.take()), reused.take_rulesets()
        fresh = twins.columns.ColumnBuilder(_core_params)
        for key, payload in enumerate(batch, 1):
            fresh.add(payload, key)
        want, want_rulesets = arrow_tables(fresh.take()), fresh.take_rulesets()
        assert got_rulesets == want_rulesets
        for table in want:
            assert got[table].to_pylist() == want[table].to_pylist(), table
        del got, want  # their columns' memory goes back for the next batch
        gc.collect()


# -- ingest ----------------------------------------------------------------------------------


def _with_cut_auto_plays(match: pb.Match) -> bytes:
    """``match``'s wire bytes with its first deal's auto plays a varint cut short (a last
    byte that says more follows): bytes protobuf refuses but a reader of fields may pass."""
    head = pb.Match()
    head.CopyFrom(match)
    del head.deals[:]
    payload = head.SerializeToString()
    for n, deal in enumerate(match.deals):
        raw = deal.SerializeToString() + (b"\x4a\x01\x80" if n == 0 else b"")
        payload += b"\x42" + varint(len(raw)) + raw
    return payload


def test_a_record_with_its_auto_plays_cut_short_is_rejected_and_the_ingest_ends(
    tmp_path: Path,
) -> None:
    # The compiled builder builds a batch while it is judged, the damaged record too: its
    # reader of auto plays looped for ever on a varint cut short (kingrec ingest hung).
    good = [simulate_match(preset("classic"), seed) for seed in range(3)]
    path = tmp_path / "cut.krec"
    with KrecWriter.open(path) as writer:
        writer.write(good[0].SerializeToString())
        writer.write(_with_cut_auto_plays(good[1]))
        writer.write(good[2].SerializeToString())
    db = tmp_path / "k.duckdb"
    kingrec = Path(sys.executable).parent / "kingrec"
    done = subprocess.run(
        [str(kingrec), "ingest", "--no-progress", "--db", str(db), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr  # a record rejected: the file is damaged
    assert "Traceback" not in done.stderr
    with Store.open(str(db), read_only=True) as store:
        assert _rows(store, "SELECT match_id FROM matches ORDER BY match_key") == [
            (good[0].match_id,),
            (good[2].match_id,),
        ]
        assert _rows(store, "SELECT frame FROM damage") == [(1,)]


def test_every_sample_is_stored_as_validate_judges_it(tmp_path: Path, twins: _twins.Twins) -> None:
    """Valid records stored, invalid ones stored with their findings, damage listed."""
    invalid = 0
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        for path in sorted(SAMPLES.glob("*/*")):
            if path.suffix not in (".krec", ".jsonl"):
                continue
            try:
                judged = list(validate_file(str(path), twins=twins))
            except RecordFileError:  # not a record file at all: the store refuses it too
                with pytest.raises(RecordFileError):
                    store.ingest_file(str(path), twins=twins)
                continue
            reports = [r for r in judged if isinstance(r, MatchReport)]
            summary = store.ingest_file(str(path), twins=twins)
            assert summary.stored + summary.duplicates >= sum(r.valid for r in reports), path
            assert summary.stored_invalid == sum(not r.valid for r in reports), path
            assert summary.damaged == len(judged) - len(reports), path
            invalid += summary.stored_invalid
        assert _rows(store, "SELECT count(*) FROM matches WHERE NOT valid")[0][0] == invalid > 30
        codes = {r[0] for r in _rows(store, "SELECT DISTINCT code FROM findings")}
        assert {"MUST_RUFF", "NOT_IN_HAND", "BAD_DECK", "RULESET_INVALID"} <= codes
        assert _rows(store, "SELECT count(*) FROM damage")[0][0] >= 2


def test_a_second_ingest_stores_nothing_twice(tmp_path: Path) -> None:
    path = _krec(tmp_path / "m.krec", [simulate_match(preset("short"), s) for s in range(30)])
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        first = store.ingest_file(str(path), batch_matches=7)
        counts = {t: store.count(t) for t in ("matches", "deals", "tricks", "plays_base")}
        again = store.ingest_file(str(path), batch_matches=7)
        assert (first.stored, first.duplicates) == (30, 0)
        assert (again.stored, again.duplicates) == (0, 30)
        assert {t: store.count(t) for t in counts} == counts
        assert counts["deals"] == 30 * 8


def test_a_different_record_under_a_known_id_is_stored_and_flagged(tmp_path: Path) -> None:
    match = simulate_match(preset("short"), 1)
    other = pb.Match()
    other.CopyFrom(match)
    other.metadata.site = "another table"
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        (first,) = store.ingest_matches([match], source="a")
        (second,) = store.ingest_matches([other], source="b")
        assert first.status == "stored" and second.status == "stored"
        assert second.report is not None
        assert [f.code for f in second.report.findings] == ["MATCH_ID_REUSED"]
        rows = _rows(store, "SELECT id_reused, warnings FROM matches ORDER BY match_key")
        assert rows == [(False, 0), (True, 1)]
        assert store.get_match(match.match_id) == match.SerializeToString(deterministic=True)


def test_ids_reused_within_a_batch_are_flagged_after_the_first_and_repeats_are_duplicates(
    tmp_path: Path,
) -> None:
    known, fresh = simulate_match(preset("short"), 1), simulate_match(preset("short"), 2)

    def at(match: pb.Match, site: str) -> pb.Match:
        out = pb.Match()
        out.CopyFrom(match)
        out.metadata.site = site
        return out

    batch = [
        fresh,
        at(known, "b"),  # the id stored before: flagged
        at(fresh, "c"),  # the id met above in this batch: flagged
        fresh,  # the same record again: a duplicate
        at(fresh, "c"),  # and again
        simulate_match(preset("short"), 3),
    ]
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        store.ingest_matches([known], source="a")
        verdicts = store.ingest_matches(batch, source="b")
        assert [v.status for v in verdicts] == ["stored"] * 3 + ["duplicate"] * 2 + ["stored"]
        assert [v.match_id for v in verdicts] == [m.match_id for m in batch]
        codes = [[f.code for f in v.report.findings] if v.report else None for v in verdicts]
        assert codes == [[], ["MATCH_ID_REUSED"], ["MATCH_ID_REUSED"], None, None, []]
        rows = _rows(store, "SELECT id_reused, warnings, valid FROM matches ORDER BY match_key")
        assert rows == [(False, 0, True), (False, 0, True)] + [(True, 1, True)] * 2 + [
            (False, 0, True)
        ]


def test_rows_carry_what_the_questions_need(tmp_path: Path) -> None:
    match = simulate_match(preset("classic"), 12)
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        store.ingest_matches([match], source="test")
        deals = _rows(
            store,
            "SELECT deal, contract, declarer, ended, score_0, score_1, score_2, score_3, hand_0 "
            "FROM deals ORDER BY deal",
        )
        for row, deal in zip(deals, match.deals, strict=True):
            assert row[0] == deal.number
            assert row[1] == pb.Contract.Name(deal.contract).removeprefix("CONTRACT_")
            assert row[2] == deal.declarer
            assert list(row[4:8]) == list(deal.claimed_scores)
            assert list(row[8]) == list(deal.hands[:13])
        plays = _rows(
            store,
            "SELECT deal, play, card, trick, position, seat, took, legal FROM plays "
            "ORDER BY deal, play",
        )
        assert len(plays) == sum(len(d.plays) for d in match.deals)
        assert all(p[3] == p[1] // 4 + 1 and p[4] == p[1] % 4 for p in plays)
        assert all(1 <= p[7] <= 13 for p in plays)
        totals = _rows(store, "SELECT total_0, total_1, total_2, total_3, winners FROM matches")[0]
        assert list(totals[:4]) == list(match.claimed_totals)
        assert totals[4] == [
            s for s in range(4) if match.claimed_totals[s] == max(match.claimed_totals)
        ]
        tricks = _rows(store, "SELECT sum(points) FROM tricks")[0][0]
        assert tricks == sum(match.claimed_totals)


def test_the_plays_view_unpacks_every_fact_as_the_builder_packed_it(tmp_path: Path) -> None:
    matches = _edge_matches()
    matches[0].deals[0].auto_plays[:] = [0, 5, 51]
    raw = _twins.PYTHON.columns.ColumnBuilder(_core_params)
    for key, match in enumerate(matches, 1):
        raw.add(match.SerializeToString(deterministic=True), key)
    plays = raw.take()["plays"]
    layout = {name: (low, bits) for name, low, bits in PACKED["play_code"]}

    def fact(code: int, name: str) -> int:
        low, bits = layout[name]
        return (code >> low) & ((1 << bits) - 1)

    expected = [
        (
            fact(c, "card"), fact(c, "seat"), fact(c, "play"), fact(c, "legal"),
            None if fact(c, "took") == 7 else fact(c, "took"),
            VERDICTS[fact(c, "broke") - 1] if fact(c, "broke") else None,
            fact(c, "think") - 1 if fact(c, "think") else None,
            bool(fact(c, "auto")),
        )
        for c in array("Q", bytes(plays["play_code"]))
    ]  # fmt: skip
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        store.ingest_matches(matches, source="edge")
        rows = _rows(
            store,
            "SELECT card, seat, play, legal, took, broke, think_ms, auto FROM plays "
            "ORDER BY match_key, deal, play",
        )
    assert rows == expected
    assert {r[5] for r in rows} > {None} and {r[4] for r in rows} == {None, 0, 1, 2, 3}
    assert sum(r[7] for r in rows) >= 3  # the simulator marks some auto-plays too
    assert {r[6] is None for r in rows} == {True, False}  # think times recorded and not


def test_the_tricks_view_unpacks_the_four_cards_and_the_led_suit(tmp_path: Path) -> None:
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        store.ingest_matches(_edge_matches()[:3], source="edge")
        tricks = store.count("tricks")
        matched = _rows(
            store,
            "SELECT count(*) FROM tricks t JOIN plays p ON p.match_key = t.match_key "
            "AND p.deal = t.deal AND p.trick = t.trick AND p.card = "
            "[t.card_0, t.card_1, t.card_2, t.card_3][p.position + 1] "
            "AND (p.position > 0 OR p.suit = t.led_suit)",
        )
        assert tricks > 300 and matched == [(4 * tricks,)]


def test_records_over_a_bound_or_unreadable_are_rejected_and_listed(tmp_path: Path) -> None:
    over = simulate_match(preset("short"), 2)
    for _ in range(300):
        over.deals.add()
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        verdicts = store.ingest_payloads(
            [over.SerializeToString(), b"\xff\xff not a match"], source="up"
        )
        assert [v.status for v in verdicts] == ["rejected", "rejected"]
        assert store.count("matches") == 0
        assert sorted(r[0] for r in _rows(store, "SELECT code FROM damage")) == [
            "FRAME_UNDECODABLE",
            "LIMIT_EXCEEDED",
        ]


# -- crashes and versions --------------------------------------------------------------------

_INGEST = """
import sys
from kingrec.store import Store
handed_over = 0
def handed(done):  # a batch handed to the writers: the one two before it is committed
    global handed_over
    handed_over += 1
    print("batch", flush=True)
    if handed_over == 3:
        sys.stdin.readline()  # held here (its writers go on) until killed
with Store.open(sys.argv[1]) as store:
    store.ingest_file(sys.argv[2], batch_matches=int(sys.argv[3]), progress=handed)
"""


def test_kill_9_midway_leaves_whole_batches_and_a_rerun_completes(tmp_path: Path) -> None:
    matches = [simulate_match(preset("short"), s) for s in range(400)]
    path = _krec(tmp_path / "m.krec", matches)
    db = tmp_path / "k.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-c", _INGEST, str(db), str(path), "20"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    for _ in range(3):  # kill it once batch 1 is committed: it says so, no clock guesses
        assert proc.stdout.readline() == b"batch\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for pipe in (proc.stdin, proc.stdout):
        assert pipe is not None
        pipe.close()
    with Store.open(str(db)) as store:
        stored = store.count("matches")
        assert stored in (20, 40, 60)  # whole batches only: 1 committed, 2 and 3 may be
        assert store.count("deals") == stored * 8
        store.ingest_file(str(path), batch_matches=20)
        assert store.count("matches") == 400
        assert store.count("deals") == 400 * 8
        assert _rows(store, "SELECT count(DISTINCT content_hash) FROM matches")[0][0] == 400


def test_a_writable_store_caps_its_memory_and_checkpoints_only_past_a_big_log(
    tmp_path: Path,
) -> None:
    # The settings kingrec.store.db explains: flat ingest memory, block memory kept, and no
    # checkpoint after every batch (each rewrote the growing last row groups).
    path = str(tmp_path / "s.duckdb")
    settings = "SELECT current_setting('{}')"
    with Store.open(path) as store:
        con = store.con
        assert con.execute(settings.format("memory_limit")).fetchone() == ("244.1 MiB",)
        assert con.execute(settings.format("block_allocator_memory")).fetchone() == ("0 bytes",)
        assert con.execute(settings.format("checkpoint_threshold")).fetchone() == ("244.1 MiB",)
    with Store.open(path, read_only=True) as store:
        limit = store.con.execute(settings.format("memory_limit")).fetchone()
        assert limit != ("244.1 MiB",)


def test_a_store_from_a_newer_kingrec_is_refused(tmp_path: Path) -> None:
    db = str(tmp_path / "k.duckdb")
    Store.open(db).close()
    con = duckdb.connect(db)
    con.execute(
        "UPDATE kingrec_meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)]
    )
    con.close()
    with pytest.raises(StoreVersionError, match="newer kingrec"):
        Store.open(db)
    other = str(tmp_path / "other.duckdb")
    con = duckdb.connect(other)
    con.execute("CREATE TABLE t (a INT)")
    con.close()
    with pytest.raises(StoreError, match="not a kingrec store"):
        Store.open(other)
    with pytest.raises(StoreError, match="no store there"):
        Store.open(str(tmp_path / "missing.duckdb"), read_only=True)


def test_a_store_to_write_that_must_be_there_already_is_refused_and_not_created(
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing.duckdb"
    with pytest.raises(StoreError, match=r"no store there \(run kingrec ingest first\)"):
        Store.open(str(missing), create=False)
    assert list(tmp_path.iterdir()) == []
    with Store.open(str(missing)) as store:  # created, as ingest creates it
        assert not store.read_only
    with Store.open(str(missing), create=False) as store:  # there now: opened to write
        assert store.count("matches") == 0 and not store.read_only


# The tables of older schemas, as those kingrecs wrote them, rebuilt from today's views.
_OLD_TABLES = {
    1: {
        "plays_base": "SELECT match_key, deal, play, seat, card, contract, trump, legal, took, "
        "broke, think_ms, auto FROM plays",
        "tricks": "SELECT * FROM tricks",
        "deals": "SELECT * FROM deals",
    },
    2: {
        "plays_base": "SELECT match_key, deal, play, seat, card, contract, trump, legal, "
        "CAST(coalesce(took, 7) | CASE WHEN auto THEN 8 ELSE 0 END "
        "| (coalesce(enum_code(broke) + 1, 0) << 4) AS UTINYINT) AS flags, think_ms FROM plays",
        "tricks_base": "SELECT match_key, deal, trick, contract, leader, winner, units, points, "
        "CAST(card_0 | (CAST(card_1 AS UINTEGER) << 6) | (CAST(card_2 AS UINTEGER) << 12) "
        "| (CAST(card_3 AS UINTEGER) << 18) AS UINTEGER) AS cards FROM tricks",
        "deals": "SELECT * FROM deals",
    },
    3: {},
    4: {},
}


def _rewind(db: str, version: int) -> None:
    """Turn a store into one of schema ``version``, with the same rows."""
    con = duckdb.connect(db)
    # Before schema 5 a store held no par analysis.
    con.execute("DROP TABLE deal_par")
    con.execute("DROP TABLE play_costs")
    con.execute("UPDATE kingrec_meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    if version == 4:
        con.close()
        return
    # Before schema 4 a record's bytes were one row of the table records.
    con.execute("CREATE TABLE old_records AS SELECT match_key, record FROM records")
    con.execute("DROP VIEW records")
    con.execute("DROP TABLE records_base")
    con.execute("ALTER TABLE old_records RENAME TO records")
    con.execute("UPDATE kingrec_meta SET value = ? WHERE key = 'schema_version'", [str(version)])
    if version == 3:
        con.close()
        return
    for name, select in _OLD_TABLES[version].items():
        con.execute(f"CREATE TABLE old_{name} AS {select}")
    for view in ("plays", "tricks", "deals"):
        con.execute(f"DROP VIEW {view}")
    for table in ("plays_base", "tricks_base", "deals_base"):
        con.execute(f"DROP TABLE {table}")
    for name in _OLD_TABLES[version]:
        con.execute(f"ALTER TABLE old_{name} RENAME TO {name}")
    con.execute("CREATE VIEW plays AS SELECT * FROM plays_base")  # as good as the old views
    if version == 2:
        con.execute("CREATE VIEW tricks AS SELECT * FROM tricks_base")
    con.close()


@pytest.mark.parametrize("version", [1, 2, 3, 4])
def test_an_older_store_is_upgraded_keeping_every_deal_trick_and_play(
    tmp_path: Path, version: int
) -> None:
    db = str(tmp_path / "k.duckdb")
    order = {
        "plays": "match_key, deal, play",
        "tricks": "match_key, deal, trick",
        "deals": "match_key, deal",
        "records": "match_key",
    }
    tables = "SELECT table_name, sql FROM duckdb_tables() ORDER BY table_name"
    with Store.open(db) as store:
        store.ingest_matches(_edge_matches(), source="edge")
        before = {v: _rows(store, f"SELECT * FROM {v} ORDER BY {o}") for v, o in order.items()}
        new_tables = _rows(store, tables)
    _rewind(db, version)
    with pytest.raises(StoreVersionError, match=f"upgrade it to version {SCHEMA_VERSION}"):
        Store.open(db, read_only=True)
    with Store.open(db) as store:
        after = {v: _rows(store, f"SELECT * FROM {v} ORDER BY {o}") for v, o in order.items()}
        assert after == before
        assert _rows(store, tables) == new_tables  # as a new store makes them: compression too
        assert any(row[9] is not None for row in after["plays"])  # broke survived
        assert any(row[17] is None for row in after["deals"])  # so did a hand that is no deck
        version_now = _rows(store, "SELECT value FROM kingrec_meta WHERE key = 'schema_version'")
        assert version_now == [(str(SCHEMA_VERSION),)]
        summary = store.ingest_matches([simulate_match(preset("short"), 99)], source="new")
        assert [v.status for v in summary] == ["stored"]
    with Store.open(db, read_only=True) as store:  # the upgrade is kept
        assert store.count("matches") == len(_edge_matches()) + 1


@pytest.mark.skipif(DUCKDB_CLI is None, reason="the duckdb CLI (duckdb-cli) is not installed")
def test_the_stock_duckdb_cli_opens_the_store(tmp_path: Path) -> None:
    db = str(tmp_path / "k.duckdb")
    with Store.open(db) as store:
        store.ingest_file(str(SAMPLES / "valid" / "classic.krec"))
    assert DUCKDB_CLI is not None
    version = subprocess.run([DUCKDB_CLI, "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("v1.5"), version.stdout
    sql = (
        "SELECT count(*), min(card_name(card)) FROM plays WHERE contract = 'RIFKI';"
        "SELECT comment FROM duckdb_columns() WHERE table_name = 'plays' AND column_name = 'legal';"
    )
    result = subprocess.run(
        [DUCKDB_CLI, "-csv", "-readonly", db, "-c", sql],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split(",")[0].isdigit() and int(lines[1].split(",")[0]) > 0
    assert "how many cards were legal" in result.stdout


# -- queries ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("store") / "k.duckdb")
    with Store.open(db) as store:
        store.ingest_matches([simulate_match(preset("classic"), s) for s in range(6)], source="sim")
    return db


def test_a_query_streams_rows_with_column_names_and_types(store_path: str) -> None:
    with Store.open(store_path, read_only=True) as store:
        result = store.query(
            "SELECT contract, count(*) AS tricks FROM tricks GROUP BY ALL ORDER BY 1"
        )
        assert [name for name, _ in result.columns] == ["contract", "tricks"]
        rows = pa.Table.from_batches(list(result.batches())).to_pylist()
        assert rows[0]["contract"] == "KOZ" and rows[0]["tricks"] > 0
        cut = store.query("SELECT * FROM plays", max_rows=100)
        assert sum(b.num_rows for b in cut.batches()) == 100 and cut.truncated


@pytest.mark.parametrize(
    ("sql", "error", "says"),
    [
        ("SELECT * FROM read_csv('/etc/passwd')", QueryRefusedError, "not allowed"),
        ("SELECT * FROM read_parquet('x.parquet')", QueryRefusedError, "not allowed"),
        ("ATTACH 'x.duckdb'", QueryRefusedError, "not ATTACH"),
        ("COPY plays TO 'x.csv'", QueryRefusedError, "not COPY"),
        ("SET threads = 1", QueryRefusedError, "not SET"),
        ("INSTALL httpfs", QueryRefusedError, "only queries"),
        ("LOAD httpfs", QueryRefusedError, "only queries"),
        ("PRAGMA version", QueryRefusedError, "not PRAGMA"),
        ("SELECT 1; SELECT 2", QueryRefusedError, "one SQL statement"),
        ("CREATE TABLE x (a INT)", QueryRefusedError, "not CREATE"),
        ("DELETE FROM plays_base", QueryRefusedError, "not DELETE"),
        ("SELEC 1", QueryError, "does not parse"),
        ("SELECT no_such_column FROM plays", QueryError, "no_such_column"),
    ],
)
def test_a_hostile_query_gets_a_clear_refusal(
    store_path: str, sql: str, error: type[Exception], says: str
) -> None:
    with Store.open(store_path) as store, pytest.raises(error, match=says):
        list(store.query(sql).batches())


def test_a_query_that_never_ends_is_stopped_at_its_time_limit(store_path: str) -> None:
    with Store.open(store_path, read_only=True) as store:
        began = time.monotonic()
        with pytest.raises(QueryLimitError, match="time limit"):
            list(
                store.query(
                    "SELECT count(*) FROM range(10000000000) a, range(10000000000) b", timeout_s=0.5
                ).batches()
            )
        assert time.monotonic() - began < 10


def test_a_query_closed_before_or_amid_its_rows_ends_its_result_and_cursor_at_once(
    store_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kingrec.store import query as store_query

    readers: list[pa.RecordBatchReader] = []
    limited = store_query._limited

    def kept(reader: pa.RecordBatchReader, *rest: object) -> object:
        readers.append(reader)
        return limited(reader, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(store_query, "_limited", kept)
    with Store.open(store_path, read_only=True) as store:
        unread = store.query("SELECT * FROM plays")
        with store.query("SELECT * FROM plays") as amid:
            assert next(iter(amid.batches())).num_rows > 0
        unread.close()  # no row read: the query still ends here, not at garbage collection
        unread.close()  # and closing again does nothing
        assert list(unread.batches()) == []
        with store.query("SELECT 1 AS one") as one:  # the store is still there to ask
            assert [b.to_pylist() for b in one.batches()] == [[{"one": 1}]]
    assert len(readers) == 3
    for reader in readers:  # read to its end or not, each result closed with its query
        with pytest.raises(pa.ArrowInvalid, match="closed"):
            reader.read_next_batch()


def test_list_matches_pages_and_filters(store_path: str) -> None:
    with Store.open(store_path, read_only=True) as store:
        page, token = store.list_matches(limit=4)
        assert [r["match_id"] for r in page] == [f"sim-classic-{s}" for s in range(4)] and token
        rest, end = store.list_matches(limit=4, after=token)
        assert [r["match_id"] for r in rest] == ["sim-classic-4", "sim-classic-5"] and end is None
        assert store.list_matches(player="Ayşe")[0] and not store.list_matches(player="Nobody")[0]
        assert len(store.list_matches(preset="classic", valid=True, status="complete")[0]) == 6
        assert not store.list_matches(valid=False)[0]


def test_get_match_gives_the_record_back(store_path: str) -> None:
    with Store.open(store_path, read_only=True) as store:
        record = store.get_match("sim-classic-3")
        assert record is not None
        assert pb.Match.FromString(record) == simulate_match(preset("classic"), 3)
        assert store.get_match("nope") is None


def test_a_record_of_any_length_comes_back_byte_for_byte(
    tmp_path: Path, twins: _twins.Twins
) -> None:
    # Records are stored in pieces of RECORD_CHUNK bytes: none, exactly one, and many.
    one_piece = pb.Match(match_id="x" * (RECORD_CHUNK - 2)).SerializeToString()
    assert len(one_piece) == RECORD_CHUNK
    real = simulate_match(preset("classic"), 5).SerializeToString(deterministic=True)
    payloads = [b"", one_piece, one_piece + b"\x10\x01", real]
    with Store.open(str(tmp_path / "k.duckdb")) as store:
        verdicts = store.ingest_payloads(payloads, source="lengths", twins=twins)
        assert all(v.status in ("stored", "stored_invalid") for v in verdicts)
        stored = store.con.execute("SELECT record FROM records ORDER BY match_key").fetchall()
        assert [bytes(row[0]) for row in stored] == payloads
        pieces = store.con.execute(
            "SELECT count(*) FROM records_base GROUP BY match_key ORDER BY match_key"
        ).fetchall()
        assert [row[0] for row in pieces] == [1, 1, 2, -(-len(real) // RECORD_CHUNK)]
        assert store.get_match("sim-classic-5") == real


def test_os_environment_names_the_default_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KINGREC_DB", str(tmp_path / "env.duckdb"))
    with Store.open() as store:
        assert store.path == str(tmp_path / "env.duckdb")
    assert os.path.exists(tmp_path / "env.duckdb")
